//! Q8_0: 32 values as signed bytes with one half-float scale (8.5 bits per value).
//!
//! Serves twice: as a weight format, and as the format activations are converted to before a
//! dot product with Q4_0/Q8_0 weights (integer multiply-adds are several times faster than f32
//! ones and the activation error it adds is ~1e-5 relative).

use super::f16::{fp16_to_fp32, fp32_to_fp16};
use super::{QuantBlock, QK};
use crate::simd::cpu_features::{clamp_level, simd_level, SimdLevel};

/// ggml's `block_q8_0`: value `j` is `d * qs[j]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockQ8_0 {
    /// Scale, IEEE half bits.
    pub d: u16,
    pub qs: [i8; QK],
}

const _: () = assert!(std::mem::size_of::<BlockQ8_0>() == 34);

// SAFETY: repr(C), only integer fields, 2 + 32 bytes with no padding (asserted above).
unsafe impl QuantBlock for BlockQ8_0 {
    const QK: usize = QK;
    const BYTES: usize = 34;
}

/// Quantizes `src` (`dst.len() * 32` values) byte-identically to ggml's `quantize_row_q8_0_ref`
/// (which is also ggml-cpu's scalar activation quantizer): `d = amax / 127`, `q = roundf(x / d)`
/// computed as `x * (1 / d)`, halves rounded away from zero. The AVX2 path reproduces this
/// exactly rather than following ggml's AVX2 variant (`127 / amax`, ties to even), so results do
/// not depend on the machine. Quants are always within -127..=127.
pub fn quantize_row(src: &[f32], dst: &mut [BlockQ8_0]) {
    quantize_row_at(simd_level(), src, dst)
}

/// [`quantize_row`] on an explicit kernel level; every level gives identical bytes
/// (for NaN-free input).
pub fn quantize_row_at(level: SimdLevel, src: &[f32], dst: &mut [BlockQ8_0]) {
    assert_eq!(src.len(), dst.len() * QK, "q8_0::quantize_row: length mismatch");
    match clamp_level(level) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: clamp_level only returns Avx2 when AVX2, FMA and F16C were detected at runtime.
        SimdLevel::Avx2 => unsafe { x86::quantize(src, dst) },
        _ => {
            for (x, y) in src.chunks_exact(QK).zip(dst.iter_mut()) {
                let amax = x.iter().fold(0.0f32, |a, &v| if a > v.abs() { a } else { v.abs() });
                let d = amax / 127.0;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                y.d = fp32_to_fp16(d);
                for (q, &v) in y.qs.iter_mut().zip(x) {
                    *q = (v * id).round() as i8;
                }
            }
        }
    }
}

/// Expands blocks to `src.len() * 32` floats (`q * d`).
pub fn dequantize_row(src: &[BlockQ8_0], dst: &mut [f32]) {
    dequantize_row_at(simd_level(), src, dst)
}

/// [`dequantize_row`] on an explicit kernel level; every level gives bit-identical output.
pub fn dequantize_row_at(level: SimdLevel, src: &[BlockQ8_0], dst: &mut [f32]) {
    assert_eq!(dst.len(), src.len() * QK, "q8_0::dequantize_row: length mismatch");
    match clamp_level(level) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: clamp_level only returns Avx2 when AVX2, FMA and F16C were detected at runtime.
        SimdLevel::Avx2 => unsafe { x86::dequantize(src, dst) },
        _ => {
            for (b, y) in src.iter().zip(dst.chunks_exact_mut(QK)) {
                let d = fp16_to_fp32(b.d);
                for (o, &q) in y.iter_mut().zip(&b.qs) {
                    *o = q as f32 * d;
                }
            }
        }
    }
}

/// Dot product of Q8_0 weights with Q8_0 activations (`32 * x.len()` values).
///
/// Block integer sums are exact on every level; only float accumulation order differs. `y` must
/// come from [`quantize_row`] (no -128 quants; the AVX2 sign trick cannot negate -128). `x` may
/// hold any byte.
pub fn vec_dot_q8_0_q8_0(x: &[BlockQ8_0], y: &[BlockQ8_0]) -> f32 {
    vec_dot_q8_0_q8_0_at(simd_level(), x, y)
}

/// [`vec_dot_q8_0_q8_0`] on an explicit kernel level (clamped to what the CPU supports).
pub fn vec_dot_q8_0_q8_0_at(level: SimdLevel, x: &[BlockQ8_0], y: &[BlockQ8_0]) -> f32 {
    assert_eq!(x.len(), y.len(), "vec_dot_q8_0_q8_0: block count mismatch");
    match clamp_level(level) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: clamp_level only returns Avx2 when AVX2, FMA and F16C were detected at runtime.
        SimdLevel::Avx2 => unsafe { x86::vec_dot(x, y) },
        _ => vec_dot_portable(x, y),
    }
}

/// ggml's generic kernel: exact i32 block sums, then `sumi * (dx * dy)` accumulated serially.
pub(crate) fn vec_dot_portable(x: &[BlockQ8_0], y: &[BlockQ8_0]) -> f32 {
    let mut sumf = 0.0f32;
    for (bx, by) in x.iter().zip(y) {
        let sumi: i32 = bx.qs.iter().zip(&by.qs).map(|(&a, &b)| a as i32 * b as i32).sum();
        sumf += sumi as f32 * (fp16_to_fp32(bx.d) * fp16_to_fp32(by.d));
    }
    sumf
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    use super::super::x86_util::*;
    use super::*;
    use std::arch::x86_64::*;

    /// Scales 32 floats by the block's inverse scale and rounds like C `roundf`, returning the
    /// integers as 4x8 i32 plus the (unrounded) f32 scale. Shared with the Q8_1 quantizer.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn quantize_block(x: &[f32]) -> ([__m256i; 4], f32) {
        let v = [
            load8_f32(&x[0..8]),
            load8_f32(&x[8..16]),
            load8_f32(&x[16..24]),
            load8_f32(&x[24..32]),
        ];
        let amax = abs_max32(&v);
        let d = amax / 127.0;
        let id = _mm256_set1_ps(if d != 0.0 { 1.0 / d } else { 0.0 });
        let q = v.map(|v| _mm256_cvttps_epi32(round_half_away(_mm256_mul_ps(v, id))));
        (q, d)
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn quantize(src: &[f32], dst: &mut [BlockQ8_0]) {
        for (x, y) in src.chunks_exact(QK).zip(dst.iter_mut()) {
            let (q, d) = quantize_block(x);
            y.d = fp32_to_fp16(d);
            store_i8x32(&mut y.qs, pack_i32x32_to_i8(q));
        }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn block_dot(bx: &BlockQ8_0, by: &BlockQ8_0, acc: __m256) -> __m256 {
        let d = scale_product(bx.d, by.d);
        let q = mul_sum_i8_pairs_float(load_i8x32(&bx.qs), load_i8x32(&by.qs));
        _mm256_fmadd_ps(d, q, acc)
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn vec_dot(x: &[BlockQ8_0], y: &[BlockQ8_0]) -> f32 {
        let mut acc0 = _mm256_setzero_ps();
        let mut acc1 = _mm256_setzero_ps();
        let mut xp = x.chunks_exact(2);
        let mut yp = y.chunks_exact(2);
        for (bx, by) in (&mut xp).zip(&mut yp) {
            acc0 = block_dot(&bx[0], &by[0], acc0);
            acc1 = block_dot(&bx[1], &by[1], acc1);
        }
        for (bx, by) in xp.remainder().iter().zip(yp.remainder()) {
            acc0 = block_dot(bx, by, acc0);
        }
        hsum_ps(_mm256_add_ps(acc0, acc1))
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn dequantize(src: &[BlockQ8_0], dst: &mut [f32]) {
        for (b, y) in src.iter().zip(dst.chunks_exact_mut(QK)) {
            let d = _mm256_set1_ps(fp16_to_fp32(b.d));
            let q = load_i8x32(&b.qs);
            store16_i8_scaled(&mut y[0..16], _mm256_castsi256_si128(q), d);
            store16_i8_scaled(&mut y[16..32], _mm256_extracti128_si256::<1>(q), d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::blocks_as_bytes;
    use super::super::test_util::*;
    use super::*;
    use crate::simd::cpu_features::available_levels;

    #[test]
    fn layout() {
        assert_eq!(std::mem::size_of::<BlockQ8_0>(), 34);
        assert_eq!(std::mem::offset_of!(BlockQ8_0, qs), 2);
    }

    #[test]
    fn quantize_hand_computed() {
        for level in available_levels() {
            // amax 127 -> d = 1; ties round away from zero.
            let mut x = [0.0f32; 32];
            x[0] = 127.0;
            x[1] = 2.5; // 3
            x[2] = -2.5; // -3
            x[3] = 1.49; // 1
            x[4] = -126.5; // -127
            x[31] = 0.5; // 1
            let mut b = [BlockQ8_0::default()];
            quantize_row_at(level, &x, &mut b);
            assert_eq!(b[0].d, 0x3C00, "{level:?}");
            assert_eq!(b[0].qs[..5], [127, 3, -3, 1, -127], "{level:?}");
            assert_eq!(b[0].qs[31], 1, "{level:?}");
            assert!(b[0].qs[5..31].iter().all(|&q| q == 0));

            quantize_row_at(level, &[0.0; 32], &mut b);
            assert_eq!(b[0], BlockQ8_0 { d: 0, qs: [0; 32] }, "{level:?}");
        }
    }

    /// Byte-identical to ggml's quantize_row_q8_0_ref / dequantize_row_q8_0, on every level.
    #[test]
    fn matches_ggml_golden() {
        for (seed, h) in GOLDEN {
            let x = golden_input(seed);
            for level in available_levels() {
                let mut b = vec![BlockQ8_0::default(); GOLDEN_NB];
                quantize_row_at(level, &x, &mut b);
                assert_eq!(fnv(blocks_as_bytes(&b)), h[5], "quantize seed {seed} {level:?}");
                let mut y = vec![0.0f32; x.len()];
                dequantize_row_at(level, &b, &mut y);
                assert_eq!(fnv(&f32_bytes(&y)), h[6], "dequantize seed {seed} {level:?}");
                if seed == 1 {
                    let mut want = vec![0u8, 60, 129];
                    want.extend(241..=255u8);
                    want.extend(1..=16u8);
                    assert_eq!(blocks_as_bytes(&b[8..9]), &want[..]);
                }
            }
        }
    }

    /// SIMD and portable quantizers agree byte for byte on many random rows, including values
    /// that land exactly on .5 after scaling.
    #[test]
    fn quantize_levels_identical() {
        let mut rng = Lcg::new(21);
        for round in 0..200 {
            let scale = [1e-3f32, 1.0, 37.0, 1e4][round % 4];
            let mut x: Vec<f32> = (0..32 * 8).map(|_| rng.next_gauss() * scale).collect();
            if round % 3 == 0 {
                // Force ties: amax 127 gives d = 1, id = 1.
                for (i, v) in x.iter_mut().enumerate() {
                    *v = if i % 32 == 7 { -127.0 } else { ((rng.next_u32() % 253) as f32 - 126.0) + 0.5 };
                }
            }
            let mut want = vec![BlockQ8_0::default(); 8];
            quantize_row_at(SimdLevel::Portable, &x, &mut want);
            for level in available_levels() {
                let mut got = vec![BlockQ8_0::default(); 8];
                quantize_row_at(level, &x, &mut got);
                assert_eq!(got, want, "{level:?} round {round}");
                assert!(got.iter().all(|b| b.qs.iter().all(|&q| q != -128)));
            }
        }
    }

    #[test]
    fn round_trip_error_bound() {
        let mut rng = Lcg::new(8);
        let x: Vec<f32> = (0..32 * 50).map(|_| rng.next_gauss()).collect();
        let mut b = vec![BlockQ8_0::default(); 50];
        quantize_row(&x, &mut b);
        let mut y = vec![0.0f32; x.len()];
        dequantize_row(&b, &mut y);
        for (i, blk) in b.iter().enumerate() {
            let d = fp16_to_fp32(blk.d);
            for j in 0..32 {
                let (a, r) = (x[i * 32 + j], y[i * 32 + j]);
                // Half a step plus the half-rounding of d (relative 2^-11, times up to 127 steps).
                let tol = 0.5 * d + 127.0 * d * 2f32.powi(-11);
                assert!((a - r).abs() <= tol, "block {i} elem {j}: {a} vs {r}");
            }
        }
        assert!(nmse(&y, &x) < 1e-4);
    }

    #[test]
    fn dot_simd_vs_portable() {
        let mut rng = Lcg::new(12);
        for &nb in &[1usize, 2, 3, 18, 48, 1536] {
            let w: Vec<f32> = (0..nb * 32).map(|_| rng.next_gauss()).collect();
            let a: Vec<f32> = (0..nb * 32).map(|_| rng.next_gauss()).collect();
            let mut bw = vec![BlockQ8_0::default(); nb];
            let mut ba = vec![BlockQ8_0::default(); nb];
            quantize_row(&w, &mut bw);
            quantize_row(&a, &mut ba);
            let mut wd = vec![0f32; nb * 32];
            let mut ad = vec![0f32; nb * 32];
            dequantize_row(&bw, &mut wd);
            dequantize_row(&ba, &mut ad);
            let exact: f64 = wd.iter().zip(&ad).map(|(&p, &q)| p as f64 * q as f64).sum();
            let mag: f64 = wd.iter().zip(&ad).map(|(&p, &q)| (p as f64 * q as f64).abs()).sum();
            for level in available_levels() {
                let s = vec_dot_q8_0_q8_0_at(level, &bw, &ba) as f64;
                assert!((s - exact).abs() <= mag * 1e-6 + 1e-6, "{level:?} nb={nb}: {s} vs {exact}");
            }
        }
    }

    /// Unit scales: all float ops exact, so every level returns the same value. Weights include
    /// -128 (legal in a weight block).
    #[test]
    fn dot_exact_with_unit_scales() {
        let mut rng = Lcg::new(13);
        for &nb in &[1usize, 5, 64] {
            let x: Vec<BlockQ8_0> = (0..nb)
                .map(|_| BlockQ8_0 { d: 0x3C00, qs: std::array::from_fn(|_| rng.next_u32() as i8) })
                .collect();
            let y: Vec<BlockQ8_0> = (0..nb)
                .map(|_| BlockQ8_0 {
                    d: 0x3C00,
                    qs: std::array::from_fn(|_| ((rng.next_u32() % 255) as i32 - 127) as i8),
                })
                .collect();
            let want: i64 = x
                .iter()
                .zip(&y)
                .flat_map(|(a, b)| a.qs.iter().zip(&b.qs).map(|(&p, &q)| p as i64 * q as i64))
                .sum();
            for level in available_levels() {
                assert_eq!(vec_dot_q8_0_q8_0_at(level, &x, &y), want as f32, "{level:?}");
            }
        }
    }
}
