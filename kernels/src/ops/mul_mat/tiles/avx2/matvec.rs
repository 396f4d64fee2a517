//! The AVX2 matrix-vector product (one activation column: decoding), in ggml-cpu's AVX2 order
//! for every output.
//!
//! Per output it is ggml's `vec_dot`: `acc = fma(dw * da, ints, acc)` over the blocks in order,
//! Q4_1's `summs = fma(m, s, summs)`, then `hsum(acc) (+ summs)` — what `quant::quant_tile`
//! computes with one activation column. The tile widened each block's scale and minimum on its
//! own (a 64-bit pack, a conversion, a shuffle, a scalar multiply and a broadcast per row and
//! block: more instructions than the integer dot product). Here four rows pass together: one
//! conversion widens their four `[d, m]` pairs, one multiply by the activation's scale gives the
//! four `dw * da` (the same single IEEE product per lane as ggml's multiply of two broadcasts),
//! and Q4_1's four `m * s` chains run in the other lanes of one FMA.

use super::super::acts::ActRows;
use super::quant::Avx2Tile;
use crate::quant::x86_util::hsum_ps;
use std::arch::x86_64::*;

/// Rows per pass: their accumulators, the scales, the activation block and one row's unpacked
/// quants fit the sixteen registers.
const ROWS: usize = 4;

/// How far ahead of the block being multiplied each row's weights are prefetched, in bytes:
/// decoding streams the weights from memory once per token. Each row fetches its own line with
/// every block (a few times per line; cheaper than working out which lines are new). Measured
/// with `bench_matvec` (one thread, 1536 x 576, hot / cold weights): 4 KiB ahead gave Q4_1
/// 29.7 / 42 us, Q8_0 36 / 81; 8 KiB 30 / 42 and 34 / 59; into L2 (`T1`, see
/// [`Avx2Tile::PREFETCH_L2`]) Q4_1 30 / 35.
const PREFETCH_BYTES: usize = 8192;

/// `out[r]` = row `w(r)` times the single activation column of `a`, for `r` in `0..rows`.
///
/// # Safety
/// AVX2, FMA and F16C must be available. Every row holds at least `a.nb` blocks (checked).
#[inline(never)] // one call per chunk; keeps each format's kernel visible to profilers
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn matvec<'w, F: Avx2Tile>(w: impl Fn(usize) -> &'w [F::W], rows: usize, a: &ActRows<'_, F::A>, out: &mut [f32])
where
    F::W: 'w,
{
    let nb = a.nb;
    assert!(a.n >= 1 && out.len() >= rows);
    assert!(a.blocks.len() >= nb && a.d.len() >= nb && (!F::HAS_MIN || a.s.len() >= nb));
    // lane 2r of the widened scales holds row r's d (odd lanes: its minimum)
    let lane: [__m256i; ROWS] = std::array::from_fn(|r| _mm256_set1_epi32(2 * r as i32));
    let block = std::mem::size_of::<F::W>();
    let mut r0 = 0;
    while r0 < rows {
        let m = (rows - r0).min(ROWS);
        // rows past the last repeat it (computed, not stored)
        let wr: [&[F::W]; ROWS] = std::array::from_fn(|r| w(r0 + r.min(m - 1)));
        assert!(wr.iter().all(|r| r.len() >= nb));
        let mut acc = [_mm256_setzero_ps(); ROWS];
        let mut summs = _mm256_setzero_ps();
        for b in 0..nb {
            for row in wr {
                // prefetching is a hint and never faults, wherever the address points
                let at = (row.as_ptr() as *const i8).wrapping_add(b * block + PREFETCH_BYTES);
                if F::PREFETCH_L2 {
                    _mm_prefetch::<_MM_HINT_T1>(at);
                } else {
                    _mm_prefetch::<_MM_HINT_T0>(at);
                }
            }
            // SAFETY (unchecked reads and Avx2Tile calls): this function requires AVX2/FMA/F16C;
            // b < nb <= every row's length and the activations' blocks / d / s lengths
            // (asserted).
            let x: [&F::W; ROWS] = std::array::from_fn(|r| unsafe { wr[r].get_unchecked(b) });
            let bits = _mm_setr_epi32(F::scale_bits(x[0]) as i32, F::scale_bits(x[1]) as i32, F::scale_bits(x[2]) as i32, F::scale_bits(x[3]) as i32);
            let sc = _mm256_cvtph_ps(bits);
            let dd = _mm256_mul_ps(sc, _mm256_set1_ps(unsafe { *a.d.get_unchecked(b) }));
            if F::HAS_MIN {
                // odd lanes: the four rows' m * s chains (ggml's summs)
                summs = _mm256_fmadd_ps(sc, _mm256_set1_ps(unsafe { *a.s.get_unchecked(b) }), summs);
            }
            let av = unsafe { F::acts(a.blocks.get_unchecked(b)) };
            for r in 0..ROWS {
                let q = unsafe { F::ints(F::quants(x[r]), av) };
                acc[r] = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(dd, lane[r]), q, acc[r]);
            }
        }
        let mut sm = [0f32; 8];
        // SAFETY: sm is 8 writable f32.
        unsafe { _mm256_storeu_ps(sm.as_mut_ptr(), summs) };
        for r in 0..m {
            out[r0 + r] = if F::HAS_MIN { hsum_ps(acc[r]) + sm[2 * r + 1] } else { hsum_ps(acc[r]) };
        }
        r0 += m;
    }
}
