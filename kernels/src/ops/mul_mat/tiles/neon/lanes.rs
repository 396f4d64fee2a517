//! The integer lane sums of ggml-cpu's NEON `vec_dot`s (`sdot` where the CPU has it, the same
//! lanes from base NEON elsewhere), the byte loads and the block accumulation (`mla`) that every
//! NEON tile family reads.

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

/// `acc + q * s`, fused or not as [`FUSED_MLA`] says.
#[inline(always)]
pub(super) fn mla(acc: float32x4_t, q: float32x4_t, s: f32) -> float32x4_t {
    // SAFETY: NEON intrinsics (aarch64 baseline).
    unsafe {
        if FUSED_MLA {
            vfmaq_n_f32(acc, q, s)
        } else {
            vaddq_f32(acc, vmulq_n_f32(q, s))
        }
    }
}
