/*
 * Loads the Android build of the library (GGML_RS_ANDROID_SO) before main and points this
 * program's calls of its exports at it. The program (a C test on ggml's core) is linked against
 * trampolines.S, one hidden jump per export through ggml_rs_exports[], filled here by dlsym: the
 * glibc link cannot take the Android .so as an input, and the library's weak references to the
 * host's ggml core must find the core in this program when the .so is loaded (-rdynamic).
 * RTLD_DEEPBIND puts the .so's own NEEDED libraries (the bionic shim) ahead of glibc for it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char * const names[] = {
#define T(name, i) #name,
#include "exports.inc"
#undef T
};
__attribute__((visibility("hidden"))) void * ggml_rs_exports[sizeof names / sizeof *names];

__attribute__((constructor)) static void load_android_library(void) {
    const char * path = getenv("GGML_RS_ANDROID_SO");
    if (!path) { fprintf(stderr, "loader: set GGML_RS_ANDROID_SO\n"); exit(2); }
    void * h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!h) { fprintf(stderr, "loader: dlopen: %s\n", dlerror()); exit(2); }
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        ggml_rs_exports[i] = dlsym(h, names[i]);
        if (!ggml_rs_exports[i]) { fprintf(stderr, "loader: %s not exported by %s\n", names[i], path); exit(2); }
    }
    Dl_info info;
    if (!dladdr(ggml_rs_exports[0], &info) || !info.dli_fname) { fprintf(stderr, "loader: dladdr failed\n"); exit(2); }
    /* the names glibc lacks or defines differently must come from the shim's libc.so */
    static const char * const shimmed[] = {"__errno", "__system_property_get", "sysconf", "strerror_r"};
    for (size_t i = 0; i < sizeof shimmed / sizeof *shimmed; i++) {
        Dl_info s;
        void * p = dlsym(h, shimmed[i]);
        const char * f = p && dladdr(p, &s) ? s.dli_fname : "(none)";
        size_t n = strlen(f);
        if (n < 8 || strcmp(f + n - 8, "/libc.so") != 0) {
            fprintf(stderr, "loader: %s resolves to %s, not the bionic shim\n", shimmed[i], f);
            exit(2);
        }
    }
    printf("loader: %s: %zu exports from %s\n", path, sizeof names / sizeof *names, info.dli_fname);
}
