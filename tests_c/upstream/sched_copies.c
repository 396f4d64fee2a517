/*
 * The scheduler with pipeline copies (parallel = true, n_copies > 1), as llama.cpp drives it with
 * several GPUs: two CPU backends, a graph split between them, an input every node uses, an input
 * only the second split uses, and an input no node uses (a text-only batch's embeddings input).
 * Three rounds of reset / alloc / set inputs / compute; prints what a user can observe: copies,
 * splits, each backend's compute buffer size, where each input landed in its buffer, the outputs.
 * scripts/test-upstream.sh runs it built stock and on the library and compares the outputs byte
 * for byte. ggml 0.25.3 gives every INPUT leaf its copies (the unused one too); b11118 and
 * v0.20.0 only the inputs nodes use, so the buffer sizes differ between revisions.
 */
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define N 64

static long offset_in_buffer(const struct ggml_tensor * t) {
    if (t->buffer == NULL || t->data == NULL) {
        return -1;
    }
    return (long) ((const char *) t->data - (const char *) ggml_backend_buffer_get_base(t->buffer));
}

int main(void) {
    ggml_backend_t backends[2] = { ggml_backend_cpu_init(), ggml_backend_cpu_init() };
    if (!backends[0] || !backends[1]) {
        fprintf(stderr, "sched_copies: no CPU backend\n");
        return 1;
    }
    ggml_backend_sched_t sched = ggml_backend_sched_new(backends, NULL, 2, 256, /*parallel*/ true, /*op_offload*/ false);
    if (!sched) {
        fprintf(stderr, "sched_copies: sched_new failed\n");
        return 1;
    }
    printf("n_copies %d\n", ggml_backend_sched_get_n_copies(sched));

    for (int round = 0; round < 3; round++) {
        struct ggml_init_params ip = { ggml_tensor_overhead() * 64 + ggml_graph_overhead(), NULL, true };
        struct ggml_context * ctx = ggml_init(ip);
        struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N);
        struct ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N);
        struct ggml_tensor * unused = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3 * N);
        ggml_set_name(a, "in_a");
        ggml_set_name(b, "in_b");
        ggml_set_name(unused, "in_unused");
        ggml_set_input(a);
        ggml_set_input(b);
        ggml_set_input(unused);

        struct ggml_tensor * x = ggml_scale(ctx, a, 2.0f);      /* split 0 (backend 0) */
        struct ggml_tensor * y = ggml_add(ctx, x, a);           /* split 0 */
        struct ggml_tensor * z = ggml_mul(ctx, y, b);           /* split 1 (backend 1) */
        struct ggml_tensor * out = ggml_add(ctx, z, a);         /* split 1 */
        ggml_set_name(out, "out");
        ggml_set_output(out);

        struct ggml_cgraph * gf = ggml_new_graph(ctx);
        /* a leaf no node reads, expanded on its own as llama.cpp expands its inputs */
        ggml_build_forward_expand(gf, unused);
        ggml_build_forward_expand(gf, out);

        ggml_backend_sched_reset(sched);
        ggml_backend_sched_set_tensor_backend(sched, x, backends[0]);
        ggml_backend_sched_set_tensor_backend(sched, y, backends[0]);
        ggml_backend_sched_set_tensor_backend(sched, z, backends[1]);
        ggml_backend_sched_set_tensor_backend(sched, out, backends[1]);
        if (!ggml_backend_sched_alloc_graph(sched, gf)) {
            printf("round %d: alloc_graph failed\n", round);
            return 1;
        }
        printf("round %d: splits %d, nodes %d\n", round, ggml_backend_sched_get_n_splits(sched), ggml_graph_n_nodes(gf));
        for (int i = 0; i < 2; i++) {
            printf("round %d: backend %d compute buffer %zu bytes\n", round, i, ggml_backend_sched_get_buffer_size(sched, backends[i]));
        }
        const struct ggml_tensor * named[] = { a, b, unused, out };
        for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
            ggml_backend_t be = ggml_backend_sched_get_tensor_backend(sched, (struct ggml_tensor *) named[i]);
            printf("round %d: %-9s backend %d offset %ld\n", round, ggml_get_name(named[i]),
                   be == backends[0] ? 0 : be == backends[1] ? 1 : -1, offset_in_buffer(named[i]));
        }

        float va[N], vb[N], vu[3 * N], vo[N];
        for (int i = 0; i < N; i++) {
            va[i] = (float) (i + 1 + round) * 0.25f;
            vb[i] = (float) (N - i) * 0.5f;
        }
        for (int i = 0; i < 3 * N; i++) {
            vu[i] = (float) i;
        }
        ggml_backend_tensor_set(a, va, 0, sizeof(va));
        ggml_backend_tensor_set(b, vb, 0, sizeof(vb));
        if (unused->buffer) {
            ggml_backend_tensor_set(unused, vu, 0, sizeof(vu));
        }
        if (ggml_backend_sched_graph_compute(sched, gf) != GGML_STATUS_SUCCESS) {
            printf("round %d: compute failed\n", round);
            return 1;
        }
        ggml_backend_tensor_get(out, vo, 0, sizeof(vo));
        double sum = 0;
        int wrong = 0;
        for (int i = 0; i < N; i++) {
            sum += vo[i];
            float want = (3.0f * va[i]) * vb[i] + va[i];
            wrong += memcmp(&want, &vo[i], sizeof(float)) != 0;
        }
        printf("round %d: out sum %.6f, %d of %d differ from the C reference\n", round, sum, wrong, N);
        ggml_free(ctx);
    }
    ggml_backend_sched_free(sched);
    ggml_backend_free(backends[0]);
    ggml_backend_free(backends[1]);
    return 0;
}
