//! Tiles of matrix-product outputs computed in exactly ggml-cpu's AVX2 float order.
//!
//! ggml-cpu computes every MUL_MAT output as one `vec_dot` of a weight row with the activation
//! row converted to the weight type's partner format (Q8_0, Q8_1 or F16), and each `vec_dot` has
//! a fixed accumulation order: one 8-lane accumulator fed block by block for the quantized
//! types, four interleaved accumulators and a particular horizontal sum for F16/F32. The models
//! quantize activations again before the next product, so a one-ulp difference flips a
//! quantization step and grows through the layers. To give stock's answers we therefore keep
//! ggml's arithmetic for every single output and take the speed from the loop nest instead: an
//! `R x C` tile of outputs is computed together, each weight block unpacked once for `C`
//! activation rows and each activation block loaded once for `R` weight rows (a gemm's register
//! tiling around ggml's dot products). `R = C = 1` is ggml's `vec_dot` itself.
//!
//! Everything here needs AVX2, FMA and F16C; callers dispatch through `cpu_features`.

// Register tiles index several arrays (accumulators, prepared rows, scales) with the same row
// and column numbers; iterator chains over them would hide which output each FMA feeds.
#![allow(clippy::needless_range_loop)]

use crate::simd::quant::x86_util::*;
use crate::simd::quant::{BlockQ4_0, BlockQ4_1, BlockQ8_0, BlockQ8_1, Format, Q4_0, Q4_1, Q8_0};
use std::arch::x86_64::*;

/// A block format ([`Format`]: the block and its activation partner) as ggml-cpu's AVX2
/// `vec_dot` sees it.
///
/// # Safety
/// The methods use AVX2/FMA/F16C instructions: call them only from code running on a CPU that
/// has them (the tile kernels below are `#[target_feature]` functions entered after detection).
pub unsafe trait Avx2Tile: Format {
    /// A weight block unpacked once and reused for every activation column of a tile.
    type Prep: Copy;
    /// Q4_1 adds `m * s` per block (weight minimum times the activation block's sum).
    const HAS_MIN: bool;
    /// The unpacked block, its scale and (Q4_1) its minimum, as f32.
    unsafe fn prep(w: &Self::W) -> (Self::Prep, f32, f32);
    /// The block's step and minimum as IEEE half bits, `d | m << 16` (m = 0 without a minimum).
    fn dm_bits(w: &Self::W) -> u32;
    /// The activation block's 32 quants.
    unsafe fn acts(a: &Self::A) -> __m256i;
    /// The block's integer dot product as 8 lanes of 4-product sums, converted to float. Integer
    /// sums are exact, so only the lane grouping (bytes 4i..4i+4 in lane i) must match ggml.
    unsafe fn ints(p: Self::Prep, a: __m256i) -> __m256;
}

/// The two formats with signed weights against Q8_0 activations. Prep is (|q|, q): ggml's
/// signed-times-signed trick moves the weight's sign onto the activation so the
/// unsigned-by-signed byte multiply applies.
macro_rules! signed_format {
    ($fmt:ident, $block:ident, |$w:ident| $quants:expr) => {
        // SAFETY: AVX2-only bodies, see the trait.
        unsafe impl Avx2Tile for $fmt {
            type Prep = (__m256i, __m256i);
            const HAS_MIN: bool = false;
            #[inline]
            #[target_feature(enable = "avx2,fma,f16c")]
            unsafe fn prep($w: &$block) -> (Self::Prep, f32, f32) {
                let q = $quants;
                ((_mm256_sign_epi8(q, q), q), half($w.d), 0.0)
            }
            #[inline]
            fn dm_bits(w: &$block) -> u32 {
                w.d as u32
            }
            #[inline]
            #[target_feature(enable = "avx2,fma,f16c")]
            unsafe fn acts(a: &BlockQ8_0) -> __m256i {
                load_i8x32(&a.qs)
            }
            #[inline]
            #[target_feature(enable = "avx2,fma,f16c")]
            unsafe fn ints(p: Self::Prep, a: __m256i) -> __m256 {
                mul_sum_us8_pairs_float(p.0, _mm256_sign_epi8(a, p.1))
            }
        }
    };
}
signed_format!(Q4_0, BlockQ4_0, |w| _mm256_sub_epi8(nibbles32(&w.qs), _mm256_set1_epi8(8)));
signed_format!(Q8_0, BlockQ8_0, |w| load_i8x32(&w.qs));

// SAFETY: AVX2-only bodies, see the trait.
unsafe impl Avx2Tile for Q4_1 {
    /// The nibbles are unsigned already.
    type Prep = __m256i;
    const HAS_MIN: bool = true;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn prep(w: &BlockQ4_1) -> (Self::Prep, f32, f32) {
        let dm = halves4(w.d, w.m, 0, 0);
        (nibbles32(&w.qs), _mm_cvtss_f32(dm), _mm_cvtss_f32(_mm_movehdup_ps(dm)))
    }
    #[inline]
    fn dm_bits(w: &BlockQ4_1) -> u32 {
        w.d as u32 | (w.m as u32) << 16
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn acts(a: &BlockQ8_1) -> __m256i {
        load_i8x32(&a.qs)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn ints(p: Self::Prep, a: __m256i) -> __m256 {
        let x = _mm256_maddubs_epi16(p, a);
        let s = _mm256_add_epi32(_mm256_srai_epi32::<16>(x), _mm256_srai_epi32::<16>(_mm256_slli_epi32::<16>(x)));
        _mm256_cvtepi32_ps(s)
    }
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn half(h: u16) -> f32 {
    _mm_cvtss_f32(halves4(h, 0, 0, 0))
}

pub(crate) use super::super::ActRows;

/// How far ahead of the block being multiplied a matrix-vector product prefetches its weights, in
/// bytes: decoding streams the weights from DRAM, and 24 blocks ahead (~0.5 KiB) left one core
/// latency-bound at ~5 GB/s where 4 KiB reaches ~8.5 (ignored test `bench_matvec`).
const PREFETCH_BYTES: usize = 4096;

/// Outputs `(r, c)` of rows `w[r]` with activation rows `c0 + c`: for every output, ggml's
/// `acc = fma(dw * da, ints, acc)` over the blocks in order, `summs = fma(m, s, summs)` for
/// Q4_1, then `hsum(acc) (+ summs)`.
///
/// # Safety
/// AVX2, FMA and F16C must be available. `w[r]` hold at least `a.nb` blocks; columns
/// `c0..c0 + C` exist in `a` (checked).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn quant_tile<F: Avx2Tile, const R: usize, const C: usize>(w: [&[F::W]; R], a: &ActRows<'_, F::A>, c0: usize) -> [[f32; C]; R] {
    const { assert!(C <= 4, "Q4_1's minimum sums are kept one column per __m128 lane") };
    let nb = a.nb;
    assert!(c0 + C <= a.n && w.iter().all(|r| r.len() >= nb));
    assert!(a.blocks.len() >= a.n * nb && a.d.len() >= a.n * nb && (!F::HAS_MIN || a.s.len() >= a.n * nb));
    const { assert!(R <= 2, "scales and minimum sums are kept in lanes 4r + c of one vector") };
    // Weight rows outer, activation columns inner, so a tile needs only its accumulators and the
    // unpacked weight blocks in registers (holding every column's quants too spilled the 2 x 4
    // tile's accumulators every block); activation quants are read by the multiply itself.
    // Every vector instruction counts on this path (the products are bound by the vector
    // pipes), so each block's R x C scales `dw * da` (the f32 products ggml rounds) come from
    // one vector multiply of [d0 x4 | d1 x4] by [da0..da3 | da0..da3], stored, and each output
    // broadcasts its own from memory (a load, not a shuffle); the Q4_1 minimum sums share one
    // vector the same way, lane 4r + c being output (r, c)'s running sum, fed as ggml feeds it.
    let mut acc = [[_mm256_setzero_ps(); C]; R];
    let mut summs = _mm256_setzero_ps();
    let pick_d = _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2);
    let pick_m = _mm256_setr_epi32(1, 1, 1, 1, 3, 3, 3, 3);
    let mut scales = [0f32; 8];
    // Four column values from `v` at `col` (columns c0..c0 + C of one block), zero-padded when
    // the tile is narrower than 4 so the load never runs past the array.
    // SAFETY (callers): col + C <= v.len() (asserted above, see the loop).
    let four = |v: &[f32], col: usize| -> __m128 {
        if C == 4 {
            unsafe { _mm_loadu_ps(v.as_ptr().add(col)) }
        } else {
            let mut x = [0f32; 4];
            x[..C].copy_from_slice(unsafe { v.get_unchecked(col..col + C) });
            unsafe { _mm_loadu_ps(x.as_ptr()) }
        }
    };
    for b in 0..nb {
        let col = b * a.n + c0;
        // SAFETY (for the Avx2Tile calls and unchecked reads in this loop): this function requires
        // AVX2/FMA/F16C; with b < nb and c0 + c < n (asserted), (c0 + c) * nb + b and
        // b * n + c0 + c are below n * nb <= the length of blocks, d and (Q4_1) s, and b is
        // below every w[r].len().
        let mut p = [unsafe { F::prep(w[0].get_unchecked(b)) }.0; R];
        for r in 1..R {
            p[r] = unsafe { F::prep(w[r].get_unchecked(b)) }.0;
        }
        if C == 1 {
            // One activation row: the weights stream from memory once and the loop waits on
            // them; fetch a few blocks ahead (prefetching never faults, even past the row).
            for r in 0..R {
                let ahead = (w[r].as_ptr() as *const i8).wrapping_add(b * std::mem::size_of::<F::W>() + PREFETCH_BYTES);
                _mm_prefetch::<_MM_HINT_T0>(ahead);
            }
        }
        let dm0 = F::dm_bits(unsafe { w[0].get_unchecked(b) });
        let dm1 = if R > 1 { F::dm_bits(unsafe { w[R - 1].get_unchecked(b) }) } else { dm0 };
        // [d0 m0 d1 m1]
        let dm = _mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi64_si128((dm0 as u64 | (dm1 as u64) << 32) as i64)));
        let da = four(a.d, col);
        let sc = _mm256_mul_ps(_mm256_permutevar8x32_ps(dm, pick_d), _mm256_set_m128(da, da));
        // SAFETY: scales holds 8 f32.
        unsafe { _mm256_storeu_ps(scales.as_mut_ptr(), sc) };
        if F::HAS_MIN {
            let s = four(a.s, col);
            summs = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(dm, pick_m), _mm256_set_m128(s, s), summs);
        }
        for c in 0..C {
            let qa = unsafe { F::acts(a.blocks.get_unchecked((c0 + c) * nb + b)) };
            for r in 0..R {
                let q = unsafe { F::ints(p[r], qa) };
                // SAFETY: 4r + c < 8 (R <= 2, C <= 4).
                let scale = unsafe { broadcast_from_memory(scales.as_ptr().add(4 * r + c)) };
                acc[r][c] = _mm256_fmadd_ps(scale, q, acc[r][c]);
            }
        }
    }
    let mut sm8 = [0f32; 8];
    // SAFETY: sm8 holds 8 f32.
    unsafe { _mm256_storeu_ps(sm8.as_mut_ptr(), summs) };
    let mut out = [[0f32; C]; R];
    for r in 0..R {
        for c in 0..C {
            out[r][c] = if F::HAS_MIN { hsum_ps(acc[r][c]) + sm8[4 * r + c] } else { hsum_ps(acc[r][c]) };
        }
    }
    out
}

/// Eight weight rows against one activation row (decoding's matrix-vector products): outputs
/// `r` of rows `w[r]`, each in the same ggml order as [`quant_tile`]. With one activation row
/// nothing is shared across columns, so the per-block work is shared across rows instead: the
/// eight scales `dw * da` are one vector multiply and the eight Q4_1 minimum sums one FMA, where
/// the two-row tile spent five vector instructions per row and block on them. The eight rows
/// of a matrix are adjacent in memory, so the streams stay one region for the prefetcher.
///
/// # Safety
/// AVX2, FMA and F16C must be available. `w[r]` hold at least `a.nb` blocks; `a` has a column
/// `c0` (checked).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn quant_rows8<F: Avx2Tile>(w: [&[F::W]; 8], a: &ActRows<'_, F::A>, c0: usize) -> [f32; 8] {
    let nb = a.nb;
    assert!(c0 < a.n && w.iter().all(|r| r.len() >= nb));
    assert!(a.blocks.len() >= a.n * nb && a.d.len() >= a.n * nb && (!F::HAS_MIN || a.s.len() >= a.n * nb));
    let mut acc = [_mm256_setzero_ps(); 8];
    let mut summs = _mm256_setzero_ps();
    let mut scales = [0f32; 8];
    for b in 0..nb {
        let col = b * a.n + c0;
        // SAFETY (unchecked reads in this loop): b < nb, below every w[r].len(); col and
        // c0 * nb + b are below n * nb <= the length of d, s (Q4_1) and blocks (asserted).
        let dm: [u32; 8] = std::array::from_fn(|r| F::dm_bits(unsafe { w[r].get_unchecked(b) }));
        for r in 0..8 {
            let ahead = (w[r].as_ptr() as *const i8).wrapping_add(b * std::mem::size_of::<F::W>() + PREFETCH_BYTES);
            _mm_prefetch::<_MM_HINT_T0>(ahead);
        }
        // SAFETY: dm is 8 readable u32 (32 bytes).
        let bits = unsafe { _mm256_loadu_si256(dm.as_ptr() as *const __m256i) };
        // [d0 m0 d1 m1 | d2 m2 d3 m3] and the same for rows 4..8
        let lo = _mm256_cvtph_ps(_mm256_castsi256_si128(bits));
        let hi = _mm256_cvtph_ps(_mm256_extracti128_si256::<1>(bits));
        // even lanes: [d0 d1 d4 d5 | d2 d3 d6 d7]; the 64-bit pairs reordered to d0..d7
        let d = _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(_mm256_shuffle_ps::<0b10_00_10_00>(lo, hi))));
        let da = _mm256_set1_ps(unsafe { *a.d.get_unchecked(col) });
        // SAFETY: scales holds 8 f32.
        unsafe { _mm256_storeu_ps(scales.as_mut_ptr(), _mm256_mul_ps(d, da)) };
        if F::HAS_MIN {
            let m = _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(_mm256_shuffle_ps::<0b11_01_11_01>(lo, hi))));
            summs = _mm256_fmadd_ps(m, _mm256_set1_ps(unsafe { *a.s.get_unchecked(col) }), summs);
        }
        // SAFETY: AVX2/FMA/F16C by this function's contract; indices as above; r < 8.
        let qa = unsafe { F::acts(a.blocks.get_unchecked(c0 * nb + b)) };
        for r in 0..8 {
            let p = unsafe { F::prep(w[r].get_unchecked(b)) }.0;
            let scale = unsafe { broadcast_from_memory(scales.as_ptr().add(r)) };
            acc[r] = _mm256_fmadd_ps(scale, unsafe { F::ints(p, qa) }, acc[r]);
        }
    }
    let mut sm = [0f32; 8];
    // SAFETY: sm holds 8 f32.
    unsafe { _mm256_storeu_ps(sm.as_mut_ptr(), summs) };
    std::array::from_fn(|r| if F::HAS_MIN { hsum_ps(acc[r]) + sm[r] } else { hsum_ps(acc[r]) })
}

/// `vbroadcastss` from memory, kept a load: written as an intrinsic after the store of the
/// scales, LLVM forwards the stored vector and broadcasts it with one or two shuffles, which
/// compete with the products for the vector pipes (a broadcast load uses only a load port).
///
/// # Safety
/// AVX must be available and `p` must point at a readable f32.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn broadcast_from_memory(p: *const f32) -> __m256 {
    let v: __m256;
    // SAFETY: reads the 4 bytes at p (readable by the contract), writes only the output
    // register; AVX by the contract.
    unsafe {
        std::arch::asm!("vbroadcastss {v}, dword ptr [{p}]", v = out(ymm_reg) v, p = in(reg) p,
                        options(pure, readonly, nostack, preserves_flags))
    };
    v
}

/// ggml's `vec_dot` for one quantized row pair (`R = C = 1`).
///
/// # Safety
/// AVX2, FMA and F16C must be available.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn quant_dot<F: Avx2Tile>(w: &[F::W], a: &[F::A], d: &[f32], s: &[f32]) -> f32 {
    let rows = ActRows { blocks: a, d, s, nb: a.len(), n: 1 };
    // SAFETY: same requirements as this function.
    unsafe { quant_tile::<F, 1, 1>([w], &rows, 0)[0][0] }
}
