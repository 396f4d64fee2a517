//! The AVX-512 vectors of the head-row kernel ([`crate::ops::mul_mat::tiles::heads`]): sixteen lanes,
//! four activation rows per panel load (the 32 registers hold four rows' accumulators). On
//! whisper's KQ (1500 x 1500 x 64 per head) that kernel reaches about 80 % of the FMA rate in
//! its inner function; the row-lane tiles of [`super::float`] spent as long on their
//! reductions and pair stores as on their multiply-adds.

use super::float::Elem512;
use crate::ops::mul_mat::tiles::avx2::heads::transpose8;
use crate::ops::mul_mat::tiles::heads::{self, LaneRows, Lanes};
use crate::ops::mul_mat::tiles::operands::DstView;
use std::arch::x86_64::*;

/// AVX-512's `__m512`.
pub(super) struct Avx512Lanes;

// SAFETY: AVX-512F intrinsics only; callers hold the features (trait contract).
unsafe impl Lanes for Avx512Lanes {
    type V = __m512;
    const LANES: usize = 16;
    #[inline(always)]
    unsafe fn zero() -> __m512 {
        _mm512_setzero_ps()
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> __m512 {
        // SAFETY: 16 readable floats by the contract.
        unsafe { _mm512_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn splat(p: *const f32) -> __m512 {
        // SAFETY: one readable float by the contract.
        _mm512_set1_ps(unsafe { *p })
    }
    #[inline(always)]
    unsafe fn fma(a: __m512, b: __m512, c: __m512) -> __m512 {
        _mm512_fmadd_ps(a, b, c)
    }
    #[inline(always)]
    unsafe fn add(a: __m512, b: __m512) -> __m512 {
        _mm512_add_ps(a, b)
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: __m512) {
        // SAFETY: 16 writable floats by the contract.
        unsafe { _mm512_storeu_ps(p, v) }
    }
    #[inline(never)]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
    unsafe fn group<const C: usize, const K: usize>(p: *const f32, a: [*const f32; C]) -> [__m512; C] {
        // SAFETY: passed on from this function's contract.
        unsafe { heads::group::<Self, C, K>(p, a) }
    }
}

// SAFETY: as above (F16C for half rows, AVX2 for the 8 x 8 transposes).
unsafe impl<T: Elem512> LaneRows<T> for Avx512Lanes {
    /// Sixteen elements of the sixteen rows at a time, as four 8 x 8 transposes (rows 0-7 and
    /// 8-15, elements `e0..e0 + 8` and `e0 + 8..e0 + 16`).
    #[inline(always)]
    unsafe fn transpose(rows: &[&[T]], k: usize, panel: *mut f32) {
        assert!(rows.len() == 16 && k.is_multiple_of(16) && rows.iter().all(|r| r.len() >= k));
        for e0 in (0..k).step_by(16) {
            // SAFETY: every row holds k elements (asserted) and e0 + 16 <= k; the panel holds
            // k * 16 floats and (e0 + 15) * 16 + 16 <= that; features by the contract.
            unsafe {
                let mut v = [_mm512_setzero_ps(); 16];
                for r in 0..16 {
                    v[r] = T::load16(rows[r].as_ptr().add(e0));
                }
                for (half, lane0) in [(0usize, 0usize), (1, 0), (0, 8), (1, 8)] {
                    let mut part = [_mm256_setzero_ps(); 8];
                    for r in 0..8 {
                        let x = v[lane0 + r];
                        part[r] = if half == 0 { _mm512_castps512_ps256(x) } else { _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(x))) };
                    }
                    for (i, t) in transpose8(part).into_iter().enumerate() {
                        _mm256_storeu_ps(panel.add((e0 + 8 * half + i) * 16 + lane0), t);
                    }
                }
            }
        }
    }
    #[inline(always)]
    unsafe fn widen(row: &[T], out: *mut f32) {
        assert!(row.len().is_multiple_of(16));
        for q in 0..row.len() / 16 {
            // SAFETY: 16q + 16 <= the row's length, which out holds too (contract); features by
            // the contract.
            unsafe { _mm512_storeu_ps(out.add(16 * q), T::load16(row.as_ptr().add(16 * q))) };
        }
    }
}

/// Every output of `dst` if the head-row kernel takes the product ([`heads::rows`] with sixteen
/// lanes); false (nothing computed) otherwise.
///
/// # Safety
/// The CPU has AVX-512 F/BW/VL/DQ, AVX2, FMA and F16C.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
pub(super) unsafe fn rows<'w, 'a, E: Elem512 + 'w, A: Elem512 + 'a>(w: impl Fn(usize) -> &'w [E], a: impl Fn(usize) -> &'a [A], dst: &mut DstView<'_>) -> bool {
    // SAFETY: the features by this function's contract.
    unsafe { heads::rows::<Avx512Lanes, E, A, 4>(w, a, dst) }
}
