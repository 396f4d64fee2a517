//! Q5_0: 32 values as 5-bit offsets from zero with one half-float scale (5.5 bits per value):
//! the low four bits as Q4_0's nibbles, the fifth bits packed in one 32-bit word. What
//! llama.cpp's Q4_K_M falls back to for tensors whose rows are not whole 256-value super-blocks
//! (Gemma 3 270M's 640-wide projections).

use super::f16::{fp16_to_fp32, fp32_to_fp16};
use super::q8_0::BlockQ8_0;
use super::{QuantBlock, QK};
use crate::cpu_features::SimdLevel;

/// ggml's `block_q5_0`: value `j` is `d * (q(j) - 16)`, where `q(j)` is nibble `j` (low nibbles
/// elements 0..16, high 16..32, as Q4_0) plus 16 times bit `j` of `qh`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockQ5_0 {
    /// Scale, IEEE half bits.
    pub d: u16,
    /// Fifth bits, little-endian: bit `j` belongs to element `j`.
    pub qh: [u8; 4],
    pub qs: [u8; QK / 2],
}

const _: () = assert!(std::mem::size_of::<BlockQ5_0>() == 22);

// SAFETY: repr(C), only integer fields, 2 + 4 + 16 bytes with no padding (asserted above).
unsafe impl QuantBlock for BlockQ5_0 {
    const QK: usize = QK;
    const BYTES: usize = 22;
}

/// The 5-bit quants of a Q5_0 or Q5_1 block in element order, 0..=31.
#[inline]
pub(crate) fn quants5(qs: &[u8; QK / 2], qh: &[u8; 4]) -> [u8; QK] {
    let h = u32::from_le_bytes(*qh);
    std::array::from_fn(|j| {
        let nib = if j < QK / 2 { qs[j] & 0x0F } else { qs[j - QK / 2] >> 4 };
        nib | (((h >> j) & 1) as u8) << 4
    })
}

/// Packs 32 quants (0..=31, `q(j)` for element `j`) into Q5's nibbles and fifth-bit word.
pub(crate) fn pack5(q: impl Fn(usize) -> u8) -> ([u8; QK / 2], [u8; 4]) {
    let mut qs = [0u8; QK / 2];
    let mut qh = 0u32;
    for j in 0..QK / 2 {
        let (xi0, xi1) = (q(j), q(j + QK / 2));
        qs[j] = (xi0 & 0x0F) | ((xi1 & 0x0F) << 4);
        qh |= (((xi0 & 0x10) >> 4) as u32) << j;
        qh |= (((xi1 & 0x10) >> 4) as u32) << (j + QK / 2);
    }
    (qs, qh.to_le_bytes())
}

/// Quantizes `src` (`dst.len() * 32` values) exactly like ggml's `quantize_row_q5_0_ref`: the
/// value of largest magnitude maps to -16, and the unrounded f32 scale is used for the quants.
pub fn quantize_row(src: &[f32], dst: &mut [BlockQ5_0]) {
    assert_eq!(src.len(), dst.len() * QK, "q5_0::quantize_row: length mismatch");
    for (x, y) in src.chunks_exact(QK).zip(dst.iter_mut()) {
        let mut amax = 0.0f32;
        let mut max = 0.0f32;
        for &v in x {
            if amax < v.abs() {
                amax = v.abs();
                max = v;
            }
        }
        let d = max / -16.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        y.d = fp32_to_fp16(d);
        (y.qs, y.qh) = pack5(|j| ((x[j] * id + 16.5) as i8).min(31) as u8);
    }
}

/// Expands blocks to `src.len() * 32` floats (`(q - 16) * d`, one rounding, as ggml); the same
/// on every level.
pub fn dequantize_row_at(_level: SimdLevel, src: &[BlockQ5_0], dst: &mut [f32]) {
    assert_eq!(dst.len(), src.len() * QK, "q5_0::dequantize_row: length mismatch");
    for (b, y) in src.iter().zip(dst.chunks_exact_mut(QK)) {
        let d = fp16_to_fp32(b.d);
        for (o, q) in y.iter_mut().zip(quants5(&b.qs, &b.qh)) {
            *o = (q as i32 - 16) as f32 * d;
        }
    }
}

/// ggml's generic kernel: exact i32 block sums, then `sumf += (dx * dy) * sumi` serially.
pub fn vec_dot_portable(x: &[BlockQ5_0], y: &[BlockQ8_0]) -> f32 {
    let mut sumf = 0.0f32;
    for (bx, by) in x.iter().zip(y) {
        let q = quants5(&bx.qs, &bx.qh);
        let sumi: i32 = q.iter().zip(&by.qs).map(|(&w, &a)| (w as i32 - 16) * a as i32).sum();
        sumf += (fp16_to_fp32(bx.d) * fp16_to_fp32(by.d)) * sumi as f32;
    }
    sumf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        assert_eq!(std::mem::offset_of!(BlockQ5_0, qh), 2);
        assert_eq!(std::mem::offset_of!(BlockQ5_0, qs), 6);
    }

    #[test]
    fn quantize_hand_computed() {
        // max magnitude -16 -> d = 1; q = trunc(x + 16.5) clamped to 31
        let mut x = [0.0f32; 32];
        x[0] = -16.0; // 0
        x[1] = 15.0; // 31
        x[2] = 15.9; // 32.4 -> 32, clamped to 31
        x[16] = 3.4; // 19: nibble 3 + fifth bit
        x[17] = -0.5; // 16.0 -> 16
        let mut b = [BlockQ5_0::default()];
        quantize_row(&x, &mut b);
        assert_eq!(b[0].d, 0x3C00);
        assert_eq!(quants5(&b[0].qs, &b[0].qh)[..3], [0, 31, 31]);
        assert_eq!(quants5(&b[0].qs, &b[0].qh)[16..18], [19, 16]);
        assert_eq!(b[0].qs[0], 0 | (3 << 4));
        let mut back = [0.0f32; 32];
        dequantize_row_at(SimdLevel::Portable, &b, &mut back);
        assert_eq!(back[..3], [-16.0, 15.0, 15.0]);
        assert_eq!(back[16], 3.0);
    }
}
