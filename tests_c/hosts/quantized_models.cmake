# Quantized real models (issue 34): ggml-cpu's and SIMD's quantized matrix products on real weights.
# Included by CMakeLists.txt (after the host drivers are defined). docs/quantized-models.md.
#
#   Gemma 3 270M Q4_K_M (scripts/fetch-models.sh gemma; Q5_0, Q4_K, Q6_K, Q8_0 weights) on the
#   2026 llama hosts (gemma3 postdates llama.rn 0.4.4):
#     host_cui_gemma_{stock,identical}, host_lm12_gemma_{stock,identical}   stock vs static / shared /
#                                                                            archive, bitwise
#     host_cui_gemma_simd, host_lm12_gemma_simd   GGML_RS_SIMD=1, whole output bitwise (AVX2), every
#                                                 split checked node by node (run-simd.sh)
#   whisper base quantized to q5_1 and q8_0 by whisper_quantize (whisper.cpp's quantize on the host's
#   own wsp_ ggml; fixture test quantize_whisper_base makes .cache/models/ggml-base-<type>.bin), on
#   the espeak-ng question:
#     host_[wsp7_]whisper_base_<type>_{stock,identical}   stock vs ours, bitwise
#     host_[wsp7_]whisper_base_<type>_simd                GGML_RS_SIMD=1, transcript tokens; on AVX2
#                                                         the whole output bitwise

set(GGML_RS_GEMMA_MODEL "${GGML_RS_MODELS_DIR}/gemma-3-270m-q4_k_m.gguf")
set(_qm_simd "${CMAKE_CURRENT_LIST_DIR}/run-simd.sh")
set(_qm_question "${GGML_RS_MODELS_DIR}/question-16k.wav")

# ggml_rs_qm_simd_test(<name> <llama|whisper> <stock exe target> <static exe target> <declined ops>
#                      <bitwise 0|1> <driver args>...)
function(ggml_rs_qm_simd_test name h stock static declined bitwise)
  add_test(NAME ${name}
      COMMAND bash "${_qm_simd}" ${h} "${_out}/${name}" "$<TARGET_FILE:${stock}>" "$<TARGET_FILE:${static}>"
              -- ${ARGN})
  set(env "")
  if(declined)
    list(APPEND env "GGML_RS_SIMD_DECLINED=${declined}")
  endif()
  if(bitwise AND GGML_RS_HOST_CPU_FLAGS MATCHES "-mavx2")
    list(APPEND env "GGML_RS_SIMD_BITWISE=1")
  endif()
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${env}"
      TIMEOUT 900 LABELS "host;simd;static;quantized" RUN_SERIAL TRUE)
endfunction()

# --- Gemma 3 270M Q4_K_M on cui-llama.rn 1.12.2 and llama.rn 0.12.9 ------------------------------
# 64-token prompt in one ubatch, 16 greedy tokens, flash attention auto (the drivers' default):
# bounded time (the 2026 stage runs the cui-llama.rn ones; most of it is generation on a busy machine).
if(GGML_RS_REV2026_LM)
  set(_qm_gemma_args -m "${GGML_RS_GEMMA_MODEL}" -p 64 -n 16)
  # Gemma's graphs run whole on SIMD (one split per graph): SET_ROWS, GLU, FLASH_ATTN_EXT, the
  # Q5_0, Q6_K and Q8_0 products and the Q4_K weights ggml-cpu repacks on this CPU (CPU_REPACK,
  # ggml's repacked layout computed by SIMD, kernels/src/ops/mul_mat/repacked.rs); run-simd.sh fails
  # on any split off SIMD. SIMD generates 96 tokens.
  set(_qm_gemma_declined "")
  set(_qm_gemma_simd_args -m "${GGML_RS_GEMMA_MODEL}" -p 64 -n 96)
  foreach(_qm IN ITEMS cui:lm:llama_driver lm12:lm12:llama12_driver)
    string(REPLACE ":" ";" _qm "${_qm}")
    list(GET _qm 0 _qm_tag)
    list(GET _qm 1 _qm_host)
    list(GET _qm 2 _qm_drv)
    if(NOT _qm_host IN_LIST _hosts)
      continue()
    endif()
    ggml_rs_add_host_test(${_qm_tag}_gemma llama ${_qm_host} ${_qm_gemma_args})
    set_property(TEST host_${_qm_tag}_gemma_stock APPEND PROPERTY LABELS quantized)
    if("static" IN_LIST _modes_${_qm_host})
      ggml_rs_qm_simd_test(host_${_qm_tag}_gemma_simd llama ${_qm_drv}_stock ${_qm_drv}_static
          "${_qm_gemma_declined}" 1 ${_qm_gemma_simd_args})
    endif()
  endforeach()
endif()

# --- whisper base q5_1 / q8_0 ---------------------------------------------------------------------
# the quantizer: whisper.cpp's examples/quantize logic on the stock core (the package's own ggml.c /
# ggml-quants.c, wsp_ prefix)
if(TARGET wsp_core_stock OR "stock" IN_LIST _modes_wsp)
  ggml_rs_add_host_core_stock(wsp)
  add_executable(whisper_quantize whisper_quantize.cpp)
  set_target_properties(whisper_quantize PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
  target_compile_options(whisper_quantize PRIVATE -O2 -pthread)
  target_include_directories(whisper_quantize BEFORE PRIVATE
      $<TARGET_PROPERTY:wsp_core_stock,INTERFACE_INCLUDE_DIRECTORIES>)
  target_compile_definitions(whisper_quantize PRIVATE
      $<TARGET_PROPERTY:wsp_core_stock,INTERFACE_COMPILE_DEFINITIONS>)
  ggml_rs_link_host(whisper_quantize wsp_core_stock stock)

  add_test(NAME quantize_whisper_base
      COMMAND bash "${CMAKE_CURRENT_LIST_DIR}/make-quantized.sh" "$<TARGET_FILE:whisper_quantize>"
              "${GGML_RS_MODELS_DIR}" q5_1 q8_0)
  set_tests_properties(quantize_whisper_base PROPERTIES
      TIMEOUT 300 LABELS "host;whisper;quantized" RUN_SERIAL TRUE
      FIXTURES_SETUP whisper_base_quantized)

  # SIMD's whole output (tokens and probabilities) bitwise on AVX2, as host_wsp7_whisper_simd; on
  # whisper.rn 0.4.3 too, stricter than host_whisper_simd (measured identical for both types)
  set(_qm_bitwise 1)
  if(GGML_RS_REV2026_WSP)
    set(_qm_wcase wsp7_whisper_base)
  else()
    set(_qm_wcase whisper_base)
  endif()
  foreach(_qm_type q5_1 q8_0)
    set(_qm_args -m "${GGML_RS_MODELS_DIR}/ggml-base-${_qm_type}.bin" -f "${_qm_question}")
    ggml_rs_add_host_test(${_qm_wcase}_${_qm_type} whisper wsp ${_qm_args})
    set_property(TEST host_${_qm_wcase}_${_qm_type}_stock APPEND PROPERTY
        FIXTURES_REQUIRED whisper_base_quantized)
    set_property(TEST host_${_qm_wcase}_${_qm_type}_stock APPEND PROPERTY LABELS quantized)
    if("static" IN_LIST _modes_wsp)
      # every product (Q5_1 / Q8_0 / F16 / F32) and the Q5_1 token embedding (GET_ROWS) on SIMD
      set(_qm_declined "")
      ggml_rs_qm_simd_test(host_${_qm_wcase}_${_qm_type}_simd whisper whisper_driver_stock whisper_driver_static
          "${_qm_declined}" ${_qm_bitwise} ${_qm_args})
      set_property(TEST host_${_qm_wcase}_${_qm_type}_simd APPEND PROPERTY
          FIXTURES_REQUIRED whisper_base_quantized)
    endif()
  endforeach()
endif()
unset(_qm)
unset(_qm_tag)
unset(_qm_host)
unset(_qm_drv)
unset(_qm_type)
unset(_qm_args)
unset(_qm_declined)
