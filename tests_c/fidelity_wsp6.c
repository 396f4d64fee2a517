/*
 * A caller of compare_graph_backend compiled against whisper.rn 0.4.3's own ggml-backend.h, whose
 * prototype has a sixth parameter, test_node (the spec's, and the generated header's, has five).
 * This file does not include ggml-backend.h, so it can declare that prototype itself, exactly as
 * 0.4.3's header does. Linked into fidelity_wsp_<mode> (fidelity.c).
 */
#include <stdbool.h>

#include "ggml.h"

struct wsp_ggml_backend;
typedef bool (*eval_callback_043)(int node_index, struct wsp_ggml_tensor * t1, struct wsp_ggml_tensor * t2, void * user_data);

bool wsp_ggml_backend_compare_graph_backend(struct wsp_ggml_backend * backend1, struct wsp_ggml_backend * backend2,
                                            struct wsp_ggml_cgraph * graph, eval_callback_043 callback, void * user_data,
                                            struct wsp_ggml_tensor * test_node);

bool compare_with_test_node(struct wsp_ggml_backend * b1, struct wsp_ggml_backend * b2, struct wsp_ggml_cgraph * g,
                            eval_callback_043 cb, void * ud, struct wsp_ggml_tensor * test_node);

bool compare_with_test_node(struct wsp_ggml_backend * b1, struct wsp_ggml_backend * b2, struct wsp_ggml_cgraph * g,
                            eval_callback_043 cb, void * ud, struct wsp_ggml_tensor * test_node) {
    return wsp_ggml_backend_compare_graph_backend(b1, b2, g, cb, ud, test_node);
}
