/* b11118's allocation dependencies (ggml_backend_graph_optimize_params.add_alloc_dep), stock vs
 * ours: the CPU backend gets a graph_optimize that asks the scheduler to keep the first node of
 * its split alive until the last one (what ggml-metal's fusion does), on a chain of in-place
 * capable SCALEs. Prints the scheduler's view of the result: how often graph_optimize ran, the
 * number of splits, each node's offset in the compute buffer, whether any later node reuses the
 * first node's memory, and the computed values; stock's and ours' outputs must be equal, and with
 * the dependency the first node's memory must stay its own. argv[1] = "nodep" leaves it out. */
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-backend-impl.h"
#include "ggml-cpu.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int n_calls = 0;
static int with_dep = 1;

static void optimize(ggml_backend_t backend, struct ggml_cgraph * g, struct ggml_backend_graph_optimize_params * params) {
    (void) backend;
    n_calls++;
    const int n = ggml_graph_n_nodes(g);
    if (with_dep && params && params->add_alloc_dep && n > 2) {
        params->add_alloc_dep(params->user_data, ggml_graph_node(g, 0), ggml_graph_node(g, n - 1));
        params->add_alloc_dep(params->user_data, ggml_graph_node(g, 0), ggml_graph_node(g, n - 1)); /* once */
    }
}

int main(int argc, char ** argv) {
    with_dep = !(argc > 1 && strcmp(argv[1], "nodep") == 0);
    struct ggml_init_params ip = { 64 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(ip);
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1024);
    ggml_set_name(a, "a");
    ggml_set_input(a);
    struct ggml_tensor * x = a;
    for (int i = 0; i < 8; i++) {
        x = ggml_scale(ctx, x, 1.0f + 0.125f * (float) i);
        ggml_format_name(x, "x%d", i);
    }
    ggml_set_output(x);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, x);

    ggml_backend_t cpu = ggml_backend_cpu_init();
    cpu->iface.graph_optimize = optimize;
    ggml_backend_sched_t sched = ggml_backend_sched_new(&cpu, NULL, 1, 64, false, true);
    if (!ggml_backend_sched_alloc_graph(sched, gf)) {
        printf("alloc failed\n");
        return 1;
    }
    printf("graph_optimize calls %d, splits %d\n", n_calls, ggml_backend_sched_get_n_splits(sched));
    const int n = ggml_graph_n_nodes(gf);
    const char * x0 = (const char *) ggml_graph_node(gf, 0)->data;
    const size_t sz = ggml_nbytes(ggml_graph_node(gf, 0));
    char * lo = (char *) a->data;
    for (int i = 0; i < n; i++) {
        if ((char *) ggml_graph_node(gf, i)->data < lo) lo = (char *) ggml_graph_node(gf, i)->data;
    }
    int reused = 0;
    for (int i = 0; i < n; i++) {
        const struct ggml_tensor * t = ggml_graph_node(gf, i);
        const char * d = (const char *) t->data;
        printf("%s offset %zu\n", t->name, (size_t) (d - lo));
        if (i > 0 && d < x0 + sz && x0 < d + ggml_nbytes(t)) reused = 1;
    }
    printf("a offset %zu\n", (size_t) ((char *) a->data - lo));
    printf("x0 memory reused by a later node: %s\n", reused ? "yes" : "no");

    float in[1024];
    for (int i = 0; i < 1024; i++) in[i] = (float) i / 7.0f;
    ggml_backend_tensor_set(a, in, 0, sizeof in);
    if (ggml_backend_sched_graph_compute(sched, gf) != GGML_STATUS_SUCCESS) {
        printf("compute failed\n");
        return 1;
    }
    float out[1024];
    ggml_backend_tensor_get(x, out, 0, sizeof out);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof out; i++) h = (h ^ ((unsigned char *) out)[i]) * 1099511628211ull;
    printf("out[5] %.9g, fnv %016llx\n", out[5], (unsigned long long) h);

    ggml_backend_sched_free(sched);
    ggml_backend_free(cpu);
    ggml_free(ctx);
    return with_dep && reused ? 2 : 0;
}
