/* One hidden function per export of the Android library, jumping through ggml_rs_exports[i]
   (loader.c): arguments and return values pass through untouched, whatever the signature. */
#if defined(__x86_64__)
#define T(name, i) .globl name; .hidden name; .type name, @function; name: jmp *(ggml_rs_exports + 8 * i)(%rip); .size name, . - name;
#elif defined(__aarch64__)
#define T(name, i) .globl name; .hidden name; .type name, %function; name: adrp x16, ggml_rs_exports + 8 * i; ldr x16, [x16, :lo12:ggml_rs_exports + 8 * i]; br x16; .size name, . - name;
#else
#error "x86_64 or aarch64"
#endif
    .text
#include "exports.inc"
    .section .note.GNU-stack, "", @progbits
