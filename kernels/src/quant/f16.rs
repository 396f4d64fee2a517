//! IEEE binary16 <-> binary32 conversion and the f16 dot products used for F16 weights.
//!
//! Half values travel as raw `u16` bits: that is how ggml stores them (`ggml_fp16_t`), it makes
//! `&[u8]` tensor data castable without a half-float type, and stable Rust has no `f16` yet.
//!
//! The scalar conversions reproduce ggml's `GGML_COMPUTE_FP16_TO_FP32` / `GGML_COMPUTE_FP32_TO_FP16`
//! (the Maratyszcza/FP16 bit tricks) bit for bit: round-to-nearest-even, overflow to infinity,
//! exact subnormals. That matters because quantized block scales are stored through this rounding
//! and must be byte-identical to files written by ggml. The F16C path (`vcvtps2ph` with
//! round-to-nearest) agrees on every non-NaN input; for NaN inputs ggml's scalar code returns the
//! canonical `0x7E00` while F16C keeps payload bits, so only NaN-ness is guaranteed equal.

use crate::cpu_features::{clamp_level, simd_level, SimdLevel};

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Half -> single. Exact (every half is representable as a single).
#[inline]
pub fn fp16_to_fp32(h: u16) -> f32 {
    #[cfg(target_arch = "aarch64")]
    {
        // One `fcvt`, as ggml-cpu's `(float) __fp16` compiles to: the portable bit juggling below
        // was ~a dozen instructions per block scale, half of a NEON decode product's instructions.
        let out: f32;
        // SAFETY: two register-only instructions of the aarch64 base ISA (FP is mandatory there):
        // no memory access, no flags; the S register is fully written before it is read.
        unsafe {
            std::arch::asm!("fmov {o:s}, {i:w}", "fcvt {o:s}, {o:h}", i = in(reg) h as u32, o = out(vreg) out,
                            options(pure, nomem, nostack, preserves_flags))
        };
        #[allow(clippy::needless_return)]
        return out;
    }
    #[cfg(not(target_arch = "aarch64"))]
    fp16_to_fp32_bits(h)
}

/// [`fp16_to_fp32`] in portable integer and float arithmetic.
#[inline]
pub fn fp16_to_fp32_bits(h: u16) -> f32 {
    // Shift the half into the top of a word so sign, exponent and mantissa line up with a
    // single's, then let one float multiply re-bias the exponent (normals) or one subtract
    // normalize the mantissa (subnormals); both are exact.
    let w = (h as u32) << 16;
    let sign = w & 0x8000_0000;
    let two_w = w.wrapping_add(w);

    const EXP_OFFSET: u32 = 0xE0 << 23;
    let exp_scale = f32::from_bits(0x0780_0000); // 2^-112
    let normalized = f32::from_bits((two_w >> 4) + EXP_OFFSET) * exp_scale;

    const MAGIC_MASK: u32 = 126 << 23;
    let denormalized = f32::from_bits((two_w >> 17) | MAGIC_MASK) - 0.5;

    const DENORMALIZED_CUTOFF: u32 = 1 << 27;
    let bits = if two_w < DENORMALIZED_CUTOFF { denormalized.to_bits() } else { normalized.to_bits() };
    f32::from_bits(sign | bits)
}

/// Single -> half with round-to-nearest-even; NaN becomes `0x7E00` (or `0xFE00` when negative).
#[inline]
pub fn fp32_to_fp16(f: f32) -> u16 {
    // Scaling by 2^112 then 2^-110 makes the hardware float adder do the mantissa rounding at the
    // half's precision (including the subnormal range, via the `bias` floor), so no rounding logic
    // has to be written by hand.
    let scale_to_inf = f32::from_bits(0x7780_0000); // 2^112
    let scale_to_zero = f32::from_bits(0x0880_0000); // 2^-110
    let mut base = (f.abs() * scale_to_inf) * scale_to_zero;

    let w = f.to_bits();
    let shl1_w = w.wrapping_add(w);
    let sign = w & 0x8000_0000;
    let bias = (shl1_w & 0xFF00_0000).max(0x7100_0000);

    base += f32::from_bits((bias >> 1) + 0x0780_0000);
    let bits = base.to_bits();
    let exp_bits = (bits >> 13) & 0x0000_7C00;
    let mantissa_bits = bits & 0x0000_0FFF;
    let nonsign = exp_bits + mantissa_bits;
    ((sign >> 16) | if shl1_w > 0xFF00_0000 { 0x7E00 } else { nonsign }) as u16
}

/// Converts `src` into `dst` (equal lengths). Uses F16C when the process runs at [`SimdLevel::Avx2`].
pub fn f16_to_f32_slice(src: &[u16], dst: &mut [f32]) {
    f16_to_f32_slice_at(simd_level(), src, dst)
}

/// [`f16_to_f32_slice`] on an explicit kernel level (clamped to what the CPU supports).
pub fn f16_to_f32_slice_at(level: SimdLevel, src: &[u16], dst: &mut [f32]) {
    assert_eq!(src.len(), dst.len(), "f16_to_f32_slice: length mismatch");
    match clamp_level(level) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: clamp_level only returns Avx2 when AVX2, FMA and F16C were detected at runtime.
        SimdLevel::Avx2 | SimdLevel::Avx512 => unsafe { x86::f16_to_f32(src, dst) },
        _ => {
            for (d, &s) in dst.iter_mut().zip(src) {
                *d = fp16_to_fp32(s);
            }
        }
    }
}

/// Converts `src` into `dst` (equal lengths) with round-to-nearest-even.
pub fn f32_to_f16_slice(src: &[f32], dst: &mut [u16]) {
    f32_to_f16_slice_at(simd_level(), src, dst)
}

/// [`f32_to_f16_slice`] on an explicit kernel level (clamped to what the CPU supports).
pub fn f32_to_f16_slice_at(level: SimdLevel, src: &[f32], dst: &mut [u16]) {
    assert_eq!(src.len(), dst.len(), "f32_to_f16_slice: length mismatch");
    match clamp_level(level) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: clamp_level only returns Avx2 when AVX2, FMA and F16C were detected at runtime.
        SimdLevel::Avx2 | SimdLevel::Avx512 => unsafe { x86::f32_to_f16(src, dst) },
        #[cfg(target_arch = "aarch64")]
        SimdLevel::Neon => neon::f32_to_f16(src, dst),
        _ => {
            for (d, &s) in dst.iter_mut().zip(src) {
                *d = fp32_to_fp16(s);
            }
        }
    }
}

/// Rounds `src` to half precision and back into `dst` (equal lengths): the values ggml's F16
/// dot products see for f32 activations. One pass with F16C at [`SimdLevel::Avx2`] (no
/// intermediate half buffer).
pub fn round_f16_slice_at(level: SimdLevel, src: &[f32], dst: &mut [f32]) {
    assert_eq!(src.len(), dst.len(), "round_f16_slice: length mismatch");
    match clamp_level(level) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: clamp_level only returns Avx2 when AVX2, FMA and F16C were detected at runtime.
        SimdLevel::Avx2 | SimdLevel::Avx512 => unsafe { x86::round_f16(src, dst) },
        #[cfg(target_arch = "aarch64")]
        SimdLevel::Neon => neon::round_f16(src, dst),
        _ => {
            for (d, &s) in dst.iter_mut().zip(src) {
                *d = fp16_to_fp32(fp32_to_fp16(s));
            }
        }
    }
}

/// Dot product of half weights with single activations, accumulated in f32.
///
/// Keeping the activations in f32 (ggml converts them to f16 first) costs nothing on F16C
/// hardware and removes the activation rounding error entirely.
pub fn dot_f16_f32(a: &[u16], b: &[f32]) -> f32 {
    dot_f16_f32_at(simd_level(), a, b)
}

/// [`dot_f16_f32`] on an explicit kernel level (clamped to what the CPU supports).
pub fn dot_f16_f32_at(level: SimdLevel, a: &[u16], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "dot_f16_f32: length mismatch");
    match clamp_level(level) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: clamp_level only returns Avx2 when AVX2, FMA and F16C were detected at runtime.
        SimdLevel::Avx2 | SimdLevel::Avx512 => unsafe { x86::dot_f16_f32(a, b) },
        _ => dot_f16_f32_portable(a, b),
    }
}

pub(crate) fn dot_f16_f32_portable(a: &[u16], b: &[f32]) -> f32 {
    dot_lanes(a.len().min(b.len()), |i| fp16_to_fp32(a[i]) * b[i])
}

/// Dot product of two half vectors, accumulated in f32 (ggml's `ggml_vec_dot_f16` numerics
/// apart from summation order).
pub fn dot_f16_f16(a: &[u16], b: &[u16]) -> f32 {
    dot_f16_f16_at(simd_level(), a, b)
}

/// [`dot_f16_f16`] on an explicit kernel level (clamped to what the CPU supports).
pub fn dot_f16_f16_at(level: SimdLevel, a: &[u16], b: &[u16]) -> f32 {
    assert_eq!(a.len(), b.len(), "dot_f16_f16: length mismatch");
    match clamp_level(level) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: clamp_level only returns Avx2 when AVX2, FMA and F16C were detected at runtime.
        SimdLevel::Avx2 | SimdLevel::Avx512 => unsafe { x86::dot_f16_f16(a, b) },
        _ => dot_lanes(a.len(), |i| fp16_to_fp32(a[i]) * fp16_to_fp32(b[i])),
    }
}

/// Sums `term(i)` for `i < n` in 8 independent lanes, which both lets LLVM vectorize the
/// portable kernels and keeps their rounding closer to the SIMD kernels' than a serial sum.
#[inline(always)]
pub(crate) fn dot_lanes(n: usize, term: impl Fn(usize) -> f32) -> f32 {
    let mut lanes = [0.0f32; 8];
    let full = n / 8 * 8;
    let mut i = 0;
    while i < full {
        for (l, acc) in lanes.iter_mut().enumerate() {
            *acc += term(i + l);
        }
        i += 8;
    }
    let mut tail = 0.0f32;
    for j in full..n {
        tail += term(j);
    }
    let s4 = [lanes[0] + lanes[4], lanes[1] + lanes[5], lanes[2] + lanes[6], lanes[3] + lanes[7]];
    (s4[0] + s4[2]) + (s4[1] + s4[3]) + tail
}

/// ggml-cpu on ARM converts with the hardware (`__fp16` casts, `vcvt_f16_f32`): `fcvtn` / `fcvtl`
/// four at a time, base aarch64. The same bits as [`fp32_to_fp16`] except for NaN payloads; the
/// software conversion took about twenty instructions per element.
#[cfg(target_arch = "aarch64")]
pub(crate) mod neon {
    use std::arch::aarch64::*;
    use std::arch::asm;

    /// Four singles to halves (round to nearest even).
    #[inline(always)]
    pub(crate) fn narrow4(x: float32x4_t) -> uint16x4_t {
        let r: uint16x4_t;
        // SAFETY: register-only instruction (base aarch64).
        unsafe { asm!("fcvtn {r:v}.4h, {x:v}.4s", r = lateout(vreg) r, x = in(vreg) x, options(pure, nomem, nostack, preserves_flags)) };
        r
    }

    /// Four halves (bit patterns) to singles (exact). Inline assembly: Rust's f16 vector
    /// intrinsics are not stable yet.
    #[inline(always)]
    pub(crate) fn widen4(h: uint16x4_t) -> float32x4_t {
        let r: float32x4_t;
        // SAFETY: register-only instruction (base aarch64).
        unsafe { asm!("fcvtl {r:v}.4s, {h:v}.4h", r = lateout(vreg) r, h = in(vreg) h, options(pure, nomem, nostack, preserves_flags)) };
        r
    }

    pub(super) fn f32_to_f16(src: &[f32], dst: &mut [u16]) {
        let n = src.len().min(dst.len());
        let mut i = 0;
        while i + 4 <= n {
            // SAFETY: i + 4 <= the length of both slices.
            unsafe { vst1_u16(dst.as_mut_ptr().add(i), narrow4(vld1q_f32(src.as_ptr().add(i)))) };
            i += 4;
        }
        for j in i..n {
            dst[j] = super::fp32_to_fp16(src[j]);
        }
    }

    pub(super) fn round_f16(src: &[f32], dst: &mut [f32]) {
        let n = src.len().min(dst.len());
        let mut i = 0;
        while i + 4 <= n {
            // SAFETY: i + 4 <= the length of both slices.
            unsafe { vst1q_f32(dst.as_mut_ptr().add(i), widen4(narrow4(vld1q_f32(src.as_ptr().add(i))))) };
            i += 4;
        }
        for j in i..n {
            dst[j] = super::fp16_to_fp32(super::fp32_to_fp16(src[j]));
        }
    }

    /// Half-precision vector arithmetic (FEAT_FP16) on `uint16x8_t` bit patterns, as inline assembly
    /// (Rust's `float16x8_t` intrinsics are not stable yet): the F16 products' tiles
    /// (`ops/mul_mat/tiles/neon/float.rs`) and flash attention's K·Q sums and V updates
    /// (`ops/flash_attn/neon.rs`).
    pub(crate) mod hp {
        use std::arch::aarch64::*;
        use std::arch::asm;

        /// `acc + x * y` in half precision, fused (`vfmaq_f16`).
        ///
        /// # Safety
        /// The CPU must have FEAT_FP16 (this and every function here).
        #[inline]
        #[target_feature(enable = "fp16")]
        pub(crate) unsafe fn fma(acc: uint16x8_t, x: uint16x8_t, y: uint16x8_t) -> uint16x8_t {
            let mut r = acc;
            // SAFETY: register-only instruction; the caller guarantees FEAT_FP16.
            unsafe { asm!("fmla {r:v}.8h, {x:v}.8h, {y:v}.8h", r = inout(vreg) r, x = in(vreg) x, y = in(vreg) y, options(pure, nomem, nostack, preserves_flags)) };
            r
        }

        /// `x + y` in half precision (`vaddq_f16`).
        ///
        /// # Safety
        /// FEAT_FP16.
        #[inline]
        #[target_feature(enable = "fp16")]
        pub(crate) unsafe fn add(x: uint16x8_t, y: uint16x8_t) -> uint16x8_t {
            let r: uint16x8_t;
            // SAFETY: register-only instruction; the caller guarantees FEAT_FP16.
            unsafe { asm!("fadd {r:v}.8h, {x:v}.8h, {y:v}.8h", r = lateout(vreg) r, x = in(vreg) x, y = in(vreg) y, options(pure, nomem, nostack, preserves_flags)) };
            r
        }

        /// `x * y` in half precision (`vmulq_f16`).
        ///
        /// # Safety
        /// FEAT_FP16.
        #[inline]
        #[target_feature(enable = "fp16")]
        pub(crate) unsafe fn mul(x: uint16x8_t, y: uint16x8_t) -> uint16x8_t {
            let r: uint16x8_t;
            // SAFETY: register-only instruction; the caller guarantees FEAT_FP16.
            unsafe { asm!("fmul {r:v}.8h, {x:v}.8h, {y:v}.8h", r = lateout(vreg) r, x = in(vreg) x, y = in(vreg) y, options(pure, nomem, nostack, preserves_flags)) };
            r
        }

        /// 8 halves widened to two f32x4 (exact).
        ///
        /// # Safety
        /// FEAT_FP16 (not needed by the instructions, kept uniform).
        #[inline]
        #[target_feature(enable = "fp16")]
        pub(crate) unsafe fn widen(x: uint16x8_t) -> (float32x4_t, float32x4_t) {
            let (lo, hi): (float32x4_t, float32x4_t);
            // SAFETY: register-only instructions (base aarch64).
            unsafe {
                asm!("fcvtl {lo:v}.4s, {x:v}.4h", "fcvtl2 {hi:v}.4s, {x:v}.8h", lo = out(vreg) lo, hi = out(vreg) hi, x = in(vreg) x,
                    options(pure, nomem, nostack, preserves_flags))
            };
            (lo, hi)
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    use super::*;

    /// Horizontal sum of 8 lanes.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn hsum_ps(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_extractf128_ps::<1>(v), _mm256_castps256_ps128(v));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_movehdup_ps(s));
        _mm_cvtss_f32(s)
    }

    /// Loads 8 halves and widens them to singles.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn load8_f16(src: &[u16]) -> __m256 {
        assert!(src.len() >= 8);
        // SAFETY: the assert guarantees 16 readable bytes; loadu has no alignment requirement.
        let raw = unsafe { _mm_loadu_si128(src.as_ptr() as *const __m128i) };
        _mm256_cvtph_ps(raw)
    }

    /// Loads 8 singles.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn load8_f32(src: &[f32]) -> __m256 {
        assert!(src.len() >= 8);
        // SAFETY: the assert guarantees 32 readable bytes; loadu has no alignment requirement.
        unsafe { _mm256_loadu_ps(src.as_ptr()) }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn f16_to_f32(src: &[u16], dst: &mut [f32]) {
        let n = src.len().min(dst.len());
        let full = n / 8 * 8;
        for i in (0..full).step_by(8) {
            let v = load8_f16(&src[i..i + 8]);
            let out = &mut dst[i..i + 8];
            // SAFETY: `out` is exactly 8 writable f32; storeu has no alignment requirement.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr(), v) };
        }
        for i in full..n {
            dst[i] = fp16_to_fp32(src[i]);
        }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn f32_to_f16(src: &[f32], dst: &mut [u16]) {
        let n = src.len().min(dst.len());
        let full = n / 8 * 8;
        for i in (0..full).step_by(8) {
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(load8_f32(&src[i..i + 8]));
            let out = &mut dst[i..i + 8];
            // SAFETY: `out` is exactly 8 writable u16 (16 bytes); storeu has no alignment requirement.
            unsafe { _mm_storeu_si128(out.as_mut_ptr() as *mut __m128i, h) };
        }
        for i in full..n {
            dst[i] = fp32_to_fp16(src[i]);
        }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn round_f16(src: &[f32], dst: &mut [f32]) {
        let n = src.len().min(dst.len());
        let full = n / 8 * 8;
        for i in (0..full).step_by(8) {
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(load8_f32(&src[i..i + 8]));
            let out = &mut dst[i..i + 8];
            // SAFETY: `out` is exactly 8 writable f32; storeu has no alignment requirement.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr(), _mm256_cvtph_ps(h)) };
        }
        for i in full..n {
            dst[i] = fp16_to_fp32(fp32_to_fp16(src[i]));
        }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn dot_f16_f32(a: &[u16], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i + 32 <= n {
            for (u, acc) in acc.iter_mut().enumerate() {
                let o = i + 8 * u;
                *acc = _mm256_fmadd_ps(load8_f16(&a[o..o + 8]), load8_f32(&b[o..o + 8]), *acc);
            }
            i += 32;
        }
        while i + 8 <= n {
            acc[0] = _mm256_fmadd_ps(load8_f16(&a[i..i + 8]), load8_f32(&b[i..i + 8]), acc[0]);
            i += 8;
        }
        let v = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        let mut sum = hsum_ps(v);
        for j in i..n {
            sum += fp16_to_fp32(a[j]) * b[j];
        }
        sum
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn dot_f16_f16(a: &[u16], b: &[u16]) -> f32 {
        let n = a.len().min(b.len());
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i + 32 <= n {
            for (u, acc) in acc.iter_mut().enumerate() {
                let o = i + 8 * u;
                *acc = _mm256_fmadd_ps(load8_f16(&a[o..o + 8]), load8_f16(&b[o..o + 8]), *acc);
            }
            i += 32;
        }
        while i + 8 <= n {
            acc[0] = _mm256_fmadd_ps(load8_f16(&a[i..i + 8]), load8_f16(&b[i..i + 8]), acc[0]);
            i += 8;
        }
        let v = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        let mut sum = hsum_ps(v);
        for j in i..n {
            sum += fp16_to_fp32(a[j]) * fp16_to_fp32(b[j]);
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu_features::available_levels;
    use crate::quant::test_util::Lcg;

    /// Independent integer-only reference for half -> single.
    fn ref_f16_to_f32(h: u16) -> f32 {
        let sign = ((h as u32) & 0x8000) << 16;
        let exp = ((h >> 10) & 0x1F) as i32;
        let man = (h & 0x3FF) as u32;
        let bits = match (exp, man) {
            (0, 0) => 0,
            (0, m) => {
                // subnormal: value = m * 2^-24
                let v = m as f32 * f32::from_bits(0x3380_0000); // 2^-24, exact
                v.to_bits()
            }
            (31, 0) => 0x7F80_0000,
            (31, m) => 0x7FC0_0000 | (m << 13),
            (e, m) => (((e - 15 + 127) as u32) << 23) | (m << 13),
        };
        f32::from_bits(sign | bits)
    }

    #[test]
    fn f16_to_f32_exhaustive() {
        for h in 0..=u16::MAX {
            let got = fp16_to_fp32(h);
            let want = ref_f16_to_f32(h);
            if want.is_nan() {
                assert!(got.is_nan(), "{h:#06x}");
            } else {
                assert_eq!(got.to_bits(), want.to_bits(), "{h:#06x}");
                assert_eq!(fp16_to_fp32_bits(h).to_bits(), want.to_bits(), "{h:#06x}");
            }
        }
    }

    #[test]
    fn f32_to_f16_roundtrip_and_ties_to_even() {
        // Every finite half survives the round trip.
        for h in 0..=u16::MAX {
            let f = fp16_to_fp32(h);
            if f.is_nan() {
                assert_eq!(fp32_to_fp16(f) & 0x7FFF, 0x7E00);
                continue;
            }
            assert_eq!(fp32_to_fp16(f), h, "{h:#06x}");
        }
        // Midpoints between consecutive positive halves round to the even one; one ulp (f32)
        // either side rounds to the nearer one.
        for h in 0u16..0x7BFF {
            let lo = fp16_to_fp32(h) as f64;
            let hi = fp16_to_fp32(h + 1) as f64;
            let mid = ((lo + hi) / 2.0) as f32; // exact: halves have <= 11 significant bits
            let even = if h % 2 == 0 { h } else { h + 1 };
            assert_eq!(fp32_to_fp16(mid), even, "mid {h:#06x}");
            assert_eq!(fp32_to_fp16(-mid), even | 0x8000);
            assert_eq!(fp32_to_fp16(f32::from_bits(mid.to_bits() - 1)), h);
            assert_eq!(fp32_to_fp16(f32::from_bits(mid.to_bits() + 1)), h + 1);
        }
        // Overflow: 65520 is the midpoint between 65504 (max) and 65536 -> rounds to inf.
        assert_eq!(fp32_to_fp16(65519.99), 0x7BFF);
        assert_eq!(fp32_to_fp16(65520.0), 0x7C00);
        assert_eq!(fp32_to_fp16(f32::INFINITY), 0x7C00);
        assert_eq!(fp32_to_fp16(f32::NEG_INFINITY), 0xFC00);
        assert_eq!(fp32_to_fp16(f32::NAN), 0x7E00);
        // Below half the smallest subnormal -> zero; exactly half ties to even (zero).
        assert_eq!(fp32_to_fp16(f32::from_bits(0x3300_0000)), 0); // 2^-25
        assert_eq!(fp32_to_fp16(f32::from_bits(0x3300_0001)), 1);
        assert_eq!(fp32_to_fp16(-0.0), 0x8000);
        assert_eq!(fp32_to_fp16(1.0), 0x3C00);
    }

    /// Compares the scalar conversion with the F16C instruction on a dense sample of all f32 bit
    /// patterns (every 251st; the exhaustive sweep is the ignored test below).
    #[cfg(target_arch = "x86_64")]
    fn check_against_f16c(step: usize) {
        if !available_levels().contains(&SimdLevel::Avx2) {
            return;
        }
        let mut src = Vec::with_capacity(1 << 16);
        let mut hw = vec![0u16; 1 << 16];
        let mut bits: u64 = 0;
        while bits <= u32::MAX as u64 {
            src.clear();
            while src.len() < (1 << 16) && bits <= u32::MAX as u64 {
                src.push(f32::from_bits(bits as u32));
                bits += step as u64;
            }
            hw.resize(src.len(), 0);
            f32_to_f16_slice_at(SimdLevel::Avx2, &src, &mut hw);
            for (&f, &h) in src.iter().zip(&hw) {
                let sw = fp32_to_fp16(f);
                if f.is_nan() {
                    assert!(fp16_to_fp32(h).is_nan() && fp16_to_fp32(sw).is_nan());
                } else {
                    assert_eq!(sw, h, "f32 bits {:#010x}", f.to_bits());
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn f32_to_f16_matches_f16c_sampled() {
        check_against_f16c(251);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    #[ignore = "exhaustive 2^32 sweep; run with --ignored"]
    fn f32_to_f16_matches_f16c_exhaustive() {
        check_against_f16c(1);
    }

    #[test]
    fn slice_conversions_match_scalar() {
        let mut rng = Lcg::new(7);
        for &n in &[0usize, 1, 7, 8, 9, 31, 64, 1000] {
            let src: Vec<f32> = (0..n).map(|_| rng.next_f32() * 70000.0).collect();
            let halves: Vec<u16> = (0..n).map(|i| (i as u16).wrapping_mul(40503)).collect();
            for level in available_levels() {
                let mut h = vec![0u16; n];
                f32_to_f16_slice_at(level, &src, &mut h);
                for i in 0..n {
                    assert_eq!(h[i], fp32_to_fp16(src[i]), "{level:?}");
                }
                let mut f = vec![0f32; n];
                f16_to_f32_slice_at(level, &halves, &mut f);
                for i in 0..n {
                    let want = fp16_to_fp32(halves[i]);
                    assert!(f[i].to_bits() == want.to_bits() || (f[i].is_nan() && want.is_nan()));
                }
            }
        }
    }

    #[test]
    fn dots_simd_vs_portable() {
        let mut rng = Lcg::new(11);
        for &n in &[1usize, 8, 31, 32, 33, 576, 1537] {
            let a: Vec<u16> = (0..n).map(|_| fp32_to_fp16(rng.next_f32())).collect();
            let b16: Vec<u16> = (0..n).map(|_| fp32_to_fp16(rng.next_f32())).collect();
            let b: Vec<f32> = (0..n).map(|_| rng.next_f32()).collect();
            let exact_ab: f64 = (0..n).map(|i| fp16_to_fp32(a[i]) as f64 * b[i] as f64).sum();
            let exact_aa: f64 =
                (0..n).map(|i| fp16_to_fp32(a[i]) as f64 * fp16_to_fp32(b16[i]) as f64).sum();
            for level in available_levels() {
                let d1 = dot_f16_f32_at(level, &a, &b) as f64;
                let d2 = dot_f16_f16_at(level, &a, &b16) as f64;
                // f32 accumulation of n terms of magnitude <= 1: error well under n * 2^-24.
                let tol = n as f64 * 1.2e-7 + 1e-7;
                assert!((d1 - exact_ab).abs() < tol, "{level:?} n={n} {d1} {exact_ab}");
                assert!((d2 - exact_aa).abs() < tol, "{level:?} n={n} {d2} {exact_aa}");
            }
        }
        // Integer-valued inputs with small sums: every operation is exact, so all levels agree
        // bit for bit regardless of summation order.
        let a: Vec<u16> = (0..100).map(|i| fp32_to_fp16((i % 7) as f32 - 3.0)).collect();
        let b: Vec<f32> = (0..100).map(|i| (i % 5) as f32 - 2.0).collect();
        let want = dot_f16_f32_at(SimdLevel::Portable, &a, &b);
        for level in available_levels() {
            assert_eq!(dot_f16_f32_at(level, &a, &b), want);
        }
    }
}
