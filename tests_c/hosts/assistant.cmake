# The voice assistant (assistant.cpp): llama.rn's and whisper.rn's hosts linked together with ONE
# copy of this library, as an app shipping both packages is:
#   static  both host object sets + both cores + libggml_backend_rs.a once
#   shared  both hosts compiled with -D<P>_GGML_SHARED -D<P>_GGML_BACKEND_SHARED (the cores
#           carry them) + libggml_backend_rs.so once, executable linked with -rdynamic
# There is no stock assistant: stock ships one ggml-backend.cpp per package, and the reference is
# the two stock drivers run one after the other (run-assistant.sh reference).
#
# Targets: assistant_<static|shared>. Tests (whisper base, the espeak-ng question and SmolLM2, from
# scripts/fetch-models.sh):
#   host_assistant_stock      stock whisper_driver, then stock llama_driver on its transcript,
#                             twice, identical (fixture: the reference)
#   host_assistant_wer        that transcript's word error rate against the question <= 10 %
#   host_assistant_identical  assistant_static / _shared: transcript, llama tokens and logits
#                             bitwise equal to the reference; each prefix's log lines reach its
#                             own host's logger
#   host_assistant_simd       assistant_static with GGML_RS_SIMD=1: every split of both hosts'
#                             graphs on SIMD, outputs bitwise equal to the reference (AVX2 hosts)

# The real models on real speech: whisper base (whisper_base.cmake) transcribes the espeak-ng
# question, SmolLM2 answers it. No whisper token cap (0: the model ends the segment itself); the
# templated prompt at most 256 tokens; 32 greedy tokens (the same on both sides).
include("${CMAKE_CURRENT_LIST_DIR}/whisper_base.cmake")
set(GGML_RS_ASSISTANT_ARGS
    "${GGML_RS_WHISPER_BASE_MODEL}" "${GGML_RS_QUESTION_WAV}" "${GGML_RS_LLAMA_MODEL}" 0 256 32)

# With the 2026 packages (GGML_RS_REV2026_LM and _WSP): cui-llama.rn 1.12.2 + whisper.rn 0.7.4. Both
# carry ggml-backend-dl.cpp, whose three helpers (dl_load_library, dl_get_sym, dl_error) are C++
# names without the package prefix: the two byte-identical copies are folded at link time.
set(_assistant_modes ${GGML_RS_HOST_MODES})
list(REMOVE_ITEM _assistant_modes stock)
foreach(_m static shared)
  if(NOT _m IN_LIST _modes_lm OR NOT _m IN_LIST _modes_wsp)
    list(REMOVE_ITEM _assistant_modes ${_m})
  endif()
endforeach()
set(_assistant_dup "")
if(GGML_RS_REV2026_LM AND GGML_RS_REV2026_WSP)
  set(_assistant_dup -Wl,--allow-multiple-definition)
endif()
if(GGML_RS_REV2026_LM AND NOT GGML_RS_REV2026_WSP OR GGML_RS_REV2026_WSP AND NOT GGML_RS_REV2026_LM)
  # one 2026 host and one old one: the assistant pairs the contract's two packages or today's two
  set(_assistant_modes "")
endif()
foreach(_mode IN LISTS _assistant_modes)
  set(exe assistant_${_mode})
  ggml_rs_host_objects(lm ${_mode} _lm_objs)
  ggml_rs_host_objects(wsp ${_mode} _wsp_objs)
  add_executable(${exe} assistant.cpp
      $<TARGET_OBJECTS:llama_run_${_mode}> $<TARGET_OBJECTS:whisper_run_${_mode}>
      $<TARGET_OBJECTS:${_lm_objs}> $<TARGET_OBJECTS:${_wsp_objs}>)
  set_target_properties(${exe} PROPERTIES
      LINKER_LANGUAGE CXX CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
  target_compile_options(${exe} PRIVATE -O2 -pthread)
  target_compile_definitions(${exe} PRIVATE GGML_RS_HOST_MODE="${_mode}")
  if(_mode STREQUAL "static")
    target_link_libraries(${exe} PRIVATE
        -Wl,--start-group -Wl,--whole-archive lm_core_static wsp_core_static -Wl,--no-whole-archive
        ggml_backend_rs::static -Wl,--end-group pthread dl m stdc++ ${_assistant_dup})
  else()
    target_link_libraries(${exe} PRIVATE
        -Wl,--whole-archive lm_core_shared wsp_core_shared -Wl,--no-whole-archive
        ggml_backend_rs::shared pthread dl m stdc++ ${_assistant_dup})
    set_target_properties(${exe} PROPERTIES ENABLE_EXPORTS ON BUILD_RPATH "${GGML_RS_LIB_DIR}")
  endif()
endforeach()
unset(_mode)

set(_run_assistant "${CMAKE_CURRENT_SOURCE_DIR}/run-assistant.sh")
if(GGML_RS_REV2026_LM AND NOT GGML_RS_REV2026_WSP OR GGML_RS_REV2026_WSP AND NOT GGML_RS_REV2026_LM)
  return()
endif()
add_test(NAME host_assistant_stock
    COMMAND bash "${_run_assistant}" reference "${_out}/assistant"
            "$<TARGET_FILE:whisper_driver_stock>" "$<TARGET_FILE:llama_driver_stock>"
            -- ${GGML_RS_ASSISTANT_ARGS})
set_tests_properties(host_assistant_stock PROPERTIES
    TIMEOUT 900 LABELS "host;assistant;stock" RUN_SERIAL TRUE
    FIXTURES_SETUP host_assistant_ref)
# The real model understands the question: stock whisper.rn's transcript of the espeak-ng question
# within 10 % word error rate of the sentence spoken (the library's transcripts are bitwise equal
# to it, host_assistant_identical / _simd).
add_test(NAME host_assistant_wer
    COMMAND python3 "${CMAKE_CURRENT_SOURCE_DIR}/whisper_wer.py" --max 0.10
            "${GGML_RS_MODELS_DIR}/question-16k.txt" "${_out}/assistant/transcript_stock.txt")
set_tests_properties(host_assistant_wer PROPERTIES
    TIMEOUT 60 LABELS "host;assistant;stock" FIXTURES_REQUIRED host_assistant_ref)
if(_assistant_modes)
  set(exes "")
  foreach(m IN LISTS _assistant_modes)
    list(APPEND exes "$<TARGET_FILE:assistant_${m}>")
  endforeach()
  add_test(NAME host_assistant_identical
      COMMAND bash "${_run_assistant}" compare "${_out}/assistant" ${exes} -- ${GGML_RS_ASSISTANT_ARGS})
  set_tests_properties(host_assistant_identical PROPERTIES
      TIMEOUT 900 LABELS "host;assistant;${_assistant_modes}" RUN_SERIAL TRUE
      FIXTURES_REQUIRED host_assistant_ref)
endif()
# SIMD is bit-identical to ggml-cpu where both run their AVX2 code (the host compiled with AVX2);
# the portable kernels are only close (host_*_simd_portable gates them by NMSE).
if("static" IN_LIST _assistant_modes AND GGML_RS_HOST_CPU_FLAGS MATCHES "avx2")
  add_test(NAME host_assistant_simd
      COMMAND bash "${_run_assistant}" compare "${_out}/assistant" "$<TARGET_FILE:assistant_static>"
              -- ${GGML_RS_ASSISTANT_ARGS})
  set_tests_properties(host_assistant_simd PROPERTIES
      ENVIRONMENT "ASSISTANT_SIMD=1;ASSISTANT_TAG=_simd")
  set_tests_properties(host_assistant_simd PROPERTIES
      TIMEOUT 900 LABELS "host;assistant;simd;static" RUN_SERIAL TRUE
      FIXTURES_REQUIRED host_assistant_ref)
endif()

# Both hosts at the same time (assistant.cpp --rounds / --cycles): whisper.rn transcribing on one
# thread while llama.rn generates on another, on one copy of the library. One compute thread per
# host, so the two computes share this 2-core machine without oversubscribing it (4 threads on 2
# cores is scripts/bench-threads.sh's subject); whisper.cpp's output depends on its thread count,
# hence a stock reference of its own at one thread.
#   host_assistant_stock_1t          the stock pair one after the other at -t 1 (the reference)
#   host_assistant_concurrent        assistant_static / _shared: the sequential run bitwise equal to
#                                    that reference, then 3 rounds of both hosts at once, each equal
#                                    to the sequential run (the last round's files compared again)
#   host_assistant_concurrent_simd   the same on assistant_static with GGML_RS_SIMD=1
#   host_assistant_cycles[_simd|_shared]  24 load/compute-at-once/free cycles of both models, each
#                                    cycle's outputs equal to the first run's, peak RSS and RSS after
#                                    free flat after 4 warm-up cycles (slack 8 MiB). The stand-in
#                                    whisper model (random-weight tiny, 16 tokens) keeps a cycle
#                                    near one second; SmolLM2 is the real one (64 prompt tokens, 8
#                                    generated). Run with MALLOC_ARENA_MAX=1: every cycle's two
#                                    threads are new, and glibc opens another arena (~21 MB kept
#                                    with SIMD) whenever a malloc finds the existing ones locked,
#                                    which under load happened as late as cycle 8 and failed the
#                                    flatness check with no byte leaked (mtrace: none).
if(_assistant_modes)
  add_test(NAME host_assistant_stock_1t
      COMMAND bash "${_run_assistant}" reference "${_out}/assistant_1t"
              "$<TARGET_FILE:whisper_driver_stock>" "$<TARGET_FILE:llama_driver_stock>"
              -- ${GGML_RS_ASSISTANT_ARGS})
  set_tests_properties(host_assistant_stock_1t PROPERTIES
      ENVIRONMENT "ASSISTANT_THREADS=1"
      TIMEOUT 900 LABELS "host;assistant;concurrent;stock" RUN_SERIAL TRUE
      FIXTURES_SETUP host_assistant_ref_1t)
  add_test(NAME host_assistant_concurrent
      COMMAND bash "${_run_assistant}" compare "${_out}/assistant_1t" ${exes} -- ${GGML_RS_ASSISTANT_ARGS})
  set_tests_properties(host_assistant_concurrent PROPERTIES
      ENVIRONMENT "ASSISTANT_THREADS=1;ASSISTANT_TAG=_concurrent;ASSISTANT_ARGS=--rounds 3"
      TIMEOUT 900 LABELS "host;assistant;concurrent;${_assistant_modes}" RUN_SERIAL TRUE
      FIXTURES_REQUIRED host_assistant_ref_1t)
  if("static" IN_LIST _assistant_modes AND GGML_RS_HOST_CPU_FLAGS MATCHES "avx2")
    add_test(NAME host_assistant_concurrent_simd
        COMMAND bash "${_run_assistant}" compare "${_out}/assistant_1t" "$<TARGET_FILE:assistant_static>"
                -- ${GGML_RS_ASSISTANT_ARGS})
    set_tests_properties(host_assistant_concurrent_simd PROPERTIES
        ENVIRONMENT "ASSISTANT_THREADS=1;ASSISTANT_TAG=_concurrent_simd;ASSISTANT_SIMD=1;ASSISTANT_ARGS=--rounds 3"
        TIMEOUT 900 LABELS "host;assistant;concurrent;simd;static" RUN_SERIAL TRUE
        FIXTURES_REQUIRED host_assistant_ref_1t)
  endif()
  set(_cycles_args --whisper-model "${GGML_RS_WHISPER_MODEL}" --wav "${GGML_RS_WHISPER_WAV}"
      --llama-model "${GGML_RS_LLAMA_MODEL}" -t 1 --max-tokens 16 -p 64 -n 8 --cycles 24)
  foreach(_case static:cpu static:simd shared:cpu)
    string(REPLACE ":" ";" _case "${_case}")
    list(GET _case 0 _m)
    list(GET _case 1 _compute)
    if(NOT _m IN_LIST _assistant_modes)
      continue()
    endif()
    set(_name host_assistant_cycles)
    set(_env "MALLOC_ARENA_MAX=1")
    if(_compute STREQUAL "simd")
      set(_name ${_name}_simd)
      list(APPEND _env "GGML_RS_SIMD=1")
    elseif(_m STREQUAL "shared")
      set(_name ${_name}_shared)
    endif()
    add_test(NAME ${_name} COMMAND "$<TARGET_FILE:assistant_${_m}>" ${_cycles_args})
    set_tests_properties(${_name} PROPERTIES
        ENVIRONMENT "${_env}" TIMEOUT 600 LABELS "host;assistant;concurrent;${_m}" RUN_SERIAL TRUE
        PASS_REGULAR_EXPRESSION "CONCURRENT .* cycles=24 cycles_same=24 .* rss=flat")
  endforeach()
endif()

# ThreadSanitizer on both hosts at once (scripts/tsan.sh configures this with the library built by
# cargo with -Zsanitizer=thread, GGML_RS_TSAN_LIB, and the matching runtime, GGML_RS_TSAN_RUNTIME):
# assistant_tsan is assistant_static's objects (the hosts uninstrumented) linked with that library;
# tsan_control races inside the library on purpose. host_assistant_tsan (label tsan) runs the
# control, which must be reported with library frames, then the concurrent rounds and two cycles
# with ggml-cpu and with GGML_RS_SIMD=1, whose reports must name no library frame.
set(GGML_RS_TSAN_LIB "" CACHE FILEPATH "libggml_backend_rs.a built with -Zsanitizer=thread (scripts/tsan.sh)")
set(GGML_RS_TSAN_RUNTIME "" CACHE FILEPATH "the ThreadSanitizer runtime archive matching GGML_RS_TSAN_LIB's rustc")
if(GGML_RS_TSAN_LIB AND GGML_RS_TSAN_RUNTIME AND "static" IN_LIST _assistant_modes)
  set(_tsan_link
      -Wl,--start-group -Wl,--whole-archive lm_core_static wsp_core_static -Wl,--no-whole-archive
      "${GGML_RS_TSAN_LIB}" -Wl,--end-group
      -Wl,--whole-archive "${GGML_RS_TSAN_RUNTIME}" -Wl,--no-whole-archive pthread dl m rt stdc++ ${_assistant_dup})
  ggml_rs_host_objects(lm static _lm_objs)
  ggml_rs_host_objects(wsp static _wsp_objs)
  add_executable(assistant_tsan EXCLUDE_FROM_ALL assistant.cpp
      $<TARGET_OBJECTS:llama_run_static> $<TARGET_OBJECTS:whisper_run_static>
      $<TARGET_OBJECTS:${_lm_objs}> $<TARGET_OBJECTS:${_wsp_objs}>)
  set_target_properties(assistant_tsan PROPERTIES LINKER_LANGUAGE CXX CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
  target_compile_options(assistant_tsan PRIVATE -O2 -pthread)
  target_compile_definitions(assistant_tsan PRIVATE GGML_RS_HOST_MODE="tsan")
  target_link_libraries(assistant_tsan PRIVATE ${_tsan_link})
  add_executable(tsan_control EXCLUDE_FROM_ALL tsan_control.c)
  target_include_directories(tsan_control BEFORE PRIVATE $<TARGET_PROPERTY:lm_core_static,INTERFACE_INCLUDE_DIRECTORIES>)
  target_compile_definitions(tsan_control PRIVATE $<TARGET_PROPERTY:lm_core_static,INTERFACE_COMPILE_DEFINITIONS>)
  set_target_properties(tsan_control PROPERTIES LINKER_LANGUAGE CXX)
  target_link_libraries(tsan_control PRIVATE ${_tsan_link})
  add_test(NAME host_assistant_tsan
      COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/run-tsan.sh" "${_out}/tsan"
              "$<TARGET_FILE:tsan_control>" "$<TARGET_FILE:assistant_tsan>" -- ${_cycles_args})
  set_tests_properties(host_assistant_tsan PROPERTIES
      TIMEOUT 900 LABELS "host;assistant;concurrent;tsan" RUN_SERIAL TRUE)
endif()
