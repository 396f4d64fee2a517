/*
 * The scheduler's states and what each following call does (docs/sched-states.md): one test per
 * row of that table, for both prefixes, built on our library (static, shared) and on the stock
 * host backend (sched_states_<p>_stock), so that stock's behaviour stays the reference except
 * where a row says we differ on purpose (STOCK_DIFFERS below).
 *
 * The graph splits over a fake accelerator ("FAKE": MUL and ADD only, a buffer type the CPU cannot
 * use) and the CPU: row ids (a graph input) pick rows of an embedding on the CPU, FAKE scales them
 * and adds them back, the CPU takes the square root, FAKE scales again. Every output is compared
 * with values computed here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-backend-impl.h"
#include "ggml-cpu.h"

#include "test_prefix.h"

typedef struct G(tensor) tensor_t;

#if defined(GGML_RS_TEST_MODE_stock)
#    define STOCK 1
#else
#    define STOCK 0
#endif

static int n_checks, n_failed;
static const char * row_name = "";
#define CHECK(cond) do { n_checks++; if (!(cond)) { n_failed++; fprintf(stderr, "%s:%d: [%s] CHECK failed: %s\n", __FILE__, __LINE__, row_name, #cond); } } while (0)

static char last_error[1024];
static void on_log(enum G(log_level) level, const char * text, void * ud) {
    (void) ud;
    if (level == C(LOG_LEVEL_ERROR)) snprintf(last_error, sizeof(last_error), "%s", text);
    if (getenv("SCHED_STATES_LOG")) fprintf(stderr, "log: %s", text);
}
/* our library must have logged an error line containing `sub` (stock logs differently or not at all) */
#define EXPECT_LOG(sub) do { if (!STOCK) { n_checks++; if (!strstr(last_error, sub)) { n_failed++; fprintf(stderr, "%s:%d: [%s] expected a log line containing '%s', last was '%s'\n", __FILE__, __LINE__, row_name, sub, last_error); } } last_error[0] = 0; } while (0)

#include "fake_accel.h"

/* FAKE's buffer type fails its allocations while this is set */
static bool fail_alloc;
static GB(buffer_t) failing_alloc(GB(buffer_type_t) buft, size_t size) {
    if (fail_alloc) return NULL;
    return fake_buft_alloc(buft, size);
}

static struct G(context) * new_ctx(size_t n_tensors) {
    struct G(init_params) p = { G(tensor_overhead)() * n_tensors + G(graph_overhead)(), NULL, true };
    return G(init)(p);
}

static bool parallel;
static GB(sched_t) new_sched(GB(t) * backends, int n, size_t graph_size) {
#if defined(TEST_PREFIX_WSP) || defined(TEST_REV2026)
    return GB(sched_new)(backends, NULL, n, graph_size, parallel, true);
#else
    return GB(sched_new)(backends, NULL, n, graph_size, parallel);
#endif
}

enum { N = 24, ROWS = 9, K = 6 };

/* weights: emb (CPU buffer), w1, w2 (FAKE buffer) */
static struct G(context) * wctx, * cctx;
static GB(buffer_t) wbuf_cpu, wbuf_fake;
static tensor_t * emb, * w1, * w2;
static float embv[ROWS * N], w1v[N], w2v[N];
static GB(t) cpu, fake;

static void weights_init(void) {
    wctx = new_ctx(8);
    cctx = new_ctx(4);
    emb = G(new_tensor_2d)(cctx, C(TYPE_F32), N, ROWS);
    w1 = G(new_tensor_1d)(wctx, C(TYPE_F32), N);
    w2 = G(new_tensor_1d)(wctx, C(TYPE_F32), N);
    wbuf_fake = G(backend_alloc_ctx_tensors_from_buft)(wctx, &fake_buft);
    GB(buffer_set_usage)(wbuf_fake, C(BACKEND_BUFFER_USAGE_WEIGHTS));
    wbuf_cpu = G(backend_alloc_ctx_tensors)(cctx, cpu);
    GB(buffer_set_usage)(wbuf_cpu, C(BACKEND_BUFFER_USAGE_WEIGHTS));
    for (int i = 0; i < ROWS * N; i++) embv[i] = 0.25f * (float) (i % 17) + 1.0f;
    for (int i = 0; i < N; i++) { w1v[i] = 0.5f + (float) i; w2v[i] = 2.0f - 0.125f * (float) i; }
    GB(tensor_set)(emb, embv, 0, sizeof(embv));
    GB(tensor_set)(w1, w1v, 0, sizeof(w1v));
    GB(tensor_set)(w2, w2v, 0, sizeof(w2v));
}

struct graph {
    struct G(context) * ctx;
    struct G(cgraph) * g;
    tensor_t * ids, * out;
    int32_t idv[K];
};

/* rows = emb[ids] (CPU); a = rows*w1, b = a+rows (FAKE); c = sqrt(b) (CPU); out = c*w2 (FAKE) */
static struct graph build(void) {
    struct graph r;
    r.ctx = new_ctx(64);
    r.ids = G(new_tensor_1d)(r.ctx, C(TYPE_I32), K);
    G(set_name)(r.ids, "ids");
    G(set_input)(r.ids);
    tensor_t * rows = G(get_rows)(r.ctx, emb, r.ids);
    tensor_t * a = G(mul)(r.ctx, rows, w1);
    tensor_t * b = G(add)(r.ctx, a, rows);
    tensor_t * c = G(sqrt)(r.ctx, b);
    r.out = G(mul)(r.ctx, c, w2);
    G(set_name)(r.out, "out");
    G(set_output)(r.out);
    r.g = G(new_graph)(r.ctx);
    G(build_forward_expand)(r.g, r.out);
    for (int k = 0; k < K; k++) r.idv[k] = (k * 5 + 2) % ROWS;
    return r;
}

static void set_ids(struct graph * gr, int salt) {
    for (int k = 0; k < K; k++) gr->idv[k] = (k * 5 + 2 + salt) % ROWS;
    GB(tensor_set)(gr->ids, gr->idv, 0, sizeof(gr->idv));
}

/* the output is exactly what the graph computes from the ids last set */
static bool output_ok(const struct graph * gr) {
    float got[K * N];
    GB(tensor_get)(gr->out, got, 0, sizeof(got));
    for (int k = 0; k < K; k++) {
        for (int i = 0; i < N; i++) {
            float x = embv[gr->idv[k] * N + i];
            float want = sqrtf(x * w1v[i] + x) * w2v[i];
            if (got[k * N + i] != want) {
                fprintf(stderr, "[%s] out[%d][%d] = %g, want %g\n", row_name, k, i, got[k * N + i], want);
                return false;
            }
        }
    }
    return true;
}

/* eval callback that observes every node and says stop at the `stop_at`-th observation */
static int observed, stop_at;
static bool eval_cb(tensor_t * t, bool ask, void * ud) {
    (void) t; (void) ud;
    if (ask) return true;
    observed++;
    return observed != stop_at;
}

/* ------------------------------------------------------------------ states */

enum state {
    ST_ALLOCATED,     /* alloc_graph succeeded, never computed */
    ST_COMPUTED,      /* a compute returned SUCCESS */
    ST_CANCELLED,     /* the eval callback cancelled a compute in the middle of a split */
    ST_ALLOC_FAILED,  /* alloc_graph failed (FAKE's buffer could not be allocated) */
    ST_RESERVE_FAILED,/* reserve failed (same cause) */
    ST_COMPUTE_ALLOC_FAILED, /* compute of an unallocated graph returned ALLOC_FAILED */
    ST_COUNT
};
static const char * state_names[ST_COUNT] = {
    "allocated", "computed", "cancelled", "alloc failed", "reserve failed", "compute ALLOC_FAILED",
};

/* Puts a fresh scheduler in state `st` with graph `gr` (inputs set); returns false if it could not. */
static bool enter(GB(sched_t) s, struct graph * gr, enum state st) {
    switch (st) {
    case ST_ALLOCATED:
        if (!GB(sched_alloc_graph)(s, gr->g)) return false;
        set_ids(gr, 0);
        return true;
    case ST_COMPUTED:
        if (!GB(sched_alloc_graph)(s, gr->g)) return false;
        set_ids(gr, 0);
        return GB(sched_graph_compute)(s, gr->g) == C(STATUS_SUCCESS) && output_ok(gr);
    case ST_CANCELLED: {
        if (!GB(sched_alloc_graph)(s, gr->g)) return false;
        set_ids(gr, 0);
        GB(sched_set_eval_callback)(s, eval_cb, NULL);
        observed = 0;
        stop_at = 2; /* node 2 is FAKE's first node: its split's ADD does not run */
        enum G(status) st2 = GB(sched_graph_compute)(s, gr->g);
        GB(sched_set_eval_callback)(s, NULL, NULL);
        /* stock ends only the split and reports SUCCESS; ours cancels the compute (ABORTED) */
        return STOCK ? st2 == C(STATUS_SUCCESS) : st2 == C(STATUS_ABORTED);
    }
    case ST_ALLOC_FAILED:
        fail_alloc = true;
        last_error[0] = 0;
        bool ok = GB(sched_alloc_graph)(s, gr->g);
        fail_alloc = false;
        return !ok;
    case ST_RESERVE_FAILED:
        fail_alloc = true;
        last_error[0] = 0;
        bool okr = GB(sched_reserve)(s, gr->g);
        fail_alloc = false;
        return !okr;
    case ST_COMPUTE_ALLOC_FAILED: {
        fail_alloc = true;
        last_error[0] = 0;
        enum G(status) st3 = GB(sched_graph_compute)(s, gr->g);
        fail_alloc = false;
        return st3 == C(STATUS_ALLOC_FAILED);
    }
    default:
        return false;
    }
}


/* ------------------------------------------------------------------ the rows */

/* what stock does in a row, where it is not what we do (docs/sched-states.md says why) */
enum stock_does { SAME, STOCK_DIES, STOCK_WRONG, STOCK_UNDEFINED };

/* recovery every state must allow: reset, a new graph, alloc, inputs, compute */
static void recover(GB(sched_t) s) {
    GB(sched_reset)(s);
    struct graph g2 = build();
    CHECK(GB(sched_alloc_graph)(s, g2.g));
    set_ids(&g2, 5);
    CHECK(GB(sched_graph_compute)(s, g2.g) == C(STATUS_SUCCESS));
    CHECK(output_ok(&g2));
    G(free)(g2.ctx);
}

static void then_compute(GB(sched_t) s, struct graph * gr, enum state st) {
    enum G(status) r = GB(sched_graph_compute)(s, gr->g);
    if (st == ST_ALLOCATED || st == ST_COMPUTED || st == ST_CANCELLED) {
        /* the inputs the caller set are still there: the whole graph, right outputs */
        CHECK(r == C(STATUS_SUCCESS));
        CHECK(output_ok(gr));
    } else if (!STOCK) {
        /* the graph was never allocated, so its inputs hold nothing the caller wrote: refused */
        CHECK(r == C(STATUS_ALLOC_FAILED));
        EXPECT_LOG("set the inputs");
    }
}

static void then_set_inputs_and_compute(GB(sched_t) s, struct graph * gr, enum state st) {
    if (st >= ST_ALLOC_FAILED) {
        /* no memory behind the inputs: setting them is refused (stock asserts) */
        last_error[0] = 0;
        GB(tensor_set)(gr->ids, gr->idv, 0, sizeof(gr->idv));
        EXPECT_LOG("buffer");
        CHECK(GB(sched_alloc_graph)(s, gr->g));
    }
    set_ids(gr, 4);
    CHECK(GB(sched_graph_compute)(s, gr->g) == C(STATUS_SUCCESS));
    CHECK(output_ok(gr));
}

static void then_alloc_same(GB(sched_t) s, struct graph * gr, enum state st) {
    bool ok = GB(sched_alloc_graph)(s, gr->g);
    if (st == ST_ALLOCATED || st == ST_COMPUTED || st == ST_CANCELLED) {
        /* its sources already point at this scheduler's copies: refused, not silently stale */
        if (!STOCK) { CHECK(!ok); EXPECT_LOG("already split"); }
    } else {
        /* never split: allocated now */
        CHECK(ok);
        set_ids(gr, 1);
        CHECK(GB(sched_graph_compute)(s, gr->g) == C(STATUS_SUCCESS));
        CHECK(output_ok(gr));
    }
}

static void then_reserve_new(GB(sched_t) s, struct graph * gr, enum state st) {
    (void) gr; (void) st;
    struct graph g2 = build();
    CHECK(GB(sched_reserve)(s, g2.g));
    G(free)(g2.ctx);
    recover(s);
}

static void then_tensor_io(GB(sched_t) s, struct graph * gr, enum state st) {
    (void) s;
    float out[K * N];
    if (st >= ST_ALLOC_FAILED) {
        last_error[0] = 0;
        GB(tensor_get)(gr->out, out, 0, sizeof(out));
        EXPECT_LOG("buffer");
    } else {
        int32_t back[K];
        GB(tensor_get)(gr->ids, back, 0, sizeof(back));
        CHECK(memcmp(back, gr->idv, sizeof(back)) == 0);
        GB(tensor_get)(gr->out, out, 0, sizeof(out));
        if (st == ST_COMPUTED) CHECK(output_ok(gr));
    }
}

static void then_get_tensor_backend(GB(sched_t) s, struct graph * gr, enum state st) {
    GB(t) be = GB(sched_get_tensor_backend)(s, gr->out);
    if (st == ST_ALLOCATED || st == ST_COMPUTED || st == ST_CANCELLED) CHECK(be == fake);
    else CHECK(be == fake || be == NULL);
}

static void then_reset_and_recover(GB(sched_t) s, struct graph * gr, enum state st) {
    (void) gr; (void) st;
    recover(s);
}

static void then_free(GB(sched_t) s, struct graph * gr, enum state st) {
    (void) s; (void) gr; (void) st;
    /* sched_free happens below for every row; nothing else to do */
}

typedef void (*then_fn)(GB(sched_t), struct graph *, enum state);
struct call { const char * name; then_fn fn; };
static const struct call calls[] = {
    { "compute", then_compute },
    { "set inputs + compute", then_set_inputs_and_compute },
    { "alloc_graph (same graph)", then_alloc_same },
    { "reserve (new graph)", then_reserve_new },
    { "tensor get/set", then_tensor_io },
    { "get_tensor_backend", then_get_tensor_backend },
    { "reset + new graph", then_reset_and_recover },
    { "free", then_free },
};
enum { N_CALLS = sizeof(calls) / sizeof(calls[0]) };

/* Stock's outcome per row where it differs from ours. */
static enum stock_does stock_outcome(enum state st, int call) {
    const char * c = calls[call].name;
    bool compute = strcmp(c, "compute") == 0, io = strcmp(c, "tensor get/set") == 0;
    bool set_compute = strcmp(c, "set inputs + compute") == 0, alloc_same = strcmp(c, "alloc_graph (same graph)") == 0;
    /* a failed compute-buffer allocation with two backends: stock crashes (SIGSEGV) at once */
    if (st == ST_ALLOC_FAILED || st == ST_COMPUTE_ALLOC_FAILED) return STOCK_DIES;
    /* the ids' memory went to later nodes: recomputing reads garbage ids, GET_ROWS asserts */
    if (compute && (st == ST_COMPUTED || st == ST_CANCELLED)) return STOCK_DIES;
    if (io && (st == ST_COMPUTED || st == ST_CANCELLED)) return STOCK_WRONG;
    /* re-splits a graph whose sources already point at its copies */
    if (alloc_same && st <= ST_CANCELLED) return STOCK_UNDEFINED;
    if (st == ST_RESERVE_FAILED) {
        if (compute) return STOCK_UNDEFINED;                /* computes on inputs nobody set */
        if (set_compute || io) return STOCK_DIES;           /* "tensor buffer not set" */
        if (alloc_same) return STOCK_WRONG;                 /* reserve left it pointing at stale copies */
        if (strcmp(c, "reset + new graph") == 0) return STOCK_DIES;
    }
    return SAME;
}

/* Runs one row in a child process, so that an abort (stock's) is an outcome, not the end of the suite. */
static void run_row(GB(t) * backends, enum state st, int call) {
    char name[128];
    snprintf(name, sizeof(name), "%s -> %s", state_names[st], calls[call].name);
    enum stock_does sd = STOCK ? stock_outcome(st, call) : SAME;
    fflush(stdout); fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        row_name = name;
        n_checks = n_failed = 0;
        GB(sched_t) s = new_sched(backends, 2, 64);
        struct graph gr = build();
        if (!enter(s, &gr, st)) { fprintf(stderr, "[%s] could not enter the state\n", name); _exit(2); }
        calls[call].fn(s, &gr, st);
        GB(sched_free)(s);
        G(free)(gr.ctx);
        fflush(stderr);
        _exit(n_failed ? 1 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    bool aborted = WIFSIGNALED(status);
    bool passed = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    n_checks++;
    char got[64];
    if (aborted) snprintf(got, sizeof(got), "dies (%s)", strsignal(WTERMSIG(status)));
    else snprintf(got, sizeof(got), "%s", passed ? "ok" : "fails its checks");
    bool as_expected = sd == SAME ? passed : sd == STOCK_DIES ? aborted : sd == STOCK_WRONG ? !passed && !aborted : true;
    static const char * want[] = { "ok", "a crash (stock)", "wrong results (stock)", "anything (stock)" };
    if (!as_expected) {
        n_failed++;
        fprintf(stderr, "row [%s]: %s, expected %s\n", name, got, want[sd]);
    }
    printf("  %-22s | %-26s | %-32s%s\n", state_names[st], calls[call].name, got,
           sd == SAME ? "" : sd == STOCK_UNDEFINED ? " (stock: undefined, not checked)" : " (as documented for stock)");
}

int main(void) {
    G(log_set)(on_log, NULL);
    fake_setup();
    fake_buft.iface.alloc_buffer = failing_alloc;
    cpu_worker = GB(cpu_init)();
    cpu = GB(cpu_init)();
    fake = fake_init();
    weights_init();
    GB(t) backends[2] = { fake, cpu };

    /* every state x every following call, one child process per row */
    for (int st = 0; st < ST_COUNT; st++) {
        for (int c = 0; c < N_CALLS; c++) run_row(backends, (enum state) st, c);
    }

    /* the regression of issue 16 in full: cancelled in the middle of a split, computed again
       (callback removed, no reset, no alloc, inputs as set), then again with new inputs; also
       with pipeline copies (parallel), where a recomputed graph must read the inputs just copied */
    for (int par = 0; par <= 1; par++) {
        if (STOCK) break; /* stock aborts here (row "cancelled -> compute") */
        parallel = par;
        row_name = par ? "cancelled -> compute x2 (parallel)" : "cancelled -> compute x2";
        GB(sched_t) s = new_sched(backends, 2, 64);
        struct graph gr = build();
        CHECK(enter(s, &gr, ST_CANCELLED));
        CHECK(observed == 2);
        CHECK(GB(sched_graph_compute)(s, gr.g) == C(STATUS_SUCCESS));
        CHECK(output_ok(&gr));
        set_ids(&gr, 3);
        CHECK(GB(sched_graph_compute)(s, gr.g) == C(STATUS_SUCCESS));
        CHECK(output_ok(&gr));
        G(free)(gr.ctx);
        GB(sched_free)(s);
    }

    GB(free)(fake);
    GB(free)(cpu);
    GB(free)(cpu_worker);
    GB(buffer_free)(wbuf_fake);
    GB(buffer_free)(wbuf_cpu);
    G(free)(wctx);
    G(free)(cctx);
    printf("sched_states %s (%s): %d checks, %d failed\n", PREFIX, GGML_RS_TEST_MODE, n_checks, n_failed);
    return n_failed ? 1 : 0;
}
