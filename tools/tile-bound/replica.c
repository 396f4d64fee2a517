/*
 * A C replica of the AVX2 Q4_1 panel tile (kernels/src/ops/mul_mat/tiles/avx2/quant.rs, panel_tile) on the
 * layout the library uses inside a chunk: 16 unpacked weight rows (quants and broadcast scales),
 * 256 activation rows of Q8_1 blocks (36 bytes), scales block-major; the walk over cache blocks
 * of 8 activation rows, 2x4 tiles, eight horizontal sums per tile. Mode 0 is the library's
 * arithmetic (dw * da multiplied per output block); mode 1 takes the products from a table made
 * per tile. Values are not checked (timing only). Build and run: tools/tile-bound/run.sh
 */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define NB 18
#define ROWS 16
#define NACT 256
typedef struct { unsigned short d, s; signed char qs[32]; } bq81;
static bq81 acts[NACT][NB];
static float ad[NB][NACT];
static __m256i prep[ROWS][NB] __attribute__((aligned(32)));
static __m256 pd[ROWS][NB] __attribute__((aligned(32)));
static float out[NACT][ROWS];
static inline float hsum(__m256 v){__m128 s=_mm_add_ps(_mm256_extractf128_ps(v,1),_mm256_castps256_ps128(v)); s=_mm_add_ps(s,_mm_movehl_ps(s,s)); return _mm_cvtss_f32(_mm_add_ss(s,_mm_movehdup_ps(s)));}
static inline void tile(int r0, int c0, int mode) {
  __m256 acc[2][4]; for(int r=0;r<2;r++)for(int c=0;c<4;c++)acc[r][c]=_mm256_setzero_ps();
  const __m256i ones=_mm256_set1_epi16(1);
  if (mode==1) {
    float dt[NB][8] __attribute__((aligned(32)));
    for (int b=0;b<NB;b++){ __m128 da4=_mm_loadu_ps(&ad[b][c0]);
      _mm_store_ps(&dt[b][0], _mm_mul_ps(_mm256_castps256_ps128(pd[r0][b]), da4));
      _mm_store_ps(&dt[b][4], _mm_mul_ps(_mm256_castps256_ps128(pd[r0+1][b]), da4)); }
    __asm__ volatile("" ::: "memory");
    for (int b=0;b<NB;b++){
      __m256i p0=prep[r0][b], p1=prep[r0+1][b];
      for(int c=0;c<4;c++){
        __m256i qa=_mm256_loadu_si256((const __m256i*)acts[c0+c][b].qs);
        __m256 q0=_mm256_cvtepi32_ps(_mm256_madd_epi16(ones,_mm256_maddubs_epi16(p0,qa)));
        acc[0][c]=_mm256_fmadd_ps(_mm256_broadcast_ss(&dt[b][c]),q0,acc[0][c]);
        __m256 q1=_mm256_cvtepi32_ps(_mm256_madd_epi16(ones,_mm256_maddubs_epi16(p1,qa)));
        acc[1][c]=_mm256_fmadd_ps(_mm256_broadcast_ss(&dt[b][4+c]),q1,acc[1][c]);
      }
    }
  } else
  for (int b=0;b<NB;b++){
    __m256i p0=prep[r0][b], p1=prep[r0+1][b];
    for(int c=0;c<4;c++){
      __m256i qa=_mm256_loadu_si256((const __m256i*)acts[c0+c][b].qs);
      __m256 dav=_mm256_broadcast_ss(&ad[b][c0+c]);
      __m256 q0=_mm256_cvtepi32_ps(_mm256_madd_epi16(ones,_mm256_maddubs_epi16(p0,qa)));
      acc[0][c]=_mm256_fmadd_ps(_mm256_mul_ps(pd[r0][b],dav),q0,acc[0][c]);
      __m256 q1=_mm256_cvtepi32_ps(_mm256_madd_epi16(ones,_mm256_maddubs_epi16(p1,qa)));
      acc[1][c]=_mm256_fmadd_ps(_mm256_mul_ps(pd[r0+1][b],dav),q1,acc[1][c]);
    }
  }
  for(int r=0;r<2;r++)for(int c=0;c<4;c++) out[c0+c][r0+r]=hsum(acc[r][c]);
}
__attribute__((noinline)) void chunk(int mode){
  for(int j0=0;j0<NACT;j0+=8)
    for(int r=0;r<ROWS;r+=2)
      for(int c=j0;c<j0+8;c+=4) tile(r,c,mode);
}
int main(){
  memset(acts,1,sizeof acts); memset(prep,2,sizeof prep);
  for(int b=0;b<NB;b++){for(int c=0;c<NACT;c++)ad[b][c]=0.5f; for(int r=0;r<ROWS;r++)pd[r][b]=_mm256_set1_ps(1e-3f);}
  for (int mode=0; mode<2; mode++) {
  long reps=300; double best=1e9;
  for(int t=0;t<5;t++){double t0=now(); for(long i=0;i<reps;i++){chunk(mode); __asm__ volatile(""::"r"(out):"memory");} double dt=now()-t0; if(dt<best)best=dt;}
  printf("replica chunk 16x256 k=576 mode %d: %.3f ns per output-block\n",mode,best/reps/((double)ROWS*NACT*NB)*1e9);
  }
  return 0;
}
