/*
 * How fast this core runs the instructions of one Q4_1 output block of the AVX2 tile, with
 * everything in registers (no loads): the bound a tile kernel cannot beat. Each loop line is one
 * output block of a 2x4 tile's eight independent accumulators:
 *   5-op: vpmaddubsw, vpmaddwd (pairs to i32), vcvtdq2ps, vmulps (dw * da), vfmadd231ps
 *   4-op: the same without the scale multiply (scales precomputed)
 * and single-instruction loops for the ports. Inline asm (GCC/clang, x86_64 with AVX2/FMA).
 * Build and run: tools/tile-bound/run.sh
 */
#include <stdio.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(){
  long n=100000000;
  double t0=now();
  // 8 output-blocks per iteration: maddubs, madd, cvt, mul, fma
  __asm__ volatile(
    "vpxor %%ymm0,%%ymm0,%%ymm0\n vpxor %%ymm1,%%ymm1,%%ymm1\n vpcmpeqw %%ymm15,%%ymm15,%%ymm15\n vpsrlw $15,%%ymm15,%%ymm15\n"
    "mov %0, %%rcx\n"
    "1:\n"
#define OB(acc) "vpmaddubsw %%ymm0,%%ymm1,%%ymm2\n vpmaddwd %%ymm15,%%ymm2,%%ymm2\n vcvtdq2ps %%ymm2,%%ymm2\n vmulps %%ymm13,%%ymm14,%%ymm3\n vfmadd231ps %%ymm3,%%ymm2," acc "\n"
    OB("%%ymm4") OB("%%ymm5") OB("%%ymm6") OB("%%ymm7") OB("%%ymm8") OB("%%ymm9") OB("%%ymm10") OB("%%ymm11")
    "dec %%rcx\n jnz 1b\n"
    :: "r"(n/8) : "rcx","memory","xmm0","xmm1","xmm2","xmm3","xmm4","xmm5","xmm6","xmm7","xmm8","xmm9","xmm10","xmm11","xmm13","xmm14","xmm15");
  double t1=now();
  printf("5-op: %.3f ns per output-block\n",(t1-t0)/n*1e9);
  t0=now();
  __asm__ volatile(
    "mov %0, %%rcx\n"
    "1:\n"
#define OB4(acc) "vpmaddubsw %%ymm0,%%ymm1,%%ymm2\n vpmaddwd %%ymm15,%%ymm2,%%ymm2\n vcvtdq2ps %%ymm2,%%ymm2\n vfmadd231ps %%ymm3,%%ymm2," acc "\n"
    OB4("%%ymm4") OB4("%%ymm5") OB4("%%ymm6") OB4("%%ymm7") OB4("%%ymm8") OB4("%%ymm9") OB4("%%ymm10") OB4("%%ymm11")
    "dec %%rcx\n jnz 1b\n"
    :: "r"(n/8) : "rcx","memory","xmm0","xmm1","xmm2","xmm3","xmm4","xmm5","xmm6","xmm7","xmm8","xmm9","xmm10","xmm11","xmm13","xmm14","xmm15");
  t1=now();
  printf("4-op: %.3f ns per output-block\n",(t1-t0)/n*1e9);
  t0=now();
  __asm__ volatile(
    "mov %0, %%rcx\n"
    "1:\n"
#define F(acc) "vfmadd231ps %%ymm3,%%ymm2," acc "\n"
    F("%%ymm4") F("%%ymm5") F("%%ymm6") F("%%ymm7") F("%%ymm8") F("%%ymm9") F("%%ymm10") F("%%ymm11")
    "dec %%rcx\n jnz 1b\n"
    :: "r"(n/8) : "rcx","memory","xmm0","xmm1","xmm2","xmm3","xmm4","xmm5","xmm6","xmm7","xmm8","xmm9","xmm10","xmm11","xmm13","xmm14","xmm15");
  t1=now();
  printf("fma only: %.3f ns per fma\n",(t1-t0)/n*1e9);
  t0=now();
  __asm__ volatile(
    "mov %0, %%rcx\n"
    "1:\n"
#define M(r) "vpmaddubsw %%ymm0,%%ymm1," r "\n"
    M("%%ymm4") M("%%ymm5") M("%%ymm6") M("%%ymm7") M("%%ymm8") M("%%ymm9") M("%%ymm10") M("%%ymm11")
    "dec %%rcx\n jnz 1b\n"
    :: "r"(n/8) : "rcx","memory","xmm0","xmm1","xmm2","xmm3","xmm4","xmm5","xmm6","xmm7","xmm8","xmm9","xmm10","xmm11","xmm13","xmm14","xmm15");
  t1=now();
  printf("maddubs only: %.3f ns per op\n",(t1-t0)/n*1e9);
  t0=now();
  __asm__ volatile(
    "mov %0, %%rcx\n"
    "1:\n"
#define CV(r) "vcvtdq2ps %%ymm0," r "\n"
    CV("%%ymm4") CV("%%ymm5") CV("%%ymm6") CV("%%ymm7") CV("%%ymm8") CV("%%ymm9") CV("%%ymm10") CV("%%ymm11")
    "dec %%rcx\n jnz 1b\n"
    :: "r"(n/8) : "rcx","memory","xmm0","xmm1","xmm2","xmm3","xmm4","xmm5","xmm6","xmm7","xmm8","xmm9","xmm10","xmm11","xmm13","xmm14","xmm15");
  t1=now();
  printf("cvt only: %.3f ns per op\n",(t1-t0)/n*1e9);
  t0=now();
  __asm__ volatile(
    "mov %0, %%rcx\n"
    "1:\n"
#define MC(r,s) "vpmaddubsw %%ymm0,%%ymm1," r "\n vcvtdq2ps %%ymm0," s "\n"
    MC("%%ymm4","%%ymm5") MC("%%ymm6","%%ymm7") MC("%%ymm8","%%ymm9") MC("%%ymm10","%%ymm11")
    "dec %%rcx\n jnz 1b\n"
    :: "r"(n/8) : "rcx","memory","xmm0","xmm1","xmm2","xmm3","xmm4","xmm5","xmm6","xmm7","xmm8","xmm9","xmm10","xmm11","xmm13","xmm14","xmm15");
  t1=now();
  printf("maddubs+cvt: %.3f ns per pair\n",(t1-t0)/n*2*1e9);
  t0=now();
  __asm__ volatile(
    "mov %0, %%rcx\n"
    "1:\n"
#define MF(r,s) "vpmaddubsw %%ymm0,%%ymm1," r "\n vfmadd231ps %%ymm3,%%ymm2," s "\n"
    MF("%%ymm4","%%ymm5") MF("%%ymm6","%%ymm7") MF("%%ymm8","%%ymm9") MF("%%ymm10","%%ymm11")
    "dec %%rcx\n jnz 1b\n"
    :: "r"(n/8) : "rcx","memory","xmm0","xmm1","xmm2","xmm3","xmm4","xmm5","xmm6","xmm7","xmm8","xmm9","xmm10","xmm11","xmm13","xmm14","xmm15");
  t1=now();
  printf("maddubs+fma: %.3f ns per pair\n",(t1-t0)/n*2*1e9);
  return 0;
}
