/*
 * How fast this core runs the instructions of one Q4_1 output block of the AVX2 tile, with
 * everything in registers (no loads): the bound a tile kernel cannot beat. Each loop line is one
 * output block of a 2x4 tile's eight independent accumulators:
 *   5-op: vpmaddubsw, vpmaddwd (pairs to i32), vcvtdq2ps, vmulps (dw * da), vfmadd231ps
 *   4-op: the same without the scale multiply (scales precomputed)
 * and loops of one or two instructions for the ports. Inline asm (GCC/clang, x86_64 AVX2/FMA).
 * On CPUs with AVX-512 VNNI also the 512-bit tile's instructions (kernels/src/ops/mul_mat/tiles/avx512/quant.rs):
 * one register holds two outputs' 8 lanes, so one vpdpbusd, vmulps, vcvtdq2ps and vfmadd231ps
 * (zmm) serve two output blocks; printed per output block.
 * Build and run: tools/tile-bound/run.sh
 */
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#define N 100000000L
/* best of 3 runs of `init` then N/8 trips of `body` (`units` each), clobbering the listed
 * registers; prints ns per unit */
#define TIME_ASM(name, per, units, init, body, ...) { \
    double best = 1e9; \
    for (int t = 0; t < 3; t++) { \
        double t0 = now(); \
        __asm__ volatile(init "mov %0,%%rcx\n 1:\n" body "dec %%rcx\n jnz 1b\n" :: "r"(N / 8) : "rcx", "memory", __VA_ARGS__); \
        double dt = now() - t0; \
        if (dt < best) best = dt; \
    } \
    printf("%-14s %.3f ns per %s\n", name, best / (N / 8 * units) * 1e9, per); }
#define XMM0_15 "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", \
    "xmm12", "xmm13", "xmm14", "xmm15"
/* ymm15 = sixteen 16-bit ones (pmaddwd's pair sums) */
#define RUN(name, per, units, body) \
    TIME_ASM(name, per, units, "vpcmpeqw %%ymm15,%%ymm15,%%ymm15\n vpsrlw $15,%%ymm15,%%ymm15\n", body, XMM0_15)
/* as RUN, over zmm registers (the 512-bit tile) */
#define RUN512(name, per, units, body) \
    TIME_ASM(name, per, units, "vpternlogd $0xff,%%zmm15,%%zmm15,%%zmm15\n vpsrlw $15,%%zmm15,%%zmm15\n", body, XMM0_15, \
        "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", \
        "xmm28", "xmm29", "xmm30", "xmm31")

/* two output blocks (one zmm accumulator ACC) of the 512-bit tile; T is its own temporary so the
 * eight chains are independent */
#define Z4(ACC, T) "vpxord " T "," T "," T "\n vpdpbusd %%zmm0,%%zmm1," T "\n vcvtdq2ps " T "," T "\n vmulps %%zmm13,%%zmm14,%%zmm3\n vfmadd231ps %%zmm3," T "," ACC "\n"
#define Z3(ACC, T) "vpxord " T "," T "," T "\n vpdpbusd %%zmm0,%%zmm1," T "\n vcvtdq2ps " T "," T "\n vfmadd231ps %%zmm3," T "," ACC "\n"
#define ZEIGHT(M) M("%%zmm4", "%%zmm17") M("%%zmm5", "%%zmm18") M("%%zmm6", "%%zmm19") M("%%zmm7", "%%zmm20") \
    M("%%zmm8", "%%zmm21") M("%%zmm9", "%%zmm22") M("%%zmm10", "%%zmm23") M("%%zmm11", "%%zmm24")
#define ZDP(R, T) "vpdpbusd %%zmm0,%%zmm1," R "\n"
#define ZFMA(R, T) "vfmadd231ps %%zmm3,%%zmm2," R "\n"

/* one output block into accumulator ACC */
#define OB5(ACC) "vpmaddubsw %%ymm0,%%ymm1,%%ymm2\n vpmaddwd %%ymm15,%%ymm2,%%ymm2\n vcvtdq2ps %%ymm2,%%ymm2\n vmulps %%ymm13,%%ymm14,%%ymm3\n vfmadd231ps %%ymm3,%%ymm2," ACC "\n"
#define OB4(ACC) "vpmaddubsw %%ymm0,%%ymm1,%%ymm2\n vpmaddwd %%ymm15,%%ymm2,%%ymm2\n vcvtdq2ps %%ymm2,%%ymm2\n vfmadd231ps %%ymm3,%%ymm2," ACC "\n"
#define FMA(ACC) "vfmadd231ps %%ymm3,%%ymm2," ACC "\n"
#define MADD(R) "vpmaddubsw %%ymm0,%%ymm1," R "\n"
#define CVT(R) "vcvtdq2ps %%ymm0," R "\n"
#define EIGHT(M) M("%%ymm4") M("%%ymm5") M("%%ymm6") M("%%ymm7") M("%%ymm8") M("%%ymm9") M("%%ymm10") M("%%ymm11")
#define PAIR_MC(R, S) "vpmaddubsw %%ymm0,%%ymm1," R "\n vcvtdq2ps %%ymm0," S "\n"
#define PAIR_MF(R, S) "vpmaddubsw %%ymm0,%%ymm1," R "\n vfmadd231ps %%ymm3,%%ymm2," S "\n"
#define FOUR(P) P("%%ymm4", "%%ymm5") P("%%ymm6", "%%ymm7") P("%%ymm8", "%%ymm9") P("%%ymm10", "%%ymm11")

/* the 512-bit loops; compiled for AVX-512 so GCC accepts the zmm16-31 clobbers */
__attribute__((target("avx512f,avx512vnni"))) static void run512(void) {
    /* 8 zmm chains = 16 output blocks per trip */
    RUN512("zmm 4-op", "output block", 16, ZEIGHT(Z4))
    RUN512("zmm 3-op", "output block", 16, ZEIGHT(Z3))
    RUN512("zmm vpdpbusd", "instruction", 8, ZEIGHT(ZDP))
    RUN512("zmm fma", "instruction", 8, ZEIGHT(ZFMA))
}

int main(void) {
    RUN("5-op", "output block", 8, EIGHT(OB5))
    RUN("4-op", "output block", 8, EIGHT(OB4))
    RUN("fma", "instruction", 8, EIGHT(FMA))
    RUN("maddubs", "instruction", 8, EIGHT(MADD))
    RUN("cvt", "instruction", 8, EIGHT(CVT))
    RUN("maddubs+cvt", "pair", 4, FOUR(PAIR_MC))
    RUN("maddubs+fma", "pair", 4, FOUR(PAIR_MF))
    if (__builtin_cpu_supports("avx512vnni")) run512();
    return 0;
}
