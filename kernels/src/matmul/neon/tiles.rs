//! Tiles of matrix-product outputs computed in ggml-cpu's NEON float order (aarch64).
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
//! - **`vmlaq_n_f32` fused** ([`FUSED_MLA`]): clang's `arm_neon.h` defines it as `a + b * c`,
//!   which the NDK's clang contracts into `fmla` under its default `-ffp-contract=on` (GCC in GNU
//!   mode does too). Built with `-ffp-contract=off` ggml would round the product separately;
//!   flip the constant to match such a build.
//! - Not covered: the i8mm builds' `nrc == 2` path (`vmmlaq_s32`, one accumulator, used when
//!   ggml multiplies two rows at once), SVE builds. Against those the results are only close.
//!   (ggml's aarch64 weight repacking has kernels of its own: Q4_0's 4x4 / 4x8 layouts in
//!   `ops::mul_mat::repacked::arm`.)
//!
//! F16/F32 products follow `ggml_vec_dot_f16` / `ggml_vec_dot_f32`. Without FP16 vector
//! arithmetic ([`float_tile`]; F32 always): four 4-lane FMA accumulators over 16-element steps,
//! reduced as `vaddvq((acc0 + acc2) + (acc1 + acc3))`, leftovers in double (F16) or float
//! (F32: as clang compiles `sumf += x[i]*y[i]`, eight at a time rounded products added in order,
//! then FMAs; [`FloatElem::finish`] for f32). ggml built with `+fp16` (every llama.rn arm64 library but `rnllama_v8`, and
//! whisper.rn's) accumulates F16 products in *half precision* instead ([`f16_tile_hp`]); the
//! matrix product uses that wherever the CPU has FEAT_FP16, which is exactly when llama.rn /
//! whisper.rn load such a library. It is far less accurate (a lane's sum keeps 11 bits), but it
//! is stock's answer on those phones.
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

use super::super::acts::{ActRows, MinSums, MinSumsRow};
use crate::quant::f16::fp16_to_fp32;
use crate::quant::f16::neon::{hp, widen4};
use crate::quant::{BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ5_1, BlockQ8_0, BlockQ8_1, Format, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0};
use std::arch::aarch64::*;

/// Whether ggml's `vmlaq_n_f32` block accumulation is taken as fused (see the module docs).
pub(crate) const FUSED_MLA: bool = true;

/// 16 bytes as a vector.
#[inline(always)]
pub(crate) fn load_u8x16(b: &[u8; 16]) -> uint8x16_t {
    // SAFETY: `b` is 16 readable bytes; vld1q has no alignment requirement beyond the element.
    unsafe { vld1q_u8(b.as_ptr()) }
}

/// 32 signed bytes as two vectors (elements 0..16, 16..32).
#[inline(always)]
pub(crate) fn load_i8x32(b: &[i8; 32]) -> [int8x16_t; 2] {
    // SAFETY: `b` is 32 readable bytes, so both 16-byte loads are in bounds.
    unsafe { [vld1q_s8(b.as_ptr()), vld1q_s8(b.as_ptr().add(16))] }
}

/// `sdot`: lane `i` of the result is `acc[i] + sum(a[4i..4i+4] * b[4i..4i+4])`. Inline assembly
/// because Rust's `vdotq_s32` is not stable yet.
///
/// # Safety
/// The CPU must have the dot product extension ([`crate::cpu_features::has_dotprod`]).
#[inline]
#[target_feature(enable = "dotprod")]
pub(super) unsafe fn sdot(acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t {
    let mut r = acc;
    // SAFETY: reads and writes only the named vector registers; the caller guarantees the
    // instruction exists.
    unsafe {
        std::arch::asm!("sdot {r:v}.4s, {a:v}.16b, {b:v}.16b", r = inout(vreg) r, a = in(vreg) a, b = in(vreg) b,
            options(pure, nomem, nostack, preserves_flags));
    }
    r
}

/// The same lane sums as [`sdot`] from base NEON: 8 widening products per half, adjacent pairs
/// added, then adjacent pairs of those (bytes 4i..4i+4 end up in lane i). Exact: |a*b| <= 2^14.
#[inline(always)]
pub(super) fn dot4_base(a: int8x16_t, b: int8x16_t) -> int32x4_t {
    // SAFETY (this and every other NEON intrinsic call in this module): NEON is part of the
    // aarch64 baseline; the intrinsics are `unsafe` only for being `#[target_feature]` functions.
    unsafe {
        let lo = vmull_s8(vget_low_s8(a), vget_low_s8(b));
        let hi = vmull_high_s8(a, b);
        vpaddq_s32(vpaddlq_s16(lo), vpaddlq_s16(hi))
    }
}

/// One block's integer dot product in ggml's NEON lanes: lane `i` sums the products of elements
/// `4i..4i+4` and `16+4i..16+4i+4`.
///
/// # Safety
/// With `DOT`, the CPU must have the dot product extension.
#[inline(always)]
pub(super) unsafe fn block_ints<const DOT: bool>(w: &[int8x16_t; 2], a: &[int8x16_t; 2]) -> int32x4_t {
    if DOT {
        // SAFETY: the caller guarantees dotprod when DOT is set.
        unsafe { sdot(sdot(vdupq_n_s32(0), w[0], a[0]), w[1], a[1]) }
    } else {
        vaddq_s32(dot4_base(w[0], a[0]), dot4_base(w[1], a[1]))
    }
}

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

/// A chunk's weight blocks unpacked once (quants as signed bytes, scale and minimum as f32) for
/// batched products: the tile kernel then reads them instead of unpacking every block again for
/// each group of four activation rows.
pub(crate) struct Panel<F: NeonTile> {
    q: Vec<[int8x16_t; 2]>,
    /// `[d, m]` of every block.
    dm: Vec<[f32; 2]>,
    /// Q4_1: every output's `m * s` sum over the block pairs ([`Self::with_min_sums`]).
    summs: MinSums,
    nb: usize,
    _format: std::marker::PhantomData<F>,
}

impl<F: NeonTile> Panel<F> {
    /// Unpacks `rows` (each at least `nb` blocks long), row by row.
    pub(crate) fn new<'w>(rows: impl Iterator<Item = &'w [F::W]>, nb: usize) -> Self
    where
        F::W: 'w,
    {
        let (mut q, mut dm) = (Vec::new(), Vec::new());
        for row in rows {
            assert!(row.len() >= nb);
            for blk in &row[..nb] {
                let (p, d) = F::prep(blk);
                q.push(p);
                dm.push([d, F::min(blk)]);
            }
        }
        Panel { q, dm, summs: MinSums::default(), nb, _format: std::marker::PhantomData }
    }

    /// Q4_1: ggml's `summs += m0 * s0 + m1 * s1` (the first product fused) over the block pairs,
    /// for every row of the panel and every activation row in `acts`, four activation rows per
    /// vector, before the tiles run: in the tile it was three scalar operations per output and
    /// pair (7 % of the Q4_1 prompt products' instructions, counted). Each output's operations
    /// are the same, in the same order (an odd last block stays in the tile's tail, as in ggml).
    pub(crate) fn with_min_sums(mut self, a: &ActRows<'_, F::A>, acts: std::ops::Range<usize>) -> Self {
        // (Q5_1's two sums stay in the tile: its panel rows say MIN_SUMS = false)
        if !F::HAS_MIN || F::SPLIT_MIN {
            return self;
        }
        let (nb, n) = (self.nb, a.n);
        let rows = self.dm.len() / nb;
        assert!(nb == a.nb && acts.end <= n && a.s.len() >= n * nb);
        let mut sums = MinSums::new(rows, acts.clone());
        let dm = &self.dm;
        let pairs_end = nb & !1;
        let mut j = acts.start;
        while j + 4 <= acts.end {
            for r0 in (0..rows).step_by(8) {
                // rows past the last repeat it (computed, not stored)
                let at: [usize; 8] = std::array::from_fn(|r| (r0 + r).min(rows - 1) * nb);
                // SAFETY: NEON is baseline; (b + 1) * n + j + 4 <= nb * n <= s.len() (asserted);
                // at[r] + b + 1 < rows * nb = dm.len(); the stores are inside summs: r0 + r < rows
                // and j + 4 <= acts.end.
                unsafe {
                    let mut acc = [vdupq_n_f32(0.0); 8];
                    let mut b = 0;
                    while b < pairs_end {
                        let s0 = vld1q_f32(a.s.as_ptr().add(b * n + j));
                        let s1 = vld1q_f32(a.s.as_ptr().add((b + 1) * n + j));
                        for r in 0..8 {
                            let (m0, m1) = (dm.get_unchecked(at[r] + b)[1], dm.get_unchecked(at[r] + b + 1)[1]);
                            acc[r] = vaddq_f32(acc[r], vfmaq_n_f32(vmulq_n_f32(s1, m1), s0, m0));
                        }
                        b += 2;
                    }
                    for r in 0..8.min(rows - r0) {
                        let o = sums.at(r0 + r, j);
                        vst1q_f32(sums.values_mut()[o..o + 4].as_mut_ptr(), acc[r]);
                    }
                }
            }
            j += 4;
        }
        for jj in j..acts.end {
            for r in 0..rows {
                let mut sum = 0f32;
                let mut b = 0;
                while b < pairs_end {
                    let (m0, m1) = (dm[r * nb + b][1], dm[r * nb + b + 1][1]);
                    sum += m0.mul_add(a.s[b * n + jj], m1 * a.s[(b + 1) * n + jj]);
                    b += 2;
                }
                let o = sums.at(r, jj);
                sums.values_mut()[o] = sum;
            }
        }
        self.summs = sums;
        self
    }

    /// The same unpacked rows, walked as format `G`'s: for formats whose products are the
    /// same operations once unpacked (the caller's claim; the minimums' handling is checked
    /// here). A panel holds no format-specific data: quants as signed bytes, `[d, m]`, sums.
    pub(crate) fn as_format<G: NeonTile<A = F::A>>(self) -> Panel<G> {
        const { assert!(F::HAS_MIN == G::HAS_MIN && F::SPLIT_MIN == G::SPLIT_MIN) };
        Panel { q: self.q, dm: self.dm, summs: self.summs, nb: self.nb, _format: std::marker::PhantomData }
    }

    /// Panel row `r` (the `r`-th row given to [`Self::new`]).
    #[inline(always)]
    pub(crate) fn row(&self, r: usize) -> PanelRow<'_> {
        let at = r * self.nb..(r + 1) * self.nb;
        PanelRow { q: &self.q[at.clone()], dm: &self.dm[at], summs: self.summs.row(r) }
    }
}

/// One unpacked weight row of a [`Panel`].
#[derive(Clone, Copy)]
pub(crate) struct PanelRow<'p> {
    q: &'p [[int8x16_t; 2]],
    dm: &'p [[f32; 2]],
    /// The row's `m * s` sums ([`Panel::with_min_sums`]).
    summs: MinSumsRow<'p>,
}

impl<F: NeonTile> WeightRow<F> for PanelRow<'_> {
    #[inline(always)]
    fn blocks(&self) -> usize {
        self.q.len()
    }
    #[inline(always)]
    unsafe fn prep_at(&self, b: usize) -> ([int8x16_t; 2], f32) {
        // SAFETY: b < len by the contract (q and dm have the same length).
        unsafe { (*self.q.get_unchecked(b), self.dm.get_unchecked(b)[0]) }
    }
    #[inline(always)]
    unsafe fn min_at(&self, b: usize) -> f32 {
        // SAFETY: as prep_at.
        unsafe { self.dm.get_unchecked(b)[1] }
    }
    const MIN_SUMS: bool = !F::SPLIT_MIN;
    #[inline(always)]
    fn min_sums(&self) -> Option<MinSumsRow<'_>> {
        Some(self.summs)
    }
}

/// `acc + q * s`, fused or not as [`FUSED_MLA`] says.
#[inline(always)]
fn mla(acc: float32x4_t, q: float32x4_t, s: f32) -> float32x4_t {
    // SAFETY: NEON intrinsics (aarch64 baseline).
    unsafe {
        if FUSED_MLA {
            vfmaq_n_f32(acc, q, s)
        } else {
            vaddq_f32(acc, vmulq_n_f32(q, s))
        }
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

/// One weight row element type of the float products (F16 or F32) with ggml's leftovers rule.
pub(crate) trait FloatElem: Copy {
    /// Elements `i..i + 4` as floats.
    fn load4(row: &[Self], i: usize) -> float32x4_t;
    fn finish(reduced: f32, w: &[Self], a: &[f32]) -> f32;
}

impl FloatElem for u16 {
    #[inline(always)]
    fn load4(row: &[u16], i: usize) -> float32x4_t {
        let h = &row[i..i + 4];
        // SAFETY: `h` is 4 readable u16.
        widen4(unsafe { vld1_u16(h.as_ptr()) })
    }
    #[inline]
    fn finish(reduced: f32, w: &[u16], a: &[f32]) -> f32 {
        // ggml's sumf is a double here
        let mut sum = reduced as f64;
        for (&x, &y) in w.iter().zip(a) {
            sum += (fp16_to_fp32(x) * y) as f64;
        }
        sum as f32
    }
}

impl FloatElem for f32 {
    #[inline(always)]
    fn load4(row: &[f32], i: usize) -> float32x4_t {
        let v = &row[i..i + 4];
        // SAFETY: `v` is 4 readable f32.
        unsafe { vld1q_f32(v.as_ptr()) }
    }
    /// ggml's F32 leftovers, `for (i = np; i < n; ++i) sumf += x[i]*y[i];`, as clang compiles
    /// it for aarch64 (the NDK, Xcode; clang 14 here, disassembled): 8 or more leftovers are
    /// vectorized as an in-order reduction, 8 at a time (two `fmul` of 4 lanes, each product
    /// rounded, then added to `sumf` one by one in element order), and the last `len % 8` stay
    /// scalar, contracted to one `fmadd` each. All-FMA leftovers differed from that build by ulps
    /// whenever `k % 16 >= 8`.
    #[inline]
    fn finish(reduced: f32, w: &[f32], a: &[f32]) -> f32 {
        let mut sum = reduced;
        let vectorized = w.len() & !7;
        for (&x, &y) in w[..vectorized].iter().zip(a) {
            sum += x * y;
        }
        for (&x, &y) in w[vectorized..].iter().zip(&a[vectorized..]) {
            sum = x.mul_add(y, sum);
        }
        sum
    }
}

/// Float outputs `(r, c)` of weight rows `w[r]` with activation rows `a[c]` (already rounded to
/// what ggml's dot sees: F16 values for F16 weights), each in ggml's NEON `vec_dot_f16/f32`
/// order (module docs): accumulator `j` takes elements `16i + 4j..+4`. The four accumulators
/// are independent chains, computed one after the other when `C > 1` to save registers.
#[inline(always)]
pub(crate) fn float_tile<E: FloatElem, const R: usize, const C: usize>(w: [&[E]; R], a: [&[f32]; C]) -> [[f32; C]; R] {
    // SAFETY: NEON intrinsics (aarch64 baseline); the loads are bounds-checked in `load4`.
    unsafe { float_tile_body(w, a) }
}

/// # Safety
/// None beyond NEON (always present); `unsafe` only so the intrinsics can be called.
#[inline(always)]
unsafe fn float_tile_body<E: FloatElem, const R: usize, const C: usize>(w: [&[E]; R], a: [&[f32]; C]) -> [[f32; C]; R] {
    let k = a[0].len();
    assert!(w.iter().all(|r| r.len() == k) && a.iter().all(|r| r.len() == k));
    let np = k & !15;
    let mut parts = [[[vdupq_n_f32(0.0); 4]; C]; R];
    let load_a = |c: usize, i: usize| f32::load4(a[c], i);
    if C == 1 {
        let mut i = 0;
        while i < np {
            for j in 0..4 {
                let av = load_a(0, i + 4 * j);
                for r in 0..R {
                    parts[r][0][j] = vfmaq_f32(parts[r][0][j], E::load4(w[r], i + 4 * j), av);
                }
            }
            i += 16;
        }
    }
    for j in 0..if C == 1 { 0 } else { 4 } {
        let mut acc = [[vdupq_n_f32(0.0); C]; R];
        let mut i = 4 * j;
        while i < np {
            let wv: [float32x4_t; R] = std::array::from_fn(|r| E::load4(w[r], i));
            for c in 0..C {
                let av = load_a(c, i);
                for r in 0..R {
                    acc[r][c] = vfmaq_f32(acc[r][c], wv[r], av);
                }
            }
            i += 16;
        }
        for r in 0..R {
            for c in 0..C {
                parts[r][c][j] = acc[r][c];
            }
        }
    }
    let mut out = [[0f32; C]; R];
    for r in 0..R {
        for c in 0..C {
            let p = &parts[r][c];
            let x = vaddq_f32(vaddq_f32(p[0], p[2]), vaddq_f32(p[1], p[3]));
            out[r][c] = E::finish(vaddvq_f32(x), &w[r][np..], &a[c][np..]);
        }
    }
    out
}


/// F16 weight rows times F16 activation rows (half bit patterns, as ggml's F16 partner format
/// holds them) as ggml's `ggml_vec_dot_f16` computes them when built with FP16 vector arithmetic
/// (`+fp16`: every llama.rn arm64 library but `rnllama_v8`, and whisper.rn's): four 8-lane
/// *half-precision* FMA accumulators over 32-element steps (accumulator `j` takes elements
/// `32i + 8j..+8`), reduced in half as `(acc0 + acc2) + (acc1 + acc3)`, widened, the two halves
/// added and `vaddvq_f32`, then the leftovers in double. Much less accurate than f32
/// accumulation (each lane rounds to 11 bits per step), but it is what stock computes on those
/// phones. The activations come as halves so a step loads each operand with one instruction
/// (narrowing widened activations again cost two loads and two conversions per 8 elements and
/// column: whisper's F16 products ran 2-2.6x ggml's instructions).
///
/// # Safety
/// The CPU must have FEAT_FP16 (`has_fp16`). (Shapes are checked.)
#[inline]
#[target_feature(enable = "fp16")]
pub(crate) unsafe fn f16_tile_hp<const R: usize, const C: usize>(w: [&[u16]; R], a: [&[u16]; C]) -> [[f32; C]; R] {
    let k = a[0].len();
    assert!(w.iter().all(|r| r.len() == k) && a.iter().all(|r| r.len() == k));
    let np = k & !31;
    let wp = w.map(|r| r.as_ptr());
    let ap = a.map(|r| r.as_ptr());
    // SAFETY (whole body): the loads read 8 elements at offsets i + 8 <= np <= k of rows of
    // length k (asserted); the hp functions need FEAT_FP16, which this function requires; the
    // rest is NEON.
    unsafe {
        let zero = vdupq_n_u16(0);
        let mut parts = [[[zero; 4]; C]; R];
        if C == 1 {
            // One activation row (decoding attention): all four accumulators in one pass, the
            // row's four vectors loaded once per step for every weight row.
            let mut i = 0;
            while i < np {
                let av: [uint16x8_t; 4] = std::array::from_fn(|j| vld1q_u16(ap[0].add(i + 8 * j)));
                for r in 0..R {
                    for j in 0..4 {
                        parts[r][0][j] = hp::fma(parts[r][0][j], vld1q_u16(wp[r].add(i + 8 * j)), av[j]);
                    }
                }
                i += 32;
            }
        }
        for j in 0..if C == 1 { 0 } else { 4 } {
            let mut acc = [[zero; C]; R];
            let mut i = 8 * j;
            while i < np {
                let wv: [uint16x8_t; R] = std::array::from_fn(|r| vld1q_u16(wp[r].add(i)));
                for c in 0..C {
                    let av = vld1q_u16(ap[c].add(i));
                    for r in 0..R {
                        acc[r][c] = hp::fma(acc[r][c], wv[r], av);
                    }
                }
                i += 32;
            }
            for r in 0..R {
                for c in 0..C {
                    parts[r][c][j] = acc[r][c];
                }
            }
        }
        let mut out = [[0f32; C]; R];
        for r in 0..R {
            for c in 0..C {
                let p = &parts[r][c];
                let x = hp::add(hp::add(p[0], p[2]), hp::add(p[1], p[3]));
                let (lo, hi) = hp::widen(x);
                out[r][c] = vaddvq_f32(vaddq_f32(lo, hi));
            }
        }
        if np == k {
            return out;
        }
        finish_halves(out, w.map(|r| &r[np..]), a.map(|r| &r[np..]))
    }
}

/// ggml's F16 leftovers (`k % 32`) for every output of a tile: `sumf += (double) (x * y)` with
/// `sumf` a double, each output in its own order. The halves are widened as vectors and the
/// outputs' sums interleaved (element-outer): one by one, the leftovers of whisper's KQV
/// (28 of 1500 elements) took more instructions than its vector part.
#[inline]
fn finish_halves<const R: usize, const C: usize>(reduced: [[f32; C]; R], w: [&[u16]; R], a: [&[u16]; C]) -> [[f32; C]; R] {
    let tail = a[0].len();
    let wf = w.map(widen_tail);
    let af = a.map(widen_tail);
    let mut sum = reduced.map(|row| row.map(|v| v as f64));
    for e in 0..tail.min(32) {
        for r in 0..R {
            let x = wf[r][e];
            for c in 0..C {
                sum[r][c] += (x * af[c][e]) as f64;
            }
        }
    }
    sum.map(|row| row.map(|v| v as f32))
}

/// Up to 32 halves as f32, four at a time through a zero-padded copy.
#[inline(always)]
fn widen_tail(h: &[u16]) -> [f32; 32] {
    let n = h.len().min(32);
    let mut bits = [0u16; 32];
    bits[..n].copy_from_slice(&h[..n]);
    let mut out = [0f32; 32];
    for q in 0..n.div_ceil(4) {
        // SAFETY: `bits` and `out` hold 32 elements and 4q + 4 <= 32.
        unsafe { vst1q_f32(out.as_mut_ptr().add(4 * q), widen4(vld1_u16(bits.as_ptr().add(4 * q)))) };
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::quant::f16::{fp32_to_fp16, fp16_to_fp32};
    use crate::quant::test_util::Lcg;
    use crate::quant::{q4_0, q4_1, q8_0, q8_1};
    use super::*;
    use crate::cpu_features::has_dotprod;

    /// Which formula ggml's scalar tail uses.
    #[derive(Clone, Copy, PartialEq)]
    enum Kind {
        Q4_0,
        Q4_1,
        Q8_0,
    }

    /// ggml-cpu's NEON `vec_dot` (dotprod build) written out lane by lane in scalar Rust: the
    /// model the kernels must equal bit for bit. `w`/`a`: per block the 32 integer quants, the
    /// scales, and (Q4_1) the weight minimum / activation sum.
    fn model(kind: Kind, w: &[([i32; 32], f32, f32)], a: &[([i32; 32], f32, f32)]) -> f32 {
        let nb = w.len();
        let mut acc = [[0f32; 4]; 2];
        let mut summs = 0f32;
        let lanes = |b: usize| -> [i32; 4] {
            std::array::from_fn(|i| (4 * i..4 * i + 4).map(|j| w[b].0[j] * a[b].0[j] + w[b].0[16 + j] * a[b].0[16 + j]).sum())
        };
        let mut b = 0;
        while b + 1 < nb {
            if kind == Kind::Q4_1 {
                summs += w[b].2.mul_add(a[b].2, w[b + 1].2 * a[b + 1].2);
            }
            for h in 0..2 {
                let l = lanes(b + h);
                let s = w[b + h].1 * a[b + h].1;
                for i in 0..4 {
                    acc[h][i] = if FUSED_MLA { (l[i] as f32).mul_add(s, acc[h][i]) } else { acc[h][i] + l[i] as f32 * s };
                }
            }
            b += 2;
        }
        let hsum = |v: [f32; 4]| (v[0] + v[1]) + (v[2] + v[3]);
        let mut sumf = hsum(acc[0]) + hsum(acc[1]);
        if kind == Kind::Q4_1 {
            sumf += summs;
        }
        if nb % 2 == 1 {
            let b = nb - 1;
            let sumi: i32 = lanes(b).iter().sum();
            let (dw, da, mw, sa) = (w[b].1, a[b].1, w[b].2, a[b].2);
            sumf = match kind {
                Kind::Q4_0 => (sumi as f32 * dw).mul_add(da, sumf),
                Kind::Q8_0 => (sumi as f32).mul_add(dw * da, sumf),
                Kind::Q4_1 => sumf + (dw * da).mul_add(sumi as f32, mw * sa),
            };
        }
        sumf
    }

    fn nib(qs: &[u8; 16], j: usize) -> i32 {
        ((qs[j % 16] >> (4 * (j / 16))) & 15) as i32
    }

    /// Random weight rows and activation rows of one format, quantized as the NEON level does,
    /// with their model view.
    struct Case<W, A> {
        w: Vec<Vec<W>>,
        a: Vec<A>,
        d: Vec<f32>,
        s: Vec<f32>,
        wm: Vec<Vec<([i32; 32], f32, f32)>>,
        am: Vec<Vec<([i32; 32], f32, f32)>>,
        nb: usize,
        n: usize,
    }

    fn acts_f32(rng: &mut Lcg, nb: usize, n: usize) -> Vec<f32> {
        (0..nb * 32 * n).map(|i| rng.next_gauss() * if i % 97 == 0 { 9.0 } else { 1.0 }).collect()
    }

    fn case_q8_0_acts<W: Copy>(rng: &mut Lcg, w: Vec<Vec<W>>, wm: Vec<Vec<([i32; 32], f32, f32)>>, nb: usize, n: usize) -> Case<W, BlockQ8_0> {
        let x = acts_f32(rng, nb, n);
        let mut a = vec![BlockQ8_0::default(); nb * n];
        q8_0::quantize_row_at(crate::cpu_features::SimdLevel::Neon, &x, &mut a);
        let mut d = vec![0f32; nb * n];
        let mut am = vec![Vec::new(); n];
        for (i, blk) in a.iter().enumerate() {
            d[(i % nb) * n + i / nb] = fp16_to_fp32(blk.d);
            am[i / nb].push((blk.qs.map(|q| q as i32), fp16_to_fp32(blk.d), 0.0));
        }
        Case { w, a, d, s: Vec::new(), wm, am, nb, n }
    }

    fn case_q4_0(rng: &mut Lcg, rows: usize, nb: usize, n: usize) -> Case<BlockQ4_0, BlockQ8_0> {
        let mut w = Vec::new();
        let mut wm = Vec::new();
        for _ in 0..rows {
            let x: Vec<f32> = (0..nb * 32).map(|_| rng.next_gauss()).collect();
            let mut b = vec![BlockQ4_0::default(); nb];
            q4_0::quantize_row(&x, &mut b);
            wm.push(b.iter().map(|b| (std::array::from_fn(|j| nib(&b.qs, j) - 8), fp16_to_fp32(b.d), 0.0)).collect());
            w.push(b);
        }
        case_q8_0_acts(rng, w, wm, nb, n)
    }

    fn case_q8_0(rng: &mut Lcg, rows: usize, nb: usize, n: usize) -> Case<BlockQ8_0, BlockQ8_0> {
        let mut w = Vec::new();
        let mut wm = Vec::new();
        for r in 0..rows {
            // any byte is a legal weight quant, -128 included
            let b: Vec<BlockQ8_0> = (0..nb)
                .map(|_| BlockQ8_0 { d: fp32_to_fp16(0.01 + r as f32 * 0.003), qs: std::array::from_fn(|_| rng.next_u32() as i8) })
                .collect();
            wm.push(b.iter().map(|b| (b.qs.map(|q| q as i32), fp16_to_fp32(b.d), 0.0)).collect());
            w.push(b);
        }
        case_q8_0_acts(rng, w, wm, nb, n)
    }

    fn case_q4_1(rng: &mut Lcg, rows: usize, nb: usize, n: usize) -> Case<BlockQ4_1, BlockQ8_1> {
        let mut w = Vec::new();
        let mut wm = Vec::new();
        for _ in 0..rows {
            let x: Vec<f32> = (0..nb * 32).map(|_| rng.next_gauss() + 0.4).collect();
            let mut b = vec![BlockQ4_1::default(); nb];
            q4_1::quantize_row(&x, &mut b);
            wm.push(b.iter().map(|b| (std::array::from_fn(|j| nib(&b.qs, j)), fp16_to_fp32(b.d), fp16_to_fp32(b.m))).collect());
            w.push(b);
        }
        let x = acts_f32(rng, nb, n);
        let mut a = vec![BlockQ8_1::default(); nb * n];
        q8_1::quantize_row_at(crate::cpu_features::SimdLevel::Neon, &x, &mut a);
        let mut d = vec![0f32; nb * n];
        let mut s = vec![0f32; nb * n];
        let mut am = vec![Vec::new(); n];
        for (i, blk) in a.iter().enumerate() {
            d[(i % nb) * n + i / nb] = fp16_to_fp32(blk.d);
            s[(i % nb) * n + i / nb] = fp16_to_fp32(blk.s);
            am[i / nb].push((blk.qs.map(|q| q as i32), fp16_to_fp32(blk.d), fp16_to_fp32(blk.s)));
        }
        Case { w, a, d, s, wm, am, nb, n }
    }

    /// Every 2 x C tile (C = 1..4, every column offset) equals the model, with and without
    /// `sdot`; so does the single-row entry point.
    fn check_tiles<F: NeonTile>(kind: Kind, c: &Case<F::W, F::A>) {
        let rows = ActRows { blocks: &c.a, d: &c.d, s: &c.s, nb: c.nb, n: c.n };
        let want = |r: usize, j: usize| model(kind, &c.wm[r], &c.am[j]);
        macro_rules! tile {
            ($dot:expr, $cols:expr, $c0:expr) => {{
                // SAFETY: DOT only when dotprod was detected.
                let got = unsafe { quant_tile::<F, $dot, 2, $cols, _>([&c.w[0][..], &c.w[1][..]], &rows, $c0) };
                for r in 0..2 {
                    for k in 0..$cols {
                        let w = want(r, $c0 + k);
                        assert_eq!(got[r][k].to_bits(), w.to_bits(), "nb={} dot={} C={} r={r} col={}: {} vs {w}", c.nb, $dot, $cols, $c0 + k, got[r][k]);
                    }
                }
            }};
        }
        for c0 in 0..c.n {
            if c0 + 4 <= c.n {
                tile!(false, 4, c0);
            }
            if c0 + 3 <= c.n {
                tile!(false, 3, c0);
            }
            tile!(false, 1, c0);
            if has_dotprod() {
                if c0 + 4 <= c.n {
                    tile!(true, 4, c0);
                }
                tile!(true, 1, c0);
            }
        }
        // one row pair through the public entry (dispatching on dotprod itself)
        let nb = c.nb;
        let a0 = &c.a[..nb];
        let d0: Vec<f32> = (0..nb).map(|b| c.d[b * c.n]).collect();
        let s0: Vec<f32> = if c.s.is_empty() { Vec::new() } else { (0..nb).map(|b| c.s[b * c.n]).collect() };
        assert_eq!(quant_dot::<F>(&c.w[1], a0, &d0, &s0).to_bits(), want(1, 0).to_bits());
    }

    #[test]
    fn quant_tiles_match_ggml_neon_model() {
        let mut rng = Lcg::new(77);
        for nb in [1usize, 2, 3, 4, 5, 8, 17, 36] {
            check_tiles::<Q4_0>(Kind::Q4_0, &case_q4_0(&mut rng, 2, nb, 5));
            check_tiles::<Q4_1>(Kind::Q4_1, &case_q4_1(&mut rng, 2, nb, 5));
            check_tiles::<Q8_0>(Kind::Q8_0, &case_q8_0(&mut rng, 2, nb, 5));
        }
    }

    /// The matrix-vector kernel (decoding, and small batches one activation row at a time)
    /// gives the model's bits for every row of a 4-row group and of the 1-row remainder, with
    /// and without `sdot`, on odd and even block counts, for every activation row of the batch.
    fn check_matvec<F: NeonTile>(kind: Kind, c: &Case<F::W, F::A>) {
        use super::super::matvec::{activation_pairs, rows_dot};
        let rows = ActRows { blocks: &c.a, d: &c.d, s: &c.s, nb: c.nb, n: c.n };
        let w: [&[F::W]; 4] = std::array::from_fn(|r| &c.w[r][..]);
        for j in 0..c.n {
            let pairs = activation_pairs::<F>(&rows, j);
            let mut got = Vec::new();
            // SAFETY: DOT only when dotprod was detected.
            got.push(unsafe { rows_dot::<F, false, 4>(w, &rows, j, &pairs) });
            if has_dotprod() {
                got.push(unsafe { rows_dot::<F, true, 4>(w, &rows, j, &pairs) });
            }
            for r in 0..4 {
                let want = model(kind, &c.wm[r], &c.am[j]);
                for g in &got {
                    assert_eq!(g[r].to_bits(), want.to_bits(), "nb={} j={j} r={r}: {} vs {want}", c.nb, g[r]);
                }
                let one = unsafe { rows_dot::<F, false, 1>([w[r]], &rows, j, &pairs) }[0];
                assert_eq!(one.to_bits(), want.to_bits(), "nb={} j={j} r={r} (one row)", c.nb);
            }
        }
    }

    #[test]
    fn quant_matvec_matches_ggml_neon_model() {
        let mut rng = Lcg::new(78);
        for nb in [1usize, 2, 3, 4, 5, 18, 35, 48] {
            for n in [1, 3] {
                check_matvec::<Q4_0>(Kind::Q4_0, &case_q4_0(&mut rng, 4, nb, n));
                check_matvec::<Q4_1>(Kind::Q4_1, &case_q4_1(&mut rng, 4, nb, n));
                check_matvec::<Q8_0>(Kind::Q8_0, &case_q8_0(&mut rng, 4, nb, n));
            }
        }
    }

    /// The two integer paths agree on every lane, including the extreme byte products.
    #[test]
    fn sdot_and_base_lanes_agree() {
        let mut rng = Lcg::new(5);
        let mut cases: Vec<([i8; 16], [i8; 16])> = vec![([-128; 16], [-128; 16]), ([127; 16], [-128; 16]), ([-128; 16], [127; 16])];
        for _ in 0..200 {
            cases.push((std::array::from_fn(|_| rng.next_u32() as i8), std::array::from_fn(|_| rng.next_u32() as i8)));
        }
        for (a, b) in cases {
            // SAFETY: 16-byte arrays; vst1q into a 4-lane array; NEON is baseline.
            let (va, vb) = unsafe { (vld1q_s8(a.as_ptr()), vld1q_s8(b.as_ptr())) };
            let mut base = [0i32; 4];
            unsafe { vst1q_s32(base.as_mut_ptr(), dot4_base(va, vb)) };
            let want: [i32; 4] = std::array::from_fn(|i| (4 * i..4 * i + 4).map(|j| a[j] as i32 * b[j] as i32).sum());
            assert_eq!(base, want);
            if has_dotprod() {
                let mut dot = [0i32; 4];
                // SAFETY: dotprod detected.
                unsafe { vst1q_s32(dot.as_mut_ptr(), sdot(vdupq_n_s32(0), va, vb)) };
                assert_eq!(dot, want);
            }
        }
    }

    /// ggml's NEON `vec_dot_f16` / `vec_dot_f32` (no FP16 arithmetic) in scalar Rust.
    fn float_model<E: FloatElem>(w: &[E], a: &[f32], to_f32: fn(E) -> f32) -> f32 {
        let k = a.len();
        let np = k & !15;
        let mut acc = [[0f32; 4]; 4];
        let mut i = 0;
        while i < np {
            for j in 0..4 {
                for l in 0..4 {
                    let e = i + 4 * j + l;
                    acc[j][l] = to_f32(w[e]).mul_add(a[e], acc[j][l]);
                }
            }
            i += 16;
        }
        let x: [f32; 4] = std::array::from_fn(|l| (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]));
        E::finish((x[0] + x[1]) + (x[2] + x[3]), &w[np..], &a[np..])
    }

    #[test]
    fn float_tiles_match_ggml_neon_model() {
        let mut rng = Lcg::new(8);
        for k in [1usize, 4, 15, 16, 17, 33, 64, 100, 576] {
            let w16: Vec<Vec<u16>> = (0..2).map(|_| (0..k).map(|_| fp32_to_fp16(rng.next_gauss())).collect()).collect();
            let w32: Vec<Vec<f32>> = (0..2).map(|_| (0..k).map(|_| rng.next_gauss()).collect()).collect();
            // activations as ggml's F16 dot sees them: rounded to half
            let a: Vec<Vec<f32>> = (0..4).map(|_| (0..k).map(|_| fp16_to_fp32(fp32_to_fp16(rng.next_gauss()))).collect()).collect();
            let t16_4 = float_tile::<u16, 2, 4>([&w16[0], &w16[1]], [&a[0], &a[1], &a[2], &a[3]]);
            let t16_1 = float_tile::<u16, 2, 1>([&w16[0], &w16[1]], [&a[2]]);
            let t32_3 = float_tile::<f32, 1, 3>([&w32[1]], [&a[0], &a[1], &a[3]]);
            let t32_1 = float_tile::<f32, 2, 1>([&w32[0], &w32[1]], [&a[1]]);
            for r in 0..2 {
                for c in 0..4 {
                    assert_eq!(t16_4[r][c].to_bits(), float_model(&w16[r], &a[c], fp16_to_fp32).to_bits(), "k={k}");
                }
                assert_eq!(t16_1[r][0].to_bits(), float_model(&w16[r], &a[2], fp16_to_fp32).to_bits(), "k={k}");
                assert_eq!(t32_1[r][0].to_bits(), float_model(&w32[r], &a[1], |x| x).to_bits(), "k={k}");
            }
            for (c, j) in [0usize, 1, 3].into_iter().enumerate() {
                assert_eq!(t32_3[0][c].to_bits(), float_model(&w32[1], &a[j], |x| x).to_bits(), "k={k}");
            }
        }
    }

    /// Nearest half (ties to even) of a double, by checking the neighbours of the f32 route.
    fn f64_to_f16(v: f64) -> u16 {
        let h = fp32_to_fp16(v as f32);
        let mut best = h;
        for c in [h.wrapping_sub(1), h.wrapping_add(1)] {
            let (fc, fb) = (fp16_to_fp32(c) as f64, fp16_to_fp32(best) as f64);
            if c & 0x7C00 == 0x7C00 || (fc < 0.0) != (fb < 0.0) && fc != 0.0 {
                continue;
            }
            let (dc, db) = ((fc - v).abs(), (fb - v).abs());
            if dc < db || (dc == db && c & 1 == 0) {
                best = c;
            }
        }
        best
    }

    /// ggml's `vec_dot_f16` with FP16 arithmetic in scalar Rust: each half FMA computed exactly
    /// in f64 (products of halves are exact, and the test values keep the sums within 53 bits)
    /// and rounded once to half.
    fn f16_hp_model(w: &[u16], a: &[f32]) -> f32 {
        let k = a.len();
        let np = k & !31;
        let h = |x: u16| fp16_to_fp32(x) as f64;
        let mut acc = [[0u16; 8]; 4];
        let mut i = 0;
        while i < np {
            for j in 0..4 {
                for l in 0..8 {
                    let e = i + 8 * j + l;
                    acc[j][l] = f64_to_f16(h(acc[j][l]) + h(w[e]) * a[e] as f64);
                }
            }
            i += 32;
        }
        let add = |x: [u16; 8], y: [u16; 8]| -> [u16; 8] { std::array::from_fn(|l| f64_to_f16(h(x[l]) + h(y[l]))) };
        let x = add(add(acc[0], acc[2]), add(acc[1], acc[3]));
        let t: [f32; 4] = std::array::from_fn(|l| fp16_to_fp32(x[l]) + fp16_to_fp32(x[l + 4]));
        <u16 as FloatElem>::finish((t[0] + t[1]) + (t[2] + t[3]), &w[np..], &a[np..])
    }

    #[test]
    fn f16_half_precision_tiles_match_model() {
        if !crate::cpu_features::has_fp16() {
            return;
        }
        let mut rng = Lcg::new(12);
        for k in [1usize, 31, 32, 33, 64, 100, 576, 1536] {
            let w: Vec<Vec<u16>> = (0..2).map(|_| (0..k).map(|_| fp32_to_fp16(rng.next_gauss())).collect()).collect();
            let a: Vec<Vec<f32>> = (0..4).map(|_| (0..k).map(|_| fp16_to_fp32(fp32_to_fp16(rng.next_gauss()))).collect()).collect();
            let ah: Vec<Vec<u16>> = a.iter().map(|r| r.iter().map(|&x| fp32_to_fp16(x)).collect()).collect();
            // SAFETY: FEAT_FP16 checked above.
            let t22 = unsafe { f16_tile_hp::<2, 2>([&w[0], &w[1]], [&ah[0], &ah[2]]) };
            let t11 = unsafe { f16_tile_hp::<1, 1>([&w[1]], [&ah[1]]) };
            let t24 = unsafe { f16_tile_hp::<2, 4>([&w[0], &w[1]], [&ah[0], &ah[1], &ah[2], &ah[3]]) };
            let t41 = unsafe { f16_tile_hp::<4, 1>([&w[0], &w[1], &w[1], &w[0]], [&ah[3]]) };
            for (r, wr) in [0usize, 1, 1, 0].into_iter().enumerate() {
                assert_eq!(t41[r][0].to_bits(), f16_hp_model(&w[wr], &a[3]).to_bits(), "k={k} r={r} (4x1)");
            }
            for r in 0..2 {
                for c in 0..4 {
                    assert_eq!(t24[r][c].to_bits(), f16_hp_model(&w[r], &a[c]).to_bits(), "k={k} r={r} c={c} (2x4)");
                }
            }
            for r in 0..2 {
                for (c, j) in [0usize, 2].into_iter().enumerate() {
                    assert_eq!(t22[r][c].to_bits(), f16_hp_model(&w[r], &a[j]).to_bits(), "k={k} r={r} c={c}");
                }
            }
            assert_eq!(t11[0][0].to_bits(), f16_hp_model(&w[1], &a[1]).to_bits(), "k={k}");
        }
        // Hand-computed: lane 0 of accumulator 0 sees elements 0 and 32: 2048*1 then + 1*1 =
        // 2049, which half precision rounds to 2048 (ties to even); f32 would keep 2049.
        let mut w = vec![0u16; 64];
        let mut a = vec![0f32; 64];
        w[0] = fp32_to_fp16(2048.0);
        a[0] = 1.0;
        w[32] = fp32_to_fp16(1.0);
        a[32] = 1.0;
        let ah: Vec<u16> = a.iter().map(|&x| fp32_to_fp16(x)).collect();
        // SAFETY: FEAT_FP16 checked above.
        assert_eq!(unsafe { f16_tile_hp::<1, 1>([&w], [&ah]) }[0][0], 2048.0);
        assert_eq!(float_tile::<u16, 1, 1>([&w], [&a])[0][0], 2049.0);
    }

    /// Hand-computed: one block pair plus an odd tail block with unit scales gives the exact
    /// integer dot product, and a known half scale multiplies it exactly.
    #[test]
    fn quant_tile_hand_computed() {
        let mut w = vec![BlockQ8_0 { d: 0x3C00, qs: [0; 32] }; 3];
        let mut a = vec![BlockQ8_0 { d: 0x3C00, qs: [0; 32] }; 3];
        w[0].qs[0] = 3;
        a[0].qs[0] = -5; // -15
        w[1].qs[31] = -128;
        a[1].qs[31] = 127; // -16256
        w[2].qs[17] = 7;
        a[2].qs[17] = 2; // 14 (tail block)
        w[2].d = 0x3800; // 0.5 -> 7
        let d = [1.0f32; 3];
        assert_eq!(quant_dot::<Q8_0>(&w, &a, &d, &[]), -15.0 - 16256.0 + 7.0);
    }
}
