/*
 * Conformance test of ggml-backend-rs against a host's own ggml core (ggml.c, ggml-alloc.c,
 * ggml-cpu). One source, compiled twice:
 *
 *   -DTEST_PREFIX_LM   llama.rn 0.4.4   (lm_ggml_*,  LM_GGML_*)
 *   -DTEST_PREFIX_WSP  whisper.rn 0.4.3 (wsp_ggml_*, WSP_GGML_*)
 *
 * Every check asserts a real outcome: bytes, pointers, return values, and the log line our
 * library must send through the host's logger for bad input ("<p>ggml_backend_<fn>: <message>",
 * one line at ERROR level, caught here with <p>ggml_log_set).
 *
 * Exit code: 0 when every check passed, 1 otherwise. Each section runs in a forked child so that a
 * crash is reported (as one failed check) without hiding the other sections; set
 * CONFORMANCE_NO_FORK=1 to run everything in one process (e.g. under a debugger), and
 * CONFORMANCE_VERBOSE=1 to echo every log line the host receives.
 */
#ifndef _GNU_SOURCE
#    define _GNU_SOURCE /* posix_memalign, mkdtemp, fork */
#endif
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-backend-impl.h"
#include "ggml-cpu.h"

#define TEST_PREFIX_FEATURES_ONLY
#include "test_prefix.h"

/* ------------------------------------------------------------------ prefix macros */

#if defined(TEST_PREFIX_LM) == defined(TEST_PREFIX_WSP)
#    error "define exactly one of TEST_PREFIX_LM, TEST_PREFIX_WSP"
#endif

#ifdef TEST_PREFIX_LM
#    define PFX "lm_"
#    define G(x)  lm_ggml_##x
#    define GB(x) lm_ggml_backend_##x
#    define C(x)  LM_GGML_##x
#else
#    define PFX "wsp_"
#    define G(x)  wsp_ggml_##x
#    define GB(x) wsp_ggml_backend_##x
#    define C(x)  WSP_GGML_##x
#endif

typedef GB(buffer_type_t) buft_t;
typedef GB(buffer_t)      buffer_t;
typedef GB(t)             backend_t;
typedef GB(dev_t)         dev_t_;
typedef GB(reg_t)         reg_t;
typedef GB(event_t)       event_t;
typedef struct G(tensor)  tensor_t;

#define STATUS_SUCCESS C(STATUS_SUCCESS)
#define STATUS_FAILED  C(STATUS_FAILED)
#define USAGE_ANY      C(BACKEND_BUFFER_USAGE_ANY)
#define USAGE_WEIGHTS  C(BACKEND_BUFFER_USAGE_WEIGHTS)
#define USAGE_COMPUTE  C(BACKEND_BUFFER_USAGE_COMPUTE)
#define DEV_CPU        C(BACKEND_DEVICE_TYPE_CPU)
#define DEV_GPU        C(BACKEND_DEVICE_TYPE_GPU)
#define DEV_ACCEL      C(BACKEND_DEVICE_TYPE_ACCEL)

/* tensor_alloc / view_init / buffer_init_tensor return void in lm, enum ggml_status in wsp.
 * INIT_OK(call) runs the call and evaluates to whether it reported success (always true in lm). */
#ifdef TEST_API_STATUS
#    define INIT_OK(call)     ((call) == STATUS_SUCCESS)
#    define INIT_FAILED(call) ((call) == STATUS_FAILED)
#else
#    define INIT_OK(call)     ((call), true)
#    define INIT_FAILED(call) ((call), true)
#endif

/* ------------------------------------------------------------------ harness */

/* Counters in shared memory: each section runs in a forked child (see run_section), so a crash
 * in one section is reported as a failure without losing the other sections' results. */
struct counters {
    int checks;
    int failed;
};
static struct counters * counters;
#define n_checks (counters->checks)
#define n_failed (counters->failed)

static void check_impl(bool ok, const char * expr, const char * file, int line) {
    n_checks++;
    if (!ok) {
        n_failed++;
        fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, expr);
    }
}
#define CHECK(cond) check_impl((cond) ? true : false, #cond, __FILE__, __LINE__)

#define MAX_LOG_LINES 16
static char log_lines[MAX_LOG_LINES][1024];
static int  log_n = 0;   /* ERROR lines since the last reset (may exceed MAX_LOG_LINES) */
static bool log_verbose = false;

static void log_cb(enum G(log_level) level, const char * text, void * user_data) {
    (void) user_data;
    if (level == C(LOG_LEVEL_ERROR)) {
        if (log_n < MAX_LOG_LINES) {
            snprintf(log_lines[log_n], sizeof(log_lines[0]), "%s", text);
        }
        log_n++;
    }
    if (log_verbose) {
        fprintf(stderr, "[log %d] %s", (int) level, text);
    }
}

static void log_reset(void) {
    log_n = 0;
}

static void dump_log(void) {
    for (int i = 0; i < log_n && i < MAX_LOG_LINES; i++) {
        fprintf(stderr, "    logged: %s", log_lines[i]);
        size_t n = strlen(log_lines[i]);
        if (n == 0 || log_lines[i][n - 1] != '\n') {
            fprintf(stderr, "\n");
        }
    }
}

/* Exactly one ERROR line, "<p>ggml_backend_<fn>: ...\n", containing `sub` (if given). */
static void expect_log_impl(const char * fn, const char * sub, const char * file, int line) {
    char want[256];
    snprintf(want, sizeof(want), "%sggml_backend_%s: ", PFX, fn);
    bool ok = log_n == 1;
    if (ok) {
        const char * l = log_lines[0];
        size_t n = strlen(l);
        ok = strncmp(l, want, strlen(want)) == 0 && n > strlen(want) + 1 && l[n - 1] == '\n' &&
             strchr(l, '\n') == l + n - 1 && (sub == NULL || strstr(l, sub) != NULL);
    }
    n_checks++;
    if (!ok) {
        n_failed++;
        fprintf(stderr, "%s:%d: EXPECT_LOG failed: wanted one ERROR line starting \"%s\"%s%s%s, got %d line(s)\n",
                file, line, want, sub ? " containing \"" : "", sub ? sub : "", sub ? "\"" : "", log_n);
        dump_log();
    }
    log_reset();
}
#define EXPECT_LOG(fn, sub) expect_log_impl((fn), (sub), __FILE__, __LINE__)

/* At least one ERROR line containing `sub` (for failures where the host's own code logs too). */
static void expect_log_some_impl(const char * sub, const char * file, int line) {
    bool ok = false;
    for (int i = 0; i < log_n && i < MAX_LOG_LINES; i++) {
        if (strstr(log_lines[i], sub)) {
            ok = true;
        }
    }
    n_checks++;
    if (!ok) {
        n_failed++;
        fprintf(stderr, "%s:%d: EXPECT_LOG_SOME failed: no ERROR line containing \"%s\" (%d line(s))\n", file, line, sub, log_n);
        dump_log();
    }
    log_reset();
}
#define EXPECT_LOG_SOME(sub) expect_log_some_impl((sub), __FILE__, __LINE__)

static void expect_no_log_impl(const char * file, int line) {
    n_checks++;
    if (log_n != 0) {
        n_failed++;
        fprintf(stderr, "%s:%d: EXPECT_NO_LOG failed: %d ERROR line(s)\n", file, line, log_n);
        dump_log();
    }
    log_reset();
}
#define EXPECT_NO_LOG() expect_no_log_impl(__FILE__, __LINE__)

static bool str_eq(const char * a, const char * b) {
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static bool all_bytes(const void * p, uint8_t v, size_t n) {
    const uint8_t * b = (const uint8_t *) p;
    for (size_t i = 0; i < n; i++) {
        if (b[i] != v) {
            return false;
        }
    }
    return true;
}

static void fill_pattern(void * p, size_t n, uint8_t seed) {
    uint8_t * b = (uint8_t *) p;
    for (size_t i = 0; i < n; i++) {
        b[i] = (uint8_t) (seed + i * 7);
    }
}

static void * aligned_block(size_t n) {
    void * p = NULL;
    if (posix_memalign(&p, 64, n) != 0) {
        fprintf(stderr, "posix_memalign failed\n");
        exit(2);
    }
    return p;
}

static struct G(context) * new_ctx(size_t n_tensors) {
    struct G(init_params) params = {
        /*.mem_size   =*/ n_tensors * G(tensor_overhead)() + G(graph_overhead)() + 1024,
        /*.mem_buffer =*/ NULL,
        /*.no_alloc   =*/ true,
    };
    struct G(context) * ctx = G(init)(params);
    if (!ctx) {
        fprintf(stderr, "ggml_init failed\n");
        exit(2);
    }
    return ctx;
}

#define CANARY 0xC5

/* ------------------------------------------------------------------ fakes */

/* A non-host buffer type whose buffers count calls and lack get_tensor, memset_tensor, clear. */
static int fake_free_calls = 0;
static int fake_set_calls = 0;
static int fake_init_calls = 0;
static bool fake_buft_alloc_fails = false;

static void fake_buffer_free(buffer_t buffer) {
    fake_free_calls++;
    free(buffer->context);
}

static void * fake_buffer_get_base(buffer_t buffer) {
    return buffer->context;
}

#ifdef TEST_API_STATUS
static enum G(status) fake_buffer_init_tensor(buffer_t buffer, tensor_t * tensor) {
    (void) buffer;
    (void) tensor;
    fake_init_calls++;
    return STATUS_SUCCESS;
}
static enum G(status) fake_buffer_init_tensor_fail(buffer_t buffer, tensor_t * tensor) {
    (void) buffer;
    (void) tensor;
    fake_init_calls++;
    return C(STATUS_ALLOC_FAILED);
}
#else
static void fake_buffer_init_tensor(buffer_t buffer, tensor_t * tensor) {
    (void) buffer;
    (void) tensor;
    fake_init_calls++;
}
#endif

static void fake_buffer_set_tensor(buffer_t buffer, tensor_t * tensor, const void * data, size_t offset, size_t size) {
    (void) buffer;
    fake_set_calls++;
    memcpy((char *) tensor->data + offset, data, size);
}

static const struct GB(buffer_i) fake_buffer_iface = {
    .free_buffer = fake_buffer_free,
    .get_base    = fake_buffer_get_base,
    .init_tensor = fake_buffer_init_tensor,
    .set_tensor  = fake_buffer_set_tensor,
    /* memset_tensor, get_tensor, cpy_tensor, clear, reset: NULL */
};

static const char * fake_buft_name(buft_t buft) {
    (void) buft;
    return "FAKE";
}

static buffer_t fake_buft_alloc(buft_t buft, size_t size) {
    if (fake_buft_alloc_fails) {
        return NULL;
    }
    return GB(buffer_init)(buft, fake_buffer_iface, aligned_block(size), size);
}

static size_t fake_buft_alignment(buft_t buft) {
    (void) buft;
    return 16;
}

static struct GB(buffer_type) fake_buft = {
    .iface = {
        .get_name      = fake_buft_name,
        .alloc_buffer  = fake_buft_alloc,
        .get_alignment = fake_buft_alignment,
        /* get_max_size, get_alloc_size, is_host: NULL (defaults) */
    },
    .device  = NULL,
    .context = NULL,
};

/* A fake reg "FAKEREG" with one accelerator device "FAKEDEV" (no events, no backend). */
static const char * fake_dev_name(dev_t_ dev) {
    return (const char *) dev->context;
}
static const char * fake_dev_description(dev_t_ dev) {
    (void) dev;
    return "fake device for the conformance test";
}
static void fake_dev_memory(dev_t_ dev, size_t * free_mem, size_t * total) {
    (void) dev;
    *free_mem = 1234;
    *total = 5678;
}
static enum GB(dev_type) fake_dev_type(dev_t_ dev) {
    (void) dev;
    return DEV_ACCEL;
}
static void fake_dev_props(dev_t_ dev, struct GB(dev_props) * props) {
    props->name = fake_dev_name(dev);
    props->description = fake_dev_description(dev);
    fake_dev_memory(dev, &props->memory_free, &props->memory_total);
    props->type = DEV_ACCEL;
}
static backend_t fake_dev_init(dev_t_ dev, const char * params) {
    (void) dev;
    (void) params;
    return NULL;
}
static buft_t fake_dev_buft(dev_t_ dev) {
    (void) dev;
    return &fake_buft;
}
static bool fake_dev_supports_op(dev_t_ dev, const tensor_t * op) {
    (void) dev;
    (void) op;
    return false;
}
static bool fake_dev_supports_buft(dev_t_ dev, buft_t buft) {
    (void) dev;
    return buft == &fake_buft;
}

/* an initializer, not a const object: static initializers cannot copy another object */
#define FAKE_DEV_IFACE {                        \
        .get_name        = fake_dev_name,        \
        .get_description = fake_dev_description, \
        .get_memory      = fake_dev_memory,      \
        .get_type        = fake_dev_type,        \
        .get_props       = fake_dev_props,       \
        .init_backend    = fake_dev_init,        \
        .get_buffer_type = fake_dev_buft,        \
        .supports_op     = fake_dev_supports_op, \
        .supports_buft   = fake_dev_supports_buft, \
    }

static struct GB(reg) fake_reg;
static struct GB(device) fake_dev  = { .iface = FAKE_DEV_IFACE, .reg = &fake_reg, .context = (void *) "FAKEDEV" };
static struct GB(device) fake_dev2 = { .iface = FAKE_DEV_IFACE, .reg = &fake_reg, .context = (void *) "FAKEDEV2" };

static const char * fake_reg_name(reg_t reg) {
    (void) reg;
    return "FAKEREG";
}
static size_t fake_reg_dev_count(reg_t reg) {
    (void) reg;
    return 1;
}
static dev_t_ fake_reg_dev_get(reg_t reg, size_t index) {
    (void) reg;
    return index == 0 ? &fake_dev : NULL;
}

static struct GB(reg) fake_reg = {
#ifdef TEST_API_REG_VERSION
    .api_version = C(BACKEND_API_VERSION),
#endif
    .iface = {
        .get_name         = fake_reg_name,
        .get_device_count = fake_reg_dev_count,
        .get_device       = fake_reg_dev_get,
        .get_proc_address = NULL,
    },
    .context = NULL,
};

/* ------------------------------------------------------------------ 1. CPU buffer type */

static void test_cpu_buffer_type(void) {
    buft_t buft = GB(cpu_buffer_type)();
    CHECK(buft != NULL);
    CHECK(GB(cpu_buffer_type)() == buft);
    CHECK(str_eq(GB(buft_name)(buft), "CPU"));
    CHECK(GB(buft_get_alignment)(buft) == 32);
    CHECK(GB(buft_get_max_size)(buft) == SIZE_MAX);
    CHECK(GB(buft_is_host)(buft));
    CHECK(GB(buft_get_device)(buft) == NULL);
    EXPECT_NO_LOG();

    buffer_t buf = GB(buft_alloc_buffer)(buft, 1000);
    CHECK(buf != NULL);
    if (!buf) {
        return;
    }
    void * base = GB(buffer_get_base)(buf);
    CHECK(base != NULL);
    CHECK(((uintptr_t) base % 64) == 0);
    CHECK(GB(buffer_get_size)(buf) == 1000);
    CHECK(str_eq(GB(buffer_name)(buf), "CPU"));
    CHECK(GB(buffer_get_type)(buf) == buft);
    CHECK(GB(buffer_is_host)(buf));
    CHECK(GB(buffer_get_alignment)(buf) == 32);
    CHECK(GB(buffer_get_max_size)(buf) == SIZE_MAX);
    CHECK(GB(buffer_get_usage)(buf) == USAGE_ANY);
    GB(buffer_set_usage)(buf, USAGE_WEIGHTS);
    CHECK(GB(buffer_get_usage)(buf) == USAGE_WEIGHTS);
    GB(buffer_set_usage)(buf, USAGE_COMPUTE);
    CHECK(GB(buffer_get_usage)(buf) == USAGE_COMPUTE);
    CHECK(!GB(buffer_is_multi_buffer)(buf));
    EXPECT_NO_LOG();

    /* an unknown usage value is refused and leaves the usage alone */
    GB(buffer_set_usage)(buf, (enum GB(buffer_usage)) 7);
    EXPECT_LOG("buffer_set_usage", "usage");
    CHECK(GB(buffer_get_usage)(buf) == USAGE_COMPUTE);

    /* clear, then read the bytes back through a tensor placed over the whole buffer */
    GB(buffer_clear)(buf, 0xAB);
    EXPECT_NO_LOG();
    CHECK(all_bytes(base, 0xAB, 1000));
    struct G(context) * ctx = new_ctx(4);
    tensor_t * t = G(new_tensor_1d)(ctx, C(TYPE_I8), 1000);
    CHECK(INIT_OK(GB(tensor_alloc)(buf, t, base)));
    CHECK(t->buffer == buf && t->data == base);
    uint8_t out[1000];
    memset(out, 0, sizeof(out));
    GB(tensor_get)(t, out, 0, sizeof(out));
    CHECK(all_bytes(out, 0xAB, sizeof(out)));
    GB(buffer_clear)(buf, 0x00);
    GB(tensor_get)(t, out, 0, sizeof(out));
    CHECK(all_bytes(out, 0x00, sizeof(out)));
    /* reset on a CPU buffer is a no-op */
    GB(buffer_reset)(buf);
    EXPECT_NO_LOG();
    G(free)(ctx);
    GB(buffer_free)(buf);
    EXPECT_NO_LOG();

    /* 0 bytes: a dummy buffer of size 0 with a NULL base */
    buffer_t zero = GB(buft_alloc_buffer)(buft, 0);
    CHECK(zero != NULL);
    if (zero) {
        CHECK(GB(buffer_get_size)(zero) == 0);
        CHECK(GB(buffer_get_base)(zero) == NULL);
        CHECK(GB(buffer_get_type)(zero) == buft);
        GB(buffer_clear)(zero, 0x11);
        GB(buffer_free)(zero);
    }
    EXPECT_NO_LOG();

    GB(buffer_free)(NULL);
    EXPECT_NO_LOG();

    /* an impossible size fails cleanly */
    buffer_t huge = GB(buft_alloc_buffer)(buft, SIZE_MAX / 2);
    CHECK(huge == NULL);
    EXPECT_LOG_SOME("alloc");
    if (huge) {
        GB(buffer_free)(huge);
    }
}

/* ------------------------------------------------------------------ 2. CPU_Mapped */

static void test_cpu_buffer_from_ptr(void) {
    const size_t n = 256;
    uint8_t * arr = (uint8_t *) aligned_block(n);
    memset(arr, 0, n);

    buffer_t buf = GB(cpu_buffer_from_ptr)(arr, n);
    CHECK(buf != NULL);
    EXPECT_NO_LOG();
    if (!buf) {
        free(arr);
        return;
    }
    CHECK(str_eq(GB(buffer_name)(buf), "CPU_Mapped"));
    CHECK(GB(buffer_get_base)(buf) == arr);
    CHECK(GB(buffer_get_size)(buf) == n);
    CHECK(GB(buffer_is_host)(buf));
    buft_t mbuft = GB(buffer_get_type)(buf);
    CHECK(mbuft != NULL && mbuft != GB(cpu_buffer_type)());
    CHECK(str_eq(GB(buft_name)(mbuft), "CPU_Mapped"));
    CHECK(GB(buft_is_host)(mbuft));
    CHECK(GB(buft_get_alignment)(mbuft) == 32);
    EXPECT_NO_LOG();

    struct G(context) * ctx = new_ctx(4);
    tensor_t * t = G(new_tensor_1d)(ctx, C(TYPE_F32), 16);
    CHECK(INIT_OK(GB(tensor_alloc)(buf, t, arr + 64)));
    CHECK(t->buffer == buf && t->data == arr + 64);

    float in[16], out[16];
    for (int i = 0; i < 16; i++) {
        in[i] = (float) i * 1.5f - 4.0f;
    }
    GB(tensor_set)(t, in, 0, sizeof(in));
    CHECK(memcmp(arr + 64, in, sizeof(in)) == 0);
    CHECK(all_bytes(arr, 0, 64));
    CHECK(all_bytes(arr + 64 + sizeof(in), 0, n - 64 - sizeof(in)));

    /* writes by the caller are seen by tensor_get */
    ((float *) (arr + 64))[3] = 42.0f;
    GB(tensor_get)(t, out, 0, sizeof(out));
    CHECK(out[3] == 42.0f && out[0] == in[0] && out[15] == in[15]);

    /* clear fills the caller's memory */
    GB(buffer_clear)(buf, 0x3C);
    CHECK(all_bytes(arr, 0x3C, n));
    EXPECT_NO_LOG();

    /* misaligned pointer */
    buffer_t bad = GB(cpu_buffer_from_ptr)(arr + 1, n - 1);
    CHECK(bad == NULL);
    EXPECT_LOG("cpu_buffer_from_ptr", "align");
    if (bad) {
        GB(buffer_free)(bad);
    }

    /* NULL pointer with a size */
    bad = GB(cpu_buffer_from_ptr)(NULL, 64);
    CHECK(bad == NULL);
    EXPECT_LOG("cpu_buffer_from_ptr", NULL);
    if (bad) {
        GB(buffer_free)(bad);
    }

    /* freeing the buffer must not free the caller's array (a double free below would abort) */
    GB(buffer_free)(buf);
    EXPECT_NO_LOG();
    memset(arr, 0x99, n);
    CHECK(arr[n - 1] == 0x99);
    G(free)(ctx);
    free(arr);
}

/* ------------------------------------------------------------------ 3. tensors */

static void test_tensors(void) {
    buft_t cpu = GB(cpu_buffer_type)();
    buffer_t buf = GB(buft_alloc_buffer)(cpu, 4096);
    CHECK(buf != NULL);
    if (!buf) {
        return;
    }
    uint8_t * base = (uint8_t *) GB(buffer_get_base)(buf);
    memset(base, 0, 4096);

    struct G(context) * ctx = new_ctx(16);
    tensor_t * a = G(new_tensor_2d)(ctx, C(TYPE_F32), 7, 3);   /* 84 bytes */
    tensor_t * q = G(new_tensor_2d)(ctx, C(TYPE_Q4_0), 64, 2); /* 2 rows * 2 blocks * 18 bytes = 72 */
    tensor_t * v = G(view_1d)(ctx, a, 7, 7 * sizeof(float));   /* row 1 of a */
    tensor_t * u = G(new_tensor_1d)(ctx, C(TYPE_F32), 4);      /* never allocated */
    tensor_t * w = G(new_tensor_1d)(ctx, C(TYPE_F32), 4);      /* for bad placements */
    G(set_name)(a, "a");
    G(set_name)(u, "u");
    CHECK(G(nbytes)(a) == 84);
    CHECK(G(nbytes)(q) == 72);

    CHECK(GB(buft_get_alloc_size)(cpu, a) == 84);
    CHECK(GB(buffer_get_alloc_size)(buf, q) == 72);
    EXPECT_NO_LOG();

    /* placement at the base and at base + offset */
    CHECK(INIT_OK(GB(tensor_alloc)(buf, a, base)));
    CHECK(a->buffer == buf && a->data == base);
    CHECK(INIT_OK(GB(tensor_alloc)(buf, q, base + 256)));
    CHECK(q->buffer == buf && q->data == base + 256);
    CHECK(INIT_OK(GB(view_init)(v)));
    CHECK(v->buffer == buf && v->data == base + 28);
    CHECK(INIT_OK(GB(buffer_init_tensor)(buf, a)));
    EXPECT_NO_LOG();

    /* round trip, whole and with offsets */
    float fa[21], fo[21];
    for (int i = 0; i < 21; i++) {
        fa[i] = (float) i;
    }
    GB(tensor_set)(a, fa, 0, sizeof(fa));
    CHECK(memcmp(base, fa, sizeof(fa)) == 0);
    memset(fo, 0, sizeof(fo));
    GB(tensor_get)(a, fo, 0, sizeof(fo));
    CHECK(memcmp(fo, fa, sizeof(fa)) == 0);

    float row[7];
    GB(tensor_get)(v, row, 0, sizeof(row));
    CHECK(row[0] == 7.0f && row[6] == 13.0f);

    float two[2] = { -1.0f, -2.0f };
    GB(tensor_set)(a, two, 8, sizeof(two)); /* elements 2 and 3 */
    fa[2] = -1.0f;
    fa[3] = -2.0f;
    GB(tensor_get)(a, fo, 0, sizeof(fo));
    CHECK(memcmp(fo, fa, sizeof(fa)) == 0);
    float got2[2] = { 0, 0 };
    GB(tensor_get)(a, got2, 8, sizeof(got2));
    CHECK(got2[0] == -1.0f && got2[1] == -2.0f);

    /* writing through the view lands in a at view_offs + offset */
    float nine = 99.0f;
    GB(tensor_set)(v, &nine, 4, sizeof(nine)); /* v[1] = a[8] */
    fa[8] = 99.0f;
    GB(tensor_get)(a, fo, 0, sizeof(fo));
    CHECK(memcmp(fo, fa, sizeof(fa)) == 0);

    /* last byte exactly at the end is fine */
    float last = 20.5f;
    GB(tensor_set)(a, &last, 80, 4);
    fa[20] = 20.5f;
    CHECK(((float *) base)[20] == 20.5f);

    /* quantized round trip */
    uint8_t qin[72], qout[72];
    fill_pattern(qin, sizeof(qin), 3);
    GB(tensor_set)(q, qin, 0, sizeof(qin));
    GB(tensor_get)(q, qout, 0, sizeof(qout));
    CHECK(memcmp(qin, qout, sizeof(qin)) == 0);
    CHECK(memcmp(base + 256, qin, sizeof(qin)) == 0);
    GB(tensor_get)(q, qout, 36, 36);
    CHECK(memcmp(qout, qin + 36, 36) == 0);

    /* memset of a partial range */
    GB(tensor_memset)(a, 0x5A, 12, 20);
    uint8_t ab[84], expect[84];
    memcpy(expect, fa, 84);
    memset(expect + 12, 0x5A, 20);
    GB(tensor_get)(a, ab, 0, sizeof(ab));
    CHECK(memcmp(ab, expect, sizeof(ab)) == 0);
    EXPECT_NO_LOG();

    /* size 0 is a no-op even with a NULL data pointer */
    GB(tensor_set)(a, NULL, 0, 0);
    GB(tensor_get)(a, NULL, 84, 0);
    GB(tensor_memset)(a, 0, 84, 0);
    EXPECT_NO_LOG();

    /* ---- bad inputs: one log line, destination untouched */
    uint8_t snap[84];
    memcpy(snap, base, 84);
    uint8_t canary[64], src[64];
    fill_pattern(src, sizeof(src), 17);

    GB(tensor_set)(NULL, src, 0, 4);
    EXPECT_LOG("tensor_set", "NULL");
    memset(canary, CANARY, sizeof(canary));
    GB(tensor_get)(NULL, canary, 0, 4);
    EXPECT_LOG("tensor_get", "NULL");
    CHECK(all_bytes(canary, CANARY, sizeof(canary)));
    GB(tensor_memset)(NULL, 0, 0, 4);
    EXPECT_LOG("tensor_memset", "NULL");

    /* past the end */
    GB(tensor_set)(a, src, 80, 8);
    EXPECT_LOG("tensor_set", "out of bounds");
    CHECK(memcmp(base, snap, 84) == 0);
    memset(canary, CANARY, sizeof(canary));
    GB(tensor_get)(a, canary, 80, 8);
    EXPECT_LOG("tensor_get", "out of bounds");
    CHECK(all_bytes(canary, CANARY, sizeof(canary)));
    GB(tensor_memset)(a, 0, 60, 25);
    EXPECT_LOG("tensor_memset", "out of bounds");
    CHECK(memcmp(base, snap, 84) == 0);
    GB(tensor_set)(a, src, 0, 85);
    EXPECT_LOG("tensor_set", "out of bounds");
    CHECK(memcmp(base, snap, 84) == 0);
    GB(tensor_set)(v, src, 4, 28); /* the view is 28 bytes */
    EXPECT_LOG("tensor_set", "out of bounds");
    CHECK(memcmp(base, snap, 84) == 0);

    /* offset + size overflowing size_t */
    GB(tensor_set)(a, src, SIZE_MAX, 2);
    EXPECT_LOG("tensor_set", "out of bounds");
    CHECK(memcmp(base, snap, 84) == 0);
    memset(canary, CANARY, sizeof(canary));
    GB(tensor_get)(a, canary, SIZE_MAX, 2);
    EXPECT_LOG("tensor_get", "out of bounds");
    CHECK(all_bytes(canary, CANARY, sizeof(canary)));
    GB(tensor_memset)(a, 0, SIZE_MAX - 1, 4);
    EXPECT_LOG("tensor_memset", "out of bounds");
    GB(tensor_set)(a, src, 4, SIZE_MAX);
    EXPECT_LOG("tensor_set", "out of bounds");
    CHECK(memcmp(base, snap, 84) == 0);

    /* a tensor without a buffer */
    GB(tensor_set)(u, src, 0, 4);
    EXPECT_LOG("tensor_set", "'u'");
    memset(canary, CANARY, sizeof(canary));
    GB(tensor_get)(u, canary, 0, 4);
    EXPECT_LOG("tensor_get", "'u'");
    CHECK(all_bytes(canary, CANARY, sizeof(canary)));
    GB(tensor_memset)(u, 0, 0, 4);
    EXPECT_LOG("tensor_memset", "'u'");

    /* a view created after its source was placed gets its data from ggml at creation (no
     * view_init): it reads and writes through the source's buffer, as with stock */
    tensor_t * v3 = G(view_1d)(ctx, a, 4, 2 * sizeof(float));
    CHECK(v3->buffer == NULL && v3->data == base + 8);
    GB(tensor_set)(v3, src, 0, 16);
    CHECK(memcmp(base + 8, src, 16) == 0);
    memset(canary, CANARY, sizeof(canary));
    GB(tensor_get)(v3, canary, 4, 8);
    CHECK(memcmp(canary, src + 4, 8) == 0 && all_bytes(canary + 8, CANARY, sizeof(canary) - 8));
    GB(tensor_set)(v3, src, 8, 9);
    EXPECT_LOG("tensor_set", "out of bounds");
    memcpy(base, snap, 84);

    /* NULL data */
    GB(tensor_set)(a, NULL, 0, 4);
    EXPECT_LOG("tensor_set", "NULL");
    CHECK(memcmp(base, snap, 84) == 0);
    GB(tensor_get)(a, NULL, 0, 4);
    EXPECT_LOG("tensor_get", "NULL");

    /* placements the buffer cannot hold */
    uint8_t * end = base + 4096;
    CHECK(INIT_FAILED(GB(tensor_alloc)(buf, w, end - 8))); /* 16 bytes, 8 left */
    EXPECT_LOG("tensor_alloc", "does not fit");
    CHECK(w->buffer == NULL && w->data == NULL);
    CHECK(INIT_FAILED(GB(tensor_alloc)(buf, w, end)));
    EXPECT_LOG("tensor_alloc", "does not fit");
    CHECK(INIT_FAILED(GB(tensor_alloc)(buf, w, base - 64)));
    EXPECT_LOG("tensor_alloc", "does not fit");
    CHECK(INIT_FAILED(GB(tensor_alloc)(buf, w, NULL)));
    EXPECT_LOG("tensor_alloc", NULL);
    CHECK(w->buffer == NULL && w->data == NULL);
    /* an already placed tensor, a view, NULL arguments */
    CHECK(INIT_FAILED(GB(tensor_alloc)(buf, a, base + 512)));
    EXPECT_LOG("tensor_alloc", "already");
    CHECK(a->data == base);
    tensor_t * v2 = G(view_1d)(ctx, u, 2, 0); /* a view of an unplaced tensor: no data yet */
    CHECK(v2->data == NULL);
    CHECK(INIT_FAILED(GB(tensor_alloc)(buf, v2, base + 512)));
    EXPECT_LOG("tensor_alloc", "view_init");
    CHECK(v2->buffer == NULL && v2->data == NULL);
    CHECK(INIT_FAILED(GB(tensor_alloc)(NULL, w, base + 512)));
    EXPECT_LOG("tensor_alloc", "NULL");
    CHECK(INIT_FAILED(GB(tensor_alloc)(buf, NULL, base + 512)));
    EXPECT_LOG("tensor_alloc", "NULL");
    /* and a good one at the very end */
    CHECK(INIT_OK(GB(tensor_alloc)(buf, w, end - 16)));
    CHECK(w->buffer == buf && w->data == end - 16);
    EXPECT_NO_LOG();

    /* view_init: twice, of a non-view, of a view of an unallocated tensor, NULL */
    CHECK(INIT_FAILED(GB(view_init)(v)));
    EXPECT_LOG("view_init", "already");
    CHECK(v->data == base + 28);
    tensor_t * nv = G(new_tensor_1d)(ctx, C(TYPE_F32), 4);
    CHECK(INIT_FAILED(GB(view_init)(nv)));
    EXPECT_LOG("view_init", "not a view");
    tensor_t * uv = G(view_1d)(ctx, u, 2, 0);
    CHECK(INIT_FAILED(GB(view_init)(uv)));
    EXPECT_LOG("view_init", NULL);
    CHECK(uv->buffer == NULL && uv->data == NULL);
    CHECK(INIT_FAILED(GB(view_init)(NULL)));
    EXPECT_LOG("view_init", "NULL");

    CHECK(memcmp(base, snap, 84) == 0);

    G(free)(ctx);
    GB(buffer_free)(buf);
    EXPECT_NO_LOG();
}

/* ------------------------------------------------------------------ 4. copies */

static void test_copies(void) {
    buft_t cpu = GB(cpu_buffer_type)();
    buffer_t b1 = GB(buft_alloc_buffer)(cpu, 512);
    buffer_t b2 = GB(buft_alloc_buffer)(cpu, 512);
    uint8_t * arr = (uint8_t *) aligned_block(512);
    memset(arr, 0, 512);
    buffer_t bm = GB(cpu_buffer_from_ptr)(arr, 512);
    CHECK(b1 && b2 && bm);
    if (!b1 || !b2 || !bm) {
        return;
    }
    uint8_t * base1 = (uint8_t *) GB(buffer_get_base)(b1);
    uint8_t * base2 = (uint8_t *) GB(buffer_get_base)(b2);

    struct G(context) * ctx = new_ctx(16);
    tensor_t * src = G(new_tensor_2d)(ctx, C(TYPE_F32), 7, 3);
    tensor_t * dst = G(new_tensor_2d)(ctx, C(TYPE_F32), 7, 3);
    tensor_t * dm  = G(new_tensor_2d)(ctx, C(TYPE_F32), 7, 3);
    tensor_t * tr  = G(new_tensor_2d)(ctx, C(TYPE_F32), 3, 7); /* same bytes, other shape */
    tensor_t * ti  = G(new_tensor_2d)(ctx, C(TYPE_I32), 7, 3); /* same bytes, other type */
    tensor_t * un  = G(new_tensor_2d)(ctx, C(TYPE_F32), 7, 3); /* never allocated */
    GB(tensor_alloc)(b1, src, base1);
    GB(tensor_alloc)(b2, dst, base2);
    GB(tensor_alloc)(bm, dm, arr + 128);
    GB(tensor_alloc)(b2, tr, base2 + 128);
    GB(tensor_alloc)(b2, ti, base2 + 256);
    EXPECT_NO_LOG();

    uint8_t pat[84], got[84];
    fill_pattern(pat, sizeof(pat), 1);
    GB(tensor_set)(src, pat, 0, sizeof(pat));

    /* CPU -> CPU */
    GB(tensor_copy)(src, dst);
    EXPECT_NO_LOG();
    CHECK(memcmp(base2, pat, 84) == 0);

    /* CPU -> CPU_Mapped lands in the caller's array, and back */
    GB(tensor_copy)(src, dm);
    EXPECT_NO_LOG();
    CHECK(memcmp(arr + 128, pat, 84) == 0);
    fill_pattern(arr + 128, 84, 77);
    GB(tensor_copy)(dm, src);
    EXPECT_NO_LOG();
    GB(tensor_get)(src, got, 0, sizeof(got));
    CHECK(memcmp(got, arr + 128, 84) == 0);
    GB(tensor_set)(src, pat, 0, sizeof(pat));

    /* copying a tensor onto itself is a no-op */
    GB(tensor_copy)(src, src);
    EXPECT_NO_LOG();
    GB(tensor_get)(src, got, 0, sizeof(got));
    CHECK(memcmp(got, pat, 84) == 0);

    /* layout mismatch: shape, type */
    memset(base2 + 128, CANARY, 84);
    GB(tensor_copy)(src, tr);
    EXPECT_LOG("tensor_copy", "layout");
    CHECK(all_bytes(base2 + 128, CANARY, 84));
    memset(base2 + 256, CANARY, 84);
    GB(tensor_copy)(src, ti);
    EXPECT_LOG("tensor_copy", "layout");
    CHECK(all_bytes(base2 + 256, CANARY, 84));

    /* unallocated ends, NULL */
    GB(tensor_copy)(src, un);
    EXPECT_LOG("tensor_copy", NULL);
    memset(base2, CANARY, 84);
    GB(tensor_copy)(un, dst);
    EXPECT_LOG("tensor_copy", NULL);
    CHECK(all_bytes(base2, CANARY, 84));
    GB(tensor_copy)(NULL, dst);
    EXPECT_LOG("tensor_copy", "NULL");
    GB(tensor_copy)(src, NULL);
    EXPECT_LOG("tensor_copy", "NULL");
    CHECK(all_bytes(base2, CANARY, 84));

    /* buffer_copy_tensor: the destination buffer's cpy_tensor */
    CHECK(GB(buffer_copy_tensor)(src, dst));
    EXPECT_NO_LOG();
    CHECK(memcmp(base2, pat, 84) == 0);
    memset(arr + 128, 0, 84);
    CHECK(GB(buffer_copy_tensor)(src, dm));
    CHECK(memcmp(arr + 128, pat, 84) == 0);
    EXPECT_NO_LOG();
    CHECK(!GB(buffer_copy_tensor)(src, un));
    EXPECT_LOG("buffer_copy_tensor", NULL);
    CHECK(!GB(buffer_copy_tensor)(NULL, dst));
    EXPECT_LOG("buffer_copy_tensor", "NULL");
    CHECK(!GB(buffer_copy_tensor)(src, NULL));
    EXPECT_LOG("buffer_copy_tensor", "NULL");

    G(free)(ctx);
    GB(buffer_free)(b1);
    GB(buffer_free)(b2);
    GB(buffer_free)(bm);
    free(arr);
    EXPECT_NO_LOG();
}

/* ------------------------------------------------------------------ 5. multi-buffer */

static void test_multi_buffer(void) {
    buft_t cpu = GB(cpu_buffer_type)();
    buffer_t parts[2];
    parts[0] = GB(buft_alloc_buffer)(cpu, 256);
    parts[1] = GB(buft_alloc_buffer)(cpu, 512);
    CHECK(parts[0] && parts[1]);
    if (!parts[0] || !parts[1]) {
        return;
    }
    uint8_t * p0 = (uint8_t *) GB(buffer_get_base)(parts[0]);
    uint8_t * p1 = (uint8_t *) GB(buffer_get_base)(parts[1]);

    buffer_t mb = GB(multi_buffer_alloc_buffer)(parts, 2);
    CHECK(mb != NULL);
    EXPECT_NO_LOG();
    if (!mb) {
        return;
    }
    CHECK(GB(buffer_get_size)(mb) == 768);
    CHECK(GB(buffer_is_multi_buffer)(mb));
    CHECK(!GB(buffer_is_multi_buffer)(parts[0]));
    CHECK(!GB(buffer_is_multi_buffer)(parts[1]));
    CHECK(GB(buffer_get_type)(mb) == cpu);
    CHECK(str_eq(GB(buffer_name)(mb), "CPU"));
    CHECK(GB(buffer_is_host)(mb));
    EXPECT_NO_LOG();

    GB(buffer_set_usage)(mb, USAGE_WEIGHTS);
    CHECK(GB(buffer_get_usage)(mb) == USAGE_WEIGHTS);
    CHECK(GB(buffer_get_usage)(parts[0]) == USAGE_WEIGHTS);
    CHECK(GB(buffer_get_usage)(parts[1]) == USAGE_WEIGHTS);
    GB(multi_buffer_set_usage)(mb, USAGE_COMPUTE);
    CHECK(GB(buffer_get_usage)(mb) == USAGE_WEIGHTS); /* the parts only, as stock */
    CHECK(GB(buffer_get_usage)(parts[0]) == USAGE_COMPUTE);
    CHECK(GB(buffer_get_usage)(parts[1]) == USAGE_COMPUTE);
    EXPECT_NO_LOG();

    GB(multi_buffer_set_usage)(parts[0], USAGE_WEIGHTS);
    EXPECT_LOG("multi_buffer_set_usage", "multi");
    CHECK(GB(buffer_get_usage)(parts[0]) == USAGE_COMPUTE);
    GB(multi_buffer_set_usage)(mb, (enum GB(buffer_usage)) 7);
    EXPECT_LOG("multi_buffer_set_usage", "unknown buffer usage 7");
    CHECK(GB(buffer_get_usage)(parts[0]) == USAGE_COMPUTE);

    memset(p0, 0, 256);
    memset(p1, 0, 512);
    GB(buffer_clear)(mb, 0x77);
    EXPECT_NO_LOG();
    CHECK(all_bytes(p0, 0x77, 256));
    CHECK(all_bytes(p1, 0x77, 512));

    /* a multi-buffer has no single base: refused, not a jump through a NULL vtable entry */
    CHECK(GB(buffer_get_base)(mb) == NULL);
    EXPECT_LOG("buffer_get_base", "get_base");

    /* bad lists */
    CHECK(GB(multi_buffer_alloc_buffer)(NULL, 2) == NULL);
    EXPECT_LOG("multi_buffer_alloc_buffer", "NULL");
    CHECK(GB(multi_buffer_alloc_buffer)(parts, 0) == NULL);
    EXPECT_LOG("multi_buffer_alloc_buffer", NULL);
    buffer_t with_null[2] = { parts[0], NULL };
    CHECK(GB(multi_buffer_alloc_buffer)(with_null, 2) == NULL);
    EXPECT_LOG("multi_buffer_alloc_buffer", "NULL");

    /* freeing the multi-buffer frees its parts (checked by valgrind / ASan) */
    GB(buffer_free)(mb);
    EXPECT_NO_LOG();
}

/* ------------------------------------------------------------------ 6. buffer_init with a custom vtable */

static void test_custom_buffer(void) {
    fake_free_calls = fake_set_calls = fake_init_calls = 0;

    buffer_t fb = GB(buft_alloc_buffer)(&fake_buft, 128);
    CHECK(fb != NULL);
    EXPECT_NO_LOG();
    if (!fb) {
        return;
    }
    uint8_t * base = (uint8_t *) GB(buffer_get_base)(fb);
    CHECK(base == fb->context);
    CHECK(GB(buffer_get_size)(fb) == 128);
    CHECK(GB(buffer_get_type)(fb) == &fake_buft);
    CHECK(str_eq(GB(buffer_name)(fb), "FAKE"));
    CHECK(!GB(buffer_is_host)(fb));
    CHECK(!GB(buft_is_host)(&fake_buft));
    CHECK(GB(buffer_get_alignment)(fb) == 16);
    CHECK(GB(buffer_get_max_size)(fb) == SIZE_MAX);
    CHECK(GB(buft_get_max_size)(&fake_buft) == SIZE_MAX);
    EXPECT_NO_LOG();

    struct G(context) * ctx = new_ctx(8);
    tensor_t * t = G(new_tensor_1d)(ctx, C(TYPE_F32), 8);
    tensor_t * c = G(new_tensor_1d)(ctx, C(TYPE_F32), 8);
    CHECK(GB(buffer_get_alloc_size)(fb, t) == 32);
    CHECK(INIT_OK(GB(tensor_alloc)(fb, t, base)));
    CHECK(fake_init_calls == 1);
    CHECK(t->buffer == fb && t->data == base);

    float in[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    GB(tensor_set)(t, in, 0, sizeof(in));
    CHECK(fake_set_calls == 1);
    CHECK(memcmp(base, in, sizeof(in)) == 0);
    EXPECT_NO_LOG();

    /* no get_tensor / memset_tensor / clear: logged, nothing touched, no crash */
    float out[8];
    memset(out, CANARY, sizeof(out));
    GB(tensor_get)(t, out, 0, sizeof(out));
    EXPECT_LOG("tensor_get", "get_tensor");
    CHECK(all_bytes(out, CANARY, sizeof(out)));
    GB(tensor_memset)(t, 0, 0, 4);
    EXPECT_LOG("tensor_memset", "memset_tensor");
    CHECK(memcmp(base, in, sizeof(in)) == 0);
    GB(buffer_clear)(fb, 0);
    EXPECT_LOG("buffer_clear", "clear");
    CHECK(memcmp(base, in, sizeof(in)) == 0);
    GB(buffer_reset)(fb); /* optional: no-op */
    EXPECT_NO_LOG();

    /* copies with a non-host buffer: into it goes through set_tensor; out of it needs get_tensor */
    buffer_t cb = GB(buft_alloc_buffer)(GB(cpu_buffer_type)(), 64);
    GB(tensor_alloc)(cb, c, GB(buffer_get_base)(cb));
    float cin[8] = { -1, -2, -3, -4, -5, -6, -7, -8 };
    GB(tensor_set)(c, cin, 0, sizeof(cin));
    GB(tensor_copy)(c, t);
    EXPECT_NO_LOG();
    CHECK(fake_set_calls == 2);
    CHECK(memcmp(base, cin, sizeof(cin)) == 0);
    CHECK(!GB(buffer_copy_tensor)(c, t)); /* no cpy_tensor: declined, not an error */
    CHECK(!GB(buffer_copy_tensor)(t, c)); /* the CPU buffer declines a non-host source */
    EXPECT_NO_LOG();
    float before[8];
    GB(tensor_get)(c, before, 0, sizeof(before));
    GB(tensor_copy)(t, c);
    EXPECT_LOG("tensor_copy", "get_tensor");
    GB(tensor_get)(c, out, 0, sizeof(out));
    CHECK(memcmp(out, before, sizeof(out)) == 0);

    GB(buffer_free)(cb);
    CHECK(fake_free_calls == 0);
    GB(buffer_free)(fb);
    CHECK(fake_free_calls == 1);
    EXPECT_NO_LOG();

    /* buffer_init directly, with a context of our own */
    buffer_t db = GB(buffer_init)(&fake_buft, fake_buffer_iface, aligned_block(64), 64);
    CHECK(db != NULL);
    if (db) {
        CHECK(GB(buffer_get_size)(db) == 64);
        CHECK(GB(buffer_get_base)(db) == db->context);
        CHECK(GB(buffer_get_usage)(db) == USAGE_ANY);
        GB(buffer_free)(db);
        CHECK(fake_free_calls == 2);
    }
    EXPECT_NO_LOG();

#ifdef TEST_API_STATUS
    /* a failing init_tensor is passed through by tensor_alloc and buffer_init_tensor */
    struct GB(buffer_i) failing = fake_buffer_iface;
    failing.init_tensor = fake_buffer_init_tensor_fail;
    buffer_t eb = GB(buffer_init)(&fake_buft, failing, aligned_block(64), 64);
    tensor_t * e = G(new_tensor_1d)(ctx, C(TYPE_F32), 4);
    CHECK(GB(tensor_alloc)(eb, e, eb->context) == C(STATUS_ALLOC_FAILED));
    CHECK(GB(buffer_init_tensor)(eb, e) == C(STATUS_ALLOC_FAILED));
    GB(buffer_free)(eb);
    CHECK(fake_free_calls == 3);
    log_reset();
#endif

    /* a buffer type that fails to allocate */
    fake_buft_alloc_fails = true;
    CHECK(GB(buft_alloc_buffer)(&fake_buft, 64) == NULL);
    EXPECT_LOG("buft_alloc_buffer", "FAKE");
    fake_buft_alloc_fails = false;

    G(free)(ctx);
}

/* ------------------------------------------------------------------ 7. registry */

static reg_t find_cpu_reg(void) {
    size_t n = GB(reg_count)();
    for (size_t i = 0; i < n; i++) {
        reg_t r = GB(reg_get)(i);
        if (r && str_eq(GB(reg_name)(r), "CPU")) {
            return r;
        }
    }
    return NULL;
}

static void test_registry(void) {
    size_t n_regs = GB(reg_count)();
    size_t n_devs = GB(dev_count)();
    CHECK(n_regs >= 1);
    CHECK(n_devs >= 1);

    reg_t cpu_reg = find_cpu_reg();
    CHECK(cpu_reg != NULL);
    CHECK(GB(reg_by_name)("CPU") == cpu_reg);
#ifdef TEST_API_LOAD
    CHECK(GB(reg_by_name)("cpu") == cpu_reg);
    CHECK(GB(reg_by_name)("Cpu") == cpu_reg);
#else
    CHECK(GB(reg_by_name)("cpu") == NULL);
#endif
    CHECK(GB(reg_by_name)("nope") == NULL);
    CHECK(GB(reg_dev_count)(cpu_reg) == 1);
    dev_t_ cpu_dev = GB(reg_dev_get)(cpu_reg, 0);
    CHECK(cpu_dev != NULL);
    CHECK(GB(dev_by_type)(DEV_CPU) == cpu_dev);
    CHECK(GB(dev_by_name)("CPU") == cpu_dev);
#ifdef TEST_API_LOAD
    CHECK(GB(dev_by_name)("cpu") == cpu_dev);
#else
    CHECK(GB(dev_by_name)("cpu") == NULL);
#endif
    CHECK(GB(dev_by_name)("no such device") == NULL);
    bool listed = false;
    for (size_t i = 0; i < n_devs; i++) {
        if (GB(dev_get)(i) == cpu_dev) {
            listed = true;
        }
    }
    CHECK(listed);
    CHECK(GB(dev_backend_reg)(cpu_dev) == cpu_reg);
    EXPECT_NO_LOG();

    /* out of range, NULL names */
    CHECK(GB(reg_get)(n_regs) == NULL);
    EXPECT_LOG("reg_get", "range");
    CHECK(GB(reg_get)(SIZE_MAX) == NULL);
    EXPECT_LOG("reg_get", "range");
    CHECK(GB(dev_get)(n_devs) == NULL);
    EXPECT_LOG("dev_get", "range");
    CHECK(GB(dev_get)(SIZE_MAX) == NULL);
    EXPECT_LOG("dev_get", "range");
    CHECK(GB(reg_dev_get)(cpu_reg, 1) == NULL); /* the CPU reg would assert; we must check first */
    EXPECT_LOG("reg_dev_get", "range");
    CHECK(GB(reg_by_name)(NULL) == NULL);
    EXPECT_LOG("reg_by_name", "NULL");
    CHECK(GB(dev_by_name)(NULL) == NULL);
    EXPECT_LOG("dev_by_name", "NULL");

    /* proc addresses */
    void * set_threads = GB(reg_get_proc_address)(cpu_reg, PFX "ggml_backend_set_n_threads");
    CHECK(set_threads != NULL);
    CHECK(GB(reg_get_proc_address)(cpu_reg, PFX "ggml_backend_no_such_function") == NULL);
    EXPECT_NO_LOG();
    CHECK(GB(reg_get_proc_address)(cpu_reg, NULL) == NULL);
    EXPECT_LOG("reg_get_proc_address", "NULL");

    /* init by name / best */
    backend_t b = GB(init_by_name)("CPU", NULL);
    CHECK(b != NULL);
    CHECK(str_eq(GB(name)(b), "CPU"));
    CHECK(GB(get_device)(b) == cpu_dev);
    GB(free)(b);
    EXPECT_NO_LOG();
    CHECK(GB(init_by_name)("nope", NULL) == NULL);
    EXPECT_LOG("init_by_name", "nope");
    CHECK(GB(init_by_name)(NULL, NULL) == NULL);
    EXPECT_LOG("init_by_name", "NULL");
    backend_t best = GB(init_best)();
    CHECK(best != NULL);
    if (best) {
        CHECK(str_eq(GB(name)(best), "CPU"));
        CHECK(GB(get_device)(best) == cpu_dev);
        CHECK(GB(is_cpu)(best));
        GB(free)(best);
    }
    backend_t bt = GB(init_by_type)(DEV_CPU, NULL);
    CHECK(bt != NULL && GB(is_cpu)(bt));
    GB(free)(bt);
    EXPECT_NO_LOG();
    CHECK(str_eq(GB(name)(NULL), "NULL"));
    EXPECT_NO_LOG();

    /* a reg of our own, with one device */
    GB(register)(&fake_reg);
    EXPECT_NO_LOG();
    CHECK(GB(reg_count)() == n_regs + 1);
    CHECK(GB(dev_count)() == n_devs + 1);
    CHECK(GB(reg_get)(n_regs) == &fake_reg);
    CHECK(GB(dev_get)(n_devs) == &fake_dev);
    CHECK(GB(reg_by_name)("FAKEREG") == &fake_reg);
    CHECK(GB(dev_by_name)("FAKEDEV") == &fake_dev);
#ifdef TEST_API_LOAD
    CHECK(GB(dev_by_name)("fakedev") == &fake_dev);
#endif
    CHECK(GB(dev_by_type)(DEV_ACCEL) == &fake_dev);
    CHECK(GB(dev_by_type)(DEV_CPU) == cpu_dev);
    CHECK(GB(dev_backend_reg)(&fake_dev) == &fake_reg);
    CHECK(GB(reg_get_proc_address)(&fake_reg, "anything") == NULL); /* the reg has no get_proc_address */
    CHECK(GB(init_by_name)("FAKEDEV", NULL) == NULL);              /* its init_backend returns NULL */
    log_reset();
    /* init_best still picks the CPU (no GPU registered) */
    best = GB(init_best)();
    CHECK(best != NULL && GB(is_cpu)(best));
    GB(free)(best);
    EXPECT_NO_LOG();

    /* as stock: a silent no-op (llama.cpp registers what ggml-rpc's add_server returned, NULL when
       the server is unreachable; issue 44) */
    GB(register)(NULL);
    EXPECT_NO_LOG();
    CHECK(GB(reg_count)() == n_regs + 1);
    GB(device_register)(NULL);
    EXPECT_LOG("device_register", "NULL");
    CHECK(GB(dev_count)() == n_devs + 1);

#ifdef TEST_API_LOAD
    /* a second device of the fake reg, then unloading the reg removes both */
    GB(device_register)(&fake_dev2);
    EXPECT_NO_LOG();
    CHECK(GB(dev_count)() == n_devs + 2);
    CHECK(GB(dev_by_name)("FAKEDEV2") == &fake_dev2);
    GB(unload)(&fake_reg);
    EXPECT_NO_LOG();
    CHECK(GB(reg_count)() == n_regs);
    CHECK(GB(dev_count)() == n_devs);
    CHECK(GB(dev_by_name)("FAKEDEV2") == NULL);
    CHECK(GB(dev_by_name)("FAKEDEV") == NULL);
    CHECK(GB(reg_by_name)("FAKEREG") == NULL);
    CHECK(find_cpu_reg() == cpu_reg);
    /* unloading an unknown reg is silent, NULL is logged */
    GB(unload)(&fake_reg);
    EXPECT_NO_LOG();
    CHECK(GB(reg_count)() == n_regs);
    GB(unload)(NULL);
    EXPECT_LOG("unload", "NULL");

#else
    (void) fake_dev2;
#endif
}

#ifdef TEST_API_LOAD
/* wsp only: backend_load / load_all / load_all_from_path, one section each (dlopen paths). */
static void test_load_missing(void) {
    size_t n_regs = GB(reg_count)();
    CHECK(GB(load)("/nonexistent.so") == NULL);
    EXPECT_LOG("load", "/nonexistent.so");
    CHECK(GB(reg_count)() == n_regs);
}

/* a real shared library that is not a ggml backend */
static void test_load_not_a_backend(void) {
    size_t n_regs = GB(reg_count)();
    CHECK(GB(load)("libm.so.6") == NULL);
    EXPECT_LOG("load", PFX "ggml_backend_init");
    CHECK(GB(reg_count)() == n_regs);
}

/* a file that is not a shared library at all, directly and as a load_all candidate */
static void test_load_garbage(void) {
    char dir[] = "/tmp/conformance-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        CHECK(false);
        return;
    }
    char f1[128], f2[128];
    snprintf(f1, sizeof(f1), "%s/libggml-cpu-bad.so", dir);
    snprintf(f2, sizeof(f2), "%s/libggml-blas.so", dir);
    const char * names[2] = { f1, f2 };
    for (int i = 0; i < 2; i++) {
        FILE * f = fopen(names[i], "w");
        if (f) {
            fputs("this is not an ELF file\n", f);
            fclose(f);
        }
    }
    size_t n_regs = GB(reg_count)();
    CHECK(GB(load)(f1) == NULL);
    EXPECT_LOG("load", "libggml-cpu-bad.so");
    GB(load_all_from_path)(dir);
    CHECK(GB(reg_count)() == n_regs);
    log_reset();
    remove(f1);
    remove(f2);
    rmdir(dir);
}

static void test_load_null(void) {
    CHECK(GB(load)(NULL) == NULL);
    EXPECT_LOG("load", "NULL");
}

static void test_load_all(void) {
    size_t n_regs = GB(reg_count)();
    size_t n_devs = GB(dev_count)();
    reg_t cpu_reg = find_cpu_reg();
    GB(load_all_from_path)("/nonexistent");
    CHECK(GB(reg_count)() == n_regs);
    CHECK(GB(dev_count)() == n_devs);
    GB(load_all_from_path)(NULL);
    GB(load_all)();
    CHECK(find_cpu_reg() == cpu_reg);
    log_reset();
}
#endif

/* ------------------------------------------------------------------ 8. devices */

static void test_devices(void) {
    dev_t_ dev = GB(dev_by_type)(DEV_CPU);
    CHECK(dev != NULL);
    if (!dev) {
        return;
    }
    reg_t cpu_reg = find_cpu_reg();
    const char * name = GB(dev_name)(dev);
    const char * desc = GB(dev_description)(dev);
    CHECK(str_eq(name, "CPU"));
    CHECK(desc != NULL && desc[0] != '\0');
    CHECK(GB(dev_type)(dev) == DEV_CPU);

    size_t free_mem = SIZE_MAX - 1, total = SIZE_MAX - 1;
    GB(dev_memory)(dev, &free_mem, &total);
    CHECK(free_mem != SIZE_MAX - 1 && total != SIZE_MAX - 1);
    CHECK(free_mem <= total);
#ifdef TEST_API_LOAD
    CHECK(total > 0); /* sysconf-based in this revision */
#else
    CHECK(total == 0); /* "TODO" zeros in this revision */
#endif
    GB(dev_memory)(dev, NULL, NULL);
    EXPECT_NO_LOG();

    struct GB(dev_props) props;
    memset(&props, 0xEE, sizeof(props));
    GB(dev_get_props)(dev, &props);
    CHECK(str_eq(props.name, name));
    CHECK(str_eq(props.description, desc));
    CHECK(props.type == DEV_CPU);
    CHECK(props.memory_free == free_mem && props.memory_total == total);
    CHECK(!props.caps.async);
    CHECK(!props.caps.host_buffer);
    CHECK(props.caps.buffer_from_host_ptr);
    CHECK(!props.caps.events);

    /* props of the fake device: fields it leaves alone come back zeroed */
    memset(&props, 0xEE, sizeof(props));
    GB(dev_get_props)(&fake_dev, &props);
    CHECK(str_eq(props.name, "FAKEDEV"));
    CHECK(props.memory_free == 1234 && props.memory_total == 5678);
    CHECK(props.type == DEV_ACCEL);
    CHECK(!props.caps.async && !props.caps.host_buffer && !props.caps.buffer_from_host_ptr && !props.caps.events);
    EXPECT_NO_LOG();

    CHECK(GB(dev_backend_reg)(dev) == cpu_reg);
    buft_t buft = GB(dev_buffer_type)(dev);
    CHECK(buft == GB(cpu_buffer_type)());
    CHECK(GB(buft_is_host)(buft));
    CHECK(GB(dev_host_buffer_type)(dev) == NULL); /* the CPU device has none */
    CHECK(GB(dev_supports_buft)(dev, GB(cpu_buffer_type)()));
    CHECK(!GB(dev_supports_buft)(dev, &fake_buft));
    EXPECT_NO_LOG();

    struct G(context) * ctx = new_ctx(8);
    tensor_t * a = G(new_tensor_1d)(ctx, C(TYPE_F32), 8);
    tensor_t * b = G(new_tensor_1d)(ctx, C(TYPE_F32), 8);
    tensor_t * c = G(add)(ctx, a, b);
    CHECK(c->op == C(OP_ADD));
    CHECK(GB(dev_supports_op)(dev, c));
    CHECK(!GB(dev_offload_op)(dev, c)); /* the CPU device has no offload_op */
    CHECK(!GB(dev_supports_op)(&fake_dev, c));
    EXPECT_NO_LOG();

    /* buffers over host memory */
    uint8_t * arr = (uint8_t *) aligned_block(256);
    buffer_t hb = GB(dev_buffer_from_host_ptr)(dev, arr, 256, 256);
    CHECK(hb != NULL);
    if (hb) {
        CHECK(str_eq(GB(buffer_name)(hb), "CPU_Mapped"));
        CHECK(GB(buffer_get_base)(hb) == arr);
        CHECK(GB(buffer_get_size)(hb) == 256);
        GB(buffer_free)(hb);
    }
    EXPECT_NO_LOG();
    CHECK(GB(dev_buffer_from_host_ptr)(dev, NULL, 256, 256) == NULL);
    EXPECT_LOG("dev_buffer_from_host_ptr", "NULL");
    CHECK(GB(dev_buffer_from_host_ptr)(&fake_dev, arr, 256, 256) == NULL); /* not implemented */
    EXPECT_LOG("dev_buffer_from_host_ptr", "buffer_from_host_ptr");
    free(arr);

    backend_t be = GB(dev_init)(dev, NULL);
    CHECK(be != NULL && GB(get_device)(be) == dev);
    GB(free)(be);
    EXPECT_NO_LOG();

    /* NULL devices and arguments */
    CHECK(GB(dev_name)(NULL) == NULL);
    EXPECT_LOG("dev_name", "NULL");
    CHECK(GB(dev_description)(NULL) == NULL);
    EXPECT_LOG("dev_description", "NULL");
    free_mem = 7;
    total = 9;
    GB(dev_memory)(NULL, &free_mem, &total);
    EXPECT_LOG("dev_memory", "NULL");
    CHECK(free_mem == 7 && total == 9);
    CHECK(GB(dev_type)(NULL) == DEV_CPU);
    EXPECT_LOG("dev_type", "NULL");
    memset(&props, 0xEE, sizeof(props));
    GB(dev_get_props)(NULL, &props);
    EXPECT_LOG("dev_get_props", "NULL");
    CHECK(all_bytes(&props, 0xEE, sizeof(props)));
    GB(dev_get_props)(dev, NULL);
    EXPECT_LOG("dev_get_props", "NULL");
    CHECK(GB(dev_backend_reg)(NULL) == NULL);
    EXPECT_LOG("dev_backend_reg", "NULL");
    CHECK(GB(dev_init)(NULL, NULL) == NULL);
    EXPECT_LOG("dev_init", "NULL");
    CHECK(GB(dev_buffer_type)(NULL) == NULL);
    EXPECT_LOG("dev_buffer_type", "NULL");
    CHECK(GB(dev_host_buffer_type)(NULL) == NULL);
    EXPECT_LOG("dev_host_buffer_type", "NULL");
    CHECK(GB(dev_buffer_from_host_ptr)(NULL, &free_mem, sizeof(free_mem), 0) == NULL);
    EXPECT_LOG("dev_buffer_from_host_ptr", "NULL");
    CHECK(!GB(dev_supports_op)(NULL, c));
    EXPECT_LOG("dev_supports_op", "NULL");
    CHECK(!GB(dev_supports_op)(dev, NULL));
    EXPECT_LOG("dev_supports_op", "NULL");
    CHECK(!GB(dev_supports_buft)(NULL, buft));
    EXPECT_LOG("dev_supports_buft", "NULL");
    CHECK(!GB(dev_supports_buft)(dev, NULL));
    EXPECT_LOG("dev_supports_buft", "NULL");
    CHECK(!GB(dev_offload_op)(NULL, c));
    EXPECT_LOG("dev_offload_op", "NULL");
    CHECK(!GB(dev_offload_op)(dev, NULL));
    EXPECT_LOG("dev_offload_op", "NULL");

    G(free)(ctx);
}

/* ------------------------------------------------------------------ 9. backend + graph */

#define NE0 5
#define NE1 4
#define NEL (NE0 * NE1)

static bool read_equals(tensor_t * t, const float * want) {
    float got[NEL];
    memset(got, 0, sizeof(got));
    GB(tensor_get)(t, got, 0, sizeof(got));
    return memcmp(got, want, sizeof(got)) == 0;
}

static void test_backend_graph(void) {
    backend_t be = GB(init_by_type)(DEV_CPU, NULL);
    CHECK(be != NULL);
    if (!be) {
        return;
    }
    dev_t_ dev = GB(dev_by_type)(DEV_CPU);
    reg_t reg = find_cpu_reg();
    CHECK(str_eq(GB(name)(be), "CPU"));
    CHECK(GB(get_device)(be) == dev);

    void * proc = GB(reg_get_proc_address)(reg, PFX "ggml_backend_set_n_threads");
    GB(set_n_threads_t) set_n_threads = NULL;
    memcpy(&set_n_threads, &proc, sizeof(proc)); /* object -> function pointer, without -Wpedantic noise */
    CHECK(set_n_threads != NULL);
    if (set_n_threads) {
        set_n_threads(be, 2);
    }

    CHECK(GB(get_default_buffer_type)(be) == GB(cpu_buffer_type)());
    CHECK(GB(get_alignment)(be) == 32);
    CHECK(GB(get_max_size)(be) == SIZE_MAX);
    buffer_t sb = GB(alloc_buffer)(be, 100);
    CHECK(sb != NULL && GB(buffer_get_size)(sb) == 100 && str_eq(GB(buffer_name)(sb), "CPU"));
    GB(buffer_free)(sb);
    EXPECT_NO_LOG();

    /* c = a*b + a on F32 [5,4], allocated by the host's ggml-alloc through our buffers */
    struct G(context) * ctx = new_ctx(16);
    tensor_t * a = G(new_tensor_2d)(ctx, C(TYPE_F32), NE0, NE1);
    tensor_t * b = G(new_tensor_2d)(ctx, C(TYPE_F32), NE0, NE1);
    tensor_t * d = G(new_tensor_2d)(ctx, C(TYPE_F32), NE0, NE1);
    tensor_t * ab = G(mul)(ctx, a, b);
    tensor_t * c = G(add)(ctx, ab, a);
    struct G(cgraph) * graph = G(new_graph)(ctx);
    G(build_forward_expand)(graph, c);
    CHECK(G(graph_n_nodes)(graph) == 2);

    buffer_t buf = GB(alloc_ctx_tensors)(ctx, be);
    CHECK(buf != NULL);
    EXPECT_NO_LOG();
    if (!buf) {
        G(free)(ctx);
        GB(free)(be);
        return;
    }
    CHECK(GB(buffer_get_type)(buf) == GB(cpu_buffer_type)());
    CHECK(a->buffer == buf && b->buffer == buf && c->buffer == buf && d->buffer == buf);
    CHECK(a->data != NULL && c->data != NULL);
    CHECK(((uintptr_t) a->data % 32) == 0 && ((uintptr_t) c->data % 32) == 0);

    float fa[NEL], fb[NEL], want[NEL], zero[NEL];
    for (int i = 0; i < NEL; i++) {
        fa[i] = (float) i * 0.5f - 3.0f;   /* exact in binary */
        fb[i] = (float) (i % 7) - 2.0f;
        float prod = fa[i] * fb[i];       /* exact: small integers and halves */
        want[i] = prod + fa[i];
        zero[i] = 0.0f;
    }
    GB(tensor_set)(a, fa, 0, sizeof(fa));
    GB(tensor_set)(b, fb, 0, sizeof(fb));
    GB(tensor_set)(c, zero, 0, sizeof(zero));

    CHECK(GB(graph_compute)(be, graph) == STATUS_SUCCESS);
    CHECK(read_equals(c, want));

    GB(tensor_set)(c, zero, 0, sizeof(zero));
    CHECK(GB(graph_compute_async)(be, graph) == STATUS_SUCCESS);
    GB(synchronize)(be);
    CHECK(read_equals(c, want));

    GB(tensor_set)(c, zero, 0, sizeof(zero));
    GB(graph_plan_t) plan = GB(graph_plan_create)(be, graph);
    CHECK(plan != NULL);
    if (plan) {
        CHECK(GB(graph_plan_compute)(be, plan) == STATUS_SUCCESS);
        CHECK(read_equals(c, want));
        GB(graph_plan_free)(be, plan);
    }
    EXPECT_NO_LOG();

    /* ops and buffer types */
    CHECK(GB(supports_op)(be, c));
    CHECK(GB(supports_op)(be, ab));
    CHECK(GB(supports_buft)(be, GB(cpu_buffer_type)()));
    CHECK(!GB(supports_buft)(be, &fake_buft));
    CHECK(!GB(offload_op)(be, c));
    EXPECT_NO_LOG();

    /* async transfers (the CPU backend has none: synchronous fallbacks) */
    float tmp[NEL], got[NEL];
    for (int i = 0; i < NEL; i++) {
        tmp[i] = (float) (100 + i);
    }
    GB(tensor_set_async)(be, d, tmp, 0, sizeof(tmp));
    GB(synchronize)(be);
    memset(got, 0, sizeof(got));
    GB(tensor_get_async)(be, d, got, 0, sizeof(got));
    GB(synchronize)(be);
    CHECK(memcmp(got, tmp, sizeof(got)) == 0);
    float mid[3] = { -7.0f, -8.0f, -9.0f };
    GB(tensor_set_async)(be, d, mid, 4 * sizeof(float), sizeof(mid));
    float gm[3] = { 0, 0, 0 };
    GB(tensor_get_async)(be, d, gm, 4 * sizeof(float), sizeof(gm));
    GB(synchronize)(be);
    CHECK(memcmp(gm, mid, sizeof(mid)) == 0);
    EXPECT_NO_LOG();

    float canary[NEL];
    memset(canary, CANARY, sizeof(canary));
    GB(tensor_get_async)(be, d, canary, sizeof(tmp) - 4, 8);
    EXPECT_LOG("tensor_get_async", "out of bounds");
    CHECK(all_bytes(canary, CANARY, sizeof(canary)));
    GB(tensor_set_async)(be, d, tmp, SIZE_MAX, 8);
    EXPECT_LOG("tensor_set_async", "out of bounds");
    GB(tensor_set_async)(be, d, NULL, 0, 8);
    EXPECT_LOG("tensor_set_async", "NULL");

    /* tensor_copy_async: a -> d */
    GB(tensor_copy_async)(be, be, a, d);
    GB(synchronize)(be);
    EXPECT_NO_LOG();
    CHECK(read_equals(d, fa));
    /* layout mismatch */
    tensor_t * ctx2_t = NULL;
    struct G(context) * ctx2 = new_ctx(4);
    ctx2_t = G(new_tensor_2d)(ctx2, C(TYPE_F32), NE1, NE0);
    buffer_t buf2 = GB(alloc_ctx_tensors)(ctx2, be);
    CHECK(buf2 != NULL);
    GB(tensor_set)(ctx2_t, tmp, 0, sizeof(tmp));
    GB(tensor_copy_async)(be, be, a, ctx2_t);
    EXPECT_LOG("tensor_copy_async", "layout");
    memset(got, 0, sizeof(got));
    GB(tensor_get)(ctx2_t, got, 0, sizeof(got));
    CHECK(memcmp(got, tmp, sizeof(got)) == 0);

    /* guid */
    static const uint8_t cpu_guid[16] = { 0xaa, 0x67, 0xc7, 0x43, 0x96, 0xe6, 0xa3, 0x8a,
                                          0xe3, 0xaf, 0xea, 0x92, 0x36, 0xbc, 0xfc, 0x89 };
    backend_t be2 = GB(init_by_name)("CPU", NULL);
    CHECK(be2 != NULL && be2 != be);
    G(guid_t) g1 = GB(guid)(be);
    G(guid_t) g2 = GB(guid)(be2);
    CHECK(g1 != NULL && g2 != NULL);
    if (g1 && g2) {
        CHECK(memcmp(g1, g2, sizeof(G(guid))) == 0);
        CHECK(memcmp(g1, cpu_guid, 16) == 0);
        CHECK(G(guid_matches)(g1, g2));
    }
    /* two CPU backends share buffers: copy between streams */
    GB(tensor_set)(d, zero, 0, sizeof(zero));
    GB(tensor_copy_async)(be2, be, c, d);
    GB(synchronize)(be);
    CHECK(read_equals(d, want));
    GB(free)(be2);
    EXPECT_NO_LOG();
    CHECK(GB(guid)(NULL) == NULL);
    log_reset();
    GB(free)(NULL);
    EXPECT_NO_LOG();

    /* bad handles on the stream */
    CHECK(GB(graph_compute)(be, NULL) == STATUS_FAILED);
    EXPECT_LOG("graph_compute", "NULL");
    CHECK(GB(graph_compute)(NULL, graph) == STATUS_FAILED);
    EXPECT_LOG("graph_compute", "NULL");
    CHECK(GB(graph_compute_async)(be, NULL) == STATUS_FAILED);
    EXPECT_LOG("graph_compute_async", "NULL");
    CHECK(GB(graph_compute_async)(NULL, graph) == STATUS_FAILED);
    EXPECT_LOG("graph_compute_async", "NULL");
    CHECK(GB(graph_plan_create)(NULL, graph) == NULL);
    EXPECT_LOG("graph_plan_create", "NULL");
    CHECK(GB(graph_plan_create)(be, NULL) == NULL);
    EXPECT_LOG("graph_plan_create", "NULL");
    CHECK(GB(graph_plan_compute)(be, NULL) == STATUS_FAILED);
    EXPECT_LOG("graph_plan_compute", "NULL");
    CHECK(GB(graph_plan_compute)(NULL, NULL) == STATUS_FAILED);
    EXPECT_LOG("graph_plan_compute", "NULL");
    GB(graph_plan_free)(be, NULL);
    EXPECT_NO_LOG();
    plan = GB(graph_plan_create)(be, graph);
    GB(graph_plan_free)(NULL, plan);
    EXPECT_LOG("graph_plan_free", "NULL");
    GB(graph_plan_free)(be, plan);
    EXPECT_NO_LOG();
    GB(synchronize)(NULL);
    EXPECT_LOG("synchronize", "NULL");
    CHECK(!GB(supports_op)(NULL, c));
    EXPECT_LOG("supports_op", "NULL");
    CHECK(!GB(supports_op)(be, NULL));
    EXPECT_LOG("supports_op", "NULL");
    CHECK(!GB(supports_buft)(NULL, GB(cpu_buffer_type)()));
    EXPECT_LOG("supports_buft", "NULL");
    CHECK(!GB(supports_buft)(be, NULL));
    EXPECT_LOG("supports_buft", "NULL");
    CHECK(!GB(offload_op)(NULL, c));
    EXPECT_LOG("offload_op", "NULL");
    CHECK(!GB(offload_op)(be, NULL));
    EXPECT_LOG("offload_op", "NULL");
    CHECK(GB(get_device)(NULL) == NULL);
    EXPECT_LOG("get_device", "NULL");
    CHECK(GB(get_default_buffer_type)(NULL) == NULL);
    EXPECT_LOG("get_default_buffer_type", "NULL");
    CHECK(GB(alloc_buffer)(NULL, 16) == NULL);
    EXPECT_LOG("alloc_buffer", "NULL");
    CHECK(GB(get_alignment)(NULL) == 0);
    EXPECT_LOG("get_alignment", "NULL");
    CHECK(GB(get_max_size)(NULL) == 0);
    EXPECT_LOG("get_max_size", "NULL");
    GB(tensor_set_async)(NULL, d, tmp, 0, 4);
    EXPECT_LOG("tensor_set_async", "NULL");
    GB(tensor_set_async)(be, NULL, tmp, 0, 4);
    EXPECT_LOG("tensor_set_async", "NULL");
    memset(canary, CANARY, sizeof(canary));
    GB(tensor_get_async)(NULL, d, canary, 0, 4);
    EXPECT_LOG("tensor_get_async", "NULL");
    GB(tensor_get_async)(be, NULL, canary, 0, 4);
    EXPECT_LOG("tensor_get_async", "NULL");
    CHECK(all_bytes(canary, CANARY, sizeof(canary)));
    GB(tensor_copy_async)(NULL, be, a, d);
    EXPECT_LOG("tensor_copy_async", "NULL");
    GB(tensor_copy_async)(be, NULL, a, d);
    EXPECT_LOG("tensor_copy_async", "NULL");
    GB(tensor_copy_async)(be, be, NULL, d);
    EXPECT_LOG("tensor_copy_async", "NULL");
    GB(tensor_copy_async)(be, be, a, NULL);
    EXPECT_LOG("tensor_copy_async", "NULL");
    CHECK(read_equals(d, want));

    GB(buffer_free)(buf2);
    G(free)(ctx2);
    GB(buffer_free)(buf);
    G(free)(ctx);
    GB(free)(be);
    EXPECT_NO_LOG();
}

/* ------------------------------------------------------------------ 10. events */

static void test_events(void) {
    dev_t_ dev = GB(dev_by_type)(DEV_CPU);
    backend_t be = GB(init_by_type)(DEV_CPU, NULL);
    CHECK(be != NULL);

    CHECK(GB(event_new)(dev) == NULL); /* the CPU device has no events */
    CHECK(GB(event_new)(&fake_dev) == NULL);
    CHECK(GB(event_new)(NULL) == NULL);
    GB(event_free)(NULL);
    EXPECT_NO_LOG();

    GB(event_record)(NULL, be);
    EXPECT_LOG("event_record", "NULL");
    GB(event_synchronize)(NULL);
    EXPECT_LOG("event_synchronize", "NULL");
    GB(event_wait)(be, NULL);
    EXPECT_LOG("event_wait", "NULL");

    /* an event of a device without event support, used on a backend without event support */
    struct GB(event) ev = { .device = &fake_dev, .context = NULL };
    GB(event_record)(&ev, be);
    EXPECT_LOG("event_record", "event_record");
    GB(event_record)(&ev, NULL);
    EXPECT_LOG("event_record", "NULL");
    GB(event_wait)(be, &ev);
    EXPECT_LOG("event_wait", "event_wait");
    GB(event_wait)(NULL, &ev);
    EXPECT_LOG("event_wait", "NULL");
    GB(event_synchronize)(&ev);
    EXPECT_LOG("event_synchronize", "event_synchronize");
    GB(event_free)(&ev);
    EXPECT_LOG("event_free", "event_free");
    struct GB(event) orphan = { .device = NULL, .context = NULL };
    GB(event_synchronize)(&orphan);
    EXPECT_LOG("event_synchronize", "device");

    GB(free)(be);
    EXPECT_NO_LOG();
}

/* ------------------------------------------------------------------ 11. NULL handles */

static void test_null_handles(void) {
    struct G(context) * ctx = new_ctx(4);
    tensor_t * t = G(new_tensor_1d)(ctx, C(TYPE_F32), 4);
    buft_t cpu = GB(cpu_buffer_type)();

    /* buffer types */
    CHECK(GB(buft_name)(NULL) == NULL);
    EXPECT_LOG("buft_name", "NULL");
    CHECK(GB(buft_alloc_buffer)(NULL, 16) == NULL);
    EXPECT_LOG("buft_alloc_buffer", "NULL");
    CHECK(GB(buft_get_alignment)(NULL) == 0);
    EXPECT_LOG("buft_get_alignment", "NULL");
    CHECK(GB(buft_get_max_size)(NULL) == 0);
    EXPECT_LOG("buft_get_max_size", "NULL");
    CHECK(GB(buft_get_alloc_size)(NULL, t) == 0);
    EXPECT_LOG("buft_get_alloc_size", "NULL");
    CHECK(GB(buft_get_alloc_size)(cpu, NULL) == 0);
    EXPECT_LOG("buft_get_alloc_size", "NULL");
    CHECK(!GB(buft_is_host)(NULL));
    EXPECT_LOG("buft_is_host", "NULL");
    CHECK(GB(buft_get_device)(NULL) == NULL);
    EXPECT_LOG("buft_get_device", "NULL");

    /* buffers */
    CHECK(GB(buffer_name)(NULL) == NULL);
    EXPECT_LOG("buffer_name", "NULL");
    CHECK(GB(buffer_get_base)(NULL) == NULL);
    EXPECT_LOG("buffer_get_base", "NULL");
    CHECK(GB(buffer_get_size)(NULL) == 0);
    EXPECT_LOG("buffer_get_size", "NULL");
#ifdef TEST_API_STATUS
    CHECK(GB(buffer_init_tensor)(NULL, t) == STATUS_FAILED);
#else
    GB(buffer_init_tensor)(NULL, t);
#endif
    EXPECT_LOG("buffer_init_tensor", "NULL");
    CHECK(GB(buffer_get_alignment)(NULL) == 0);
    EXPECT_LOG("buffer_get_alignment", "NULL");
    CHECK(GB(buffer_get_max_size)(NULL) == 0);
    EXPECT_LOG("buffer_get_max_size", "NULL");
    CHECK(GB(buffer_get_alloc_size)(NULL, t) == 0);
    EXPECT_LOG("buffer_get_alloc_size", "NULL");
    GB(buffer_clear)(NULL, 0);
    EXPECT_LOG("buffer_clear", "NULL");
    CHECK(!GB(buffer_is_host)(NULL));
    EXPECT_LOG("buffer_is_host", "NULL");
    GB(buffer_set_usage)(NULL, USAGE_WEIGHTS);
    EXPECT_LOG("buffer_set_usage", "NULL");
    CHECK(GB(buffer_get_usage)(NULL) == USAGE_ANY);
    EXPECT_LOG("buffer_get_usage", "NULL");
    CHECK(GB(buffer_get_type)(NULL) == NULL);
    EXPECT_LOG("buffer_get_type", "NULL");
    GB(buffer_reset)(NULL);
    EXPECT_LOG("buffer_reset", "NULL");
    CHECK(!GB(buffer_is_multi_buffer)(NULL));
    EXPECT_LOG("buffer_is_multi_buffer", "NULL");
    GB(multi_buffer_set_usage)(NULL, USAGE_WEIGHTS);
    EXPECT_LOG("multi_buffer_set_usage", "NULL");

    /* a buffer with a NULL buffer type */
    buffer_t orphan = GB(buffer_init)(NULL, fake_buffer_iface, aligned_block(32), 32);
    CHECK(orphan != NULL);
    CHECK(GB(buffer_name)(orphan) == NULL);
    EXPECT_LOG("buffer_name", "buffer type");
    CHECK(GB(buffer_get_alignment)(orphan) == 0);
    EXPECT_LOG("buffer_get_alignment", "buffer type");
    CHECK(!GB(buffer_is_host)(orphan));
    EXPECT_LOG("buffer_is_host", "buffer type");
    CHECK(GB(buffer_get_type)(orphan) == NULL);
    EXPECT_NO_LOG();
    int frees = fake_free_calls;
    GB(buffer_free)(orphan);
    CHECK(fake_free_calls == frees + 1);
    EXPECT_NO_LOG();

    /* regs */
    CHECK(GB(reg_name)(NULL) == NULL);
    EXPECT_LOG("reg_name", "NULL");
    CHECK(GB(reg_dev_count)(NULL) == 0);
    EXPECT_LOG("reg_dev_count", "NULL");
    CHECK(GB(reg_dev_get)(NULL, 0) == NULL);
    EXPECT_LOG("reg_dev_get", "NULL");
    CHECK(GB(reg_get_proc_address)(NULL, "x") == NULL);
    EXPECT_LOG("reg_get_proc_address", "NULL");

    /* what a host without a GPU gets */
    CHECK(GB(dev_by_type)(DEV_GPU) == NULL);
    CHECK(GB(init_by_type)(DEV_GPU, NULL) == NULL);
    log_reset();

    G(free)(ctx);
}

/* ------------------------------------------------------------------ 12. threads */

#define N_THREADS 4
#define N_ITERS   200

struct thread_arg {
    int id;
    reg_t cpu_reg;
    dev_t_ cpu_dev;
    size_t n_devs;
    int errors;
};

static void * thread_main(void * p) {
    struct thread_arg * arg = (struct thread_arg *) p;
    struct G(context) * ctx = new_ctx(2);
    tensor_t * t = G(new_tensor_1d)(ctx, C(TYPE_I32), 256);
    int32_t in[256], out[256];
    for (int it = 0; it < N_ITERS; it++) {
        if (GB(reg_by_name)("CPU") != arg->cpu_reg || GB(dev_by_type)(DEV_CPU) != arg->cpu_dev ||
            GB(dev_count)() != arg->n_devs) {
            arg->errors++;
        }
        buffer_t buf = GB(buft_alloc_buffer)(GB(cpu_buffer_type)(), 1024 + (size_t) it);
        if (!buf) {
            arg->errors++;
            continue;
        }
        t->buffer = NULL;
        t->data = NULL;
        GB(tensor_alloc)(buf, t, GB(buffer_get_base)(buf));
        for (int i = 0; i < 256; i++) {
            in[i] = arg->id * 1000000 + it * 1000 + i;
        }
        GB(tensor_set)(t, in, 0, sizeof(in));
        memset(out, 0, sizeof(out));
        GB(tensor_get)(t, out, 0, sizeof(out));
        if (memcmp(in, out, sizeof(in)) != 0) {
            arg->errors++;
        }
        GB(buffer_free)(buf);
    }
    G(free)(ctx);
    return NULL;
}

static void test_threads(void) {
    reg_t cpu_reg = find_cpu_reg();
    dev_t_ cpu_dev = GB(dev_by_type)(DEV_CPU);
    size_t n_devs = GB(dev_count)();
    pthread_t th[N_THREADS];
    struct thread_arg args[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        args[i] = (struct thread_arg) { .id = i, .cpu_reg = cpu_reg, .cpu_dev = cpu_dev, .n_devs = n_devs, .errors = 0 };
        CHECK(pthread_create(&th[i], NULL, thread_main, &args[i]) == 0);
    }
    for (int i = 0; i < N_THREADS; i++) {
        pthread_join(th[i], NULL);
        CHECK(args[i].errors == 0);
    }
    EXPECT_NO_LOG();
}

/* ------------------------------------------------------------------ main */

static bool use_fork = true;

/* Runs one section in a forked child (unless CONFORMANCE_NO_FORK is set); a child that crashes
 * or exits abnormally counts as one failed check. */
static void run_section(const char * name, void (*fn)(void)) {
    if (!use_fork) {
        fn();
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        fn();
        return;
    }
    if (pid == 0) {
        log_reset();
        fn();
        fflush(NULL);
        _exit(0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        n_checks++;
        n_failed++;
        if (WIFSIGNALED(status)) {
            fprintf(stderr, "section %s: CRASHED with signal %d (checks after the crash did not run)\n", name, WTERMSIG(status));
        } else {
            fprintf(stderr, "section %s: exited abnormally (status %d)\n", name, status);
        }
    }
}

#define RUN(fn) run_section(#fn, fn)

int main(void) {
    counters = (struct counters *) mmap(NULL, sizeof(*counters), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (counters == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    counters->checks = 0;
    counters->failed = 0;
    log_verbose = getenv("CONFORMANCE_VERBOSE") != NULL;
    use_fork = getenv("CONFORMANCE_NO_FORK") == NULL;
    G(log_set)(log_cb, NULL);

    RUN(test_cpu_buffer_type);
    RUN(test_cpu_buffer_from_ptr);
    RUN(test_tensors);
    RUN(test_copies);
    RUN(test_multi_buffer);
    RUN(test_custom_buffer);
    RUN(test_registry);
#ifdef TEST_API_LOAD
    RUN(test_load_missing);
    RUN(test_load_null);
    RUN(test_load_not_a_backend);
    RUN(test_load_garbage);
    RUN(test_load_all);
#endif
    RUN(test_devices);
    RUN(test_backend_graph);
    RUN(test_events);
    RUN(test_null_handles);
    RUN(test_threads);

    printf("conformance %s: %d checks, %d failed\n", PFX, n_checks, n_failed);
    return n_failed == 0 ? 0 : 1;
}
