/*
 * Scheduler tests beyond the hosts, for both prefixes (compiled with -DTEST_PREFIX_LM or
 * -DTEST_PREFIX_WSP): a fake accelerator ("FAKE": runs MUL and ADD only, in a buffer type the CPU
 * cannot use) in front of the host's CPU backend, so that graphs split and inputs are copied.
 * Every result is checked against values computed here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-backend-impl.h"
#include "ggml-cpu.h"

#include "test_prefix.h"

typedef struct G(tensor) tensor_t;

static int n_checks, n_failed;
#define CHECK(cond) do { n_checks++; if (!(cond)) { n_failed++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)

static char last_error[1024];
static int n_errors;
static void on_log(enum G(log_level) level, const char * text, void * ud) {
    (void) ud;
    if (level == C(LOG_LEVEL_ERROR)) {
        n_errors++;
        snprintf(last_error, sizeof(last_error), "%s", text);
    }
}
#define EXPECT_LOG(sub) do { n_checks++; if (!strstr(last_error, sub)) { n_failed++; fprintf(stderr, "%s:%d: expected a log line containing '%s', last was '%s'\n", __FILE__, __LINE__, sub, last_error); } last_error[0] = 0; } while (0)

/* ------------------------------------------------------------------ the fake accelerator */

#include "fake_accel.h"

/* ------------------------------------------------------------------ helpers */

static void set_f32(tensor_t * t, const float * v) { GB(tensor_set)(t, v, 0, G(nbytes)(t)); }
static void get_f32(const tensor_t * t, float * v) { GB(tensor_get)(t, v, 0, G(nbytes)(t)); }

static struct G(context) * new_ctx(size_t n_tensors) {
    struct G(init_params) p = { G(tensor_overhead)() * n_tensors + G(graph_overhead)(), NULL, true };
    return G(init)(p);
}

static GB(sched_t) new_sched(GB(t) * backends, int n, size_t graph_size, bool parallel) {
    return TEST_SCHED_NEW(GB(sched_new), backends, NULL, n, graph_size, parallel, true);
}

#define N 37

/* weights w1, w2 live in a FAKE weights buffer; x is a graph input on the CPU.
   a = x*w1 (FAKE, by its weight); b = a+x (FAKE, expansion); c = sqrt(b) (CPU: FAKE lacks SQR T);
   d = c*w2 (FAKE) */
struct model {
    struct G(context) * wctx;
    GB(buffer_t) wbuf;
    tensor_t * w1, * w2;
    float w1v[N], w2v[N];
};

static void model_init(struct model * m) {
    m->wctx = new_ctx(4);
    m->w1 = G(new_tensor_1d)(m->wctx, C(TYPE_F32), N);
    m->w2 = G(new_tensor_1d)(m->wctx, C(TYPE_F32), N);
    m->wbuf = G(backend_alloc_ctx_tensors_from_buft)(m->wctx, &fake_buft);
    GB(buffer_set_usage)(m->wbuf, C(BACKEND_BUFFER_USAGE_WEIGHTS));
    for (int i = 0; i < N; i++) { m->w1v[i] = 0.5f + i; m->w2v[i] = 2.0f - 0.25f * i; }
    set_f32(m->w1, m->w1v);
    set_f32(m->w2, m->w2v);
}

struct graph {
    struct G(context) * ctx;
    struct G(cgraph) * g;
    tensor_t * x, * d;
};

static struct graph build(struct model * m) {
    struct graph r;
    r.ctx = new_ctx(64);
    r.x = G(new_tensor_1d)(r.ctx, C(TYPE_F32), N);
    G(set_name)(r.x, "x");
    G(set_input)(r.x);
    tensor_t * a = G(mul)(r.ctx, r.x, m->w1);
    tensor_t * b = G(add)(r.ctx, a, r.x);
    tensor_t * c = G(sqrt)(r.ctx, b);
    r.d = G(mul)(r.ctx, c, m->w2);
    G(set_name)(r.d, "d");
    G(set_output)(r.d);
    r.g = G(new_graph)(r.ctx);
    G(build_forward_expand)(r.g, r.d);
    return r;
}

static void expected(const struct model * m, const float * x, float * d) {
    for (int i = 0; i < N; i++) {
        float a = x[i] * m->w1v[i];
        float b = a + x[i];
        d[i] = sqrtf(b) * m->w2v[i];
    }
}

static int observed, stop_at;
static bool eval_cb(tensor_t * t, bool ask, void * ud) {
    (void) t; (void) ud;
    if (ask) return true;
    observed++;
    return observed != stop_at;
}

int main(void) {
    G(log_set)(on_log, NULL);
    fake_setup();
    cpu_worker = GB(cpu_init)();
    GB(t) cpu = GB(cpu_init)();
    GB(t) fake = fake_init();
    GB(t) backends[2] = { fake, cpu };

    struct model m;
    model_init(&m);

    float xv[N], dv[N], want[N];
    for (int i = 0; i < N; i++) xv[i] = 1.0f + 0.125f * i;
    expected(&m, xv, want);

    /* 1. splits and copies */
    for (int parallel = 0; parallel <= 1; parallel++) {
        GB(sched_t) s = new_sched(backends, 2, 64, parallel);
        CHECK(s != NULL);
        CHECK(GB(sched_get_n_backends)(s) == 2);
        CHECK(GB(sched_get_backend)(s, 0) == fake);
        CHECK(GB(sched_get_n_copies)(s) == (parallel ? 4 : 1));
        for (int iter = 0; iter < 3; iter++) {
            struct graph gr = build(&m);
            GB(sched_reset)(s);
            CHECK(GB(sched_alloc_graph)(s, gr.g));
            CHECK(GB(sched_get_n_splits)(s) == 3);
            CHECK(GB(sched_get_tensor_backend)(s, gr.d) == fake);
            CHECK(GB(sched_get_tensor_backend)(s, G(graph_node)(gr.g, 2)) == cpu); /* sqrt */
            for (int i = 0; i < N; i++) xv[i] = 1.0f + 0.125f * i + iter;
            expected(&m, xv, want);
            set_f32(gr.x, xv);
            fake_computed_nodes = 0;
            CHECK(GB(sched_graph_compute)(s, gr.g) == C(STATUS_SUCCESS));
            CHECK(fake_computed_nodes == 3);
            get_f32(gr.d, dv);
            CHECK(memcmp(dv, want, sizeof(dv)) == 0);
            CHECK(GB(sched_get_buffer_size)(s, fake) > 0);
            CHECK(GB(sched_get_buffer_size)(s, cpu) > 0);

            /* reset + alloc of the same, already split graph: stale copies, refused */
            GB(sched_reset)(s);
            last_error[0] = 0;
            CHECK(!GB(sched_alloc_graph)(s, gr.g));
            EXPECT_LOG("already split");
            G(free)(gr.ctx);
        }
        GB(sched_free)(s);
    }

    /* 2. eval callback: observe every node; returning false cancels with ABORTED */
    {
        GB(sched_t) s = new_sched(backends, 2, 64, false);
        struct graph gr = build(&m);
        GB(sched_set_eval_callback)(s, eval_cb, NULL);
        observed = 0; stop_at = -1;
        GB(sched_reset)(s);
        CHECK(GB(sched_alloc_graph)(s, gr.g));
        set_f32(gr.x, xv);
        CHECK(GB(sched_graph_compute)(s, gr.g) == C(STATUS_SUCCESS));
        CHECK(observed == 4);
        G(free)(gr.ctx);

        gr = build(&m);
        observed = 0; stop_at = 2;
        GB(sched_reset)(s);
        CHECK(GB(sched_alloc_graph)(s, gr.g));
        set_f32(gr.x, xv);
        CHECK(GB(sched_graph_compute)(s, gr.g) == C(STATUS_ABORTED));
        CHECK(observed == 2);
        G(free)(gr.ctx);
        GB(sched_free)(s);
    }

    /* 3. bad input: errors, not aborts */
    {
        GB(t) wrong_order[2] = { cpu, fake };
        last_error[0] = 0;
        CHECK(new_sched(wrong_order, 2, 64, false) == NULL);
        EXPECT_LOG("CPU");
        GB(t) many[17];
        for (int i = 0; i < 17; i++) many[i] = cpu;
        CHECK(new_sched(many, 17, 64, false) == NULL);
        EXPECT_LOG("between 1 and 16");
        CHECK(new_sched(backends, 0, 64, false) == NULL);
        CHECK(new_sched(NULL, 2, 64, false) == NULL);

        /* a graph larger than graph_size */
        GB(sched_t) s = new_sched(backends, 2, 4, false);
        CHECK(s != NULL);
        struct graph gr = build(&m);
        CHECK(!GB(sched_reserve)(s, gr.g));
        EXPECT_LOG("graph_size");
        CHECK(GB(sched_graph_compute)(s, gr.g) == C(STATUS_ALLOC_FAILED));
        G(free)(gr.ctx);
        GB(sched_free)(s);

        /* assigning an op to a backend that cannot run it */
        s = new_sched(backends, 2, 64, false);
        gr = build(&m);
        GB(sched_set_tensor_backend)(s, G(graph_node)(gr.g, 2), fake);
        EXPECT_LOG("does not support");
        CHECK(GB(sched_get_tensor_backend)(s, G(graph_node)(gr.g, 2)) == NULL);
        GB(sched_set_tensor_backend)(s, G(graph_node)(gr.g, 2), cpu);
        CHECK(GB(sched_get_tensor_backend)(s, G(graph_node)(gr.g, 2)) == cpu);
        CHECK(GB(sched_get_backend)(s, 5) == NULL);
        EXPECT_LOG("out of range");
        G(free)(gr.ctx);
        GB(sched_free)(s);

        CHECK(GB(sched_get_n_splits)(NULL) == 0);
        EXPECT_LOG("NULL");
        CHECK(!GB(sched_alloc_graph)(NULL, NULL));
        GB(sched_free)(NULL);
    }

    /* 4. many graph inputs with pipeline copies (stock aborts past 10) and a split with many inputs */
    {
        enum { K = 14 };
        GB(sched_t) s = new_sched(backends, 2, 256, true);
        struct G(context) * ctx = new_ctx(128);
        tensor_t * in[K];
        tensor_t * acc = G(mul)(ctx, m.w1, m.w1); /* on FAKE by its weight */
        for (int k = 0; k < K; k++) {
            in[k] = G(new_tensor_1d)(ctx, C(TYPE_F32), N);
            G(set_input)(in[k]);
            acc = G(add)(ctx, acc, in[k]);
        }
        G(set_output)(acc);
        struct G(cgraph) * g = G(new_graph)(ctx);
        G(build_forward_expand)(g, acc);
        CHECK(GB(sched_alloc_graph)(s, g));
        float v[N], want2[N];
        for (int i = 0; i < N; i++) want2[i] = m.w1v[i] * m.w1v[i];
        for (int k = 0; k < K; k++) {
            for (int i = 0; i < N; i++) { v[i] = (float) (k + i); want2[i] += v[i]; }
            set_f32(in[k], v);
        }
        CHECK(GB(sched_graph_compute)(s, g) == C(STATUS_SUCCESS));
        get_f32(acc, v);
        CHECK(memcmp(v, want2, sizeof(v)) == 0);
#if defined(TEST_API_2026)
        /* 2026: a split's input list grows as needed (30 first, then doubling): no split for it */
        CHECK(GB(sched_get_n_splits)(s) == 1);
#else
        CHECK(GB(sched_get_n_splits)(s) >= 2); /* the soft limit of 10 inputs per split */
#endif
        G(free)(ctx);
        GB(sched_free)(s);
    }

    /* 5. graph_copy and compare_graph_backend between two CPU backends */
    {
        struct G(context) * ctx = new_ctx(16);
        tensor_t * a = G(new_tensor_1d)(ctx, C(TYPE_F32), N);
        tensor_t * b = G(sqr)(ctx, a);
        tensor_t * c = G(add)(ctx, b, a);
        struct G(cgraph) * g = G(new_graph)(ctx);
        G(build_forward_expand)(g, c);
        GB(buffer_t) buf = G(backend_alloc_ctx_tensors)(ctx, cpu);
        set_f32(a, xv);
        struct GB(graph_copy) cp = GB(graph_copy)(cpu_worker, g);
        CHECK(cp.buffer != NULL && cp.graph != NULL);
        CHECK(G(graph_n_nodes)(cp.graph) == G(graph_n_nodes)(g));
        float got[N];
        get_f32(G(graph_node)(cp.graph, 0)->src[0], got);
        CHECK(memcmp(got, xv, sizeof(got)) == 0);
        GB(graph_copy_free)(cp);
        CHECK(TEST_COMPARE_GRAPH(GB(compare_graph_backend), cpu, cpu_worker, g, NULL, NULL) == false);
        EXPECT_LOG("callback");
        G(free)(ctx);
        GB(buffer_free)(buf);
    }

    /* 6. computing a graph other than the one allocated: that graph is allocated and computed
          (stock would run the allocated graph's splits and report SUCCESS) */
    {
        GB(sched_t) s = new_sched(backends, 2, 64, false);
        struct graph g1 = build(&m);
        struct G(context) * ctx = new_ctx(8);
        tensor_t * sum = G(add)(ctx, m.w1, m.w2);
        tensor_t * out = G(mul)(ctx, sum, m.w2);
        G(set_output)(out);
        struct G(cgraph) * g2 = G(new_graph)(ctx);
        G(build_forward_expand)(g2, out);
        GB(sched_reset)(s);
        CHECK(GB(sched_alloc_graph)(s, g1.g));
        CHECK(GB(sched_get_n_splits)(s) == 3);
        fake_computed_nodes = 0;
        CHECK(GB(sched_graph_compute)(s, g2) == C(STATUS_SUCCESS));
        CHECK(GB(sched_get_n_splits)(s) == 1);
        CHECK(fake_computed_nodes == 2);
        float got[N];
        get_f32(out, got);
        for (int i = 0; i < N; i++) CHECK(got[i] == (m.w1v[i] + m.w2v[i]) * m.w2v[i]);
        G(free)(ctx);
        G(free)(g1.ctx);
        GB(sched_free)(s);
    }

    GB(free)(fake);
    GB(free)(cpu);
    GB(free)(cpu_worker);
    GB(buffer_free)(m.wbuf);
    G(free)(m.wctx);
    printf("sched %s (%s): %d checks, %d failed\n", PREFIX, GGML_RS_TEST_MODE, n_checks, n_failed);
    return n_failed ? 1 : 0;
}
