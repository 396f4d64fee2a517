/*
 * Compute buffers never larger than stock's, and a recompute after a cancel still right (issue 35).
 *
 * Each graph is allocated twice: in a child process with GGML_RS_ALLOC=host (the host's own
 * ggml-alloc places the scheduler's graph: stock's allocator, stock's bytes) and here with ours.
 * Every backend's compute buffer of ours must be <= the host's. Then, with ours, the graph is
 * computed with an eval callback that cancels it in the middle, computed again without setting
 * the inputs, again, and once more with new inputs: every result must equal a fresh scheduler's,
 * and (where no output took its bytes) the input must read back as written.
 *
 *   cpu_reuse        CPU only: x is read by the first product only; stock gives its bytes to the
 *                    third (keeping x would cost a block): x is restored after the compute
 *   inplace_offload  x -> SQR -> SQRT in place over x (CPU), MUL on FAKE (offload_op for host
 *                    weights, the large batch), SQRT back on the CPU
 *   offload_reuse    the fidelity op_offload graph with a large batch, x also read on the CPU
 *   2026: chunks     FAKE's max size 4 KiB: its compute buffer is made of chunks as stock's
 *                    (same count and sizes as the host's ggml-alloc) and the results are right
 *
 * Every line "bytes <graph> <backend> ours=<n> stock=<n>" is the table in docs/compute-buffers.md.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-backend-impl.h"
#include "ggml-cpu.h"

#include "test_prefix.h"

typedef struct G(tensor) tensor_t;

static int n_checks, n_failed;
#define CHECK(cond) do { n_checks++; if (!(cond)) { n_failed++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)

#include "fake_accel.h"

#define K 64   /* row length */
#define B 32   /* batch: rows of x */

static struct G(context) * new_ctx(size_t n_tensors) {
    struct G(init_params) p = { G(tensor_overhead)() * n_tensors + G(graph_overhead)(), NULL, true };
    return G(init)(p);
}

/* the weights, in a CPU weight buffer (host memory: FAKE offloads their ops) */
static struct G(context) * wctx;
static tensor_t * w_vec, * w_mat;
static GB(buffer_t) wbuf;

static void make_weights(GB(t) cpu) {
    wctx = new_ctx(2);
    w_vec = G(new_tensor_1d)(wctx, C(TYPE_F32), K);
    w_mat = G(new_tensor_2d)(wctx, C(TYPE_F32), K, K);
    wbuf = G(backend_alloc_ctx_tensors)(wctx, cpu);
    GB(buffer_set_usage)(wbuf, C(BACKEND_BUFFER_USAGE_WEIGHTS));
    static float v[K], m[K * K];
    for (int i = 0; i < K; i++) v[i] = 0.5f + 0.01f * i;
    for (int i = 0; i < K * K; i++) m[i] = ((i * 37) % 17 - 8) * 0.0625f;
    GB(tensor_set)(w_vec, v, 0, sizeof(v));
    GB(tensor_set)(w_mat, m, 0, sizeof(m));
}

struct graph {
    struct G(context) * ctx;
    struct G(cgraph) * g;
    tensor_t * x, * out;
};

enum which { CPU_REUSE, INPLACE_OFFLOAD, OFFLOAD_REUSE, CHUNKS, N_GRAPHS };
static const char * names[N_GRAPHS] = { "cpu_reuse", "inplace_offload", "offload_reuse", "chunks" };

static struct graph build(enum which w) {
    struct graph gr;
    gr.ctx = new_ctx(32);
    gr.x = G(new_tensor_2d)(gr.ctx, C(TYPE_F32), K, B);
    G(set_input)(gr.x);
    tensor_t * o = NULL;
    switch (w) {
    case CPU_REUSE: {
        tensor_t * a = G(mul_mat)(gr.ctx, w_mat, gr.x);
        tensor_t * b = G(mul_mat)(gr.ctx, w_mat, a);
        o = G(mul_mat)(gr.ctx, w_mat, b);
        break;
    }
    case INPLACE_OFFLOAD: {
        tensor_t * a = G(sqr)(gr.ctx, gr.x);
        tensor_t * b = G(sqrt)(gr.ctx, a);
        tensor_t * c = G(mul)(gr.ctx, b, w_vec);
        o = G(sqrt)(gr.ctx, c);
        break;
    }
    case OFFLOAD_REUSE: {
        tensor_t * a = G(mul)(gr.ctx, gr.x, w_vec);       /* FAKE */
        tensor_t * s = G(sqr)(gr.ctx, gr.x);              /* CPU: x's last reader there */
        tensor_t * m = G(mul_mat)(gr.ctx, w_mat, s);      /* CPU */
        tensor_t * n = G(mul_mat)(gr.ctx, w_mat, m);      /* CPU: may take x's bytes */
        o = G(add)(gr.ctx, n, a);                         /* FAKE */
        break;
    }
    case CHUNKS: {
        /* FAKE only: several batches alive at once, more than its max size */
        tensor_t * a = G(mul)(gr.ctx, gr.x, w_vec);
        tensor_t * b = G(add)(gr.ctx, a, gr.x);
        tensor_t * c = G(mul)(gr.ctx, b, w_vec);
        tensor_t * d = G(add)(gr.ctx, c, a);
        o = G(add)(gr.ctx, d, b);
        break;
    }
    default: abort();
    }
    G(set_output)(o);
    gr.out = o;
    gr.g = G(new_graph)(gr.ctx);
    G(build_forward_expand)(gr.g, o);
    return gr;
}

static GB(t) backends[2];

static GB(sched_t) new_sched(void) {
    return TEST_SCHED_NEW(GB(sched_new), backends, NULL, 2, 64, false, true);
}

static void fill(float * v, int seed) {
    for (int i = 0; i < K * B; i++) v[i] = 0.25f + (float) ((i * 7 + seed * 13) % 23) * 0.125f;
}

/* what a fresh scheduler computes from xv */
static void reference(enum which w, const float * xv, float * want) {
    GB(sched_t) s = new_sched();
    struct graph gr = build(w);
    CHECK(GB(sched_alloc_graph)(s, gr.g));
    GB(tensor_set)(gr.x, xv, 0, sizeof(float) * K * B);
    CHECK(GB(sched_graph_compute)(s, gr.g) == C(STATUS_SUCCESS));
    GB(tensor_get)(gr.out, want, 0, G(nbytes)(gr.out));
    GB(sched_free)(s);
    G(free)(gr.ctx);
}

struct sizes { size_t fake, cpu; int n_allocs; size_t allocs[16]; };

/* allocates graph w with the allocator this process uses: the compute buffers' bytes */
static struct sizes measure(enum which w) {
    struct sizes r = {0};
    GB(sched_t) s = new_sched();
    struct graph gr = build(w);
    fake_n_allocs = 0;
    CHECK(GB(sched_alloc_graph)(s, gr.g));
    r.fake = GB(sched_get_buffer_size)(s, backends[0]);
    r.cpu = GB(sched_get_buffer_size)(s, backends[1]);
    r.n_allocs = fake_n_allocs < 16 ? fake_n_allocs : 16;
    memcpy(r.allocs, fake_allocs, sizeof(size_t) * r.n_allocs);
    GB(sched_free)(s);
    G(free)(gr.ctx);
    return r;
}

/* stock's bytes: the same scheduler graph placed by the host's ggml-alloc, in a child process
   (the choice of allocator is read once per process) */
static struct sizes measure_stock(enum which w) {
    int fd[2];
    struct sizes r = {0};
    if (pipe(fd) != 0) { n_failed++; return r; }
    fflush(stdout); fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        setenv("GGML_RS_ALLOC", "host", 1);
        struct sizes c = measure(w);
        ssize_t k = write(fd[1], &c, sizeof(c));
        _exit(k == (ssize_t) sizeof(c) ? 0 : 1);
    }
    close(fd[1]);
    ssize_t k = read(fd[0], &r, sizeof(r));
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(k == (ssize_t) sizeof(r) && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return r;
}

static int cb_calls, cancel_at;
static bool cancel_cb(tensor_t * t, bool ask, void * ud) {
    (void) t; (void) ud;
    if (ask) return true;
    return ++cb_calls != cancel_at;
}

static bool same(const float * a, const float * b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

/* cancelled in the middle, computed again (twice) without new inputs, then with new ones */
static void recompute_after_cancel(enum which w, bool input_reads_back) {
    static float x1[K * B], x2[K * B], want1[K * B], want2[K * B], got[K * B], back[K * B];
    fill(x1, 1);
    fill(x2, 2);
    reference(w, x1, want1);
    reference(w, x2, want2);
    GB(sched_t) s = new_sched();
    struct graph gr = build(w);
    size_t n_out = G(nelements)(gr.out);
    CHECK(GB(sched_alloc_graph)(s, gr.g));
    GB(tensor_set)(gr.x, x1, 0, sizeof(x1));
    cb_calls = 0;
    cancel_at = 2;
    GB(sched_set_eval_callback)(s, cancel_cb, NULL);
    enum G(status) st = GB(sched_graph_compute)(s, gr.g);
    CHECK(st == C(STATUS_ABORTED));
    GB(sched_set_eval_callback)(s, NULL, NULL);
    for (int round = 0; round < 2; round++) {
        CHECK(GB(sched_graph_compute)(s, gr.g) == C(STATUS_SUCCESS));
        GB(tensor_get)(gr.out, got, 0, G(nbytes)(gr.out));
        CHECK(same(got, want1, n_out));
        if (!same(got, want1, n_out)) fprintf(stderr, "  %s: recompute %d after a cancel differs\n", names[w], round + 1);
        if (input_reads_back) {
            GB(tensor_get)(gr.x, back, 0, sizeof(back));
            CHECK(same(back, x1, K * B));
        }
    }
    GB(tensor_set)(gr.x, x2, 0, sizeof(x2));
    CHECK(GB(sched_graph_compute)(s, gr.g) == C(STATUS_SUCCESS));
    GB(tensor_get)(gr.out, got, 0, G(nbytes)(gr.out));
    CHECK(same(got, want2, n_out));
    CHECK(GB(sched_graph_compute)(s, gr.g) == C(STATUS_SUCCESS));
    GB(tensor_get)(gr.out, got, 0, G(nbytes)(gr.out));
    CHECK(same(got, want2, n_out));
    GB(sched_free)(s);
    G(free)(gr.ctx);
}

int main(void) {
    unsetenv("GGML_RS_ALLOC");
    fake_setup();
    cpu_worker = GB(cpu_init)();
    GB(t) cpu = GB(cpu_init)();
    GB(t) fake = fake_init();
    backends[0] = fake;
    backends[1] = cpu;
    make_weights(cpu);
    fake_offload = true;

    /* stock's first, every child forked before this process makes a scheduler: the choice of
       allocator is made once, at the first one, and a child would inherit it */
    struct sizes stocks[N_GRAPHS];
    for (int w = 0; w < N_GRAPHS; w++) {
        fake_max_size = w == CHUNKS ? 4096 : 0;
        stocks[w] = measure_stock((enum which) w);
    }
    for (int w = 0; w < N_GRAPHS; w++) {
        if (w == CHUNKS) {
#if defined(TEST_API_2026)
            fake_max_size = 4096; /* each batch is 8 KiB: a chunk per tensor, as stock */
#else
            continue; /* before 2026 ggml-alloc ignores the max size, and so do we */
#endif
        }
        struct sizes ours = measure((enum which) w);
        struct sizes stock = stocks[w];
        printf("bytes %s FAKE ours=%zu stock=%zu\n", names[w], ours.fake, stock.fake);
        printf("bytes %s CPU ours=%zu stock=%zu\n", names[w], ours.cpu, stock.cpu);
        CHECK(ours.fake <= stock.fake);
        CHECK(ours.cpu <= stock.cpu);
        if (w == CHUNKS) {
            printf("chunks %s ours=%d:", names[w], ours.n_allocs);
            for (int i = 0; i < ours.n_allocs; i++) printf(" %zu", ours.allocs[i]);
            printf("  stock=%d:", stock.n_allocs);
            for (int i = 0; i < stock.n_allocs; i++) printf(" %zu", stock.allocs[i]);
            printf("\n");
            /* several chunks, none past the max size unless one tensor is larger, as stock's */
            CHECK(ours.n_allocs > 1);
            CHECK(ours.n_allocs == stock.n_allocs);
            for (int i = 0; i < ours.n_allocs && i < stock.n_allocs; i++) {
                CHECK(ours.allocs[i] == stock.allocs[i]);
                CHECK(ours.allocs[i] <= (size_t) K * B * sizeof(float));
            }
        }
        /* the input reads back as written unless an output now holds its bytes (in place) */
        recompute_after_cancel((enum which) w, w == CPU_REUSE);
        fake_max_size = 0;
    }

    GB(buffer_free)(wbuf);
    G(free)(wctx);
    GB(free)(fake);
    GB(free)(cpu);
    GB(free)(cpu_worker);
    printf("compute_buffers %s (%s): %d checks, %d failed\n", PREFIX, GGML_RS_TEST_MODE, n_checks, n_failed);
    return n_failed ? 1 : 0;
}
