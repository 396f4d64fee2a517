//! Q8_K: the activations' format for the K-quant weights (ggml's `vec_dot_type` of Q4_K, Q5_K
//! and Q6_K): 256 values as signed bytes with an f32 scale, plus the sums of every 16 quants, which
//! the weight formats' minimums and offsets multiply.

use super::QuantBlock;

/// Values per K-quant super-block (ggml's `QK_K`).
pub const QK_K: usize = 256;

/// ggml's `block_q8_K`: value `j` is `d * qs[j]`; `bsums[g]` is the sum of `qs[16g..16g + 16]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockQ8K {
    /// Scale, f32 bits (a plain float in ggml; kept as bits so every byte pattern is valid).
    pub d: u32,
    pub qs: [i8; QK_K],
    pub bsums: [i16; QK_K / 16],
}

impl Default for BlockQ8K {
    fn default() -> Self {
        BlockQ8K { d: 0, qs: [0; QK_K], bsums: [0; QK_K / 16] }
    }
}

impl BlockQ8K {
    pub fn scale(&self) -> f32 {
        f32::from_bits(self.d)
    }
}

const _: () = assert!(std::mem::size_of::<BlockQ8K>() == 292);

// SAFETY: repr(C), only integer fields, 4 + 256 + 32 bytes with no padding (asserted above).
unsafe impl QuantBlock for BlockQ8K {
    const QK: usize = QK_K;
    const BYTES: usize = 292;
}

/// ggml's `nearest_int`: round half to even through the float adder (valid for |x| <= 2^22).
#[inline]
fn nearest_int(x: f32) -> i32 {
    let v = x + 12582912.0;
    (v.to_bits() & 0x007f_ffff) as i32 - 0x0040_0000
}

/// Quantizes `src` (`dst.len() * 256` values) like ggml's `quantize_row_q8_K_ref` (which
/// ggml-cpu uses on every architecture) compiled without contraction, as clang builds it; GCC
/// with `-mfma` fuses its `iscale * x + 1.5 * 2^23`, which is why the products prefer the host's
/// own function (`crate::quant::HostQ8K`). (An all-zero block gets zero sums here; ggml leaves
/// them unwritten, and its dot products multiply them by the zero scale.)
pub fn quantize_row(src: &[f32], dst: &mut [BlockQ8K]) {
    assert_eq!(src.len(), dst.len() * QK_K, "q8_k::quantize_row: length mismatch");
    for (x, y) in src.chunks_exact(QK_K).zip(dst.iter_mut()) {
        let mut max = 0.0f32;
        let mut amax = 0.0f32;
        for &v in x {
            if v.abs() > amax {
                amax = v.abs();
                max = v;
            }
        }
        if amax == 0.0 {
            *y = BlockQ8K::default();
            continue;
        }
        let iscale = -127.0 / max;
        for (q, &v) in y.qs.iter_mut().zip(x) {
            *q = nearest_int(iscale * v).min(127) as i8;
        }
        for (s, g) in y.bsums.iter_mut().zip(y.qs.chunks_exact(16)) {
            *s = g.iter().map(|&q| q as i16).sum();
        }
        y.d = (1.0 / iscale).to_bits();
    }
}

/// Expands blocks to `src.len() * 256` floats (`d * q`, as ggml's `dequantize_row_q8_K`).
pub fn dequantize_row(src: &[BlockQ8K], dst: &mut [f32]) {
    assert_eq!(dst.len(), src.len() * QK_K, "q8_k::dequantize_row: length mismatch");
    for (b, y) in src.iter().zip(dst.chunks_exact_mut(QK_K)) {
        for (o, &q) in y.iter_mut().zip(&b.qs) {
            *o = b.scale() * q as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantize_hand_computed() {
        let mut x = vec![0.0f32; QK_K];
        x[0] = -2.0; // the maximum magnitude: iscale = -127 / -2 = 63.5, so -127
        x[1] = 1.0; // 63.5 -> 64 (ties to even)
        x[2] = -3.0 / 63.5; // about -3
        x[17] = 0.03; // 1.905 -> 2
        let mut b = [BlockQ8K::default()];
        quantize_row(&x, &mut b);
        assert_eq!((b[0].qs[0], b[0].qs[1], b[0].qs[2], b[0].qs[17]), (-127, 64, -3, 2));
        assert_eq!(b[0].scale(), 1.0 / 63.5);
        assert_eq!(b[0].bsums[0], -127 + 64 - 3);
        assert_eq!(b[0].bsums[1], 2);
        let mut z = [BlockQ8K::default()];
        quantize_row(&[0.0; QK_K], &mut z);
        assert_eq!(z[0], BlockQ8K::default());
    }
}
