//! Q8_0: 32 values as signed bytes with one half-float scale (8.5 bits per value).
//!
//! Serves twice: as a weight format, and as the format activations are converted to before a
//! dot product with Q4_0/Q8_0 weights (integer multiply-adds are several times faster than f32
//! ones and the activation error it adds is ~1e-5 relative).

use super::f16::{fp16_to_fp32, fp32_to_fp16};
use super::{QuantBlock, QK};
use crate::cpu_features::{clamp_level, simd_level, SimdLevel};

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

/// Quantizes `src` (`dst.len() * 32` values) as ggml-cpu's activation quantizer does on the same
/// kind of CPU, because the products that follow must see the same quants as stock's:
/// - portable: ggml's `quantize_row_q8_0_ref`, `d = amax / 127`, `q = roundf(x * (1 / d))`,
///   halves away from zero (also what ggml writes into files);
/// - AVX2: ggml-cpu's AVX2 `quantize_row_q8_0`, `q = x * (127 / amax)` rounded half to even;
/// - NEON: ggml-cpu's NEON `quantize_row_q8_0`, `q = x * (1 / d)` (as the portable rule)
///   rounded half to even (`vcvtnq_s32_f32`).
///
/// They differ only in rare last-bit cases. Quants are always within -127..=127.
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
        SimdLevel::Avx2 | SimdLevel::Avx512 => unsafe { x86::quantize(src, dst) },
        #[cfg(target_arch = "aarch64")]
        SimdLevel::Neon => neon::quantize(src, dst),
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
        SimdLevel::Avx2 | SimdLevel::Avx512 => unsafe { x86::dequantize(src, dst) },
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

/// ggml's generic kernel: exact i32 block sums, then `sumi * (dx * dy)` accumulated serially.
pub fn vec_dot_portable(x: &[BlockQ8_0], y: &[BlockQ8_0]) -> f32 {
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

    /// Scales 32 floats by `127 / amax` and rounds half to even, as ggml-cpu's AVX2 quantizer,
    /// returning the integers as 4x8 i32 plus the (unrounded) f32 scale `amax / 127`. Shared
    /// with the Q8_1 quantizer.
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
        let id = _mm256_set1_ps(if amax != 0.0 { 127.0 / amax } else { 0.0 });
        let round = |v: __m256| _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_mul_ps(v, id));
        let q = [round(v[0]), round(v[1]), round(v[2]), round(v[3])].map(|v| _mm256_cvtps_epi32(v));
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

#[cfg(target_arch = "aarch64")]
pub(crate) mod neon {
    use super::*;
    use std::arch::aarch64::*;

    /// ggml-cpu's NEON block quantizer: amax by a `vmaxq` tree, `d = amax / 127`, `id = 1 / d`,
    /// `q = vcvtnq(x * id)` (ties to even). Returns the 8x4 integers and the unrounded f32 `d`.
    /// Shared with the Q8_1 quantizer.
    #[inline(always)]
    pub(crate) fn quantize_block(x: &[f32]) -> ([int32x4_t; 8], f32) {
        let x = &x[..QK];
        // SAFETY: `x` holds 32 f32, so every 4-element load at 4j (j < 8) is in bounds; the
        // other intrinsics are NEON, which is part of the aarch64 baseline.
        unsafe {
            let v: [float32x4_t; 8] = std::array::from_fn(|j| vld1q_f32(x.as_ptr().add(4 * j)));
            let a: [float32x4_t; 8] = v.map(|v| vabsq_f32(v));
            let m = vmaxq_f32(
                vmaxq_f32(vmaxq_f32(a[0], a[1]), vmaxq_f32(a[2], a[3])),
                vmaxq_f32(vmaxq_f32(a[4], a[5]), vmaxq_f32(a[6], a[7])),
            );
            let amax = vmaxvq_f32(m);
            let d = amax / 127.0;
            let id = if d != 0.0 { 1.0 / d } else { 0.0 };
            (v.map(|v| vcvtnq_s32_f32(vmulq_n_f32(v, id))), d)
        }
    }

    /// 32 integers in -128..=127 to bytes, element order kept.
    #[inline(always)]
    pub(crate) fn store_i32x32_as_i8(q: &[int32x4_t; 8], out: &mut [i8; 32]) {
        // SAFETY: `out` is 32 writable bytes; NEON is part of the aarch64 baseline.
        unsafe {
            let h = |a: int32x4_t, b: int32x4_t| vcombine_s16(vmovn_s32(a), vmovn_s32(b));
            let lo = vcombine_s8(vmovn_s16(h(q[0], q[1])), vmovn_s16(h(q[2], q[3])));
            let hi = vcombine_s8(vmovn_s16(h(q[4], q[5])), vmovn_s16(h(q[6], q[7])));
            vst1q_s8(out.as_mut_ptr(), lo);
            vst1q_s8(out.as_mut_ptr().add(16), hi);
        }
    }

    pub(super) fn quantize(src: &[f32], dst: &mut [BlockQ8_0]) {
        for (x, y) in src.chunks_exact(QK).zip(dst.iter_mut()) {
            let (q, d) = quantize_block(x);
            y.d = fp32_to_fp16(d);
            store_i32x32_as_i8(&q, &mut y.qs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::blocks_as_bytes;
    use super::super::test_util::*;
    use super::*;
    use crate::cpu_features::available_levels;

    #[test]
    fn layout() {
        assert_eq!(std::mem::size_of::<BlockQ8_0>(), 34);
        assert_eq!(std::mem::offset_of!(BlockQ8_0, qs), 2);
    }

    /// ggml-cpu's AVX2 `quantize_row_q8_0`, element by element: `x * (127 / amax)`, ties to even.
    pub(crate) fn ggml_avx2_rule(x: &[f32]) -> Vec<BlockQ8_0> {
        x.chunks_exact(32)
            .map(|x| {
                let amax = x.iter().fold(0.0f32, |a, &v| a.max(v.abs()));
                let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
                BlockQ8_0 { d: fp32_to_fp16(amax / 127.0), qs: std::array::from_fn(|i| (x[i] * id).round_ties_even() as i8) }
            })
            .collect()
    }

    /// ggml's scalar (`roundf`) and NEON (`vcvtnq`, ties to even) rules: `x * (1 / d)`.
    pub(crate) fn ggml_inverse_rule(x: &[f32], round: fn(f32) -> f32) -> Vec<BlockQ8_0> {
        x.chunks_exact(32)
            .map(|x| {
                let amax = x.iter().fold(0.0f32, |a, &v| a.max(v.abs()));
                let d = amax / 127.0;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                BlockQ8_0 { d: fp32_to_fp16(d), qs: std::array::from_fn(|i| round(x[i] * id) as i8) }
            })
            .collect()
    }

    /// Where `x * (1/d)` and `x * (127/amax)` round differently the NEON quantizer must follow
    /// the former: such inputs are rare at random, so search next to the rounding midpoints.
    #[test]
    fn neon_rule_is_the_inverse_scale() {
        let mut rng = Lcg::new(31);
        let mut differing = Vec::new();
        while differing.len() < 64 {
            let amax = 1.0 + (rng.next_f32() + 1.0) * 4.0;
            let d = amax / 127.0;
            let (id, id2) = (1.0 / d, 127.0 / amax);
            for k in 0..126 {
                let mid = (k as f32 + 0.5) * d;
                for delta in -3i32..=3 {
                    let x = f32::from_bits((mid.to_bits() as i32 + delta) as u32);
                    if (x * id).round_ties_even() != (x * id2).round_ties_even() {
                        let mut block = [0.0f32; 32];
                        block[0] = -amax;
                        block[1 + differing.len() % 31] = x;
                        differing.push(block);
                    }
                }
            }
        }
        for block in &differing {
            let inv = ggml_inverse_rule(block, f32::round_ties_even);
            assert_ne!(inv, ggml_avx2_rule(block));
            for level in available_levels() {
                if level == SimdLevel::Neon {
                    let mut got = [BlockQ8_0::default()];
                    quantize_row_at(level, block, &mut got);
                    assert_eq!(got[0], inv[0]);
                }
            }
        }
    }

    #[test]
    fn quantize_hand_computed() {
        for level in available_levels() {
            // amax 127 -> d = 1; ties: away from zero (ggml's scalar quantizer), to even (AVX2).
            let mut x = [0.0f32; 32];
            x[0] = 127.0;
            x[1] = 2.5;
            x[2] = -2.5;
            x[3] = 1.49;
            x[4] = -126.5;
            x[31] = 0.5;
            let mut b = [BlockQ8_0::default()];
            quantize_row_at(level, &x, &mut b);
            let (want, last) = if level == SimdLevel::Portable { ([127, 3, -3, 1, -127], 1) } else { ([127, 2, -2, 1, -126], 0) };
            // (both SIMD rules round ties to even; with d = 1 their scales agree)
            assert_eq!(b[0].d, 0x3C00, "{level:?}");
            assert_eq!(b[0].qs[..5], want, "{level:?}");
            assert_eq!(b[0].qs[31], last, "{level:?}");
            assert!(b[0].qs[5..31].iter().all(|&q| q == 0));

            quantize_row_at(level, &[0.0; 32], &mut b);
            assert_eq!(b[0], BlockQ8_0 { d: 0, qs: [0; 32] }, "{level:?}");
        }
    }

    /// The portable quantizer is byte-identical to ggml's quantize_row_q8_0_ref; dequantization
    /// is identical on every level.
    #[test]
    fn matches_ggml_golden() {
        for (seed, h) in GOLDEN {
            let x = golden_input(seed);
            let mut b = vec![BlockQ8_0::default(); GOLDEN_NB];
            quantize_row_at(SimdLevel::Portable, &x, &mut b);
            assert_eq!(fnv(blocks_as_bytes(&b)), h[5], "quantize seed {seed}");
            for level in available_levels() {
                let mut y = vec![0.0f32; x.len()];
                dequantize_row_at(level, &b, &mut y);
                assert_eq!(fnv(&f32_bytes(&y)), h[6], "dequantize seed {seed} {level:?}");
            }
            if seed == 1 {
                let mut want = vec![0u8, 60, 129];
                want.extend(241..=255u8);
                want.extend(1..=16u8);
                assert_eq!(blocks_as_bytes(&b[8..9]), &want[..]);
            }
        }
    }

    /// Every level follows its ggml-cpu counterpart byte for byte on many random rows, including
    /// values that land exactly on .5 after scaling: the portable one ggml's scalar rule, the
    /// AVX2 one ggml's AVX2 rule.
    #[test]
    fn quantize_levels_follow_ggml() {
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
            for level in available_levels() {
                let mut got = vec![BlockQ8_0::default(); 8];
                quantize_row_at(level, &x, &mut got);
                let want = match level {
                    SimdLevel::Portable => ggml_inverse_rule(&x, f32::round),
                    SimdLevel::Neon => ggml_inverse_rule(&x, f32::round_ties_even),
                    SimdLevel::Avx2 | SimdLevel::Avx512 => ggml_avx2_rule(&x),
                };
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

}
