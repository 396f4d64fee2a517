//! GELU as ggml-cpu computes it for f32 (`GGML_GELU_FP16`): 0 at or below -10, the input at or
//! above 10, and in between a table lookup by the input rounded to fp16, whose entry is the tanh
//! approximation of the fp16 value rounded to fp16 again.
//!
//! The table is kept as f32 (the fp16 entries widened, which is exact) so the AVX2 level can fetch
//! 8 entries with one gather after one `vcvtps2ph`; ggml-cpu looks up one element at a time.

use crate::cpu_features::{clamp_level, simd_level, SimdLevel};
use crate::quant::f16::{fp16_to_fp32, fp32_to_fp16};
use once_cell::sync::Lazy;

const TABLE_LEN: usize = 1 << 16;
const GELU_COEF_A: f32 = 0.044715;
const SQRT_2_OVER_PI: f32 = 0.797_884_6;

/// ggml's `ggml_gelu_f32` as the hosts' GCC compiles it: `1 + GELU_COEF_A*x*x` is contracted into
/// one FMA (GNU C, `-mfma`), which changes the rounding of some entries.
fn gelu_tanh(x: f32) -> f32 {
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * x * (GELU_COEF_A * x).mul_add(x, 1.0)).tanh())
}

/// ggml-cpu's `ggml_table_gelu_f16`, indexed by fp16 bits, entries widened to f32.
static TABLE: Lazy<Box<[f32]>> = Lazy::new(|| {
    (0..TABLE_LEN).map(|h| fp16_to_fp32(fp32_to_fp16(gelu_tanh(fp16_to_fp32(h as u16))))).collect()
});

/// Builds the table now, so that the first GELU node does not build it inside a timed or
/// multi-threaded region.
pub fn prepare() {
    Lazy::force(&TABLE);
}

/// GELU of `x` into `y` (equal lengths), bit for bit ggml-cpu's `ggml_vec_gelu_f32`.
pub fn gelu(x: &[f32], y: &mut [f32]) {
    gelu_at(simd_level(), x, y)
}

/// [`gelu`] on an explicit kernel level (clamped to what the CPU supports).
pub fn gelu_at(level: SimdLevel, x: &[f32], y: &mut [f32]) {
    let table: &[f32] = &TABLE;
    match clamp_level(level) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: clamp_level only returns Avx2 when AVX2, FMA and F16C were detected at runtime.
        SimdLevel::Avx2 | SimdLevel::Avx512 => unsafe { x86::gelu(table, x, y) },
        #[cfg(target_arch = "aarch64")]
        SimdLevel::Neon => neon::gelu(table, x, y),
        _ => y.iter_mut().zip(x).for_each(|(y, &x)| *y = gelu_scalar(table, x)),
    }
}

#[inline]
fn gelu_scalar(table: &[f32], x: f32) -> f32 {
    if x <= -10.0 {
        0.0
    } else if x >= 10.0 {
        x
    } else {
        table.get(fp32_to_fp16(x) as usize).copied().unwrap_or(f32::NAN)
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{gelu_scalar, TABLE_LEN};
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn gelu(table: &[f32], x: &[f32], y: &mut [f32]) {
        let n = x.len().min(y.len());
        let Ok(table) = <&[f32; TABLE_LEN]>::try_from(table) else {
            y.iter_mut().zip(x).for_each(|(y, &x)| *y = gelu_scalar(table, x));
            return;
        };
        let full = n / 8 * 8;
        let (lo, hi) = (_mm256_set1_ps(-10.0), _mm256_set1_ps(10.0));
        for (xs, ys) in x[..full].chunks_exact(8).zip(y[..full].chunks_exact_mut(8)) {
            // SAFETY: both chunks hold exactly 8 f32 (loadu/storeu need no alignment); the gather
            // indices are zero-extended 16-bit values, so below TABLE_LEN = table.len().
            unsafe {
                let v = _mm256_loadu_ps(xs.as_ptr());
                let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v);
                let g = _mm256_i32gather_ps::<4>(table.as_ptr(), _mm256_cvtepu16_epi32(h));
                let r = _mm256_blendv_ps(g, v, _mm256_cmp_ps::<_CMP_GE_OQ>(v, hi));
                let r = _mm256_andnot_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(v, lo), r);
                _mm256_storeu_ps(ys.as_mut_ptr(), r);
            }
        }
        for (y, &x) in y[full..n].iter_mut().zip(&x[full..n]) {
            *y = gelu_scalar(table, x);
        }
    }
}

/// Four elements at a time: one `fcvtn` for the table indices (ggml-cpu on ARM converts with the
/// hardware too), four scalar table loads (NEON has no gather), the two thresholds as selects.
/// The element-by-element software conversion was most of GELU's instructions.
#[cfg(target_arch = "aarch64")]
mod neon {
    use super::{gelu_scalar, TABLE_LEN};
    use crate::quant::f16::neon::narrow4;
    use std::arch::aarch64::*;

    pub(super) fn gelu(table: &[f32], x: &[f32], y: &mut [f32]) {
        let n = x.len().min(y.len());
        let Ok(table) = <&[f32; TABLE_LEN]>::try_from(table) else {
            y.iter_mut().zip(x).for_each(|(y, &x)| *y = gelu_scalar(table, x));
            return;
        };
        let full = n / 4 * 4;
        for (xs, ys) in x[..full].chunks_exact(4).zip(y[..full].chunks_exact_mut(4)) {
            // SAFETY: both chunks hold exactly 4 f32; `h` holds 4 u16; NEON is baseline.
            unsafe {
                let v = vld1q_f32(xs.as_ptr());
                let mut h = [0u16; 4];
                vst1_u16(h.as_mut_ptr(), narrow4(v));
                // u16 indices into a table of 2^16 entries: always in bounds
                let g = [table[h[0] as usize], table[h[1] as usize], table[h[2] as usize], table[h[3] as usize]];
                let r = vbslq_f32(vcgeq_f32(v, vdupq_n_f32(10.0)), v, vld1q_f32(g.as_ptr()));
                let r = vbslq_f32(vcleq_f32(v, vdupq_n_f32(-10.0)), vdupq_n_f32(0.0), r);
                vst1q_f32(ys.as_mut_ptr(), r);
            }
        }
        for (y, &x) in y[full..n].iter_mut().zip(&x[full..n]) {
            *y = gelu_scalar(table, x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu_features::available_levels;

    #[test]
    fn constants_are_ggmls() {
        assert_eq!(SQRT_2_OVER_PI, (2.0f64 / std::f64::consts::PI).sqrt() as f32);
        assert_eq!(GELU_COEF_A.to_bits(), 0x3d37_2713);
    }

    #[test]
    fn levels_agree_on_every_half() {
        // every fp16 value, the thresholds, and values between halves (rounding ties)
        let mut x: Vec<f32> = (0..=u16::MAX).map(fp16_to_fp32).collect();
        x.extend([-10.0, 10.0, -10.000001, 9.999999, 0.0, -0.0, 1e30, -1e30, 1.000_244_1, -3.000_976_6]);
        x.extend((0..4000).map(|i| (i as f32 - 2000.0) * 0.006_123_4));
        let mut want = vec![0.0; x.len()];
        gelu_at(SimdLevel::Portable, &x, &mut want);
        for level in available_levels() {
            let mut got = vec![0.0; x.len()];
            gelu_at(level, &x, &mut got);
            for ((&x, &w), &g) in x.iter().zip(&want).zip(&got) {
                assert!(w.to_bits() == g.to_bits() || (w.is_nan() && g.is_nan()), "{level:?}: gelu({x}) = {g} vs {w}");
            }
        }
    }

    #[test]
    fn matches_the_formula_where_fp16_is_exact() {
        let mut y = [0.0f32; 3];
        gelu_at(simd_level(), &[-20.0, 0.0, 12.5], &mut y);
        assert_eq!(y, [0.0, 0.0, 12.5]);
        let mut y = [0.0f32; 1];
        gelu_at(simd_level(), &[1.0], &mut y);
        assert!((y[0] - 0.841_192).abs() < 1e-3);
    }
}
