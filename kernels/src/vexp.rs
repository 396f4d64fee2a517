//! The exponential behind SILU and SOFT_MAX, computed the way ggml-cpu computes it.
//!
//! ggml-cpu does not call libm's `expf` in those ops: it runs its own 8-wide (AVX2) or 4-wide (NEON) polynomial
//! (`ggml_v_expf`, adapted from ARM's optimized-routines expf, at most ~1.95 ulp from the true
//! value) over the first `n - n % 8` (NEON: `n - n % 4`) elements of a row and libm's `expf` over the
//! rest. Reproducing its results bit for bit therefore means the same split: the AVX2 and NEON
//! levels evaluate the same polynomial with the same fused operations in the same order (the two
//! ggml variants are the same arithmetic, only the vector width differs), and the leftovers go
//! through `f32::exp`, which on the hosts' platforms is that same libm `expf` (bionic's on
//! Android). The portable level uses `f32::exp` for everything; it agrees within 2 ulp.

use crate::cpu_features::{clamp_level, simd_level, SimdLevel};

/// `x / (1 + e^-x)` over `x` into `y` (equal lengths), as ggml's `ggml_vec_silu_f32`.
pub fn silu(x: &[f32], y: &mut [f32]) {
    silu_at(simd_level(), x, y)
}

/// [`silu`] on an explicit kernel level (clamped to what the CPU supports).
pub fn silu_at(level: SimdLevel, x: &[f32], y: &mut [f32]) {
    let n = x.len().min(y.len());
    let (x, y) = (&x[..n], &mut y[..n]);
    match clamp_level(level) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: clamp_level only returns Avx2 when AVX2, FMA and F16C were detected at runtime.
        SimdLevel::Avx2 | SimdLevel::Avx512 => unsafe { x86::silu(x, y) },
        #[cfg(target_arch = "aarch64")]
        SimdLevel::Neon => neon::silu(x, y),
        _ => y.iter_mut().zip(x).for_each(|(y, &x)| *y = silu_scalar(x)),
    }
}

/// `e^x` element-wise: the building block on its own, for tests and for ops that need plain exp.
pub fn exp_at(level: SimdLevel, x: &[f32], y: &mut [f32]) {
    let n = x.len().min(y.len());
    let (x, y) = (&x[..n], &mut y[..n]);
    match clamp_level(level) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: clamp_level only returns Avx2 when AVX2, FMA and F16C were detected at runtime.
        SimdLevel::Avx2 | SimdLevel::Avx512 => unsafe { x86::exp(x, y) },
        #[cfg(target_arch = "aarch64")]
        SimdLevel::Neon => neon::exp(x, y),
        _ => y.iter_mut().zip(x).for_each(|(y, &x)| *y = x.exp()),
    }
}

/// ggml's `ggml_silu_f32`: what its vector loop falls back to for a row's last `n % 8` elements.
#[inline]
pub(crate) fn silu_scalar(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

/// ggml_v_expf's constants (hex floats in the C source, spelled as their bits here).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod consts {
    /// 0x1.8p23: adding it rounds a float below 2^22 to an integer, left in the low mantissa bits.
    pub(super) const SHIFTER: u32 = 0x4b40_0000;
    pub(super) const LOG2E: u32 = 0x3fb8_aa3b; // 0x1.715476p+0
    pub(super) const LN2_HI: u32 = 0x3f31_7200; // 0x1.62e4p-1
    pub(super) const LN2_LO: u32 = 0x35bf_be8e; // 0x1.7f7d1cp-20
    pub(super) const C4: u32 = 0x3c07_2010; // 0x1.0e4020p-7
    pub(super) const C3: u32 = 0x3d2b_9f17; // 0x1.573e2ep-5
    pub(super) const C2: u32 = 0x3e2a_af33; // 0x1.555e66p-3
    pub(super) const C1: u32 = 0x3eff_fedb; // 0x1.fffdb6p-2
    pub(super) const C0: u32 = 0x3f7f_fff6; // 0x1.ffffecp-1
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    use super::silu_scalar;
    use std::arch::x86_64::*;

    use super::consts::*;

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn splat(bits: u32) -> __m256 {
        _mm256_castsi256_ps(_mm256_set1_epi32(bits as i32))
    }

    /// e^x for 8 lanes: ggml's `ggml_v_expf` (AVX2 + FMA variant), operation for operation.
    ///
    /// x = n·ln2 + b with n = round(x·log2e) and |b| ≤ ln2/2; e^b - 1 by a degree-5 polynomial;
    /// 2^n is built in the exponent bits. When some |n| > 126 that scale overflows its exponent
    /// field, so it is split in two factors (and beyond 192 the result saturates to 0 or inf).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn v_expf(x: __m256) -> __m256 {
        let r = splat(SHIFTER);
        let z = _mm256_fmadd_ps(x, splat(LOG2E), r);
        let n = _mm256_sub_ps(z, r);
        let b = _mm256_fnmadd_ps(n, splat(LN2_LO), _mm256_fnmadd_ps(n, splat(LN2_HI), x));
        let e = _mm256_slli_epi32::<23>(_mm256_castps_si256(z));
        let k = _mm256_castsi256_ps(_mm256_add_epi32(e, _mm256_castps_si256(_mm256_set1_ps(1.0))));
        let abs_n = _mm256_andnot_ps(_mm256_set1_ps(-0.0), n);
        let c = _mm256_cmp_ps::<_CMP_GT_OQ>(abs_n, _mm256_set1_ps(126.0));
        let u = _mm256_mul_ps(b, b);
        let j = _mm256_fmadd_ps(
            _mm256_fmadd_ps(
                _mm256_fmadd_ps(splat(C4), b, splat(C3)),
                u,
                _mm256_fmadd_ps(splat(C2), b, splat(C1)),
            ),
            u,
            _mm256_mul_ps(splat(C0), b),
        );
        if _mm256_movemask_ps(c) == 0 {
            return _mm256_fmadd_ps(j, k, k);
        }
        let g = _mm256_and_si256(
            _mm256_castps_si256(_mm256_cmp_ps::<_CMP_LE_OQ>(n, _mm256_setzero_ps())),
            _mm256_set1_epi32(0x8200_0000u32 as i32),
        );
        let s1 = _mm256_castsi256_ps(_mm256_add_epi32(g, _mm256_set1_epi32(0x7f00_0000)));
        let s2 = _mm256_castsi256_ps(_mm256_sub_epi32(e, g));
        let d = _mm256_cmp_ps::<_CMP_GT_OQ>(abs_n, _mm256_set1_ps(192.0));
        let scaled = _mm256_mul_ps(_mm256_fmadd_ps(s2, j, s2), s1);
        let in_range = _mm256_or_ps(_mm256_and_ps(c, scaled), _mm256_andnot_ps(c, _mm256_fmadd_ps(k, j, k)));
        _mm256_or_ps(_mm256_and_ps(d, _mm256_mul_ps(s1, s1)), _mm256_andnot_ps(d, in_range))
    }

    /// ggml's `ggml_v_silu`: the negation is `0 - x` there, kept so that x = ±0 behaves the same.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn v_silu(x: __m256) -> __m256 {
        let e = v_expf(_mm256_sub_ps(_mm256_setzero_ps(), x));
        _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0), e))
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn silu(x: &[f32], y: &mut [f32]) {
        let full = x.len().min(y.len()) / 8 * 8;
        for (xs, ys) in x[..full].chunks_exact(8).zip(y[..full].chunks_exact_mut(8)) {
            // SAFETY: both chunks hold exactly 8 f32; loadu/storeu have no alignment requirement.
            unsafe { _mm256_storeu_ps(ys.as_mut_ptr(), v_silu(_mm256_loadu_ps(xs.as_ptr()))) };
        }
        for (y, &x) in y[full..].iter_mut().zip(&x[full..]) {
            *y = silu_scalar(x);
        }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn exp(x: &[f32], y: &mut [f32]) {
        let full = x.len().min(y.len()) / 8 * 8;
        for (xs, ys) in x[..full].chunks_exact(8).zip(y[..full].chunks_exact_mut(8)) {
            // SAFETY: both chunks hold exactly 8 f32; loadu/storeu have no alignment requirement.
            unsafe { _mm256_storeu_ps(ys.as_mut_ptr(), v_expf(_mm256_loadu_ps(xs.as_ptr()))) };
        }
        for (y, &x) in y[full..].iter_mut().zip(&x[full..]) {
            *y = x.exp();
        }
    }
}

#[cfg(target_arch = "aarch64")]
pub(crate) mod neon {
    use super::consts::*;
    use super::silu_scalar;
    use std::arch::aarch64::*;

    /// # Safety
    /// None beyond NEON, which aarch64 always has (`unsafe` only to call the intrinsics).
    #[inline(always)]
    unsafe fn splat(bits: u32) -> float32x4_t {
        vreinterpretq_f32_u32(vdupq_n_u32(bits))
    }

    /// e^x for 4 lanes: ggml's `ggml_v_expf` (NEON variant), operation for operation. Same
    /// algorithm as the AVX2 `v_expf` (see there); `vfmaq_f32(a, b, c)` is `a + b * c`, fused.
    #[inline(always)]
    pub(crate) fn v_expf(x: float32x4_t) -> float32x4_t {
        // SAFETY: NEON intrinsics (aarch64 baseline).
        unsafe { v_expf_body(x) }
    }

    /// # Safety
    /// None beyond NEON (see `splat`).
    #[inline(always)]
    unsafe fn v_expf_body(x: float32x4_t) -> float32x4_t {
        let r = splat(SHIFTER);
        let z = vfmaq_f32(r, x, splat(LOG2E));
        let n = vsubq_f32(z, r);
        let b = vfmsq_f32(vfmsq_f32(x, n, splat(LN2_HI)), n, splat(LN2_LO));
        let e = vshlq_n_u32::<23>(vreinterpretq_u32_f32(z));
        let k = vreinterpretq_f32_u32(vaddq_u32(e, vreinterpretq_u32_f32(vdupq_n_f32(1.0))));
        let c = vcagtq_f32(n, vdupq_n_f32(126.0));
        let u = vmulq_f32(b, b);
        let j = vfmaq_f32(
            vmulq_f32(splat(C0), b),
            vfmaq_f32(vfmaq_f32(splat(C1), splat(C2), b), vfmaq_f32(splat(C3), splat(C4), b), u),
            u,
        );
        if vmaxvq_u32(c) == 0 {
            return vfmaq_f32(k, j, k);
        }
        let d = vandq_u32(vclezq_f32(n), vdupq_n_u32(0x8200_0000));
        let s1 = vreinterpretq_f32_u32(vaddq_u32(d, vdupq_n_u32(0x7f00_0000)));
        let s2 = vreinterpretq_f32_u32(vsubq_u32(e, d));
        vbslq_f32(
            vcagtq_f32(n, vdupq_n_f32(192.0)),
            vmulq_f32(s1, s1),
            vbslq_f32(c, vmulq_f32(vfmaq_f32(s2, s2, j), s1), vfmaq_f32(k, k, j)),
        )
    }

    /// ggml's `ggml_v_silu` (NEON): `x / (1 + e^(0 - x))`.
    #[inline(always)]
    pub(crate) fn v_silu(x: float32x4_t) -> float32x4_t {
        // SAFETY: NEON intrinsics (aarch64 baseline).
        unsafe {
            let e = v_expf(vsubq_f32(vdupq_n_f32(0.0), x));
            vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0), e))
        }
    }

    /// Applies `f` to each full group of 4 and `tail` to the last `n % 4` elements.
    #[inline(always)]
    fn map4(x: &[f32], y: &mut [f32], f: impl Fn(float32x4_t) -> float32x4_t, tail: impl Fn(f32) -> f32) {
        let full = x.len().min(y.len()) / 4 * 4;
        for (xs, ys) in x[..full].chunks_exact(4).zip(y[..full].chunks_exact_mut(4)) {
            // SAFETY: both chunks hold exactly 4 f32.
            unsafe { vst1q_f32(ys.as_mut_ptr(), f(vld1q_f32(xs.as_ptr()))) };
        }
        for (y, &x) in y[full..].iter_mut().zip(&x[full..]) {
            *y = tail(x);
        }
    }

    pub(super) fn silu(x: &[f32], y: &mut [f32]) {
        map4(x, y, v_silu, silu_scalar)
    }

    pub(super) fn exp(x: &[f32], y: &mut [f32]) {
        map4(x, y, v_expf, f32::exp)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cpu_features::available_levels;

    /// Distance in representable floats (both finite or both the same infinity).
    fn ulps(a: f32, b: f32) -> u32 {
        let key = |v: f32| {
            let b = v.to_bits() as i32;
            if b < 0 { i32::MIN.wrapping_sub(b) } else { b }
        };
        key(a).abs_diff(key(b))
    }

    fn sweep() -> Vec<f32> {
        let mut v: Vec<f32> = vec![
            0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-30, -1e-30, 1e-45, -1e-45,
            88.0, 88.3, 88.38, 88.5, 88.72, 88.73, 89.0, 100.0, 1e10,
            -87.0, -87.4, -88.0, -100.0, -103.0, -103.97, -104.0, -110.0, -1e10,
            f32::MAX, f32::MIN, f32::MIN_POSITIVE, f32::INFINITY, f32::NEG_INFINITY, f32::NAN,
        ];
        let mut x = -120.0f32;
        while x < 95.0 {
            v.push(x);
            x += 0.013_7;
        }
        v
    }

    /// ggml_v_expf lane by lane in scalar Rust (every `vfmaq`/`_mm256_fmadd_ps` a `mul_add`):
    /// the AVX2 and NEON vector bodies must equal it bit for bit.
    pub(crate) fn v_expf_model(x: f32) -> f32 {
        use super::consts::*;
        let f = f32::from_bits;
        let r = f(SHIFTER);
        let z = x.mul_add(f(LOG2E), r);
        let n = z - r;
        let b = (-n).mul_add(f(LN2_LO), (-n).mul_add(f(LN2_HI), x));
        let e = z.to_bits() << 23;
        let k = f(e.wrapping_add(1.0f32.to_bits()));
        let u = b * b;
        let j = f(C4).mul_add(b, f(C3)).mul_add(u, f(C2).mul_add(b, f(C1))).mul_add(u, f(C0) * b);
        // (a NaN n compares false in the vector code's |n| > 126, taking this branch)
        if n.abs() <= 126.0 || n.is_nan() {
            return j.mul_add(k, k);
        }
        let d: u32 = if n <= 0.0 { 0x8200_0000 } else { 0 };
        let s1 = f(d.wrapping_add(0x7f00_0000));
        let s2 = f(e.wrapping_sub(d));
        if n.abs() > 192.0 {
            s1 * s1
        } else {
            s2.mul_add(j, s2) * s1
        }
    }

    /// Vector width of a level's exp/silu body (the rest of a row goes through libm).
    fn width(level: SimdLevel) -> usize {
        match level {
            SimdLevel::Avx2 | SimdLevel::Avx512 => 8,
            SimdLevel::Neon => 4,
            SimdLevel::Portable => 0,
        }
    }

    #[test]
    fn simd_exp_is_ggml_v_expf_bit_for_bit() {
        let mut x = sweep();
        x.truncate(x.len() / 8 * 8 + 3); // a ragged tail for both widths
        for level in available_levels() {
            let w = width(level);
            if w == 0 {
                continue;
            }
            let mut y = vec![0.0; x.len()];
            exp_at(level, &x, &mut y);
            let body = x.len() / w * w;
            for (i, (&x, &g)) in x.iter().zip(&y).enumerate() {
                let want = if i < body { v_expf_model(x) } else { x.exp() };
                assert!(g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()), "{level:?} [{i}] exp({x:e}) = {g:e}, want {want:e}");
            }
            // silu: x / (1 + e^(0 - x)) on the same body
            let mut s = vec![0.0; x.len()];
            silu_at(level, &x, &mut s);
            for (i, (&x, &g)) in x.iter().zip(&s).enumerate() {
                let want = if i < body { x / (1.0 + v_expf_model(0.0 - x)) } else { silu_scalar(x) };
                assert!(g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()), "{level:?} [{i}] silu({x:e}) = {g:e}, want {want:e}");
            }
        }
    }

    /// Hand-computed: values whose exponential the polynomial gets exactly.
    #[test]
    fn v_expf_model_hand_computed() {
        assert_eq!(v_expf_model(0.0), 1.0);
        assert_eq!(v_expf_model(-0.0), 1.0);
        assert_eq!(v_expf_model(f32::INFINITY), f32::INFINITY);
        assert_eq!(v_expf_model(f32::NEG_INFINITY), 0.0);
        assert!((v_expf_model(1.0) - std::f32::consts::E).abs() <= 2.0 * f32::EPSILON * 3.0);
        assert!((v_expf_model(-100.0) / 3.72e-44 - 1.0).abs() < 0.05);
    }

    #[test]
    fn exp_levels_agree_within_2_ulp() {
        let x = sweep();
        let mut want = vec![0.0; x.len()];
        exp_at(SimdLevel::Portable, &x, &mut want);
        for level in available_levels() {
            let mut got = vec![0.0; x.len()];
            exp_at(level, &x, &mut got);
            for ((&x, &w), &g) in x.iter().zip(&want).zip(&got) {
                if x.is_nan() {
                    assert!(g.is_nan(), "{level:?}: exp(NaN) = {g}");
                    continue;
                }
                assert!(ulps(w, g) <= 2, "{level:?}: exp({x:e}) = {g:e}, libm {w:e}");
            }
        }
    }

    #[test]
    fn exp_special_values() {
        for level in available_levels() {
            // 8 lanes so the AVX2 (and NEON) levels take their vector paths, including the |n| > 126 branch
            let x = [f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, -104.0, 89.0, -200.0, f32::NAN];
            let mut y = [0.0; 8];
            exp_at(level, &x, &mut y);
            assert_eq!(y[0], f32::INFINITY, "{level:?}");
            assert_eq!(y[1], 0.0, "{level:?}");
            assert_eq!(y[2], 1.0, "{level:?}");
            assert_eq!(y[3], 1.0, "{level:?}");
            assert!(y[4] >= 0.0 && y[4] < 1e-44, "{level:?}: exp(-104) = {:e}", y[4]);
            assert_eq!(y[5], f32::INFINITY, "{level:?}");
            assert_eq!(y[6], 0.0, "{level:?}");
            assert!(y[7].is_nan(), "{level:?}");
        }
    }

    #[test]
    fn silu_levels_agree() {
        // 8 * 25 + 3 elements: vector body and scalar tail
        let x: Vec<f32> = (0..203).map(|i| (i as f32 - 101.0) * 0.37).collect();
        let mut want = vec![0.0; x.len()];
        silu_at(SimdLevel::Portable, &x, &mut want);
        for level in available_levels() {
            let mut got = vec![0.0; x.len()];
            silu_at(level, &x, &mut got);
            for ((&x, &w), &g) in x.iter().zip(&want).zip(&got) {
                // exp's 2 ulp plus the division's rounding
                assert!(ulps(w, g) <= 3, "{level:?}: silu({x}) = {g:e}, portable {w:e}");
            }
            // the scalar tail is ggml_silu_f32 exactly
            assert_eq!(got[202].to_bits(), silu_scalar(x[202]).to_bits());
        }
    }
}
