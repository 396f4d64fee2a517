//! Q5_K: Q4_K's super-block (eight 32-value sub-blocks, 6-bit scales and minimums under two
//! half-float super-scales) with a fifth bit per value in a 32-byte bit plane (5.5 bits per
//! value). Q5_K_M models keep their attention and FFN weights in it, and Q4_K_M models some of
//! their FFN down projections.
//!
//! Everything but the quants is Q4_K's ([`q4_k::ScaleMinBlock`]): the dequantizer and ggml's
//! generic `vec_dot` are shared, and so are the tiles' unpacked scales.

use super::q4_k::{self, ScaleMinBlock};
use super::q8_k::{BlockQ8K, QK_K};
use super::QuantBlock;
use crate::cpu_features::SimdLevel;

/// ggml's `block_q5_K`: value `32s + l` (sub-block `s`) is `d * sc[s] * q - dmin * m[s]`, `q`
/// being Q4_K's nibble (`qs` as in [`q4_k::nibbles`]) plus 16 times bit `s` of `qh[l]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockQ5K {
    /// Super-scale of the sub-block scales, IEEE half bits.
    pub d: u16,
    /// Super-scale of the sub-block minimums, IEEE half bits.
    pub dmin: u16,
    pub scales: [u8; 12],
    /// Fifth bits: bit `s` of byte `l` belongs to element `32s + l`.
    pub qh: [u8; QK_K / 8],
    pub qs: [u8; QK_K / 2],
}

impl Default for BlockQ5K {
    fn default() -> Self {
        BlockQ5K { d: 0, dmin: 0, scales: [0; 12], qh: [0; QK_K / 8], qs: [0; QK_K / 2] }
    }
}

const _: () = assert!(std::mem::size_of::<BlockQ5K>() == 176);

// SAFETY: repr(C), only integer fields, 2 + 2 + 12 + 32 + 128 bytes with no padding (asserted
// above).
unsafe impl QuantBlock for BlockQ5K {
    const QK: usize = QK_K;
    const BYTES: usize = 176;
}

/// The 256 quants (0..=31) in element order.
#[inline]
pub fn quants(b: &BlockQ5K) -> [u8; QK_K] {
    let lo = q4_k::nibbles(&b.qs);
    std::array::from_fn(|e| lo[e] | ((b.qh[e % 32] >> (e / 32)) & 1) << 4)
}

impl ScaleMinBlock for BlockQ5K {
    fn d(&self) -> u16 {
        self.d
    }
    fn dmin(&self) -> u16 {
        self.dmin
    }
    fn scales(&self) -> &[u8; 12] {
        &self.scales
    }
    fn quants(&self) -> [u8; QK_K] {
        quants(self)
    }
}

/// Expands blocks as ggml's `dequantize_row_q5_K`, Q4_K's formula over 5-bit quants (exact but
/// for the last subtraction, see [`q4_k::dequantize_row_at`]); the same on every level.
pub fn dequantize_row_at(level: SimdLevel, src: &[BlockQ5K], dst: &mut [f32]) {
    q4_k::dequantize_row_at(level, src, dst)
}

/// ggml's generic `vec_dot_q5_K_q8_K`: its Q4_K code over 5-bit quants
/// ([`q4_k::vec_dot_portable`]), the same in every revision.
pub fn vec_dot_portable(x: &[BlockQ5K], y: &[BlockQ8K]) -> f32 {
    q4_k::vec_dot_portable(x, y)
}

#[cfg(test)]
pub(crate) fn random_blocks(rng: &mut super::test_util::Lcg, n: usize, scale: f32) -> Vec<BlockQ5K> {
    q4_k::random_blocks(rng, n, scale)
        .into_iter()
        .map(|b| BlockQ5K { d: b.d, dmin: b.dmin, scales: b.scales, qh: std::array::from_fn(|_| rng.next_u32() as u8), qs: b.qs })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_quants() {
        assert_eq!(std::mem::offset_of!(BlockQ5K, scales), 4);
        assert_eq!(std::mem::offset_of!(BlockQ5K, qh), 16);
        assert_eq!(std::mem::offset_of!(BlockQ5K, qs), 48);
        let mut b = BlockQ5K::default();
        b.qs[0] = 0x73; // element 0: 3, element 32: 7
        b.qs[33] = 0x0F; // element 65: 15, element 97: 0
        b.qh[0] = 0b10; // element 32's fifth bit
        b.qh[1] = 0b1000_0100; // elements 65 and 225
        let v = quants(&b);
        assert_eq!((v[0], v[32], v[65], v[97], v[225]), (3, 7 | 16, 15 | 16, 0, 16));
    }
}
