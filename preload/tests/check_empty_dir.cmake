# Fails when DIR holds anything (a test left files behind), then removes DIR.
#   cmake -DDIR=... -P check_empty_dir.cmake
file(GLOB left RELATIVE "${DIR}" "${DIR}/*" "${DIR}/.*")
list(FILTER left EXCLUDE REGEX "^\\.\\.?$")
file(REMOVE_RECURSE "${DIR}")
if(left)
  message(FATAL_ERROR "left behind in ${DIR}: ${left}")
endif()
message(STATUS "nothing left behind")
