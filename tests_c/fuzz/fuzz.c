/*
 * libFuzzer harness for ggml-backend-rs (both prefixes: -DTEST_PREFIX_LM / -DTEST_PREFIX_WSP).
 *
 * The input bytes are a program: each command is one byte (modulo the number of commands) followed
 * by its argument bytes (missing bytes read as 0). Commands allocate buffers of random sizes
 * (0, small, impossible), wrap caller memory, build multi-buffers and buffers with incomplete
 * vtables, create tensors of random types and shapes (and views) in a no_alloc context, place
 * them at random addresses, read / write / memset / copy them with random offsets and sizes, and
 * drive a scheduler (1-2 backends: the host's CPU, a second CPU, or a fake accelerator with events;
 * optionally parallel) over small random graphs of ADD / MUL / SCALE in random orders of reserve,
 * alloc, set inputs, compute, reset, set_tensor_backend, eval callbacks, graph_copy and
 * compare_graph_backend. Everything is freed at the end of each input.
 *
 * The harness keeps the C contract the library cannot check (it never passes a pointer to freed
 * memory: tensors placed in a buffer are detached when the buffer is freed, a graph is dropped
 * when its scheduler is freed), so anything ASan reports is the library's (or the host's) fault.
 * Oracles besides ASan/LSan:
 *   - a panic caught inside the library ("internal error" in the log) aborts: a bug;
 *   - a graph computed right after alloc_graph + setting every input must equal, bit for bit, the
 *     same float operations done here.
 *
 * Built with clang -fsanitize=address,fuzzer by scripts/fuzz.sh (GGML_RS_FUZZ=ON); also built by
 * any compiler with replay_main.c as fuzz_replay_<p> (replays the committed corpus in ctest and
 * under valgrind).
 */
#ifndef _GNU_SOURCE
#    define _GNU_SOURCE
#endif
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-backend-impl.h"
#include "ggml-cpu.h"

#include "../test_prefix.h"

typedef struct G(tensor) tensor_t;
typedef GB(buffer_t) buffer_t;
typedef GB(t) backend_t;

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size);

/* ------------------------------------------------------------------ input reader */

static const uint8_t * in_p;
static size_t in_n;

static uint8_t u8(void) {
    if (in_n == 0) {
        return 0;
    }
    in_n--;
    return *in_p++;
}
static uint16_t u16(void) { uint16_t a = u8(); return (uint16_t) (a | (uint16_t) u8() << 8); }
static uint32_t u32(void) { uint32_t a = u16(); return a | (uint32_t) u16() << 16; }
static uint64_t u64(void) { uint64_t a = u32(); return a | (uint64_t) u32() << 32; }

/* sizes: 0, small, around a limit, impossible (never between 2 GiB and 1 TiB: ASan would map it) */
static size_t pick_size(size_t limit) {
    switch (u8() % 8) {
        case 0: return 0;
        case 1: return u8();
        case 2: case 3: return u16() % (limit + 1);
        case 4: return limit;
        case 5: return limit + 1 + u8() % 16;
        case 6: return SIZE_MAX - u8();
        default: return (SIZE_MAX / 2) + u32();
    }
}

/* ------------------------------------------------------------------ logging oracle */

static int errors_logged;
static void on_log(enum G(log_level) level, const char * text, void * ud) {
    (void) ud;
    if (getenv("FUZZ_VERBOSE")) {
        fprintf(stderr, "[log %d] %s", (int) level, text);
    }
    if (level == C(LOG_LEVEL_ERROR)) {
        errors_logged++;
    }
    if (strstr(text, "internal error")) {
        fprintf(stderr, "fuzz: the library caught a panic: %s", text);
        abort();
    }
}

#define FAIL(...) do { fprintf(stderr, "fuzz: " __VA_ARGS__); fprintf(stderr, "\n"); abort(); } while (0)

/* ------------------------------------------------------------------ fake accelerator (with events) */

static backend_t cpu, cpu2, fake, cpu_worker;

static const char * fbuft_name(GB(buffer_type_t) b) { (void) b; return "FAKE"; }
static size_t fbuft_align(GB(buffer_type_t) b) { (void) b; return 32; }
static bool fbuft_is_host(GB(buffer_type_t) b) { (void) b; return false; }
static buffer_t fbuft_alloc(GB(buffer_type_t) buft, size_t size) {
    buffer_t b = GB(buft_alloc_buffer)(GB(cpu_buffer_type)(), size);
    if (b) {
        b->buft = buft;
    }
    return b;
}
static struct G(backend_buffer_type) fake_buft = {
    .iface = { .get_name = fbuft_name, .alloc_buffer = fbuft_alloc, .get_alignment = fbuft_align, .is_host = fbuft_is_host },
};

static bool fake_op_ok(const tensor_t * op) {
    switch (op->op) {
        case C(OP_NONE): case C(OP_MUL): case C(OP_ADD): case C(OP_VIEW):
        case C(OP_RESHAPE): case C(OP_PERMUTE): case C(OP_TRANSPOSE):
            return op->type == C(TYPE_F32);
        default:
            return false;
    }
}
static const char * fb_name(backend_t be) { (void) be; return "FAKE"; }
static void fb_free(backend_t be) { (void) be; }
/* Known library issue (reported, see docs/bad-input.md "unsupported ops"): a node that no backend
 * supports is handed by the scheduler's last pass to its consumer's backend. FAKE then refuses
 * (as a real accelerator would fail or abort). Counted, and fatal unless FUZZ_LENIENT is set. */
static long unsupported_seen;
static bool unsupported_this_compute;
static void report_unsupported(void) {
    if (unsupported_seen) {
        fprintf(stderr, "fuzz: KNOWN ISSUE: the scheduler handed FAKE an op it does not support %ld time(s)\n", unsupported_seen);
    }
}
static enum G(status) fb_compute(backend_t be, struct G(cgraph) * g) {
    (void) be;
    for (int i = 0; i < G(graph_n_nodes)(g); i++) {
        if (!fake_op_ok(G(graph_node)(g, i))) {
            if (!getenv("FUZZ_LENIENT")) {
                FAIL("the scheduler gave FAKE an op it does not support: %s", G(op_name)(G(graph_node)(g, i)->op));
            }
            if (unsupported_seen++ == 0) {
                atexit(report_unsupported);
            }
            unsupported_this_compute = true;
            return C(STATUS_FAILED);
        }
    }
    return GB(graph_compute)(cpu_worker, g);
}
static int events_live;
static void fb_event_record(backend_t be, GB(event_t) e) { (void) be; (void) e; }
static void fb_event_wait(backend_t be, GB(event_t) e) { (void) be; (void) e; }

static struct G(backend_device) fake_dev;
static const char * fd_name(GB(dev_t) d) { (void) d; return "FAKE"; }
static void fd_memory(GB(dev_t) d, size_t * f, size_t * t) { (void) d; *f = 1; *t = 2; }
static enum GB(dev_type) fd_type(GB(dev_t) d) { (void) d; return C(BACKEND_DEVICE_TYPE_GPU); }
static GB(buffer_type_t) fd_buft(GB(dev_t) d) { (void) d; return &fake_buft; }
static bool fd_supports_op(GB(dev_t) d, const tensor_t * op) { (void) d; return fake_op_ok(op); }
static bool fd_supports_buft(GB(dev_t) d, GB(buffer_type_t) b) { (void) d; return b == &fake_buft; }
static bool fd_offload_op(GB(dev_t) d, const tensor_t * op) { (void) d; return op->op == C(OP_MUL); }
static GB(event_t) fd_event_new(GB(dev_t) d) {
    GB(event_t) e = calloc(1, sizeof(*e));
    e->device = d;
    events_live++;
    return e;
}
static void fd_event_free(GB(dev_t) d, GB(event_t) e) { (void) d; events_live--; free(e); }
static void fd_event_sync(GB(dev_t) d, GB(event_t) e) { (void) d; (void) e; }

/* a buffer type whose buffers lack get_tensor, memset_tensor, cpy_tensor, clear */
static void mbuf_free(buffer_t b) { free(b->context); }
static void * mbuf_base(buffer_t b) { return b->context; }
static void mbuf_set(buffer_t b, tensor_t * t, const void * d, size_t off, size_t n) { (void) b; memmove((char *) t->data + off, d, n); }
static const char * mbuft_name(GB(buffer_type_t) b) { (void) b; return "MINIMAL"; }
static size_t mbuft_align(GB(buffer_type_t) b) { (void) b; return 8; }
static struct G(backend_buffer_type) min_buft = {
    .iface = { .get_name = mbuft_name, .get_alignment = mbuft_align }, /* no alloc_buffer, no is_host */
};
static const struct GB(buffer_i) min_iface = {
    .free_buffer = mbuf_free,
    .get_base = mbuf_base,
    .set_tensor = mbuf_set,
};

static void setup_once(void) {
    static bool done = false;
    if (done) {
        return;
    }
    done = true;
    G(log_set)(on_log, NULL);
    fake_dev.iface.get_name = fd_name;
    fake_dev.iface.get_description = fd_name;
    fake_dev.iface.get_memory = fd_memory;
    fake_dev.iface.get_type = fd_type;
    fake_dev.iface.get_buffer_type = fd_buft;
    fake_dev.iface.supports_op = fd_supports_op;
    fake_dev.iface.supports_buft = fd_supports_buft;
    fake_dev.iface.offload_op = fd_offload_op;
    fake_dev.iface.event_new = fd_event_new;
    fake_dev.iface.event_free = fd_event_free;
    fake_dev.iface.event_synchronize = fd_event_sync;
    fake_buft.device = &fake_dev;

    cpu = GB(cpu_init)();
    cpu2 = GB(cpu_init)();
    cpu_worker = GB(cpu_init)();
    if (!cpu || !cpu2 || !cpu_worker) {
        FAIL("cpu_init failed");
    }
    GB(cpu_set_n_threads)(cpu, 1);
    GB(cpu_set_n_threads)(cpu2, 1);
    GB(cpu_set_n_threads)(cpu_worker, 1);
    static G(guid) guid = { 0xfa, 0xce };
    fake = calloc(1, sizeof(*fake));
    fake->guid = &guid;
    fake->iface.get_name = fb_name;
    fake->iface.free = fb_free;
    fake->iface.graph_compute = fb_compute;
    fake->iface.event_record = fb_event_record;
    fake->iface.event_wait = fb_event_wait;
    fake->device = &fake_dev;
}

/* ------------------------------------------------------------------ state of one input */

#define NB 6     /* buffer slots */
#define NT 12    /* tensor slots */
#define MAXT 48  /* tensors created per input (the context's capacity, with room to spare) */
#define SCRATCH (64 * 1024)

struct range { uintptr_t lo, hi; };

struct bslot {
    buffer_t b;
    void * block[2];    /* caller memory behind CPU_Mapped buffers (freed after the buffer) */
    struct range r[2];  /* memory of the buffer (or of the parts of a multi-buffer) */
    int nr;
    bool multi;
};

static struct bslot bufs[NB];
static struct G(context) * tctx;
static tensor_t * ts[NT];
static int n_created;
static uint8_t scratch[SCRATCH];
static uint8_t scratch2[SCRATCH];

/* graph */
#define GNE_MAX 48
#define GMAX_LEAF 4
#define GMAX_NODE 10
struct gop { int op; int a, b; float s; }; /* operands index into vals: leafs first, then nodes */
static struct {
    struct G(context) * ctx, * wctx;
    buffer_t wbuf;
    struct G(cgraph) * g;
    int ne, n_leaf, n_node;
    tensor_t * t[GMAX_LEAF + GMAX_NODE];
    bool is_input[GMAX_LEAF];
    float leafv[GMAX_LEAF][GNE_MAX];
    struct gop ops[GMAX_NODE];
    bool allocated; /* alloc_graph succeeded for this graph */
    bool direct_ok; /* the last split of this graph was allocated: it may be computed outside the scheduler */
    bool ready;     /* allocated, then every input set: the next compute must give exact results */
} gr;

static GB(sched_t) sched;
static int sched_nb;
/* the arguments of the last successful sched_new, to re-create it (see cmd_graph_build) */
static struct { backend_t list[3]; int n; size_t graph_size; bool parallel; bool op_offload; } sched_args;
static bool sched_used; /* the scheduler reserved or allocated a graph */
static backend_t sched_be[3];
static struct G(cgraph) * last_split; /* graph last handed to reserve/alloc/compute since a reset */
static int cb_mode, cb_count, cb_stop;
static GB(event_t) ev;

static void detach_range(uintptr_t lo, uintptr_t hi, buffer_t b) {
    /* every tensor of the context, not only those still in a slot: views keep their sources */
    for (tensor_t * t = tctx ? G(get_first_tensor)(tctx) : NULL; t; t = G(get_next_tensor)(tctx, t)) {
        uintptr_t d = (uintptr_t) t->data;
        if (t->buffer == b || (d >= lo && d < hi && hi > lo)) {
            t->buffer = NULL;
            t->data = NULL;
        }
    }
}

static void bslot_free(int i) {
    struct bslot * s = &bufs[i];
    if (!s->b) {
        return;
    }
    buffer_t b = s->b;
    GB(buffer_free)(b);
    for (int k = 0; k < s->nr; k++) {
        detach_range(s->r[k].lo, s->r[k].hi, b);
    }
    detach_range(0, 0, b);
    for (int k = 0; k < 2; k++) {
        free(s->block[k]);
    }
    memset(s, 0, sizeof(*s));
}

static void set_range(struct bslot * s, buffer_t b) {
    uintptr_t base = (uintptr_t) b->context; /* CPU, CPU_Mapped, FAKE and MINIMAL buffers keep their memory there */
    s->r[0].lo = base;
    s->r[0].hi = base + b->size;
    s->nr = 1;
}

static void graph_free(void) {
    if (gr.ctx) {
        G(free)(gr.ctx);
    }
    if (gr.wbuf) {
        GB(buffer_free)(gr.wbuf);
    }
    if (gr.wctx) {
        G(free)(gr.wctx);
    }
    /* the scheduler may still hold the graph's splits and its tensors' assignments (keyed by
     * address: a new tensor may reuse the address): reset before the next graph, as llama.cpp and
     * whisper.cpp do (the caller's duty, as with stock) */
    if (sched && (gr.g || last_split)) {
        GB(sched_reset)(sched);
    }
    last_split = NULL;
    memset(&gr, 0, sizeof(gr));
}

static void sched_drop(void) {
    graph_free();
    if (sched) {
        GB(sched_free)(sched);
    }
    sched = NULL;
    sched_nb = 0;
    last_split = NULL;
}

static void teardown(void) {
    sched_drop();
    for (int i = 0; i < NB; i++) {
        bslot_free(i);
    }
    if (ev) {
        GB(event_free)(ev);
        ev = NULL;
    }
    if (tctx) {
        G(free)(tctx);
        tctx = NULL;
    }
    memset(ts, 0, sizeof(ts));
    n_created = 0;
    if (events_live != 0) {
        FAIL("%d events leaked by the scheduler", events_live);
    }
}

/* ------------------------------------------------------------------ buffers */

static void cmd_buf_alloc(void) {
    int i = u8() % NB;
    bslot_free(i);
    int kind = u8() % 4;
    size_t size = pick_size(16384);
    GB(buffer_type_t) bt = kind == 0 ? GB(cpu_buffer_type)() : kind == 1 ? &fake_buft : kind == 2 ? &min_buft : NULL;
    buffer_t b;
    if (kind == 3) {
        b = GB(alloc_buffer)(u8() & 1 ? cpu : fake, size);
    } else {
        b = GB(buft_alloc_buffer)(bt, size);
    }
    if (b) {
        if (size > 1 << 20) {
            FAIL("an impossible buffer of %zu bytes was allocated", size);
        }
        if (GB(buffer_get_size)(b) != size) {
            FAIL("buffer size %zu, asked %zu", GB(buffer_get_size)(b), size);
        }
        bufs[i].b = b;
        set_range(&bufs[i], b);
    }
}

static void cmd_buf_minimal(void) {
    int i = u8() % NB;
    bslot_free(i);
    size_t size = 1 + u16() % 8192;
    void * mem = calloc(1, size);
    buffer_t b = GB(buffer_init)(u8() & 1 ? &min_buft : NULL, min_iface, mem, size);
    if (!b) {
        FAIL("buffer_init returned NULL");
    }
    bufs[i].b = b;
    set_range(&bufs[i], b);
}

static void cmd_buf_from_ptr(void) {
    int i = u8() % NB;
    bslot_free(i);
    size_t size = u16() % 8192;
    size_t misalign = (u8() % 4 == 0) ? 1 + u8() % 31 : 0;
    void * mem = NULL;
    if (posix_memalign(&mem, 64, size + 64) != 0) {
        return;
    }
    memset(mem, 0, size + 64);
    void * p = u8() % 8 == 0 ? NULL : (char *) mem + misalign;
    buffer_t b = u8() & 1 ? GB(cpu_buffer_from_ptr)(p, size)
                          : GB(dev_buffer_from_host_ptr)(GB(dev_by_type)(C(BACKEND_DEVICE_TYPE_CPU)), p, size, size);
    if (b) {
        if (misalign && p) {
            FAIL("a misaligned pointer was accepted");
        }
        bufs[i].b = b;
        bufs[i].block[0] = mem;
        set_range(&bufs[i], b);
    } else {
        free(mem);
    }
}

static void cmd_buf_free(void) { bslot_free(u8() % NB); }

static void cmd_multi(void) {
    int a = u8() % NB, c = u8() % NB;
    buffer_t parts[2];
    int n = 0;
    if (bufs[a].b && !bufs[a].multi) {
        parts[n++] = bufs[a].b;
    }
    if (c != a && bufs[c].b && !bufs[c].multi) {
        parts[n++] = bufs[c].b;
    }
    int ask = u8() % 4 == 0 ? 0 : n; /* sometimes a count of 0 */
    buffer_t m = GB(multi_buffer_alloc_buffer)(n ? parts : NULL, (size_t) ask);
    if (!m) {
        return;
    }
    if (!GB(buffer_is_multi_buffer)(m)) {
        FAIL("multi_buffer_alloc_buffer made a buffer that is not a multi-buffer");
    }
    /* the multi-buffer owns its parts now: move them into the slot of the first part */
    struct bslot nb;
    memset(&nb, 0, sizeof(nb));
    nb.b = m;
    nb.multi = true;
    int target = bufs[a].b == parts[0] ? a : c;
    for (int k = 0; k < n; k++) {
        int j = bufs[a].b == parts[k] ? a : c;
        nb.r[nb.nr++] = bufs[j].r[0];
        nb.block[k] = bufs[j].block[0];
        memset(&bufs[j], 0, sizeof(bufs[j]));
    }
    bufs[target] = nb;
    GB(multi_buffer_set_usage)(m, (enum GB(buffer_usage)) (u8() % 4));
}

static void cmd_buf_misc(void) {
    struct bslot * s = &bufs[u8() % NB];
    buffer_t b = u8() % 16 == 0 ? NULL : s->b;
    tensor_t * t = ts[u8() % NT];
    switch (u8() % 12) {
        case 0: (void) GB(buffer_get_base)(b); break;
        case 1: (void) GB(buffer_get_size)(b); (void) GB(buffer_name)(b); break;
        case 2: (void) GB(buffer_is_host)(b); (void) GB(buffer_get_alignment)(b); (void) GB(buffer_get_max_size)(b); break;
        case 3: (void) GB(buffer_get_alloc_size)(b, t); break;
        case 4: GB(buffer_set_usage)(b, (enum GB(buffer_usage)) (u8() % 5)); (void) GB(buffer_get_usage)(b); break;
        case 5: GB(buffer_clear)(b, u8()); break;
        case 6: GB(buffer_reset)(b); break;
        case 7: {
            GB(buffer_type_t) bt = GB(buffer_get_type)(b);
            (void) GB(buft_name)(bt);
            (void) GB(buft_get_alignment)(bt);
            (void) GB(buft_get_max_size)(bt);
            (void) GB(buft_is_host)(bt);
            (void) GB(buft_get_device)(bt);
            (void) GB(buft_get_alloc_size)(bt, t);
            break;
        }
        case 8: (void) GB(buffer_is_multi_buffer)(b); GB(multi_buffer_set_usage)(b, (enum GB(buffer_usage)) (u8() % 4)); break;
        case 9:
            if (t && b && t->buffer == b) {
                (void) GB(buffer_init_tensor)(b, t);
            } else {
                (void) GB(buffer_init_tensor)(NULL, t);
            }
            break;
        case 10: (void) GB(buft_get_alloc_size)(GB(cpu_buffer_type)(), t); break;
        default: (void) GB(buffer_copy_tensor)(t, ts[u8() % NT]); break;
    }
}

/* ------------------------------------------------------------------ tensors */

static const enum G(type) types[] = {
    C(TYPE_F32), C(TYPE_F16), C(TYPE_I8), C(TYPE_I16), C(TYPE_I32), C(TYPE_Q4_0), C(TYPE_Q4_1), C(TYPE_Q8_0), C(TYPE_BF16),
};

static void ensure_tctx(void) {
    if (!tctx) {
        struct G(init_params) p = { (MAXT + 4) * G(tensor_overhead)(), NULL, true };
        tctx = G(init)(p);
        if (!tctx) {
            FAIL("ggml_init failed");
        }
    }
}

static void cmd_tensor_new(void) {
    ensure_tctx();
    int i = u8() % NT;
    if (n_created >= MAXT) {
        return;
    }
    enum G(type) type = types[u8() % (sizeof(types) / sizeof(types[0]))];
    int64_t blck = G(blck_size)(type);
    int64_t ne[4];
    ne[0] = blck * (u8() % 5); /* may be 0: an empty tensor */
    if (blck == 1) {
        ne[0] = u8() % 130;
    }
    for (int d = 1; d < 4; d++) {
        ne[d] = 1;
    }
    int shape = u8();
    ne[1] = 1 + shape % 4;
    ne[2] = 1 + (shape >> 2) % 3;
    ne[3] = 1 + (shape >> 4) % 2;
    int n_dims = 1 + (shape >> 5) % 4;
    ts[i] = G(new_tensor)(tctx, type, n_dims, ne);
    n_created++;
    char name[16];
    snprintf(name, sizeof(name), "t%d", n_created);
    G(set_name)(ts[i], name);
}

static void cmd_tensor_view(void) {
    ensure_tctx();
    int i = u8() % NT;
    tensor_t * src = ts[u8() % NT];
    if (!src || n_created >= MAXT || G(blck_size)(src->type) != 1 || !G(is_contiguous)(src)) {
        return;
    }
    size_t esz = G(type_size)(src->type);
    int64_t nel = G(nelements)(src);
    if (nel == 0) {
        return;
    }
    if (u8() & 1 && G(n_dims)(src) >= 2) {
        ts[i] = G(transpose)(tctx, src);
    } else {
        int64_t off = u16() % nel;
        int64_t n = 1 + u16() % (nel - off);
        ts[i] = G(view_1d)(tctx, src, n, (size_t) off * esz);
    }
    n_created++;
}

static void cmd_tensor_alloc(void) {
    tensor_t * t = ts[u8() % NT];
    struct bslot * s = &bufs[u8() % NB];
    buffer_t b = s->b;
    uintptr_t base = b ? (uintptr_t) GB(buffer_get_base)(b) : 0;
    size_t bsize = b ? GB(buffer_get_size)(b) : 0;
    size_t need = t ? GB(buft_get_alloc_size)(GB(cpu_buffer_type)(), t) : 0;
    uintptr_t addr;
    switch (u8() % 8) {
        case 0: addr = base; break;
        case 1: case 2: addr = base + u16() % (bsize + 64); break;
        case 3: addr = base + bsize - need; break;
        case 4: addr = base - 1 - u8(); break;
        case 5: addr = (uintptr_t) u64(); break;
        case 6: addr = 0; break;
        default: addr = base + (uintptr_t) (SIZE_MAX - u8()); break;
    }
    void * old_data = t ? t->data : NULL;
    buffer_t old_buf = t ? t->buffer : NULL;
#ifdef TEST_API_STATUS
    enum G(status) st = GB(tensor_alloc)(b, t, (void *) addr);
    (void) st;
#else
    GB(tensor_alloc)(b, t, (void *) addr);
#endif
    if (t && t->buffer != old_buf) {
        /* placed: it must lie inside the buffer */
        uintptr_t d = (uintptr_t) t->data;
        if (t->buffer != b || d < base || d + G(nbytes)(t) > base + bsize || old_data != NULL) {
            FAIL("tensor_alloc placed '%s' at %p outside [%p, +%zu)", t->name, t->data, (void *) base, bsize);
        }
    }
}

static void cmd_view_init(void) {
    tensor_t * t = ts[u8() % NT];
    if (u8() % 8 == 0) {
        t = NULL;
    }
    (void) GB(view_init)(t);
}

static size_t pick_offset(size_t n) {
    switch (u8() % 6) {
        case 0: return 0;
        case 1: case 2: return u16() % (n + 16);
        case 3: return n - (u8() % 8);
        case 4: return SIZE_MAX - u8();
        default: return n;
    }
}

static void cmd_tensor_io(void) {
    tensor_t * t = ts[u8() % NT];
    if (u8() % 16 == 0) {
        t = NULL;
    }
    size_t n = t ? G(nbytes)(t) : 0;
    size_t off = pick_offset(n);
    size_t size = pick_size(n);
    bool null_data = u8() % 16 == 0;
    void * d = null_data ? NULL : scratch;
    uint8_t v = u8();
    if (size > SCRATCH && size <= n) {
        return; /* cannot happen: tensors are at most a few KiB */
    }
    switch (u8() % 7) {
        case 0: memset(scratch, v, sizeof(scratch)); GB(tensor_set)(t, d, off, size); break;
        case 1: GB(tensor_get)(t, d, off, size); break;
        case 2: GB(tensor_memset)(t, v, off, size); break;
        case 3: GB(tensor_set_async)(u8() & 1 ? cpu : fake, t, d, off, size); break;
        case 4: GB(tensor_get_async)(u8() & 1 ? cpu : fake, t, d, off, size); break;
        case 5: {
            /* a write then a read of the same range must round-trip */
            if (!t || !t->data || size > SCRATCH || off > n || size > n - off || size == 0) {
                break;
            }
            buffer_t tb = t->view_src ? t->view_src->buffer : t->buffer;
            if (!tb || !GB(buffer_get_type)(tb) || tb->iface.get_tensor == NULL || G(is_contiguous)(t) == false) {
                break;
            }
            for (size_t k = 0; k < size; k++) {
                scratch[k] = (uint8_t) (v + k * 31);
            }
            GB(tensor_set)(t, scratch, off, size);
            memset(scratch2, 0, size);
            GB(tensor_get)(t, scratch2, off, size);
            if (memcmp(scratch, scratch2, size) != 0) {
                FAIL("tensor_set/tensor_get round trip differs ('%s', offset %zu, size %zu)", t->name, off, size);
            }
            break;
        }
        default: (void) GB(buffer_get_alloc_size)(t ? t->buffer : NULL, t); break;
    }
}

static void cmd_tensor_copy(void) {
    tensor_t * a = ts[u8() % NT], * b = ts[u8() % NT];
    switch (u8() % 4) {
        case 0: GB(tensor_copy)(a, b); break;
        case 1: (void) GB(buffer_copy_tensor)(a, b); break;
        case 2: GB(tensor_copy_async)(cpu, u8() & 1 ? cpu2 : fake, a, b); break;
        default: GB(tensor_copy_async)(u8() & 1 ? NULL : cpu, cpu, a, u8() & 1 ? b : NULL); break;
    }
}

/* ------------------------------------------------------------------ registry, devices, events */

static void read_name(char * out, size_t cap) {
    static const char * known[] = { "CPU", "cpu", "FAKE", "", "CPU ", "Metal", "BLAS" };
    int k = u8();
    if (k % 2) {
        snprintf(out, cap, "%s", known[(k / 2) % (sizeof(known) / sizeof(known[0]))]);
        return;
    }
    size_t n = u8() % (cap - 1);
    for (size_t i = 0; i < n; i++) {
        out[i] = (char) (u8() | 1);
    }
    out[n] = 0;
}

static void cmd_registry(void) {
    char name[24];
    switch (u8() % 8) {
        case 0: (void) GB(reg_get)(u8() % 4 == 0 ? (size_t) u64() : u8() % 4); (void) GB(reg_count)(); break;
        case 1: (void) GB(dev_get)(u8() % 4 == 0 ? (size_t) u64() : u8() % 4); (void) GB(dev_count)(); break;
        case 2: read_name(name, sizeof(name)); (void) GB(reg_by_name)(u8() % 8 ? name : NULL); break;
        case 3: read_name(name, sizeof(name)); (void) GB(dev_by_name)(u8() % 8 ? name : NULL); break;
        case 4: {
            read_name(name, sizeof(name));
            backend_t b = GB(init_by_name)(u8() % 8 ? name : NULL, NULL);
            if (b) {
                (void) GB(name)(b);
                GB(free)(b);
            }
            break;
        }
        case 5: {
            GB(dev_t) d = GB(dev_by_type)((enum GB(dev_type)) (u8() % 6));
            if (d) {
                (void) GB(dev_name)(d);
                (void) GB(dev_description)(d);
                size_t f = 0, t = 0;
                GB(dev_memory)(d, u8() & 1 ? &f : NULL, &t);
                struct GB(dev_props) props;
                GB(dev_get_props)(d, u8() % 8 ? &props : NULL);
                (void) GB(dev_type)(d);
                (void) GB(dev_host_buffer_type)(d);
                (void) GB(dev_supports_buft)(d, u8() & 1 ? &fake_buft : GB(cpu_buffer_type)());
                tensor_t * t1 = ts[u8() % NT];
                if (t1) {
                    (void) GB(dev_supports_op)(d, t1);
                    (void) GB(dev_offload_op)(d, t1);
                }
            }
            break;
        }
        case 6: {
            GB(reg_t) r = GB(reg_by_name)("CPU");
            read_name(name, sizeof(name));
            (void) GB(reg_dev_get)(r, u8() % 3);
            (void) GB(reg_dev_count)(r);
            (void) GB(reg_name)(r);
            (void) GB(reg_get_proc_address)(r, u8() % 8 ? name : NULL);
            break;
        }
        default: {
            backend_t b = u8() & 1 ? cpu : fake;
            (void) GB(guid)(b);
            (void) GB(get_device)(b);
            (void) GB(get_default_buffer_type)(b);
            (void) GB(get_alignment)(b);
            (void) GB(get_max_size)(b);
            tensor_t * t1 = ts[u8() % NT];
            (void) GB(supports_op)(b, t1);
            (void) GB(offload_op)(b, t1);
            (void) GB(supports_buft)(b, u8() & 1 ? &fake_buft : NULL);
            GB(synchronize)(b);
            break;
        }
    }
}

static void cmd_event(void) {
    switch (u8() % 6) {
        case 0:
            if (!ev) {
                ev = GB(event_new)(u8() & 1 ? &fake_dev : GB(dev_by_type)(C(BACKEND_DEVICE_TYPE_CPU)));
            }
            break;
        case 1: GB(event_record)(ev, u8() & 1 ? cpu : fake); break;
        case 2: GB(event_wait)(u8() & 1 ? cpu : fake, ev); break;
        case 3: GB(event_synchronize)(ev); break;
        case 4: if (ev) { GB(event_free)(ev); ev = NULL; } break;
        default: GB(event_free)(NULL); break;
    }
}

/* ------------------------------------------------------------------ graphs and the scheduler */

static void cmd_sched_new(void) {
    sched_drop();
    int kind = u8() % 8;
    bool parallel = u8() & 1;
    size_t graph_size = u8() % 4 == 0 ? u8() % 8 : 16 + u8();
    backend_t list[17];
    int n;
    switch (kind) {
        case 0: list[0] = cpu; n = 1; break;
        case 1: case 2: list[0] = fake; list[1] = cpu; n = 2; break;
        case 3: list[0] = cpu2; list[1] = cpu; n = 2; break;
        case 4: list[0] = fake; list[1] = cpu2; list[2] = cpu; n = 3; break;
        case 5: list[0] = cpu; list[1] = fake; n = 2; break;   /* CPU not last: refused */
        case 6: for (int i = 0; i < 17; i++) list[i] = cpu; n = u8() & 1 ? 17 : 0; break;
        default: list[0] = fake; n = 1; break;                 /* no CPU at all: refused */
    }
    bool with_bufts = u8() % 4 == 0;
    GB(buffer_type_t) bufts[17];
    for (int i = 0; i < 17; i++) {
        bufts[i] = (i < n && list[i] == fake) ? &fake_buft : GB(cpu_buffer_type)();
    }
    if (with_bufts && n > 0 && u8() % 4 == 0) {
        bufts[0] = &min_buft; /* a buffer type the backend does not support */
    }
#ifdef TEST_API_OP_OFFLOAD
    sched = GB(sched_new)(u8() % 16 ? list : NULL, with_bufts ? bufts : NULL, n, graph_size, parallel, u8() & 1);
#else
    sched = GB(sched_new)(u8() % 16 ? list : NULL, with_bufts ? bufts : NULL, n, graph_size, parallel);
#endif
    if (getenv("FUZZ_VERBOSE")) {
        fprintf(stderr, "[fuzz] sched_new(kind %d, n %d, graph_size %zu, parallel %d, bufts %d) -> %p\n", kind, n, graph_size, parallel, with_bufts, (void *) sched);
    }
    if (sched) {
        sched_args.n = n;
        for (int i = 0; i < n && i < 3; i++) {
            sched_args.list[i] = list[i];
        }
        sched_args.graph_size = graph_size;
        sched_args.parallel = parallel;
        sched_args.op_offload = true;
        sched_used = false;
        if (kind >= 5) {
            FAIL("sched_new accepted an invalid backend list (kind %d, n %d)", kind, n);
        }
        sched_nb = n;
        for (int i = 0; i < n && i < 3; i++) {
            sched_be[i] = list[i];
        }
        if (GB(sched_get_n_backends)(sched) != n) {
            FAIL("sched_get_n_backends");
        }
        if (GB(sched_get_n_copies)(sched) != (parallel ? 4 : 1)) {
            FAIL("sched_get_n_copies %d (parallel %d)", GB(sched_get_n_copies)(sched), parallel);
        }
    }
}

static void compute_expected(float * out) {
    float vals[GMAX_LEAF + GMAX_NODE][GNE_MAX];
    for (int l = 0; l < gr.n_leaf; l++) {
        memcpy(vals[l], gr.leafv[l], sizeof(float) * gr.ne);
    }
    for (int j = 0; j < gr.n_node; j++) {
        const struct gop * o = &gr.ops[j];
        float * r = vals[gr.n_leaf + j];
        for (int i = 0; i < gr.ne; i++) {
            volatile float x;
            if (o->op == 0) {
                x = vals[o->a][i] + vals[o->b][i];
            } else if (o->op == 1) {
                x = vals[o->a][i] * vals[o->b][i];
            } else {
                x = vals[o->a][i] * o->s;
            }
            r[i] = x;
        }
    }
    memcpy(out, vals[gr.n_leaf + gr.n_node - 1], sizeof(float) * gr.ne);
}

static void cmd_graph_build(void) {
    graph_free();
#ifdef TEST_PREFIX_LM
    /* Known issue 3 (docs/bad-input.md): with lm's ggml-alloc, allocating a graph after another
     * one was reserved/allocated can abort in ggml-alloc (GGML_ASSERT(talloc->buffer_id >= 0))
     * when a pre-allocated source of the old graph sits where the new one has an unallocated
     * tensor. With FUZZ_LENIENT set, lm starts each new graph on a fresh scheduler. */
    if (sched && sched_used && !!getenv("FUZZ_LENIENT")) {
        GB(sched_free)(sched);
        sched = TEST_SCHED_NEW(GB(sched_new), sched_args.list, NULL, sched_args.n, sched_args.graph_size, sched_args.parallel, true);
        sched_used = false;
        last_split = NULL;
        if (!sched) {
            FAIL("re-creating the scheduler failed");
        }
    }
#endif
    gr.ne = 1 + u8() % GNE_MAX;
    gr.n_leaf = 1 + u8() % GMAX_LEAF;
    gr.n_node = 1 + u8() % GMAX_NODE;
    struct G(init_params) p = { G(tensor_overhead)() * (GMAX_LEAF + GMAX_NODE + 4) + G(graph_overhead_custom)(64, false), NULL, true };
    gr.ctx = G(init)(p);
    struct G(init_params) pw = { G(tensor_overhead)() * (GMAX_LEAF + 1), NULL, true };
    gr.wctx = G(init)(pw);
    int wbuft = u8() % 3; /* weights: 0 CPU buffer, 1 FAKE buffer, 2 CPU buffer marked WEIGHTS */
    bool any_weight = false;
    for (int l = 0; l < gr.n_leaf; l++) {
        gr.is_input[l] = u8() & 1;
        tensor_t * t = G(new_tensor_1d)(gr.is_input[l] ? gr.ctx : gr.wctx, C(TYPE_F32), gr.ne);
        char nm[16];
        snprintf(nm, sizeof(nm), "%s%d", gr.is_input[l] ? "in" : "w", l);
        G(set_name)(t, nm);
        if (gr.is_input[l]) {
            G(set_input)(t);
        } else {
            any_weight = true;
        }
        for (int i = 0; i < gr.ne; i++) {
            gr.leafv[l][i] = (float) ((int) ((l * 7 + i * 3 + u8()) % 15) - 7) * 0.5f;
        }
        gr.t[l] = t;
    }
    if (any_weight) {
        gr.wbuf = G(backend_alloc_ctx_tensors_from_buft)(gr.wctx, wbuft == 1 ? &fake_buft : GB(cpu_buffer_type)());
        if (!gr.wbuf) {
            FAIL("could not allocate the graph's weights");
        }
        GB(buffer_set_usage)(gr.wbuf, wbuft == 0 ? C(BACKEND_BUFFER_USAGE_ANY) : C(BACKEND_BUFFER_USAGE_WEIGHTS));
        for (int l = 0; l < gr.n_leaf; l++) {
            if (!gr.is_input[l]) {
                GB(tensor_set)(gr.t[l], gr.leafv[l], 0, sizeof(float) * gr.ne);
            }
        }
    }
    static const float scales[] = { 0.5f, 2.0f, -1.0f, 0.25f, 3.0f };
    for (int j = 0; j < gr.n_node; j++) {
        int n_avail = gr.n_leaf + j;
        struct gop * o = &gr.ops[j];
        o->op = u8() % 3;
        /* the last node uses the previous one, so that the whole chain is reachable */
        o->a = j > 0 && (u8() & 1) ? n_avail - 1 : u8() % n_avail;
        o->b = u8() % n_avail;
        o->s = scales[u8() % 5];
        tensor_t * a = gr.t[o->a], * b = gr.t[o->b];
        tensor_t * r = o->op == 0 ? G(add)(gr.ctx, a, b) : o->op == 1 ? G(mul)(gr.ctx, a, b) : G(scale)(gr.ctx, a, o->s);
        gr.t[n_avail] = r;
    }
    tensor_t * out = gr.t[gr.n_leaf + gr.n_node - 1];
    if (getenv("FUZZ_VERBOSE")) {
        fprintf(stderr, "[fuzz] graph: ne %d, weights in %s", gr.ne, wbuft == 1 ? "FAKE" : wbuft == 2 ? "CPU(WEIGHTS)" : "CPU");
        for (int l = 0; l < gr.n_leaf; l++) {
            fprintf(stderr, ", %s", gr.t[l]->name);
        }
        for (int j = 0; j < gr.n_node; j++) {
            fprintf(stderr, ", %s=%s(%s,%s)", gr.t[gr.n_leaf + j]->name, G(op_name)(gr.t[gr.n_leaf + j]->op), gr.t[gr.ops[j].a]->name,
                    gr.ops[j].op == 2 ? "s" : gr.t[gr.ops[j].b]->name);
        }
        fprintf(stderr, "\n");
    }
    G(set_output)(out);
    gr.g = G(new_graph_custom)(gr.ctx, 64, false);
    G(build_forward_expand)(gr.g, out);
}

static bool set_inputs(void) {
    for (int l = 0; l < gr.n_leaf; l++) {
        if (gr.is_input[l]) {
            if (!gr.t[l]->data) {
                return false;
            }
            GB(tensor_set)(gr.t[l], gr.leafv[l], 0, sizeof(float) * gr.ne);
        }
    }
    return true;
}

static bool eval_cb(tensor_t * t, bool ask, void * ud) {
    (void) t;
    (void) ud;
    if (ask) {
        return cb_mode != 1;
    }
    cb_count++;
    return !(cb_mode == 3 && cb_count >= cb_stop);
}

static void before_split(struct G(cgraph) * g) {
    /* the C contract: a scheduler computes the graph it last allocated (else reset first) */
    if (last_split && last_split != g) {
        GB(sched_reset)(sched);
    }
    last_split = g;
}

/* Known issue 4 (docs/bad-input.md): splitting again a graph whose tensors this scheduler already
 * allocated (reset + reserve/alloc/compute of the same graph; with `parallel` the input copies
 * rotate) hands ggml-alloc a leaf that was pre-allocated at the last reserve and is not any more:
 * ggml_gallocr_init_tensor indexes buffers[-1] (heap-buffer-overflow). With FUZZ_LENIENT set,
 * the harness does not split an allocated graph a second time. */
static bool resplit_blocked(struct G(cgraph) * g) {
    return g && g == gr.g && gr.allocated && last_split != g && !!getenv("FUZZ_LENIENT");
}

static void cmd_sched_op(void) {
    if (!sched) {
        /* NULL scheduler: every entry point must refuse */
        switch (u8() % 4) {
            case 0: (void) GB(sched_reserve)(NULL, gr.g); break;
            case 1: (void) GB(sched_alloc_graph)(NULL, gr.g); break;
            case 2: (void) GB(sched_graph_compute)(NULL, gr.g); break;
            default: GB(sched_reset)(NULL); GB(sched_synchronize)(NULL); (void) GB(sched_get_n_splits)(NULL); break;
        }
        return;
    }
    struct G(cgraph) * g = u8() % 16 ? gr.g : NULL;
    int op = u8() % 10;
    if (getenv("FUZZ_VERBOSE")) {
        static const char * names[] = { "reserve", "alloc_graph", "alloc_graph", "compute", "compute", "reset", "set_tensor_backend", "query", "eval_callback", "synchronize" };
        fprintf(stderr, "[fuzz] sched %s(%s)\n", names[op], g ? "graph" : "NULL");
    }
    switch (op) {
        case 0:
            if (resplit_blocked(g)) {
                break;
            }
            before_split(g);
            gr.ready = false;
            sched_used = true;
            gr.direct_ok = false; /* a reserve re-points sources at unallocated input copies */
            (void) GB(sched_reserve)(sched, g);
            last_split = NULL; /* reserve ends with a reset */
            break;
        case 1: case 2: {
            if (resplit_blocked(g)) {
                break;
            }
            before_split(g);
            gr.ready = false;
            sched_used = true;
            bool ok = GB(sched_alloc_graph)(sched, g);
            if (ok && g && getenv("FUZZ_VERBOSE")) {
                for (int k = 0; k < gr.n_leaf + gr.n_node; k++) {
                    backend_t tb = GB(sched_get_tensor_backend)(sched, gr.t[k]);
                    fprintf(stderr, "[fuzz]   t%d %s data %p buffer %p on %s\n", k, G(op_name)(gr.t[k]->op), gr.t[k]->data,
                            (void *) gr.t[k]->buffer, tb ? GB(name)(tb) : "-");
                }
            }
            gr.direct_ok = ok && g;
            if (ok && g) {
                gr.allocated = true;
                if (u8() % 4) {
                    gr.ready = set_inputs();
                }
            }
            break;
        }
        case 3: case 4: {
            if (resplit_blocked(g)) {
                break;
            }
            if (g) {
                before_split(g);
                sched_used = true;
            }
            bool check = gr.ready && g && cb_mode != 3;
            gr.ready = false;
            enum G(status) st;
            unsupported_this_compute = false;
            if (u8() & 1) {
                st = GB(sched_graph_compute)(sched, g);
            } else {
                st = GB(sched_graph_compute_async)(sched, g);
                GB(sched_synchronize)(sched);
            }
            if (g && st == C(STATUS_SUCCESS)) {
                gr.allocated = true;
                gr.direct_ok = true;
            } else if (g && st == C(STATUS_ALLOC_FAILED)) {
                gr.direct_ok = false;
            }
            if (check && st == C(STATUS_SUCCESS)) {
                float want[GNE_MAX], got[GNE_MAX];
                compute_expected(want);
                tensor_t * out = gr.t[gr.n_leaf + gr.n_node - 1];
                memset(got, 0, sizeof(got));
                GB(tensor_get)(out, got, 0, sizeof(float) * gr.ne);
                if (memcmp(got, want, sizeof(float) * gr.ne) != 0 && getenv("FUZZ_VERBOSE")) {
                    for (int l = 0; l < gr.n_leaf; l++) {
                        fprintf(stderr, "[fuzz]   leaf %d [0] = %g (now %g)\n", l, gr.leafv[l][0], gr.t[l]->data ? *(float *) gr.t[l]->data : -0.0);
                    }
                }
                if (memcmp(got, want, sizeof(float) * gr.ne) != 0) {
                    FAIL("wrong result: got[0]=%g want[0]=%g (ne %d, %d leafs, %d nodes, %d backends, %d splits)", got[0], want[0],
                         gr.ne, gr.n_leaf, gr.n_node, sched_nb, GB(sched_get_n_splits)(sched));
                }
            }
            if (check && st != C(STATUS_SUCCESS) && !unsupported_this_compute) {
                FAIL("compute of an allocated graph failed with status %d", (int) st);
            }
            break;
        }
        case 5:
            GB(sched_reset)(sched);
            last_split = NULL;
            gr.ready = false;
            break;
        case 6: {
            gr.ready = false;
            int ni = u8() % (GMAX_LEAF + GMAX_NODE);
            tensor_t * t = gr.g && ni < gr.n_leaf + gr.n_node ? gr.t[ni] : ts[u8() % NT];
            int bi = u8() % 5;
            backend_t b = bi < sched_nb ? sched_be[bi] : bi == 3 ? cpu_worker : NULL;
            if (getenv("FUZZ_VERBOSE")) {
                fprintf(stderr, "[fuzz] set_tensor_backend(%s %p, %s)\n", t ? t->name : "NULL", (void *) t, b ? GB(name)(b) : "NULL");
            }
            gr.direct_ok = false;
            GB(sched_set_tensor_backend)(sched, t, b);
            (void) GB(sched_get_tensor_backend)(sched, t);
            break;
        }
        case 7: {
            (void) GB(sched_get_n_splits)(sched);
            (void) GB(sched_get_n_copies)(sched);
            int i = (int) (int8_t) u8();
            (void) GB(sched_get_backend)(sched, i);
            int bi = u8() % 5;
            backend_t b = bi < sched_nb ? sched_be[bi] : bi == 3 ? cpu_worker : NULL;
            (void) GB(sched_get_buffer_size)(sched, b);
            break;
        }
        case 8:
            cb_mode = u8() % 4;
            cb_count = 0;
            cb_stop = 1 + u8() % 4;
            GB(sched_set_eval_callback)(sched, cb_mode ? eval_cb : NULL, NULL);
            break;
        default:
            GB(sched_synchronize)(sched);
            break;
    }
}

static bool cmp_cb(int i, tensor_t * t1, tensor_t * t2, void * ud) {
    (void) t1;
    (void) t2;
    int * stop = ud;
    return i < *stop;
}

static void cmd_graph_util(void) {
    if (!gr.g) {
        struct G(backend_graph_copy) cp = GB(graph_copy)(cpu, NULL);
        GB(graph_copy_free)(cp);
        return;
    }
    /* computing the graph outside the scheduler overwrites inputs that ggml-alloc placed in place:
     * the next scheduler compute no longer starts from the values set (not a library fault) */
    gr.ready = false;
    switch (u8() % 3) {
        case 0: {
            struct G(backend_graph_copy) cp = GB(graph_copy)(u8() & 1 ? cpu : fake, gr.g);
            if (cp.graph && G(graph_n_nodes)(cp.graph) != G(graph_n_nodes)(gr.g)) {
                FAIL("graph_copy has %d nodes, the graph %d", G(graph_n_nodes)(cp.graph), G(graph_n_nodes)(gr.g));
            }
            GB(graph_copy_free)(cp);
            break;
        }
        case 1:
            /* computes the graph node by node on two backends: only for an allocated graph */
            if (gr.direct_ok) {
                int stop = u8() % 8;
                (void) TEST_COMPARE_GRAPH(GB(compare_graph_backend), cpu, cpu2, gr.g, u8() % 8 ? cmp_cb : NULL, &stop);
            }
            break;
        default:
            if (gr.direct_ok) {
                (void) GB(graph_compute)(u8() & 1 ? cpu : cpu2, gr.g);
            } else {
                (void) GB(graph_compute)(NULL, gr.g);
            }
            break;
    }
}

/* ------------------------------------------------------------------ entry point */

typedef void (*cmd_fn)(void);
static const cmd_fn cmds[] = {
    cmd_buf_alloc,   cmd_buf_alloc,  cmd_buf_from_ptr, cmd_buf_minimal, cmd_buf_free,   cmd_multi,
    cmd_buf_misc,    cmd_tensor_new, cmd_tensor_new,   cmd_tensor_view, cmd_tensor_alloc, cmd_tensor_alloc,
    cmd_view_init,   cmd_tensor_io,  cmd_tensor_io,    cmd_tensor_copy, cmd_registry,   cmd_event,
    cmd_sched_new,   cmd_graph_build, cmd_sched_op,    cmd_sched_op,    cmd_sched_op,   cmd_graph_util,
};
#define N_CMDS ((int) (sizeof(cmds) / sizeof(cmds[0])))

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    setup_once();
    in_p = data;
    in_n = size;
    for (int steps = 0; in_n > 0 && steps < 400; steps++) {
        cmds[u8() % N_CMDS]();
    }
    teardown();
    return 0;
}
