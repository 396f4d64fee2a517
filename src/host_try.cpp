/*
 * The registry's calls into foreign backend code at start-up (a host's <p>ggml_backend_<x>_reg,
 * get_device_count, get_device, get_type, get_memory, get_buffer_type, the first buffer
 * allocation, init_backend), each inside `try { ... } catch (...)`.
 *
 * Rust cannot catch a C++ exception: one unwinding into a Rust frame aborts the process. Stock's
 * registry lets it reach the app, which terminates (OpenCL's `std::out_of_range` from get_device,
 * a Vulkan driver throwing at start-up). Here the exception stops in a C++ frame of ours and the
 * caller gets 1 and, when the C++ runtime can say, the thrown type's (mangled) name.
 *
 * One function per call shape; `f` is the foreign function, its result goes to `*out`.
 *
 * No header is included (the file compiles with a bare `clang --target=<phone triple>`, as
 * host.c), and the C++ runtime is referenced weakly: a plain C program linking the library has no
 * libstdc++ / libc++, and then links with these references NULL (no C++ exception can exist in
 * such a program, so the catch path never runs). _Unwind_Resume comes from the unwinder Rust's
 * std links anyway.
 */
typedef __SIZE_TYPE__ size_t;

#if defined(__APPLE__)
#    define WEAK_REF(sym) __asm__(".weak_reference _" #sym);
#else
#    define WEAK_REF(sym) __asm__(".weak " #sym);
#endif
/* what the compiler's try/catch code references (the personality through the unwind tables) */
WEAK_REF(__gxx_personality_v0)
WEAK_REF(__cxa_begin_catch)
WEAK_REF(__cxa_end_catch)
WEAK_REF(_ZSt9terminatev)

/* libstdc++ and libc++abi: the std::type_info of the exception being handled */
extern "C" void * __cxa_current_exception_type(void) __attribute__((weak));

#define HIDDEN __attribute__((visibility("hidden")))

/* The caught exception's mangled type name ("St12out_of_range"), or NULL. Itanium C++ ABI: a
   std::type_info is { vtable, const char * name }; Apple's arm64 runtime may set the name
   pointer's top bit (non-unique RTTI), GCC marks local types with a leading '*'. */
static const char * caught_type(void) {
    if (!__cxa_current_exception_type) {
        return 0;
    }
    const void * ti = __cxa_current_exception_type();
    if (!ti) {
        return 0;
    }
    unsigned long long n = (unsigned long long) ((const char * const *) ti)[1];
    n &= ~(1ULL << 63);
    const char * s = (const char *) n;
    if (s && *s == '*') {
        s++;
    }
    return s;
}

#define TRY(call)                        \
    try {                                \
        call;                            \
        return 0;                        \
    } catch (...) {                      \
        *what = caught_type();           \
        return 1;                        \
    }

extern "C" {

/* reg = <p>ggml_backend_<x>_reg() */
HIDDEN int ggml_rs_try_p_v(void * (*f)(void), void ** out, const char ** what) {
    TRY(*out = f())
}

/* dev->iface.get_buffer_type(dev) */
HIDDEN int ggml_rs_try_p_p(void * (*f)(void *), void * a, void ** out, const char ** what) {
    TRY(*out = f(a))
}

/* reg->iface.get_device(reg, i), buft->iface.alloc_buffer(buft, size) */
HIDDEN int ggml_rs_try_p_pz(void * (*f)(void *, size_t), void * a, size_t n, void ** out, const char ** what) {
    TRY(*out = f(a, n))
}

/* dev->iface.init_backend(dev, params) */
HIDDEN int ggml_rs_try_p_pp(void * (*f)(void *, const void *), void * a, const void * b, void ** out, const char ** what) {
    TRY(*out = f(a, b))
}

/* reg->iface.get_device_count(reg) */
HIDDEN int ggml_rs_try_z_p(size_t (*f)(void *), void * a, size_t * out, const char ** what) {
    TRY(*out = f(a))
}

/* dev->iface.get_type(dev) (an enum: int) */
HIDDEN int ggml_rs_try_i_p(int (*f)(void *), void * a, int * out, const char ** what) {
    TRY(*out = f(a))
}

/* buffer->iface.free_buffer(buffer) */
HIDDEN int ggml_rs_try_v_p(void (*f)(void *), void * a, const char ** what) {
    TRY(f(a))
}

/* dev->iface.get_memory(dev, &free, &total) */
HIDDEN int ggml_rs_try_v_ppp(void (*f)(void *, void *, void *), void * a, void * b, void * c, const char ** what) {
    TRY(f(a, b, c))
}

}
