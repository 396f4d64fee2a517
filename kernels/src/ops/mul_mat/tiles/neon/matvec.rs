//! Quantized weight rows against one activation row (decoding), in ggml-cpu's NEON `vec_dot`
//! order (see `quant`): the same per-output arithmetic as
//! [`quant::quant_tile`](super::quant::quant_tile) with `C = 1`, in fewer instructions.
//!
//! A decode product reads every weight block once, so what a block costs beyond its integer
//! dot product is the price of every generated token. The tile kernel spent about 28
//! instructions per block where ggml's own `vec_dot` spends 23 (qemu work counts,
//! `tools/qemu-count`); here a block pair's four halves (scales, and Q4_1's minimums) are
//! widened by one `fcvtl`, all four products with the activation pair's scales and sums come
//! from one multiply, the two block accumulations take their scale straight from a vector lane,
//! and Q4_1's `m0 * s0 + m1 * s1` is one vector FMA on lanes that line up. The activation
//! side of a pair (32 + 32 quants, `[da0, s0, da1, s1]`) is loaded once for four weight rows.

use super::lanes::{block_ints, FUSED_MLA};
use super::quant::NeonTile;
use crate::quant::f16::neon::widen4;
use crate::ops::mul_mat::tiles::acts::ActRows;
use crate::ops::mul_mat::tiles::operands::{DstView, Weights};
#[cfg(doc)]
use crate::ops::mul_mat::tiles::walk::{TileShapes, PANEL_MIN_ACTS};
use std::arch::aarch64::*;

/// Fills `dst` one activation row at a time: four weight rows at a time, then the rest. Decoding
/// (`n == 1`), and NEON's batches of fewer than [`PANEL_MIN_ACTS`] rows: this kernel's
/// 23-odd instructions per block make a pass per activation row cheaper there than a tile walk
/// (whose one-row tiles unpack every block again, [`TileShapes::Few`]) or a panel (whose
/// unpacking is repaid only by larger batches), with no tile code of its own.
///
/// # Safety
/// With `DOT`, the CPU must have the dot product extension.
#[inline(always)]
pub(super) unsafe fn quant_matvec<F: NeonTile, const DOT: bool>(w: &Weights<'_>, a: &ActRows<'_, F::A>, dst: &mut DstView<'_>) {
    let rows = dst.weight_rows();
    let r0 = rows.start;
    let wr = w.block_rows::<F::W>();
    for j in dst.act_rows() {
        let pairs = activation_pairs::<F>(a, j);
        let out = dst.row_mut(j);
        let mut i = rows.start;
        // SAFETY (rows_dot calls): DOT's requirement is this function's; the kernel checks
        // lengths.
        while i + 4 <= rows.end {
            let o = unsafe { rows_dot::<F, DOT, 4>(wr.rows(i), a, j, &pairs) };
            out[i - r0..i - r0 + 4].copy_from_slice(&o);
            i += 4;
        }
        while i < rows.end {
            out[i - r0] = unsafe { rows_dot::<F, DOT, 1>(wr.rows(i), a, j, &pairs) }[0];
            i += 1;
        }
    }
}

/// Per block pair of activation row `j`: `[da0, s0, da1, s1]` (scales and Q8_1 sums as f32), so
/// one multiply with the weight pair's `[dw0, m0, dw1, m1]` gives every product ggml forms.
pub(super) fn activation_pairs<F: NeonTile>(a: &ActRows<'_, F::A>, j: usize) -> Vec<float32x4_t> {
    assert!(j < a.n, "activation row {j} of {}", a.n);
    let n = a.n;
    let s = |b: usize| if F::HAS_MIN { a.s[b * n + j] } else { 0.0 };
    (0..a.nb / 2)
        .map(|p| {
            let (b0, b1) = (2 * p, 2 * p + 1);
            let v = [a.d[b0 * n + j], s(b0), a.d[b1 * n + j], s(b1)];
            // SAFETY: `v` is 4 readable f32.
            unsafe { vld1q_f32(v.as_ptr()) }
        })
        .collect()
}

/// The four halves a block starts with: its scale, then (Q4_1) its minimum. Two lanes of them
/// are used; for the formats without a minimum lane 1 holds quant bits and is ignored.
///
/// # Safety
/// `p` points at a block of at least 8 bytes (every format here) that starts with u16 scale.
#[inline(always)]
unsafe fn head(p: *const u16) -> uint32x2_t {
    // SAFETY: 8 readable bytes by the contract; u16 alignment holds for the blocks' first field.
    unsafe { vreinterpret_u32_u16(vld1_u16(p)) }
}

/// Outputs of `R` weight rows with activation row `j` (`pairs` its [`activation_pairs`]): per
/// output exactly the arithmetic of `quant_tile::<F, DOT, R, 1>`.
///
/// # Safety
/// With `DOT`, the CPU must have the dot product extension. (Lengths are checked.)
#[inline(always)]
pub(super) unsafe fn rows_dot<F: NeonTile, const DOT: bool, const R: usize>(w: [&[F::W]; R], a: &ActRows<'_, F::A>, j: usize, pairs: &[float32x4_t]) -> [f32; R] {
    const { assert!(std::mem::size_of::<F::W>() >= 8) };
    let (nb, n) = (a.nb, a.n);
    assert!(w.iter().all(|r| r.len() >= nb) && j < n && a.blocks.len() >= n * nb && pairs.len() == nb / 2);
    assert!(a.d.len() >= n * nb && (!F::HAS_MIN || a.s.len() >= n * nb));
    const { assert!(R >= 1 && R <= 4) };
    let zero = vdupq_n_f32(0.0);
    // Per row: the pair's first and second blocks' accumulators, and the minimums' sums.
    let mut acc0 = [zero; R];
    let mut acc1 = [zero; R];
    let mut summs = [zero; R];
    let wp = w.map(|r| r.as_ptr());
    // SAFETY: row j's nb blocks are inside `blocks` (asserted above).
    let ap = unsafe { a.blocks.as_ptr().add(j * nb) };
    // The rows written out (`$r` = 0..R, constants) rather than looped over: the phone build's fat
    // LTO re-optimizes this crate's bitcode from before unrolling, and a loop over the rows (or
    // a dynamic index into the per-row arrays) left the accumulators in memory.
    macro_rules! each_row {
        ($r:ident => $body:block) => {{
            { let $r = 0usize; if $r < R $body }
            { let $r = 1usize; if $r < R $body }
            { let $r = 2usize; if $r < R $body }
            { let $r = 3usize; if $r < R $body }
        }};
    }
    for (p, &av) in pairs.iter().enumerate() {
        let b = 2 * p;
        // SAFETY (block reads in this loop): b + 1 < nb, and every row and the activation row
        // hold nb blocks (asserted above).
        let qa = unsafe { [F::acts(&*ap.add(b)), F::acts(&*ap.add(b + 1))] };
        each_row!(r => {
            let (w0, w1) = unsafe { (&*wp[r].add(b), &*wp[r].add(b + 1)) };
            // The integer products before the scales (the same operations): with the scales' loads
            // and products first, both builds spilled more in Q5_0's loop (11 % more instructions).
            // SAFETY: DOT only when the caller guarantees dotprod.
            let (i0, i1) = unsafe { (block_ints::<DOT>(&F::quants(w0), &qa[0]), block_ints::<DOT>(&F::quants(w1), &qa[1])) };
            // [dw0, m0, dw1, m1] and their products with [da0, s0, da1, s1]
            let dm = unsafe { widen4(vreinterpret_u16_u32(vzip1_u32(head(w0 as *const F::W as *const u16), head(w1 as *const F::W as *const u16)))) };
            let scale = vmulq_f32(dm, av);
            acc0[r] = mla_lane::<0>(acc0[r], vcvtq_f32_s32(i0), scale);
            acc1[r] = mla_lane::<2>(acc1[r], vcvtq_f32_s32(i1), scale);
            if F::SPLIT_MIN {
                // lanes 1 and 3: ggml's `summs0 += m0*s0`, `summs1 += m1*s1`, each fused
                summs[r] = vfmaq_f32(summs[r], dm, av);
            } else if F::HAS_MIN {
                // lane 1: m0 * s0 fused onto m1 * s1 (lane 3 of `scale` rotated down), as
                // ggml's `summs += m0*s0 + m1*s1`
                summs[r] = vaddq_f32(summs[r], vfmaq_f32(vextq_f32::<2>(scale, scale), dm, av));
            }
        });
    }
    let mut out = [0f32; R];
    each_row!(r => {
        let mut sumf = vaddvq_f32(acc0[r]) + vaddvq_f32(acc1[r]);
        if F::HAS_MIN {
            sumf += vgetq_lane_f32::<1>(summs[r]);
        }
        if F::SPLIT_MIN {
            sumf += vgetq_lane_f32::<3>(summs[r]);
        }
        out[r] = sumf;
    });
    if nb % 2 == 1 {
        let b = nb - 1;
        let k = b * n + j;
        let sa = if F::HAS_MIN { a.s[k] } else { 0.0 };
        for r in 0..R {
            let (p, dw) = F::prep(&w[r][b]);
            // SAFETY: as above.
            let sumi = vaddvq_s32(unsafe { block_ints::<DOT>(&p, &F::acts(&a.blocks[j * nb + b])) });
            out[r] = F::tail(out[r], sumi, dw, a.d[k], F::min(&w[r][b]), sa);
        }
    }
    out
}

/// `acc + q * s[L]`, fused or not as [`FUSED_MLA`] says (ggml's `vmlaq_n_f32`).
#[inline(always)]
fn mla_lane<const L: i32>(acc: float32x4_t, q: float32x4_t, s: float32x4_t) -> float32x4_t {
    // SAFETY: NEON intrinsics (aarch64 baseline).
    unsafe {
        if FUSED_MLA {
            vfmaq_laneq_f32::<L>(acc, q, s)
        } else {
            vaddq_f32(acc, vmulq_laneq_f32::<L>(q, s))
        }
    }
}
