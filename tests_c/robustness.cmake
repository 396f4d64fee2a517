# robustness.cmake -- issue 5, "never take the app down": concurrency, bad input, valgrind,
# fuzzing. Included by tests_c/CMakeLists.txt (after the host cores and the C test helpers).
#
#   threads_<p>_<mode>      tests_c/threads.c: registry first use from 8 threads, 4 schedulers on
#                           4 threads with shared weights, events across two streams/threads
#   bad_input_<p>_<mode>    tests_c/bad_input.c: the rows of docs/bad-input.md that conformance.c
#                           and sched.c do not cover
#   fuzz_replay_<p>         tests_c/fuzz/fuzz.c + replay_main.c (any compiler, static mode): the
#                           committed corpus replayed once (ctest: fuzz_replay_<p>)
#   valgrind                scripts/valgrind.sh <build dir> (label valgrind): memcheck over the
#                           conformance / sched / bad_input / fuzz replay tests, helgrind over threads
#   fuzz                    scripts/fuzz.sh 60 (label fuzz): libFuzzer + ASan in its own clang
#                           build dir (build-fuzz)
#
# With -DGGML_RS_FUZZ=ON (clang only; scripts/fuzz.sh configures that build) the libFuzzer
# harnesses fuzz_lm / fuzz_wsp are defined instead, over ASan-instrumented copies of the host cores
# and the library given by GGML_RS_FUZZ_LIB.

option(GGML_RS_VALGRIND_TEST "Register the valgrind ctest (scripts/valgrind.sh)" ON)
option(GGML_RS_FUZZ_TEST "Register the bounded fuzzing ctest (scripts/fuzz.sh, builds with clang)" ON)
set(GGML_RS_FUZZ_TEST_SECONDS 60 CACHE STRING "Fuzzing time of the 'fuzz' ctest (split between lm and wsp)")
set(GGML_RS_FUZZ_TEST_RUNS 20000 CACHE STRING "Executions per harness of the 'fuzz' ctest (deterministic, seed 1)")
# The 'fuzz' ctest fuzzes the lm_ layer: the wsp_ layer is the same Rust code stamped under the
# other prefix, and its harness costs another ASan build of a host core (about a minute of a cold
# CI run). `bash scripts/fuzz.sh` fuzzes both; -DGGML_RS_FUZZ_TEST_PREFIXES="lm wsp" here too.
set(GGML_RS_FUZZ_TEST_PREFIXES "lm" CACHE STRING "Harnesses of the 'fuzz' ctest (lm, wsp)")
option(GGML_RS_FUZZ "Build the libFuzzer harnesses (clang; see scripts/fuzz.sh)" OFF)
set(GGML_RS_FUZZ_LIB "${GGML_RS_STATIC_LIB}" CACHE FILEPATH
    "libggml_backend_rs.a the fuzz harnesses link (scripts/fuzz.sh passes a sancov-instrumented one)")

set(_rob_dir "${CMAKE_CURRENT_LIST_DIR}")

if(NOT GGML_RS_FUZZ)
  # -------------------------------------------------------------------- concurrency, bad input
  ggml_rs_add_c_test_both(threads threads.c)
  ggml_rs_add_c_test_both(bad_input bad_input.c)
  foreach(_p lm wsp)
    foreach(_mode IN LISTS GGML_RS_TEST_MODES)
      # results are compared bit for bit with plain float operations: no contraction into FMA
      target_compile_options(threads_${_p}_${_mode} PRIVATE -ffp-contract=off)
      set_property(TEST threads_${_p}_${_mode} APPEND PROPERTY LABELS threads)
      set_property(TEST bad_input_${_p}_${_mode} APPEND PROPERTY LABELS bad_input)
    endforeach()
  endforeach()

  # -------------------------------------------------------------------- fuzz corpus replay
  foreach(_p lm wsp)
    string(TOUPPER ${_p} _P)
    set(_exe fuzz_replay_${_p})
    add_executable(${_exe} fuzz/fuzz.c fuzz/replay_main.c)
    target_compile_definitions(${_exe} PRIVATE TEST_PREFIX_${_P} GGML_RS_TEST_MODE="static")
    target_compile_options(${_exe} PRIVATE -ffp-contract=off)
    ggml_rs_link_host(${_exe} ${_p}_core_static static)
    # the corpus, and the reproducers of the bugs the fuzzer found (fixed; kept as regressions)
    add_test(NAME ${_exe} COMMAND ${_exe} "${_rob_dir}/fuzz/corpus" "${_rob_dir}/fuzz/crashes")
    set_tests_properties(${_exe} PROPERTIES TIMEOUT 600 LABELS "${_p};static;fuzz_replay")
  endforeach()

  # -------------------------------------------------------------------- valgrind
  if(GGML_RS_VALGRIND_TEST)
    add_test(NAME valgrind
             COMMAND bash "${PROJECT_SOURCE_DIR}/scripts/valgrind.sh" "${CMAKE_BINARY_DIR}")
    set_tests_properties(valgrind PROPERTIES TIMEOUT 3600 LABELS valgrind)
  endif()

  # -------------------------------------------------------------------- fuzzing (own clang build)
  if(GGML_RS_FUZZ_TEST)
    # a fixed number of runs from a fixed seed: the bounded CI run repeats the checked one exactly
    add_test(NAME fuzz
             COMMAND env FUZZ_RUNS=${GGML_RS_FUZZ_TEST_RUNS} "FUZZ_PREFIXES=${GGML_RS_FUZZ_TEST_PREFIXES}" bash "${PROJECT_SOURCE_DIR}/scripts/fuzz.sh" ${GGML_RS_FUZZ_TEST_SECONDS})
    # (mostly builds: the sancov library and the harnesses; the 2 x 20000 runs take seconds. COST
    # starts it first under `ctest -j`, beside the other tests that are not RUN_SERIAL)
    set_tests_properties(fuzz PROPERTIES TIMEOUT 2400 LABELS fuzz COST 1000)
  endif()
else()
  # -------------------------------------------------------------------- libFuzzer build (clang)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "GGML_RS_FUZZ needs clang (-fsanitize=fuzzer); configure with CC=clang CXX=clang++")
  endif()
  set(_asan -fsanitize=address -fno-omit-frame-pointer -g)
  foreach(_p lm wsp)
    string(TOUPPER ${_p} _P)
    # the host core again, instrumented (ASan + coverage), from the staged sources
    _ggml_rs_host_sources(${_p} _srcs _defs _std _subdirs)
    list(TRANSFORM _srcs PREPEND "${GGML_RS_${_P}_STAGED_DIR}/")
    add_library(${_p}_core_fuzz STATIC EXCLUDE_FROM_ALL ${_srcs})
    # which package's core: a 2026 one compiles the harness for its revision (TEST_REV2026)
    set_target_properties(${_p}_core_fuzz PROPERTIES GGML_RS_HOST "${_p}")
    _ggml_rs_core_flags(${_p}_core_fuzz ${_std} "${_defs}")
    target_include_directories(${_p}_core_fuzz BEFORE PUBLIC ${GGML_RS_${_P}_INCLUDE_DIRS})
    # at -O1 (after the core flags' -O3): libFuzzer's advice for instrumented code, and ggml-cpu.c
    # alone took 85 s of a cold CI's fuzz build at -O3 with ASan (the harness hunts the library's
    # faults; the core's optimization changes none of its calls)
    target_compile_options(${_p}_core_fuzz PRIVATE ${_asan} -O1 -fsanitize=fuzzer-no-link)

    add_executable(fuzz_${_p} EXCLUDE_FROM_ALL fuzz/fuzz.c)
    set_target_properties(fuzz_${_p} PROPERTIES LINKER_LANGUAGE CXX)
    target_compile_definitions(fuzz_${_p} PRIVATE TEST_PREFIX_${_P})
    target_compile_options(fuzz_${_p} PRIVATE ${_asan} -fsanitize=fuzzer -ffp-contract=off)
    target_link_options(fuzz_${_p} PRIVATE -fsanitize=address,fuzzer)
    target_link_libraries(fuzz_${_p} PRIVATE
        -Wl,--start-group
        -Wl,--whole-archive ${_p}_core_fuzz -Wl,--no-whole-archive
        "${GGML_RS_FUZZ_LIB}"
        -Wl,--end-group
        pthread dl m stdc++)
  endforeach()
  add_custom_target(fuzz_all DEPENDS fuzz_lm fuzz_wsp)
endif()
unset(_rob_dir)
