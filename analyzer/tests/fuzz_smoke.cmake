# The fuzz smoke test (ctest fuzz.reader-smoke): runs the libFuzzer target of the reader on the
# checked-in corpus (tests/fuzz_corpus/) for RUNS inputs or SECONDS seconds, whichever comes first.
# Fails when the fuzzer stops early: a crash, a sanitizer report, a leak, a timeout (30 s for one
# input) or 2 GiB of memory. The input that did it is left in WORK/artifacts/ (moved to
# WORK/artifacts-previous/ by the next run).
#   cmake -DFUZZER=... -DCORPUS=... -DWORK=... -DRUNS=20000 -DSECONDS=60 -P fuzz_smoke.cmake
# A failed run's inputs survive the next run (in WORK/artifacts-previous): a rare crash seen once
# stays reproducible after a retry.
file(GLOB previous "${WORK}/artifacts/*")
if(previous)
  file(REMOVE_RECURSE "${WORK}/artifacts-previous")
  file(RENAME "${WORK}/artifacts" "${WORK}/artifacts-previous")
endif()
file(REMOVE_RECURSE "${WORK}/new")
file(GLOB stale "${WORK}/*")
list(FILTER stale EXCLUDE REGEX "/artifacts-previous$")
if(stale)
  file(REMOVE_RECURSE ${stale})
endif()
file(MAKE_DIRECTORY "${WORK}/new" "${WORK}/artifacts")
file(GLOB corpus "${CORPUS}/*")
list(LENGTH corpus n)
if(n EQUAL 0)
  message(FATAL_ERROR "no corpus in ${CORPUS}")
endif()
# -max_len: a header (4 KiB) and two 64 KiB blocks; shorter inputs are zero-padded by the target.
# New inputs go to WORK/new (the first directory), never into the checked-in corpus.
# TMPDIR: the target's scratch trace goes to WORK (an input that crashes it leaves it there).
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env "TMPDIR=${WORK}" "${FUZZER}" -runs=${RUNS} -max_total_time=${SECONDS} -max_len=135168 -timeout=30
          -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=${WORK}/artifacts/
          "${WORK}/new" "${CORPUS}"
  WORKING_DIRECTORY "${WORK}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX MATCHALL "#[0-9]+[ \t]+DONE[^\n]*" done "${err}")
string(REGEX MATCHALL "stat::[^\n]*" stats "${err}")
if(NOT rc EQUAL 0)
  message("${out}${err}")
  file(GLOB artifacts "${WORK}/artifacts/*")
  message(FATAL_ERROR "the fuzzer stopped with status ${rc}: a crash or a sanitizer report (above). "
                      "The input: ${artifacts}. Reproduce: ${FUZZER} <input>; once fixed, add it as a "
                      "reader regression test (tests/test_reader.cpp) and to the corpus.")
endif()
string(REPLACE ";" "\n" stats "${stats}")
message("fuzz.reader-smoke: ${n} corpus inputs\n${done}\n${stats}")
