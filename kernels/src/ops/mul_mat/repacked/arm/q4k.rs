//! ggml-cpu's repacked Q4_K on aarch64: with i8mm `q4_K_8x8` ([`Repack::Q4K8x8`]:
//! `block_q4_Kx8`, the bytes x86's `q4_K_8x8` has: eight rows, quant bytes interleaved 8 at a
//! time, each sub-block's 6-bit scales and minimums regrouped 12 bytes per sub-block for the eight
//! rows), with dotprod alone `q4_K_8x4` ([`Repack::Q4K8x4`]: the same struct, quant bytes
//! interleaved 4 at a time). Both have another arithmetic than x86's, so kernels of their own.
//!
//! `forward_mul_mat` quantizes each plane's rows in groups of four with ggml's *generic*
//! `ggml_quantize_mat_q8_K_4x8` / `_4x4` (ARM has no NEON ones; the two differ only in how they
//! interleave the same quants): per super-block the first largest
//! magnitude in element order (`amax < |x|`, strict), `iscale = -127 / max` (the signed value
//! found), `d = 1 / iscale`, quants `nearest_int(x * iscale)` (the `+ 12582912` trick: round
//! half to even). The other rows are quantized by the host's `quantize_row_q8_K`.
//!
//! The integer sums are exact in any grouping (each sub-block's quant dot times its 6-bit scale;
//! the activation sub-block sums times the minimums, the "bias"); the float steps per output
//! and super-block, with `s = d_w * d_a` and `m = dmin_w * d_a` (one rounded product each):
//! - `ggml_gemm_q4_K_8x8_q8_K` (i8mm, the groups of four): `acc = acc - bias * m`, then
//!   `acc = acc + I * s` over the whole super-block's integer `I` (`vmlsq_f32` / `vmlaq_f32`,
//!   which clang contracts into `fmls` / `fmla`: two fused steps);
//! - `ggml_gemv_q4_K_8x8_q8_K` (dotprod, the rest): per sub-block `acc = fma(s, sc * I_sb, acc)`
//!   (eight fused steps), then `acc = acc - bias * m` (fused);
//! - `ggml_gemm_q4_K_8x4_q8_K` and `ggml_gemv_q4_K_8x4_q8_K` (dotprod) alike: per pair of
//!   sub-blocks `acc = fma(s, sc_lo * I_lo + sc_hi * I_hi, acc)` (four fused steps), then
//!   `acc = acc - bias * m` (fused).
//!
//! The kernels follow ggml's gemv lane plans for the integers (8x8: `sdot` of a column pair's 16
//! bytes against 8 activation bytes duplicated, the pairs added; 8x4: `sdot` by element, a lane
//! per column), with the lanes across the eight weight rows, the weights' nibbles unpacked once
//! per super-block for a whole tile of activation rows.

use crate::op::Repack;

use super::super::{ActBlock, Q4KX8_BYTES, TILE};
use super::sdot8;
use crate::quant::f16::neon::widen4;
use crate::quant::q8_k::QK_K;
use std::arch::aarch64::*;

/// ggml's `nearest_int`: `x + 1.5 * 2^23` read as bits rounds `x` half to even (|x| < 2^22).
#[inline(always)]
fn nearest_int(x: f32) -> i32 {
    ((x + 12582912.0).to_bits() & 0x007f_ffff) as i32 - 0x0040_0000
}

/// One row of ggml's generic `ggml_quantize_mat_q8_K_4x8` / `_4x4` (its four rows never mix), with the
/// 32-value sub-block sums its `bsums` give once added in pairs.
pub(crate) fn quantize_row_4x8(x: &[f32], out: &mut [ActBlock]) {
    assert_eq!(x.len(), out.len() * QK_K, "quantize_row_4x8: length mismatch");
    for (xb, o) in x.chunks_exact(QK_K).zip(out.iter_mut()) {
        let (mut amax, mut max) = (0f32, 0f32);
        for &v in xb {
            if amax < v.abs() {
                amax = v.abs();
                max = v;
            }
        }
        let iscale = if amax != 0.0 { -127.0 / max } else { 0.0 };
        o.d = if amax != 0.0 { 1.0 / iscale } else { 0.0 };
        for (q, &v) in o.qs.iter_mut().zip(xb) {
            // (int8_t) of the int: the low byte
            *q = nearest_int(v * iscale) as i8;
        }
        for (s, g) in o.sums.iter_mut().zip(o.qs.chunks_exact(32)) {
            *s = g.iter().map(|&q| q as i16).sum();
        }
    }
}

/// Eight rows' 6-bit scales and minimums of one sub-block from its 12 regrouped bytes (ggml's
/// `decode_q_Kx8_6bit_scales`), lanes 0..4 and 4..8 of each.
#[inline(always)]
fn decode_scales(b: &[u8]) -> ([int32x4_t; 2], [int32x4_t; 2]) {
    let w = |i: usize| u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
    let sm = [w(0), w(1), w(2)];
    let (k1, k2, k3) = (0x3f3f_3f3fu32, 0x0f0f_0f0fu32, 0x0303_0303u32);
    let mins = [sm[1] & k1, ((sm[2] >> 4) & k2) | (((sm[1] >> 6) & k3) << 4)];
    let scales = [sm[0] & k1, (sm[2] & k2) | (((sm[0] >> 6) & k3) << 4)];
    // (no closures here nor below: in a `target_feature` function LLVM leaves the array
    // combinators' closures as calls, a few hundred instructions per super-block)
    (lanes2(scales), lanes2(mins))
}

/// The four bytes of `v[0]` and of `v[1]`, widened to i32 lanes.
#[inline(always)]
fn lanes2(v: [u32; 2]) -> [int32x4_t; 2] {
    // SAFETY: register-only NEON instructions (NEON is in every aarch64 target).
    unsafe {
        let w = vmovl_u8(vcreate_u8(v[0] as u64 | (v[1] as u64) << 32));
        [vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(w))), vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(w)))]
    }
}

/// The eight rows' `d` and `dmin` of a `block_q4_Kx8`, as f32 (lanes 0..4 and 4..8).
#[inline(always)]
fn block_d(blk: &[u8]) -> ([float32x4_t; 2], [float32x4_t; 2]) {
    assert!(blk.len() >= 128);
    // SAFETY: `blk` is a block_q4_Kx8 (checked long enough): d[8], dmin[8] (halves), scales[96], qs[1024].
    unsafe {
        let p = blk.as_ptr() as *const u16;
        ([widen4(vld1_u16(p)), widen4(vld1_u16(p.add(4)))], [widen4(vld1_u16(p.add(8))), widen4(vld1_u16(p.add(12)))])
    }
}

/// One `block_q4_Kx8`'s header, as both layouts' kernels read it: the eight rows' `d` and `dmin`
/// as f32 (lanes 0..4 and 4..8), and per pair of sub-blocks the (scales, mins) of its low (0) and
/// high (1) sub-block.
#[inline(always)]
#[allow(clippy::type_complexity)]
fn block_header(blk: &[u8]) -> ([float32x4_t; 2], [float32x4_t; 2], [[([int32x4_t; 2], [int32x4_t; 2]); 2]; 4]) {
    let (dw, dm) = block_d(blk);
    // SAFETY: a register-only NEON instruction.
    let z = unsafe { vdupq_n_s32(0) };
    let mut sc = [[([z; 2], [z; 2]); 2]; 4];
    for (sb, pair) in sc.iter_mut().enumerate() {
        for (i, x) in pair.iter_mut().enumerate() {
            *x = decode_scales(&blk[32 + 24 * sb + 12 * i..32 + 24 * sb + 12 * i + 12]);
        }
    }
    (dw, dm, sc)
}

/// `r + sdot(w[0], a[0]) + ... + sdot(w[3], a[3])` (whole-vector `sdot`s).
///
/// # Safety
/// The CPU must have the dot product extension.
#[inline]
#[target_feature(enable = "dotprod")]
pub(super) unsafe fn sdot4(r: int32x4_t, w: &[int8x16_t], a: &[int8x16_t]) -> int32x4_t {
    let mut r = r;
    // SAFETY: register-only instructions; the caller guarantees `sdot` exists.
    unsafe {
        std::arch::asm!(
            "sdot {r:v}.4s, {w0:v}.16b, {a0:v}.16b",
            "sdot {r:v}.4s, {w1:v}.16b, {a1:v}.16b",
            "sdot {r:v}.4s, {w2:v}.16b, {a2:v}.16b",
            "sdot {r:v}.4s, {w3:v}.16b, {a3:v}.16b",
            r = inout(vreg) r,
            w0 = in(vreg) w[0], w1 = in(vreg) w[1], w2 = in(vreg) w[2], w3 = in(vreg) w[3],
            a0 = in(vreg) a[0], a1 = in(vreg) a[1], a2 = in(vreg) a[2], a3 = in(vreg) a[3],
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    r
}

/// One group of eight weight rows (`w`: its `block_q4_Kx8`s) against up to [`TILE`] activation
/// rows, each with its path (`true`: the gemm's float steps, else the gemv's); `out[r][c]` for
/// weight row `c`.
///
/// # Safety
/// The CPU must have the dot product extension.
#[target_feature(enable = "dotprod")]
pub(in super::super) unsafe fn group(w: &[u8], rows: &[(&[ActBlock], bool)], out: &mut [[f32; 8]]) {
    let n = rows.len();
    assert!(n <= TILE && out.len() >= n);
    let nb = rows.first().map_or(0, |r| r.0.len());
    assert!(w.len() >= nb * Q4KX8_BYTES && rows.iter().all(|r| r.0.len() == nb));
    let zero = vdupq_n_s32(0);
    let m4 = vdupq_n_u8(0x0F);
    let mut acc = [[vdupq_n_f32(0.0); 2]; TILE];
    // per 64-value pair of sub-blocks: column pair cp's low nibbles of chunks 0..4 at 8cp..8cp + 4,
    // its high nibbles at 8cp + 4..8cp + 8
    let mut wv = [[vdupq_n_s8(0); 32]; 4];
    for b in 0..nb {
        let blk = &w[b * Q4KX8_BYTES..(b + 1) * Q4KX8_BYTES];
        let (dw, dm, sc) = block_header(blk);
        for (sb, v) in wv.iter_mut().enumerate() {
            for cp in 0..4 {
                for k in 0..4 {
                    // SAFETY: 16 bytes inside qs (offset 128 + 256 sb + 16 cp + 64 k + 16 <= 1152).
                    let q = unsafe { vld1q_u8(blk.as_ptr().add(128 + 256 * sb + 16 * cp + 64 * k)) };
                    v[8 * cp + k] = vreinterpretq_s8_u8(vandq_u8(q, m4));
                    v[8 * cp + 4 + k] = vreinterpretq_s8_u8(vshrq_n_u8::<4>(q));
                }
            }
        }
        for (r, &(blocks, gemm)) in rows.iter().enumerate() {
            let y = &blocks[b];
            let da = vdupq_n_f32(y.d);
            let s = [vmulq_f32(dw[0], da), vmulq_f32(dw[1], da)];
            let m = [vmulq_f32(dm[0], da), vmulq_f32(dm[1], da)];
            let (mut isum, mut bias) = ([zero; 2], [zero; 2]);
            let a = &mut acc[r];
            for sb in 0..4 {
                let mut q8 = [vdupq_n_s8(0); 8];
                for (i, x) in q8.iter_mut().enumerate() {
                    // SAFETY: 8-byte reads inside the 256 quants (sb * 64 + 8 i + 8 <= 256).
                    *x = unsafe { vreinterpretq_s8_s64(vld1q_dup_s64(y.qs.as_ptr().add(64 * sb + 8 * i) as *const i64)) };
                }
                let v = &wv[sb];
                let (mut lo, mut hi) = ([zero; 4], [zero; 4]);
                for cp in 0..4 {
                    // SAFETY: dotprod as the caller guarantees.
                    unsafe {
                        lo[cp] = sdot4(zero, &v[8 * cp..8 * cp + 4], &q8[..4]);
                        hi[cp] = sdot4(zero, &v[8 * cp + 4..8 * cp + 8], &q8[4..]);
                    }
                }
                // lanes: columns 0..4, 4..8
                let il = [vpaddq_s32(lo[0], lo[1]), vpaddq_s32(lo[2], lo[3])];
                let ih = [vpaddq_s32(hi[0], hi[1]), vpaddq_s32(hi[2], hi[3])];
                let (bl, bh) = (vdupq_n_s32(y.sums[2 * sb] as i32), vdupq_n_s32(y.sums[2 * sb + 1] as i32));
                let ((scl, mnl), (sch, mnh)) = (sc[sb][0], sc[sb][1]);
                for h in 0..2 {
                    bias[h] = vmlaq_s32(vmlaq_s32(bias[h], bl, mnl[h]), bh, mnh[h]);
                    if gemm {
                        isum[h] = vmlaq_s32(vmlaq_s32(isum[h], il[h], scl[h]), ih[h], sch[h]);
                    } else {
                        a[h] = vfmaq_f32(a[h], s[h], vcvtq_f32_s32(vmulq_s32(scl[h], il[h])));
                        a[h] = vfmaq_f32(a[h], s[h], vcvtq_f32_s32(vmulq_s32(sch[h], ih[h])));
                    }
                }
            }
            for h in 0..2 {
                a[h] = vfmsq_f32(a[h], vcvtq_f32_s32(bias[h]), m[h]);
                if gemm {
                    a[h] = vfmaq_f32(a[h], vcvtq_f32_s32(isum[h]), s[h]);
                }
            }
        }
    }
    for r in 0..n {
        // SAFETY: out[r] is 8 f32.
        unsafe {
            vst1q_f32(out[r].as_mut_ptr(), acc[r][0]);
            vst1q_f32(out[r].as_mut_ptr().add(4), acc[r][1]);
        }
    }
}

/// One group of eight weight rows in `q4_K_8x4` (`w`: its `block_q4_Kx8`s) against up to
/// [`TILE`] activation rows (both paths take the same float steps); `out[r][c]` for weight row `c`.
///
/// # Safety
/// The CPU must have the dot product extension.
#[target_feature(enable = "dotprod")]
pub(in super::super) unsafe fn group_8x4(w: &[u8], rows: &[(&[ActBlock], bool)], out: &mut [[f32; 8]]) {
    let n = rows.len();
    assert!(n <= TILE && out.len() >= n);
    let nb = rows.first().map_or(0, |r| r.0.len());
    assert!(w.len() >= nb * Q4KX8_BYTES && rows.iter().all(|r| r.0.len() == nb));
    let zero = vdupq_n_s32(0);
    let m4 = vdupq_n_u8(0x0F);
    let mut acc = [[vdupq_n_f32(0.0); 2]; TILE];
    // per pair of sub-blocks and half h (columns 4h..4h + 4): [low nibbles, high nibbles] of the
    // 4-byte chunks 0..8 (elements 4k..4k + 4 of each sub-block)
    let mut wv = [[[[vdupq_n_s8(0); 8]; 2]; 2]; 4];
    for b in 0..nb {
        let blk = &w[b * Q4KX8_BYTES..(b + 1) * Q4KX8_BYTES];
        let (dw, dm, sc) = block_header(blk);
        for (sb, v) in wv.iter_mut().enumerate() {
            for h in 0..2 {
                for k in 0..8 {
                    // SAFETY: 16 bytes inside qs (offset 128 + 256 sb + 32 k + 16 h + 16 <= 1152).
                    let q = unsafe { vld1q_u8(blk.as_ptr().add(128 + 256 * sb + 32 * k + 16 * h)) };
                    v[h][0][k] = vreinterpretq_s8_u8(vandq_u8(q, m4));
                    v[h][1][k] = vreinterpretq_s8_u8(vshrq_n_u8::<4>(q));
                }
            }
        }
        for (r, &(blocks, _)) in rows.iter().enumerate() {
            let y = &blocks[b];
            let da = vdupq_n_f32(y.d);
            let s = [vmulq_f32(dw[0], da), vmulq_f32(dw[1], da)];
            let m = [vmulq_f32(dm[0], da), vmulq_f32(dm[1], da)];
            let mut bias = [zero; 2];
            let a = &mut acc[r];
            for sb in 0..4 {
                // SAFETY: 16-byte reads inside the 256 quants.
                let q8: [int8x16_t; 4] = std::array::from_fn(|i| unsafe { vld1q_s8(y.qs.as_ptr().add(64 * sb + 16 * i)) });
                let (bl, bh) = (vdupq_n_s32(y.sums[2 * sb] as i32), vdupq_n_s32(y.sums[2 * sb + 1] as i32));
                let ((scl, mnl), (sch, mnh)) = (sc[sb][0], sc[sb][1]);
                for h in 0..2 {
                    // SAFETY: dotprod as the caller guarantees.
                    let (il, ih) = unsafe { (sdot8(zero, &wv[sb][h][0], q8[0], q8[1]), sdot8(zero, &wv[sb][h][1], q8[2], q8[3])) };
                    let i = vaddq_s32(vmulq_s32(scl[h], il), vmulq_s32(sch[h], ih));
                    a[h] = vfmaq_f32(a[h], s[h], vcvtq_f32_s32(i));
                    bias[h] = vmlaq_s32(vmlaq_s32(bias[h], bl, mnl[h]), bh, mnh[h]);
                }
            }
            for h in 0..2 {
                a[h] = vfmsq_f32(a[h], vcvtq_f32_s32(bias[h]), m[h]);
            }
        }
    }
    for r in 0..n {
        // SAFETY: out[r] is 8 f32.
        unsafe {
            vst1q_f32(out[r].as_mut_ptr(), acc[r][0]);
            vst1q_f32(out[r].as_mut_ptr().add(4), acc[r][1]);
        }
    }
}

/// One activation row `y` (quantized by the host's `quantize_row_q8_K`: gemv's float steps)
/// against a run of groups of eight weight rows (`w`: whole groups of `y.len()`
/// `block_q4_Kx8`s), `out[8g + c]` for row `c` of group `g`: [`group`]'s and [`group_8x4`]'s
/// one-row arithmetic with each super-block's nibbles unpacked where they are used, as ggml's
/// gemvs do, not first into a tile's worth of vectors that one row reads once.
///
/// # Safety
/// The CPU must have the dot product extension.
#[target_feature(enable = "dotprod")]
pub(in super::super) unsafe fn gemv_of(layout: Repack, w: &[u8], y: &[ActBlock], out: &mut [f32]) {
    let nb = y.len();
    let groups = out.len() / 8;
    assert!(out.len() == 8 * groups && w.len() >= groups * nb * Q4KX8_BYTES);
    for (g, o) in out.chunks_exact_mut(8).enumerate() {
        let mut acc = [vdupq_n_f32(0.0); 2];
        for (b, yb) in y.iter().enumerate() {
            let blk = &w[(g * nb + b) * Q4KX8_BYTES..(g * nb + b + 1) * Q4KX8_BYTES];
            // SAFETY: dotprod as the caller guarantees; `blk` is one whole block_q4_Kx8.
            unsafe {
                if layout == Repack::Q4K8x4 {
                    super_block_8x4(blk, yb, &mut acc)
                } else {
                    super_block_8x8(blk, yb, &mut acc)
                }
            }
        }
        // SAFETY: `o` is 8 f32.
        unsafe {
            vst1q_f32(o.as_mut_ptr(), acc[0]);
            vst1q_f32(o.as_mut_ptr().add(4), acc[1]);
        }
    }
}

/// One `q4_K_8x8` super-block against one row on gemv's float steps (as [`group`] with
/// `gemm == false`): per sub-block `acc = fma(s, sc * I, acc)`, then `acc = acc - bias * m`.
///
/// # Safety
/// dotprod; `blk` is a whole block_q4_Kx8.
#[inline]
#[target_feature(enable = "dotprod")]
unsafe fn super_block_8x8(blk: &[u8], y: &ActBlock, a: &mut [float32x4_t; 2]) {
    assert!(blk.len() >= Q4KX8_BYTES);
    let zero = vdupq_n_s32(0);
    let m4 = vdupq_n_u8(0x0F);
    // (the scales decoded where used: a whole header's vectors would live on the stack)
    let (dw, dm) = block_d(blk);
    let da = vdupq_n_f32(y.d);
    let s = [vmulq_f32(dw[0], da), vmulq_f32(dw[1], da)];
    let m = [vmulq_f32(dm[0], da), vmulq_f32(dm[1], da)];
    let mut bias = [zero; 2];
    for sb in 0..4 {
        let ((scl, mnl), (sch, mnh)) = (decode_scales(&blk[32 + 24 * sb..44 + 24 * sb]), decode_scales(&blk[44 + 24 * sb..56 + 24 * sb]));
        let mut q8 = [vdupq_n_s8(0); 8];
        for (i, v) in q8.iter_mut().enumerate() {
            // SAFETY: 8-byte reads inside the 256 quants (sb * 64 + 8 i + 8 <= 256).
            *v = unsafe { vreinterpretq_s8_s64(vld1q_dup_s64(y.qs.as_ptr().add(64 * sb + 8 * i) as *const i64)) };
        }
        let (mut l, mut h) = ([zero; 4], [zero; 4]);
        for cp in 0..4 {
            let (mut lo, mut hi) = ([vdupq_n_s8(0); 4], [vdupq_n_s8(0); 4]);
            for k in 0..4 {
                // SAFETY: 16 bytes inside qs (offset 128 + 256 sb + 16 cp + 64 k + 16 <= 1152).
                let x = unsafe { vld1q_u8(blk.as_ptr().add(128 + 256 * sb + 16 * cp + 64 * k)) };
                lo[k] = vreinterpretq_s8_u8(vandq_u8(x, m4));
                hi[k] = vreinterpretq_s8_u8(vshrq_n_u8::<4>(x));
            }
            // SAFETY: dotprod as the caller guarantees.
            unsafe {
                l[cp] = sdot4(zero, &lo, &q8[..4]);
                h[cp] = sdot4(zero, &hi, &q8[4..]);
            }
        }
        let il = [vpaddq_s32(l[0], l[1]), vpaddq_s32(l[2], l[3])];
        let ih = [vpaddq_s32(h[0], h[1]), vpaddq_s32(h[2], h[3])];
        let (bl, bh) = (vdupq_n_s32(y.sums[2 * sb] as i32), vdupq_n_s32(y.sums[2 * sb + 1] as i32));
        for h in 0..2 {
            bias[h] = vmlaq_s32(vmlaq_s32(bias[h], bl, mnl[h]), bh, mnh[h]);
            a[h] = vfmaq_f32(a[h], s[h], vcvtq_f32_s32(vmulq_s32(scl[h], il[h])));
            a[h] = vfmaq_f32(a[h], s[h], vcvtq_f32_s32(vmulq_s32(sch[h], ih[h])));
        }
    }
    for h in 0..2 {
        a[h] = vfmsq_f32(a[h], vcvtq_f32_s32(bias[h]), m[h]);
    }
}

/// One `q4_K_8x4` super-block against one row (as [`group_8x4`]): per pair of sub-blocks
/// `acc = fma(s, sc_lo * I_lo + sc_hi * I_hi, acc)`, then `acc = acc - bias * m`.
///
/// # Safety
/// dotprod; `blk` is a whole block_q4_Kx8.
#[inline]
#[target_feature(enable = "dotprod")]
unsafe fn super_block_8x4(blk: &[u8], y: &ActBlock, a: &mut [float32x4_t; 2]) {
    assert!(blk.len() >= Q4KX8_BYTES);
    let zero = vdupq_n_s32(0);
    let m4 = vdupq_n_u8(0x0F);
    // (the scales decoded where used: a whole header's vectors would live on the stack)
    let (dw, dm) = block_d(blk);
    let da = vdupq_n_f32(y.d);
    let s = [vmulq_f32(dw[0], da), vmulq_f32(dw[1], da)];
    let m = [vmulq_f32(dm[0], da), vmulq_f32(dm[1], da)];
    let mut bias = [zero; 2];
    for sb in 0..4 {
        let ((scl, mnl), (sch, mnh)) = (decode_scales(&blk[32 + 24 * sb..44 + 24 * sb]), decode_scales(&blk[44 + 24 * sb..56 + 24 * sb]));
        let mut q8 = [vdupq_n_s8(0); 4];
        for (i, v) in q8.iter_mut().enumerate() {
            // SAFETY: 16-byte reads inside the 256 quants.
            *v = unsafe { vld1q_s8(y.qs.as_ptr().add(64 * sb + 16 * i)) };
        }
        let (bl, bh) = (vdupq_n_s32(y.sums[2 * sb] as i32), vdupq_n_s32(y.sums[2 * sb + 1] as i32));
        for h in 0..2 {
            let (mut lo, mut hi) = ([vdupq_n_s8(0); 8], [vdupq_n_s8(0); 8]);
            for k in 0..8 {
                // SAFETY: 16 bytes inside qs (offset 128 + 256 sb + 32 k + 16 h + 16 <= 1152).
                let x = unsafe { vld1q_u8(blk.as_ptr().add(128 + 256 * sb + 32 * k + 16 * h)) };
                lo[k] = vreinterpretq_s8_u8(vandq_u8(x, m4));
                hi[k] = vreinterpretq_s8_u8(vshrq_n_u8::<4>(x));
            }
            // SAFETY: dotprod as the caller guarantees.
            let (il, ih) = unsafe { (sdot8(zero, &lo, q8[0], q8[1]), sdot8(zero, &hi, q8[2], q8[3])) };
            let i = vaddq_s32(vmulq_s32(scl[h], il), vmulq_s32(sch[h], ih));
            a[h] = vfmaq_f32(a[h], s[h], vcvtq_f32_s32(i));
            bias[h] = vmlaq_s32(vmlaq_s32(bias[h], bl, mnl[h]), bh, mnh[h]);
        }
    }
    for h in 0..2 {
        a[h] = vfmsq_f32(a[h], vcvtq_f32_s32(bias[h]), m[h]);
    }
}

/// The kernel of a Q4_K layout ([`Repack::Q4K8x8`] or [`Repack::Q4K8x4`]).
///
/// # Safety
/// The CPU must have the dot product extension.
pub(in super::super) unsafe fn group_of(layout: Repack, w: &[u8], rows: &[(&[ActBlock], bool)], out: &mut [[f32; 8]]) {
    // SAFETY: as the caller guarantees.
    unsafe {
        if layout == Repack::Q4K8x4 {
            group_8x4(w, rows, out)
        } else {
            group(w, rows, out)
        }
    }
}
