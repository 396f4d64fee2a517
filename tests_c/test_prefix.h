/*
 * The one switch between the two prefixes for the C tests: each test source is compiled once with
 * TEST_PREFIX_LM (llama.rn's lm_ symbols) and once with TEST_PREFIX_WSP (whisper.rn's wsp_), and
 * names every ggml symbol through these macros. Include it after the ggml headers.
 */
#ifndef GGML_RS_TEST_REV_H
#define GGML_RS_TEST_REV_H
/*
 * The API generation the test is compiled against (set by the CMake build, tests_c/hosts.cmake: a
 * core of the 2026 revision carries TEST_REV2026 to everything that links it):
 *   llama.rn 0.4.4           TEST_PREFIX_LM                  (no TEST_API_* below)
 *   whisper.rn 0.4.3         TEST_PREFIX_WSP                 TEST_API_STATUS ... TEST_API_LOAD
 *   the 2026 revision        TEST_PREFIX_LM|WSP + TEST_REV2026   all of them + TEST_API_2026
 *
 *   TEST_API_STATUS      buffer_init_tensor / tensor_alloc / view_init / init_tensor return a status
 *   TEST_API_OP_OFFLOAD  sched_new(..., parallel, op_offload)
 *   TEST_API_REG_VERSION struct ggml_backend_reg starts with int api_version
 *   TEST_API_LOAD        registry by name case-insensitively, device_register, load / unload
 *   TEST_API_2026        2-D transfers, graph_optimize, sched_reserve_size / get_buffer_type /
 *                        split_graph, meta queries, compare_graph_backend(..., test_nodes, n)
 */
#if defined(TEST_PREFIX_WSP) || defined(TEST_REV2026)
#    define TEST_API_STATUS 1
#    define TEST_API_OP_OFFLOAD 1
#    define TEST_API_REG_VERSION 1
#    define TEST_API_LOAD 1
#endif
#if defined(TEST_REV2026)
#    define TEST_API_2026 1
#endif

/* sched_new with op_offload = true where the revision has the parameter */
#if defined(TEST_API_OP_OFFLOAD)
#    define TEST_SCHED_NEW(fn, backends, bufts, n, graph_size, parallel, op_offload) \
        fn(backends, bufts, n, graph_size, parallel, op_offload)
#else
#    define TEST_SCHED_NEW(fn, backends, bufts, n, graph_size, parallel, op_offload) \
        ((void) (op_offload), fn(backends, bufts, n, graph_size, parallel))
#endif
/* compare_graph_backend's node-by-node form: the spec's five parameters, or 2026's seven with no
 * test nodes */
#if defined(TEST_API_2026)
#    define TEST_COMPARE_GRAPH(fn, b1, b2, g, cb, ud) fn(b1, b2, g, cb, ud, NULL, 0)
#else
#    define TEST_COMPARE_GRAPH(fn, b1, b2, g, cb, ud) fn(b1, b2, g, cb, ud)
#endif
#endif /* GGML_RS_TEST_REV_H */

/* conformance.c names the symbols itself and only wants the API macros above */
#if !defined(TEST_PREFIX_FEATURES_ONLY)
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
#endif /* !TEST_PREFIX_FEATURES_ONLY */
