//! Q4_0: 32 values as 4-bit offsets from zero with one half-float scale (4.5 bits per value).
//! The usual format for whisper/llama weights where size matters more than accuracy.

use super::f16::{fp16_to_fp32, fp32_to_fp16};
use super::q8_0::BlockQ8_0;
use super::{QuantBlock, QK};
use crate::cpu_features::{clamp_level, simd_level, SimdLevel};

/// ggml's `block_q4_0`: value `j` is `d * ((qs[j % 16] >> (4 * (j / 16))) & 15) - 8)`, i.e. the
/// low nibbles hold elements 0..16 and the high nibbles 16..32.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockQ4_0 {
    /// Scale, IEEE half bits.
    pub d: u16,
    pub qs: [u8; QK / 2],
}

const _: () = assert!(std::mem::size_of::<BlockQ4_0>() == 18);

// SAFETY: repr(C), only integer fields, 2 + 16 bytes with no padding (asserted above).
unsafe impl QuantBlock for BlockQ4_0 {
    const QK: usize = QK;
    const BYTES: usize = 18;
}

/// Quantizes `src` (`dst.len() * 32` values) exactly like ggml's `quantize_row_q4_0_ref`, so
/// files written from Rust are byte-identical to ggml's.
///
/// The scale is chosen so the value of largest magnitude maps to -8 (the asymmetric end of the
/// nibble range), which keeps that value exact; everything is computed with the unrounded f32
/// scale even though the stored one is a half, as ggml does.
pub fn quantize_row(src: &[f32], dst: &mut [BlockQ4_0]) {
    assert_eq!(src.len(), dst.len() * QK, "q4_0::quantize_row: length mismatch");
    for (x, y) in src.chunks_exact(QK).zip(dst.iter_mut()) {
        let mut amax = 0.0f32;
        let mut max = 0.0f32;
        for &v in x {
            if amax < v.abs() {
                amax = v.abs();
                max = v;
            }
        }
        let d = max / -8.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        y.d = fp32_to_fp16(d);
        for j in 0..QK / 2 {
            // Truncating conversion after +8.5 is ggml's rounding (round half up around -8).
            let xi0 = ((x[j] * id + 8.5) as i8).min(15) as u8;
            let xi1 = ((x[j + QK / 2] * id + 8.5) as i8).min(15) as u8;
            y.qs[j] = xi0 | (xi1 << 4);
        }
    }
}

/// Expands blocks to `src.len() * 32` floats (`(q - 8) * d`, one rounding, as ggml).
pub fn dequantize_row(src: &[BlockQ4_0], dst: &mut [f32]) {
    dequantize_row_at(simd_level(), src, dst)
}

/// [`dequantize_row`] on an explicit kernel level; every level gives bit-identical output.
pub fn dequantize_row_at(level: SimdLevel, src: &[BlockQ4_0], dst: &mut [f32]) {
    assert_eq!(dst.len(), src.len() * QK, "q4_0::dequantize_row: length mismatch");
    match clamp_level(level) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: clamp_level only returns Avx2 when AVX2, FMA and F16C were detected at runtime.
        SimdLevel::Avx2 | SimdLevel::Avx512 => unsafe { x86::dequantize(src, dst) },
        _ => {
            for (b, y) in src.iter().zip(dst.chunks_exact_mut(QK)) {
                let d = fp16_to_fp32(b.d);
                for j in 0..QK / 2 {
                    y[j] = ((b.qs[j] & 0x0F) as i32 - 8) as f32 * d;
                    y[j + QK / 2] = ((b.qs[j] >> 4) as i32 - 8) as f32 * d;
                }
            }
        }
    }
}

/// ggml's generic kernel: exact i32 block sums, then `sumi * dx * dy` accumulated serially.
pub fn vec_dot_portable(x: &[BlockQ4_0], y: &[BlockQ8_0]) -> f32 {
    let mut sumf = 0.0f32;
    for (bx, by) in x.iter().zip(y) {
        let mut sumi = 0i32;
        for j in 0..QK / 2 {
            let v0 = (bx.qs[j] & 0x0F) as i32 - 8;
            let v1 = (bx.qs[j] >> 4) as i32 - 8;
            sumi += v0 * by.qs[j] as i32 + v1 * by.qs[j + QK / 2] as i32;
        }
        sumf += sumi as f32 * fp16_to_fp32(bx.d) * fp16_to_fp32(by.d);
    }
    sumf
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    use super::super::x86_util::*;
    use super::*;
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn dequantize(src: &[BlockQ4_0], dst: &mut [f32]) {
        let m = _mm_set1_epi8(0x0F);
        let eight = _mm_set1_epi8(8);
        for (b, y) in src.iter().zip(dst.chunks_exact_mut(QK)) {
            let d = _mm256_set1_ps(fp16_to_fp32(b.d));
            let raw = load_u8x16(&b.qs);
            let lo = _mm_sub_epi8(_mm_and_si128(raw, m), eight);
            let hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16::<4>(raw), m), eight);
            store16_i8_scaled(&mut y[0..16], lo, d);
            store16_i8_scaled(&mut y[16..32], hi, d);
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
        assert_eq!(std::mem::size_of::<BlockQ4_0>(), 18);
        assert_eq!(std::mem::offset_of!(BlockQ4_0, qs), 2);
    }

    #[test]
    fn quantize_hand_computed() {
        // max-magnitude value -8 -> d = 1, so q = round_half_up(x) + 8, clamped to 15.
        let mut x = [0.0f32; 32];
        x[0] = -8.0;
        x[1] = 7.4; // 15.9 -> 15
        x[2] = 7.6; // 16.1 -> 16 -> clamp 15
        x[3] = -0.5; // 8.0 -> 8
        x[4] = -0.51; // 7.99 -> 7
        x[16] = 3.0; // high nibble of qs[0]: 11
        x[17] = -7.5; // high nibble of qs[1]: 1
        let mut b = [BlockQ4_0::default()];
        quantize_row(&x, &mut b);
        assert_eq!(b[0].d, 0x3C00);
        assert_eq!(b[0].qs[0], 11 << 4); // low nibble 0
        assert_eq!(b[0].qs[1], 15 | (1 << 4));
        assert_eq!(b[0].qs[2], 15 | (8 << 4));
        assert_eq!(b[0].qs[3], 8 | (8 << 4));
        assert_eq!(b[0].qs[4], 7 | (8 << 4));

        // Positive max: d is negative, the max maps to -8 * d = max exactly.
        let mut y = [0.0f32; 32];
        y[5] = 2.0;
        y[6] = -1.0;
        quantize_row(&y, &mut b);
        assert_eq!(fp16_to_fp32(b[0].d), -0.25);
        let mut back = [0.0f32; 32];
        dequantize_row_at(SimdLevel::Portable, &b, &mut back);
        assert_eq!(back[5], 2.0);
        assert_eq!(back[6], -1.0);
        assert_eq!(back[0], 0.0);

        // All-zero block: d = 0 / -8 = -0.0 (half 0x8000, as in ggml), every nibble 8.
        quantize_row(&[0.0; 32], &mut b);
        assert_eq!(b[0], BlockQ4_0 { d: 0x8000, qs: [0x88; 16] });
    }

    /// Byte-identical to ggml's quantize_row_q4_0_ref / dequantize_row_q4_0 on the golden rows.
    #[test]
    fn matches_ggml_golden() {
        for (seed, h) in GOLDEN {
            let x = golden_input(seed);
            let mut b = vec![BlockQ4_0::default(); GOLDEN_NB];
            quantize_row(&x, &mut b);
            assert_eq!(fnv(blocks_as_bytes(&b)), h[1], "quantize seed {seed}");
            for level in available_levels() {
                let mut y = vec![0.0f32; x.len()];
                dequantize_row_at(level, &b, &mut y);
                assert_eq!(fnv(&f32_bytes(&y)), h[2], "dequantize seed {seed} {level:?}");
            }
        }
        let b = {
            let mut b = vec![BlockQ4_0::default(); GOLDEN_NB];
            quantize_row(&golden_input(1), &mut b);
            b
        };
        assert_eq!(
            blocks_as_bytes(&b[9..10]),
            [0, 60, 33, 50, 67, 80, 101, 118, 135, 152, 169, 186, 203, 220, 237, 254, 31, 33]
        );
        assert_eq!(
            blocks_as_bytes(&b[0..1]),
            [173, 175, 153, 120, 102, 218, 35, 8, 119, 111, 162, 61, 116, 247, 3, 43, 204, 100]
        );
    }

    #[test]
    fn round_trip_error_bound() {
        let mut rng = Lcg::new(3);
        let x: Vec<f32> = (0..32 * 50).map(|_| rng.next_gauss()).collect();
        let mut b = vec![BlockQ4_0::default(); 50];
        quantize_row(&x, &mut b);
        let mut y = vec![0.0f32; x.len()];
        dequantize_row(&b, &mut y);
        for (i, blk) in b.iter().enumerate() {
            let d = fp16_to_fp32(blk.d).abs();
            for j in 0..32 {
                let (a, r) = (x[i * 32 + j], y[i * 32 + j]);
                // Half a step, plus the scale's half rounding (<= 2^-11 relative, times 8 steps),
                // plus one extra step at the clamped top end (+8 * d does not exist).
                assert!((a - r).abs() <= d * (1.0 + 0.01), "block {i} elem {j}: {a} vs {r}");
            }
        }
        assert!(nmse(&y, &x) < 0.02);
    }

}
