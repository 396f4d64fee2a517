//! One SOFT_MAX row, in ggml-cpu's float order.
//!
//! ggml-cpu (`ggml_compute_forward_soft_max_f32`) computes a row as: `w = x * scale`, then
//! `w += slope * mask` (which GCC contracts into one FMA: the hosts are built with `-mfma` in GNU
//! mode), `max` by a left-to-right `a > b ? a : b` fold, `e = exp(w - max)` through its vectorized
//! expf (see [`crate::vexp`]) with each group of 8 summed in f32 by a fixed tree and added
//! to an f64 total, and finally `e * (float)(1.0 / total)`. The AVX2 level repeats each of those
//! roundings, so its rows equal ggml-cpu's bit for bit; it only fuses the first three passes into
//! one, which changes no value. The NEON level does the same with ggml's NEON widths: exp and the
//! f32 partial sums in groups of 4 (`vaddvq_f32`), libm `expf` for the last `n % 4`; the mask
//! FMA is what clang makes of `wp[i] += slope*mp[i]` under its default `-ffp-contract=on`. The portable level keeps the structure with unfused arithmetic.

use crate::cpu_features::{clamp_level, simd_level, SimdLevel};
use crate::quant::f16::fp16_to_fp32;

/// The mask row added to a SOFT_MAX row: F32 elements, or F16 elements as their little-endian
/// bytes (a tensor's F16 row need not be 2-byte aligned as a Rust slice would require).
#[derive(Clone, Copy)]
pub enum Mask<'a> {
    None,
    F32(&'a [f32]),
    F16(&'a [u8]),
}

impl Mask<'_> {
    /// Elements available, so that a short mask bounds the row instead of being read past.
    fn len(&self) -> usize {
        match self {
            Mask::None => usize::MAX,
            Mask::F32(m) => m.len(),
            Mask::F16(b) => b.len() / 2,
        }
    }

    fn get(&self, i: usize) -> f32 {
        match self {
            Mask::None => 0.0,
            Mask::F32(m) => m[i],
            Mask::F16(b) => fp16_to_fp32(u16::from_le_bytes([b[2 * i], b[2 * i + 1]])),
        }
    }
}

/// `y = softmax(x * scale + slope * mask)` over the first `min(x.len(), y.len(), mask length)`
/// elements.
pub fn soft_max_row(x: &[f32], y: &mut [f32], mask: Mask<'_>, scale: f32, slope: f32) {
    soft_max_row_at(simd_level(), x, y, mask, scale, slope)
}

/// [`soft_max_row`] on an explicit kernel level (clamped to what the CPU supports).
pub fn soft_max_row_at(level: SimdLevel, x: &[f32], y: &mut [f32], mask: Mask<'_>, scale: f32, slope: f32) {
    let n = x.len().min(y.len()).min(mask.len());
    let (x, y) = (&x[..n], &mut y[..n]);
    match clamp_level(level) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: clamp_level only returns Avx2 when AVX2, FMA and F16C were detected at runtime.
        SimdLevel::Avx2 | SimdLevel::Avx512 => unsafe { x86::soft_max_row(x, y, mask, scale, slope) },
        #[cfg(target_arch = "aarch64")]
        SimdLevel::Neon => neon::soft_max_row(x, y, mask, scale, slope),
        _ => portable(x, y, mask, scale, slope),
    }
}

/// ggml's `ggml_vec_max_f32`. Its answer depends on the order only when the row holds a NaN (kept
/// until the next element replaces it), and then every output is NaN whatever the max, so the
/// AVX2 level may reduce in any order.
fn ggml_max(w: &[f32]) -> f32 {
    w.iter().fold(f32::NEG_INFINITY, |m, &v| if m > v { m } else { v })
}

fn portable(x: &[f32], y: &mut [f32], mask: Mask<'_>, scale: f32, slope: f32) {
    for (i, (y, &x)) in y.iter_mut().zip(x).enumerate() {
        *y = x * scale;
        if !matches!(mask, Mask::None) {
            *y += slope * mask.get(i);
        }
    }
    let max = ggml_max(y);
    let mut sum = 0f64;
    for v in y.iter_mut() {
        *v = (*v - max).exp();
        sum += *v as f64;
    }
    let inv = (1.0 / sum) as f32;
    y.iter_mut().for_each(|v| *v *= inv);
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Mask;
    use crate::vexp::x86::v_expf;
    use std::arch::x86_64::*;

    /// Horizontal sum in the tree ggml-cpu uses: (lo + hi), then the halves, then the pair.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn hsum(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_extractf128_ps::<1>(v), _mm256_castps256_ps128(v));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)))
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn hmax(v: __m256) -> f32 {
        let s = _mm_max_ps(_mm256_extractf128_ps::<1>(v), _mm256_castps256_ps128(v));
        let s = _mm_max_ps(s, _mm_movehl_ps(s, s));
        _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)))
    }

    /// The caller passes `x`, `y` and `mask` holding at least `y.len()` elements.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn soft_max_row(x: &[f32], y: &mut [f32], mask: Mask<'_>, scale: f32, slope: f32) {
        let n = y.len().min(x.len()).min(mask.len());
        let full = n / 8 * 8;
        let (vscale, vslope) = (_mm256_set1_ps(scale), _mm256_set1_ps(slope));

        // pass 1: w = x * scale (+ slope * mask, fused) and its max
        let mut vmax = _mm256_set1_ps(f32::NEG_INFINITY);
        for i in (0..full).step_by(8) {
            // SAFETY: i + 8 <= full <= n, and n bounds x, y and the mask (2 bytes per F16
            // element); loadu/storeu have no alignment requirement.
            unsafe {
                let mut w = _mm256_mul_ps(_mm256_loadu_ps(x.as_ptr().add(i)), vscale);
                w = match mask {
                    Mask::None => w,
                    Mask::F32(m) => _mm256_fmadd_ps(vslope, _mm256_loadu_ps(m.as_ptr().add(i)), w),
                    Mask::F16(b) => {
                        let h = _mm_loadu_si128(b.as_ptr().add(2 * i) as *const __m128i);
                        _mm256_fmadd_ps(vslope, _mm256_cvtph_ps(h), w)
                    }
                };
                _mm256_storeu_ps(y.as_mut_ptr().add(i), w);
                vmax = _mm256_max_ps(vmax, w);
            }
        }
        // the order of a max does not matter without NaNs (see `ggml_max`) up to the sign of a
        // zero, which no `w - max` below can tell apart
        let mut max = hmax(vmax);
        for i in full..n {
            let mut w = x[i] * scale;
            if !matches!(mask, Mask::None) {
                w = slope.mul_add(mask.get(i), w);
            }
            y[i] = w;
            max = max.max(w);
        }

        // pass 2: e = exp(w - max) in place, summed as ggml does. Eight masked values (-inf: half
        // of a causal attention row) are written as the eight +0 that v_expf(-inf - max) gives
        // (its saturating branch), without the exp: their sum adds nothing. (With a max of -inf,
        // +inf or NaN the row ends all NaN either way: pass 3 multiplies those zeros by an
        // infinite or NaN normalizer.)
        let vm = _mm256_set1_ps(max);
        let ninf = _mm256_set1_ps(f32::NEG_INFINITY);
        let mut sum = 0f64;
        for i in (0..full).step_by(8) {
            // SAFETY: i + 8 <= full <= y.len().
            unsafe {
                let p = y.as_mut_ptr().add(i);
                let w = _mm256_loadu_ps(p);
                if _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_EQ_OQ>(w, ninf)) == 0xff {
                    _mm256_storeu_ps(p, _mm256_setzero_ps());
                    continue;
                }
                let e = v_expf(_mm256_sub_ps(w, vm));
                _mm256_storeu_ps(p, e);
                sum += hsum(e) as f64;
            }
        }
        for v in &mut y[full..n] {
            *v = (*v - max).exp();
            sum += *v as f64;
        }

        // pass 3: normalize by the f32 rounding of the f64 reciprocal
        let inv = (1.0 / sum) as f32;
        let vinv = _mm256_set1_ps(inv);
        for i in (0..full).step_by(8) {
            // SAFETY: i + 8 <= full <= y.len().
            unsafe {
                let p = y.as_mut_ptr().add(i);
                _mm256_storeu_ps(p, _mm256_mul_ps(_mm256_loadu_ps(p), vinv));
            }
        }
        y[full..n].iter_mut().for_each(|v| *v *= inv);
    }
}

#[cfg(target_arch = "aarch64")]
mod neon {
    use super::Mask;
    use crate::vexp::neon::v_expf;
    use std::arch::aarch64::*;

    /// The caller passes `x`, `y` and `mask` holding at least `y.len()` elements.
    pub(super) fn soft_max_row(x: &[f32], y: &mut [f32], mask: Mask<'_>, scale: f32, slope: f32) {
        let n = y.len().min(x.len()).min(mask.len());
        let full = n / 4 * 4;
        // SAFETY: NEON intrinsics (aarch64 baseline).
        let (vslope, mut vmax) = unsafe { (vdupq_n_f32(slope), vdupq_n_f32(f32::NEG_INFINITY)) };

        // pass 1: w = x * scale (+ slope * mask, fused) and its max
        for i in (0..full).step_by(4) {
            // SAFETY: i + 4 <= full <= n, and n bounds x, y and an F32 mask; NEON is baseline.
            unsafe {
                let mut w = vmulq_n_f32(vld1q_f32(x.as_ptr().add(i)), scale);
                w = match mask {
                    Mask::None => w,
                    Mask::F32(m) => vfmaq_f32(w, vslope, vld1q_f32(m.as_ptr().add(i))),
                    Mask::F16(_) => {
                        let m = [mask.get(i), mask.get(i + 1), mask.get(i + 2), mask.get(i + 3)];
                        vfmaq_f32(w, vslope, vld1q_f32(m.as_ptr()))
                    }
                };
                vst1q_f32(y.as_mut_ptr().add(i), w);
                vmax = vmaxq_f32(vmax, w);
            }
        }
        // order-free without NaNs (see `ggml_max`); a NaN propagates, and makes the row NaN anyway
        // SAFETY: NEON intrinsic (aarch64 baseline).
        let mut max = unsafe { vmaxvq_f32(vmax) };
        for i in full..n {
            let mut w = x[i] * scale;
            if !matches!(mask, Mask::None) {
                w = slope.mul_add(mask.get(i), w);
            }
            y[i] = w;
            max = max.max(w);
        }

        // pass 2: e = exp(w - max) in place, each group of 4 summed in f32, the groups in f64; four
        // masked values are written as the +0s v_expf gives them, without the exp (see x86)
        // SAFETY: NEON intrinsic (aarch64 baseline).
        let (vm, ninf) = unsafe { (vdupq_n_f32(max), vdupq_n_f32(f32::NEG_INFINITY)) };
        let mut sum = 0f64;
        for i in (0..full).step_by(4) {
            // SAFETY: i + 4 <= full <= y.len().
            unsafe {
                let p = y.as_mut_ptr().add(i);
                let w = vld1q_f32(p);
                if vminvq_u32(vceqq_f32(w, ninf)) == u32::MAX {
                    vst1q_f32(p, vdupq_n_f32(0.0));
                    continue;
                }
                let e = v_expf(vsubq_f32(w, vm));
                vst1q_f32(p, e);
                sum += vaddvq_f32(e) as f64;
            }
        }
        for v in &mut y[full..n] {
            *v = (*v - max).exp();
            sum += *v as f64;
        }

        // pass 3: normalize by the f32 rounding of the f64 reciprocal
        let inv = (1.0 / sum) as f32;
        for v in &mut y[..n] {
            *v *= inv;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu_features::available_levels;

    fn row(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).max(1);
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s as f32 / u32::MAX as f32) * 8.0 - 4.0
            })
            .collect()
    }

    /// Rows of a causal mask (runs of -inf, whole groups and ragged ones) give the bits of
    /// ggml's passes with every exp computed: the skipped groups are exactly the +0 that
    /// v_expf(-inf) gives, adding nothing to the sum. A fully masked row stays NaN.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn masked_groups_equal_computed_exps() {
        #[cfg(target_arch = "x86_64")]
        let (level, width) = (SimdLevel::Avx2, 8);
        #[cfg(target_arch = "aarch64")]
        let (level, width) = (SimdLevel::Neon, 4);
        if !available_levels().contains(&level) {
            return;
        }
        /// ggml's passes 2 and 3 (the loop before the skip), on w = x * scale + mask in `y`.
        fn reference(y: &mut [f32], width: usize) {
            let max = y.iter().fold(f32::NEG_INFINITY, |m, &v| if m > v { m } else { v });
            let full = y.len() / width * width;
            let mut sum = 0f64;
            for g in y[..full].chunks_exact_mut(width) {
                sum += exp_group(g, max) as f64;
            }
            for v in &mut y[full..] {
                *v = (*v - max).exp();
                sum += *v as f64;
            }
            let inv = (1.0 / sum) as f32;
            y.iter_mut().for_each(|v| *v *= inv);
        }
        /// One group through v_expf, replaced by its exps; their f32 sum in ggml's tree.
        #[cfg(target_arch = "x86_64")]
        fn exp_group(g: &mut [f32], max: f32) -> f32 {
            use crate::vexp::x86::v_expf;
            use std::arch::x86_64::*;
            #[target_feature(enable = "avx2,fma,f16c")]
            fn body(g: &mut [f32], max: f32) -> f32 {
                assert_eq!(g.len(), 8);
                // SAFETY: g holds 8 floats (asserted).
                unsafe {
                    let e = v_expf(_mm256_sub_ps(_mm256_loadu_ps(g.as_ptr()), _mm256_set1_ps(max)));
                    _mm256_storeu_ps(g.as_mut_ptr(), e);
                    let s = _mm_add_ps(_mm256_extractf128_ps::<1>(e), _mm256_castps256_ps128(e));
                    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
                    _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)))
                }
            }
            // SAFETY: the caller checked that the CPU has the Avx2 level.
            unsafe { body(g, max) }
        }
        #[cfg(target_arch = "aarch64")]
        fn exp_group(g: &mut [f32], max: f32) -> f32 {
            use crate::vexp::neon::v_expf;
            use std::arch::aarch64::*;
            assert_eq!(g.len(), 4);
            // SAFETY: g holds 4 floats (asserted); NEON is baseline.
            unsafe {
                let e = v_expf(vsubq_f32(vld1q_f32(g.as_ptr()), vdupq_n_f32(max)));
                vst1q_f32(g.as_mut_ptr(), e);
                vaddvq_f32(e)
            }
        }
        let n = 203;
        let x = row(n, 11);
        for visible in [0usize, 1, 3, 4, 5, 7, 8, 9, 64, 100, 202, 203] {
            let m: Vec<f32> = (0..n).map(|i| if i < visible { 0.0 } else { f32::NEG_INFINITY }).collect();
            let mut want: Vec<f32> = x.iter().zip(&m).map(|(&x, &m)| 0.7f32.mul_add(m, x * 0.3)).collect();
            reference(&mut want, width);
            let mut got = vec![0.0; n];
            soft_max_row_at(level, &x, &mut got, Mask::F32(&m), 0.3, 0.7);
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "{visible} visible");
            if visible == 0 {
                assert!(got.iter().all(|v| v.is_nan()));
            } else {
                assert!(got[visible..].iter().all(|v| v.to_bits() == 0) && got[..visible].iter().all(|&v| v > 0.0));
            }
        }
    }

    #[test]
    fn levels_agree_with_and_without_mask() {
        for n in [1usize, 7, 8, 37, 64, 203] {
            let x = row(n, n as u32);
            let m = row(n, 7 + n as u32);
            let m16: Vec<u8> = m.iter().flat_map(|&v| crate::quant::f16::fp32_to_fp16(v).to_le_bytes()).collect();
            for mask in [Mask::None, Mask::F32(&m), Mask::F16(&m16)] {
                let mut want = vec![0.0; n];
                soft_max_row_at(SimdLevel::Portable, &x, &mut want, mask, 0.3, 0.7);
                assert!((want.iter().map(|&v| v as f64).sum::<f64>() - 1.0).abs() < 1e-5);
                for level in available_levels() {
                    let mut got = vec![0.0; n];
                    soft_max_row_at(level, &x, &mut got, mask, 0.3, 0.7);
                    // the portable level's unfused mask add moves w by up to an ulp of |w| <= 4
                    for (i, (&w, &g)) in want.iter().zip(&got).enumerate() {
                        assert!((w - g).abs() <= 1e-6 * w.abs().max(1e-30), "{level:?} n={n} [{i}]: {g} vs {w}");
                    }
                }
            }
        }
    }

    /// ggml-cpu's NEON soft_max row in scalar Rust: fused mask add, exp body in groups of 4
    /// summed as `(e0 + e1) + (e2 + e3)`, libm for the tail.
    #[cfg(target_arch = "aarch64")]
    fn neon_model(x: &[f32], mask: Option<&[f32]>, scale: f32, slope: f32) -> Vec<f32> {
        use crate::vexp::tests::v_expf_model;
        let n = x.len();
        let w: Vec<f32> = (0..n).map(|i| match mask {
            Some(m) => slope.mul_add(m[i], x[i] * scale),
            None => x[i] * scale,
        }).collect();
        let max = ggml_max(&w);
        let body = n / 4 * 4;
        let mut e = vec![0f32; n];
        let mut sum = 0f64;
        for g in (0..body).step_by(4) {
            for i in g..g + 4 {
                e[i] = v_expf_model(w[i] - max);
            }
            sum += ((e[g] + e[g + 1]) + (e[g + 2] + e[g + 3])) as f64;
        }
        for i in body..n {
            e[i] = (w[i] - max).exp();
            sum += e[i] as f64;
        }
        let inv = (1.0 / sum) as f32;
        e.iter().map(|v| v * inv).collect()
    }

    #[cfg(target_arch = "aarch64")]
    #[test]
    fn neon_matches_ggml_model_bit_for_bit() {
        for n in [1usize, 3, 4, 5, 8, 37, 203, 1024] {
            let x = row(n, 3 * n as u32);
            let m = row(n, 11 + n as u32);
            let m16: Vec<u8> = m.iter().flat_map(|&v| crate::quant::f16::fp32_to_fp16(v).to_le_bytes()).collect();
            let m16f: Vec<f32> = m.iter().map(|&v| crate::quant::f16::fp16_to_fp32(crate::quant::f16::fp32_to_fp16(v))).collect();
            for (mask, mf) in [(Mask::None, None), (Mask::F32(&m), Some(&m[..])), (Mask::F16(&m16), Some(&m16f[..]))] {
                let want = neon_model(&x, mf, 0.125, 0.7);
                let mut got = vec![0.0; n];
                soft_max_row_at(SimdLevel::Neon, &x, &mut got, mask, 0.125, 0.7);
                for i in 0..n {
                    assert_eq!(got[i].to_bits(), want[i].to_bits(), "n={n} [{i}]");
                }
            }
        }
    }

    #[test]
    fn a_nan_makes_the_whole_row_nan() {
        // ggml's fold keeps a NaN only when it is the last element, else the max after it; the
        // NaN's own exp makes the sum NaN anyway, which is why the max's order is free
        let x = [1.0, 5.0, f32::NAN, 2.0, 3.0, 0.5, 1.5, 2.5, 0.25, 1.0];
        assert_eq!(ggml_max(&x), 3.0);
        for level in available_levels() {
            let mut y = [0.0; 10];
            soft_max_row_at(level, &x, &mut y, Mask::None, 1.0, 1.0);
            assert!(y.iter().all(|v| v.is_nan()), "{level:?}: {y:?}");
        }
    }

    #[test]
    fn fully_masked_row_is_nan_as_in_ggml() {
        let x = [0.5f32; 9];
        let m = [f32::NEG_INFINITY; 9];
        for level in available_levels() {
            let mut y = [0.0; 9];
            soft_max_row_at(level, &x, &mut y, Mask::F32(&m), 1.0, 1.0);
            assert!(y.iter().all(|v| v.is_nan()), "{level:?}: {y:?}");
        }
    }
}
