//! ggml-cpu's repacked 32-value formats on aarch64: Q4_0 ([`Repack::Q4_0_4x4`],
//! [`Repack::Q4_0_4x8`]), IQ4_NL ([`Repack::IQ4NLx4`]) and Q8_0 ([`Repack::Q8_0_4x4`],
//! [`Repack::Q8_0_4x8`]): the layouts `ggml_repack_get_optimal_repack_type` picks for weights with
//! rows a multiple of 4 on a NEON build with i8mm (`*_4x8`) or with dotprod (`*_4x4`; IQ4_NL has
//! only this one); a build with SVE takes SVE paths first in places (Q4_0's `8x8` with i8mm on
//! 256-bit vectors, Q8_0's 4x8 gemm), so the library declines SVE builds.
//!
//! `block_q4_0x4` / `block_iq4_nlx4` (72 bytes): the four rows' half scales, then their 16 quant
//! bytes each interleaved 4 bytes (`4x4`: bytes `16t..16t + 16` hold bytes `4t..4t + 4` of rows
//! 0..4) or 8 bytes at a time (`4x8`: bytes `0..8` of rows 0, 1, 2, 3, then bytes `8..16` of
//! each); `make_block_q4_0x4` xors Q4_0's nibbles with 8, so a stored nibble `s` stands for `s`
//! below 8 and `s - 16` above, IQ4_NL keeps its table indices (a byte's low nibble is element `j`,
//! its high nibble element `j + 16`). `block_q8_0x4` (136 bytes): the scales, then the 32 quants
//! of each row interleaved the same way.
//!
//! ggml-cpu's `forward_mul_mat` quantizes each plane's rows in groups of four with the NEON
//! `ggml_quantize_mat_q8_0_4x4` / `_4x8` and the others with the NEON `quantize_row_q8_0`: per
//! row and block the same `vmaxq` tree of magnitudes, `d = amax / 127`, `id = 1 / d`,
//! `vcvtnq(x * id)`, i.e. the same Q8_0 blocks ([`q8_0::quantize_row_at`] on the NEON level).
//! Then its gemms and gemvs (Q4_0: inline assembly, `sdot` by element for 4x4 and `smmla` for
//! 4x8, the gemv `sdot`, all on the nibbles shifted into the bytes' high half, then `scvtf #4`;
//! IQ4_NL: `vqtbl1q` of the table, `sdot` by element; Q8_0: `sdot` / `smmla` on the bytes) form
//! each block's exact integer dot product and take one float step per block and output:
//! `acc = fma(I, d_w * d_a, acc)` (one rounded product of the two scales; `vfmaq_f32`, `fmla`,
//! or `vmlaq_f32`, which clang contracts to `fmla`). So every row has the same steps whichever path
//! ggml gives it, and every layout the same arithmetic: this module computes it with the lanes
//! across the four weight rows, as ggml's gemv.

pub(super) mod q4k;

use super::b32::{BLOCK_BYTES, QK};
use super::{for_group_runs, for_groups, quantize_rows, TILE};
use crate::cpu_features::SimdLevel;
use crate::op::Node;
use crate::pool::Session;
use crate::quant::f16::fp16_to_fp32;
use crate::quant::f16::neon::widen4;
use crate::quant::q8_0::{self, BlockQ8_0};
use std::arch::aarch64::*;

/// Bytes of one `block_q4_0x4` / `block_iq4_nlx4`: four blocks.
pub(super) const X4_BYTES: usize = 4 * BLOCK_BYTES;
/// Bytes of one plain `block_q8_0`.
pub(super) const Q8_0_BYTES: usize = 34;

/// What a group's quant bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Quants {
    /// Q4_0's nibbles, xor 8
    Q4_0,
    /// IQ4_NL's table indices
    IQ4NL,
    /// Q8_0's bytes
    Q8_0,
}

impl Quants {
    /// Bytes of one interleaved block of four rows.
    pub(super) fn x4_bytes(self) -> usize {
        match self {
            Quants::Q4_0 | Quants::IQ4NL => X4_BYTES,
            Quants::Q8_0 => 4 * Q8_0_BYTES,
        }
    }
}

/// How `make_block_q4_0x4` interleaved the four rows' quant bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Interleave {
    /// `q4_0_4x4`: 4 bytes at a time
    Four,
    /// `q4_0_4x8`: 8 bytes at a time
    Eight,
}

/// `dst = src0 . src1` for a node of one of the layouts. `false` when a worker panicked.
pub(super) fn compute(s: &Session, n: &Node, q: Quants, il: Interleave) -> bool {
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
    if rows == 1 {
        return for_group_runs::<4>(s, n, nb * q.x4_bytes(), |p, w, out| {
            // SAFETY: as below.
            unsafe { gemv(w, q, il, &acts[p * nb..(p + 1) * nb], out) }
        });
    }
    for_groups(s, n, nb * q.x4_bytes(), |p, j| &acts[(p * rows + j) * nb..(p * rows + j + 1) * nb], |w, tile, out| {
        // SAFETY: `supports` accepted the node only on a CPU with the dot product extension.
        unsafe { group(w, q, il, tile, out) }
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

/// One activation row `y` against a run of groups of four weight rows (`w`: whole groups of
/// `y.len()` interleaved blocks each), `out[4g + c]` for row `c` of group `g`: ggml's gemv lane
/// plans, each block's 128 or 64 quant bytes read once and used in place. [`group`] unpacks a
/// block's interleaved bytes into one lane per row first (the `uzp`s of the 8-byte layouts), an
/// unpacking that pays for itself only over several activation rows; this path's integers are
/// the same exact sums and its float step the same `fma(I, d_w * d_a, acc)` per block.
///
/// # Safety
/// The CPU must have the dot product extension.
#[target_feature(enable = "dotprod")]
pub(super) unsafe fn gemv(w: &[u8], q: Quants, il: Interleave, y: &[BlockQ8_0], out: &mut [f32]) {
    let nb = y.len();
    let bytes = q.x4_bytes();
    let groups = out.len() / 4;
    assert!(out.len() == 4 * groups && w.len() >= groups * nb * bytes);
    // SAFETY: dotprod as the caller guarantees; every read below is inside `w` (checked above:
    // block `b` of group `g` is `bytes` long at `(g * nb + b) * bytes`) or inside a `y` block.
    unsafe {
        let halves = |y: &BlockQ8_0| (vld1q_s8(y.qs.as_ptr()), vld1q_s8(y.qs.as_ptr().add(16)));
        match (q, il) {
            (Quants::Q8_0, Interleave::Eight) => gemv_with(w, bytes, y, out, dup8, |p, a| q8_0_x8(p, a)),
            (Quants::Q4_0, Interleave::Eight) => gemv_with(w, bytes, y, out, dup8, |p, a| vshrq_n_s32::<4>(q4_0_x8(p, a))),
            (Quants::Q8_0, Interleave::Four) => gemv_with(w, bytes, y, out, halves, |p, &(a0, a1)| {
                let c = [0, 1, 2, 3, 4, 5, 6, 7].map(|i| vld1q_s8(p.add(16 * i) as *const i8));
                sdot8(vdupq_n_s32(0), &c, a0, a1)
            }),
            (Quants::Q4_0, Interleave::Four) => {
                let mhi = vdupq_n_u8(0xF0);
                gemv_with(w, bytes, y, out, halves, |p, &(a0, a1)| {
                    let c = [0, 1, 2, 3].map(|i| vld1q_u8(p.add(16 * i)));
                    let wv = [vshlq_n_u8::<4>(c[0]), vshlq_n_u8::<4>(c[1]), vshlq_n_u8::<4>(c[2]), vshlq_n_u8::<4>(c[3]), vandq_u8(c[0], mhi), vandq_u8(c[1], mhi), vandq_u8(c[2], mhi), vandq_u8(c[3], mhi)];
                    vshrq_n_s32::<4>(sdot8(vdupq_n_s32(0), &wv.map(|x| vreinterpretq_s8_u8(x)), a0, a1))
                })
            }
            (Quants::IQ4NL, _) => {
                let kv = vld1q_s8(crate::quant::iq4_nl::KVALUES.as_ptr());
                let m4 = vdupq_n_u8(0x0F);
                assert!(il == Interleave::Four, "IQ4_NL has only the 4x4 layout");
                gemv_with(w, bytes, y, out, halves, |p, &(a0, a1)| {
                    let c = [0, 1, 2, 3].map(|i| vld1q_u8(p.add(16 * i)));
                    let lo = [vandq_u8(c[0], m4), vandq_u8(c[1], m4), vandq_u8(c[2], m4), vandq_u8(c[3], m4)];
                    let hi = [vshrq_n_u8::<4>(c[0]), vshrq_n_u8::<4>(c[1]), vshrq_n_u8::<4>(c[2]), vshrq_n_u8::<4>(c[3])];
                    let wv = [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]].map(|x| vqtbl1q_s8(kv, x));
                    sdot8(vdupq_n_s32(0), &wv, a0, a1)
                })
            }
        }
    }
}

/// The loop of [`gemv`], two groups at a time (each activation block's vectors and scale loaded
/// once for both): per group and block `acc = fma(dot(block, a), d_w * d_a, acc)`, where `a` is
/// `load(y_b)` and `dot` gives the four rows' exact integer sums, lanes by row.
///
/// # Safety
/// As [`gemv`], whose checks it relies on; `dot` reads only its block.
#[inline(always)]
unsafe fn gemv_with<A>(w: &[u8], bytes: usize, y: &[BlockQ8_0], out: &mut [f32], load: impl Fn(&BlockQ8_0) -> A, dot: impl Fn(*const u8, &A) -> int32x4_t) {
    let run = y.len() * bytes;
    let step = |acc: float32x4_t, p: *const u8, a: &A, da: f32| {
        // SAFETY: the block's 4 half scales, then its quants (the caller's checks).
        let dw = widen4(unsafe { vld1_u16(p.sub(8) as *const u16) });
        vfmaq_f32(acc, vcvtq_f32_s32(dot(p, a)), vmulq_n_f32(dw, da))
    };
    let mut pairs = out.chunks_exact_mut(8);
    // (pointers at the blocks' quants, their scales 8 bytes before: the quants' loads then pair
    // into `ldp`s)
    // SAFETY: inside the run (or one past its end when it is empty).
    let mut g0 = unsafe { w.as_ptr().add(8.min(w.len())) };
    for o in &mut pairs {
        let (mut acc0, mut acc1) = (vdupq_n_f32(0.0), vdupq_n_f32(0.0));
        let mut p = g0;
        for yb in y {
            let (a, da) = (load(yb), fp16_to_fp32(yb.d));
            acc0 = step(acc0, p, &a, da);
            // SAFETY: the next group's block `b` (both groups are in the run).
            acc1 = step(acc1, unsafe { p.add(run) }, &a, da);
            // SAFETY: at most one past the group's last block.
            p = unsafe { p.add(bytes) };
        }
        // SAFETY: `o` is 8 f32; the run's next pair starts two groups on.
        unsafe {
            vst1q_f32(o.as_mut_ptr(), acc0);
            vst1q_f32(o.as_mut_ptr().add(4), acc1);
            g0 = g0.add(2 * run);
        }
    }
    let o = pairs.into_remainder();
    if o.len() == 4 {
        let mut acc = vdupq_n_f32(0.0);
        let mut p = g0;
        for yb in y {
            acc = step(acc, p, &load(yb), fp16_to_fp32(yb.d));
            // SAFETY: as above.
            p = unsafe { p.add(bytes) };
        }
        // SAFETY: `o` is 4 f32.
        unsafe { vst1q_f32(o.as_mut_ptr(), acc) };
    }
}

/// An activation block's 8-byte quarters, each duplicated into both halves of a vector (what
/// the 8-byte layouts' `sdot`s pair with two rows' 8 bytes).
#[inline(always)]
fn dup8(y: &BlockQ8_0) -> [int8x16_t; 4] {
    // SAFETY: 8-byte reads inside y's 32 quants; NEON is in every aarch64 target.
    unsafe { [0, 1, 2, 3].map(|j| vreinterpretq_s8_s64(vld1q_dup_s64(y.qs.as_ptr().add(8 * j) as *const i64))) }
}

/// Rows `2h, 2h + 1` of a `q8_0_4x8` block (`p`: its start) against an activation block's [`dup8`]: ggml's gemv plan, each
/// 16-byte vector (8 bytes of two rows) `sdot` with the activation's 8 matching bytes twice; the
/// two halves' lanes added in pairs give rows 0..4.
///
/// # Safety
/// dotprod; `p` points at a whole block's quants.
#[inline]
#[target_feature(enable = "dotprod")]
unsafe fn q8_0_x8(p: *const u8, a: &[int8x16_t; 4]) -> int32x4_t {
    // SAFETY: the block's 128 quant bytes, two 64-byte loads.
    unsafe {
        let (x, y) = (vld1q_s8_x4(p as *const i8), vld1q_s8_x4(p.add(64) as *const i8));
        let c = [x.0, x.1, x.2, x.3, y.0, y.1, y.2, y.3];
        let zero = vdupq_n_s32(0);
        let r0 = q4k::sdot4(zero, &[c[0], c[2], c[4], c[6]], a);
        let r1 = q4k::sdot4(zero, &[c[1], c[3], c[5], c[7]], a);
        vpaddq_s32(r0, r1)
    }
}

/// [`q8_0_x8`] for a `q4_0_4x8` block: a 16-byte vector's nibbles shifted into the bytes' high
/// half (16 times the values) pair with the activation bytes of the same 8 positions (low
/// nibbles) or those 16 further on (high nibbles); 16 times the rows' sums.
///
/// # Safety
/// dotprod; `p` points at a whole block's quants.
#[inline]
#[target_feature(enable = "dotprod")]
unsafe fn q4_0_x8(p: *const u8, a: &[int8x16_t; 4]) -> int32x4_t {
    // SAFETY: the block's 64 quant bytes, one load.
    unsafe {
        let x = vld1q_u8_x4(p);
        let c = [x.0, x.1, x.2, x.3];
        let lo = |x: uint8x16_t| vreinterpretq_s8_u8(vshlq_n_u8::<4>(x));
        let hi = |x: uint8x16_t| vreinterpretq_s8_u8(vandq_u8(x, vdupq_n_u8(0xF0)));
        let zero = vdupq_n_s32(0);
        let r0 = q4k::sdot4(zero, &[lo(c[0]), lo(c[2]), hi(c[0]), hi(c[2])], a);
        let r1 = q4k::sdot4(zero, &[lo(c[1]), lo(c[3]), hi(c[1]), hi(c[3])], a);
        vpaddq_s32(r0, r1)
    }
}

/// One group of four weight rows (`w`: its interleaved blocks of quants `q`) against up to
/// [`TILE`] activation rows; `out[r][c]` for weight row `c`.
///
/// # Safety
/// The CPU must have the dot product extension.
#[target_feature(enable = "dotprod")]
pub(super) unsafe fn group(w: &[u8], q: Quants, il: Interleave, rows: &[&[BlockQ8_0]], out: &mut [[f32; 4]]) {
    let n = rows.len();
    assert!(n <= TILE && out.len() >= n);
    let nb = rows.first().map_or(0, |r| r.len());
    let bytes = q.x4_bytes();
    assert!(w.len() >= nb * bytes && rows.iter().all(|r| r.len() == nb));
    // 16-byte vectors of quants per block: 4 of nibbles, 8 of Q8_0 bytes
    let chunks = (bytes - 8) / 16;
    // SAFETY: 16 bytes read from a 16-byte array.
    let kv = unsafe { vld1q_s8(crate::quant::iq4_nl::KVALUES.as_ptr()) };
    let (m4, mhi) = (vdupq_n_u8(0x0F), vdupq_n_u8(0xF0));
    let mut acc = [vdupq_n_f32(0.0); TILE];
    for b in 0..nb {
        let blk = &w[b * bytes..(b + 1) * bytes];
        // SAFETY: `blk` is `bytes` long: d[4] (8 bytes), then `chunks` vectors of quants.
        let (dw, c) = unsafe {
            let p = blk.as_ptr();
            (widen4(vld1_u16(p as *const u16)), std::array::from_fn::<_, 8, _>(|i| if i < chunks { vld1q_u8(p.add(8 + 16 * i)) } else { vdupq_n_u8(0) }))
        };
        // v[t]: lane c holds row c's bytes 4t..4t + 4
        let v = match il {
            Interleave::Four => c,
            Interleave::Eight => {
                // c[2j]: rows 0, 1 bytes 8j..8j + 8; c[2j + 1]: rows 2, 3
                let u = c.map(|x| vreinterpretq_u32_u8(x));
                std::array::from_fn(|t| vreinterpretq_u8_u32(if t % 2 == 0 { vuzp1q_u32(u[t & !1], u[t | 1]) } else { vuzp2q_u32(u[t & !1], u[t | 1]) }))
            }
        };
        // wv[t] (t < 4) pairs with elements 4t..4t + 4, wv[4 + t] with 16 + 4t..16 + 4t + 4
        let wv: [int8x16_t; 8] = match q {
            // the nibbles in the bytes' high half: 16 times their values (the xor made them signed)
            Quants::Q4_0 => std::array::from_fn(|i| vreinterpretq_s8_u8(if i < 4 { vshlq_n_u8::<4>(v[i]) } else { vandq_u8(v[i - 4], mhi) })),
            Quants::IQ4NL => std::array::from_fn(|i| vqtbl1q_s8(kv, if i < 4 { vandq_u8(v[i], m4) } else { vshrq_n_u8::<4>(v[i - 4]) })),
            Quants::Q8_0 => v.map(|x| vreinterpretq_s8_u8(x)),
        };
        for (r, blocks) in rows.iter().enumerate() {
            let y = &blocks[b];
            // SAFETY: 32 bytes of quants; dotprod as the caller guarantees.
            let ret = unsafe {
                let a = y.qs.as_ptr();
                sdot8(vdupq_n_s32(0), &wv, vld1q_s8(a), vld1q_s8(a.add(16)))
            };
            // Q4_0: ggml's scvtf #4 (exact); then vmulq(d_a, d_w) / fmul by element, one FMA
            let i = vcvtq_f32_s32(if q == Quants::Q4_0 { vshrq_n_s32::<4>(ret) } else { ret });
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
