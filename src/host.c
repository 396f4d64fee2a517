/*
 * Weak references to what a host may or may not link.
 *
 * A prebuilt library cannot know which ggml backends (cpu, metal, blas, ...) or which ggml core
 * functions the host application compiled in, so every host symbol we use is referenced weakly:
 * its address is NULL when the host did not link it. The Rust side asks for them by name through
 * ggml_rs_host_sym_<p>() and never calls a host symbol it has not checked.
 *
 * The log call lives here because ggml's logger is variadic.
 *
 * Only compiler-provided headers are included and the three libc functions used are declared here,
 * so the file compiles with a bare `clang --target=<phone triple>`, without an NDK or Apple SDK
 * sysroot (scripts/cross.sh); the final app link resolves them against the platform's libc.
 */
#include <stddef.h>

extern int strcmp(const char * a, const char * b);
extern size_t strlen(const char * s);
/* POSIX write(2); ssize_t is long on every LP64 target this library ships for */
extern long write(int fd, const void * buf, size_t n);

#define HIDDEN __attribute__((visibility("hidden")))

/* Every symbol name below exists once per prefix; X(name) is expanded for each prefix built. */
#define HOST_SYMBOLS(P, X)                    \
    X(P##ggml_backend_cuda_reg)               \
    X(P##ggml_backend_metal_reg)              \
    X(P##ggml_backend_sycl_reg)               \
    X(P##ggml_backend_vk_reg)                 \
    X(P##ggml_backend_opencl_reg)             \
    X(P##ggml_backend_cann_reg)               \
    X(P##ggml_backend_blas_reg)               \
    X(P##ggml_backend_rpc_reg)                \
    X(P##ggml_backend_amx_reg)                \
    X(P##ggml_backend_kompute_reg)            \
    X(P##ggml_backend_cpu_reg)                \
    X(P##ggml_init)                           \
    X(P##ggml_free)                           \
    X(P##ggml_dup_tensor)                     \
    X(P##ggml_set_name)                       \
    X(P##ggml_new_graph_custom)               \
    X(P##ggml_tensor_overhead)                \
    X(P##ggml_graph_overhead_custom)          \
    X(P##ggml_hash_size)                      \
    X(P##ggml_op_name)                        \
    X(P##ggml_op_desc)                        \
    X(P##ggml_gallocr_new_n)                  \
    X(P##ggml_gallocr_free)                   \
    X(P##ggml_gallocr_reserve_n)              \
    X(P##ggml_gallocr_alloc_graph)            \
    X(P##ggml_gallocr_get_buffer_size)        \
    X(P##ggml_backend_alloc_ctx_tensors)      \
    X(P##ggml_get_type_traits_cpu)            \
    X(P##ggml_cpu_has_avx2)                   \
    X(P##ggml_cpu_has_avx512)                 \
    X(P##ggml_cpu_has_neon)                   \
    X(P##ggml_cpu_has_dotprod)                \
    X(P##ggml_cpu_has_matmul_int8)            \
    X(P##ggml_cpu_has_sve)                    \
    X(P##ggml_backend_buffer_is_meta)         \
    X(P##ggml_backend_meta_buffer_set_usage)  \
    PROBE_SYMBOLS(P, X)

/* What the SIMD backend's fidelity check (src/simd/fidelity.rs) builds its small graphs with: the
   host's own op constructors (ggml.c) and its ggml-cpu backend. */
#define PROBE_SYMBOLS(P, X)                   \
    X(P##ggml_new_tensor)                     \
    X(P##ggml_build_forward_expand)           \
    X(P##ggml_mul_mat)                        \
    X(P##ggml_rms_norm)                       \
    X(P##ggml_norm)                           \
    X(P##ggml_add)                            \
    X(P##ggml_sub)                            \
    X(P##ggml_mul)                            \
    X(P##ggml_div)                            \
    X(P##ggml_scale)                          \
    X(P##ggml_sqr)                            \
    X(P##ggml_sqrt)                           \
    X(P##ggml_silu)                           \
    X(P##ggml_gelu)                           \
    X(P##ggml_soft_max_ext)                   \
    X(P##ggml_rope_ext)                       \
    X(P##ggml_cpy)                            \
    X(P##ggml_get_rows)                       \
    X(P##ggml_im2col)                         \
    X(P##ggml_glu_split)                      \
    X(P##ggml_set_rows)                       \
    X(P##ggml_flash_attn_ext)                 \
    X(P##ggml_backend_cpu_init)               \
    X(P##ggml_backend_cpu_set_n_threads)

#define DECLARE_WEAK(name) extern void name(void) __attribute__((weak));
#define LOOKUP(name) if (strcmp(sym, #name) == 0) return (void *) &name;

static void log_stderr(int level, const char * msg) {
    /* ggml's default logger writes to stderr as well; DEBUG is dropped like ggml does without a callback */
    if (level == 1) {
        return;
    }
    /* unbuffered, like stdio's stderr; a failed write (closed fd 2) drops the rest of the line */
    size_t left = strlen(msg);
    while (left > 0) {
        long n = write(2, msg, left);
        if (n <= 0) {
            return;
        }
        msg += n;
        left -= (size_t) n;
    }
}

/*
 * One prefix's tables, M naming them for host.rs:
 * - the weak references of HOST_SYMBOLS and ggml_rs_host_sym_M, which looks them up by name;
 * - ggml_rs_host_float_model_M: the address of the float model every host file that includes our
 *   ggml-backend.h reports into (cbindgen/ggml-backend.h.in); NULL when the host was compiled with
 *   its own headers;
 * - ggml_rs_log_M: 1 when the host's logger took the line, 0 when it went to stderr.
 */
#define PREFIX_TABLES(P, M)                                                                   \
    HOST_SYMBOLS(P, DECLARE_WEAK)                                                             \
    HIDDEN void * ggml_rs_host_sym_##M(const char * sym) {                                    \
        HOST_SYMBOLS(P, LOOKUP)                                                               \
        return NULL;                                                                          \
    }                                                                                         \
    extern int P##ggml_rs_host_float_model __attribute__((weak));                             \
    HIDDEN const int * ggml_rs_host_float_model_##M(void) { return &P##ggml_rs_host_float_model; } \
    extern void P##ggml_log_internal(int level, const char * format, ...) __attribute__((weak)); \
    HIDDEN int ggml_rs_log_##M(int level, const char * msg) {                                 \
        if (P##ggml_log_internal) {                                                           \
            P##ggml_log_internal(level, "%s", msg);                                           \
            return 1;                                                                         \
        }                                                                                     \
        log_stderr(level, msg);                                                               \
        return 0;                                                                             \
    }

/* GGML_RS_PREFIXES(X): X(prefix, module) of each prefix built (lm_, wsp_, and the unprefixed
   one with its cargo feature), generated by build.rs from src/abi/revisions.list */
#include "ggml_rs_prefixes.h"
GGML_RS_PREFIXES(PREFIX_TABLES)

/* A revision whose prefix this build does not export (unit tests name every revision): no host
   symbols, the log to stderr. */
HIDDEN void * ggml_rs_host_sym_none(const char * sym) {
    (void) sym;
    return NULL;
}
HIDDEN const int * ggml_rs_host_float_model_none(void) { return NULL; }
HIDDEN int ggml_rs_log_none(int level, const char * msg) {
    log_stderr(level, msg);
    return 0;
}
