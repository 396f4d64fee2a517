/*
 * A C replica of the AVX-512 Q4_1 panel tile (kernels/src/ops/mul_mat/tiles/avx512/quant.rs, Panel::tile) on
 * the library's layout inside a chunk: 8 row pairs of unpacked weights (both rows' bytes in one
 * register, scales broadcast over the matching halves), 256 activation rows of Q8_1 blocks
 * (36 bytes), scales block-major; columns in groups of 4 outside, row pairs inside, 2 x 4 tiles.
 * Mode 0 is the library's arithmetic (dw * da multiplied per row pair and column); mode 1 drops
 * that multiply (not the right values: the bound if the products cost nothing). Values are not
 * checked (timing only). Build and run: tools/tile-bound/run.sh
 */
#include <immintrin.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
#ifndef NB
#define NB 18
#endif
#define PAIRS 8
#define NACT 256
typedef struct { unsigned short d, s; signed char qs[32]; } bq81;
static bq81 acts[NACT][NB];
static float ad[NB][NACT];
static __m512i wq[PAIRS][NB];
static __m512 wd[PAIRS][NB];
static float out[NACT][2 * PAIRS];
static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
static inline __attribute__((always_inline)) void tile(int p0, int c0, int mode) {
    __m512 acc[2][4];
    for (int p = 0; p < 2; p++) for (int c = 0; c < 4; c++) acc[p][c] = _mm512_setzero_ps();
    for (int b = 0; b < NB; b++) {
        __m512i av[4]; __m512 da[4];
        for (int c = 0; c < 4; c++) {
            av[c] = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *) acts[c0 + c][b].qs));
            da[c] = _mm512_set1_ps(ad[b][c0 + c]);
        }
        for (int p = 0; p < 2; p++) {
            __m512i w = wq[p0 + p][b]; __m512 dw = wd[p0 + p][b];
            for (int c = 0; c < 4; c++) {
                __m512i ints = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, av[c]);
                __m512 sc = mode == 1 ? dw : _mm512_mul_ps(dw, da[c]);
                acc[p][c] = _mm512_fmadd_ps(sc, _mm512_cvtepi32_ps(ints), acc[p][c]);
            }
        }
    }
    for (int p = 0; p < 2; p++) for (int c = 0; c < 4; c++) {
        out[c0 + c][2 * (p0 + p)] = hsum8(_mm512_castps512_ps256(acc[p][c]));
        out[c0 + c][2 * (p0 + p) + 1] = hsum8(_mm512_extractf32x8_ps(acc[p][c], 1));
    }
}
__attribute__((noinline)) static void chunk(int mode) {
    for (int j = 0; j < NACT; j += 4)
        for (int p = 0; p < PAIRS; p += 2) { if (mode == 0) tile(p, j, 0); else tile(p, j, 1); }
}
int main(void) {
    memset(acts, 1, sizeof acts); memset(wq, 2, sizeof wq);
    for (int b = 0; b < NB; b++) {
        for (int c = 0; c < NACT; c++) ad[b][c] = 0.5f;
        for (int p = 0; p < PAIRS; p++) wd[p][b] = _mm512_set1_ps(1e-3f);
    }
    for (int mode = 0; mode < 2; mode++) {
        long reps = 400; double best = 1e9;
        for (int t = 0; t < 5; t++) {
            double t0 = now();
            for (long i = 0; i < reps; i++) { chunk(mode); __asm__ volatile("" :: "r"(out) : "memory"); }
            double dt = now() - t0;
            if (dt < best) best = dt;
        }
        printf("replica512 chunk 16x256 nb=%d %s: %.3f ns per output-block\n", NB, mode == 0 ? "library arithmetic" : "without dw*da", best / reps / ((double) PAIRS * 2 * NACT * NB) * 1e9);
    }
    return 0;
}
