/*
 * Per-op speed of the SIMD backend against the host's ggml-cpu, at the shapes of SmolLM2-135M
 * and whisper: the same graph computed on each backend (same threads), median of repeated runs
 * interleaved, printed as a ratio (> 1: SIMD faster). Not a test: `scripts/bench.sh` runs it.
 * Usage: bench_ops_<p> [threads] [repeats] [case-substring]
 * GGML_RS_BENCH_ONLY=cpu|simd computes each case `repeats` times on that backend alone (no
 * warm-up, no timing): what scripts/count-aarch64.sh counts instructions of under qemu.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml-simd.h"

#include "test_prefix.h"

typedef struct G(tensor) tensor_t;

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_d(const void * a, const void * b) {
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static GB(t) cpu, simd;
static int repeats = 7;

static void fill_random(struct G(context) * ctx) {
    for (tensor_t * t = G(get_first_tensor)(ctx); t; t = G(get_next_tensor)(ctx, t)) {
        if (t->op != C(OP_NONE) || t->view_src) continue;
        size_t n = G(nbytes)(t);
        unsigned char * b = malloc(n);
        unsigned s = 7;
        if (t->type == C(TYPE_F32)) {
            float * f = (float *) b;
            for (size_t i = 0; i < n / 4; i++) { s = s * 1103515245u + 12345u; f[i] = ((int) ((s >> 8) % 2001) - 1000) / 1000.0f; }
        } else {
            /* quantized / f16: small random bytes give finite values (scales are fp16 < 1) */
            for (size_t i = 0; i < n; i++) { s = s * 1103515245u + 12345u; b[i] = (unsigned char) (s >> 16); }
            if (t->type == C(TYPE_F16)) for (size_t i = 1; i < n; i += 2) b[i] &= 0x3b;
            else {
                size_t bs = G(type_size)(t->type);
                for (size_t i = 0; i + bs <= n; i += bs) {
                    b[i + 1] = 0x20;
                    /* the second half (Q4_1/Q5_1's minimum, Q4_K/Q5_K's dmin); Q6_K's scale is last */
                    if (t->type == C(TYPE_Q4_1) || t->type == C(TYPE_Q5_1) || t->type == C(TYPE_Q4_K) || t->type == C(TYPE_Q5_K)) b[i + 3] = 0x20;
                    if (t->type == C(TYPE_Q6_K)) { b[i + 1] = (unsigned char) s; b[i + bs - 1] = 0x20; }
                }
            }
        }
        GB(tensor_set)(t, b, 0, n);
        free(b);
    }
}

/* time of one graph compute on `be`, median over repeats, interleaved with the other backend */
static const char * only; /* argv[3]: run just the cases whose name contains it (ending in '$': ends with it) */
static const char * only_backend; /* GGML_RS_BENCH_ONLY */
static int selected(const char * name) {
    if (!only) return 1;
    size_t n = strlen(only), l = strlen(name);
    if (n && only[n - 1] == '$') return l >= n - 1 && strncmp(name + l - (n - 1), only, n - 1) == 0;
    return strstr(name, only) != NULL;
}
static void bench(const char * name, struct G(context) * ctx, tensor_t * out) {
    if (!selected(name)) { G(free)(ctx); return; }
    struct G(cgraph) * g = G(new_graph)(ctx);
    G(build_forward_expand)(g, out);
    GB(buffer_t) buf = G(backend_alloc_ctx_tensors)(ctx, cpu);
    fill_random(ctx);
    if (only_backend) {
        GB(t) be = strcmp(only_backend, "simd") == 0 ? simd : cpu;
        for (int r = 0; r < repeats; r++) GB(graph_compute)(be, g);
        printf("computed %s %d time(s) on %s\n", name, repeats, only_backend);
        GB(buffer_free)(buf);
        G(free)(ctx);
        return;
    }
    double tc[64], ts[64];
    GB(graph_compute)(cpu, g);
    GB(graph_compute)(simd, g);
    for (int r = 0; r < repeats; r++) {
        double t0 = now_us();
        GB(graph_compute)(cpu, g);
        double t1 = now_us();
        GB(graph_compute)(simd, g);
        double t2 = now_us();
        tc[r] = t1 - t0;
        ts[r] = t2 - t1;
    }
    qsort(tc, repeats, sizeof(double), cmp_d);
    qsort(ts, repeats, sizeof(double), cmp_d);
    double mc = tc[repeats / 2], ms = ts[repeats / 2];
    printf("| %-34s | %10.1f | %10.1f | %5.2f |\n", name, mc, ms, mc / ms);
    fflush(stdout);
    GB(buffer_free)(buf);
    G(free)(ctx);
}

static struct G(context) * new_ctx(void) {
    struct G(init_params) p = { 16 * G(tensor_overhead)() + G(graph_overhead)(), NULL, true };
    return G(init)(p);
}

int main(int argc, char ** argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    repeats = argc > 2 ? atoi(argv[2]) : 7;
    only = argc > 3 ? argv[3] : NULL;
    only_backend = getenv("GGML_RS_BENCH_ONLY");
    if (repeats > 64) repeats = 64;
    if (repeats < 1) repeats = 1;
    cpu = GB(cpu_init)();
    simd = GB(simd_init)();
    GB(set_n_threads_t) set_cpu = (GB(set_n_threads_t)) GB(reg_get_proc_address)(GB(dev_backend_reg)(GB(get_device)(cpu)), PREFIX "_ggml_backend_set_n_threads");
    GB(set_n_threads_t) set_simd = (GB(set_n_threads_t)) GB(reg_get_proc_address)(GB(simd_reg)(), PREFIX "_ggml_backend_set_n_threads");
    set_cpu(cpu, threads);
    set_simd(simd, threads);
    printf("%s, %d threads, median of %d: microseconds per op, ratio = ggml-cpu / SIMD (> 1: SIMD faster)\n\n", PREFIX, threads, repeats);
    printf("| %-34s | %10s | %10s | %5s |\n|---|---:|---:|---:|\n", "op (weights x batch)", "ggml-cpu", "SIMD", "ratio");

    struct { enum G(type) t; const char * n; } wt[] = { {C(TYPE_Q4_1), "q4_1"}, {C(TYPE_Q8_0), "q8_0"}, {C(TYPE_Q4_0), "q4_0"}, {C(TYPE_F16), "f16"} };
    int64_t shapes[][2] = { {576, 576}, {576, 1536}, {1536, 576}, {576, 49152} };
    int batches[] = { 1, 256 };
    char name[96];
    for (int w = 0; w < 4; w++)
        for (int s = 0; s < 4; s++)
            for (int b = 0; b < 2; b++) {
                if (shapes[s][1] == 49152 && w >= 2) continue;
                struct G(context) * c = new_ctx();
                tensor_t * a = G(new_tensor_2d)(c, wt[w].t, shapes[s][0], shapes[s][1]);
                tensor_t * x = G(new_tensor_2d)(c, C(TYPE_F32), shapes[s][0], batches[b]);
                snprintf(name, sizeof name, "mul_mat %s %lldx%lld x %d", wt[w].n, (long long) shapes[s][1], (long long) shapes[s][0], batches[b]);
                bench(name, c, G(mul_mat)(c, a, x));
            }
    /* the formats of Gemma 3 270M Q4_K_M (Q5_0 projections and FFN up/gate, Q6_K / Q4_K FFN down,
       Q8_0 output; Q5_K and IQ4_NL at the FFN down's shape) and of whisper base q5_1 (its encoder's products at 1500 frames) */
    {   struct { enum G(type) t; const char * n; int64_t k, m; int batch; } q[] = {
            { C(TYPE_Q5_0), "q5_0", 640, 2048, 1 }, { C(TYPE_Q5_0), "q5_0", 640, 2048, 128 },
            { C(TYPE_Q6_K), "q6_K", 2048, 640, 1 }, { C(TYPE_Q6_K), "q6_K", 2048, 640, 128 },
            { C(TYPE_Q4_K), "q4_K", 2048, 640, 1 }, { C(TYPE_Q4_K), "q4_K", 2048, 640, 128 },
            { C(TYPE_Q5_K), "q5_K", 2048, 640, 1 }, { C(TYPE_Q5_K), "q5_K", 2048, 640, 128 },
            { C(TYPE_IQ4_NL), "iq4_nl", 2048, 640, 1 }, { C(TYPE_IQ4_NL), "iq4_nl", 2048, 640, 128 },
            { C(TYPE_Q8_0), "q8_0", 640, 32768, 1 },
            { C(TYPE_Q5_1), "q5_1", 512, 2048, 1500 }, { C(TYPE_Q5_1), "q5_1", 2048, 512, 1500 },
            /* ragged batches (activation counts not a multiple of four): the tile walk's edge
               shapes (batch 22 = two cache blocks of 8, then 6) */
            { C(TYPE_Q4_1), "q4_1", 576, 576, 3 }, { C(TYPE_Q4_1), "q4_1", 576, 576, 6 }, { C(TYPE_Q4_1), "q4_1", 576, 576, 22 },
            { C(TYPE_Q6_K), "q6_K", 2048, 640, 6 }, { C(TYPE_F16), "f16", 576, 576, 3 },
        };
        for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
            struct G(context) * c = new_ctx();
            tensor_t * a = G(new_tensor_2d)(c, q[i].t, q[i].k, q[i].m);
            tensor_t * x = G(new_tensor_2d)(c, C(TYPE_F32), q[i].k, q[i].batch);
            snprintf(name, sizeof name, "mul_mat %s %lldx%lld x %d", q[i].n, (long long) q[i].m, (long long) q[i].k, q[i].batch);
            bench(name, c, G(mul_mat)(c, a, x));
        } }
    /* whisper's attention products (tiny-random: 2 heads of 64, 1500 frames) and its decoder's
       F16 output product, laid out as whisper.cpp builds them */
    {   struct G(context) * c = new_ctx();
        tensor_t * k = G(permute)(c, G(new_tensor_3d)(c, C(TYPE_F16), 64, 2, 1500), 0, 2, 1, 3);
        tensor_t * q = G(permute)(c, G(new_tensor_3d)(c, C(TYPE_F32), 64, 2, 1500), 0, 2, 1, 3);
        bench("mul_mat f16 KQ 1500x64 x 1500 x 2", c, G(mul_mat)(c, k, q)); }
    {   struct G(context) * c = new_ctx();
        tensor_t * v = G(new_tensor_3d)(c, C(TYPE_F16), 1500, 64, 2), * kq = G(new_tensor_3d)(c, C(TYPE_F32), 1500, 1500, 2);
        bench("mul_mat f16 KQV 64x1500 x 1500 x 2", c, G(mul_mat)(c, v, kq)); }
    /* whisper base's encoder products (F16 weights, 1500 frames): projections, FFN up, FFN down */
    {   int64_t ws[][2] = { {512, 512}, {512, 2048}, {2048, 512} };
        for (int s = 0; s < 3; s++) {
            struct G(context) * c = new_ctx();
            tensor_t * a = G(new_tensor_2d)(c, C(TYPE_F16), ws[s][0], ws[s][1]);
            tensor_t * x = G(new_tensor_2d)(c, C(TYPE_F32), ws[s][0], 1500);
            snprintf(name, sizeof name, "mul_mat f16 %lldx%lld x 1500", (long long) ws[s][1], (long long) ws[s][0]);
            bench(name, c, G(mul_mat)(c, a, x));
        } }
    /* SmolLM2's prompt attention (256 tokens): 9 query heads over 3 F16 KV heads, K a view of
       the cache (rows 192 halves apart), V the transposed cache */
    {   struct G(context) * c = new_ctx();
        tensor_t * k = G(permute)(c, G(new_tensor_3d)(c, C(TYPE_F16), 64, 3, 256), 0, 2, 1, 3);
        tensor_t * q = G(permute)(c, G(new_tensor_3d)(c, C(TYPE_F32), 64, 9, 256), 0, 2, 1, 3);
        bench("mul_mat f16 prompt KQ 256x64 x 256 x 9", c, G(mul_mat)(c, k, q)); }
    {   struct G(context) * c = new_ctx();
        tensor_t * v = G(new_tensor_3d)(c, C(TYPE_F16), 256, 64, 3), * kq = G(new_tensor_3d)(c, C(TYPE_F32), 256, 256, 9);
        bench("mul_mat f16 prompt KQV 64x256 x 256 x 9", c, G(mul_mat)(c, v, kq)); }
    /* SmolLM2's decode attention at 288 cached tokens: 9 query heads over 3 F16 KV heads */
    {   struct G(context) * c = new_ctx();
        tensor_t * k = G(new_tensor_3d)(c, C(TYPE_F16), 64, 288, 3), * q = G(new_tensor_3d)(c, C(TYPE_F32), 64, 1, 9);
        bench("mul_mat f16 decode KQ 288x64 x 1 x 9", c, G(mul_mat)(c, k, q)); }
    {   struct G(context) * c = new_ctx();
        tensor_t * v = G(new_tensor_3d)(c, C(TYPE_F16), 288, 64, 3), * kq = G(new_tensor_3d)(c, C(TYPE_F32), 288, 1, 9);
        bench("mul_mat f16 decode KQV 64x288 x 1 x 9", c, G(mul_mat)(c, v, kq)); }
    {   struct G(context) * c = new_ctx();
        tensor_t * a = G(new_tensor_2d)(c, C(TYPE_F16), 128, 51864), * x = G(new_tensor_2d)(c, C(TYPE_F32), 128, 1);
        bench("mul_mat f16 51864x128 x 1", c, G(mul_mat)(c, a, x)); }
    {   struct G(context) * c = new_ctx(); tensor_t * a = G(new_tensor_2d)(c, C(TYPE_F32), 576, 256);
        bench("rms_norm 576 x 256", c, G(rms_norm)(c, a, 1e-5f)); }
    {   struct G(context) * c = new_ctx(); tensor_t * a = G(new_tensor_2d)(c, C(TYPE_F32), 1536, 256);
        bench("silu 1536 x 256", c, G(silu)(c, a)); }
    {   struct G(context) * c = new_ctx(); tensor_t * a = G(new_tensor_3d)(c, C(TYPE_F32), 256, 256, 9), * m = G(new_tensor_2d)(c, C(TYPE_F32), 256, 256);
        bench("soft_max_ext 256 x 256 x 9", c, G(soft_max_ext)(c, a, m, 0.125f, 0.0f)); }
    {   struct G(context) * c = new_ctx(); tensor_t * a = G(new_tensor_3d)(c, C(TYPE_F32), 64, 9, 256);
        tensor_t * pos = G(new_tensor_1d)(c, C(TYPE_I32), 256);
        bench("rope 64 x 9 x 256", c, G(rope_ext)(c, a, pos, NULL, 64, 0, 8192, 100000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f)); }
    {   struct G(context) * c = new_ctx(); tensor_t * a = G(new_tensor_2d)(c, C(TYPE_F32), 384, 1500);
        bench("gelu 384 x 1500", c, G(gelu)(c, a)); }
    {   struct G(context) * c = new_ctx(); tensor_t * a = G(new_tensor_2d)(c, C(TYPE_F32), 384, 1500);
        bench("norm 384 x 1500", c, G(norm)(c, a, 1e-5f)); }
    GB(free)(simd);
    GB(free)(cpu);
    return 0;
}
