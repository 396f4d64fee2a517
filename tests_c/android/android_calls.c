/*
 * Calls into the Android build of the library (loaded by loader.c from GGML_RS_ANDROID_SO) from
 * ggml's core without ggml-cpu: registry and device enumeration, CPU buffers and tensor I/O
 * (exact bytes), a scheduler graph computed on the SIMD device against values computed here,
 * bad input (one log line through the host's logger, a "no" value, no crash), and with the
 * argument "panic" a panic injected into one export (GGML_RS_FAULT_PANIC, set by the test):
 * unwinding through the library's own libunwind must stop at the export's guard.
 */
#include <math.h>
#include <stdint.h>
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

static int n_errors;
static char last_error[512];
static void on_log(enum G(log_level) level, const char * text, void * user) {
    (void) user;
    if (level == C(LOG_LEVEL_ERROR)) {
        n_errors++;
        snprintf(last_error, sizeof last_error, "%s", text);
    }
}
/* the call logged exactly one error line containing `what` */
static int logged(int before, const char * what) {
    return n_errors == before + 1 && strstr(last_error, what) != NULL;
}

static void registry(void) {
    CHECK(GB(reg_count)() >= 1);
    GB(reg_t) simd = GB(reg_by_name)("SIMD");
    CHECK(simd != NULL && simd == GB(simd_reg)());
    CHECK(strcmp(GB(reg_name)(simd), "SIMD") == 0);
    CHECK(GB(reg_dev_count)(simd) == 1);
    /* no ggml-cpu in this host core: the SIMD device is the CPU device */
    CHECK(GB(dev_count)() == 1);
    GB(dev_t) dev = GB(dev_get)(0);
    CHECK(dev != NULL && dev == GB(reg_dev_get)(simd, 0));
    CHECK(strcmp(GB(dev_name)(dev), "SIMD") == 0);
    CHECK(GB(dev_type)(dev) == C(BACKEND_DEVICE_TYPE_CPU));
    CHECK(GB(dev_by_type)(C(BACKEND_DEVICE_TYPE_CPU)) == dev);
    CHECK(GB(dev_by_name)("SIMD") == dev);
    CHECK(GB(dev_backend_reg)(dev) == simd);
    size_t free_mem = 0, total = 0;
    GB(dev_memory)(dev, &free_mem, &total);
    CHECK(total > 0 && free_mem <= total);
    printf("registry: %zu reg(s), device %s (%s), memory %zu / %zu MiB\n", GB(reg_count)(),
           GB(dev_name)(dev), GB(dev_description)(dev), free_mem >> 20, total >> 20);
}

static void buffers(void) {
    GB(buffer_type_t) buft = GB(cpu_buffer_type)();
    CHECK(strcmp(GB(buft_name)(buft), "CPU") == 0);
    CHECK(GB(buft_get_alignment)(buft) == 32);
    CHECK(GB(buft_is_host)(buft));

    struct G(init_params) ip = { 8 * G(tensor_overhead)(), NULL, true };
    struct G(context) * ctx = G(init)(ip);
    struct G(tensor) * a = G(new_tensor_1d)(ctx, C(TYPE_F32), 1000);
    struct G(tensor) * b = G(new_tensor_1d)(ctx, C(TYPE_F32), 1000);
    GB(buffer_t) buf = G(backend_alloc_ctx_tensors_from_buft)(ctx, buft);
    CHECK(buf != NULL);
    CHECK(strcmp(GB(buffer_name)(buf), "CPU") == 0);
    CHECK(((uintptr_t) GB(buffer_get_base)(buf)) % 64 == 0);
    CHECK(GB(buffer_get_size)(buf) >= 2 * 1000 * sizeof(float));
    CHECK(a->buffer == buf && b->buffer == buf && a->data != b->data);

    static float src[1000], got[1000];
    for (int i = 0; i < 1000; i++) src[i] = (float) i * 0.25f - 7.0f;
    GB(tensor_set)(a, src, 0, sizeof src);
    GB(tensor_get)(a, got, 0, sizeof got);
    CHECK(memcmp(src, got, sizeof src) == 0);
    CHECK(memcmp(a->data, src, sizeof src) == 0); /* a host buffer: the bytes are in place */
    float part[10] = {0};
    GB(tensor_get)(a, part, 100 * sizeof(float), sizeof part);
    CHECK(memcmp(part, src + 100, sizeof part) == 0);
    GB(tensor_memset)(a, 0xAB, 4, 8);
    const unsigned char * p = a->data;
    CHECK(p[3] == ((const unsigned char *) src)[3] && p[4] == 0xAB && p[11] == 0xAB && p[12] == ((const unsigned char *) src)[12]);
    GB(tensor_copy)(a, b);
    CHECK(memcmp(a->data, b->data, sizeof src) == 0);
    GB(buffer_clear)(buf, 0);
    static const float zeros[1000];
    CHECK(memcmp(a->data, zeros, sizeof zeros) == 0 && memcmp(b->data, zeros, sizeof zeros) == 0);
    GB(buffer_free)(buf);

    /* memory the caller owns (aligned as ggml requires: TENSOR_ALIGNMENT, 32) */
    static float mine[64] __attribute__((aligned(32)));
    GB(buffer_t) mapped = GB(cpu_buffer_from_ptr)(mine, sizeof mine);
    CHECK(mapped != NULL);
    if (!mapped) return;
    CHECK(GB(buffer_get_base)(mapped) == (void *) mine);
    CHECK(strcmp(GB(buffer_name)(mapped), "CPU_Mapped") == 0);
    GB(buffer_clear)(mapped, 0x3F);
    CHECK(((unsigned char *) mine)[0] == 0x3F && ((unsigned char *) mine)[sizeof mine - 1] == 0x3F);
    GB(buffer_free)(mapped);
    G(free)(ctx);
}

/* (a + b) * b, scaled: F32 on the SIMD device through the scheduler; each element is one IEEE
   add and two multiplies, so the values here are exact */
static void graph(void) {
    enum { N = 333 };
    GB(t) be = GB(init_best)();
    CHECK(be != NULL && GB(is_simd)(be));
    struct G(init_params) ip = { 16 * G(tensor_overhead)() + G(graph_overhead)(), NULL, true };
    struct G(context) * ctx = G(init)(ip);
    struct G(tensor) * a = G(new_tensor_1d)(ctx, C(TYPE_F32), N);
    struct G(tensor) * b = G(new_tensor_1d)(ctx, C(TYPE_F32), N);
    struct G(tensor) * y = G(scale)(ctx, G(mul)(ctx, G(add)(ctx, a, b), b), 0.5f);
    struct G(cgraph) * g = G(new_graph)(ctx);
    G(build_forward_expand)(g, y);
    GB(buffer_t) wbuf = G(backend_alloc_ctx_tensors)(ctx, be);
    CHECK(wbuf != NULL);
    static float av[N], bv[N], got[N];
    for (int i = 0; i < N; i++) { av[i] = (float) (i % 17) - 8.5f; bv[i] = (float) (i % 5) * 0.125f + 1.0f; }
    GB(tensor_set)(a, av, 0, sizeof av);
    GB(tensor_set)(b, bv, 0, sizeof bv);
    GB(sched_t) sched;
#if defined(TEST_PREFIX_WSP)
    sched = GB(sched_new)(&be, NULL, 1, 64, false, true);
#else
    sched = GB(sched_new)(&be, NULL, 1, 64, false);
#endif
    CHECK(sched != NULL);
    CHECK(GB(sched_graph_compute)(sched, g) == C(STATUS_SUCCESS));
    CHECK(GB(sched_get_n_splits)(sched) == 1);
    GB(tensor_get)(y, got, 0, sizeof got);
    int wrong = 0;
    for (int i = 0; i < N; i++) {
        float want = ((av[i] + bv[i]) * bv[i]) * 0.5f;
        if (memcmp(&want, &got[i], sizeof want) != 0) wrong++;
    }
    CHECK(wrong == 0);
    printf("graph: (a + b) * b * 0.5 over %d elements on %s, %d differ from the reference\n", N, GB(name)(be), wrong);
    GB(sched_free)(sched);
    GB(buffer_free)(wbuf);
    G(free)(ctx);
    GB(free)(be);
}

static void bad_input(void) {
    int before = n_errors;
    GB(tensor_set)(NULL, "x", 0, 1);
    CHECK(logged(before, "tensor_set"));
    before = n_errors;
    CHECK(GB(dev_get)(7) == NULL);
    CHECK(logged(before, "dev_get"));
    before = n_errors;
    CHECK(GB(buft_alloc_buffer)(NULL, 16) == NULL);
    CHECK(logged(before, "buft_alloc_buffer"));

    struct G(init_params) ip = { 2 * G(tensor_overhead)(), NULL, true };
    struct G(context) * ctx = G(init)(ip);
    struct G(tensor) * t = G(new_tensor_1d)(ctx, C(TYPE_F32), 4);
    GB(buffer_t) buf = G(backend_alloc_ctx_tensors_from_buft)(ctx, GB(cpu_buffer_type)());
    GB(buffer_clear)(buf, 0);
    float big[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    before = n_errors;
    GB(tensor_set)(t, big, 0, sizeof big); /* 32 bytes into a 16-byte tensor: refused whole */
    CHECK(logged(before, "tensor_set"));
    static const float zeros[4];
    CHECK(memcmp(t->data, zeros, sizeof zeros) == 0);
    GB(buffer_free)(buf);
    G(free)(ctx);
    printf("bad input: %d error line(s) logged through the host's logger, last: %s", n_errors, last_error);
    if (n_errors && last_error[strlen(last_error) - 1] != '\n') printf("\n");
}

static void panic_guard(void) {
    /* GGML_RS_FAULT_PANIC=<prefix>_ggml_backend_dev_count: that export panics inside its guard */
    int before = n_errors;
    CHECK(GB(dev_count)() == 0);
    CHECK(logged(before, "internal error: fault injected"));
    /* the process and the library go on */
    CHECK(GB(dev_get)(0) != NULL);
    CHECK(GB(dev_count)() == 0);
    CHECK(n_errors == before + 2);
    printf("panic guard: caught, logged \"%.*s\", the library still answers\n", (int) strcspn(last_error, "\n"), last_error);
}

int main(int argc, char ** argv) {
    G(log_set)(on_log, NULL);
    if (argc > 1 && strcmp(argv[1], "panic") == 0) {
        panic_guard();
    } else {
        registry();
        buffers();
        graph();
        bad_input();
    }
    printf("android_calls %s: %d checks, %d failed\n", PREFIX, n_checks, n_failed);
    return n_failed ? 1 : 0;
}
