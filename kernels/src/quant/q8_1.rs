//! Q8_1: Q8_0 plus `s = d * sum(qs)`. Only used for activations paired with Q4_1 weights: the
//! precomputed sum turns the weights' per-block minimum into one multiply per block instead of
//! 32 multiply-adds.

use super::f16::{fp16_to_fp32, fp32_to_fp16};
use super::{QuantBlock, QK};
use crate::cpu_features::{clamp_level, simd_level, SimdLevel};

/// ggml's `block_q8_1`: value `j` is `d * qs[j]`; `s` caches `d * sum(qs)` (half bits).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockQ8_1 {
    /// Scale, IEEE half bits.
    pub d: u16,
    /// `d * sum(qs)`, IEEE half bits.
    pub s: u16,
    pub qs: [i8; QK],
}

const _: () = assert!(std::mem::size_of::<BlockQ8_1>() == 36);

// SAFETY: repr(C), only integer fields, 2 + 2 + 32 bytes with no padding (asserted above).
unsafe impl QuantBlock for BlockQ8_1 {
    const QK: usize = QK;
    const BYTES: usize = 36;
}

/// Quantizes `src` (`dst.len() * 32` values) byte-identically to ggml's `quantize_row_q8_1_ref`
/// (ggml-cpu's scalar activation quantizer): same scale and `roundf` rule as Q8_0, and
/// `s = half(f32(sum(qs)) * d)` with the unrounded d. Every level produces the same bytes.
pub fn quantize_row(src: &[f32], dst: &mut [BlockQ8_1]) {
    quantize_row_at(simd_level(), src, dst)
}

/// [`quantize_row`] on an explicit kernel level (identical bytes on every level for NaN-free input).
pub fn quantize_row_at(level: SimdLevel, src: &[f32], dst: &mut [BlockQ8_1]) {
    assert_eq!(src.len(), dst.len() * QK, "q8_1::quantize_row: length mismatch");
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
                let mut sum = 0i32;
                for (q, &v) in y.qs.iter_mut().zip(x) {
                    *q = (v * id).round() as i8;
                    sum += *q as i32;
                }
                y.s = fp32_to_fp16(sum as f32 * d);
            }
        }
    }
}

/// Expands blocks to `src.len() * 32` floats (`q * d`; `s` is not needed).
pub fn dequantize_row(src: &[BlockQ8_1], dst: &mut [f32]) {
    assert_eq!(dst.len(), src.len() * QK, "q8_1::dequantize_row: length mismatch");
    for (b, y) in src.iter().zip(dst.chunks_exact_mut(QK)) {
        let d = fp16_to_fp32(b.d);
        for (o, &q) in y.iter_mut().zip(&b.qs) {
            *o = q as f32 * d;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::super::q8_0::x86::quantize_block;
    use super::super::x86_util::*;
    use super::*;
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn quantize(src: &[f32], dst: &mut [BlockQ8_1]) {
        for (x, y) in src.chunks_exact(QK).zip(dst.iter_mut()) {
            let (q, d) = quantize_block(x);
            y.d = fp32_to_fp16(d);
            let sum = hsum_i32_8(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
            y.s = fp32_to_fp16(sum as f32 * d);
            store_i8x32(&mut y.qs, pack_i32x32_to_i8(q));
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod neon {
    use super::super::q8_0::neon::{quantize_block, store_i32x32_as_i8};
    use super::*;
    use std::arch::aarch64::*;

    /// ggml-cpu's NEON `quantize_row_q8_1`: Q8_0's NEON rule, and `s = half(d * sum)` with the
    /// integer sum reduced by `vaddvq_s32` (exact).
    pub(super) fn quantize(src: &[f32], dst: &mut [BlockQ8_1]) {
        for (x, y) in src.chunks_exact(QK).zip(dst.iter_mut()) {
            let (q, d) = quantize_block(x);
            y.d = fp32_to_fp16(d);
            // SAFETY: NEON intrinsics (aarch64 baseline).
            let sum = unsafe { vaddvq_s32(q.iter().fold(vdupq_n_s32(0), |a, &v| vaddq_s32(a, v))) };
            y.s = fp32_to_fp16(d * sum as f32);
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
        assert_eq!(std::mem::size_of::<BlockQ8_1>(), 36);
        assert_eq!(std::mem::offset_of!(BlockQ8_1, s), 2);
        assert_eq!(std::mem::offset_of!(BlockQ8_1, qs), 4);
    }

    #[test]
    fn quantize_hand_computed() {
        for level in available_levels() {
            let mut x = [0.0f32; 32];
            x[0] = -127.0; // d = 1
            x[1] = 3.5; // 4 on both rules
            x[20] = -0.5; // -1 away from zero, 0 to even
            let mut b = [BlockQ8_1::default()];
            quantize_row_at(level, &x, &mut b);
            let q20 = if level == SimdLevel::Portable { -1 } else { 0 };
            assert_eq!(b[0].d, 0x3C00);
            assert_eq!((b[0].qs[0], b[0].qs[1], b[0].qs[20]), (-127, 4, q20), "{level:?}");
            assert_eq!(fp16_to_fp32(b[0].s), (-123 + q20) as f32, "{level:?}");
        }
    }

    /// The portable quantizer is byte-identical to ggml's quantize_row_q8_1_ref on the golden rows.
    #[test]
    fn matches_ggml_golden() {
        for (seed, h) in GOLDEN {
            let x = golden_input(seed);
            let mut b = vec![BlockQ8_1::default(); GOLDEN_NB];
            quantize_row_at(SimdLevel::Portable, &x, &mut b);
            assert_eq!(fnv(blocks_as_bytes(&b)), h[7], "seed {seed}");
        }
    }

    /// Quants and scale equal Q8_0's on the same level (ggml uses one rule for both), and `s` is
    /// `half(d * sum(qs))`.
    #[test]
    fn quantize_levels_consistent_with_q8_0() {
        let mut rng = Lcg::new(22);
        for round in 0..100 {
            let scale = [1e-3f32, 1.0, 37.0, 1e4][round % 4];
            let x: Vec<f32> = (0..32 * 8).map(|_| rng.next_gauss() * scale).collect();
            for level in available_levels() {
                let mut got = vec![BlockQ8_1::default(); 8];
                quantize_row_at(level, &x, &mut got);
                let mut q0 = vec![super::super::BlockQ8_0::default(); 8];
                super::super::q8_0::quantize_row_at(level, &x, &mut q0);
                for ((a, b), xb) in got.iter().zip(&q0).zip(x.chunks_exact(32)) {
                    assert_eq!((a.d, a.qs), (b.d, b.qs), "{level:?} round {round}");
                    let sum: i32 = a.qs.iter().map(|&q| q as i32).sum();
                    let d = xb.iter().fold(0.0f32, |m, &v| m.max(v.abs())) / 127.0;
                    assert_eq!(a.s, fp32_to_fp16(sum as f32 * d), "{level:?} round {round}");
                }
            }
        }
    }
}
