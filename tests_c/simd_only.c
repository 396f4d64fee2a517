/*
 * A C program that links only ggml's core (ggml.c, ggml-alloc.c, quants; no ggml-cpu) and this
 * library: the registry offers the SIMD backend as the CPU device and init_best() computes with
 * it. Results are checked against values computed here from the dequantized weights.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-simd.h"

#include "test_prefix.h"

static int n_checks, n_failed;
#define CHECK(cond) do { n_checks++; if (!(cond)) { n_failed++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)

enum { K = 256, M = 24, N = 5 };

int main(void) {
    CHECK(GB(dev_count)() == 1);
    GB(dev_t) dev = GB(dev_get)(0);
    CHECK(strcmp(GB(dev_name)(dev), "SIMD") == 0);
    CHECK(GB(dev_type)(dev) == C(BACKEND_DEVICE_TYPE_CPU));
    CHECK(GB(reg_by_name)("SIMD") == GB(simd_reg)());
    GB(t) be = GB(init_best)();
    CHECK(be != NULL && GB(is_simd)(be));
    CHECK(strcmp(GB(name)(be), "SIMD") == 0);

    struct G(init_params) ip = { 16 * G(tensor_overhead)() + G(graph_overhead)(), NULL, true };
    struct G(context) * ctx = G(init)(ip);
    struct G(tensor) * w = G(new_tensor_2d)(ctx, C(TYPE_Q4_0), K, M);
    struct G(tensor) * x = G(new_tensor_2d)(ctx, C(TYPE_F32), K, N);
    struct G(tensor) * y = G(soft_max)(ctx, G(mul_mat)(ctx, w, x));
    struct G(cgraph) * g = G(new_graph)(ctx);
    G(build_forward_expand)(g, y);

    /* through the scheduler, as an app does */
    GB(sched_t) sched;
    sched = TEST_SCHED_NEW(GB(sched_new), &be, NULL, 1, 64, false, true);
    CHECK(sched != NULL);
    GB(buffer_t) wbuf = G(backend_alloc_ctx_tensors)(ctx, be); /* w and x: leafs with data */
    CHECK(wbuf != NULL);

    static float wf[M * K], xf[N * K], deq[M * K];
    unsigned s = 12345;
    for (int i = 0; i < M * K; i++) { s = s * 1103515245u + 12345u; wf[i] = ((int) ((s >> 8) % 2001) - 1000) / 1000.0f; }
    for (int i = 0; i < N * K; i++) { s = s * 1103515245u + 12345u; xf[i] = ((int) ((s >> 8) % 2001) - 1000) / 2000.0f; }
    void * q = malloc(G(nbytes)(w));
    QUANTIZE_CHUNK(C(TYPE_Q4_0), wf, q, 0, M, K, NULL);
    GB(tensor_set)(w, q, 0, G(nbytes)(w));
    GB(tensor_set)(x, xf, 0, sizeof xf);
    G(get_type_traits)(C(TYPE_Q4_0))->to_float(q, deq, M * K);
    free(q);
    /* the kernel multiplies with x quantized to Q8_0 (as ggml-cpu does): expect exactly that */
    static float xq[N * K];
    void * q8 = malloc((size_t) N * K / 32 * 34);
    QUANTIZE_CHUNK(C(TYPE_Q8_0), xf, q8, 0, N, K, NULL);
    G(get_type_traits)(C(TYPE_Q8_0))->to_float(q8, xq, N * K);
    free(q8);

    CHECK(GB(sched_graph_compute)(sched, g) == C(STATUS_SUCCESS));
    CHECK(GB(sched_get_n_splits)(sched) == 1);
    static float got[N * M];
    if (getenv("SIMD_ONLY_DEBUG")) {
        float mm[N * M];
        GB(tensor_get)(y->src[0], mm, 0, sizeof mm);
        fprintf(stderr, "mul_mat[0..3] = %g %g %g %g; x[0]=%g deq[0]=%g\n", mm[0], mm[1], mm[2], mm[3], xf[0], deq[0]);
    }
    GB(tensor_get)(y, got, 0, sizeof got);

    /* expected: softmax over each row of deq . x (the kernel quantizes x to Q8_0: tolerance) */
    double max_err = 0;
    for (int n = 0; n < N; n++) {
        double row[M], mx = -1e30, sum = 0;
        for (int m = 0; m < M; m++) {
            double d = 0;
            for (int k = 0; k < K; k++) d += (double) deq[m * K + k] * xq[n * K + k];
            row[m] = d;
            if (d > mx) mx = d;
        }
        for (int m = 0; m < M; m++) { row[m] = exp(row[m] - mx); sum += row[m]; }
        for (int m = 0; m < M; m++) {
            double e = fabs(row[m] / sum - got[n * M + m]);
            if (!(e <= max_err)) max_err = e; /* NaN counts as an error */
        }
    }
    CHECK(max_err < 1e-5);
    CHECK(got[0] > 1e-6f && got[0] < 0.9f); /* a real distribution, not a one-hot */
    printf("y[0][0..3] = %g %g %g %g, max |error| %.3g\n", got[0], got[1], got[2], got[3], max_err);

    GB(sched_free)(sched);
    GB(buffer_free)(wbuf);
    G(free)(ctx);
    GB(free)(be);
    printf("simd_only %s (%s): %d checks, %d failed\n", PREFIX, GGML_RS_TEST_MODE, n_checks, n_failed);
    return n_failed ? 1 : 0;
}
