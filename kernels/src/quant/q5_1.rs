//! Q5_1: 32 values as 5-bit steps above a per-block minimum (6 bits per value): Q4_1 with a
//! fifth bit per value in one 32-bit word. whisper.cpp's usual quantized model format.

use super::f16::{fp16_to_fp32, fp32_to_fp16};
use super::q5_0::{pack5, quants5};
use super::q8_1::BlockQ8_1;
use super::{QuantBlock, QK};
use crate::cpu_features::SimdLevel;

/// ggml's `block_q5_1`: value `j` is `d * q(j) + m`, `q(j)` as in Q5_0 (nibble plus 16 times
/// bit `j` of `qh`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockQ5_1 {
    /// Step, IEEE half bits.
    pub d: u16,
    /// Block minimum, IEEE half bits.
    pub m: u16,
    /// Fifth bits, little-endian: bit `j` belongs to element `j`.
    pub qh: [u8; 4],
    pub qs: [u8; QK / 2],
}

const _: () = assert!(std::mem::size_of::<BlockQ5_1>() == 24);

// SAFETY: repr(C), only integer fields, 2 + 2 + 4 + 16 bytes with no padding (asserted above).
unsafe impl QuantBlock for BlockQ5_1 {
    const QK: usize = QK;
    const BYTES: usize = 24;
}

/// Quantizes `src` (`dst.len() * 32` values) exactly like ggml's `quantize_row_q5_1_ref`
/// (unrounded f32 minimum and step for the quants, half-rounded copies stored).
pub fn quantize_row(src: &[f32], dst: &mut [BlockQ5_1]) {
    assert_eq!(src.len(), dst.len() * QK, "q5_1::quantize_row: length mismatch");
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
        let d = (max - min) / 31.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        y.d = fp32_to_fp16(d);
        y.m = fp32_to_fp16(min);
        (y.qs, y.qh) = pack5(|j| ((x[j] - min) * id + 0.5) as u8);
    }
}

/// Expands blocks to `src.len() * 32` floats (`q * d + m`, as ggml). A fused multiply-add would
/// give the same: `q * d` (5 by 11 bits) is exact in f32, so only the addition rounds.
pub fn dequantize_row_at(_level: SimdLevel, src: &[BlockQ5_1], dst: &mut [f32]) {
    assert_eq!(dst.len(), src.len() * QK, "q5_1::dequantize_row: length mismatch");
    for (b, y) in src.iter().zip(dst.chunks_exact_mut(QK)) {
        let d = fp16_to_fp32(b.d);
        let m = fp16_to_fp32(b.m);
        for (o, q) in y.iter_mut().zip(quants5(&b.qs, &b.qh)) {
            *o = q as f32 * d + m;
        }
    }
}

/// ggml's generic kernel: `(dx * dy) * sumi + mx * sy` per block, accumulated serially.
pub fn vec_dot_portable(x: &[BlockQ5_1], y: &[BlockQ8_1]) -> f32 {
    let mut sumf = 0.0f32;
    for (bx, by) in x.iter().zip(y) {
        let q = quants5(&bx.qs, &bx.qh);
        let sumi: i32 = q.iter().zip(&by.qs).map(|(&w, &a)| w as i32 * a as i32).sum();
        sumf += (fp16_to_fp32(bx.d) * fp16_to_fp32(by.d)) * sumi as f32 + fp16_to_fp32(bx.m) * fp16_to_fp32(by.s);
    }
    sumf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        assert_eq!(std::mem::offset_of!(BlockQ5_1, m), 2);
        assert_eq!(std::mem::offset_of!(BlockQ5_1, qh), 4);
        assert_eq!(std::mem::offset_of!(BlockQ5_1, qs), 8);
    }

    #[test]
    fn quantize_hand_computed() {
        // min 0, max 31 -> d = 1; q = trunc(x + 0.5)
        let mut x = [0.0f32; 32];
        x[1] = 31.0;
        x[2] = 16.49; // 16
        x[16] = 17.5; // 18
        let mut b = [BlockQ5_1::default()];
        quantize_row(&x, &mut b);
        assert_eq!((b[0].d, b[0].m), (0x3C00, 0));
        let q = quants5(&b[0].qs, &b[0].qh);
        assert_eq!((q[0], q[1], q[2], q[16]), (0, 31, 16, 18));
        assert_eq!(u32::from_le_bytes(b[0].qh), (1 << 1) | (1 << 2) | (1 << 16));
        let mut back = [0.0f32; 32];
        dequantize_row_at(SimdLevel::Portable, &b, &mut back);
        assert_eq!((back[1], back[16]), (31.0, 18.0));
    }
}
