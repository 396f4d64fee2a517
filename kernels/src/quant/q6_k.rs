//! Q6_K: super-blocks of 256 values in 16 sub-blocks of 16, each value 6 bits centred on 32,
//! with a signed 8-bit scale per sub-block and one half-float super-scale (6.56 bits per value).
//! Q4_K_M models keep their most sensitive tensors (output, half of the FFN down projections) in
//! it.

use super::f16::fp16_to_fp32;
use super::q8_k::{BlockQ8K, QK_K};
use super::QuantBlock;
use crate::cpu_features::SimdLevel;

/// ggml's `block_q6_K`: value `e` is `d * scales[e / 16] * (q(e) - 32)`; per half of 128
/// values, `q` takes its low 4 bits from `ql` (two nibbles per byte) and its high 2 from `qh`
/// (four pairs per byte), see [`quants`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockQ6K {
    pub ql: [u8; QK_K / 2],
    pub qh: [u8; QK_K / 4],
    pub scales: [i8; QK_K / 16],
    /// Super-scale, IEEE half bits.
    pub d: u16,
}

impl Default for BlockQ6K {
    fn default() -> Self {
        BlockQ6K { ql: [0; QK_K / 2], qh: [0; QK_K / 4], scales: [0; QK_K / 16], d: 0 }
    }
}

const _: () = assert!(std::mem::size_of::<BlockQ6K>() == 210);

// SAFETY: repr(C), only integer fields, 128 + 64 + 16 + 2 bytes with no padding (asserted
// above: the u16 sits at the even offset 208).
unsafe impl QuantBlock for BlockQ6K {
    const QK: usize = QK_K;
    const BYTES: usize = 210;
}

/// The 256 unsigned quants (0..=63, the value is `q - 32`) in element order.
#[inline]
pub fn quants(b: &BlockQ6K) -> [u8; QK_K] {
    std::array::from_fn(|e| {
        let (n, r) = (e / 128, e % 128);
        let (g, l) = (r / 32, r % 32);
        let ql = b.ql[64 * n + l + if g % 2 == 1 { 32 } else { 0 }];
        let lo = if g < 2 { ql & 0x0F } else { ql >> 4 };
        let hi = (b.qh[32 * n + l] >> (2 * g)) & 3;
        lo | hi << 4
    })
}

/// Expands blocks as ggml's `dequantize_row_q6_K` (`(d * sc) * (q - 32)`); the same on every
/// level.
pub fn dequantize_row_at(_level: SimdLevel, src: &[BlockQ6K], dst: &mut [f32]) {
    assert_eq!(dst.len(), src.len() * QK_K, "q6_k::dequantize_row: length mismatch");
    for (b, y) in src.iter().zip(dst.chunks_exact_mut(QK_K)) {
        let d = fp16_to_fp32(b.d);
        for (e, (o, q)) in y.iter_mut().zip(quants(b)).enumerate() {
            *o = d * b.scales[e / 16] as f32 * (q as i32 - 32) as f32;
        }
    }
}

/// ggml's generic `vec_dot_q6_K_q8_K`: per super-block eight i32 lanes (lane `l` sums the
/// products of elements `l mod 8`, times their sub-block's scale), `sums[l] += d * lane` in f32,
/// then `sums[0] + ... + sums[7]`.
pub fn vec_dot_portable(x: &[BlockQ6K], y: &[BlockQ8K]) -> f32 {
    let mut sums = [0f32; 8];
    for (bx, by) in x.iter().zip(y) {
        let q = quants(bx);
        let mut aux32 = [0i32; 8];
        for (e, &v) in q.iter().enumerate() {
            aux32[e % 8] += bx.scales[e / 16] as i32 * (by.qs[e] as i32 * (v as i32 - 32));
        }
        let d = fp16_to_fp32(bx.d) * by.scale();
        for l in 0..8 {
            sums[l] += d * aux32[l] as f32;
        }
    }
    sums.iter().fold(0f32, |acc, &v| acc + v)
}

#[cfg(test)]
pub(crate) fn random_blocks(rng: &mut super::test_util::Lcg, n: usize, scale: f32) -> Vec<BlockQ6K> {
    use super::f16::fp32_to_fp16;
    (0..n)
        .map(|_| BlockQ6K {
            ql: std::array::from_fn(|_| rng.next_u32() as u8),
            qh: std::array::from_fn(|_| rng.next_u32() as u8),
            scales: std::array::from_fn(|_| rng.next_u32() as i8),
            d: fp32_to_fp16(scale * (0.0005 + 0.002 * rng.next_f32().abs())),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_quants() {
        assert_eq!(std::mem::offset_of!(BlockQ6K, qh), 128);
        assert_eq!(std::mem::offset_of!(BlockQ6K, scales), 192);
        assert_eq!(std::mem::offset_of!(BlockQ6K, d), 208);
        let mut b = BlockQ6K::default();
        b.ql[1] = 0x5A; // element 1 low nibble A, element 65 low nibble 5
        b.ql[33] = 0x3C; // element 33: C, element 97: 3
        b.qh[1] = 0b11_10_01_00; // element 1: 0, 33: 1, 65: 2, 97: 3
        b.qh[32] = 0b01; // element 128 (second half): high bits 1
        let q = quants(&b);
        assert_eq!((q[1], q[33], q[65], q[97], q[128]), (0xA, 0xC | 16, 5 | 32, 3 | 48, 16));
    }
}
