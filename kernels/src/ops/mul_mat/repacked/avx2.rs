//! The x86 kernels of [`super`]: a group of eight repacked Q4_K weight rows against a tile of
//! activation rows, with ggml's float steps (`ggml_gemm_q4_K_8x8_q8_K` /
//! `ggml_gemv_q4_K_8x8_q8_K` in ggml-cpu/arch/x86/repack.cpp), and the 4x8 activation quantizer
//! (`ggml_quantize_mat_q8_K_4x8`) in ggml's own instructions.
//!
//! The integer sums are exact in any grouping (a 16-bit lane sums 16 products of a 4-bit quant and
//! a quant of at most 127 in magnitude: 30480 at most; `pmaddubsw` never saturates on them), so
//! they are formed the cheapest way with the lanes across the eight weight rows: each super-block's
//! quants are unpacked once per tile into 64 vectors (sub-block `j`, four values `4v..4v + 4` of
//! every row in dword `c`) and multiplied by the activation's four bytes broadcast, four activation
//! rows per weight vector loaded (the loads, not the multiplies, bounded the one-row loop). On the
//! AVX-512 level `vpdpbusd` forms each sub-block's dot in 32-bit lanes (the same exact integers as
//! `pmaddubsw` + `pmaddwd`) and `vpmulld` applies the scale. The float steps are ggml's, lane by
//! lane: its `d_w * d_a` products, its FMAs per pair of sub-blocks (gemm) or per super-block
//! (gemv), and the final subtraction.

// The integer core indexes its accumulators, activation rows and pairs with the same numbers.
#![allow(clippy::needless_range_loop)]

use super::{ActBlock, Q4KX8_BYTES, TILE};
use crate::cpu_features::{simd_level, SimdLevel};
use crate::quant::q8_k::QK_K;
use std::arch::x86_64::*;

/// Activation rows the integer core takes per weight vector loaded.
const R: usize = 4;

/// One super-block of the group, unpacked for the integer core.
struct Unpacked {
    /// Sub-block `j`'s quants `4v..4v + 4` of row `c` in dword `c` of vector `8j + v`.
    wv: [__m256i; 64],
    /// Sub-block `j`'s scale of row `c` in both 16-bit halves of dword `c` (for `pmaddwd`).
    sc16: [__m256i; 8],
    /// The same scale as a 32-bit lane (for `vpmulld`).
    sc32: [__m256i; 8],
    /// Pair `p`'s two minimums of row `c` in dword `c` (sub-block `2p` low, `2p + 1` high).
    mins: [__m256i; 4],
}

/// The eight rows' 6-bit scales (`.0`) and minimums (`.1`) of sub-block `j`, one byte per row,
/// from the 12 bytes `make_block_q4_Kx8` packs them in (ggml's `kmask1..3` unpacking).
#[inline(always)]
fn scales_mins(q: &[u8]) -> (u64, u64) {
    let w = |i: usize| u32::from_le_bytes([q[4 * i], q[4 * i + 1], q[4 * i + 2], q[4 * i + 3]]);
    let (q0, q1, q2) = (w(0), w(1), w(2));
    let sc_hi = (q2 & 0x0f0f_0f0f) | ((q0 >> 2) & 0x3030_3030);
    let mn_hi = ((q2 >> 4) & 0x0f0f_0f0f) | ((q1 >> 2) & 0x3030_3030);
    ((q0 & 0x3f3f_3f3f) as u64 | (sc_hi as u64) << 32, (q1 & 0x3f3f_3f3f) as u64 | (mn_hi as u64) << 32)
}

/// # Safety
/// AVX2 must be available; `blk` is one `block_q4_Kx8` (checked).
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn unpack(blk: &[u8], u: &mut Unpacked) {
    assert!(blk.len() >= Q4KX8_BYTES);
    let mut mn = [_mm256_setzero_si256(); 8];
    for j in 0..8 {
        let (sc, m) = scales_mins(&blk[32 + 12 * j..44 + 12 * j]);
        let sc32 = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(sc as i64));
        u.sc32[j] = sc32;
        u.sc16[j] = _mm256_or_si256(sc32, _mm256_slli_epi32::<16>(sc32));
        mn[j] = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(m as i64));
    }
    for p in 0..4 {
        u.mins[p] = _mm256_or_si256(mn[2 * p], _mm256_slli_epi32::<16>(mn[2 * p + 1]));
    }
    // chunk t (64 bytes) holds bytes 8(t % 4)..8(t % 4) + 8 of sub-block pair t / 4 of the eight
    // rows, row after row; low nibbles sub-block 2(t / 4), high the next
    let perm = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    let m4 = _mm256_set1_epi8(0x0F);
    for t in 0..16 {
        // SAFETY: qs starts at byte 128; chunk t ends at 128 + 64t + 64 <= 1152 (asserted above).
        let (lo, hi) = unsafe {
            let q = blk.as_ptr().add(128 + 64 * t);
            (_mm256_loadu_si256(q as *const __m256i), _mm256_loadu_si256(q.add(32) as *const __m256i))
        };
        let (lo, hi) = (_mm256_permutevar8x32_epi32(lo, perm), _mm256_permutevar8x32_epi32(hi, perm));
        let va = _mm256_permute2x128_si256::<0x20>(lo, hi);
        let vb = _mm256_permute2x128_si256::<0x31>(lo, hi);
        let (g, q) = (t / 4, t % 4);
        u.wv[16 * g + 2 * q] = _mm256_and_si256(va, m4);
        u.wv[16 * g + 2 * q + 1] = _mm256_and_si256(vb, m4);
        u.wv[16 * g + 8 + 2 * q] = _mm256_and_si256(_mm256_srli_epi16::<4>(va), m4);
        u.wv[16 * g + 8 + 2 * q + 1] = _mm256_and_si256(_mm256_srli_epi16::<4>(vb), m4);
    }
}

/// The activation's four quants `4v..4v + 4` of sub-block `j` in every dword.
///
/// # Safety
/// `a` points at an activation block's 256 quants.
#[inline(always)]
unsafe fn bcast(a: *const i8, j: usize, v: usize) -> __m256i {
    // SAFETY: 32j + 4v + 4 <= 256 for j, v < 8; unaligned read.
    unsafe { _mm256_set1_epi32((a.add(32 * j + 4 * v) as *const i32).read_unaligned()) }
}

/// Per activation row `r` and pair `p` of sub-blocks: the eight weight rows' scale times quant
/// dot, summed over the pair, with `pmaddubsw` (16-bit sums of two products, sixteen per lane at
/// most) and `pmaddwd` by the scales.
///
/// # Safety
/// AVX2 must be available; every `a[r]` points at an activation block's 256 quants.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn sums_avx2(u: &Unpacked, a: &[*const i8; R], out: &mut [[__m256i; 4]; R]) {
    for p in 0..4 {
        let mut acc = [_mm256_setzero_si256(); R];
        for j in 2 * p..2 * p + 2 {
            let mut s16 = [_mm256_setzero_si256(); R];
            for v in 0..8 {
                let wq = u.wv[8 * j + v];
                for r in 0..R {
                    // SAFETY: the caller's pointers.
                    let x = unsafe { bcast(a[r], j, v) };
                    s16[r] = _mm256_add_epi16(s16[r], _mm256_maddubs_epi16(wq, x));
                }
            }
            for r in 0..R {
                acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(s16[r], u.sc16[j]));
            }
        }
        for r in 0..R {
            out[r][p] = acc[r];
        }
    }
}

/// [`sums_avx2`] with `vpdpbusd` (unsigned weight quants times signed activation quants, four
/// products per 32-bit lane) and `vpmulld` by the scales: the same integers.
///
/// # Safety
/// AVX-512 VL and VNNI must be available; every `a[r]` points at an activation block's 256 quants.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn sums_vnni(u: &Unpacked, a: &[*const i8; R], out: &mut [[__m256i; 4]; R]) {
    for p in 0..4 {
        let mut acc = [_mm256_setzero_si256(); R];
        for j in 2 * p..2 * p + 2 {
            let mut s32 = [_mm256_setzero_si256(); R];
            for v in 0..8 {
                let wq = u.wv[8 * j + v];
                for r in 0..R {
                    // SAFETY: the caller's pointers.
                    let x = unsafe { bcast(a[r], j, v) };
                    s32[r] = _mm256_dpbusd_epi32(s32[r], wq, x);
                }
            }
            for r in 0..R {
                acc[r] = _mm256_add_epi32(acc[r], _mm256_mullo_epi32(s32[r], u.sc32[j]));
            }
        }
        for r in 0..R {
            out[r][p] = acc[r];
        }
    }
}

/// # Safety
/// AVX2, FMA and F16C must be available (and AVX-512 VL + VNNI on the AVX-512 level). `w` must
/// hold `rows[i].0.len()` groups for every `i` (checked).
pub(super) unsafe fn group(w: &[u8], rows: &[(&[ActBlock], bool)], out: &mut [[f32; 8]]) {
    let vnni = simd_level() == SimdLevel::Avx512;
    // SAFETY: the caller's guarantees.
    unsafe { group_at(vnni, w, rows, out) }
}

/// [`group`] with the integer core chosen: `vnni` for `vpdpbusd` (the tests run both here).
///
/// # Safety
/// As [`group`]; `vnni` only where AVX-512 VL and VNNI are available.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn group_at(vnni: bool, w: &[u8], rows: &[(&[ActBlock], bool)], out: &mut [[f32; 8]]) {
    let n = rows.len();
    assert!(n <= TILE && out.len() >= n);
    let nb = rows.first().map_or(0, |r| r.0.len());
    assert!(w.len() >= nb * Q4KX8_BYTES && rows.iter().all(|r| r.0.len() == nb));
    let mut acc = [_mm256_setzero_ps(); TILE];
    let mut acc_min = [_mm256_setzero_ps(); TILE];
    let zero = _mm256_setzero_si256();
    let mut u = Unpacked { wv: [zero; 64], sc16: [zero; 8], sc32: [zero; 8], mins: [zero; 4] };
    for b in 0..nb {
        let blk = &w[b * Q4KX8_BYTES..(b + 1) * Q4KX8_BYTES];
        // SAFETY: AVX2 (this function's features); `blk` is one block.
        unsafe { unpack(blk, &mut u) };
        // SAFETY: `blk` is 1152 bytes starting with d[8], dmin[8] (16 bytes each).
        let (dw, dmin) = unsafe {
            (_mm256_cvtph_ps(_mm_loadu_si128(blk.as_ptr() as *const __m128i)), _mm256_cvtph_ps(_mm_loadu_si128(blk.as_ptr().add(16) as *const __m128i)))
        };
        for r0 in (0..n).step_by(R) {
            // rows past the tile repeat its last (their sums unused)
            let a: [*const i8; R] = std::array::from_fn(|i| rows[(r0 + i).min(n - 1)].0[b].qs.as_ptr());
            let mut s = [[zero; 4]; R];
            // SAFETY: every `a[i]` is a block's 256 quants; the levels' features as documented.
            unsafe {
                if vnni {
                    sums_vnni(&u, &a, &mut s)
                } else {
                    sums_avx2(&u, &a, &mut s)
                }
            };
            for (i, s) in s.iter().enumerate().take(n - r0) {
                let r = r0 + i;
                let (blocks, gemm) = rows[r];
                let x = &blocks[b];
                let da = _mm256_set1_ps(x.d);
                // ggml: _mm256_mul_ps(col_scale_f32, row_scale_f32), one rounding each
                let ds = _mm256_mul_ps(dw, da);
                let dms = _mm256_mul_ps(dmin, da);
                let mut i_blk = zero;
                let mut m_blk = zero;
                for p in 0..4 {
                    let pair = (x.sums[2 * p] as u16 as u32 | (x.sums[2 * p + 1] as u16 as u32) << 16) as i32;
                    let m_sb = _mm256_madd_epi16(_mm256_set1_epi32(pair), u.mins[p]);
                    if gemm {
                        acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[p]), ds, acc[r]);
                        acc_min[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(m_sb), dms, acc_min[r]);
                    } else {
                        i_blk = _mm256_add_epi32(i_blk, s[p]);
                        m_blk = _mm256_add_epi32(m_blk, m_sb);
                    }
                }
                if !gemm {
                    acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i_blk), ds, acc[r]);
                    acc_min[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(m_blk), dms, acc_min[r]);
                }
            }
        }
    }
    for r in 0..n {
        // SAFETY: out[r] is 8 f32.
        unsafe { _mm256_storeu_ps(out[r].as_mut_ptr(), _mm256_sub_ps(acc[r], acc_min[r])) };
    }
}

/// ggml-cpu's AVX2 `ggml_quantize_mat_q8_K_4x8` for one row (its four rows never mix), in its own
/// instructions, so each float step is its: the lane maxima of magnitudes with `vmaxps`'s operand
/// order, the flags of lanes where a positive value reaches the maximum, the same horizontal
/// reduction, `round(x * iscale)` by `vroundps` (nearest, ties to even) and the saturating
/// conversions `vcvtps2dq` / `packssdw` / `packsswb`. [`super::quantize_row_4x8_portable`] is
/// the same rule written in scalar steps (the tests hold the two equal).
///
/// # Safety
/// AVX2 must be available.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn quantize_row_4x8(x: &[f32], out: &mut [ActBlock]) {
    assert_eq!(x.len(), out.len() * QK_K, "quantize_row_4x8: length mismatch");
    let sign = _mm256_set1_ps(-0.0);
    let perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let ones8 = _mm256_set1_epi8(1);
    let ones16 = _mm256_set1_epi16(1);
    for (xb, o) in x.chunks_exact(QK_K).zip(out.iter_mut()) {
        let p = xb.as_ptr();
        let mut max_abs = _mm256_setzero_ps();
        let mut flags = _mm256_setzero_ps();
        for sb in 0..8 {
            // SAFETY: 32 sb + 32 <= 256 floats of `xb`.
            let v: [__m256; 4] = unsafe { [0, 1, 2, 3].map(|t| _mm256_loadu_ps(p.add(32 * sb + 8 * t))) };
            let a = v.map(|v| _mm256_andnot_ps(sign, v));
            let prev = max_abs;
            max_abs = if sb == 0 { _mm256_max_ps(a[0], a[1]) } else { _mm256_max_ps(_mm256_max_ps(max_abs, a[0]), a[1]) };
            max_abs = _mm256_max_ps(_mm256_max_ps(max_abs, a[2]), a[3]);
            let eq = v.map(|v| _mm256_cmp_ps::<_CMP_EQ_OQ>(max_abs, v));
            let cur = _mm256_or_ps(_mm256_or_ps(eq[0], eq[1]), _mm256_or_ps(eq[2], eq[3]));
            flags = if sb == 0 { cur } else { _mm256_or_ps(_mm256_and_ps(flags, _mm256_cmp_ps::<_CMP_EQ_OQ>(prev, max_abs)), cur) };
        }
        let max4 = _mm_max_ps(_mm256_extractf128_ps::<1>(max_abs), _mm256_castps256_ps128(max_abs));
        let max4 = _mm_max_ps(max4, _mm_movehl_ps(max4, max4));
        let max4 = _mm_max_ss(max4, _mm_movehdup_ps(max4));
        let max = _mm_cvtss_f32(max4);
        let last = _mm256_and_ps(flags, _mm256_cmp_ps::<_CMP_EQ_OQ>(_mm256_set1_ps(max), max_abs));
        let mut iscale = if max != 0.0 { 127.0 / max } else { 0.0 };
        if _mm256_movemask_ps(last) != 0 {
            iscale = if max != 0.0 { -127.0 / max } else { 0.0 };
        }
        o.d = if max != 0.0 { 1.0 / iscale } else { 0.0 };
        let iv = _mm256_set1_ps(iscale);
        let mut sums = [_mm256_setzero_si256(); 8];
        for (j, s) in sums.iter_mut().enumerate() {
            // SAFETY: as above.
            let v: [__m256; 4] = unsafe { [0, 1, 2, 3].map(|t| _mm256_loadu_ps(p.add(32 * j + 8 * t))) };
            let i = v.map(|v| _mm256_cvtps_epi32(_mm256_round_ps::<_MM_FROUND_TO_NEAREST_INT>(_mm256_mul_ps(v, iv))));
            let q = _mm256_packs_epi16(_mm256_packs_epi32(i[0], i[1]), _mm256_packs_epi32(i[2], i[3]));
            let q = _mm256_permutevar8x32_epi32(q, perm);
            // SAFETY: 32 bytes at 32 j of the 256 quants.
            unsafe { _mm256_storeu_si256(o.qs.as_mut_ptr().add(32 * j) as *mut __m256i, q) };
            *s = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q), ones16);
        }
        let h = |a: __m256i, b: __m256i, c: __m256i, d: __m256i| {
            let u = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
            _mm_add_epi32(_mm256_castsi256_si128(u), _mm256_extracti128_si256::<1>(u))
        };
        let s = _mm_packs_epi32(h(sums[0], sums[1], sums[2], sums[3]), h(sums[4], sums[5], sums[6], sums[7]));
        // SAFETY: `sums` is 8 i16.
        unsafe { _mm_storeu_si128(o.sums.as_mut_ptr() as *mut __m128i, s) };
    }
}
