//! K-quant products (Q4_K, Q5_K, Q6_K weights against Q8_K activations) in ggml-cpu's NEON
//! order.
//!
//! ggml's NEON `vec_dot_q{4,5,6}_K_q8_K` reduce every 256-value super-block to
//! exact integer totals (`vaddvq` of its dot products, times the sub-block scales) and fold them
//! into one scalar `sumf` in a fixed order, each step one fused operation as clang contracts it:
//! - Q4_K: `sumf -= dmin * P` then `sumf += d * S`, with `d = y.d * x.d`,
//!   `dmin = y.d * x.dmin`, `P` the minimums times the pairs of 16-value sums, `S` the scaled
//!   nibble products;
//! - Q5_K: `sumf += d * S - dmin * P` (the same `d`, `dmin`, `P`; `S` over 5-bit quants), which
//!   clang contracts to `sumf + fma(d, S, -(dmin * P))`: the first product fused, the second
//!   rounded, the outer add separate;
//! - Q6_K: `sum += d_all * y.d * I`, `I` the scaled products of the quants less 32 times the
//!   scaled sums (`isum - 32 * isum_mins`).
//!
//! Every revision (llama.rn 0.4.4, whisper.rn 0.4.3, the 2026 packages) has these formulas. Only
//! totals reach the floats, so any exact integer method gives ggml's answer: `sdot` where the
//! CPU has it, widening multiplies elsewhere. Not covered (results only close): the i8mm builds'
//! two-row path and ggml's repacked layouts, which keep these weights away from the SIMD device
//! anyway (`docs/simd.md`).

use super::lanes::{block_ints, dot4_base, sdot};
use crate::ops::mul_mat::tiles::acts::ActRows;
use crate::quant::f16::fp16_to_fp32;
use crate::quant::q8_k::BlockQ8K;
use crate::quant::{BlockQ4K, BlockQ5K, BlockQ6K, Format, Q4K, Q5K, Q6K};
use std::arch::aarch64::*;

/// A K-quant format as ggml-cpu's NEON `vec_dot` sees it.
pub(crate) trait NeonKTile: Format<A = BlockQ8K> {
    /// A super-block unpacked once for every activation column of a tile.
    type Prep: Copy;
    fn prep(w: &Self::W) -> Self::Prep;
    /// `sumf` after this super-block (see the module doc).
    ///
    /// # Safety
    /// With `DOT`, the CPU must have the dot product extension.
    unsafe fn step<const DOT: bool>(sumf: f32, p: &Self::Prep, a: &BlockQ8K) -> f32;
}

/// The exact dot product of 32 quants with 32 activation bytes (both as signed bytes).
///
/// # Safety
/// With `DOT`, the CPU must have the dot product extension.
#[inline(always)]
unsafe fn dot32<const DOT: bool>(q: &[int8x16_t; 2], a: &[i8]) -> i32 {
    assert!(a.len() >= 32);
    // SAFETY: 32 readable bytes (asserted); DOT passed on from this function's contract.
    unsafe { vaddvq_s32(block_ints::<DOT>(q, &[vld1q_s8(a.as_ptr()), vld1q_s8(a.as_ptr().add(16))])) }
}

/// Q4_K or Q5_K unpacked: the eight 32-value sub-blocks' quants, scales and minimums, `d` and
/// `dmin`.
#[derive(Clone, Copy)]
pub(crate) struct ScaleMinPrep {
    q: [[int8x16_t; 2]; 8],
    sc: [i32; 8],
    /// The minimums (0..=63).
    mins: int16x8_t,
    d: f32,
    dmin: f32,
}

/// The nibbles, scales and minimums (all of Q4_K, Q5_K but its fifth bits).
#[inline(always)]
fn scale_min_prep(qs: &[u8; 128], scales: &[u8; 12], d: u16, dmin: u16) -> ScaleMinPrep {
    // SAFETY: NEON intrinsics (aarch64 baseline); each load reads 16 of the 128 quant bytes.
    let q = unsafe {
        let m4 = vdupq_n_u8(0x0F);
        let mut q = [[vdupq_n_s8(0); 2]; 8];
        for j in 0..4 {
            let b0 = vld1q_u8(qs.as_ptr().add(32 * j));
            let b1 = vld1q_u8(qs.as_ptr().add(32 * j + 16));
            q[2 * j] = [vreinterpretq_s8_u8(vandq_u8(b0, m4)), vreinterpretq_s8_u8(vandq_u8(b1, m4))];
            q[2 * j + 1] = [vreinterpretq_s8_u8(vshrq_n_u8::<4>(b0)), vreinterpretq_s8_u8(vshrq_n_u8::<4>(b1))];
        }
        q
    };
    // the eight 6-bit scales and minimums (`crate::quant::q4_k::scale_min`) as ggml unpacks them, in 32-bit
    // words: written per value, the phone build's LTO vectorized the unpacking less well
    let u = |i: usize| u32::from_le_bytes([scales[4 * i], scales[4 * i + 1], scales[4 * i + 2], scales[4 * i + 3]]);
    let (u0, u1, u2) = (u(0), u(1), u(2));
    const KMASK1: u32 = 0x3f3f_3f3f;
    const KMASK2: u32 = 0x0f0f_0f0f;
    const KMASK3: u32 = 0x0303_0303;
    let sc = [(u0 & KMASK1).to_le_bytes(), ((u2 & KMASK2) | (((u0 >> 6) & KMASK3) << 4)).to_le_bytes()];
    let mins = u64::from(u1 & KMASK1) | u64::from(((u2 >> 4) & KMASK2) | (((u1 >> 6) & KMASK3) << 4)) << 32;
    ScaleMinPrep {
        q,
        sc: std::array::from_fn(|k| sc[k / 4][k % 4] as i32),
        // SAFETY: NEON intrinsics (aarch64 baseline).
        mins: unsafe { vreinterpretq_s16_u16(vmovl_u8(vcreate_u8(mins))) },
        d: fp16_to_fp32(d),
        dmin: fp16_to_fp32(dmin),
    }
}

/// A super-block's exact totals: `P` (the minimums times the pairs of 16-value sums) and `S`
/// (the scaled quant products).
///
/// # Safety
/// With `DOT`, the CPU must have the dot product extension.
#[inline(always)]
unsafe fn scale_min_totals<const DOT: bool>(p: &ScaleMinPrep, a: &BlockQ8K) -> (i32, i32) {
    // the pairs of 16-value sums (each at most 2 * 16 * 128 in magnitude: exact in 16 bits) times
    // the minimums, in vectors as ggml: written per value, the phone build's LTO left it scalar
    // SAFETY: NEON intrinsics; the loads read the 16 `bsums`.
    let prod = unsafe {
        let pairs = vpaddq_s16(vld1q_s16(a.bsums.as_ptr()), vld1q_s16(a.bsums.as_ptr().add(8)));
        vaddvq_s32(vaddq_s32(vmull_s16(vget_low_s16(p.mins), vget_low_s16(pairs)), vmull_high_s16(p.mins, pairs)))
    };
    let mut s = 0i32;
    for k in 0..8 {
        // SAFETY: DOT passed on from this function's contract.
        s += unsafe { dot32::<DOT>(&p.q[k], &a.qs[32 * k..]) } * p.sc[k];
    }
    (prod, s)
}

impl NeonKTile for Q4K {
    type Prep = ScaleMinPrep;
    #[inline(always)]
    fn prep(w: &BlockQ4K) -> ScaleMinPrep {
        scale_min_prep(&w.qs, &w.scales, w.d, w.dmin)
    }
    #[inline(always)]
    unsafe fn step<const DOT: bool>(sumf: f32, p: &ScaleMinPrep, a: &BlockQ8K) -> f32 {
        let da = a.scale();
        let (d, dmin) = (da * p.d, da * p.dmin);
        // SAFETY: DOT passed on from this function's contract.
        let (prod, s) = unsafe { scale_min_totals::<DOT>(p, a) };
        // sumf -= dmin * P
        let sumf = (-dmin).mul_add(prod as f32, sumf);
        // sumf += d * (sumi1 + sumi2)
        d.mul_add(s as f32, sumf)
    }
}

impl NeonKTile for Q5K {
    type Prep = ScaleMinPrep;
    #[inline(always)]
    fn prep(w: &BlockQ5K) -> ScaleMinPrep {
        let mut p = scale_min_prep(&w.qs, &w.scales, w.d, w.dmin);
        // SAFETY: NEON intrinsics (aarch64 baseline); the loads read the 32 `qh` bytes.
        unsafe {
            let hb = [vld1q_u8(w.qh.as_ptr()), vld1q_u8(w.qh.as_ptr().add(16))];
            let m16 = vdupq_n_u8(16);
            // sub-block k's fifth bits are bit k of the `qh` bytes: 16 where set
            for k in 0..8 {
                let bit = vdupq_n_u8(1 << k);
                for (q, &hb) in p.q[k].iter_mut().zip(&hb) {
                    *q = vorrq_s8(*q, vreinterpretq_s8_u8(vandq_u8(vtstq_u8(hb, bit), m16)));
                }
            }
        }
        p
    }
    #[inline(always)]
    unsafe fn step<const DOT: bool>(sumf: f32, p: &ScaleMinPrep, a: &BlockQ8K) -> f32 {
        let da = a.scale();
        let (d, dmin) = (da * p.d, da * p.dmin);
        // SAFETY: DOT passed on from this function's contract.
        let (prod, s) = unsafe { scale_min_totals::<DOT>(p, a) };
        // sumf += d * sumi - dmin * sumi_mins, as clang contracts it
        sumf + d.mul_add(s as f32, -(dmin * prod as f32))
    }
}

/// Q6_K unpacked: the sixteen 16-value sub-blocks' quants less 32, in pairs of 32, their
/// scales, and `d`.
#[derive(Clone, Copy)]
pub(crate) struct Q6KPrep {
    q: [[int8x16_t; 2]; 8],
    sc: [i32; 16],
    d: f32,
}

impl NeonKTile for Q6K {
    type Prep = Q6KPrep;
    #[inline(always)]
    fn prep(w: &BlockQ6K) -> Q6KPrep {
        // SAFETY: NEON intrinsics (aarch64 baseline); every load reads 16 bytes inside `ql`
        // (128) or `qh` (64).
        let q = unsafe {
            let (m4, m3, m32) = (vdupq_n_u8(0x0F), vdupq_n_u8(3), vdupq_n_s8(32));
            let mut q = [[vdupq_n_s8(0); 2]; 8];
            for j in 0..2 {
                for h in 0..2 {
                    // bytes 16h..16h + 16 of each 32-value group of this half (128 values)
                    let l0 = vld1q_u8(w.ql.as_ptr().add(64 * j + 16 * h));
                    let l1 = vld1q_u8(w.ql.as_ptr().add(64 * j + 32 + 16 * h));
                    let hb = vld1q_u8(w.qh.as_ptr().add(32 * j + 16 * h));
                    let hi = |shift: u8| vshlq_n_u8::<4>(vandq_u8(vshlq_u8(hb, vdupq_n_s8(-(shift as i8))), m3));
                    let v = [
                        vorrq_u8(vandq_u8(l0, m4), hi(0)),
                        vorrq_u8(vandq_u8(l1, m4), hi(2)),
                        vorrq_u8(vshrq_n_u8::<4>(l0), hi(4)),
                        vorrq_u8(vshrq_n_u8::<4>(l1), hi(6)),
                    ];
                    for (g, v) in v.into_iter().enumerate() {
                        q[4 * j + g][h] = vsubq_s8(vreinterpretq_s8_u8(v), m32);
                    }
                }
            }
            q
        };
        Q6KPrep { q, sc: w.scales.map(|s| s as i32), d: fp16_to_fp32(w.d) }
    }
    #[inline(always)]
    unsafe fn step<const DOT: bool>(sum: f32, p: &Q6KPrep, a: &BlockQ8K) -> f32 {
        let mut isum = 0i32;
        for g in 0..8 {
            // the two 16-value halves of a group have their own scales
            // SAFETY: 16 readable bytes each, inside `qs`; DOT passed on from this function's
            // contract.
            let (s0, s1) = unsafe {
                let (a0, a1) = (vld1q_s8(a.qs.as_ptr().add(32 * g)), vld1q_s8(a.qs.as_ptr().add(32 * g + 16)));
                (vaddvq_s32(dot16::<DOT>(p.q[g][0], a0)), vaddvq_s32(dot16::<DOT>(p.q[g][1], a1)))
            };
            isum += s0 * p.sc[2 * g] + s1 * p.sc[2 * g + 1];
        }
        // sum += d_all * y.d * (isum - 32 * isum_mins): that total is this isum
        (p.d * a.scale()).mul_add(isum as f32, sum)
    }
}

/// Lane sums of 16 byte products (exact).
///
/// # Safety
/// With `DOT`, the CPU must have the dot product extension.
#[inline(always)]
unsafe fn dot16<const DOT: bool>(w: int8x16_t, a: int8x16_t) -> int32x4_t {
    // SAFETY: NEON intrinsics; DOT passed on from this function's contract.
    // (one `sdot`: through block_ints with a zero second pair, the asm `sdot` of the zeros stayed)
    unsafe {
        if DOT {
            sdot(vdupq_n_s32(0), w, a)
        } else {
            dot4_base(w, a)
        }
    }
}

/// Outputs `(r, c)` of weight rows `w[r]` with activation rows `c0 + c`, each in ggml's NEON
/// order (module doc).
///
/// # Safety
/// With `DOT`, the CPU must have the dot product extension. (Shapes are checked.)
#[inline(always)]
pub(crate) unsafe fn k_tile<F: NeonKTile, const DOT: bool, const R: usize, const C: usize>(w: [&[F::W]; R], a: &ActRows<'_, BlockQ8K>, c0: usize) -> [[f32; C]; R] {
    let nb = a.nb;
    assert!(c0 + C <= a.n && w.iter().all(|r| r.len() >= nb) && a.blocks.len() >= a.n * nb);
    let mut out = [[0f32; C]; R];
    if C == 1 {
        // one activation row (decoding): the rows sliced to exactly nb blocks once, so that no
        // index below needs a check
        let w: [&[F::W]; R] = w.map(|r| &r[..nb]);
        let act = &a.blocks[c0 * nb..][..nb];
        for b in 0..nb {
            for r in 0..R {
                // SAFETY: DOT passed on from this function's contract.
                out[r][0] = unsafe { F::step::<DOT>(out[r][0], &F::prep(&w[r][b]), &act[b]) };
            }
        }
        return out;
    }
    for b in 0..nb {
        for r in 0..R {
            let p = F::prep(&w[r][b]);
            for c in 0..C {
                // SAFETY: DOT passed on from this function's contract.
                // (c0 + c) * nb + b < a.n * nb <= a.blocks.len(), asserted above: unchecked, as
                // the phone build's LTO kept the check inside this loop
                out[r][c] = unsafe { F::step::<DOT>(out[r][c], &p, a.blocks.get_unchecked((c0 + c) * nb + b)) };
            }
        }
    }
    out
}
