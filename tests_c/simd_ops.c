/*
 * The SIMD backend op by op against the host's ggml-cpu, for both prefixes (-DTEST_PREFIX_LM /
 * -DTEST_PREFIX_WSP): every case builds a small graph on random inputs, runs it on both backends
 * with compare_graph_backend and checks each node's normalized mean squared error
 * (sum((a-b)^2) / sum(a^2), as ggml's test-backend-ops). On the SIMD kernels that reproduce the
 * host ggml-cpu's float order (AVX2 against an AVX2 build; NEON against an Armv8.2+fp16+dotprod
 * clang build) every case must be bit-identical; otherwise (portable kernels) the thresholds are
 * ggml's: 5e-4 for matrix products with quantized (or F16, see below) weights, 1e-7 for the rest.
 * Run with GGML_RS_SIMD_PORTABLE=1 too: the same cases on the portable kernels.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml-simd.h"

#include "test_prefix.h"

typedef struct G(tensor) tensor_t;
typedef struct G(context) ctx_t;

static int n_cases, n_failed, n_nodes_checked, n_declined;
static GB(t) cpu, simd;

static unsigned long long rng = 0x9E3779B97F4A7C15ull;
static float frand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float) ((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

static double to_f64(const tensor_t * t, const void * data, size_t i) {
    if (t->type == C(TYPE_F16)) return G(fp16_to_fp32)(((const G(fp16_t) *) data)[i]);
    if (t->type == C(TYPE_I32)) return ((const int32_t *) data)[i];
    return ((const float *) data)[i];
}

struct stats { const char * name; double max_nmse; double threshold; int bad; };

static bool on_node(int i, tensor_t * t1, tensor_t * t2, void * ud) {
    struct stats * s = ud;
    (void) i;
    if (!G(is_contiguous)(t1) || t1->type == C(TYPE_I32)) return true;
    size_t n = G(nelements)(t1);
    size_t bytes = G(nbytes)(t1);
    void * a = malloc(bytes), * b = malloc(bytes);
    GB(tensor_get)(t1, a, 0, bytes);
    GB(tensor_get)(t2, b, 0, bytes);
    double num = 0, den = 0;
    for (size_t k = 0; k < n; k++) {
        double x = to_f64(t1, a, k), y = to_f64(t2, b, k);
        num += (x - y) * (x - y);
        den += x * x;
    }
    double nmse = den > 0 ? num / den : num;
    if (getenv("SIMD_OPS_VERBOSE") && num > 0) {
        for (size_t k = 0; k < n; k++) {
            double x = to_f64(t1, a, k), y = to_f64(t2, b, k);
            if (x != y) { fprintf(stderr, "  %s: difference at element %zu: %.9g vs %.9g\n", s->name, k, x, y); if (atoi(getenv("SIMD_OPS_VERBOSE")) < 2) break; }
        }
    }
    if (!(nmse <= s->threshold)) {
        fprintf(stderr, "  %s: node '%s' (%s) NMSE %.3g > %.1g\n", s->name, t1->name, G(op_desc)(t1), nmse, s->threshold);
        s->bad = 1;
    }
    if (nmse > s->max_nmse) s->max_nmse = nmse;
    n_nodes_checked++;
    free(a); free(b);
    return true;
}

static ctx_t * new_ctx(void) {
    struct G(init_params) p = { 64 * G(tensor_overhead)() + G(graph_overhead)(), NULL, true };
    return G(init)(p);
}

/* scale of the quantized weights' values (1: uniform in [-1, 1]); tiny values give block scales
   that are half-precision subnormals */
static float quant_fill_scale = 1.0f;

static void fill(tensor_t * t, float lo, float hi) {
    size_t n = G(nelements)(t);
    if (t->type == C(TYPE_I32)) return;
    if (t->type != C(TYPE_F32) && t->type != C(TYPE_F16)) { lo *= quant_fill_scale; hi *= quant_fill_scale; }
    float * v = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * 0.5f * (frand() + 1.0f);
    if (t->type == C(TYPE_F32)) {
        GB(tensor_set)(t, v, 0, n * sizeof(float));
    } else if (t->type == C(TYPE_F16)) {
        G(fp16_t) * h = malloc(n * sizeof(G(fp16_t)));
        for (size_t i = 0; i < n; i++) h[i] = G(fp32_to_fp16)(v[i]);
        GB(tensor_set)(t, h, 0, n * sizeof(G(fp16_t)));
        free(h);
    } else {
        size_t rows = n / t->ne[0];
        void * q = malloc(G(nbytes)(t));
        QUANTIZE_CHUNK(t->type, v, q, 0, rows, t->ne[0], NULL);
        GB(tensor_set)(t, q, 0, G(nbytes)(t));
        free(q);
    }
    free(v);
}

/* whether SIMD declines a node of `g`: ggml-cpu computes it in a real graph (also when the
   start-up check handed its kind back). Reported, and counted: main() checks that exactly the
   cases meant to be declined were (EXPECTED_DECLINED). Every case asks this before comparing. */
static bool declined_by_simd(const char * name, struct G(cgraph) * g) {
    for (int i = 0; i < G(graph_n_nodes)(g); i++) {
        tensor_t * n = G(graph_node)(g, i);
        if (!GB(supports_op)(simd, n)) {
            printf("%-40s declined by SIMD: node '%s' (%s)\n", name, n->name, G(op_desc)(n));
            n_declined++;
            return true;
        }
    }
    return false;
}

/* runs `out` (and what it depends on) on both backends; inputs are the graph's leafs */
static void check(const char * name, ctx_t * ctx, tensor_t * out, double threshold) {
    n_cases++;
    struct G(cgraph) * g = G(new_graph)(ctx);
    G(build_forward_expand)(g, out);
    GB(buffer_t) buf = G(backend_alloc_ctx_tensors)(ctx, cpu);
    if (declined_by_simd(name, g)) {
        GB(buffer_free)(buf);
        G(free)(ctx);
        return;
    }
    /* inputs: every tensor without an op that is not a view */
    for (tensor_t * t = G(get_first_tensor)(ctx); t; t = G(get_next_tensor)(ctx, t)) {
        if (t->op == C(OP_NONE) && t->view_src == NULL && t->type != C(TYPE_I32)) fill(t, -1.0f, 1.0f);
    }
    struct stats s = { name, 0, threshold, 0 };
    if (!TEST_COMPARE_GRAPH(GB(compare_graph_backend), cpu, simd, g, on_node, &s)) {
        fprintf(stderr, "  %s: compare_graph_backend failed\n", name);
        s.bad = 1;
    }
    printf("%-40s max NMSE %.3g%s\n", name, s.max_nmse, s.bad ? "  FAILED" : "");
    n_failed += s.bad;
    GB(buffer_free)(buf);
    G(free)(ctx);
}

static tensor_t * t4(ctx_t * c, enum G(type) ty, int64_t a, int64_t b, int64_t cc, int64_t d) {
    return G(new_tensor_4d)(c, ty, a, b, cc, d);
}

static const double EXACT = 1e-7;
/* On the AVX2 kernels SIMD follows ggml-cpu's own float order (its vectorized expf, its dot
   products' accumulators, its activation quantizer), so these cases must match bit for bit; the
   portable kernels keep the documented threshold. */
static double bitwise_or(double portable_threshold) {
    /* SIMD_OPS_BITWISE=1: every case SIMD takes must be bit-identical whatever the host build
       (scripts/test-aarch64-c.sh's package-flags run: what the exact contract keeps on a
       fast-math host) */
    if (getenv("SIMD_OPS_BITWISE") && atoi(getenv("SIMD_OPS_BITWISE")) == 1) return 0.0;
#if defined(GGML_RS_HOST_AVX2) && defined(__x86_64__)
    /* the host core was compiled for AVX2; SIMD picks its AVX2 kernels when the CPU has them */
    if (!getenv("GGML_RS_SIMD_PORTABLE") && !getenv("GGML_RS_SIMD_SGEMM") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 0.0;
#elif defined(GGML_RS_HOST_NEON_DOTPROD) && defined(__aarch64__)
    /* the host core was compiled by clang for Armv8.2+fp16+dotprod without i8mm/SVE
       (scripts/test-aarch64-c.sh): the build SIMD's NEON kernels reproduce on a CPU with both */
    if (!getenv("GGML_RS_SIMD_PORTABLE") && !getenv("GGML_RS_SIMD_SGEMM")) return 0.0;
#endif
    return portable_threshold;
}
/* matrix products on the portable kernels: ggml-cpu quantizes the activations (Q8_0/Q8_1) or
   rounds them to F16 for F16 weights; portable SIMD keeps f32 activations on its sgemm path (and
   ggml's scalar rounding rules), so the two differ by that rounding */
static const double MATMUL = 5e-4;
/* FLASH_ATTN_EXT off the bit-identical builds: test-backend-ops' bound for it (max_nmse_err) */
static const double ATTN = 5e-4;

/* the 2026 graphs' ops, one file each: cases_rows (SET_ROWS, GLU), cases_attn (FLASH_ATTN_EXT);
   a case meant to be declined adds one to expected_declined_extra */
static int expected_declined_extra;
#if defined(TEST_REV2026)
#include "simd_ops_rows.inc"
#include "simd_ops_attn.inc"
#include "simd_ops_repack.inc"
#endif

int main(void) {
    G(cpu_init)();
    cpu = GB(cpu_init)();
    simd = GB(simd_init)();
    if (!simd || !GB(is_simd)(simd)) { fprintf(stderr, "no SIMD backend\n"); return 1; }
    /* two threads on both, through the proc address the hosts use */
    GB(set_n_threads_t) set_cpu = (GB(set_n_threads_t)) GB(reg_get_proc_address)(GB(dev_backend_reg)(GB(get_device)(cpu)), PREFIX "_ggml_backend_set_n_threads");
    GB(set_n_threads_t) set_simd = (GB(set_n_threads_t)) GB(reg_get_proc_address)(GB(simd_reg)(), PREFIX "_ggml_backend_set_n_threads");
    if (!set_cpu || !set_simd) { fprintf(stderr, "set_n_threads not found\n"); return 1; }
    set_cpu(cpu, 2);
    set_simd(simd, 2);

    char name[128];
#if defined(TEST_REV2026)
    /* SIMD_OPS_ONLY=repack: the repacked products alone (scripts/test-aarch64-c.sh's i8mm part,
       whose host build keeps the plain products' kinds on ggml-cpu in the exact contract) */
    if (getenv("SIMD_OPS_ONLY") && strcmp(getenv("SIMD_OPS_ONLY"), "repack") == 0) {
        cases_repack(name, sizeof name);
        if (n_declined != expected_declined_extra) {
            fprintf(stderr, "simd_ops: %d cases declined by SIMD, expected %d\n", n_declined, expected_declined_extra);
            n_failed++;
        }
        GB(free)(simd);
        GB(free)(cpu);
        printf("simd_ops %s (%s, repacked only): %d cases, %d nodes compared, %d declined, %d failed\n", PREFIX, GGML_RS_TEST_MODE,
               n_cases, n_nodes_checked, n_declined, n_failed);
        return n_failed ? 1 : 0;
    }
#endif
    enum G(type) wtypes[] = { C(TYPE_F32), C(TYPE_F16), C(TYPE_Q4_0), C(TYPE_Q4_1), C(TYPE_Q8_0), C(TYPE_Q5_0), C(TYPE_Q5_1) };
    const char * wnames[] = { "f32", "f16", "q4_0", "q4_1", "q8_0", "q5_0", "q5_1" };
    const int n_wtypes = (int) (sizeof wtypes / sizeof wtypes[0]);
    int64_t shapes[][3] = { {64, 7, 1}, {576, 33, 1}, {576, 33, 17}, {256, 16, 3}, {1536, 40, 64} };

    for (int w = 0; w < n_wtypes; w++) {
        for (int s = 0; s < 5; s++) {
            ctx_t * c = new_ctx();
            tensor_t * a = t4(c, wtypes[w], shapes[s][0], shapes[s][1], 1, 1);
            tensor_t * b = t4(c, C(TYPE_F32), shapes[s][0], shapes[s][2], 1, 1);
            snprintf(name, sizeof name, "mul_mat %s k=%lld m=%lld n=%lld", wnames[w], (long long) shapes[s][0], (long long) shapes[s][1], (long long) shapes[s][2]);
            check(name, c, G(mul_mat)(c, a, b), bitwise_or(w == 0 ? EXACT : MATMUL));
        }
        /* broadcast over heads (GQA) and a permuted (non-contiguous) src1 */
        ctx_t * c = new_ctx();
        tensor_t * a = t4(c, wtypes[w], 64, 9, 2, 1);
        tensor_t * q = t4(c, C(TYPE_F32), 64, 6, 5, 1);
        tensor_t * b = G(permute)(c, q, 0, 2, 1, 3);
        snprintf(name, sizeof name, "mul_mat %s broadcast, permuted src1", wnames[w]);
        check(name, c, G(mul_mat)(c, a, b), bitwise_or(w == 0 ? EXACT : MATMUL));
    }
    /* K-quants: rows of whole 256-value super-blocks (odd row counts, decoding, batches, a
       broadcast over heads), subnormal super-scales */
    {
        enum G(type) ktypes[] = { C(TYPE_Q4_K), C(TYPE_Q5_K), C(TYPE_Q6_K) };
        const char * knames[] = { "q4_K", "q5_K", "q6_K" };
        int64_t kshapes[][4] = { {256, 7, 1, 1}, {640, 0, 0, 0}, {768, 33, 17, 1}, {2048, 40, 64, 1}, {512, 9, 5, 2}, {256, 16, 3, 1} };
        for (int w = 0; w < 3; w++) {
            for (int s = 0; s < 6; s++) {
                if (kshapes[s][1] == 0) continue; /* (640: not whole super-blocks; Gemma 3 270M keeps those in Q5_0) */
                ctx_t * c = new_ctx();
                tensor_t * a = t4(c, ktypes[w], kshapes[s][0], kshapes[s][1], kshapes[s][3], 1);
                tensor_t * b = t4(c, C(TYPE_F32), kshapes[s][0], kshapes[s][2], kshapes[s][3] * 2, 1);
                snprintf(name, sizeof name, "mul_mat %s k=%lld m=%lld n=%lld", knames[w], (long long) kshapes[s][0], (long long) kshapes[s][1], (long long) kshapes[s][2]);
                check(name, c, G(mul_mat)(c, a, b), bitwise_or(MATMUL));
            }
            quant_fill_scale = 1e-6f;
            ctx_t * c = new_ctx();
            tensor_t * a = t4(c, ktypes[w], 512, 9, 1, 1);
            tensor_t * b = t4(c, C(TYPE_F32), 512, 5, 1, 1);
            snprintf(name, sizeof name, "mul_mat %s subnormal scales", knames[w]);
            check(name, c, G(mul_mat)(c, a, b), bitwise_or(MATMUL));
            quant_fill_scale = 1.0f;
        }
    }
    /* IQ4_NL: Q4_0's blocks whose nibbles index a value table; ggml's SIMD kernels add blocks in
       pairs and leave an odd last one to a scalar tail (k = 32, 96, 544: 1, 3, 17 blocks) */
    {
        int64_t ishapes[][4] = { {32, 7, 1, 1}, {96, 33, 17, 1}, {544, 9, 5, 2}, {576, 33, 17, 1}, {1536, 40, 64, 1}, {64, 16, 3, 1} };
        for (int s = 0; s < 6; s++) {
            ctx_t * c = new_ctx();
            tensor_t * a = t4(c, C(TYPE_IQ4_NL), ishapes[s][0], ishapes[s][1], ishapes[s][3], 1);
            tensor_t * b = t4(c, C(TYPE_F32), ishapes[s][0], ishapes[s][2], ishapes[s][3] * 2, 1);
            snprintf(name, sizeof name, "mul_mat iq4_nl k=%lld m=%lld n=%lld", (long long) ishapes[s][0], (long long) ishapes[s][1], (long long) ishapes[s][2]);
            check(name, c, G(mul_mat)(c, a, b), bitwise_or(MATMUL));
        }
        quant_fill_scale = 1e-6f;
        ctx_t * c = new_ctx();
        tensor_t * a = t4(c, C(TYPE_IQ4_NL), 544, 9, 1, 1);
        tensor_t * b = t4(c, C(TYPE_F32), 544, 5, 1, 1);
        check("mul_mat iq4_nl subnormal scales", c, G(mul_mat)(c, a, b), bitwise_or(MATMUL));
        quant_fill_scale = 1.0f;
    }
    /* block formats with subnormal half scales (values ~1e-6), and an odd row count */
    for (int w = 2; w < n_wtypes; w++) {
        quant_fill_scale = 1e-6f;
        ctx_t * c = new_ctx();
        tensor_t * a = t4(c, wtypes[w], 576, 9, 1, 1);
        tensor_t * b = t4(c, C(TYPE_F32), 576, 5, 1, 1);
        snprintf(name, sizeof name, "mul_mat %s subnormal scales", wnames[w]);
        check(name, c, G(mul_mat)(c, a, b), bitwise_or(MATMUL));
        quant_fill_scale = 1.0f;
    }
    {   /* float weights with leftovers past the last 32-element step (added in f64 for F16,
           with f32 FMA for F32), odd weight-row counts, ragged activation counts, decoding, and
           whisper's attention shapes (k = 64 with a permuted K, k = 1500); F32 tails of 2..31 mix rounded and fused adds */
        int64_t fshapes[][3] = { {1500, 9, 13}, {100, 17, 1}, {40, 3, 6}, {72, 33, 2}, {1500, 16, 1}, {64, 37, 45}, {45, 5, 7}, {39, 6, 1}, {34, 4, 5}, {63, 11, 9} };
        for (int w = 0; w < 2; w++) {
            for (int s = 0; s < 10; s++) {
                ctx_t * c = new_ctx();
                tensor_t * a = t4(c, wtypes[w], fshapes[s][0], fshapes[s][1], 1, 1);
                tensor_t * b = t4(c, C(TYPE_F32), fshapes[s][0], fshapes[s][2], 1, 1);
                snprintf(name, sizeof name, "mul_mat %s k=%lld m=%lld n=%lld", wnames[w], (long long) fshapes[s][0], (long long) fshapes[s][1], (long long) fshapes[s][2]);
                check(name, c, G(mul_mat)(c, a, b), bitwise_or(w == 0 ? EXACT : MATMUL));
            }
            ctx_t * c = new_ctx();
            tensor_t * k = G(permute)(c, t4(c, wtypes[w], 64, 2, 75, 1), 0, 2, 1, 3);
            tensor_t * q = G(permute)(c, t4(c, C(TYPE_F32), 64, 2, 70, 1), 0, 2, 1, 3);
            snprintf(name, sizeof name, "mul_mat %s permuted K x permuted Q", wnames[w]);
            check(name, c, G(mul_mat)(c, k, q), bitwise_or(w == 0 ? EXACT : MATMUL));
        }
    }
    {   /* F16 x F16, as whisper's conv (im2col result times kernel) */
        ctx_t * c = new_ctx();
        tensor_t * a = t4(c, C(TYPE_F16), 96, 12, 1, 1);
        tensor_t * b = t4(c, C(TYPE_F16), 96, 20, 1, 1);
        check("mul_mat f16 x f16", c, G(mul_mat)(c, a, b), bitwise_or(MATMUL));
    }

    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 33, 7, 3, 2), * b = t4(c, C(TYPE_F32), 33, 1, 3, 1);
        check("add broadcast", c, G(add)(c, a, b), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 33, 7, 3, 2), * b = t4(c, C(TYPE_F32), 33, 7, 1, 2);
        check("mul broadcast", c, G(mul)(c, a, b), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 17, 5, 1, 1), * b = t4(c, C(TYPE_F32), 17, 5, 1, 1);
        check("sub", c, G(sub)(c, a, b), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 17, 5, 1, 1);
        check("scale", c, G(scale)(c, a, 0.37f), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 17, 5, 1, 1);
        check("sqr", c, G(sqr)(c, a), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 17, 5, 1, 1);
        check("sqrt of sqr", c, G(sqrt)(c, G(sqr)(c, a)), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 1536, 9, 1, 1);
        check("silu", c, G(silu)(c, G(scale)(c, a, 8.0f)), bitwise_or(EXACT)); }
    {   /* rows of 8k+1: ggml's vector loop leaves a scalar (libm expf) tail; inputs up to +-150
           reach its expf's overflow/underflow branches (|n| > 126, > 192) */
        ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 1537, 3, 1, 1);
        check("silu odd rows, wide range", c, G(silu)(c, G(scale)(c, a, 150.0f)), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 1536, 9, 1, 1);
        check("gelu", c, G(gelu)(c, G(scale)(c, a, 12.0f)), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 576, 7, 2, 1);
        check("norm", c, G(norm)(c, a, 1e-5f), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 576, 7, 2, 1);
        check("rms_norm", c, G(rms_norm)(c, a, 1e-5f), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 37, 11, 3, 1);
        check("soft_max", c, G(soft_max)(c, a), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 64, 11, 9, 1), * m = t4(c, C(TYPE_F32), 64, 16, 1, 1);
        check("soft_max_ext mask scale", c, G(soft_max_ext)(c, a, m, 0.125f, 0.0f), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 64, 11, 8, 1), * m = t4(c, C(TYPE_F32), 64, 16, 1, 1);
        check("soft_max_ext alibi", c, G(soft_max_ext)(c, a, m, 0.5f, 8.0f), bitwise_or(EXACT)); }
    {   /* F16 mask, odd rows (scalar tail), and a scale that spreads x - max over [-300, 0] */
        ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 67, 11, 8, 1), * m = t4(c, C(TYPE_F16), 67, 16, 1, 1);
        check("soft_max_ext f16 mask alibi wide", c, G(soft_max_ext)(c, a, m, 150.0f, 8.0f), bitwise_or(EXACT)); }
    /* in place (dst is a view of src, as ggml's *_inplace builders make it), on an intermediate
       result and on a leaf; the SIMD kernels must not treat the two as separate memory */
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 33, 7, 3, 2), * b = t4(c, C(TYPE_F32), 33, 1, 3, 1);
        check("add_inplace broadcast", c, G(add_inplace)(c, G(scale)(c, a, 1.5f), b), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 576, 40, 1, 1), * b = t4(c, C(TYPE_F32), 576, 1, 1, 1);
        check("mul_inplace threaded", c, G(mul_inplace)(c, a, b), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 576, 40, 1, 1);
        check("add_inplace of itself", c, G(add_inplace)(c, a, a), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 576, 40, 1, 1);
        check("scale_inplace, sqr_inplace", c, G(sqr_inplace)(c, G(scale_inplace)(c, a, 0.37f)), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 1537, 13, 1, 1);
        check("silu_inplace", c, G(silu_inplace)(c, G(scale)(c, a, 8.0f)), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 1536, 13, 1, 1);
        check("gelu_inplace", c, G(gelu_inplace)(c, G(scale)(c, a, 12.0f)), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 576, 40, 1, 1);
        check("norm_inplace, rms_norm_inplace", c, G(rms_norm_inplace)(c, G(norm_inplace)(c, a, 1e-5f), 1e-6f), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 67, 40, 9, 1);
        check("soft_max_inplace", c, G(soft_max_inplace)(c, G(scale)(c, a, 4.0f)), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 64, 6, 5, 1), * x = G(scale)(c, a, 2.0f);
        check("cpy onto itself", c, G(scale)(c, G(cpy)(c, x, x), 3.0f), bitwise_or(EXACT)); }
    for (int rcase = 0; rcase < 4; rcase++) {
        int mode = (rcase & 1) * 2, inplace = rcase >> 1;
        ctx_t * c = new_ctx();
        tensor_t * a = t4(c, C(TYPE_F32), 64, 9, 7, 1);
        tensor_t * pos = G(new_tensor_1d)(c, C(TYPE_I32), 7);
        tensor_t * r = (inplace ? G(rope_ext_inplace) : G(rope_ext))(c, a, pos, NULL, 48, mode, 8192, 100000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
        /* positions are set after allocation, so this case runs the comparison itself */
        snprintf(name, sizeof name, "rope%s mode %d", inplace ? "_inplace" : "", mode);
        n_cases++;
        struct G(cgraph) * g = G(new_graph)(c);
        G(build_forward_expand)(g, r);
        GB(buffer_t) buf = G(backend_alloc_ctx_tensors)(c, cpu);
        if (declined_by_simd(name, g)) { GB(buffer_free)(buf); G(free)(c); continue; }
        fill(a, -1, 1);
        int32_t p[7] = { 0, 3, 17, 100, 511, 4000, 9 };
        GB(tensor_set)(pos, p, 0, sizeof p);
        struct stats s = { name, 0, bitwise_or(EXACT), 0 };
        if (!TEST_COMPARE_GRAPH(GB(compare_graph_backend), cpu, simd, g, on_node, &s)) s.bad = 1;
        printf("%-40s max NMSE %.3g%s\n", name, s.max_nmse, s.bad ? "  FAILED" : "");
        n_failed += s.bad;
        GB(buffer_free)(buf);
        G(free)(c);
    }
    for (int w = 0; w < n_wtypes + 4; w++) {
        /* the legacy formats, IQ4_NL, then Q4_K, Q5_K and Q6_K (rows of one 256-value
           super-block) */
        enum G(type) gxtypes[] = { C(TYPE_IQ4_NL), C(TYPE_Q4_K), C(TYPE_Q5_K), C(TYPE_Q6_K) };
        const char * gxnames[] = { "iq4_nl", "q4_K", "q5_K", "q6_K" };
        enum G(type) ty = w < n_wtypes ? wtypes[w] : gxtypes[w - n_wtypes];
        const char * tyname = w < n_wtypes ? wnames[w] : gxnames[w - n_wtypes];
        ctx_t * c = new_ctx();
        tensor_t * a = t4(c, ty, w <= n_wtypes ? 64 : 256, 20, 1, 1);
        tensor_t * idx = G(new_tensor_1d)(c, C(TYPE_I32), 5);
        tensor_t * r = G(get_rows)(c, a, idx);
        snprintf(name, sizeof name, "get_rows %s", tyname);
        n_cases++;
        struct G(cgraph) * g = G(new_graph)(c);
        G(build_forward_expand)(g, r);
        GB(buffer_t) buf = G(backend_alloc_ctx_tensors)(c, cpu);
        if (declined_by_simd(name, g)) { GB(buffer_free)(buf); G(free)(c); continue; }
        fill(a, -1, 1);
        int32_t ids[5] = { 19, 0, 7, 7, 3 };
        GB(tensor_set)(idx, ids, 0, sizeof ids);
        struct stats s = { name, 0, 0.0, 0 };
        if (!TEST_COMPARE_GRAPH(GB(compare_graph_backend), cpu, simd, g, on_node, &s)) s.bad = 1;
        printf("%-40s max NMSE %.3g%s\n", name, s.max_nmse, s.bad ? "  FAILED" : "");
        n_failed += s.bad;
        GB(buffer_free)(buf);
        G(free)(c);
    }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 64, 6, 5, 1), * kv = t4(c, C(TYPE_F16), 64, 6, 5, 1);
        check("cpy f32->f16", c, G(cpy)(c, a, kv), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F16), 64, 6, 5, 1), * o = t4(c, C(TYPE_F32), 64, 6, 5, 1);
        check("cpy f16->f32", c, G(cpy)(c, a, o), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 16, 6, 5, 1);
        check("cont of permuted", c, G(cont)(c, G(permute)(c, a, 0, 2, 1, 3)), bitwise_or(EXACT)); }
    {   /* llama's merged heads: a permuted [64, 9, 7] made contiguous as [576, 7] (runs of 64) */
        ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 64, 7, 9, 1);
        check("cont_2d of permuted heads", c, G(cont_2d)(c, G(permute)(c, a, 0, 2, 1, 3), 576, 7), bitwise_or(EXACT)); }
    {   /* the V cache write: a transposed [1, 40] f32 into a strided f16 column view */
        ctx_t * c = new_ctx(); tensor_t * v = t4(c, C(TYPE_F32), 40, 1, 1, 1), * cache = t4(c, C(TYPE_F16), 40 * 32, 1, 1, 1);
        tensor_t * col = G(view_2d)(c, cache, 1, 40, 32 * G(element_size)(cache), 5 * G(element_size)(cache));
        check("cpy into a strided f16 column", c, G(cpy)(c, G(transpose)(c, v), col), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx(); tensor_t * a = t4(c, C(TYPE_F32), 24, 10, 1, 1), * kv = t4(c, C(TYPE_F16), 240, 1, 1, 1);
        check("cpy transposed into a flat f16", c, G(cpy)(c, G(transpose)(c, a), kv), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx();
        tensor_t * k = t4(c, C(TYPE_F16), 3, 80, 64, 1);   /* kernel [K, IC, OC] */
        tensor_t * x = t4(c, C(TYPE_F32), 300, 80, 1, 1);  /* input [IW, IC, N] */
        check("im2col 1d (conv_1d)", c, G(im2col)(c, k, x, 1, 0, 1, 0, 1, 0, false, C(TYPE_F16)), bitwise_or(EXACT)); }
    {   ctx_t * c = new_ctx();
        tensor_t * k = t4(c, C(TYPE_F16), 3, 80, 64, 1);
        tensor_t * x = t4(c, C(TYPE_F32), 300, 80, 1, 1);
        check("conv_1d stride 2 (im2col + mul_mat f16)", c, G(conv_1d)(c, k, x, 2, 1, 1), bitwise_or(MATMUL)); }

#if defined(TEST_REV2026)
    cases_rows(name, sizeof name);
    cases_attn(name, sizeof name);
    cases_repack(name, sizeof name);
    /* 2026: normal-mode ROPE rows of an odd pair count or fewer than 8 pairs are declined (2026's
       rotate_pairs, as GCC vectorizes it, rounds some of their products; kernels/src/ops/rope.rs);
       NeoX mode with the same rows stays on SIMD */
    {
        const int dims[] = { 46, 10 };
        for (int k = 0; k < 2; k++) {
            for (int mode = 0; mode <= 2; mode += 2) {
                ctx_t * c = new_ctx();
                tensor_t * a = t4(c, C(TYPE_F32), 64, 9, 7, 1);
                tensor_t * pos = G(new_tensor_1d)(c, C(TYPE_I32), 7);
                tensor_t * r = G(rope_ext)(c, a, pos, NULL, dims[k], mode, 8192, 100000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
                bool want = mode == 2, got = GB(supports_op)(simd, r);
                snprintf(name, sizeof name, "rope mode %d n_dims %d", mode, dims[k]);
                n_cases++;
                printf("%-40s %s%s\n", name, got ? "on SIMD" : "declined by SIMD", got == want ? "" : "  FAILED");
                if (!got) n_declined++;
                n_failed += got != want;
                G(free)(c);
            }
        }
    }
    const int EXPECTED_DECLINED = 2;
#else
    const int EXPECTED_DECLINED = 0;
#endif
    const int expected_declined = EXPECTED_DECLINED + expected_declined_extra;
    if (n_declined != expected_declined) {
        fprintf(stderr, "simd_ops: %d cases declined by SIMD, expected %d\n", n_declined, expected_declined);
        n_failed++;
    }

    GB(free)(simd);
    GB(free)(cpu);
    printf("simd_ops %s (%s%s): %d cases, %d nodes compared, %d declined, %d failed\n", PREFIX, GGML_RS_TEST_MODE,
           getenv("GGML_RS_SIMD_PORTABLE") ? ", portable kernels" : "", n_cases, n_nodes_checked, n_declined, n_failed);
    return n_failed ? 1 : 0;
}
