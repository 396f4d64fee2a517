//! The exponential behind SILU and SOFT_MAX, computed the way ggml-cpu computes it.
//!
//! ggml-cpu does not call libm's `expf` in those ops: it runs its own 8-wide polynomial
//! (`ggml_v_expf`, adapted from ARM's optimized-routines expf, at most ~1.95 ulp from the true
//! value) over the first `n - n % 8` elements of a row and libm's `expf` over the rest. Reproducing
//! its results bit for bit therefore means the same split: the AVX2 level evaluates the same
//! polynomial with the same fused operations in the same order, and the leftovers go through
//! `f32::exp`, which on the hosts' platforms is that same libm `expf`. The portable level uses
//! `f32::exp` for everything; it agrees with the AVX2 level within 2 ulp.

use crate::simd::cpu_features::{clamp_level, simd_level, SimdLevel};

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
        SimdLevel::Avx2 => unsafe { x86::silu(x, y) },
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
        SimdLevel::Avx2 => unsafe { x86::exp(x, y) },
        _ => y.iter_mut().zip(x).for_each(|(y, &x)| *y = x.exp()),
    }
}

/// ggml's `ggml_silu_f32`: what its vector loop falls back to for a row's last `n % 8` elements.
#[inline]
pub(crate) fn silu_scalar(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    use super::silu_scalar;
    use std::arch::x86_64::*;

    // ggml_v_expf's constants (hex floats in the C source, spelled as their bits here).
    /// 0x1.8p23: adding it rounds a float below 2^22 to an integer, left in the low mantissa bits.
    const SHIFTER: u32 = 0x4b40_0000;
    const LOG2E: u32 = 0x3fb8_aa3b; // 0x1.715476p+0
    const LN2_HI: u32 = 0x3f31_7200; // 0x1.62e4p-1
    const LN2_LO: u32 = 0x35bf_be8e; // 0x1.7f7d1cp-20
    const C4: u32 = 0x3c07_2010; // 0x1.0e4020p-7
    const C3: u32 = 0x3d2b_9f17; // 0x1.573e2ep-5
    const C2: u32 = 0x3e2a_af33; // 0x1.555e66p-3
    const C1: u32 = 0x3eff_fedb; // 0x1.fffdb6p-2
    const C0: u32 = 0x3f7f_fff6; // 0x1.ffffecp-1

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simd::cpu_features::available_levels;

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
            // 8 lanes so the AVX2 level takes its vector path, including the |n| > 126 branch
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
