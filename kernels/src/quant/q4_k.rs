//! Q4_K: super-blocks of 256 values in 8 sub-blocks of 32, each value a 4-bit step above the
//! sub-block's minimum (4.5 bits per value). The sub-blocks' scales and minimums are 6-bit
//! integers times two half-float super-scales. The main format of llama.cpp's Q4_K_M models.

use super::f16::fp16_to_fp32;
use super::q8_k::{BlockQ8K, QK_K};
use super::QuantBlock;
use crate::cpu_features::SimdLevel;

/// ggml's `block_q4_K`: value `32s + l` (sub-block `s`) is `d * sc[s] * q - dmin * m[s]`, with
/// `(sc, m)` packed 6 bits each in `scales` ([`scale_min`]) and the quants of sub-blocks `2j`
/// and `2j + 1` in the low and high nibbles of `qs[32j..32j + 32]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockQ4K {
    /// Super-scale of the sub-block scales, IEEE half bits.
    pub d: u16,
    /// Super-scale of the sub-block minimums, IEEE half bits.
    pub dmin: u16,
    pub scales: [u8; 12],
    pub qs: [u8; QK_K / 2],
}

impl Default for BlockQ4K {
    fn default() -> Self {
        BlockQ4K { d: 0, dmin: 0, scales: [0; 12], qs: [0; QK_K / 2] }
    }
}

const _: () = assert!(std::mem::size_of::<BlockQ4K>() == 144);

// SAFETY: repr(C), only integer fields, 2 + 2 + 12 + 128 bytes with no padding (asserted above).
unsafe impl QuantBlock for BlockQ4K {
    const QK: usize = QK_K;
    const BYTES: usize = 144;
}

/// Sub-block `j`'s 6-bit scale and minimum (ggml's `get_scale_min_k4`).
#[inline]
pub fn scale_min(j: usize, q: &[u8; 12]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        ((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4))
    }
}

/// The 256 nibbles (0..=15) of `qs` in element order: sub-blocks `2j` and `2j + 1` are the low
/// and high nibbles of bytes `32j..32j + 32` (Q4_K's quants, Q5_K's low four bits).
#[inline]
pub fn nibbles(qs: &[u8; QK_K / 2]) -> [u8; QK_K] {
    std::array::from_fn(|e| {
        let (j, l) = (e / 64, e % 64);
        let byte = qs[32 * j + l % 32];
        if l < 32 {
            byte & 0x0F
        } else {
            byte >> 4
        }
    })
}

/// The 256 quants (0..=15) in element order.
#[inline]
pub fn quants(b: &BlockQ4K) -> [u8; QK_K] {
    nibbles(&b.qs)
}

/// A super-block in Q4_K's frame: eight 32-value sub-blocks, each value `d * sc * q - dmin * m`
/// with `(sc, m)` packed as [`scale_min`] reads them. Q4_K and Q5_K (which gives every quant a
/// fifth bit) are this frame with different quants, and ggml's generic dequantizers and
/// `vec_dot`s of the two are one formula over it: written once here, for both.
pub trait ScaleMinBlock {
    /// Super-scale of the sub-block scales, IEEE half bits.
    fn d(&self) -> u16;
    /// Super-scale of the sub-block minimums, IEEE half bits.
    fn dmin(&self) -> u16;
    /// The packed 6-bit scales and minimums.
    fn scales(&self) -> &[u8; 12];
    /// The 256 unsigned quants in element order.
    fn quants(&self) -> [u8; QK_K];
}

impl ScaleMinBlock for BlockQ4K {
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

/// Expands blocks as ggml's `dequantize_row_q4_K` / `dequantize_row_q5_K`:
/// `(d * sc) * q - dmin * m`. Whether a compiler fuses the last multiply-subtract cannot change
/// the result: `d * sc` (11 by 6 bits) and its product with `q` (5 bits at most) are exact in
/// f32, so only the subtraction rounds.
pub fn dequantize_row_at<B: ScaleMinBlock>(_level: SimdLevel, src: &[B], dst: &mut [f32]) {
    assert_eq!(dst.len(), src.len() * QK_K, "dequantize_row (Q4_K frame): length mismatch");
    for (b, y) in src.iter().zip(dst.chunks_exact_mut(QK_K)) {
        let d = fp16_to_fp32(b.d());
        let min = fp16_to_fp32(b.dmin());
        let q = b.quants();
        for (s, (ys, qs)) in y.chunks_exact_mut(32).zip(q.chunks_exact(32)).enumerate() {
            let (sc, m) = scale_min(s, b.scales());
            let (d1, m1) = (d * sc as f32, min * m as f32);
            for (o, &v) in ys.iter_mut().zip(qs) {
                *o = d1 * v as f32 - m1;
            }
        }
    }
}

/// ggml's generic `vec_dot_q4_K_q8_K` (and `vec_dot_q5_K_q8_K`, the same code over 5-bit quants):
/// per super-block, eight i32 lanes (lane `l` sums the products of elements `l mod 8`, times
/// their sub-block's scale), `sums[l] += d * lane` in f32, and `sumf -= dmin * sum(bsums * m)`;
/// `sumf + sums[0] + ... + sums[7]` at the end.
pub fn vec_dot_portable<B: ScaleMinBlock>(x: &[B], y: &[BlockQ8K]) -> f32 {
    let mut sums = [0f32; 8];
    let mut sumf = 0f32;
    for (bx, by) in x.iter().zip(y) {
        let q = bx.quants();
        let mut aux32 = [0i32; 8];
        for s in 0..8 {
            let scale = scale_min(s, bx.scales()).0 as i32;
            for k in 0..32 {
                let e = 32 * s + k;
                aux32[k % 8] += scale * (by.qs[e] as i32 * q[e] as i32);
            }
        }
        let sumi: i32 = (0..16).map(|g| by.bsums[g] as i32 * scale_min(g / 2, bx.scales()).1 as i32).sum();
        let d = fp16_to_fp32(bx.d()) * by.scale();
        for l in 0..8 {
            sums[l] += d * aux32[l] as f32;
        }
        let dmin = fp16_to_fp32(bx.dmin()) * by.scale();
        sumf -= dmin * sumi as f32;
    }
    sums.iter().fold(sumf, |acc, &v| acc + v)
}

#[cfg(test)]
pub(crate) fn random_blocks(rng: &mut super::test_util::Lcg, n: usize, scale: f32) -> Vec<BlockQ4K> {
    use super::f16::fp32_to_fp16;
    (0..n)
        .map(|_| BlockQ4K {
            d: fp32_to_fp16(scale * (0.002 + 0.01 * rng.next_f32().abs())),
            dmin: fp32_to_fp16(scale * (0.002 + 0.01 * rng.next_f32().abs())),
            scales: std::array::from_fn(|_| rng.next_u32() as u8),
            qs: std::array::from_fn(|_| rng.next_u32() as u8),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_scales() {
        assert_eq!(std::mem::offset_of!(BlockQ4K, scales), 4);
        assert_eq!(std::mem::offset_of!(BlockQ4K, qs), 16);
        // sub-blocks 0..4: low 6 bits of bytes 0..4 / 4..8; 4..8: nibbles of bytes 8..12 plus
        // the top two bits of bytes 0..4 / 4..8
        let q = [0xC1, 2, 3, 4, 0x45, 6, 7, 8, 0x9A, 0, 0, 0];
        assert_eq!(scale_min(0, &q), (1, 5));
        assert_eq!(scale_min(4, &q), (0xA | (3 << 4), 0x9 | (1 << 4)));
        let mut b = BlockQ4K::default();
        b.qs[0] = 0x73;
        b.qs[33] = 0x0F;
        let v = quants(&b);
        assert_eq!((v[0], v[32], v[65], v[97]), (3, 7, 15, 0));
    }
}
