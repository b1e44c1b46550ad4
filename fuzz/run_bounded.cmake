# SPDX-License-Identifier: MIT
# One bounded libFuzzer run (CTest label `fuzz`): copies the seed corpus into
# a scratch directory, fuzzes for SECONDS with a per-input time limit, and
# fails when libFuzzer reports a crash, a timeout or a leak (the input is
# saved under WORK/artifacts/).
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
file(GLOB seeds ${SEEDS}/*)
if(seeds)
  file(COPY ${seeds} DESTINATION ${WORK}/corpus)
endif()
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -timeout=2 -rss_limit_mb=2048 -print_final_stats=1
          -artifact_prefix=${WORK}/artifacts/ ${WORK}/corpus
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fuzz_${NAME}: libFuzzer exited with ${rc}; inputs in ${WORK}/artifacts/")
endif()
