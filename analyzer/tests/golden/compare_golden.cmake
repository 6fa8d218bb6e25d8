# Runs `asyncwatch report` on TRACE in JSON (and text when EXPECTED_TEXT exists) and compares
# with the expected files byte for byte. The trace is named relative to its own directory,
# so the output holds no machine-specific path. ASYNCWATCH_UPDATE_GOLDEN=1 rewrites them.
# NORMALIZE (real traces from the simulator or a GPU): the report is made without reading the
# traced binaries (ASYNCWATCH_NO_SYMBOLS=1: they are seldom on this machine, or are other
# builds) and reduced by normalize_report.py (PYTHON) to what does not depend on the machine or
# on timing; only that JSON is compared. EXPECTED_HTML (given): the HTML report is compared too,
# byte for byte (also of a real trace: the trace is fixed, and no binary is read with NORMALIZE).
get_filename_component(dir ${TRACE} DIRECTORY)
get_filename_component(name ${TRACE} NAME)
set(formats json)
set(env NO_COLOR=1)
if(NORMALIZE)
  list(APPEND env ASYNCWATCH_NO_SYMBOLS=1)
elseif(EXISTS ${EXPECTED_TEXT} OR DEFINED ENV{ASYNCWATCH_UPDATE_GOLDEN})
  list(APPEND formats text)
endif()
if(EXPECTED_HTML)
  list(APPEND formats html)
endif()
foreach(format ${formats})
  if(format STREQUAL "json")
    set(expected ${EXPECTED_JSON})
  elseif(format STREQUAL "html")
    set(expected ${EXPECTED_HTML})
  else()
    set(expected ${EXPECTED_TEXT})
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${env} ${ASYNCWATCH} report --format ${format} ${name}
    WORKING_DIRECTORY ${dir} OUTPUT_VARIABLE actual ERROR_VARIABLE errors RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "asyncwatch report --format ${format} ${TRACE} exited ${rc}: ${errors}")
  endif()
  if(NORMALIZE AND format STREQUAL "json")
    string(RANDOM LENGTH 8 tag)
    set(raw ${CMAKE_CURRENT_BINARY_DIR}/golden-raw-${tag}.json)
    file(WRITE ${raw} "${actual}")
    execute_process(COMMAND ${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/normalize_report.py ${raw}
      OUTPUT_VARIABLE actual ERROR_VARIABLE errors RESULT_VARIABLE rc)
    file(REMOVE ${raw})
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "normalize_report.py failed on the report of ${TRACE}: ${errors}")
    endif()
  endif()
  if(DEFINED ENV{ASYNCWATCH_UPDATE_GOLDEN})
    file(WRITE ${expected} "${actual}")
    message(STATUS "updated ${expected}")
    continue()
  endif()
  file(READ ${expected} want)
  if(NOT actual STREQUAL want)
    get_filename_component(out_name ${expected} NAME)
    file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/${out_name}.actual "${actual}")
    message(FATAL_ERROR "golden mismatch for ${expected}: see ${CMAKE_CURRENT_BINARY_DIR}/${out_name}.actual "
                        "(diff them; ASYNCWATCH_UPDATE_GOLDEN=1 ctest -R golden rewrites the expected files)")
  endif()
endforeach()
