//! IQ4_NL: Q4_0's block (32 values, one half-float scale, two nibbles per byte) whose nibbles
//! index a fixed non-linear table of 16 signed values instead of standing for `q - 8` (4.5 bits
//! per value). llama.cpp's IQ4_NL models, and its fallback for rows that are not whole K-quant
//! super-blocks in the IQ4_XS mixes.

use super::f16::fp16_to_fp32;
use super::q8_0::BlockQ8_0;
use super::{QuantBlock, QK};
use crate::cpu_features::SimdLevel;

/// ggml's `kvalues_iq4nl`: the value each nibble stands for (times the block's scale).
pub const KVALUES: [i8; 16] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

/// ggml's `block_iq4_nl`: value `j` is `d * KVALUES[nibble j]`, low nibbles elements 0..16, high
/// 16..32 (as Q4_0).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockIQ4NL {
    /// Scale, IEEE half bits.
    pub d: u16,
    pub qs: [u8; QK / 2],
}

const _: () = assert!(std::mem::size_of::<BlockIQ4NL>() == 18);

// SAFETY: repr(C), only integer fields, 2 + 16 bytes with no padding (asserted above).
unsafe impl QuantBlock for BlockIQ4NL {
    const QK: usize = QK;
    const BYTES: usize = 18;
}

/// The 32 signed values (table entries) in element order.
#[inline]
pub fn values(b: &BlockIQ4NL) -> [i8; QK] {
    std::array::from_fn(|j| KVALUES[if j < QK / 2 { b.qs[j] & 0x0F } else { b.qs[j - QK / 2] >> 4 } as usize])
}

/// Expands blocks as ggml's `dequantize_row_iq4_nl` (`d * value`, exact: an 11-bit scale times a
/// 7-bit value); the same on every level.
pub fn dequantize_row_at(_level: SimdLevel, src: &[BlockIQ4NL], dst: &mut [f32]) {
    assert_eq!(dst.len(), src.len() * QK, "iq4_nl::dequantize_row: length mismatch");
    for (b, y) in src.iter().zip(dst.chunks_exact_mut(QK)) {
        let d = fp16_to_fp32(b.d);
        for (o, v) in y.iter_mut().zip(values(b)) {
            *o = d * v as f32;
        }
    }
}

/// ggml's generic `vec_dot_iq4_nl_q8_0` (also the tail of its SIMD ones, for a last odd block):
/// per block `sumf += (y.d * x.d) * (sumi1 + sumi2)`, the two halves' exact integer sums.
pub fn vec_dot_portable(x: &[BlockIQ4NL], y: &[BlockQ8_0]) -> f32 {
    let mut sumf = 0f32;
    for (bx, by) in x.iter().zip(y) {
        let d = fp16_to_fp32(by.d) * fp16_to_fp32(bx.d);
        let s: i32 = values(bx).iter().zip(&by.qs).map(|(&v, &q)| v as i32 * q as i32).sum();
        sumf += d * s as f32;
    }
    sumf
}

#[cfg(test)]
pub(crate) fn random_blocks(rng: &mut super::test_util::Lcg, n: usize, scale: f32) -> Vec<BlockIQ4NL> {
    use super::f16::fp32_to_fp16;
    (0..n)
        .map(|_| BlockIQ4NL { d: fp32_to_fp16(scale * (0.0005 + 0.01 * rng.next_f32().abs())), qs: std::array::from_fn(|_| rng.next_u32() as u8) })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_values() {
        assert_eq!(std::mem::offset_of!(BlockIQ4NL, qs), 2);
        let mut b = BlockIQ4NL::default();
        b.qs[0] = 0xF0; // element 0: -127, element 16: 113
        b.qs[15] = 0x78; // element 15: 1, element 31: -10
        let v = values(&b);
        assert_eq!((v[0], v[16], v[15], v[31]), (-127, 113, 1, -10));
    }
}
