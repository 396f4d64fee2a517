/*
 * Scheduler overhead probe for the llama benchmark (linked with -Wl,--wrap into the "timed"
 * drivers, stock and static): time spent in the scheduler's entry points minus time spent in
 * ggml-cpu's graph compute, per decode graph. The same wrappers go around stock's
 * ggml-backend.cpp and around this library, so the two figures are measured the same way.
 * At exit it prints: SCHED_TIMING graphs=N median_overhead_us=X median_backend_us=Y
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ggml.h"
#include "ggml-backend.h"

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

enum { MAX_GRAPHS = 4096 };
static double overhead[MAX_GRAPHS], backend[MAX_GRAPHS];
static int n_graphs;
static double pending_sched;   /* reset + alloc_graph time before the next compute */
static double in_backend;      /* ggml_graph_compute time during the current compute */

enum lm_ggml_status __real_lm_ggml_backend_sched_graph_compute_async(lm_ggml_backend_sched_t, struct lm_ggml_cgraph *);
bool __real_lm_ggml_backend_sched_alloc_graph(lm_ggml_backend_sched_t, struct lm_ggml_cgraph *);
void __real_lm_ggml_backend_sched_reset(lm_ggml_backend_sched_t);
enum lm_ggml_status __real_lm_ggml_graph_compute(struct lm_ggml_cgraph *, struct lm_ggml_cplan *);

void __wrap_lm_ggml_backend_sched_reset(lm_ggml_backend_sched_t s) {
    double t0 = now_us();
    __real_lm_ggml_backend_sched_reset(s);
    pending_sched += now_us() - t0;
}

bool __wrap_lm_ggml_backend_sched_alloc_graph(lm_ggml_backend_sched_t s, struct lm_ggml_cgraph * g) {
    double t0 = now_us();
    bool ok = __real_lm_ggml_backend_sched_alloc_graph(s, g);
    pending_sched += now_us() - t0;
    return ok;
}

enum lm_ggml_status __wrap_lm_ggml_graph_compute(struct lm_ggml_cgraph * g, struct lm_ggml_cplan * p) {
    double t0 = now_us();
    enum lm_ggml_status st = __real_lm_ggml_graph_compute(g, p);
    in_backend += now_us() - t0;
    return st;
}

enum lm_ggml_status __wrap_lm_ggml_backend_sched_graph_compute_async(lm_ggml_backend_sched_t s, struct lm_ggml_cgraph * g) {
    in_backend = 0;
    double t0 = now_us();
    enum lm_ggml_status st = __real_lm_ggml_backend_sched_graph_compute_async(s, g);
    double total = now_us() - t0;
    if (n_graphs < MAX_GRAPHS) {
        overhead[n_graphs] = pending_sched + total - in_backend;
        backend[n_graphs] = in_backend;
        n_graphs++;
    }
    pending_sched = 0;
    return st;
}

static int cmp_d(const void * a, const void * b) {
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

__attribute__((destructor)) static void report(void) {
    if (n_graphs == 0) return;
    qsort(overhead, n_graphs, sizeof(double), cmp_d);
    qsort(backend, n_graphs, sizeof(double), cmp_d);
    printf("SCHED_TIMING graphs=%d median_overhead_us=%.2f median_backend_us=%.1f\n",
           n_graphs, overhead[n_graphs / 2], backend[n_graphs / 2]);
    fflush(stdout);
}
