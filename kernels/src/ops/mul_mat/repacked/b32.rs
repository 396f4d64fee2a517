//! Repacked Q4_0 ([`Repack::Q4_0x8`](crate::op::Repack::Q4_0x8)) and IQ4_NL
//! ([`Repack::IQ4NLx8`](crate::op::Repack::IQ4NLx8)): 32-value blocks with one half-float scale,
//! as an AVX2 ggml-cpu without AVX-512 repacks them (`block_q4_0x8` / `block_iq4_nlx8`, 144
//! bytes: the eight rows' scales, then their quant bytes interleaved eight at a time, bytes 0..8
//! of every row before bytes 8..16; `make_block_q4_0x8` xors Q4_0's nibbles with 8, so a nibble
//! `n` stands for `n` below 8 and `n - 16` above, `make_block_iq4_nlx8` keeps IQ4_NL's table
//! indices).
//!
//! ggml-cpu's `forward_mul_mat` quantizes each plane's rows in groups of four with
//! `ggml_quantize_mat_q8_0_4x8` and the other `ne11 % 4` with `quantize_row_q8_0`; on AVX2 both
//! take a block's largest magnitude (`max_ps`, exact in any order), store `d = max / 127` as a
//! half and multiply by `127 / max` rounded half to even: the same quants and scales, which are
//! those of [`q8_0::quantize_row_at`] on the AVX2 level (tests: `quantizer_4x8_is_q8_0`). Then
//! `ggml_gemm_q4_0_8x8_q8_0` / `ggml_gemm_iq4_nl_8x8_q8_0` (`gemm_q4_b32_8x8_q8_0_lut_avx`) and
//! the gemv ones (`gemv_q4_b32_8x8_q8_0_lut_avx`) both form each block's exact integer dot
//! product (a table lookup of the nibbles, `maddubs` pairs of at most 2 * 127 * 127 in
//! magnitude, which never saturate) and take one float step per block and output:
//! `acc = fma(I, d_w * d_a, acc)` (`d_w * d_a` one rounded product), the output `acc`. So every
//! row has the same steps whichever path ggml gives it; this module follows them with the lanes
//! across the eight weight rows.

// (TILE: the x86 kernel's and the tests'; off x86 only the tests use it)
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_imports))]
use super::{for_groups, quantize_rows, TILE};
use crate::cpu_features::SimdLevel;
use crate::op::Node;
use crate::pool::Session;
use crate::quant::q8_0::{self, BlockQ8_0};

/// Values per block.
pub(super) const QK: usize = 32;
/// Bytes of one plain `block_q4_0` / `block_iq4_nl`.
pub(super) const BLOCK_BYTES: usize = 18;
/// Bytes of one `block_q4_0x8` / `block_iq4_nlx8`: eight blocks.
pub(super) const X8_BYTES: usize = 8 * BLOCK_BYTES;

/// What a nibble of `block_q4_0x8` stands for (after `make_block_q4_0x8`'s xor with 8): ggml's
/// `signextendlut` in `ggml_gemv/gemm_q4_0_8x8_q8_0`.
pub(super) const Q4_0_VALUES: [i8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1];

/// `dst = src0 . src1` for a node of one of the two layouts, whose nibbles stand for `values`
/// ([`Q4_0_VALUES`] or `kvalues_iq4nl`). `false` when a worker panicked.
pub(super) fn compute(s: &Session, n: &Node, values: &[i8; 16]) -> bool {
    let (a, b) = (n.src(0), n.src(1));
    let (k, rows, planes) = (a.ne[0], b.ne[1], b.ne[2]);
    let nb = k / QK;
    if rows == 0 || planes == 0 {
        return true;
    }
    // every row by ggml's AVX2 Q8_0 rule (the 4x8 quantizer and quantize_row_q8_0 agree)
    let mut acts = vec![BlockQ8_0::default(); planes * rows * nb];
    if !quantize_rows(s, &b, &mut acts, nb, |x, _j, out| q8_0::quantize_row_at(SimdLevel::Avx2, x, out)) {
        return false;
    }
    let acts = &acts;
    for_groups(s, n, nb * X8_BYTES, |p, j| &acts[(p * rows + j) * nb..(p * rows + j + 1) * nb], |w, tile, out| group(w, values, tile, out))
}

/// One group of eight weight rows (`w`: its x8 blocks) against up to [`TILE`] activation rows;
/// `out[r][c]` for weight row `c`.
pub(super) fn group(w: &[u8], values: &[i8; 16], rows: &[&[BlockQ8_0]], out: &mut [[f32; 8]]) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `supports` accepted the node only on the AVX2 / AVX-512 levels (AVX2, FMA and
        // F16C present); the kernel checks the lengths.
        unsafe { avx2::group(w, values, rows, out) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (w, values, rows, out);
        unreachable!("repacked products are declined off x86_64")
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{BlockQ8_0, TILE, X8_BYTES};
    use crate::quant::f16::fp16_to_fp32;
    use std::arch::x86_64::*;

    /// The kernel: each x8 block's nibbles are looked up once per tile into eight vectors (vector
    /// `v`: values `4v..4v + 4` of row `c` in dword `c`), multiplied by the activation's four
    /// bytes broadcast with ggml's sign trick (`|w|` times `sign(a, w)`, `maddubs` then `madd` by
    /// ones: exact), and the block's integers take ggml's float step, `fma(I, d_w * d_a, acc)`.
    ///
    /// # Safety
    /// AVX2, FMA and F16C must be available.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn group(w: &[u8], values: &[i8; 16], rows: &[&[BlockQ8_0]], out: &mut [[f32; 8]]) {
        let n = rows.len();
        assert!(n <= TILE && out.len() >= n);
        let nb = rows.first().map_or(0, |r| r.len());
        assert!(w.len() >= nb * X8_BYTES && rows.iter().all(|r| r.len() == nb));
        // SAFETY: 16 bytes read from a 16-byte array.
        let lut = _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(values.as_ptr() as *const __m128i) });
        let perm = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
        let m4 = _mm256_set1_epi8(0x0F);
        let ones = _mm256_set1_epi16(1);
        let mut acc = [_mm256_setzero_ps(); TILE];
        for b in 0..nb {
            let blk = &w[b * X8_BYTES..(b + 1) * X8_BYTES];
            // SAFETY: `blk` is 144 bytes: d[8] (16 bytes), then qs (128).
            let dw = _mm256_cvtph_ps(unsafe { _mm_loadu_si128(blk.as_ptr() as *const __m128i) });
            let mut wv = [_mm256_setzero_si256(); 8];
            for h in 0..2 {
                // qs[64h..64h + 64]: bytes 8h..8h + 8 of rows 0..4, then of rows 4..8; a byte's low
                // nibble is element j, its high nibble element j + 16
                // SAFETY: 16 + 64h + 64 <= 144.
                let (lo, hi) = unsafe {
                    let q = blk.as_ptr().add(16 + 64 * h);
                    (_mm256_loadu_si256(q as *const __m256i), _mm256_loadu_si256(q.add(32) as *const __m256i))
                };
                let (lo, hi) = (_mm256_permutevar8x32_epi32(lo, perm), _mm256_permutevar8x32_epi32(hi, perm));
                // bytes 8h..8h + 4 of the eight rows, and 8h + 4..8h + 8
                let va = _mm256_permute2x128_si256::<0x20>(lo, hi);
                let vb = _mm256_permute2x128_si256::<0x31>(lo, hi);
                wv[2 * h] = _mm256_shuffle_epi8(lut, _mm256_and_si256(va, m4));
                wv[2 * h + 1] = _mm256_shuffle_epi8(lut, _mm256_and_si256(vb, m4));
                wv[4 + 2 * h] = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16::<4>(va), m4));
                wv[5 + 2 * h] = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16::<4>(vb), m4));
            }
            let wabs = wv.map(|v| _mm256_sign_epi8(v, v));
            for (r, blocks) in rows.iter().enumerate() {
                let y = &blocks[b];
                let mut isum = _mm256_setzero_si256();
                for v in 0..8 {
                    let x = &y.qs[4 * v..4 * v + 4];
                    let x = _mm256_set1_epi32(i32::from_le_bytes([x[0] as u8, x[1] as u8, x[2] as u8, x[3] as u8]));
                    let p = _mm256_maddubs_epi16(wabs[v], _mm256_sign_epi8(x, wv[v]));
                    isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, ones));
                }
                // ggml: _mm256_mul_ps(col_scale_f32, row_scale_f32), then one FMA per block
                let ds = _mm256_mul_ps(dw, _mm256_set1_ps(fp16_to_fp32(y.d)));
                acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), ds, acc[r]);
            }
        }
        for r in 0..n {
            // SAFETY: out[r] is 8 f32.
            unsafe { _mm256_storeu_ps(out[r].as_mut_ptr(), acc[r]) };
        }
    }
}

#[cfg(test)]
mod tests;
