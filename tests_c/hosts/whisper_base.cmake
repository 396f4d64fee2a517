# The real whisper model: OpenAI whisper base (multilingual, 74 M parameters), converted from PyPI's
# CTranslate2 wheels by scripts/convert-whisper-ct2.py (scripts/fetch-models.sh base), on the
# espeak-ng question of the voice assistant. Included by assistant.cmake, whose tests use the same
# model; the random-weight tiny model stays in the host_whisper* tests above (small and fast).
#
#   host_whisper_base_stock      stock whisper_driver twice on the question, outputs identical
#   host_whisper_base_identical  static / shared: tokens, probabilities and text bitwise equal to stock
# (SIMD on the real model: host_assistant_simd, assistant.cmake.)

set(GGML_RS_WHISPER_BASE_MODEL "${GGML_RS_MODELS_DIR}/ggml-base.bin")
set(GGML_RS_QUESTION_WAV "${GGML_RS_MODELS_DIR}/question-16k.wav")

if(GGML_RS_REV2026_WSP)
  set(_wb_case wsp7_whisper_base)   # whisper.rn 0.7.4 on the same model
else()
  set(_wb_case whisper_base)
endif()
ggml_rs_add_host_test(${_wb_case} whisper wsp
    -m "${GGML_RS_WHISPER_BASE_MODEL}" -f "${GGML_RS_QUESTION_WAV}")
