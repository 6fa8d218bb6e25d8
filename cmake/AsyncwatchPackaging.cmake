# What `cmake --install` puts where (docs/contracts.md, "Build tree = install tree"), the CMake package
# of the control API, the man page and the relocatable tarball (`cpack` in the build directory).
# The targets install themselves (analyzer/, preload/, sim/); this adds the rest.
include(CMakePackageConfigHelpers)

# The control API (preload/include/asyncwatch/control.h): a header and dlsym, nothing to link but libdl
# on glibc before 2.34. In this build tree too, as asyncwatch::control.
add_library(asyncwatch_control INTERFACE)
add_library(asyncwatch::control ALIAS asyncwatch_control)
target_include_directories(asyncwatch_control INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/preload/include>)
target_link_libraries(asyncwatch_control INTERFACE ${CMAKE_DL_LIBS})
install(FILES ${PROJECT_SOURCE_DIR}/preload/include/asyncwatch/control.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/asyncwatch)

# find_package(asyncwatch): asyncwatch::control, asyncwatch::asyncwatch (the command) and
# asyncwatch_PRELOAD_LIBRARY, all relative to wherever the tree was unpacked.
set(ASYNCWATCH_CMAKE_DIR lib/cmake/asyncwatch)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/asyncwatchConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/asyncwatchConfig.cmake INSTALL_DESTINATION ${ASYNCWATCH_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
# 0.x: a minor version may change the API, so only the same minor version is compatible.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/asyncwatchConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/asyncwatchConfig.cmake ${CMAKE_BINARY_DIR}/cmake/asyncwatchConfigVersion.cmake
  DESTINATION ${ASYNCWATCH_CMAKE_DIR})

# The man page is written by hand (docs/man/asyncwatch.1); the test package.man-page keeps it in
# step with --help.
install(FILES ${PROJECT_SOURCE_DIR}/docs/man/asyncwatch.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
# In the wheel also in its data scheme: pip installs that as PREFIX/share/man/man1 (the venv, ~/.local
# or /usr/local), where `man` looks beside a bin directory on PATH. Its own component, left out of
# `cmake --install` and CPack (an absolute destination); pyproject.toml's install.components names it.
if(SKBUILD)
  install(FILES ${PROJECT_SOURCE_DIR}/docs/man/asyncwatch.1 DESTINATION ${SKBUILD_DATA_DIR}/share/man/man1
          COMPONENT asyncwatch_wheel_data EXCLUDE_FROM_ALL)
endif()

# The licence and the third-party notices (elfutils' LGPL and how its relink requirement is met),
# in the tarball and the wheel alike (package.install-tree checks they are installed).
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/THIRD_PARTY_NOTICES
  DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/licenses/LGPL-3.0.txt ${PROJECT_SOURCE_DIR}/licenses/GPL-3.0.txt
  DESTINATION ${CMAKE_INSTALL_DOCDIR}/licenses)

# The glibc the wheel is tagged for: pyproject.toml holds the one definition (its manylinux tag).
file(STRINGS ${PROJECT_SOURCE_DIR}/pyproject.toml ASYNCWATCH_WHEEL_TAG REGEX "manylinux_2_[0-9]+_x86_64")
if(NOT ASYNCWATCH_WHEEL_TAG MATCHES "manylinux_2_([0-9]+)_x86_64")
  message(FATAL_ERROR "pyproject.toml has no manylinux_2_NN_x86_64 wheel tag")
endif()
set(ASYNCWATCH_GLIBC_FLOOR 2.${CMAKE_MATCH_1} CACHE INTERNAL "glibc of the wheel tag")

# Relocatable tarball: `cpack` in the build directory writes asyncwatch-VERSION-linux-x86_64.tar.gz
# (one top-level directory asyncwatch-VERSION-linux-x86_64/ holding bin/, lib/, include/, share/).
# The command finds lib/ from its own path, so the tree works wherever it is unpacked.
set(CPACK_GENERATOR TGZ)
set(CPACK_PACKAGE_NAME asyncwatch)
set(CPACK_PACKAGE_VENDOR "asyncwatch")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Finds the asynchronous CUDA calls that ran synchronously, says why and where")
string(TOLOWER "${CMAKE_SYSTEM_NAME}-${CMAKE_SYSTEM_PROCESSOR}" ASYNCWATCH_PLATFORM)
set(CPACK_PACKAGE_FILE_NAME "asyncwatch-${PROJECT_VERSION}-${ASYNCWATCH_PLATFORM}")
set(CPACK_STRIP_FILES TRUE)  # from a RelWithDebInfo build too: the debug info is 4/5 of the size
set(CPACK_ARCHIVE_THREADS 0)
set(CPACK_SOURCE_GENERATOR "")
include(CPack)

if(ASYNCWATCH_BUILD_TESTS AND NOT ASYNCWATCH_SANITIZE AND ASYNCWATCH_BUILD_ANALYZER AND ASYNCWATCH_BUILD_PRELOAD
   AND ASYNCWATCH_BUILD_SIM)
  add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/tests ${CMAKE_BINARY_DIR}/cmake/tests)
endif()
