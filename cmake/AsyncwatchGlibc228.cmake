# glibc 2.28 (RHEL 8) for the asyncwatch command and the preload library (docs/contracts.md, "What
# the binaries need"): every glibc function whose default version is newer is wrapped to its old
# version (compat/glibc_2_28_pins.h, the one list, each line saying which binary calls it;
# compat/glibc_2_28.c, compiled once for each). Not with sanitizers: their runtimes interpose these
# functions by their default versions. libpthread.so.0 and libdl.so.2 are NEEDED: before glibc 2.34
# the old versions live there.
#
# Defines, on x86-64 without sanitizers:
#   asyncwatch_glibc_2_28, asyncwatch_glibc_2_28_preload   the object of each binary
#   asyncwatch_glibc_2_28_link(TARGET COMMAND|PRELOAD SCOPE [NAME...])
#       links TARGET with that binary's object, a --wrap for each of its pins and for each NAME
#       (the functions compat/glibc_2_28.c replaces otherwise), and the two libraries
if(ASYNCWATCH_SANITIZE OR NOT CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  return()
endif()
add_library(asyncwatch_glibc_2_28 OBJECT ${PROJECT_SOURCE_DIR}/compat/glibc_2_28.c)
add_library(asyncwatch_glibc_2_28_preload OBJECT ${PROJECT_SOURCE_DIR}/compat/glibc_2_28.c)
target_compile_definitions(asyncwatch_glibc_2_28_preload PRIVATE AW_GLIBC_2_28_PRELOAD)
target_compile_options(asyncwatch_glibc_2_28_preload PRIVATE -fno-plt)  # as the library's own calls
foreach(t asyncwatch_glibc_2_28 asyncwatch_glibc_2_28_preload)
  target_link_libraries(${t} PRIVATE asyncwatch_warnings)
  set_target_properties(${t} PROPERTIES INTERPROCEDURAL_OPTIMIZATION OFF POSITION_INDEPENDENT_CODE ON)  # .symver in asm
endforeach()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/compat/glibc_2_28_pins.h)

function(asyncwatch_glibc_2_28_link target users scope)
  file(STRINGS ${PROJECT_SOURCE_DIR}/compat/glibc_2_28_pins.h lines REGEX "^AW_PIN\\(")
  set(wrapped ${ARGN})
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^AW_PIN\\(([A-Za-z0-9_]+), \"GLIBC_[0-9.]+\", (COMMAND|PRELOAD|BOTH)\\)$")
      message(FATAL_ERROR "compat/glibc_2_28_pins.h: not AW_PIN(name, \"GLIBC_x.y\", COMMAND|PRELOAD|BOTH): ${line}")
    endif()
    if(CMAKE_MATCH_2 STREQUAL "BOTH" OR CMAKE_MATCH_2 STREQUAL users)
      list(APPEND wrapped ${CMAKE_MATCH_1})
    endif()
  endforeach()
  list(TRANSFORM wrapped PREPEND "LINKER:--wrap=")
  if(users STREQUAL "PRELOAD")
    target_sources(${target} ${scope} $<TARGET_OBJECTS:asyncwatch_glibc_2_28_preload>)
  else()
    target_sources(${target} ${scope} $<TARGET_OBJECTS:asyncwatch_glibc_2_28>)
  endif()
  target_link_options(${target} ${scope} ${wrapped})
  target_link_libraries(${target} ${scope}
    "-Wl,--push-state,--no-as-needed" -l:libpthread.so.0 -l:libdl.so.2 "-Wl,--pop-state")
endfunction()
