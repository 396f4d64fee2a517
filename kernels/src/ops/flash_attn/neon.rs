//! The NEON arithmetic of FLASH_ATTN_EXT, operation for operation as clang compiles ggml-cpu's
//! `ops.cpp` / `vec.h` / `vec.cpp` / `simd-gemm.h` for aarch64 (default floating-point model:
//! `-ffp-contract=on` fuses `a*b + c` only inside one expression, the left product first).
//!
//! Two F16 flavours, chosen per CPU as the MUL_MAT kernels choose them (`has_fp16`, the same CPUs
//! on which llama.rn / whisper.rn load a `+fp16` ggml-cpu):
//!
//! * **half-precision arithmetic** (FEAT_FP16, ggml built with `__ARM_FEATURE_FP16_VECTOR_ARITHMETIC`):
//!   `ggml_vec_dot_f16` accumulates `K·Q` in four 8-lane *half* FMA accumulators,
//!   `ggml_vec_mad_f16` / `ggml_vec_scale_f16` compute `y + x*v` / `y*v` in half with `v` rounded
//!   to half, on the first `n & !31` elements; the leftovers are f32 (`v` unrounded).
//! * **f32 arithmetic** (Armv8.0, ggml's `GGML_F32Cx4` mapping): the halves widened, four 4-lane
//!   f32 accumulators over 16-element steps, `y + x*v` as an f32 FMA rounded to half.
//!
//! Both end as ggml's NEON reductions (`(a0 + a2) + (a1 + a3)`, `vaddvq_f32`, the leftovers in
//! double). The tiled path is f32 throughout (`simd_gemm`'s FMA chains, ggml's 4-lane NEON
//! `ggml_v_expf` with each group's `vaddvq_f32` added in double) and the same on both flavours.
//! Half-precision vector instructions are inline assembly (Rust's `float16x8_t` intrinsics are not
//! stable); everything else is base NEON, which aarch64 always has.
//!
//! Checked under qemu against cui-llama.rn 1.12.2's ggml-cpu compiled by clang 14: the 20 taken
//! cases of tests_c/simd_ops_attn.inc (every path, GQA, SWA, split-KV, heads of 60 and 80) are
//! bit-identical for `-march=armv8.2-a+fp16+dotprod` on the "max" CPU and for `-march=armv8-a`
//! on a Cortex-A53 (with that file's `attn_taken` answering true on aarch64, 2026-12-07).

// Tiles index rows and columns with the same numbers as ggml's loops.
#![allow(clippy::needless_range_loop)]

use super::{Attn, KV_TILE, Q_TILE};
use crate::cpu_features::has_fp16;
use crate::quant::f16::neon::{hp, narrow4, widen4};
use crate::quant::f16::{fp16_to_fp32, fp32_to_fp16};
use crate::vexp::neon::v_expf;
use std::arch::aarch64::*;
use std::ops::Range;

/// Per-thread buffers of the one-row online softmax: Q rounded to F16 (ggml's `Q_q`), the V sum
/// in F16 (`VKQ16`), and which F16 arithmetic this CPU gets.
pub(super) struct RowBuf {
    qq: Vec<u16>,
    vkq: Vec<u16>,
    hp: bool,
}

impl RowBuf {
    pub(super) fn new(a: &Attn) -> RowBuf {
        RowBuf { qq: vec![0; a.dk], vkq: vec![0; a.dv], hp: has_fp16() }
    }

    /// The V sum widened to f32 (ggml's `VKQ32[d] = FP16_TO_FP32(VKQ16[d])`, exact).
    pub(super) fn vkq32(&self) -> impl Iterator<Item = f32> + '_ {
        self.vkq.iter().map(|&h| fp16_to_fp32(h))
    }
}


/// `q_to_vec_dot` for F16 K (`ggml_cpu_fp32_to_fp16`, on NEON its scalar `(__fp16) x` loop): the
/// query row rounded to halves, nearest even (four at a time with `fcvtn` here, the same bits).
fn round_row(q: &[f32], out: &mut [u16]) {
    let n = q.len().min(out.len());
    let full = n / 4 * 4;
    for i in (0..full).step_by(4) {
        // SAFETY: i + 4 <= n bounds both rows; NEON is the aarch64 baseline.
        unsafe { vst1_u16(out.as_mut_ptr().add(i), narrow4(vld1q_f32(q.as_ptr().add(i)))) };
    }
    for i in full..n {
        out[i] = fp32_to_fp16(q[i]);
    }
}

/// ggml's double leftovers of `ggml_vec_dot_f16`: `sumf += (double) (x[i]*y[i])` (the product of
/// two halves is exact in f32), then `*s = sumf`.
#[inline]
fn finish_dot(reduced: f32, k: &[u16], q: &[u16]) -> f32 {
    let mut sum = reduced as f64;
    for (&x, &y) in k.iter().zip(q) {
        sum += (fp16_to_fp32(x) * fp16_to_fp32(y)) as f64;
    }
    sum as f32
}

/// `ggml_vec_dot_f16` with FP16 arithmetic, for each of `R` K rows against the F16 query row `q`:
/// accumulator `j` takes elements `32i + 8j..+8` (`vfmaq_f16`), reduced in half as
/// `(a0 + a2) + (a1 + a3)` (`GGML_F16x8_REDUCE`), widened, the halves added, `vaddvq_f32`, then
/// the `n % 32` leftovers in double.
///
/// # Safety
/// FEAT_FP16; every `k[r]` holds `q.len()` halves.
#[target_feature(enable = "fp16")]
unsafe fn dot_hp<const R: usize>(k: [&[u16]; R], q: &[u16]) -> [f32; R] {
    let n = q.len();
    debug_assert!(k.iter().all(|r| r.len() >= n));
    let np = n & !31;
    // SAFETY (whole body): the loads read 8 halves at offsets i + 8j + 8 <= np <= n of rows of at
    // least n halves; the hp functions need FEAT_FP16, which the caller guarantees.
    unsafe {
        let zero = vdupq_n_u16(0);
        let mut acc = [[zero; 4]; R];
        let mut i = 0;
        while i < np {
            let qv: [uint16x8_t; 4] = std::array::from_fn(|j| vld1q_u16(q.as_ptr().add(i + 8 * j)));
            for r in 0..R {
                for j in 0..4 {
                    acc[r][j] = hp::fma(acc[r][j], vld1q_u16(k[r].as_ptr().add(i + 8 * j)), qv[j]);
                }
            }
            i += 32;
        }
        let mut out = [0f32; R];
        for r in 0..R {
            let p = &acc[r];
            let (lo, hi) = hp::widen(hp::add(hp::add(p[0], p[2]), hp::add(p[1], p[3])));
            out[r] = finish_dot(vaddvq_f32(vaddq_f32(lo, hi)), &k[r][np..n], &q[np..]);
        }
        out
    }
}

/// `ggml_vec_dot_f16` without FP16 arithmetic (`GGML_F32Cx4`): accumulator `j` takes elements
/// `16i + 4j..+4` widened to f32 (`vfmaq_f32`), reduced `(a0 + a2) + (a1 + a3)`, `vaddvq_f32`,
/// then the `n % 16` leftovers in double.
fn dot_f32<const R: usize>(k: [&[u16]; R], q: &[u16]) -> [f32; R] {
    let n = q.len();
    assert!(k.iter().all(|r| r.len() >= n));
    let np = n & !15;
    // SAFETY (whole body): the loads read 4 halves at offsets i + 4j + 4 <= np <= n of rows of at
    // least n halves (asserted); NEON is the aarch64 baseline.
    unsafe {
        let mut acc = [[vdupq_n_f32(0.0); 4]; R];
        let mut i = 0;
        while i < np {
            for j in 0..4 {
                let qv = widen4(vld1_u16(q.as_ptr().add(i + 4 * j)));
                for r in 0..R {
                    acc[r][j] = vfmaq_f32(acc[r][j], widen4(vld1_u16(k[r].as_ptr().add(i + 4 * j))), qv);
                }
            }
            i += 16;
        }
        let mut out = [0f32; R];
        for r in 0..R {
            let p = &acc[r];
            let x = vaddq_f32(vaddq_f32(p[0], p[2]), vaddq_f32(p[1], p[3]));
            out[r] = finish_dot(vaddvq_f32(x), &k[r][np..n], &q[np..]);
        }
        out
    }
}

/// The K rows' dot products with `q` in this CPU's flavour.
#[inline]
fn dot<const R: usize>(hp: bool, k: [&[u16]; R], q: &[u16]) -> [f32; R] {
    if hp {
        assert!(k.iter().all(|r| r.len() >= q.len()));
        // SAFETY: `hp` is `has_fp16()` (RowBuf::new); row lengths asserted.
        unsafe { dot_hp::<R>(k, q) }
    } else {
        dot_f32::<R>(k, q)
    }
}

/// ggml's scalar F16 leftovers of `ggml_vec_mad_f16`: `y = f16(y + x*v)`, contracted by clang to
/// one f32 FMA, with `v` unrounded.
#[inline]
fn mad_tail(y: &mut [u16], x: &[u16], v: f32) {
    for (y, &x) in y.iter_mut().zip(x) {
        *y = fp32_to_fp16(fp16_to_fp32(x).mul_add(v, fp16_to_fp32(*y)));
    }
}

/// `ggml_vec_mad_f16` with FP16 arithmetic: `y = y + x*f16(v)` fused in half on the first
/// `n & !31` elements (`vfmaq_f16`), [`mad_tail`] on the rest.
///
/// # Safety
/// FEAT_FP16.
#[target_feature(enable = "fp16")]
unsafe fn mad_hp(y: &mut [u16], x: &[u16], v: f32) {
    let n = y.len().min(x.len());
    let np = n & !31;
    let vh = vdupq_n_u16(fp32_to_fp16(v));
    for i in (0..np).step_by(8) {
        // SAFETY: i + 8 <= np <= n bounds both rows; FEAT_FP16 by the contract.
        unsafe {
            let p = y.as_mut_ptr().add(i);
            vst1q_u16(p, hp::fma(vld1q_u16(p), vld1q_u16(x.as_ptr().add(i)), vh));
        }
    }
    mad_tail(&mut y[np..n], &x[np..n], v);
}

/// `ggml_vec_mad_f16` in f32 (`GGML_F32Cx4`): `y = f16(fma(x, v, y))` element by element, four
/// at a time (`vfmaq_f32`, `vcvt_f16_f32`), the leftovers alike.
fn mad_f32(y: &mut [u16], x: &[u16], v: f32) {
    let n = y.len().min(x.len());
    let full = n / 4 * 4;
    // SAFETY: NEON is the aarch64 baseline.
    let vv = unsafe { vdupq_n_f32(v) };
    for i in (0..full).step_by(4) {
        // SAFETY: i + 4 <= n bounds both rows.
        unsafe {
            let p = y.as_mut_ptr().add(i);
            vst1_u16(p, narrow4(vfmaq_f32(widen4(vld1_u16(p)), widen4(vld1_u16(x.as_ptr().add(i))), vv)));
        }
    }
    mad_tail(&mut y[full..n], &x[full..n], v);
}

/// `ggml_vec_scale_f16` with FP16 arithmetic: `y = y*f16(v)` in half on the first `n & !31`
/// elements (`vmulq_f16`), `f16(f32(y)*v)` on the rest.
///
/// # Safety
/// FEAT_FP16.
#[target_feature(enable = "fp16")]
unsafe fn scale_hp(y: &mut [u16], v: f32) {
    let n = y.len();
    let np = n & !31;
    let vh = vdupq_n_u16(fp32_to_fp16(v));
    for i in (0..np).step_by(8) {
        // SAFETY: i + 8 <= np <= n; FEAT_FP16 by the contract.
        unsafe {
            let p = y.as_mut_ptr().add(i);
            vst1q_u16(p, hp::mul(vld1q_u16(p), vh));
        }
    }
    for y in &mut y[np..] {
        *y = fp32_to_fp16(fp16_to_fp32(*y) * v);
    }
}

/// `ggml_vec_scale_f16` in f32: `y = f16(f32(y)*v)` element by element.
fn scale_f16_f32(y: &mut [u16], v: f32) {
    let n = y.len();
    let full = n / 4 * 4;
    // SAFETY: NEON is the aarch64 baseline.
    let vv = unsafe { vdupq_n_f32(v) };
    for i in (0..full).step_by(4) {
        // SAFETY: i + 4 <= n.
        unsafe {
            let p = y.as_mut_ptr().add(i);
            vst1_u16(p, narrow4(vmulq_f32(widen4(vld1_u16(p)), vv)));
        }
    }
    for y in &mut y[full..] {
        *y = fp32_to_fp16(fp16_to_fp32(*y) * v);
    }
}

/// `ggml_vec_scale_f32`: `y *= v` element by element (ggml's 16-element NEON steps and scalar
/// leftovers multiply alike).
fn scale_f32(y: &mut [f32], v: f32) {
    let n = y.len();
    let full = n / 4 * 4;
    // SAFETY: NEON is the aarch64 baseline.
    let vv = unsafe { vdupq_n_f32(v) };
    for i in (0..full).step_by(4) {
        // SAFETY: i + 4 <= n.
        unsafe {
            let p = y.as_mut_ptr().add(i);
            vst1q_f32(p, vmulq_f32(vld1q_f32(p), vv));
        }
    }
    for x in &mut y[full..] {
        *x *= v;
    }
}

/// Keys whose dot products are formed together (their mask values read first).
const KEYS: usize = 4;

/// `lm_ggml_compute_forward_flash_attn_ext_f16_one_chunk` for query row `idx` over keys `ic`
/// (F16 V): leaves the F16 V sum in `buf` and returns `(M, S)`.
///
/// Per unmasked key: `s = dot * scale`, `s += mv` (separate statements: two roundings), then on
/// a new maximum `M = s`, `ms = expf(Mold - M)` and `VKQ16 *= ms`, else `vs = expf(s - M)`;
/// `VKQ16 += v * vs`; `S = fma(S, ms, vs)` (clang fuses `S*ms + vs`). `expf` is libm's, which
/// `f32::exp` calls too (the same function in the same process).
///
/// # Safety
/// None beyond NEON (the aarch64 baseline; FEAT_FP16 is used only where `RowBuf` saw it):
/// `unsafe` for the same signature as the AVX2 path's.
pub(super) unsafe fn one_row(a: &Attn, idx: (usize, usize, usize), ic: Range<usize>, buf: &mut RowBuf) -> (f32, f32) {
    round_row(a.q_row(idx), &mut buf.qq);
    buf.vkq.fill(0);
    let hp = buf.hp;
    let mask = a.mask_row(idx);
    let head = (idx.1, idx.2);
    let (mut m, mut sum) = (f32::NEG_INFINITY, 0f32);
    let qq = &buf.qq[..];
    let vkq = &mut buf.vkq[..];
    let mut c = ic.start;
    while c < ic.end {
        let nb = KEYS.min(ic.end - c);
        let mut mv = [0f32; KEYS];
        if let Some(mp) = mask {
            for j in 0..nb {
                mv[j] = fp16_to_fp32(mp[c + j]);
            }
            if mv[..nb].iter().all(|&x| x == f32::NEG_INFINITY) {
                c += nb;
                continue;
            }
        }
        let mut dots = [0f32; KEYS];
        if nb == KEYS {
            dots = dot::<KEYS>(hp, std::array::from_fn(|j| a.k_row(c + j, head)), qq);
        } else {
            for j in 0..nb {
                if mv[j] != f32::NEG_INFINITY {
                    dots[j] = dot::<1>(hp, [a.k_row(c + j, head)], qq)[0];
                }
            }
        }
        for j in 0..nb {
            if mv[j] == f32::NEG_INFINITY {
                continue;
            }
            let mut s = dots[j] * a.scale;
            s += mv[j];
            let mold = m;
            let (mut ms, mut vs) = (1f32, 1f32);
            if s > m {
                m = s;
                ms = (mold - m).exp();
                if hp {
                    // SAFETY: `hp` is `has_fp16()`.
                    unsafe { scale_hp(vkq, ms) };
                } else {
                    scale_f16_f32(vkq, ms);
                }
            } else {
                vs = (s - m).exp();
            }
            let v = a.v_row(c + j, head);
            if hp {
                // SAFETY: as above.
                unsafe { mad_hp(vkq, v, vs) };
            } else {
                mad_f32(vkq, v, vs);
            }
            sum = sum.mul_add(ms, vs);
        }
        c += nb;
    }
    (m, sum)
}

/// The end of one_chunk's row: `VKQ32 = f32(VKQ16)`, times `S == 0 ? 0 : 1/S`, into `out`.
///
/// # Safety
/// None beyond NEON (as [`one_row`]).
pub(super) unsafe fn finish_row(buf: &RowBuf, sum: f32, out: &mut [f32]) {
    let inv = if sum == 0.0 { 0.0 } else { 1.0 / sum };
    for (o, x) in out.iter_mut().zip(buf.vkq32()) {
        *o = x;
    }
    scale_f32(out, inv);
}

/// Per-thread buffers of the tiled path (ggml's per-thread scratch: `Q_q`, `KQ`, `mask32`,
/// `VKQ32`, `V32`, `K_f32`), plus the tile's running maxima and sums.
pub(super) struct TileBuf {
    q: Vec<f32>,
    kq: Vec<f32>,
    mask: Vec<f32>,
    vkq: Vec<f32>,
    v32: Vec<f32>,
    kt: Vec<f32>,
    /// one K row widened, before its transposition into `kt`
    krow: Vec<f32>,
    m: [f32; Q_TILE],
    s: [f32; Q_TILE],
    skip: [bool; Q_TILE],
}

impl TileBuf {
    pub(super) fn new(a: &Attn) -> TileBuf {
        TileBuf {
            q: vec![0.0; Q_TILE * a.dk],
            kq: vec![0.0; Q_TILE * KV_TILE],
            mask: vec![0.0; Q_TILE * KV_TILE],
            vkq: vec![0.0; Q_TILE * a.dv],
            v32: vec![0.0; KV_TILE * a.dv],
            kt: vec![0.0; a.dk * KV_TILE],
            krow: vec![0.0; a.dk],
            m: [f32::NEG_INFINITY; Q_TILE],
            s: [0.0; Q_TILE],
            skip: [false; Q_TILE],
        }
    }
}

/// A row-major f32 matrix: its first element and row stride.
#[derive(Clone, Copy)]
struct Mat {
    p: *mut f32,
    ld: usize,
}

impl Mat {
    /// A matrix only read.
    fn of(s: &[f32], ld: usize) -> Mat {
        Mat { p: s.as_ptr() as *mut f32, ld }
    }

    /// A matrix written (C).
    fn of_mut(s: &mut [f32], ld: usize) -> Mat {
        Mat { p: s.as_mut_ptr(), ld }
    }

    /// The block from row `i`, column `j`.
    ///
    /// # Safety
    /// (i, j) lies inside the matrix.
    unsafe fn at(self, i: usize, j: usize) -> Mat {
        // SAFETY: in bounds by the contract.
        Mat { p: unsafe { self.p.add(i * self.ld + j) }, ld: self.ld }
    }
}

/// `C[m x n] += A[m x k] * B[k x n]` as `simd_gemm` computes each element on NEON:
/// `c = vfmaq_f32(c, b[kk][j], a[i][kk])` for kk in order, from C's value. Blocked 4 rows x 16
/// columns (ggml's `GEMM_RM` x `GEMM_RN` vectors where it sees `__ARM_NEON__`, 2 x 2 elsewhere:
/// every element keeps its own chain, so the blocking changes no bit). `n` is a multiple of 4
/// (the tiled path needs `DV % 4 == 0`, and 64 keys).
///
/// # Safety
/// The three matrices hold the elements their dimensions and strides address; C is written
/// (made by [`Mat::of_mut`]), A and B only read.
unsafe fn gemm(c: Mat, a: Mat, b: Mat, m: usize, k: usize, n: usize) {
    debug_assert!(n.is_multiple_of(4));
    let mut i = 0;
    while i < m {
        let rows = if m - i >= 4 { 4 } else { 1 };
        let mut j = 0;
        while j < n {
            let cols = if n - j >= 16 { 16 } else { 4 };
            // SAFETY: rows i..i + rows < m, columns j..j + cols <= n, as the contract allows.
            unsafe {
                let (cb, ab, bb) = (c.at(i, j), a.at(i, 0), b.at(0, j));
                match (rows, cols) {
                    (4, 16) => ukernel::<4, 4>(cb, ab, bb, k),
                    (4, _) => ukernel::<4, 1>(cb, ab, bb, k),
                    (_, 16) => ukernel::<1, 4>(cb, ab, bb, k),
                    _ => ukernel::<1, 1>(cb, ab, bb, k),
                }
            }
            j += cols;
        }
        i += rows;
    }
}

/// `simd_gemm_ukernel<RM, RN>` (NEON: `RN` vectors of 4 columns).
///
/// # Safety
/// As [`gemm`], for an `RM x 4RN` block.
#[inline(always)]
unsafe fn ukernel<const RM: usize, const RN: usize>(c: Mat, a: Mat, b: Mat, k: usize) {
    // SAFETY (every access): inside the block the caller vouches for; NEON is the baseline.
    unsafe {
        let mut acc = [[vdupq_n_f32(0.0); RN]; RM];
        for i in 0..RM {
            for r in 0..RN {
                acc[i][r] = vld1q_f32(c.p.add(i * c.ld + 4 * r));
            }
        }
        for kk in 0..k {
            let mut bv = [vdupq_n_f32(0.0); RN];
            for r in 0..RN {
                bv[r] = vld1q_f32(b.p.add(kk * b.ld + 4 * r));
            }
            for i in 0..RM {
                let p = vdupq_n_f32(*a.p.add(i * a.ld + kk));
                for r in 0..RN {
                    acc[i][r] = vfmaq_f32(acc[i][r], bv[r], p);
                }
            }
        }
        for i in 0..RM {
            for r in 0..RN {
                vst1q_f32(c.p.add(i * c.ld + 4 * r), acc[i][r]);
            }
        }
    }
}

/// `ggml_vec_soft_max_f32` over one 64-key row (NEON): `y = expf(x - max)` through ggml's 4-lane
/// `ggml_v_expf`, each group of 4 summed with `vaddvq_f32` and added to an f64 total.
fn soft_max_row(row: &mut [f32], max: f32) -> f64 {
    debug_assert!(row.len().is_multiple_of(4), "KV_TILE is a multiple of 4");
    let mut sum = 0f64;
    for i in (0..row.len() / 4 * 4).step_by(4) {
        // SAFETY: i + 4 <= row.len(); NEON is the aarch64 baseline.
        unsafe {
            let p = row.as_mut_ptr().add(i);
            let val = v_expf(vsubq_f32(vld1q_f32(p), vdupq_n_f32(max)));
            vst1q_f32(p, val);
            sum += vaddvq_f32(val) as f64;
        }
    }
    sum
}

/// `ggml_vec_max_f32` of a row (order-free without NaNs, up to a zero's sign, which no later
/// `x - max` or comparison tells apart).
fn row_max(row: &[f32]) -> f32 {
    row.iter().fold(f32::NEG_INFINITY, |m, &v| if m > v { m } else { v })
}

/// Halves to f32 (exact), four at a time.
fn widen_row(src: &[u16], out: &mut [f32]) {
    let n = src.len().min(out.len());
    let full = n / 4 * 4;
    for d in (0..full).step_by(4) {
        // SAFETY: d + 4 <= n elements of both rows.
        unsafe { vst1q_f32(out.as_mut_ptr().add(d), widen4(vld1_u16(src.as_ptr().add(d)))) };
    }
    for d in full..n {
        out[d] = fp16_to_fp32(src[d]);
    }
}

/// `lm_ggml_compute_forward_flash_attn_ext_tiled` for one tile: `rows` query rows from flat
/// row `ir` (one head), every key in tiles of 64.
///
/// # Safety
/// None beyond NEON (as [`one_row`]).
pub(super) unsafe fn tile(a: &Attn, ir: usize, rows: usize, t: &mut TileBuf) {
    let (i1, i2, i3) = a.row_index(ir);
    let head = (i2, i3);
    let (dk, dv) = (a.dk, a.dv);
    t.m = [f32::NEG_INFINITY; Q_TILE];
    t.s = [0.0; Q_TILE];
    t.vkq.fill(0.0);
    for tq in 0..rows {
        t.q[tq * dk..(tq + 1) * dk].copy_from_slice(a.q_row((i1 + tq, i2, i3)));
    }
    // ggml clears K_f32 and V32 once per query tile: the last key tile's unused V rows keep the
    // previous tile's values (times probabilities of 0), as here
    t.kt.fill(0.0);
    t.v32.fill(0.0);
    let krow = &mut t.krow;
    let mut ic = 0;
    while ic < a.nkv {
        let kv = KV_TILE.min(a.nkv - ic);
        if a.mask.is_some() {
            let mut can_skip = true;
            for tq in 0..rows {
                let mp = a.mask_row((i1 + tq, i2, i3)).expect("mask present");
                let mrow = &mut t.mask[tq * KV_TILE..(tq + 1) * KV_TILE];
                for tk in 0..kv {
                    // slope * mask with slope 1 (no ALiBi): the mask value itself
                    mrow[tk] = fp16_to_fp32(mp[ic + tk]);
                    can_skip &= mrow[tk] == f32::NEG_INFINITY;
                }
                mrow[kv..].fill(f32::NEG_INFINITY);
            }
            if can_skip {
                ic += KV_TILE;
                continue;
            }
        }
        // K tile transposed: kt[d][tk]
        for tk in 0..kv {
            widen_row(a.k_row(ic + tk, head), krow);
            for (d, &x) in krow.iter().enumerate() {
                t.kt[d * KV_TILE + tk] = x;
            }
        }
        let kq = &mut t.kq[..rows * KV_TILE];
        kq.fill(0.0);
        // SAFETY: kq is rows x 64 (held mutably here), q rows x dk, kt dk x 64.
        unsafe { gemm(Mat::of_mut(kq, KV_TILE), Mat::of(&t.q, dk), Mat::of(&t.kt, KV_TILE), rows, dk, KV_TILE) };
        scale_f32(kq, a.scale);
        if kv < KV_TILE {
            for tq in 0..rows {
                kq[tq * KV_TILE + kv..(tq + 1) * KV_TILE].fill(f32::NEG_INFINITY);
            }
        }
        if a.mask.is_some() {
            // ggml_vec_add_f32 (scalar on NEON)
            for (x, &mv) in kq.iter_mut().zip(&t.mask[..rows * KV_TILE]) {
                *x += mv;
            }
        }
        for tq in 0..rows {
            let row = &mut kq[tq * KV_TILE..(tq + 1) * KV_TILE];
            let tile_max = row_max(row);
            t.skip[tq] = tile_max == f32::NEG_INFINITY;
            if t.skip[tq] {
                continue;
            }
            let mold = t.m[tq];
            let mnew = mold.max(tile_max);
            if mnew > mold {
                let ms = (mold - mnew).exp();
                scale_f32(&mut t.vkq[tq * dv..(tq + 1) * dv], ms);
                t.s[tq] *= ms;
            }
            t.m[tq] = mnew;
            // `S += ggml_vec_soft_max_f32(...)`: a float plus a double, rounded back to float
            t.s[tq] = (t.s[tq] as f64 + soft_max_row(row, mnew)) as f32;
        }
        for tk in 0..kv {
            widen_row(a.v_row(ic + tk, head), &mut t.v32[tk * dv..(tk + 1) * dv]);
        }
        for tq in 0..rows {
            if t.skip[tq] {
                kq[tq * KV_TILE..(tq + 1) * KV_TILE].fill(0.0);
            }
        }
        // SAFETY: vkq is rows x dv (held mutably: t is &mut), kq rows x 64, v32 64 x dv.
        unsafe { gemm(Mat::of_mut(&mut t.vkq, dv), Mat::of(kq, KV_TILE), Mat::of(&t.v32, dv), rows, KV_TILE, dv) };
        ic += KV_TILE;
    }
    for tq in 0..rows {
        let s = t.s[tq];
        let inv = if s == 0.0 { 0.0 } else { 1.0 / s };
        let row = &mut t.vkq[tq * dv..(tq + 1) * dv];
        scale_f32(row, inv);
        a.dst_row((i1 + tq, i2, i3)).copy_from_slice(row);
    }
}

#[cfg(test)]
pub(super) mod model {
    //! Scalar models of ggml's NEON helpers (the orders above, written element by element), for
    //! bit-for-bit checks of the vector code.
    use crate::quant::f16::{fp16_to_fp32, fp32_to_fp16};

    /// `ggml_vec_dot_f16`: `lanes` lanes per accumulator (8 with FP16 arithmetic, 4 without), four
    /// accumulators, `add` rounding each sum as the accumulators' type does.
    pub(crate) fn dot(k: &[u16], q: &[u16], hp: bool) -> f32 {
        let n = q.len();
        let lanes = if hp { 8 } else { 4 };
        let step = 4 * lanes;
        let np = n / step * step;
        // half FMA: the exact product (22 bits) plus the accumulator, one rounding to half. The
        // f64 sum is exact whenever it lies near a half's rounding boundary (the terms are then
        // within ~12 binades of each other); far from one, its own rounding cannot matter.
        let fma = |acc: f32, x: f32, y: f32| -> f32 {
            if hp {
                fp16_to_fp32(f64_to_f16(acc as f64 + (x as f64) * (y as f64)))
            } else {
                x.mul_add(y, acc)
            }
        };
        // the accumulators' adds (`vaddq_f16` rounds to half; f64 holds the exact sum)
        let add = |a: f32, b: f32| if hp { fp16_to_fp32(f64_to_f16(a as f64 + b as f64)) } else { a + b };
        let mut acc = [[0f32; 8]; 4];
        for i in (0..np).step_by(step) {
            for j in 0..4 {
                for l in 0..lanes {
                    let e = i + j * lanes + l;
                    acc[j][l] = fma(acc[j][l], fp16_to_fp32(k[e]), fp16_to_fp32(q[e]));
                }
            }
        }
        let r: Vec<f32> = (0..lanes).map(|l| add(add(acc[0][l], acc[2][l]), add(acc[1][l], acc[3][l]))).collect();
        let v4: Vec<f32> = if hp { (0..4).map(|l| r[l] + r[l + 4]).collect() } else { r };
        let mut sum = ((v4[0] + v4[1]) + (v4[2] + v4[3])) as f64;
        for e in np..n {
            sum += (fp16_to_fp32(k[e]) * fp16_to_fp32(q[e])) as f64;
        }
        sum as f32
    }

    /// Nearest half (ties to even) of a double (finite, in the halves' range).
    pub(crate) fn f64_to_f16(v: f64) -> u16 {
        let h = fp32_to_fp16(v as f32);
        // v as f32 can land on a half tie that v itself is not on: a strictly nearer neighbour
        // (bit patterns +-1; the wraps past +-0 and the largest halves give NaN / inf, skipped)
        let mut best = h;
        for c in [h.wrapping_sub(1), h.wrapping_add(1)] {
            if c & 0x7C00 == 0x7C00 {
                continue;
            }
            if (fp16_to_fp32(c) as f64 - v).abs() < (fp16_to_fp32(best) as f64 - v).abs() {
                best = c;
            }
        }
        best
    }

    /// `ggml_vec_mad_f16`: the vector part in half with `v` rounded (FP16 arithmetic) or in f32.
    pub(crate) fn mad(y: &mut [u16], x: &[u16], v: f32, hp: bool) {
        let np = if hp { y.len() & !31 } else { 0 };
        let vh = fp16_to_fp32(fp32_to_fp16(v));
        for i in 0..y.len() {
            let (xf, yf) = (fp16_to_fp32(x[i]), fp16_to_fp32(y[i]));
            y[i] = if i < np { f64_to_f16(yf as f64 + xf as f64 * vh as f64) } else { fp32_to_fp16(xf.mul_add(v, yf)) };
        }
    }

    /// `ggml_vec_scale_f16`.
    pub(crate) fn scale(y: &mut [u16], v: f32, hp: bool) {
        let np = if hp { y.len() & !31 } else { 0 };
        let vh = fp16_to_fp32(fp32_to_fp16(v));
        for i in 0..y.len() {
            let yf = fp16_to_fp32(y[i]);
            y[i] = fp32_to_fp16(if i < np { yf * vh } else { yf * v });
        }
    }
}

#[cfg(test)]
pub(super) mod helpers {
    //! The private helpers, for tests.
    pub(crate) fn dot(hp: bool, k: &[u16], q: &[u16]) -> f32 {
        super::dot::<1>(hp, [k], q)[0]
    }
    pub(crate) fn mad(hp: bool, y: &mut [u16], x: &[u16], v: f32) {
        if hp {
            assert!(crate::cpu_features::has_fp16());
            // SAFETY: FEAT_FP16 asserted.
            unsafe { super::mad_hp(y, x, v) }
        } else {
            super::mad_f32(y, x, v)
        }
    }
    pub(crate) fn scale(hp: bool, y: &mut [u16], v: f32) {
        if hp {
            assert!(crate::cpu_features::has_fp16());
            // SAFETY: FEAT_FP16 asserted.
            unsafe { super::scale_hp(y, v) }
        } else {
            super::scale_f16_f32(y, v)
        }
    }
}
