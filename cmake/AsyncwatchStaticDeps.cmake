# How the asyncwatch command links its libraries (docs/contracts.md, "What the binaries need").
#
# ASYNCWATCH_STATIC_DEPS=ON (default): the command runs on any x86-64 Linux with glibc >= the figure
# in pyproject.toml's wheel tag, e.g. a GPU box with no elfutils or an fmt of another soname (PyTorch
# images): elfutils (libdw, libelf) and the compression libraries they use are linked from their .a
# files, fmt's compiled part is built from its headers once (compat/fmt_library.cpp), CLI11 and
# nlohmann_json are header-only anyway, and libstdc++ is linked statically (an older distribution's
# libstdc++ lacks the GLIBCXX versions GCC 12 emits). What remains NEEDED is libc, libm, ld-linux and libgcc_s; the package.binary-deps tests keep
# it so.
#
# OFF: the shared libraries of the build machine (a distribution package would want this).
#
# Defines:
#   asyncwatch_libdw        INTERFACE target: libdw with everything it needs
#   asyncwatch_fmt          INTERFACE target: fmt (when static: its headers and compat/fmt_library.cpp)
#   asyncwatch_static_rt    INTERFACE target: link options for a self-contained executable
#   asyncwatch_sqlite3      INTERFACE target: SQLite (`export --format sqlite`), libsqlite3.a when static
option(ASYNCWATCH_STATIC_DEPS "Link elfutils, fmt and libstdc++ into the asyncwatch command statically" ON)

find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBDW REQUIRED libdw)

add_library(asyncwatch_libdw INTERFACE)
add_library(asyncwatch_fmt INTERFACE)
add_library(asyncwatch_static_rt INTERFACE)
add_library(asyncwatch_sqlite3 INTERFACE)
pkg_check_modules(SQLITE3 REQUIRED sqlite3)

if(NOT ASYNCWATCH_STATIC_DEPS)
  pkg_check_modules(LIBDW_SHARED REQUIRED IMPORTED_TARGET libdw)
  target_link_libraries(asyncwatch_libdw INTERFACE PkgConfig::LIBDW_SHARED)
  target_link_libraries(asyncwatch_fmt INTERFACE fmt::fmt)
  pkg_check_modules(SQLITE3_SHARED REQUIRED IMPORTED_TARGET sqlite3)
  target_link_libraries(asyncwatch_sqlite3 INTERFACE PkgConfig::SQLITE3_SHARED)
  return()
endif()

# `pkg-config --static libdw` is elfutils' own list of what libdw.a needs, in link order (0.188 on
# Debian 12: dw bz2 elf z z lzma pthread; an elfutils built with zstd adds zstd). Each one is
# resolved to its .a file, so a missing one is named here rather than linked dynamically unnoticed.
set(_aw_system_libs pthread dl m rt c)
set(_aw_static_paths "")
set(_aw_seen "")
foreach(_aw_lib IN LISTS LIBDW_STATIC_LIBRARIES)
  if(_aw_lib IN_LIST _aw_system_libs)
    continue()
  endif()
  if(NOT _aw_lib IN_LIST _aw_seen)
    list(APPEND _aw_seen ${_aw_lib})
    find_library(ASYNCWATCH_STATIC_${_aw_lib} NAMES lib${_aw_lib}.a HINTS ${LIBDW_STATIC_LIBRARY_DIRS})
    if(NOT ASYNCWATCH_STATIC_${_aw_lib})
      message(FATAL_ERROR "asyncwatch: lib${_aw_lib}.a (needed by libdw.a, from `pkg-config --static --libs libdw`) "
                          "was not found: install its -dev package (.ci/setup lists them), or configure with "
                          "-DASYNCWATCH_STATIC_DEPS=OFF to link the shared libraries instead")
    endif()
  endif()
  list(APPEND _aw_static_paths ${ASYNCWATCH_STATIC_${_aw_lib}})
endforeach()
target_include_directories(asyncwatch_libdw SYSTEM INTERFACE ${LIBDW_STATIC_INCLUDE_DIRS})
target_link_libraries(asyncwatch_libdw INTERFACE ${_aw_static_paths} Threads::Threads)
message(STATUS "asyncwatch: libdw linked statically: ${_aw_static_paths}")

# fmt: Debian ships its headers and the shared library only. What libfmt.a would hold (fmt's
# src/format.cc) is compiled once, in compat/fmt_library.cpp, rather than in every file that includes
# fmt, as FMT_HEADER_ONLY does: that was 17 % of each analyzer file's compile time with LTO, 29 %
# without (CI time, docs/maintainers.md, "Testing"). The file names fmt 9's instantiations; another
# fmt is used header-only.
if(fmt_VERSION VERSION_GREATER_EQUAL 9 AND fmt_VERSION VERSION_LESS 10)
  add_library(asyncwatch_fmt_library STATIC ${PROJECT_SOURCE_DIR}/compat/fmt_library.cpp)
  get_target_property(_aw_fmt_include fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
  target_include_directories(asyncwatch_fmt_library SYSTEM PUBLIC ${_aw_fmt_include})
  set_target_properties(asyncwatch_fmt_library PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_link_libraries(asyncwatch_fmt_library PRIVATE asyncwatch_sanitize)
  target_link_libraries(asyncwatch_fmt INTERFACE asyncwatch_fmt_library)
else()
  target_link_libraries(asyncwatch_fmt INTERFACE fmt::fmt-header-only)
endif()

# SQLite (public domain) from libsqlite3.a, with what `pkg-config --static sqlite3` lists (Debian 12:
# m z; z is libdw's libz.a above).
find_library(ASYNCWATCH_STATIC_sqlite3 NAMES libsqlite3.a HINTS ${SQLITE3_STATIC_LIBRARY_DIRS})
if(NOT ASYNCWATCH_STATIC_sqlite3)
  message(FATAL_ERROR "asyncwatch: libsqlite3.a was not found: install libsqlite3-dev (.ci/setup lists it), or "
                      "configure with -DASYNCWATCH_STATIC_DEPS=OFF to link the shared libraries instead")
endif()
find_library(ASYNCWATCH_STATIC_z_for_sqlite NAMES libz.a HINTS ${SQLITE3_STATIC_LIBRARY_DIRS})
target_include_directories(asyncwatch_sqlite3 SYSTEM INTERFACE ${SQLITE3_STATIC_INCLUDE_DIRS})
target_link_libraries(asyncwatch_sqlite3 INTERFACE ${ASYNCWATCH_STATIC_sqlite3} ${ASYNCWATCH_STATIC_z_for_sqlite} m
                      Threads::Threads ${CMAKE_DL_LIBS})

# libgcc stays shared (libgcc_s.so.1 is on every glibc system): the static libgcc_eh of GCC 12 calls
# _dl_find_object, GLIBC_2.35; the system's own libgcc_s matches its glibc. Not with sanitizers:
# their runtimes are shared libraries that expect the shared libstdc++.
if(NOT ASYNCWATCH_SANITIZE)
  target_link_options(asyncwatch_static_rt INTERFACE -static-libstdc++)
endif()

# glibc 2.28 for the command (cmake/AsyncwatchGlibc228.cmake): stat & co. and __libc_start_main are
# replaced by compat/glibc_2_28.c, the rest wrapped to their pinned versions.
if(TARGET asyncwatch_glibc_2_28)
  asyncwatch_glibc_2_28_link(asyncwatch_static_rt COMMAND INTERFACE
    stat stat64 lstat lstat64 fstat fstat64 fstatat fstatat64 __libc_start_main)
endif()
