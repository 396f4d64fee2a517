/*
 * The scheduler with a GPU's traits, ours vs stock (issue 45; docs/sched-states.md "GPU traits").
 *
 * "FAKE0" / "FAKE1" are fake GPU devices: device memory (a buffer type that is not host), a pinned
 * host buffer type ("FAKE_Host", is_host, what llama.cpp gives the CPU backend as its compute
 * buffer type), async set / get / copy, events, offload_op (ops with a batch of >= 32 rows) and,
 * on the 2026 revision, graph_optimize (swaps the first two adjacent independent nodes of a
 * split). They run MUL_MAT, MUL and ADD (and views) with a CPU backend of their own; GET_ROWS and
 * SQR stay on the CPU. Every call the scheduler makes into them, into their buffers and into the
 * CPU backend (synchronize, compute) is printed to stdout as a trace, with the outputs; the
 * program checks the outputs against values computed here and exits non-zero on a mismatch.
 * ctest runs it on stock's ggml-backend.cpp (sched_gpu_<p>_stock) and compares our library's
 * printout (static, shared) with stock's byte for byte (sched_gpu_compare.sh).
 *
 * Cases: (a) weights on FAKE0, (b) a weight in a CPU buffer: offloaded to FAKE0 at a batch of 32,
 * left on the CPU at 8, (c) two FAKE devices and parallel = true (pipeline copies, events), (d) MoE
 * experts in a CPU buffer, their MUL_MAT_ID offloaded (2026: only the used experts copied), (e) as
 * (a) with an eval callback that observes two nodes;
 * each over a few rounds with changing inputs, as llama.cpp runs its graphs (reset, alloc_graph,
 * set inputs, compute_async, get_tensor_async of the output, synchronize).
 */
#include <stdarg.h>
#include <stdint.h>
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

static void tr(const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

static int n_failed;
#define CHECK(cond) do { if (!(cond)) { n_failed++; printf("CHECK FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

/* ---- the fake GPU devices ---- */
enum { N_DEV = 2 };
struct fdev {
    struct G(backend_device) dev;
    struct G(backend_buffer_type) buft;
    char name[8];
    int n_events;
};
static struct fdev fdevs[N_DEV];
static struct G(backend_buffer_type) host_buft;
static GB(t) cpu_worker; /* computes FAKE's graphs */
static struct GB(buffer_i) cpu_buf_iface; /* the CPU buffer's functions, wrapped below */

static int dev_index(GB(dev_t) d) { return (int) ((struct fdev *) d - fdevs); }
static bool is_fake_buft(GB(buffer_type_t) b) {
    for (int i = 0; i < N_DEV; i++) if (b == &fdevs[i].buft) return true;
    return false;
}
static const char * buf_name(GB(buffer_t) b) { return b ? b->buft->iface.get_name(b->buft) : "(none)"; }

/* buffers: the CPU buffer's functions, each call traced */
static void tb_memset(GB(buffer_t) b, tensor_t * t, uint8_t v, size_t off, size_t size) {
    tr("  %s.memset %s %d off=%zu size=%zu", buf_name(b), t->name, v, off, size);
    cpu_buf_iface.memset_tensor(b, t, v, off, size);
}
static void tb_set(GB(buffer_t) b, tensor_t * t, const void * data, size_t off, size_t size) {
    tr("  %s.set_tensor %s off=%zu size=%zu", buf_name(b), t->name, off, size);
    cpu_buf_iface.set_tensor(b, t, data, off, size);
}
static void tb_get(GB(buffer_t) b, const tensor_t * t, void * data, size_t off, size_t size) {
    tr("  %s.get_tensor %s off=%zu size=%zu", buf_name(b), t->name, off, size);
    cpu_buf_iface.get_tensor(b, t, data, off, size);
}
static bool tb_cpy(GB(buffer_t) b, const tensor_t * src, tensor_t * dst) {
    bool ok = cpu_buf_iface.cpy_tensor(b, src, dst);
    tr("  %s.cpy_tensor %s (%s) -> %s: %s", buf_name(b), src->name, buf_name(src->buffer), dst->name, ok ? "yes" : "no");
    return ok;
}
static void tb_clear(GB(buffer_t) b, uint8_t v) {
    tr("  %s.clear %d", buf_name(b), v);
    cpu_buf_iface.clear(b, v);
}
static void tb_free(GB(buffer_t) b) {
    tr("  %s.free_buffer", buf_name(b));
    cpu_buf_iface.free_buffer(b);
}

static const char * buft_name(GB(buffer_type_t) b) {
    return b == &host_buft ? "FAKE_Host" : fdevs[dev_index(b->device)].name;
}
static size_t buft_align(GB(buffer_type_t) b) { (void) b; return 32; }
static bool buft_is_host(GB(buffer_type_t) b) { return b == &host_buft; }
static GB(buffer_t) buft_alloc(GB(buffer_type_t) buft, size_t size) {
    /* host memory behind it; the fake GPU's is labelled device memory (not host) */
    GB(buffer_t) b = GB(buft_alloc_buffer)(GB(cpu_buffer_type)(), size);
    if (!b) return NULL;
    cpu_buf_iface = b->iface;
    b->buft = buft;
    b->iface.free_buffer = tb_free;
    b->iface.memset_tensor = tb_memset;
    b->iface.set_tensor = tb_set;
    b->iface.get_tensor = tb_get;
    b->iface.cpy_tensor = tb_cpy;
    b->iface.clear = tb_clear;
    tr("  %s.alloc_buffer", buft_name(buft));
    fprintf(stderr, "%s.alloc_buffer %zu bytes\n", buft_name(buft), size);
    return b;
}

/* backends */
static struct fdev * be_dev(GB(t) be) { return (struct fdev *) be->device; }
static const char * fake_name(GB(t) be) { return be_dev(be)->name; }
static void fake_free(GB(t) be) { free(be); }
static void fake_set_async(GB(t) be, tensor_t * t, const void * data, size_t off, size_t size) {
    tr("  %s set_tensor_async %s (%s) off=%zu size=%zu", fake_name(be), t->name, buf_name(t->buffer), off, size);
    memcpy((char *) t->data + off, data, size);
}
static void fake_get_async(GB(t) be, const tensor_t * t, void * data, size_t off, size_t size) {
    tr("  %s get_tensor_async %s (%s) off=%zu size=%zu", fake_name(be), t->name, buf_name(t->buffer), off, size);
    memcpy(data, (const char *) t->data + off, size);
}
/* device to device (any FAKE) and pinned host to device: yes; from a plain CPU buffer: no */
static bool fake_cpy_async(GB(t) src_be, GB(t) dst_be, const tensor_t * src, tensor_t * dst) {
    bool ok = dst->buffer && is_fake_buft(dst->buffer->buft) && src->buffer &&
              (is_fake_buft(src->buffer->buft) || src->buffer->buft == &host_buft);
    tr("  %s cpy_tensor_async from %s: %s (%s) -> %s (%s): %s", fake_name(dst_be), GB(name)(src_be),
       src->name, buf_name(src->buffer), dst->name, buf_name(dst->buffer), ok ? "yes" : "no");
    if (ok) memcpy(dst->data, src->data, G(nbytes)(src));
    return ok;
}
static void fake_sync(GB(t) be) { tr("  %s synchronize", fake_name(be)); }

static void print_graph(const char * who, const char * what, struct G(cgraph) * g) {
    printf("  %s %s:", who, what);
    for (int i = 0; i < G(graph_n_nodes)(g); i++) {
        tensor_t * n = G(graph_node)(g, i);
        printf(" %s=%s(", n->name, G(op_name)(n->op));
        for (int j = 0; j < C(MAX_SRC) && n->src[j]; j++) printf("%s%s", j ? "," : "", n->src[j]->name);
        printf(")");
    }
    putchar('\n');
}
static bool fake_supports_op(GB(dev_t) d, const tensor_t * op);
static enum G(status) fake_compute(GB(t) be, struct G(cgraph) * g) {
    print_graph(fake_name(be), "compute", g);
    for (int i = 0; i < G(graph_n_nodes)(g); i++) {
        if (!fake_supports_op(be->device, G(graph_node)(g, i))) {
            tr("  %s asked to compute %s", fake_name(be), G(op_name)(G(graph_node)(g, i)->op));
            n_failed++;
            return C(STATUS_FAILED);
        }
    }
    return GB(graph_compute)(cpu_worker, g);
}
static void fake_event_record(GB(t) be, GB(event_t) ev) {
    tr("  %s event_record e%d.%d", fake_name(be), dev_index(ev->device), (int) (intptr_t) ev->context);
}
static void fake_event_wait(GB(t) be, GB(event_t) ev) {
    tr("  %s event_wait e%d.%d", fake_name(be), dev_index(ev->device), (int) (intptr_t) ev->context);
}
#if defined(TEST_API_2026)
static bool depends(const tensor_t * n, const tensor_t * on) {
    for (int j = 0; j < C(MAX_SRC); j++) {
        const tensor_t * s = n->src[j];
        if (s && (s == on || s->view_src == on)) return true;
    }
    return false;
}
/* a fixed reorder: the first two adjacent nodes where the second does not read the first swap */
static void fake_graph_optimize(GB(t) be, struct G(cgraph) * g) {
    print_graph(fake_name(be), "graph_optimize", g);
    int n = G(graph_n_nodes)(g);
    for (int i = 0; i + 1 < n; i++) {
        tensor_t * a = G(graph_node)(g, i), * b = G(graph_node)(g, i + 1);
        if (a->op == C(OP_MUL_MAT) && b->op == C(OP_MUL_MAT) && !depends(b, a)) {
            G(graph_nodes)(g)[i] = b;
            G(graph_nodes)(g)[i + 1] = a;
            tr("  %s graph_optimize: swapped %s and %s", fake_name(be), a->name, b->name);
            break;
        }
    }
}
#endif

static GB(t) fake_backend(int i) {
    static G(guid) guid = {0x45, 0x47, 0x50, 0x55};
    GB(t) be = calloc(1, sizeof(*be));
    be->guid = &guid;
    be->iface.get_name = fake_name;
    be->iface.free = fake_free;
    be->iface.set_tensor_async = fake_set_async;
    be->iface.get_tensor_async = fake_get_async;
    be->iface.cpy_tensor_async = fake_cpy_async;
    be->iface.synchronize = fake_sync;
    be->iface.graph_compute = fake_compute;
    be->iface.event_record = fake_event_record;
    be->iface.event_wait = fake_event_wait;
#if defined(TEST_API_2026)
    be->iface.graph_optimize = fake_graph_optimize;
#endif
    be->device = &fdevs[i].dev;
    return be;
}

/* devices */
static const char * dev_name(GB(dev_t) d) { return ((struct fdev *) d)->name; }
static void dev_memory(GB(dev_t) d, size_t * f, size_t * t) { (void) d; *f = 1u << 30; *t = 1u << 30; }
static enum GB(dev_type) dev_type(GB(dev_t) d) { (void) d; return C(BACKEND_DEVICE_TYPE_GPU); }
static GB(buffer_type_t) dev_buft(GB(dev_t) d) { return &((struct fdev *) d)->buft; }
static GB(buffer_type_t) dev_host_buft(GB(dev_t) d) { (void) d; return &host_buft; }
static bool fake_supports_op(GB(dev_t) d, const tensor_t * op) {
    (void) d;
    switch (op->op) {
    case C(OP_MUL_MAT): case C(OP_MUL_MAT_ID): return op->src[0]->type == C(TYPE_F32) && op->src[1]->type == C(TYPE_F32);
    case C(OP_MUL): case C(OP_ADD): case C(OP_NONE): case C(OP_VIEW): case C(OP_RESHAPE): return true;
    default: return false;
    }
}
static bool dev_supports_buft(GB(dev_t) d, GB(buffer_type_t) b) { return b == &((struct fdev *) d)->buft; }
/* as ggml-cuda: a batch of at least 32 rows (MUL_MAT_ID: tokens, ne[2]), never GET_ROWS */
static bool dev_offload_op(GB(dev_t) d, const tensor_t * op) {
    (void) d;
    const int64_t batch = op->op == C(OP_MUL_MAT_ID) ? op->ne[2] : op->ne[1];
    return op->op != C(OP_GET_ROWS) && batch >= 32;
}
static GB(event_t) dev_event_new(GB(dev_t) d) {
    struct fdev * f = (struct fdev *) d;
    GB(event_t) ev = calloc(1, sizeof(*ev));
    ev->device = d;
    ev->context = (void *) (intptr_t) f->n_events++;
    tr("  %s event_new e%d.%d", f->name, dev_index(d), (int) (intptr_t) ev->context);
    return ev;
}
static void dev_event_free(GB(dev_t) d, GB(event_t) ev) {
    tr("  %s event_free e%d.%d", dev_name(d), dev_index(d), (int) (intptr_t) ev->context);
    free(ev);
}
static void dev_event_sync(GB(dev_t) d, GB(event_t) ev) {
    tr("  %s event_synchronize e%d.%d", dev_name(d), dev_index(d), (int) (intptr_t) ev->context);
}

static void fake_setup(void) {
    memset(fdevs, 0, sizeof(fdevs));
    memset(&host_buft, 0, sizeof(host_buft));
    for (int i = 0; i < N_DEV; i++) {
        struct fdev * f = &fdevs[i];
        snprintf(f->name, sizeof(f->name), "FAKE%d", i);
        f->dev.iface.get_name = dev_name;
        f->dev.iface.get_description = dev_name;
        f->dev.iface.get_memory = dev_memory;
        f->dev.iface.get_type = dev_type;
        f->dev.iface.get_buffer_type = dev_buft;
        f->dev.iface.get_host_buffer_type = dev_host_buft;
        f->dev.iface.supports_op = fake_supports_op;
        f->dev.iface.supports_buft = dev_supports_buft;
        f->dev.iface.offload_op = dev_offload_op;
        f->dev.iface.event_new = dev_event_new;
        f->dev.iface.event_free = dev_event_free;
        f->dev.iface.event_synchronize = dev_event_sync;
        f->buft.iface.get_name = buft_name;
        f->buft.iface.alloc_buffer = buft_alloc;
        f->buft.iface.get_alignment = buft_align;
        f->buft.iface.is_host = buft_is_host;
        f->buft.device = &f->dev;
    }
    host_buft.iface.get_name = buft_name;
    host_buft.iface.alloc_buffer = buft_alloc;
    host_buft.iface.get_alignment = buft_align;
    host_buft.iface.is_host = buft_is_host;
    host_buft.device = &fdevs[0].dev; /* as ggml-cuda's pinned host buffer type: device 0 */
}

/* the CPU backend: ggml-cpu's, its synchronize and compute traced */
static enum G(status) (*cpu_compute_orig)(GB(t), struct G(cgraph) *);
static enum G(status) cpu_compute(GB(t) be, struct G(cgraph) * g) {
    print_graph("CPU", "compute", g);
    return cpu_compute_orig(be, g);
}
static void cpu_sync(GB(t) be) { (void) be; tr("  CPU synchronize"); }

/* ---- the model ---- */
enum { E = 8, V = 10 };

static struct G(context) * new_ctx(size_t n) {
    struct G(init_params) p = { G(tensor_overhead)() * n + G(graph_overhead)(), NULL, true };
    return G(init)(p);
}
static tensor_t * weight(struct G(context) * ctx, const char * name, int64_t ne0, int64_t ne1) {
    tensor_t * t = ne1 ? G(new_tensor_2d)(ctx, C(TYPE_F32), ne0, ne1) : G(new_tensor_1d)(ctx, C(TYPE_F32), ne0);
    G(set_name)(t, name);
    return t;
}
/* small integers: every product and sum below is exact in float */
static void fill(tensor_t * t, int salt, int lo, int span) {
    int64_t n = G(nelements)(t);
    float * v = malloc(n * sizeof(float));
    for (int64_t i = 0; i < n; i++) v[i] = (float) (lo + (int) ((i * 7 + salt * 3) % span));
    GB(tensor_set)(t, v, 0, n * sizeof(float));
    free(v);
}
static void get_all(const tensor_t * t, float * v) {
    /* through a plain (untraced) read of the host memory behind every fake buffer */
    memcpy(v, t->data, G(nbytes)(t));
}

/* out[m][n] = sum_k a[k][m] * b[k][n], a: [K, M], b: [K, N] (ggml's mul_mat) */
static void ref_mul_mat(const float * a, const float * b, float * out, int K, int M, int N) {
    for (int n = 0; n < N; n++)
        for (int m = 0; m < M; m++) {
            float s = 0;
            for (int k = 0; k < K; k++) s += a[m * K + k] * b[n * K + k];
            out[n * M + m] = s;
        }
}

static GB(t) cpu;
static GB(t) fake[N_DEV];

struct weights {
    struct G(context) * ctx_gpu[N_DEV], * ctx_cpu;
    GB(buffer_t) buf_gpu[N_DEV], buf_cpu;
    tensor_t * tok, * wq, * wk, * nrm, * wo; /* case a / b */
    tensor_t * w0, * b0, * w1, * n1, * w2;   /* case c */
};

static GB(buffer_t) alloc_weights(struct G(context) * ctx, GB(buffer_type_t) buft) {
    GB(buffer_t) b = G(backend_alloc_ctx_tensors_from_buft)(ctx, buft);
    GB(buffer_set_usage)(b, C(BACKEND_BUFFER_USAGE_WEIGHTS));
    return b;
}

static void print_assignment(GB(sched_t) s, struct G(cgraph) * g) {
    printf("  splits=%d copies=%d:", GB(sched_get_n_splits)(s), GB(sched_get_n_copies)(s));
    for (int i = 0; i < G(graph_n_nodes)(g); i++) {
        tensor_t * n = G(graph_node)(g, i);
        GB(t) b = GB(sched_get_tensor_backend)(s, n);
        printf(" %s@%s", n->name, b ? GB(name)(b) : "-");
    }
    putchar('\n');
}

/* one round as llama.cpp runs a batch: reset, alloc, set inputs, compute_async, read the output
 * asynchronously from its backend, synchronize */
static void run_round(GB(sched_t) s, struct G(cgraph) * g, tensor_t * ids, const int32_t * idv,
                      tensor_t * sc, const float * scv, tensor_t * out, float * got) {
    tr("-- sched_reset + alloc_graph");
    GB(sched_reset)(s);
    CHECK(GB(sched_alloc_graph)(s, g));
    print_assignment(s, g);
    tr("-- set inputs");
    GB(tensor_set)(ids, idv, 0, G(nbytes)(ids));
    GB(tensor_set)(sc, scv, 0, G(nbytes)(sc));
    tr("-- graph_compute_async");
    CHECK(GB(sched_graph_compute_async)(s, g) == C(STATUS_SUCCESS));
    tr("-- tensor_get_async (output)");
    GB(t) ob = GB(sched_get_tensor_backend)(s, out);
    CHECK(ob != NULL);
    if (ob) GB(tensor_get_async)(ob, out, got, 0, G(nbytes)(out));
    tr("-- sched_synchronize");
    GB(sched_synchronize)(s);
}

static void print_out(const float * got, const float * want, int n) {
    double sum = 0;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        sum += got[i];
        if (got[i] != want[i]) bad++;
    }
    printf("  out: n=%d sum=%.1f first:", n, sum);
    for (int i = 0; i < 8 && i < n; i++) printf(" %.1f", got[i]);
    printf(" mismatches=%d\n", bad);
    CHECK(bad == 0);
}

/* the eval callback of case e (llama.cpp's cb_eval, as imatrix / eval-callback use it): observes
 * "qk" and "out", reading them with tensor_get, and lets the compute go on */
static bool eval_cb(tensor_t * t, bool ask, void * ud) {
    (void) ud;
    const bool want = strcmp(t->name, "qk") == 0 || strcmp(t->name, "out") == 0;
    if (ask) return want;
    float v[4];
    GB(tensor_get)(t, v, 0, sizeof(v));
    tr("  eval_cb observes %s (%s): %.1f %.1f %.1f %.1f", t->name, buf_name(t->buffer), v[0], v[1], v[2], v[3]);
    return true;
}

/* (a) weights on FAKE0; (b) wo in a CPU buffer: the last MUL_MAT offloaded at T = 32, not at 8;
 * (e) as (a) with an eval callback */
static void case_ab(char which) {
    const bool wo_on_cpu = which == 'b';
    printf("==== case %c: %s\n", which, wo_on_cpu ? "a weight in a CPU buffer, batches of 32 (offload) and 8"
                                   : which == 'e' ? "weights on the GPU, an eval callback observing two nodes"
                                                : "weights on the GPU");
    struct weights w = {0};
    w.ctx_gpu[0] = new_ctx(8);
    w.ctx_cpu = new_ctx(8);
    w.tok = weight(w.ctx_cpu, "tok", E, V);
    w.wq = weight(w.ctx_gpu[0], "wq", E, E);
    w.wk = weight(w.ctx_gpu[0], "wk", E, E);
    w.nrm = weight(w.ctx_gpu[0], "nrm", E, 0);
    w.wo = weight(wo_on_cpu ? w.ctx_cpu : w.ctx_gpu[0], "wo", E, E);
    tr("-- weights");
    w.buf_gpu[0] = alloc_weights(w.ctx_gpu[0], &fdevs[0].buft);
    w.buf_cpu = alloc_weights(w.ctx_cpu, GB(cpu_buffer_type)());
    fill(w.tok, 1, -2, 5);
    fill(w.wq, 2, -1, 3);
    fill(w.wk, 3, -1, 3);
    fill(w.nrm, 4, 1, 2);
    fill(w.wo, 5, -1, 3);

    tr("-- sched_new");
    GB(t) backends[2] = { fake[0], cpu };
    GB(buffer_type_t) bufts[2] = { &fdevs[0].buft, &host_buft };
    GB(sched_t) s = TEST_SCHED_NEW(GB(sched_new), backends, bufts, 2, 128, false, true);
    CHECK(s != NULL);
    if (which == 'e') GB(sched_set_eval_callback)(s, eval_cb, NULL);

    const int batches[] = { 32, 8, 32 };
    for (int r = -1; r < 3; r++) {
        /* r = -1: the worst-case graph reserved at start-up (a graph of its own, as llama.cpp's) */
        const int T = r < 0 ? 32 : wo_on_cpu ? batches[r] : 8 + 4 * r;
        struct G(context) * ctx = new_ctx(32);
        tensor_t * ids = G(new_tensor_1d)(ctx, C(TYPE_I32), T);
        G(set_name)(ids, "ids");
        G(set_input)(ids);
        tensor_t * x = G(get_rows)(ctx, w.tok, ids); G(set_name)(x, "x");
        tensor_t * a = G(mul_mat)(ctx, w.wq, x); G(set_name)(a, "q");
        tensor_t * b = G(mul_mat)(ctx, w.wk, x); G(set_name)(b, "k");
        tensor_t * c = G(add)(ctx, a, b); G(set_name)(c, "qk");
        tensor_t * sc = G(new_tensor_1d)(ctx, C(TYPE_F32), E); /* an input the GPU reads */
        G(set_name)(sc, "scale");
        G(set_input)(sc);
        tensor_t * d0 = G(mul)(ctx, c, w.nrm); G(set_name)(d0, "normed");
        tensor_t * d = G(mul)(ctx, d0, sc); G(set_name)(d, "scaled");
        tensor_t * e = G(sqr)(ctx, d); G(set_name)(e, "sq");
        tensor_t * out = G(mul_mat)(ctx, w.wo, e); G(set_name)(out, "out");
        G(set_output)(out);
        struct G(cgraph) * g = G(new_graph)(ctx);
        G(build_forward_expand)(g, out);
        if (r < 0) {
            tr("-- sched_reserve (T=%d)", T);
            CHECK(GB(sched_reserve)(s, g));
            G(free)(ctx);
            continue;
        }
        int32_t * idv = malloc(T * sizeof(int32_t));
        for (int i = 0; i < T; i++) idv[i] = (i * 3 + r * 7 + 1) % V;
        printf("== case %c round %d (T=%d)\n", which, r, T);
        float * got = calloc(E * T, sizeof(float));
        float scv[E];
        for (int i = 0; i < E; i++) scv[i] = (float) (1 + (i + r) % 2);
        run_round(s, g, ids, idv, sc, scv, out, got);

        /* the reference */
        float tok[E * V], wq[E * E], wk[E * E], nrm[E], wo[E * E];
        get_all(w.tok, tok); get_all(w.wq, wq); get_all(w.wk, wk); get_all(w.nrm, nrm); get_all(w.wo, wo);
        float * xv = malloc(E * T * sizeof(float)), * qv = malloc(E * T * sizeof(float)),
              * kv = malloc(E * T * sizeof(float)), * want = malloc(E * T * sizeof(float));
        for (int t = 0; t < T; t++) memcpy(xv + t * E, tok + idv[t] * E, E * sizeof(float));
        ref_mul_mat(wq, xv, qv, E, E, T);
        ref_mul_mat(wk, xv, kv, E, E, T);
        for (int t = 0; t < T; t++)
            for (int i = 0; i < E; i++) {
                float v = (qv[t * E + i] + kv[t * E + i]) * nrm[i] * scv[i];
                xv[t * E + i] = v * v;
            }
        ref_mul_mat(wo, xv, want, E, E, T);
        print_out(got, want, E * T);
        free(xv); free(qv); free(kv); free(want); free(got); free(idv);
        G(free)(ctx);
    }
    tr("-- sched_free");
    GB(sched_free)(s);
    tr("-- weights free");
    GB(buffer_free)(w.buf_gpu[0]);
    GB(buffer_free)(w.buf_cpu);
    G(free)(w.ctx_gpu[0]);
    G(free)(w.ctx_cpu);
}

/* (c) two GPUs (layer 0 on FAKE0, layer 1 on FAKE1) and parallel = true */
static void case_c(void) {
    printf("==== case c: two GPU devices, parallel (pipeline copies, events)\n");
    struct weights w = {0};
    for (int i = 0; i < N_DEV; i++) w.ctx_gpu[i] = new_ctx(8);
    w.ctx_cpu = new_ctx(4);
    w.tok = weight(w.ctx_cpu, "tok", E, V);
    w.w0 = weight(w.ctx_gpu[0], "w0", E, E);
    w.b0 = weight(w.ctx_gpu[0], "b0", E, 0);
    w.w1 = weight(w.ctx_gpu[1], "w1", E, E);
    w.n1 = weight(w.ctx_gpu[1], "n1", E, 0);
    w.w2 = weight(w.ctx_gpu[1], "w2", E, E);
    tr("-- weights");
    for (int i = 0; i < N_DEV; i++) w.buf_gpu[i] = alloc_weights(w.ctx_gpu[i], &fdevs[i].buft);
    w.buf_cpu = alloc_weights(w.ctx_cpu, GB(cpu_buffer_type)());
    fill(w.tok, 1, -2, 5);
    fill(w.w0, 2, -1, 3);
    fill(w.b0, 3, -2, 5);
    fill(w.w1, 4, -1, 3);
    fill(w.n1, 5, 1, 2);
    fill(w.w2, 6, -1, 3);

    tr("-- sched_new");
    GB(t) backends[3] = { fake[0], fake[1], cpu };
    GB(buffer_type_t) bufts[3] = { &fdevs[0].buft, &fdevs[1].buft, &host_buft };
    GB(sched_t) s = TEST_SCHED_NEW(GB(sched_new), backends, bufts, 3, 128, true, true);
    CHECK(s != NULL);

    const int T = 6;
    for (int r = -1; r < 4; r++) {
        struct G(context) * ctx = new_ctx(32);
        tensor_t * ids = G(new_tensor_1d)(ctx, C(TYPE_I32), T);
        G(set_name)(ids, "ids");
        G(set_input)(ids);
        tensor_t * x = G(get_rows)(ctx, w.tok, ids); G(set_name)(x, "x");
        tensor_t * a = G(mul_mat)(ctx, w.w0, x); G(set_name)(a, "h0");
        tensor_t * b = G(add)(ctx, a, w.b0); G(set_name)(b, "h0b");
        tensor_t * c = G(mul_mat)(ctx, w.w1, b); G(set_name)(c, "h1");
        tensor_t * sc = G(new_tensor_1d)(ctx, C(TYPE_F32), E); /* an input FAKE1 reads */
        G(set_name)(sc, "scale");
        G(set_input)(sc);
        tensor_t * d0 = G(mul)(ctx, c, w.n1); G(set_name)(d0, "h1n");
        tensor_t * d = G(mul)(ctx, d0, sc); G(set_name)(d, "h1s");
        tensor_t * e = G(sqr)(ctx, d); G(set_name)(e, "sq");
        tensor_t * out = G(mul_mat)(ctx, w.w2, e); G(set_name)(out, "out");
        G(set_output)(out);
        struct G(cgraph) * g = G(new_graph)(ctx);
        G(build_forward_expand)(g, out);
        if (r < 0) {
            tr("-- sched_reserve");
            CHECK(GB(sched_reserve)(s, g));
            G(free)(ctx);
            continue;
        }
        int32_t idv[T];
        for (int i = 0; i < T; i++) idv[i] = (i * 3 + r * 7 + 2) % V;
        printf("== case c round %d (T=%d)\n", r, T);
        float got[E * T];
        float scv[E];
        for (int i = 0; i < E; i++) scv[i] = (float) (1 + (i + r) % 2);
        run_round(s, g, ids, idv, sc, scv, out, got);

        float tok[E * V], w0[E * E], b0[E], w1[E * E], n1[E], w2[E * E];
        get_all(w.tok, tok); get_all(w.w0, w0); get_all(w.b0, b0);
        get_all(w.w1, w1); get_all(w.n1, n1); get_all(w.w2, w2);
        float xv[E * T], hv[E * T], want[E * T];
        for (int t = 0; t < T; t++) memcpy(xv + t * E, tok + idv[t] * E, E * sizeof(float));
        ref_mul_mat(w0, xv, hv, E, E, T);
        for (int t = 0; t < T; t++) for (int i = 0; i < E; i++) hv[t * E + i] += b0[i];
        ref_mul_mat(w1, hv, xv, E, E, T);
        for (int t = 0; t < T; t++)
            for (int i = 0; i < E; i++) {
                float v = xv[t * E + i] * n1[i] * scv[i];
                xv[t * E + i] = v * v;
            }
        ref_mul_mat(w2, xv, want, E, E, T);
        print_out(got, want, E * T);
        G(free)(ctx);
    }
    tr("-- sched_free");
    GB(sched_free)(s);
    tr("-- weights free");
    for (int i = 0; i < N_DEV; i++) {
        GB(buffer_free)(w.buf_gpu[i]);
        G(free)(w.ctx_gpu[i]);
    }
    GB(buffer_free)(w.buf_cpu);
    G(free)(w.ctx_cpu);
}

/* (d) MoE: the experts in a CPU buffer, their MUL_MAT_ID offloaded to FAKE0 at 32 tokens (2026:
 * only the experts the ids use are copied), on the CPU at 8 */
enum { NX = 8, NU = 2 };
static void case_d(void) {
    printf("==== case d: MoE experts in a CPU buffer, MUL_MAT_ID offloaded at 32 tokens\n");
    struct G(context) * ctx_cpu = new_ctx(4), * ctx_gpu = new_ctx(4);
    tensor_t * tok = weight(ctx_cpu, "tok", E, V);
    tensor_t * exps = G(new_tensor_3d)(ctx_cpu, C(TYPE_F32), E, E, NX);
    G(set_name)(exps, "exps");
    tensor_t * bx = weight(ctx_gpu, "bx", E, 0);
    tr("-- weights");
    GB(buffer_t) buf_cpu = alloc_weights(ctx_cpu, GB(cpu_buffer_type)());
    GB(buffer_t) buf_gpu = alloc_weights(ctx_gpu, &fdevs[0].buft);
    fill(tok, 1, -2, 5);
    fill(exps, 7, -1, 3);
    fill(bx, 8, -3, 7);

    tr("-- sched_new");
    GB(t) backends[2] = { fake[0], cpu };
    GB(buffer_type_t) bufts[2] = { &fdevs[0].buft, &host_buft };
    GB(sched_t) s = TEST_SCHED_NEW(GB(sched_new), backends, bufts, 2, 128, false, true);
    CHECK(s != NULL);

    /* the experts each round uses: runs 1-2 and 5; 0 and 7 (the last: no padding); one; all */
    static const int sets[4][NX] = { {1, 2, 5, -1}, {0, 7, -1}, {3, -1}, {0, 1, 2, 3, 4, 5, 6, 7} };
    static const int n_sets[4] = { 3, 2, 1, 8 };
    const int batches[4] = { 32, 32, 8, 32 };
    for (int r = -1; r < 4; r++) {
        const int T = r < 0 ? 32 : batches[r];
        struct G(context) * ctx = new_ctx(32);
        tensor_t * ids = G(new_tensor_1d)(ctx, C(TYPE_I32), T);
        G(set_name)(ids, "ids");
        G(set_input)(ids);
        tensor_t * eids = G(new_tensor_2d)(ctx, C(TYPE_I32), NU, T);
        G(set_name)(eids, "eids");
        G(set_input)(eids);
        tensor_t * x = G(get_rows)(ctx, tok, ids); G(set_name)(x, "x");
        tensor_t * x3 = G(reshape_3d)(ctx, x, E, 1, T); G(set_name)(x3, "x3");
        tensor_t * moe = G(mul_mat_id)(ctx, exps, x3, eids); G(set_name)(moe, "moe");
        tensor_t * out = G(add)(ctx, moe, bx); G(set_name)(out, "out");
        G(set_output)(out);
        struct G(cgraph) * g = G(new_graph)(ctx);
        G(build_forward_expand)(g, out);
        if (r < 0) {
            tr("-- sched_reserve (T=%d)", T);
            CHECK(GB(sched_reserve)(s, g));
            G(free)(ctx);
            continue;
        }
        int32_t * idv = malloc(T * sizeof(int32_t)), * eidv = malloc(NU * T * sizeof(int32_t));
        for (int i = 0; i < T; i++) idv[i] = (i * 3 + r * 7 + 1) % V;
        for (int i = 0; i < NU * T; i++) eidv[i] = sets[r][(i * 5 + r) % n_sets[r]];
        printf("== case d round %d (T=%d)\n", r, T);
        float * got = calloc(E * NU * T, sizeof(float)), * want = malloc(E * NU * T * sizeof(float));
        tr("-- sched_reset + alloc_graph");
        GB(sched_reset)(s);
        CHECK(GB(sched_alloc_graph)(s, g));
        print_assignment(s, g);
        tr("-- set inputs");
        GB(tensor_set)(ids, idv, 0, G(nbytes)(ids));
        GB(tensor_set)(eids, eidv, 0, G(nbytes)(eids));
        tr("-- graph_compute_async");
        CHECK(GB(sched_graph_compute_async)(s, g) == C(STATUS_SUCCESS));
        tr("-- tensor_get_async (output)");
        GB(t) ob = GB(sched_get_tensor_backend)(s, out);
        CHECK(ob != NULL);
        if (ob) GB(tensor_get_async)(ob, out, got, 0, G(nbytes)(out));
        tr("-- sched_synchronize");
        GB(sched_synchronize)(s);

        float tokv[E * V], ev[E * E * NX], bv[E];
        get_all(tok, tokv); get_all(exps, ev); get_all(bx, bv);
        for (int t = 0; t < T; t++)
            for (int u = 0; u < NU; u++) {
                const float * w = ev + eidv[t * NU + u] * E * E;
                const float * xv = tokv + idv[t] * E;
                for (int m = 0; m < E; m++) {
                    float acc = 0;
                    for (int k = 0; k < E; k++) acc += w[m * E + k] * xv[k];
                    want[(t * NU + u) * E + m] = acc + bv[m];
                }
            }
        print_out(got, want, E * NU * T);
        free(got); free(want); free(idv); free(eidv);
        G(free)(ctx);
    }
    tr("-- sched_free");
    GB(sched_free)(s);
    tr("-- weights free");
    GB(buffer_free)(buf_gpu);
    GB(buffer_free)(buf_cpu);
    G(free)(ctx_gpu);
    G(free)(ctx_cpu);
}

int main(int argc, char ** argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    fake_setup();
    cpu_worker = GB(cpu_init)();
    GB(cpu_set_n_threads)(cpu_worker, 1);
    cpu = GB(cpu_init)();
    GB(cpu_set_n_threads)(cpu, 1);
    cpu_compute_orig = cpu->iface.graph_compute;
    cpu->iface.graph_compute = cpu_compute;
    cpu->iface.synchronize = cpu_sync;
    for (int i = 0; i < N_DEV; i++) fake[i] = fake_backend(i);

    const char * only = argc > 1 ? argv[1] : "abcde";
    if (strchr(only, 'a')) case_ab('a');
    if (strchr(only, 'b')) case_ab('b');
    if (strchr(only, 'c')) case_c();
    if (strchr(only, 'd')) case_d();
    if (strchr(only, 'e')) case_ab('e');

    for (int i = 0; i < N_DEV; i++) GB(free)(fake[i]);
    GB(free)(cpu);
    GB(free)(cpu_worker);
    printf("sched_gpu: %s\n", n_failed ? "FAILED" : "ok");
    return n_failed ? 1 : 0;
}
