//! Q4_1: 32 values as 4-bit steps above a per-block minimum (5 bits per value). Costs one more
//! half than Q4_0 but represents blocks that are not centred on zero much better.

use super::f16::{fp16_to_fp32, fp32_to_fp16};
use super::q8_1::BlockQ8_1;
use super::{QuantBlock, QK};
use crate::cpu_features::{clamp_level, simd_level, SimdLevel};

/// ggml's `block_q4_1`: value `j` is `d * nibble(j) + m`, low nibbles = elements 0..16, high
/// nibbles = 16..32.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockQ4_1 {
    /// Step, IEEE half bits.
    pub d: u16,
    /// Block minimum, IEEE half bits.
    pub m: u16,
    pub qs: [u8; QK / 2],
}

const _: () = assert!(std::mem::size_of::<BlockQ4_1>() == 20);

// SAFETY: repr(C), only integer fields, 2 + 2 + 16 bytes with no padding (asserted above).
unsafe impl QuantBlock for BlockQ4_1 {
    const QK: usize = QK;
    const BYTES: usize = 20;
}

/// Quantizes `src` (`dst.len() * 32` values) exactly like ggml's `quantize_row_q4_1_ref`.
///
/// Uses the unrounded f32 min and step for the nibbles even though half-rounded copies are
/// stored, because that is what ggml does and files must match byte for byte.
pub fn quantize_row(src: &[f32], dst: &mut [BlockQ4_1]) {
    assert_eq!(src.len(), dst.len() * QK, "q4_1::quantize_row: length mismatch");
    for (x, y) in src.chunks_exact(QK).zip(dst.iter_mut()) {
        let mut min = f32::MAX;
        let mut max = -f32::MAX;
        for &v in x {
            if v < min {
                min = v;
            }
            if v > max {
                max = v;
            }
        }
        let d = (max - min) / 15.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        y.d = fp32_to_fp16(d);
        y.m = fp32_to_fp16(min);
        for j in 0..QK / 2 {
            let xi0 = (((x[j] - min) * id + 0.5) as i8).min(15) as u8;
            let xi1 = (((x[j + QK / 2] - min) * id + 0.5) as i8).min(15) as u8;
            y.qs[j] = xi0 | (xi1 << 4);
        }
    }
}

/// Expands blocks to `src.len() * 32` floats (`q * d + m`, multiply and add rounded separately
/// on every level so all levels agree bit for bit).
pub fn dequantize_row(src: &[BlockQ4_1], dst: &mut [f32]) {
    dequantize_row_at(simd_level(), src, dst)
}

/// [`dequantize_row`] on an explicit kernel level; every level gives bit-identical output.
pub fn dequantize_row_at(level: SimdLevel, src: &[BlockQ4_1], dst: &mut [f32]) {
    assert_eq!(dst.len(), src.len() * QK, "q4_1::dequantize_row: length mismatch");
    match clamp_level(level) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: clamp_level only returns Avx2 when AVX2, FMA and F16C were detected at runtime.
        SimdLevel::Avx2 | SimdLevel::Avx512 => unsafe { x86::dequantize(src, dst) },
        _ => {
            for (b, y) in src.iter().zip(dst.chunks_exact_mut(QK)) {
                let d = fp16_to_fp32(b.d);
                let m = fp16_to_fp32(b.m);
                for j in 0..QK / 2 {
                    y[j] = (b.qs[j] & 0x0F) as f32 * d + m;
                    y[j + QK / 2] = (b.qs[j] >> 4) as f32 * d + m;
                }
            }
        }
    }
}

/// ggml's generic kernel: `(dx * dy) * sumi + mx * sy` per block, accumulated serially.
pub fn vec_dot_portable(x: &[BlockQ4_1], y: &[BlockQ8_1]) -> f32 {
    let mut sumf = 0.0f32;
    for (bx, by) in x.iter().zip(y) {
        let mut sumi = 0i32;
        for j in 0..QK / 2 {
            let v0 = (bx.qs[j] & 0x0F) as i32;
            let v1 = (bx.qs[j] >> 4) as i32;
            sumi += v0 * by.qs[j] as i32 + v1 * by.qs[j + QK / 2] as i32;
        }
        sumf += (fp16_to_fp32(bx.d) * fp16_to_fp32(by.d)) * sumi as f32
            + fp16_to_fp32(bx.m) * fp16_to_fp32(by.s);
    }
    sumf
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    use super::super::x86_util::*;
    use super::*;
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn dequantize(src: &[BlockQ4_1], dst: &mut [f32]) {
        for (b, y) in src.iter().zip(dst.chunks_exact_mut(QK)) {
            let h = halves4(b.d, b.m, 0, 0);
            let d = _mm256_broadcastss_ps(h);
            let m = _mm256_broadcastss_ps(_mm_movehdup_ps(h));
            let q = nibbles32(&b.qs);
            let q_lo = _mm256_castsi256_si128(q);
            let q_hi = _mm256_extracti128_si256::<1>(q);
            for (half, out) in [q_lo, q_hi].into_iter().zip(y.chunks_exact_mut(16)) {
                let a = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(half));
                let b = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128::<8>(half)));
                // mul then add (not FMA) to round exactly like the portable path.
                store8_f32(&mut out[0..8], _mm256_add_ps(_mm256_mul_ps(a, d), m));
                store8_f32(&mut out[8..16], _mm256_add_ps(_mm256_mul_ps(b, d), m));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::super::blocks_as_bytes;
    use super::*;
    use crate::cpu_features::available_levels;

    #[test]
    fn layout() {
        assert_eq!(std::mem::size_of::<BlockQ4_1>(), 20);
        assert_eq!(std::mem::offset_of!(BlockQ4_1, m), 2);
        assert_eq!(std::mem::offset_of!(BlockQ4_1, qs), 4);
    }

    #[test]
    fn quantize_hand_computed() {
        // min 1, max 16 -> d = 1, q = trunc(x - 1 + 0.5) clamped to 15.
        let mut x = [1.0f32; 32];
        x[0] = 16.0; // 15
        x[1] = 2.49; // 1.99 -> 1
        x[2] = 2.5; // 2.0 -> 2
        x[16] = 9.0; // high nibble of qs[0]: 8
        x[17] = 1.0; // 0
        let mut b = [BlockQ4_1::default()];
        quantize_row(&x, &mut b);
        assert_eq!(b[0].d, 0x3C00);
        assert_eq!(b[0].m, 0x3C00);
        assert_eq!(b[0].qs[0], 15 | (8 << 4));
        assert_eq!(b[0].qs[1], 1);
        assert_eq!(b[0].qs[2], 2);
        let mut back = [0.0f32; 32];
        dequantize_row_at(SimdLevel::Portable, &b, &mut back);
        assert_eq!(back[0], 16.0);
        assert_eq!(back[16], 9.0);

        // Constant block: d = 0, all nibbles 0, m carries the value.
        quantize_row(&[-3.0; 32], &mut b);
        assert_eq!(b[0], BlockQ4_1 { d: 0, m: fp32_to_fp16(-3.0), qs: [0; 16] });
    }

    /// Byte-identical to ggml's quantize_row_q4_1_ref / dequantize_row_q4_1 on the golden rows.
    #[test]
    fn matches_ggml_golden() {
        for (seed, h) in GOLDEN {
            let x = golden_input(seed);
            let mut b = vec![BlockQ4_1::default(); GOLDEN_NB];
            quantize_row(&x, &mut b);
            assert_eq!(fnv(blocks_as_bytes(&b)), h[3], "quantize seed {seed}");
            for level in available_levels() {
                let mut y = vec![0.0f32; x.len()];
                dequantize_row_at(level, &b, &mut y);
                assert_eq!(fnv(&f32_bytes(&y)), h[4], "dequantize seed {seed} {level:?}");
            }
            if seed == 1 {
                assert_eq!(
                    blocks_as_bytes(&b[10..11]),
                    [0, 60, 0, 0, 32, 63, 67, 84, 101, 118, 135, 152, 169, 186, 203, 220, 237, 254, 31, 33]
                );
            }
        }
    }

    #[test]
    fn round_trip_error_bound() {
        let mut rng = Lcg::new(4);
        let x: Vec<f32> = (0..32 * 50).map(|_| rng.next_gauss() + 0.7).collect();
        let mut b = vec![BlockQ4_1::default(); 50];
        quantize_row(&x, &mut b);
        let mut y = vec![0.0f32; x.len()];
        dequantize_row(&b, &mut y);
        for (i, blk) in b.iter().enumerate() {
            let d = fp16_to_fp32(blk.d);
            let m = fp16_to_fp32(blk.m);
            for j in 0..32 {
                let (a, r) = (x[i * 32 + j], y[i * 32 + j]);
                // Half a step plus the half-rounding of d (x15) and m.
                let tol = 0.5 * d + 15.0 * d * 2f32.powi(-11) + m.abs() * 2f32.powi(-11) + 1e-6;
                assert!((a - r).abs() <= tol, "block {i} elem {j}: {a} vs {r}");
            }
        }
        assert!(nmse(&y, &x) < 0.01);
    }

}
