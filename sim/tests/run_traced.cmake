# Runs PROGRAM on the simulator with libasyncwatch.so preloaded (tests sim_nvcc_app*_traced): the
# program must exit 0 (it checks the simulator's rules itself), the library must have traced it (its
# banner, exactly one trace file), and no sanitizer may have reported anything (in the ASan and TSan
# builds, the library, the simulator's driver and runtime are instrumented: host functions and
# callbacks run on the simulator's threads, through the library's trampolines).
#   cmake -DPROGRAM=... -DPRELOAD=<LD_PRELOAD value> -DSIM_DIR=... -DOUT_DIR=... [-DEXTRA_ENV=A=1@@B=2]
#         -P run_traced.cmake
file(REMOVE_RECURSE "${OUT_DIR}")
file(MAKE_DIRECTORY "${OUT_DIR}")
set(extra "")
if(EXTRA_ENV)
  string(REPLACE "@@" ";" extra "${EXTRA_ENV}")
endif()
# cmake -E env: the preload applies to the program only, not to this cmake.
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env "LD_LIBRARY_PATH=${SIM_DIR}" "LD_PRELOAD=${PRELOAD}"
          "ASYNCWATCH_OUTPUT_DIR=${OUT_DIR}" ${extra} "${PROGRAM}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} exited with ${rc} under the library")
endif()
if(NOT err MATCHES "asyncwatch\\[[0-9]+\\]: tracing to ")
  message(FATAL_ERROR "no 'tracing to' banner: the library did not trace the program")
endif()
if("${out}${err}" MATCHES "Sanitizer|runtime error:")
  message(FATAL_ERROR "a sanitizer reported a problem (above)")
endif()
file(GLOB traces "${OUT_DIR}/*.awtrace")
list(LENGTH traces n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one trace in ${OUT_DIR}, found ${n}")
endif()
