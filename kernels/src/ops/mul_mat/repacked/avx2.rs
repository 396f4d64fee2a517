//! The AVX2 kernel of [`super`]: a group of eight repacked Q4_K weight rows against a tile of
//! activation rows, with ggml's float steps (`ggml_gemm_q4_K_8x8_q8_K` /
//! `ggml_gemv_q4_K_8x8_q8_K` in ggml-cpu/arch/x86/repack.cpp).
//!
//! The integer sums are exact in any grouping (a 16-bit lane sums 16 products of a 4-bit quant and
//! a quant of at most 127 in magnitude: 30480 at most; `pmaddubsw` never saturates on them), so
//! they are formed the simplest way with the lanes across the eight weight rows: each super-block's
//! quants are unpacked once per tile into 64 vectors (sub-block `j`, four values `4v..4v + 4` of
//! every row in dword `c`) and multiplied by the activation's four bytes broadcast. The float
//! steps are ggml's, lane by lane: its `d_w * d_a` products, its FMAs per pair of sub-blocks
//! (gemm) or per super-block (gemv), and the final subtraction.

use super::{ActBlock, Q4KX8_BYTES, TILE};
use std::arch::x86_64::*;

/// Sub-block `j`'s 6-bit scales and minimums of the eight rows, from the 12 bytes ggml's
/// `make_block_q4_Kx8` packs them in (ggml's kernels unpack them with `kmask1..3`).
#[inline(always)]
fn scales_mins(q: &[u8]) -> ([i16; 8], [i16; 8]) {
    let mut sc = [0i16; 8];
    let mut mn = [0i16; 8];
    for c in 0..4 {
        sc[c] = (q[c] & 63) as i16;
        mn[c] = (q[4 + c] & 63) as i16;
        sc[4 + c] = ((q[8 + c] & 15) | ((q[c] >> 6) << 4)) as i16;
        mn[4 + c] = ((q[8 + c] >> 4) | ((q[4 + c] >> 6) << 4)) as i16;
    }
    (sc, mn)
}

/// # Safety
/// AVX2, FMA and F16C must be available. `w` must hold `rows[i].0.len()` groups for every `i`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn group(w: &[u8], rows: &[(&[ActBlock], bool)], out: &mut [[f32; 8]]) {
    let n = rows.len();
    assert!(n <= TILE && out.len() >= n);
    let nb = rows.first().map_or(0, |r| r.0.len());
    assert!(w.len() >= nb * Q4KX8_BYTES && rows.iter().all(|r| r.0.len() == nb));
    let mut acc = [_mm256_setzero_ps(); TILE];
    let mut acc_min = [_mm256_setzero_ps(); TILE];
    let perm = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    let m4 = _mm256_set1_epi8(0x0F);
    for b in 0..nb {
        let blk = &w[b * Q4KX8_BYTES..(b + 1) * Q4KX8_BYTES];
        // SAFETY (every load below): `blk` is 1152 bytes: d[8], dmin[8] (16 bytes each), scales
        // (96), qs (1024); each unaligned load stays inside it.
        let (dw, dmin) = unsafe {
            (_mm256_cvtph_ps(_mm_loadu_si128(blk.as_ptr() as *const __m128i)), _mm256_cvtph_ps(_mm_loadu_si128(blk.as_ptr().add(16) as *const __m128i)))
        };
        // per sub-block: the scale of row c in both 16-bit halves of dword c (for pmaddwd);
        // per pair of sub-blocks: the two minimums of row c in dword c
        let mut scv = [_mm256_setzero_si256(); 8];
        let mut mnv = [_mm256_setzero_si256(); 4];
        let mut mins = [[0i16; 8]; 8];
        for (j, s) in scv.iter_mut().enumerate() {
            let (sc, mn) = scales_mins(&blk[32 + 12 * j..44 + 12 * j]);
            let lanes: [i16; 16] = std::array::from_fn(|l| sc[l / 2]);
            // SAFETY: 32 bytes read from a 32-byte array.
            *s = unsafe { _mm256_loadu_si256(lanes.as_ptr() as *const __m256i) };
            mins[j] = mn;
        }
        for (p, v) in mnv.iter_mut().enumerate() {
            let lanes: [i16; 16] = std::array::from_fn(|l| mins[2 * p + l % 2][l / 2]);
            // SAFETY: as above.
            *v = unsafe { _mm256_loadu_si256(lanes.as_ptr() as *const __m256i) };
        }
        // the quants: chunk t (64 bytes) holds bytes 8(t % 4)..8(t % 4) + 8 of sub-block pair
        // t / 4 of the eight rows, row after row; low nibbles sub-block 2(t / 4), high the next
        let mut wv = [_mm256_setzero_si256(); 64];
        for t in 0..16 {
            // SAFETY: qs starts at byte 128; chunk t ends at 128 + 64t + 64 <= 1152.
            let (lo, hi) = unsafe {
                let q = blk.as_ptr().add(128 + 64 * t);
                (_mm256_loadu_si256(q as *const __m256i), _mm256_loadu_si256(q.add(32) as *const __m256i))
            };
            let (lo, hi) = (_mm256_permutevar8x32_epi32(lo, perm), _mm256_permutevar8x32_epi32(hi, perm));
            let va = _mm256_permute2x128_si256::<0x20>(lo, hi);
            let vb = _mm256_permute2x128_si256::<0x31>(lo, hi);
            let (g, q) = (t / 4, t % 4);
            wv[16 * g + 2 * q] = _mm256_and_si256(va, m4);
            wv[16 * g + 2 * q + 1] = _mm256_and_si256(vb, m4);
            wv[16 * g + 8 + 2 * q] = _mm256_and_si256(_mm256_srli_epi16::<4>(va), m4);
            wv[16 * g + 8 + 2 * q + 1] = _mm256_and_si256(_mm256_srli_epi16::<4>(vb), m4);
        }
        for (r, &(blocks, gemm)) in rows.iter().enumerate() {
            let a = &blocks[b];
            let da = _mm256_set1_ps(a.d);
            // ggml: _mm256_mul_ps(col_scale_f32, row_scale_f32), one rounding each
            let ds = _mm256_mul_ps(dw, da);
            let dms = _mm256_mul_ps(dmin, da);
            let mut i_blk = _mm256_setzero_si256();
            let mut m_blk = _mm256_setzero_si256();
            for sb in 0..4 {
                let mut i_sb = _mm256_setzero_si256();
                for j in 2 * sb..2 * sb + 2 {
                    let mut s16 = _mm256_setzero_si256();
                    for v in 0..8 {
                        let x = &a.qs[32 * j + 4 * v..32 * j + 4 * v + 4];
                        let x = _mm256_set1_epi32(i32::from_le_bytes([x[0] as u8, x[1] as u8, x[2] as u8, x[3] as u8]));
                        s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(wv[8 * j + v], x));
                    }
                    i_sb = _mm256_add_epi32(i_sb, _mm256_madd_epi16(s16, scv[j]));
                }
                let pair = (a.sums[2 * sb] as u16 as u32 | (a.sums[2 * sb + 1] as u16 as u32) << 16) as i32;
                let m_sb = _mm256_madd_epi16(_mm256_set1_epi32(pair), mnv[sb]);
                if gemm {
                    acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i_sb), ds, acc[r]);
                    acc_min[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(m_sb), dms, acc_min[r]);
                } else {
                    i_blk = _mm256_add_epi32(i_blk, i_sb);
                    m_blk = _mm256_add_epi32(m_blk, m_sb);
                }
            }
            if !gemm {
                acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i_blk), ds, acc[r]);
                acc_min[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(m_blk), dms, acc_min[r]);
            }
        }
    }
    for r in 0..n {
        // SAFETY: out[r] is 8 f32.
        unsafe { _mm256_storeu_ps(out[r].as_mut_ptr(), _mm256_sub_ps(acc[r], acc_min[r])) };
    }
}
