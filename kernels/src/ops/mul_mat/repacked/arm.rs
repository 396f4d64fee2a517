//! Repacked Q4_0 on aarch64 ([`Repack::Q4_0_4x4`](crate::op::Repack::Q4_0_4x4),
//! [`Repack::Q4_0_4x8`](crate::op::Repack::Q4_0_4x8)): the layouts ggml-cpu's
//! `ggml_repack_get_optimal_repack_type` picks for Q4_0 weights with rows a multiple of 4 on a
//! NEON build with i8mm (`q4_0_4x8`) or with dotprod and without i8mm (`q4_0_4x4`); a build with
//! SVE and i8mm on 256-bit vectors takes `q4_0_8x8` first, which the library declines.
//!
//! `block_q4_0x4` (72 bytes): the four rows' half scales, then their 16 quant bytes each
//! interleaved 4 bytes (`q4_0_4x4`: bytes `16t..16t + 16` hold bytes `4t..4t + 4` of rows 0..4)
//! or 8 bytes at a time (`q4_0_4x8`: bytes `0..8` of rows 0, 1, 2, 3, then bytes `8..16` of each);
//! `make_block_q4_0x4` xors every nibble with 8, so a stored nibble `s` stands for `s` below 8 and
//! `s - 16` above (a byte's low nibble is element `j`, its high nibble element `j + 16`).
//!
//! ggml-cpu's `forward_mul_mat` quantizes each plane's rows in groups of four with the NEON
//! `ggml_quantize_mat_q8_0_4x4` / `_4x8` and the others with the NEON `quantize_row_q8_0`: per
//! row and block the same `vmaxq` tree of magnitudes, `d = amax / 127`, `id = 1 / d`,
//! `vcvtnq(x * id)`, i.e. the same Q8_0 blocks ([`q8_0::quantize_row_at`] on the NEON level).
//! Then the gemm (`ggml_gemm_q4_0_4x4_q8_0`: inline assembly with `sdot` by element;
//! `_4x8`: `smmla`) and the gemv (intrinsics, `sdot`) both form each block's integer dot product
//! times 16 (the nibbles shifted into the bytes' high half), exact, convert it with `scvtf #4`
//! (the exact integer) and take one float step per block and output:
//! `acc = fma(I, d_w * d_a, acc)` (`fmul` of the two scales, one rounded product; `fmla`). So
//! every row has the same steps whichever path ggml gives it, and both layouts the same
//! arithmetic: this module computes it with the lanes across the four weight rows, as ggml's gemv.

use super::b32::{BLOCK_BYTES, QK};
use super::{for_groups, quantize_rows, TILE};
use crate::cpu_features::SimdLevel;
use crate::op::Node;
use crate::pool::Session;
use crate::quant::f16::fp16_to_fp32;
use crate::quant::f16::neon::widen4;
use crate::quant::q8_0::{self, BlockQ8_0};
use std::arch::aarch64::*;

/// Bytes of one `block_q4_0x4`: four blocks.
pub(super) const X4_BYTES: usize = 4 * BLOCK_BYTES;

/// How `make_block_q4_0x4` interleaved the four rows' quant bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Interleave {
    /// `q4_0_4x4`: 4 bytes at a time
    Four,
    /// `q4_0_4x8`: 8 bytes at a time
    Eight,
}

/// `dst = src0 . src1` for a node of one of the two layouts. `false` when a worker panicked.
pub(super) fn compute(s: &Session, n: &Node, il: Interleave) -> bool {
    let (a, b) = (n.src(0), n.src(1));
    let (k, rows, planes) = (a.ne[0], b.ne[1], b.ne[2]);
    let nb = k / QK;
    if rows == 0 || planes == 0 {
        return true;
    }
    // every row by ggml's NEON Q8_0 rule (the 4x4 / 4x8 quantizers and quantize_row_q8_0 agree)
    let mut acts = vec![BlockQ8_0::default(); planes * rows * nb];
    if !quantize_rows(s, &b, &mut acts, nb, |x, _j, out| q8_0::quantize_row_at(SimdLevel::Neon, x, out)) {
        return false;
    }
    let acts = &acts;
    for_groups(s, n, nb * X4_BYTES, |p, j| &acts[(p * rows + j) * nb..(p * rows + j + 1) * nb], |w, tile, out| {
        // SAFETY: `supports` accepted the node only on a CPU with the dot product extension.
        unsafe { group(w, il, tile, out) }
    })
}

/// `r + sum over t of sdot(w[t], a0.4b[t]) + sdot(w[4 + t], a1.4b[t])`: lane `c` gains the dot
/// products of row `c`'s bytes in `w[t]` with the activation bytes `4t..4t + 4` of `a0` (the
/// block's elements 0..16) and of `a1` (16..32).
///
/// # Safety
/// The CPU must have the dot product extension.
#[inline]
#[target_feature(enable = "dotprod")]
unsafe fn sdot8(r: int32x4_t, w: &[int8x16_t; 8], a0: int8x16_t, a1: int8x16_t) -> int32x4_t {
    let mut r = r;
    // SAFETY: register-only instructions; the caller guarantees `sdot` exists.
    unsafe {
        std::arch::asm!(
            "sdot {r:v}.4s, {w0:v}.16b, {a0:v}.4b[0]",
            "sdot {r:v}.4s, {w1:v}.16b, {a0:v}.4b[1]",
            "sdot {r:v}.4s, {w2:v}.16b, {a0:v}.4b[2]",
            "sdot {r:v}.4s, {w3:v}.16b, {a0:v}.4b[3]",
            "sdot {r:v}.4s, {w4:v}.16b, {a1:v}.4b[0]",
            "sdot {r:v}.4s, {w5:v}.16b, {a1:v}.4b[1]",
            "sdot {r:v}.4s, {w6:v}.16b, {a1:v}.4b[2]",
            "sdot {r:v}.4s, {w7:v}.16b, {a1:v}.4b[3]",
            r = inout(vreg) r,
            w0 = in(vreg) w[0], w1 = in(vreg) w[1], w2 = in(vreg) w[2], w3 = in(vreg) w[3],
            w4 = in(vreg) w[4], w5 = in(vreg) w[5], w6 = in(vreg) w[6], w7 = in(vreg) w[7],
            a0 = in(vreg) a0, a1 = in(vreg) a1,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    r
}

/// One group of four weight rows (`w`: its `block_q4_0x4`s) against up to [`TILE`] activation
/// rows; `out[r][c]` for weight row `c`.
///
/// # Safety
/// The CPU must have the dot product extension.
#[target_feature(enable = "dotprod")]
pub(super) unsafe fn group(w: &[u8], il: Interleave, rows: &[&[BlockQ8_0]], out: &mut [[f32; 4]]) {
    let n = rows.len();
    assert!(n <= TILE && out.len() >= n);
    let nb = rows.first().map_or(0, |r| r.len());
    assert!(w.len() >= nb * X4_BYTES && rows.iter().all(|r| r.len() == nb));
    let mut acc = [vdupq_n_f32(0.0); TILE];
    for b in 0..nb {
        let blk = &w[b * X4_BYTES..(b + 1) * X4_BYTES];
        // SAFETY: `blk` is 72 bytes: d[4] (8 bytes), then qs (64).
        let (dw, c) = unsafe {
            let p = blk.as_ptr();
            (widen4(vld1_u16(p as *const u16)), [0, 1, 2, 3].map(|i| vld1q_u8(p.add(8 + 16 * i))))
        };
        // v[t]: lane c holds row c's bytes 4t..4t + 4
        let v = match il {
            Interleave::Four => c,
            Interleave::Eight => {
                // c[0]: rows 0, 1 bytes 0..8; c[1]: rows 2, 3 bytes 0..8; c[2], c[3]: bytes 8..16
                let u = c.map(|x| vreinterpretq_u32_u8(x));
                [vuzp1q_u32(u[0], u[1]), vuzp2q_u32(u[0], u[1]), vuzp1q_u32(u[2], u[3]), vuzp2q_u32(u[2], u[3])].map(|x| vreinterpretq_u8_u32(x))
            }
        };
        // the nibbles in the bytes' high half: 16 times their values (the xor made them signed)
        let m = vdupq_n_u8(0xF0);
        let wv: [int8x16_t; 8] = std::array::from_fn(|i| vreinterpretq_s8_u8(if i < 4 { vshlq_n_u8::<4>(v[i]) } else { vandq_u8(v[i - 4], m) }));
        for (r, blocks) in rows.iter().enumerate() {
            let y = &blocks[b];
            // SAFETY: 32 bytes of quants; dotprod as the caller guarantees.
            let ret = unsafe {
                let q = y.qs.as_ptr();
                sdot8(vdupq_n_s32(0), &wv, vld1q_s8(q), vld1q_s8(q.add(16)))
            };
            // ggml: scvtf #4 (exact), vmulq(d_a, d_w) / fmul by element, fmla
            let i = vcvtq_f32_s32(vshrq_n_s32::<4>(ret));
            acc[r] = vfmaq_f32(acc[r], i, vmulq_n_f32(dw, fp16_to_fp32(y.d)));
        }
    }
    for r in 0..n {
        // SAFETY: out[r] is 4 f32.
        unsafe { vst1q_f32(out[r].as_mut_ptr(), acc[r]) };
    }
}

#[cfg(test)]
mod tests;
