/*
 * The one switch between the two prefixes for the C tests: each test source is compiled once with
 * TEST_PREFIX_LM (llama.rn's lm_ symbols) and once with TEST_PREFIX_WSP (whisper.rn's wsp_), and
 * names every ggml symbol through these macros. Include it after the ggml headers.
 */
#ifndef GGML_RS_TEST_PREFIX_H
#define GGML_RS_TEST_PREFIX_H

#if defined(TEST_PREFIX_LM) == defined(TEST_PREFIX_WSP)
#    error "define exactly one of TEST_PREFIX_LM, TEST_PREFIX_WSP"
#endif

#if defined(TEST_PREFIX_LM)
#    define G(x) lm_ggml_##x
#    define C(x) LM_GGML_##x
#    define PREFIX "lm"
#    define QUANTIZE_CHUNK lm_ggml_quantize_chunk
#else
#    define G(x) wsp_ggml_##x
#    define C(x) WSP_GGML_##x
#    define PREFIX "wsp"
/* whisper.rn's rename script prefixed this one twice */
#    define QUANTIZE_CHUNK wsp_ggml_wsp_quantize_chunk
#endif
#define GB(x) G(backend_##x)

#endif
