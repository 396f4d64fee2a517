//! Tiles of the 32-value block formats' products (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 weights against
//! Q8_0 / Q8_1 activations) computed in ggml-cpu's NEON float order (aarch64): the formats as
//! ggml's `vec_dot` sees them ([`NeonTile`]), a weight row as a tile reads it ([`WeightRow`]),
//! and the tile kernel ([`quant_tile`]). (The unpacked weight rows of batched products are in
//! `panel`, the F16 / F32 tiles in `float`, the integer lane sums they share in `lanes`.)
//!
//! Same idea as the AVX2 `quant::tile`: ggml-cpu computes every MUL_MAT output as one `vec_dot`
//! with a fixed accumulation order, the models re-quantize activations before the next product
//! (so one ulp can flip a quantization step), and we keep ggml's arithmetic for every output
//! while computing an `R x C` tile of outputs together for speed.
//!
//! What ggml-cpu's NEON `vec_dot_q4_0_q8_0` / `q4_1_q8_1` / `q8_0_q8_0` do per output, and what
//! is reproduced here operation for operation:
//! - blocks are taken in pairs; the pair's first block feeds accumulator `sumv0`, the second
//!   `sumv1` (4 lanes each). Lane `i` of a block holds the exact integer sum of the products of
//!   bytes `4i..4i+4` and `16+4i..16+4i+4` (what `sdot` groups), converted to float and added as
//!   `sumv += float(lane) * (dw * da)`;
//! - Q4_1 adds `summs += mw0 * s0 + mw1 * s1` per pair (scalar);
//! - the result is `vaddvq(sumv0) + vaddvq(sumv1) (+ summs)`, then an odd last block is added by
//!   ggml's scalar tail (`sumf += sumi*dw*da` etc., contracted to one FMA as clang does).
//!
//! Deliberate choices, i.e. which ggml-cpu build this is bit-identical to:
//! - **Lane grouping of the dot product build** (`-march=...+dotprod`, llama.rn's `*_dotprod`
//!   libraries). ggml built without dotprod emulates `vdotq_s32` with `vmull_s8` + `vpaddlq_s16`,
//!   which groups bytes `{2i, 2i+1, 8+2i, 8+2i+1}` into lane `i`; the integer totals are the same
//!   but the per-lane floats differ, so against such a build (llama.rn's `rnllama_v8` /
//!   `v8_2_fp16`, whisper.rn's `armv8.2-a+fp16` library) results are only close (last-bit
//!   differences in the float sum). We use the dotprod grouping on every CPU: `sdot` where the
//!   CPU has it, widening multiplies + pairwise adds with the same grouping elsewhere, so results
//!   never depend on the phone.
//! - **`vmlaq_n_f32` fused** ([`FUSED_MLA`](super::lanes::FUSED_MLA)): clang's `arm_neon.h` defines it as `a + b * c`,
//!   which the NDK's clang contracts into `fmla` under its default `-ffp-contract=on` (GCC in GNU
//!   mode does too). Built with `-ffp-contract=off` ggml would round the product separately;
//!   flip the constant to match such a build.
//! - Not covered: the i8mm builds' `nrc == 2` path (`vmmlaq_s32`, one accumulator, used when
//!   ggml multiplies two rows at once), SVE builds. Against those the results are only close.
//!   (ggml's aarch64 weight repacking has kernels of its own: Q4_0's 4x4 / 4x8 layouts in
//!   `ops::mul_mat::repacked::arm`.)
//!
//! Checked against ggml-cpu itself (scripts/test-aarch64-c.sh: llama.rn's and whisper.rn's
//! ggml-cpu compiled by clang 14 for `armv8.2-a+fp16+dotprod`, run under qemu): every MUL_MAT,
//! SILU and SOFT_MAX case of tests_c/simd_ops.c is bit-identical. Measured against other builds
//! (NMSE per output tensor): `armv8-a` (no dotprod, no fp16) quantized products <= 8e-14;
//! `armv8.4-a+dotprod+i8mm` Q4_0/Q8_0 with even batches <= 3e-14, while that build's own Q4_1
//! i8mm kernel is wrong (NMSE 1: it multiplies by the activation scale's raw half bits,
//! `..._FP16_TO_FP32(b_x0->d)*b_y0->d` in ggml-cpu-quants.c), so there we deliberately differ;
//! `armv8.4-a+fp16+dotprod+sve` (SVE paths, 128- and 256-bit vectors) Q4_0/Q8_0 <= 2.1e-14.

// Register tiles index several arrays (accumulators, prepared rows, scales) with the same row
// and column numbers; iterator chains over them would hide which output each FMA feeds.
#![allow(clippy::needless_range_loop)]

use super::super::acts::{ActRows, MinSumsRow};
use super::lanes::{block_ints, load_i8x32, load_u8x16, mla};
use crate::quant::f16::fp16_to_fp32;
use crate::quant::{BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ5_1, BlockQ8_0, BlockQ8_1, Format, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0};
use std::arch::aarch64::*;

/// A block format ([`Format`]: the block and its activation partner) as ggml-cpu's NEON
/// `vec_dot` sees it.
pub trait NeonTile: Format {
    /// Q4_1 adds `m * s` per block (weight minimum times the activation block's sum).
    const HAS_MIN: bool;
    /// Q5_1: ggml keeps the `m * s` sums in two scalar accumulators, `summs0 += m0 * s0` for the
    /// pairs' first blocks and `summs1 += m1 * s1` for their second (each product fused), and
    /// ends with `vaddvq(sumv0) + vaddvq(sumv1) + summs0 + summs1`; Q4_1 adds
    /// `m0 * s0 + m1 * s1` to one sum per pair.
    const SPLIT_MIN: bool = false;
    /// The weight block as 32 signed bytes (elements 0..16, 16..32).
    fn quants(w: &Self::W) -> [int8x16_t; 2];
    /// The weight block's scale.
    fn scale(w: &Self::W) -> f32;
    /// The weight block's quants and scale.
    #[inline(always)]
    fn prep(w: &Self::W) -> ([int8x16_t; 2], f32) {
        (Self::quants(w), Self::scale(w))
    }
    /// The weight block's minimum (Q4_1 only).
    fn min(_w: &Self::W) -> f32 {
        0.0
    }
    /// The activation block's 32 quants.
    fn acts(a: &Self::A) -> [int8x16_t; 2];
    /// ggml's scalar loop for an odd last block, as clang contracts it.
    fn tail(sumf: f32, sumi: i32, dw: f32, da: f32, mw: f32, sa: f32) -> f32;
}

impl NeonTile for Q4_0 {
    const HAS_MIN: bool = false;
    #[inline(always)]
    fn quants(w: &BlockQ4_0) -> [int8x16_t; 2] {
        let raw = load_u8x16(&w.qs);
        // SAFETY: NEON intrinsics (aarch64 baseline).
        let (lo, hi) = unsafe {
            let eight = vdupq_n_s8(8);
            let lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(0x0F))), eight);
            (lo, vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8::<4>(raw)), eight))
        };
        [lo, hi]
    }
    #[inline(always)]
    fn scale(w: &BlockQ4_0) -> f32 {
        fp16_to_fp32(w.d)
    }
    #[inline(always)]
    fn acts(a: &BlockQ8_0) -> [int8x16_t; 2] {
        load_i8x32(&a.qs)
    }
    #[inline(always)]
    fn tail(sumf: f32, sumi: i32, dw: f32, da: f32, _mw: f32, _sa: f32) -> f32 {
        // sumf += sumi*dw*da
        (sumi as f32 * dw).mul_add(da, sumf)
    }
}

impl NeonTile for Q8_0 {
    const HAS_MIN: bool = false;
    #[inline(always)]
    fn quants(w: &BlockQ8_0) -> [int8x16_t; 2] {
        load_i8x32(&w.qs)
    }
    #[inline(always)]
    fn scale(w: &BlockQ8_0) -> f32 {
        fp16_to_fp32(w.d)
    }
    #[inline(always)]
    fn acts(a: &BlockQ8_0) -> [int8x16_t; 2] {
        load_i8x32(&a.qs)
    }
    #[inline(always)]
    fn tail(sumf: f32, sumi: i32, dw: f32, da: f32, _mw: f32, _sa: f32) -> f32 {
        // sumf += sumi*(dw*da)
        (sumi as f32).mul_add(dw * da, sumf)
    }
}

impl NeonTile for Q5_0 {
    const HAS_MIN: bool = false;
    #[inline(always)]
    fn quants(w: &BlockQ5_0) -> [int8x16_t; 2] {
        // SAFETY: NEON intrinsics (aarch64 baseline).
        quants5(&w.qs, &w.qh).map(|q| unsafe { vsubq_s8(q, vdupq_n_s8(16)) })
    }
    #[inline(always)]
    fn scale(w: &BlockQ5_0) -> f32 {
        fp16_to_fp32(w.d)
    }
    #[inline(always)]
    fn acts(a: &BlockQ8_0) -> [int8x16_t; 2] {
        load_i8x32(&a.qs)
    }
    #[inline(always)]
    fn tail(sumf: f32, sumi: i32, dw: f32, da: f32, _mw: f32, _sa: f32) -> f32 {
        // sumf += (dw*da) * sumi
        (dw * da).mul_add(sumi as f32, sumf)
    }
}

impl NeonTile for Q4_1 {
    const HAS_MIN: bool = true;
    #[inline(always)]
    fn quants(w: &BlockQ4_1) -> [int8x16_t; 2] {
        let raw = load_u8x16(&w.qs);
        // SAFETY: NEON intrinsics (aarch64 baseline).
        let (lo, hi) = unsafe { (vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(0x0F))), vreinterpretq_s8_u8(vshrq_n_u8::<4>(raw))) };
        [lo, hi]
    }
    #[inline(always)]
    fn scale(w: &BlockQ4_1) -> f32 {
        fp16_to_fp32(w.d)
    }
    #[inline(always)]
    fn min(w: &BlockQ4_1) -> f32 {
        fp16_to_fp32(w.m)
    }
    #[inline(always)]
    fn acts(a: &BlockQ8_1) -> [int8x16_t; 2] {
        load_i8x32(&a.qs)
    }
    #[inline(always)]
    fn tail(sumf: f32, sumi: i32, dw: f32, da: f32, mw: f32, sa: f32) -> f32 {
        // sumf += (dw*da)*sumi + mw*sa: clang fuses the first product into the addition
        sumf + (dw * da).mul_add(sumi as f32, mw * sa)
    }
}

impl NeonTile for Q5_1 {
    const HAS_MIN: bool = true;
    const SPLIT_MIN: bool = true;
    #[inline(always)]
    fn quants(w: &BlockQ5_1) -> [int8x16_t; 2] {
        quants5(&w.qs, &w.qh)
    }
    #[inline(always)]
    fn scale(w: &BlockQ5_1) -> f32 {
        fp16_to_fp32(w.d)
    }
    #[inline(always)]
    fn min(w: &BlockQ5_1) -> f32 {
        fp16_to_fp32(w.m)
    }
    #[inline(always)]
    fn acts(a: &BlockQ8_1) -> [int8x16_t; 2] {
        load_i8x32(&a.qs)
    }
    #[inline(always)]
    fn tail(sumf: f32, sumi: i32, dw: f32, da: f32, mw: f32, sa: f32) -> f32 {
        // as Q4_1's: sumf += (dw*da)*sumi + mw*sa
        sumf + (dw * da).mul_add(sumi as f32, mw * sa)
    }
}

/// A Q5 block's 5-bit quants (0..=31) as bytes: elements 0..16, 16..32.
#[inline(always)]
fn quants5(qs: &[u8; 16], qh: &[u8; 4]) -> [int8x16_t; 2] {
    let [lo, hi] = fifth_bits(qh);
    let raw = load_u8x16(qs);
    // SAFETY: NEON intrinsics (aarch64 baseline).
    unsafe { [vreinterpretq_s8_u8(vorrq_u8(vandq_u8(raw, vdupq_n_u8(0x0F)), lo)), vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8::<4>(raw), hi))] }
}

/// A Q5 block's fifth bits as 16 in the bytes whose bit is set: elements 0..16, 16..32.
#[inline(always)]
fn fifth_bits(qh: &[u8; 4]) -> [uint8x16_t; 2] {
    const LO: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];
    const HI: [u8; 16] = [2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3];
    const BIT: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128];
    // SAFETY: NEON intrinsics (aarch64 baseline); the tables are 16 readable bytes each.
    unsafe {
        // byte j of a half takes bit j of its 16 fifth bits: qh byte j / 8, bit j % 8
        let word = vreinterpretq_u8_u32(vdupq_n_u32(u32::from_le_bytes(*qh)));
        let bit = vld1q_u8(BIT.as_ptr());
        let h = |idx: &[u8; 16]| vandq_u8(vtstq_u8(vqtbl1q_u8(word, vld1q_u8(idx.as_ptr())), bit), vdupq_n_u8(0x10));
        [h(&LO), h(&HI)]
    }
}

/// One weight row as a tile kernel reads it: blocks in place ([`NeonTile::prep`] per block and
/// tile), or unpacked once into a [`Panel`] for batched products.
pub(crate) trait WeightRow<F: NeonTile>: Copy {
    /// Blocks in the row.
    fn blocks(&self) -> usize;
    /// Block `b`'s quants and scale.
    ///
    /// # Safety
    /// `b < self.blocks()`.
    unsafe fn prep_at(&self, b: usize) -> ([int8x16_t; 2], f32);
    /// Block `b`'s minimum (Q4_1).
    ///
    /// # Safety
    /// `b < self.blocks()`.
    unsafe fn min_at(&self, b: usize) -> f32;
    /// Whether [`Self::min_sums`] holds the Q4_1 sums (a panel's rows): the tile then has no
    /// summing code at all (a run-time choice in the pair loop cost more instructions than it
    /// saved).
    const MIN_SUMS: bool = false;
    /// Q4_1: the row's `m * s` sums of the block pairs, computed before the tiles
    /// ([`Panel::with_min_sums`]); only read when [`Self::MIN_SUMS`].
    fn min_sums(&self) -> Option<MinSumsRow<'_>> {
        None
    }
}

impl<F: NeonTile> WeightRow<F> for &[F::W] {
    #[inline(always)]
    fn blocks(&self) -> usize {
        self.len()
    }
    #[inline(always)]
    unsafe fn prep_at(&self, b: usize) -> ([int8x16_t; 2], f32) {
        // SAFETY: b < len by the contract.
        F::prep(unsafe { self.get_unchecked(b) })
    }
    #[inline(always)]
    unsafe fn min_at(&self, b: usize) -> f32 {
        // SAFETY: b < len by the contract.
        F::min(unsafe { self.get_unchecked(b) })
    }
}

/// Outputs `(r, c)` of weight rows `w[r]` with activation rows `c0 + c`, each in ggml-cpu's NEON
/// `vec_dot` order (module docs). `DOT` picks `sdot` for the integer sums (same values).
///
/// # Safety
/// With `DOT`, the CPU must have the dot product extension. (Shapes are checked.)
#[inline(always)]
pub(crate) unsafe fn quant_tile<F: NeonTile, const DOT: bool, const R: usize, const C: usize, W: WeightRow<F>>(
    w: [W; R],
    a: &ActRows<'_, F::A>,
    c0: usize,
) -> [[f32; C]; R] {
    let nb = a.nb;
    assert!(c0 + C <= a.n && w.iter().all(|r| r.blocks() >= nb));
    assert!(a.blocks.len() >= a.n * nb && a.d.len() >= a.n * nb && (!F::HAS_MIN || a.s.len() >= a.n * nb));
    // [r][c] of the pair's first and second blocks
    let mut acc0 = [[vdupq_n_f32(0.0); C]; R];
    let mut acc1 = acc0;
    let mut summs = [[0f32; C]; R];
    // Q5_1's sums of the pairs' second blocks
    let mut summs1 = [[0f32; C]; R];
    // Q4_1 sums of the block pairs already computed for every row (a panel's), or summed below
    if F::HAS_MIN && W::MIN_SUMS {
        for r in 0..R {
            summs[r] = w[r].min_sums().expect("MIN_SUMS rows carry their sums").cols::<C>(c0);
        }
    }
    let pairs_end = nb & !1;
    let mut b = 0;
    // Per-element bounds checks in this loop were a large part of its instructions (one per
    // block index, scale and sum): the asserts above cover every index, so the loop reads
    // unchecked, and each block's scales and sums of the tile's columns as one fixed-size array.
    let cols = |v: &[f32], bb: usize| -> [f32; C] {
        let row = &v[bb * a.n + c0..][..C];
        std::array::from_fn(|c| row[c])
    };
    // One block of the pair into its accumulators. Written out twice below rather than looped over
    // the pair: the phone build's fat LTO re-optimizes this crate's bitcode as it was before
    // unrolling, and left a two-trip loop with the accumulators in memory (q4_1 products counted
    // 12-16 % more NEON instructions; docs/size.md).
    macro_rules! block_of_pair {
        ($bb:expr, $acc:ident) => {{
            let bb = $bb;
            // SAFETY: (c0 + c) * nb + bb < a.n * nb <= a.blocks.len(): c0 + C <= a.n and bb < nb
            // (asserted above).
            let qa: [[int8x16_t; 2]; C] = std::array::from_fn(|c| F::acts(unsafe { a.blocks.get_unchecked((c0 + c) * nb + bb) }));
            let da = cols(a.d, bb);
            for r in 0..R {
                // SAFETY: bb < nb <= w[r].blocks() (asserted above).
                let (p, dw) = unsafe { w[r].prep_at(bb) };
                for c in 0..C {
                    // SAFETY: DOT only when the caller guarantees dotprod.
                    let q = vcvtq_f32_s32(unsafe { block_ints::<DOT>(&p, &qa[c]) });
                    $acc[r][c] = mla($acc[r][c], q, dw * da[c]);
                }
            }
        }};
    }
    while b < pairs_end {
        block_of_pair!(b, acc0);
        block_of_pair!(b + 1, acc1);
        if F::HAS_MIN && !W::MIN_SUMS {
            let (sa0, sa1) = (cols(a.s, b), cols(a.s, b + 1));
            for r in 0..R {
                // SAFETY: b + 1 < nb <= w[r].blocks() (asserted above).
                let (m0, m1) = unsafe { (w[r].min_at(b), w[r].min_at(b + 1)) };
                for c in 0..C {
                    let (s0, s1) = (sa0[c], sa1[c]);
                    if F::SPLIT_MIN {
                        summs[r][c] = m0.mul_add(s0, summs[r][c]);
                        summs1[r][c] = m1.mul_add(s1, summs1[r][c]);
                    } else {
                        // summs += m0*s0 + m1*s1, the first product fused into the inner sum
                        summs[r][c] += m0.mul_add(s0, m1 * s1);
                    }
                }
            }
        }
        b += 2;
    }
    let mut out = [[0f32; C]; R];
    for r in 0..R {
        for c in 0..C {
            let mut sumf = vaddvq_f32(acc0[r][c]) + vaddvq_f32(acc1[r][c]);
            if F::HAS_MIN {
                sumf += summs[r][c];
            }
            if F::SPLIT_MIN {
                sumf += summs1[r][c];
            }
            out[r][c] = sumf;
        }
    }
    if nb % 2 == 1 {
        let bb = nb - 1;
        for r in 0..R {
            // SAFETY: bb < nb <= w[r].blocks() (asserted above).
            let ((p, dw), mw) = unsafe { (w[r].prep_at(bb), w[r].min_at(bb)) };
            for c in 0..C {
                // SAFETY: as above.
                let sumi = vaddvq_s32(unsafe { block_ints::<DOT>(&p, &F::acts(&a.blocks[(c0 + c) * nb + bb])) });
                let k = bb * a.n + c0 + c;
                let sa = if F::HAS_MIN { a.s[k] } else { 0.0 };
                out[r][c] = F::tail(out[r][c], sumi, dw, a.d[k], mw, sa);
            }
        }
    }
    out
}

/// ggml's `vec_dot` for one quantized row pair (`R = C = 1`), `sdot` when the CPU has it.
pub(crate) fn quant_dot<F: NeonTile>(w: &[F::W], a: &[F::A], d: &[f32], s: &[f32]) -> f32 {
    let rows = ActRows { blocks: a, d, s, nb: a.len(), n: 1 };
    if crate::cpu_features::has_dotprod() {
        // SAFETY: dotprod was detected at runtime.
        unsafe { quant_dot_sdot::<F>(w, &rows) }
    } else {
        // SAFETY: DOT = false needs no extension.
        #[cfg(feature = "neon-nodot")]
        return unsafe { quant_tile::<F, false, 1, 1, _>([w], &rows, 0)[0][0] };
        #[cfg(not(feature = "neon-nodot"))]
        unreachable!("integer products without sdot are declined (cpu_features::integer_products)");
    }
}

/// # Safety
/// The CPU must have the dot product extension.
#[target_feature(enable = "dotprod")]
unsafe fn quant_dot_sdot<F: NeonTile>(w: &[F::W], rows: &ActRows<'_, F::A>) -> f32 {
    // SAFETY: this function requires dotprod.
    unsafe { quant_tile::<F, true, 1, 1, _>([w], rows, 0)[0][0] }
}
