//! IQ4_NL products (against Q8_0 activations) in ggml-cpu's NEON order.
//!
//! ggml's NEON `vec_dot_iq4_nl_q8_0` looks the nibbles up in the value table (`tbl`), reduces
//! each block to its exact integer dot product (`vaddvq` of `sdot`s) and folds blocks in pairs
//! into one scalar, `sumf += x0.d * y0.d * I0 + x1.d * y1.d * I1`, which clang contracts to
//! `sumf + fma(x0.d * y0.d, I0, (x1.d * y1.d) * I1)`; an odd last block goes through its scalar
//! tail, `sumf += d * I` (one fma). Every revision has this code. Only the totals reach the
//! floats, so `sdot` and the widening fallback give the same bits.

// Register tiles index outputs and unpacked blocks with the same row and column numbers.
#![allow(clippy::needless_range_loop)]

use super::lanes::block_ints;
use crate::ops::mul_mat::tiles::acts::ActRows;
use crate::quant::f16::fp16_to_fp32;
use crate::quant::iq4_nl::{BlockIQ4NL, KVALUES};
use crate::quant::q8_0::BlockQ8_0;
use std::arch::aarch64::*;

/// A weight block's 32 values as signed bytes (elements 0..16, 16..32) and its scale.
#[inline(always)]
fn prep(w: &BlockIQ4NL) -> ([int8x16_t; 2], f32) {
    // SAFETY: NEON intrinsics (aarch64 baseline); the loads read the 16 table and 16 quant bytes.
    let q = unsafe {
        let table = vld1q_s8(KVALUES.as_ptr());
        let qs = vld1q_u8(w.qs.as_ptr());
        [vqtbl1q_s8(table, vandq_u8(qs, vdupq_n_u8(0x0F))), vqtbl1q_s8(table, vshrq_n_u8::<4>(qs))]
    };
    (q, fp16_to_fp32(w.d))
}

/// The exact dot product of a weight block with an activation block.
///
/// # Safety
/// With `DOT`, the CPU must have the dot product extension.
#[inline(always)]
unsafe fn total<const DOT: bool>(q: &[int8x16_t; 2], a: &BlockQ8_0) -> i32 {
    // SAFETY: 32 readable bytes in `qs`; DOT passed on from this function's contract.
    unsafe { vaddvq_s32(block_ints::<DOT>(q, &[vld1q_s8(a.qs.as_ptr()), vld1q_s8(a.qs.as_ptr().add(16))])) }
}

/// Outputs `(r, c)` of weight rows `w[r]` with activation rows `c0 + c`, each in ggml's NEON
/// order (module doc).
///
/// # Safety
/// With `DOT`, the CPU must have the dot product extension. (Shapes are checked.)
#[inline(always)]
pub(crate) unsafe fn iq4nl_tile<const DOT: bool, const R: usize, const C: usize>(w: [&[BlockIQ4NL]; R], a: &ActRows<'_, BlockQ8_0>, c0: usize) -> [[f32; C]; R] {
    let nb = a.nb;
    assert!(c0 + C <= a.n && w.iter().all(|r| r.len() >= nb) && a.blocks.len() >= a.n * nb && a.d.len() >= a.n * nb);
    // (the activation blocks' scales as f32: `a.d`, block-major)
    let mut out = [[0f32; C]; R];
    let mut b = 0;
    while b + 1 < nb {
        for r in 0..R {
            let (p0, p1) = (prep(&w[r][b]), prep(&w[r][b + 1]));
            for c in 0..C {
                let (a0, a1) = (&a.blocks[(c0 + c) * nb + b], &a.blocks[(c0 + c) * nb + b + 1]);
                // SAFETY: DOT passed on from this function's contract.
                let (i0, i1) = unsafe { (total::<DOT>(&p0.0, a0), total::<DOT>(&p1.0, a1)) };
                let (d0, d1) = (p0.1 * a.d[b * a.n + c0 + c], p1.1 * a.d[(b + 1) * a.n + c0 + c]);
                out[r][c] += d0.mul_add(i0 as f32, d1 * i1 as f32);
            }
        }
        b += 2;
    }
    if b < nb {
        for r in 0..R {
            let p = prep(&w[r][b]);
            for c in 0..C {
                let ab = &a.blocks[(c0 + c) * nb + b];
                // SAFETY: DOT passed on from this function's contract.
                let i = unsafe { total::<DOT>(&p.0, ab) };
                out[r][c] = (a.d[b * a.n + c0 + c] * p.1).mul_add(i as f32, out[r][c]);
            }
        }
    }
    out
}
