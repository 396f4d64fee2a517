/*
 * Concurrency test of ggml-backend-rs against a host's ggml core, for both prefixes (compiled with
 * -DTEST_PREFIX_LM or -DTEST_PREFIX_WSP, like sched.c and conformance.c):
 *
 *   A. first use of the registry from 8 threads at once (released together by a barrier): every
 *      thread sees the same reg/dev counts, the same CPU reg, CPU device and CPU buffer type.
 *      The first round is this process's real first use; THREADS_FIRST_USE_ROUNDS-1 more rounds
 *      re-execute this binary (a fresh registry each time).
 *   B. 4 schedulers on 4 threads, each computing its own graphs (MUL / ADD / SCALE chains, a
 *      different chain per thread and iteration) against 4 weight tensors shared by all threads in
 *      one CPU buffer, THREADS_ITERS iterations each; every result is compared bit for bit with the
 *      same float operations done here. Thread 0: [CPU]; 1: [STREAM, CPU]; 2: [CPU] parallel;
 *      3: [STREAM, CPU] parallel (pipeline copies with events).
 *   C. events across two streams driven from two host threads: thread 1 writes a tensor
 *      asynchronously on stream A and records an event; thread 2 makes stream B wait for the event,
 *      reads the tensor asynchronously on B, synchronizes B and checks it read exactly what A
 *      wrote (and event_synchronize on the host), THREADS_EVENT_ITERS times.
 *
 * STREAM is a fake accelerator written here: each backend is an in-order queue run by a worker
 * thread (writes are delayed so that missing synchronization shows up as wrong data), events are
 * a generation counter under a mutex/condvar. The CPU device has no events.
 *
 * Exit code 0 when every check passed. Prints "threads <p> (<mode>): N checks, M failed" and the
 * thread x iteration counts.
 */
#ifndef _GNU_SOURCE
#    define _GNU_SOURCE
#endif
#include <pthread.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-backend-impl.h"
#include "ggml-cpu.h"

#include "test_prefix.h"
#ifndef GGML_RS_TEST_MODE
#    define GGML_RS_TEST_MODE "?"
#endif

typedef struct G(tensor) tensor_t;

extern char ** environ;

/* ------------------------------------------------------------------ checks (thread-safe) */

static int n_checks, n_failed, n_errors_logged;
static pthread_mutex_t report_mu = PTHREAD_MUTEX_INITIALIZER;

static void check_impl(bool ok, const char * what, const char * file, int line) {
    __atomic_add_fetch(&n_checks, 1, __ATOMIC_RELAXED);
    if (!ok) {
        __atomic_add_fetch(&n_failed, 1, __ATOMIC_RELAXED);
        pthread_mutex_lock(&report_mu);
        fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, what);
        pthread_mutex_unlock(&report_mu);
    }
}
#define CHECK(c) check_impl((c) ? true : false, #c, __FILE__, __LINE__)

static void on_log(enum G(log_level) level, const char * text, void * ud) {
    (void) ud;
    if (level == C(LOG_LEVEL_ERROR)) {
        __atomic_add_fetch(&n_errors_logged, 1, __ATOMIC_RELAXED);
        pthread_mutex_lock(&report_mu);
        fprintf(stderr, "[error logged] %s", text);
        pthread_mutex_unlock(&report_mu);
    }
}

static int env_int(const char * name, int def) {
    const char * v = getenv(name);
    return v && *v ? atoi(v) : def;
}

static struct G(context) * new_ctx(size_t n_tensors) {
    struct G(init_params) p = { G(tensor_overhead)() * n_tensors + G(graph_overhead)(), NULL, true };
    return G(init)(p);
}

static GB(sched_t) new_sched(GB(t) * backends, int n, size_t graph_size, bool parallel) {
    return TEST_SCHED_NEW(GB(sched_new), backends, NULL, n, graph_size, parallel, true);
}

/* ------------------------------------------------------------------ STREAM: a fake async device */

struct fev {
    pthread_mutex_t m;
    pthread_cond_t  cv;
    uint64_t recorded; /* generations handed out by event_record */
    uint64_t signaled; /* highest generation a stream has reached */
};

enum task_kind { T_WRITE, T_READ, T_SIGNAL, T_WAIT };

struct task {
    enum task_kind kind;
    uint8_t * dst;
    const uint8_t * src;
    size_t n;
    uint8_t * owned; /* copy of the source of an async write */
    struct fev * ev;
    uint64_t gen;
    struct task * next;
};

struct stream {
    pthread_t th;
    pthread_mutex_t m;
    pthread_cond_t cv;
    struct task * head, * tail;
    int pending;
    bool quit;
    unsigned delay_us;
    GB(t) worker; /* a CPU backend of its own computes the graphs */
    long computed_nodes;
};

static void sleep_us(unsigned us) {
    struct timespec ts = { 0, (long) us * 1000L };
    nanosleep(&ts, NULL);
}

static void * stream_main(void * p) {
    struct stream * s = p;
    for (;;) {
        pthread_mutex_lock(&s->m);
        while (!s->head && !s->quit) {
            pthread_cond_wait(&s->cv, &s->m);
        }
        if (!s->head) {
            pthread_mutex_unlock(&s->m);
            break;
        }
        struct task * t = s->head;
        s->head = t->next;
        if (!s->head) {
            s->tail = NULL;
        }
        pthread_mutex_unlock(&s->m);

        switch (t->kind) {
            case T_WRITE:
                if (s->delay_us) {
                    sleep_us(s->delay_us);
                }
                memcpy(t->dst, t->owned, t->n);
                break;
            case T_READ:
                memcpy(t->dst, t->src, t->n);
                break;
            case T_SIGNAL:
                pthread_mutex_lock(&t->ev->m);
                if (t->gen > t->ev->signaled) {
                    t->ev->signaled = t->gen;
                }
                pthread_cond_broadcast(&t->ev->cv);
                pthread_mutex_unlock(&t->ev->m);
                break;
            case T_WAIT:
                pthread_mutex_lock(&t->ev->m);
                while (t->ev->signaled < t->gen) {
                    pthread_cond_wait(&t->ev->cv, &t->ev->m);
                }
                pthread_mutex_unlock(&t->ev->m);
                break;
        }
        free(t->owned);
        free(t);

        pthread_mutex_lock(&s->m);
        s->pending--;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->m);
    }
    return NULL;
}

static void stream_push(struct stream * s, struct task * t) {
    t->next = NULL;
    pthread_mutex_lock(&s->m);
    if (s->tail) {
        s->tail->next = t;
    } else {
        s->head = t;
    }
    s->tail = t;
    s->pending++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->m);
}

static void stream_drain(struct stream * s) {
    pthread_mutex_lock(&s->m);
    while (s->pending > 0) {
        pthread_cond_wait(&s->cv, &s->m);
    }
    pthread_mutex_unlock(&s->m);
}

static struct task * new_task(enum task_kind k) {
    struct task * t = calloc(1, sizeof(*t));
    t->kind = k;
    return t;
}

/* buffer type: host memory behind a non-host buffer type (the CPU buffer's vtable, relabelled) */
static const char * sbuft_name(GB(buffer_type_t) b) { (void) b; return "STREAM"; }
static size_t sbuft_align(GB(buffer_type_t) b) { (void) b; return 32; }
static bool sbuft_is_host(GB(buffer_type_t) b) { (void) b; return false; }
static GB(buffer_t) sbuft_alloc(GB(buffer_type_t) buft, size_t size);
static struct G(backend_buffer_type) stream_buft = {
    .iface = { .get_name = sbuft_name, .alloc_buffer = sbuft_alloc, .get_alignment = sbuft_align, .is_host = sbuft_is_host },
    .device = NULL,
    .context = NULL,
};
static GB(buffer_t) sbuft_alloc(GB(buffer_type_t) buft, size_t size) {
    GB(buffer_t) b = GB(buft_alloc_buffer)(GB(cpu_buffer_type)(), size);
    if (b) {
        b->buft = buft;
    }
    return b;
}

static bool stream_op_ok(const tensor_t * op) {
    switch (op->op) {
        case C(OP_NONE): case C(OP_MUL): case C(OP_ADD):
        case C(OP_VIEW): case C(OP_RESHAPE): case C(OP_PERMUTE): case C(OP_TRANSPOSE):
            return op->type == C(TYPE_F32);
        default:
            return false;
    }
}

/* backend */
static const char * sb_name(GB(t) be) { (void) be; return "STREAM"; }
static void sb_free(GB(t) be) {
    struct stream * s = be->context;
    stream_drain(s);
    pthread_mutex_lock(&s->m);
    s->quit = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->m);
    pthread_join(s->th, NULL);
    GB(free)(s->worker);
    pthread_mutex_destroy(&s->m);
    pthread_cond_destroy(&s->cv);
    free(s);
    free(be);
}
static void sb_set_async(GB(t) be, tensor_t * t, const void * data, size_t off, size_t size) {
    struct task * k = new_task(T_WRITE);
    k->dst = (uint8_t *) t->data + off;
    k->owned = malloc(size ? size : 1);
    memcpy(k->owned, data, size);
    k->n = size;
    stream_push(be->context, k);
}
static void sb_get_async(GB(t) be, const tensor_t * t, void * data, size_t off, size_t size) {
    struct task * k = new_task(T_READ);
    k->dst = data;
    k->src = (const uint8_t *) t->data + off;
    k->n = size;
    stream_push(be->context, k);
}
static void sb_sync(GB(t) be) { stream_drain(be->context); }
static enum G(status) sb_compute(GB(t) be, struct G(cgraph) * g) {
    struct stream * s = be->context;
    for (int i = 0; i < G(graph_n_nodes)(g); i++) {
        if (!stream_op_ok(G(graph_node)(g, i))) {
            fprintf(stderr, "STREAM asked to compute op %s\n", G(op_name)(G(graph_node)(g, i)->op));
            return C(STATUS_FAILED);
        }
    }
    /* in order: everything queued before (writes, event waits) happens first */
    stream_drain(s);
    s->computed_nodes += G(graph_n_nodes)(g);
    return GB(graph_compute)(s->worker, g);
}
static void sb_event_record(GB(t) be, GB(event_t) e) {
    struct fev * f = e->context;
    struct task * k = new_task(T_SIGNAL);
    pthread_mutex_lock(&f->m);
    k->gen = ++f->recorded;
    pthread_mutex_unlock(&f->m);
    k->ev = f;
    stream_push(be->context, k);
}
static void sb_event_wait(GB(t) be, GB(event_t) e) {
    struct fev * f = e->context;
    struct task * k = new_task(T_WAIT);
    pthread_mutex_lock(&f->m);
    k->gen = f->recorded;
    pthread_mutex_unlock(&f->m);
    k->ev = f;
    stream_push(be->context, k);
}

/* device */
static struct G(backend_device) stream_dev;
static const char * sd_name(GB(dev_t) d) { (void) d; return "STREAM"; }
static const char * sd_desc(GB(dev_t) d) { (void) d; return "fake async device with events"; }
static void sd_memory(GB(dev_t) d, size_t * f, size_t * t) { (void) d; *f = 1 << 20; *t = 1 << 21; }
static enum GB(dev_type) sd_type(GB(dev_t) d) { (void) d; return C(BACKEND_DEVICE_TYPE_GPU); }
static void sd_props(GB(dev_t) d, struct GB(dev_props) * p) {
    p->name = sd_name(d);
    p->description = sd_desc(d);
    sd_memory(d, &p->memory_free, &p->memory_total);
    p->type = sd_type(d);
    p->caps.async = true;
    p->caps.events = true;
}
static GB(buffer_type_t) sd_buft(GB(dev_t) d) { (void) d; return &stream_buft; }
static bool sd_supports_op(GB(dev_t) d, const tensor_t * op) { (void) d; return stream_op_ok(op); }
static bool sd_supports_buft(GB(dev_t) d, GB(buffer_type_t) b) { (void) d; return b == &stream_buft; }
/* offload MUL/ADD of weights that live in a CPU buffer (as a GPU offloads big matmuls) */
static bool sd_offload_op(GB(dev_t) d, const tensor_t * op) { (void) d; return op->op == C(OP_MUL) || op->op == C(OP_ADD); }
static GB(event_t) sd_event_new(GB(dev_t) d) {
    GB(event_t) e = calloc(1, sizeof(*e));
    struct fev * f = calloc(1, sizeof(*f));
    pthread_mutex_init(&f->m, NULL);
    pthread_cond_init(&f->cv, NULL);
    e->device = d;
    e->context = f;
    return e;
}
static void sd_event_free(GB(dev_t) d, GB(event_t) e) {
    (void) d;
    struct fev * f = e->context;
    pthread_mutex_destroy(&f->m);
    pthread_cond_destroy(&f->cv);
    free(f);
    free(e);
}
static void sd_event_sync(GB(dev_t) d, GB(event_t) e) {
    (void) d;
    struct fev * f = e->context;
    pthread_mutex_lock(&f->m);
    while (f->signaled < f->recorded) {
        pthread_cond_wait(&f->cv, &f->m);
    }
    pthread_mutex_unlock(&f->m);
}

static void stream_setup(void) {
    memset(&stream_dev, 0, sizeof(stream_dev));
    stream_dev.iface.get_name = sd_name;
    stream_dev.iface.get_description = sd_desc;
    stream_dev.iface.get_memory = sd_memory;
    stream_dev.iface.get_type = sd_type;
    stream_dev.iface.get_props = sd_props;
    stream_dev.iface.get_buffer_type = sd_buft;
    stream_dev.iface.supports_op = sd_supports_op;
    stream_dev.iface.supports_buft = sd_supports_buft;
    stream_dev.iface.offload_op = sd_offload_op;
    stream_dev.iface.event_new = sd_event_new;
    stream_dev.iface.event_free = sd_event_free;
    stream_dev.iface.event_synchronize = sd_event_sync;
    stream_buft.device = &stream_dev;
}

static GB(t) cpu_backend(void) {
    GB(t) be = GB(cpu_init)();
    if (be) {
        GB(cpu_set_n_threads)(be, 1); /* no ggml worker threads: the threads here are ours */
    }
    return be;
}

static GB(t) stream_init(unsigned delay_us) {
    static G(guid) guid = { 0x5e, 0x7e, 0xa1 };
    struct stream * s = calloc(1, sizeof(*s));
    pthread_mutex_init(&s->m, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->delay_us = delay_us;
    s->worker = cpu_backend();
    pthread_create(&s->th, NULL, stream_main, s);
    GB(t) be = calloc(1, sizeof(*be));
    be->guid = &guid;
    be->iface.get_name = sb_name;
    be->iface.free = sb_free;
    be->iface.set_tensor_async = sb_set_async;
    be->iface.get_tensor_async = sb_get_async;
    be->iface.synchronize = sb_sync;
    be->iface.graph_compute = sb_compute;
    be->iface.event_record = sb_event_record;
    be->iface.event_wait = sb_event_wait;
    be->device = &stream_dev;
    be->context = s;
    return be;
}

/* ------------------------------------------------------------------ A. first use from 8 threads */

#define N_FIRST 8

struct first_seen {
    size_t n_regs, n_devs;
    GB(reg_t) cpu_reg;
    GB(dev_t) cpu_dev;
    GB(buffer_type_t) cpu_buft;
    GB(dev_t) dev0;
};

static pthread_barrier_t first_barrier;

static void * first_main(void * p) {
    struct first_seen * r = p;
    pthread_barrier_wait(&first_barrier);
    /* different threads start with different entry points */
    r->cpu_buft = GB(cpu_buffer_type)();
    r->n_regs = GB(reg_count)();
    r->cpu_reg = GB(reg_by_name)("CPU");
    r->cpu_dev = GB(dev_by_type)(C(BACKEND_DEVICE_TYPE_CPU));
    r->n_devs = GB(dev_count)();
    r->dev0 = r->n_devs ? GB(dev_get)(0) : NULL;
    return NULL;
}

static void test_first_use(void) {
    struct first_seen seen[N_FIRST];
    pthread_t th[N_FIRST];
    memset(seen, 0, sizeof(seen));
    pthread_barrier_init(&first_barrier, NULL, N_FIRST);
    for (int i = 0; i < N_FIRST; i++) {
        CHECK(pthread_create(&th[i], NULL, first_main, &seen[i]) == 0);
    }
    for (int i = 0; i < N_FIRST; i++) {
        pthread_join(th[i], NULL);
    }
    pthread_barrier_destroy(&first_barrier);
    CHECK(seen[0].n_regs >= 1 && seen[0].n_devs >= 1);
    CHECK(seen[0].cpu_reg != NULL && seen[0].cpu_dev != NULL && seen[0].cpu_buft != NULL);
    CHECK(GB(dev_backend_reg)(seen[0].cpu_dev) == seen[0].cpu_reg);
    for (int i = 1; i < N_FIRST; i++) {
        CHECK(seen[i].n_regs == seen[0].n_regs);
        CHECK(seen[i].n_devs == seen[0].n_devs);
        CHECK(seen[i].cpu_reg == seen[0].cpu_reg);
        CHECK(seen[i].cpu_dev == seen[0].cpu_dev);
        CHECK(seen[i].cpu_buft == seen[0].cpu_buft);
        CHECK(seen[i].dev0 == seen[0].dev0);
    }
    /* and the main thread agrees afterwards */
    CHECK(GB(reg_count)() == seen[0].n_regs);
    CHECK(GB(dev_count)() == seen[0].n_devs);
}

/* ------------------------------------------------------------------ B. 4 schedulers, shared weights */

#define N_SCHED 4
#define NW 4   /* shared weight tensors */
#define NE 61  /* elements: odd, so SIMD loops have leftovers */

static tensor_t * weights[NW];
static float wval[NW][NE];

struct sched_arg {
    int id;
    int iters;
    int errors;
    int computed;
    long stream_nodes;
};

static const float scales[4] = { 0.5f, 2.0f, -1.5f, 0.25f };

/* the chain of thread `id` in iteration `it`: op j is MUL/ADD by a weight or SCALE */
static int chain_len(int id, int it) { return 2 + (id + it) % 5; }
static int chain_op(int id, int it, int j) { return (id * 7 + it * 3 + j) % 3; }
static int chain_w(int id, int it, int j) { return (id + it + j) % NW; }

static void * sched_main(void * p) {
    struct sched_arg * a = p;
    GB(t) cpu = cpu_backend();
    GB(t) stream = (a->id % 2) ? stream_init(20) : NULL;
    GB(t) backends[2];
    int n = 0;
    if (stream) {
        backends[n++] = stream;
    }
    backends[n++] = cpu;
    bool parallel = a->id >= 2;
    GB(sched_t) s = new_sched(backends, n, 256, parallel);
    CHECK(s != NULL);
    if (!s) {
        a->errors++;
        return NULL;
    }
    CHECK(GB(sched_get_n_copies)(s) == (parallel ? 4 : 1));
    GB(dev_t) cpu_dev = GB(dev_by_type)(C(BACKEND_DEVICE_TYPE_CPU));

    float x[NE], want[NE], got[NE];
    for (int it = 0; it < a->iters; it++) {
        struct G(context) * ctx = new_ctx(32);
        tensor_t * in = G(new_tensor_1d)(ctx, C(TYPE_F32), NE);
        G(set_name)(in, "x");
        G(set_input)(in);
        tensor_t * h = in;
        for (int i = 0; i < NE; i++) {
            x[i] = (float) ((a->id * 13 + it * 5 + i) % 17) * 0.25f - 2.0f;
            want[i] = x[i];
        }
        int len = chain_len(a->id, it);
        for (int j = 0; j < len; j++) {
            int op = chain_op(a->id, it, j), w = chain_w(a->id, it, j);
            if (op == 0) {
                h = G(mul)(ctx, h, weights[w]);
                for (int i = 0; i < NE; i++) { volatile float r = want[i] * wval[w][i]; want[i] = r; }
            } else if (op == 1) {
                h = G(add)(ctx, h, weights[w]);
                for (int i = 0; i < NE; i++) { volatile float r = want[i] + wval[w][i]; want[i] = r; }
            } else {
                float sc = scales[(j + it) % 4];
                h = G(scale)(ctx, h, sc);
                for (int i = 0; i < NE; i++) { volatile float r = want[i] * sc; want[i] = r; }
            }
        }
        G(set_output)(h);
        struct G(cgraph) * g = G(new_graph)(ctx);
        G(build_forward_expand)(g, h);

        GB(sched_reset)(s);
        bool ok = GB(sched_alloc_graph)(s, g);
        CHECK(ok);
        if (ok) {
            GB(tensor_set)(in, x, 0, sizeof(x));
            enum G(status) st = GB(sched_graph_compute)(s, g);
            CHECK(st == C(STATUS_SUCCESS));
            memset(got, 0, sizeof(got));
            GB(tensor_get)(h, got, 0, sizeof(got));
            bool same = memcmp(got, want, sizeof(got)) == 0;
            CHECK(same);
            if (!same) {
                a->errors++;
                pthread_mutex_lock(&report_mu);
                fprintf(stderr, "thread %d iteration %d: got[0]=%g want[0]=%g\n", a->id, it, got[0], want[0]);
                pthread_mutex_unlock(&report_mu);
            } else {
                a->computed++;
            }
            /* the same allocated graph again with new inputs (not parallel: stock semantics) */
            if (!parallel && it % 4 == 0) {
                for (int i = 0; i < NE; i++) {
                    x[i] += 1.0f;
                }
                GB(tensor_set)(in, x, 0, sizeof(x));
                CHECK(GB(sched_graph_compute)(s, g) == C(STATUS_SUCCESS));
            }
        }
        /* registry lookups interleaved with the other threads' work */
        CHECK(GB(dev_by_type)(C(BACKEND_DEVICE_TYPE_CPU)) == cpu_dev);
        G(free)(ctx);
    }
    GB(sched_free)(s);
    if (stream) {
        a->stream_nodes = ((struct stream *) stream->context)->computed_nodes;
        GB(free)(stream);
    }
    GB(free)(cpu);
    return NULL;
}

static void test_schedulers(int iters) {
    struct G(context) * wctx = new_ctx(NW);
    for (int k = 0; k < NW; k++) {
        weights[k] = G(new_tensor_1d)(wctx, C(TYPE_F32), NE);
        for (int i = 0; i < NE; i++) {
            wval[k][i] = (float) ((i * (k + 3)) % 11) * 0.125f + 0.5f * (float) k - 0.75f;
        }
    }
    GB(buffer_t) wbuf = G(backend_alloc_ctx_tensors_from_buft)(wctx, GB(cpu_buffer_type)());
    CHECK(wbuf != NULL);
    if (!wbuf) {
        return;
    }
    GB(buffer_set_usage)(wbuf, C(BACKEND_BUFFER_USAGE_WEIGHTS));
    for (int k = 0; k < NW; k++) {
        CHECK(weights[k]->buffer == wbuf);
        GB(tensor_set)(weights[k], wval[k], 0, sizeof(wval[k]));
    }

    pthread_t th[N_SCHED];
    struct sched_arg args[N_SCHED];
    for (int i = 0; i < N_SCHED; i++) {
        args[i] = (struct sched_arg) { .id = i, .iters = iters };
        CHECK(pthread_create(&th[i], NULL, sched_main, &args[i]) == 0);
    }
    int total = 0;
    for (int i = 0; i < N_SCHED; i++) {
        pthread_join(th[i], NULL);
        CHECK(args[i].errors == 0);
        CHECK(args[i].computed == iters);
        total += args[i].computed;
        if (i % 2) {
            CHECK(args[i].stream_nodes > 0); /* the fake stream really computed offloaded ops */
        }
    }
    /* the shared weights are untouched */
    float w[NE];
    for (int k = 0; k < NW; k++) {
        GB(tensor_get)(weights[k], w, 0, sizeof(w));
        CHECK(memcmp(w, wval[k], sizeof(w)) == 0);
    }
    printf("threads %s: B. %d schedulers x %d iterations = %d graphs computed and checked (stream nodes: %ld, %ld)\n",
           PREFIX, N_SCHED, iters, total, args[1].stream_nodes, args[3].stream_nodes);
    GB(buffer_free)(wbuf);
    G(free)(wctx);
}

/* ------------------------------------------------------------------ C. events across two streams */

#define EV_NE 1024

struct ev_shared {
    GB(t) a, b;
    GB(event_t) ev;
    tensor_t * t;
    int iters;
    /* host-side handshake: produced = last iteration recorded on A; consumed = last read by B */
    pthread_mutex_t m;
    pthread_cond_t cv;
    int produced, consumed;
    int errors;
};

static void fill_iter(int32_t * v, int k) {
    for (int i = 0; i < EV_NE; i++) {
        v[i] = k * 100000 + i;
    }
}

static void * ev_producer(void * p) {
    struct ev_shared * s = p;
    int32_t * v = malloc(sizeof(int32_t) * EV_NE);
    for (int k = 1; k <= s->iters; k++) {
        pthread_mutex_lock(&s->m);
        while (s->consumed < k - 1) {
            pthread_cond_wait(&s->cv, &s->m);
        }
        pthread_mutex_unlock(&s->m);
        fill_iter(v, k);
        /* the write lands later (the stream sleeps first); the event marks its completion */
        GB(tensor_set_async)(s->a, s->t, v, 0, sizeof(int32_t) * EV_NE);
        GB(event_record)(s->ev, s->a);
        pthread_mutex_lock(&s->m);
        s->produced = k;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->m);
        if (k % 16 == 0) {
            GB(event_synchronize)(s->ev); /* the host may also wait on it */
        }
    }
    GB(synchronize)(s->a);
    free(v);
    return NULL;
}

static void * ev_consumer(void * p) {
    struct ev_shared * s = p;
    int32_t * got = malloc(sizeof(int32_t) * EV_NE);
    int32_t * want = malloc(sizeof(int32_t) * EV_NE);
    for (int k = 1; k <= s->iters; k++) {
        pthread_mutex_lock(&s->m);
        while (s->produced < k) {
            pthread_cond_wait(&s->cv, &s->m);
        }
        pthread_mutex_unlock(&s->m);
        memset(got, 0, sizeof(int32_t) * EV_NE);
        /* stream B waits for A's event, then reads: it must see A's write of iteration k */
        GB(event_wait)(s->b, s->ev);
        GB(tensor_get_async)(s->b, s->t, got, 0, sizeof(int32_t) * EV_NE);
        GB(synchronize)(s->b);
        fill_iter(want, k);
        if (memcmp(got, want, sizeof(int32_t) * EV_NE) != 0) {
            s->errors++;
        }
        if (k % 8 == 0) {
            GB(event_synchronize)(s->ev);
            memset(got, 0, sizeof(int32_t) * EV_NE);
            GB(tensor_get)(s->t, got, 0, sizeof(int32_t) * EV_NE);
            if (memcmp(got, want, sizeof(int32_t) * EV_NE) != 0) {
                s->errors++;
            }
        }
        pthread_mutex_lock(&s->m);
        s->consumed = k;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->m);
    }
    free(got);
    free(want);
    return NULL;
}

static void test_events(int iters) {
    struct ev_shared s;
    memset(&s, 0, sizeof(s));
    pthread_mutex_init(&s.m, NULL);
    pthread_cond_init(&s.cv, NULL);
    s.iters = iters;
    s.a = stream_init(50);
    s.b = stream_init(0);
    s.ev = GB(event_new)(&stream_dev);
    CHECK(s.ev != NULL);
    CHECK(GB(event_new)(GB(dev_by_type)(C(BACKEND_DEVICE_TYPE_CPU))) == NULL); /* the CPU device has none */
    struct G(context) * ctx = new_ctx(2);
    s.t = G(new_tensor_1d)(ctx, C(TYPE_I32), EV_NE);
    GB(buffer_t) buf = G(backend_alloc_ctx_tensors_from_buft)(ctx, &stream_buft);
    CHECK(buf != NULL && s.t->buffer == buf);
    if (!s.ev || !buf) {
        return;
    }
    GB(buffer_clear)(buf, 0);

    pthread_t tp, tc;
    CHECK(pthread_create(&tp, NULL, ev_producer, &s) == 0);
    CHECK(pthread_create(&tc, NULL, ev_consumer, &s) == 0);
    pthread_join(tp, NULL);
    pthread_join(tc, NULL);
    CHECK(s.errors == 0);
    CHECK(s.consumed == iters);
    printf("threads %s: C. 2 host threads x 2 streams x %d iterations of record/wait/synchronize, %d mismatches\n",
           PREFIX, iters, s.errors);

    GB(event_free)(s.ev);
    GB(buffer_free)(buf);
    G(free)(ctx);
    GB(free)(s.a);
    GB(free)(s.b);
    pthread_mutex_destroy(&s.m);
    pthread_cond_destroy(&s.cv);
}

/* ------------------------------------------------------------------ main */

/* Extra rounds of A in fresh processes (the registry is built once per process). */
static int first_use_rounds(const char * self, int rounds) {
    int bad = 0;
    for (int r = 1; r < rounds; r++) {
        char * argv[] = { (char *) self, (char *) "--first-use", NULL };
        pid_t pid;
        if (posix_spawn(&pid, self, NULL, NULL, argv, environ) != 0) {
            perror("posix_spawn");
            return 1;
        }
        int st = 0;
        waitpid(pid, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "first-use round %d failed (status %d)\n", r, st);
            bad++;
        }
    }
    return bad;
}

int main(int argc, char ** argv) {
    /* A comes first: nothing before it may touch the registry. THREADS_PARTS (default "ABC")
     * selects parts; without A the registry is built by the main thread alone (scripts/valgrind.sh
     * runs helgrind that way over B and C, and over A separately). */
    const char * parts = getenv("THREADS_PARTS");
    bool part_a = !parts || strchr(parts, 'A') || (argc > 1 && strcmp(argv[1], "--first-use") == 0);
    if (part_a) {
        test_first_use();
    } else {
        CHECK(GB(reg_count)() >= 1 && GB(dev_by_type)(C(BACKEND_DEVICE_TYPE_CPU)) != NULL);
    }
    G(log_set)(on_log, NULL);
    if (argc > 1 && strcmp(argv[1], "--first-use") == 0) {
        return n_failed ? 1 : 0;
    }
    if (part_a) {
        int rounds = env_int("THREADS_FIRST_USE_ROUNDS", 5);
        int bad_rounds = first_use_rounds("/proc/self/exe", rounds);
        CHECK(bad_rounds == 0);
        printf("threads %s: A. %d threads x %d rounds of first registry use\n", PREFIX, N_FIRST, rounds);
    }

    stream_setup();
    if (!parts || strchr(parts, 'B')) {
        test_schedulers(env_int("THREADS_ITERS", 100));
    }
    if (!parts || strchr(parts, 'C')) {
        test_events(env_int("THREADS_EVENT_ITERS", 200));
    }

    CHECK(n_errors_logged == 0);
    printf("threads %s (%s): %d checks, %d failed\n", PREFIX, GGML_RS_TEST_MODE, n_checks, n_failed);
    return n_failed ? 1 : 0;
}
