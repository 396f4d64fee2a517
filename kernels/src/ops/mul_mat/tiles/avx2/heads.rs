//! The AVX2 vectors of the head-row kernel ([`crate::ops::mul_mat::tiles::heads`]): eight lanes, two
//! activation rows per panel load (the sixteen registers hold two rows' accumulators).

use super::float::FloatElem;
use crate::ops::mul_mat::tiles::heads::{self, LaneRows, Lanes};
use crate::ops::mul_mat::tiles::operands::DstView;
use std::arch::x86_64::*;

/// AVX2's `__m256`.
pub(super) struct Avx2Lanes;

// SAFETY: AVX2/FMA intrinsics only; callers hold the features (trait contract).
unsafe impl Lanes for Avx2Lanes {
    type V = __m256;
    const LANES: usize = 8;
    #[inline(always)]
    unsafe fn zero() -> __m256 {
        _mm256_setzero_ps()
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> __m256 {
        // SAFETY: 8 readable floats by the contract.
        unsafe { _mm256_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn splat(p: *const f32) -> __m256 {
        // SAFETY: one readable float by the contract.
        unsafe { _mm256_broadcast_ss(&*p) }
    }
    #[inline(always)]
    unsafe fn fma(a: __m256, b: __m256, c: __m256) -> __m256 {
        _mm256_fmadd_ps(a, b, c)
    }
    #[inline(always)]
    unsafe fn add(a: __m256, b: __m256) -> __m256 {
        _mm256_add_ps(a, b)
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: __m256) {
        // SAFETY: 8 writable floats by the contract.
        unsafe { _mm256_storeu_ps(p, v) }
    }
    #[inline(never)]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn group<const C: usize, const K: usize>(p: *const f32, a: [*const f32; C]) -> [__m256; C] {
        // SAFETY: passed on from this function's contract.
        unsafe { heads::group::<Self, C, K>(p, a) }
    }
}

// SAFETY: as above (F16C for half rows).
unsafe impl<E: FloatElem> LaneRows<E> for Avx2Lanes {
    #[inline(always)]
    unsafe fn transpose(rows: &[&[E]], k: usize, panel: *mut f32) {
        assert!(rows.len() == 8 && k.is_multiple_of(16) && rows.iter().all(|r| r.len() >= k));
        for e0 in (0..k).step_by(8) {
            // SAFETY: every row holds k elements (asserted) and e0 + 8 <= k; the panel holds
            // k * 8 floats and (e0 + 7) * 8 + 8 <= that; features by the contract.
            unsafe {
                let mut v = [_mm256_setzero_ps(); 8];
                for r in 0..8 {
                    v[r] = E::load8(rows[r].as_ptr().add(e0));
                }
                let t = transpose8(v);
                for (i, v) in t.into_iter().enumerate() {
                    _mm256_storeu_ps(panel.add((e0 + i) * 8), v);
                }
            }
        }
    }
    #[inline(always)]
    unsafe fn widen(row: &[E], out: *mut f32) {
        assert!(row.len().is_multiple_of(8));
        for q in 0..row.len() / 8 {
            // SAFETY: 8q + 8 <= the row's length, which out holds too (contract); features by
            // the contract.
            unsafe { _mm256_storeu_ps(out.add(8 * q), E::load8(row.as_ptr().add(8 * q))) };
        }
    }
}

/// Every output of `dst` if the head-row kernel takes the product ([`heads::rows`] with eight
/// lanes); false (nothing computed) otherwise.
///
/// # Safety
/// AVX2, FMA and F16C must be available.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn rows<'w, 'a, E: FloatElem + 'w + 'a>(w: impl Fn(usize) -> &'w [E], a: impl Fn(usize) -> &'a [E], dst: &mut DstView<'_>) -> bool {
    // SAFETY: the features by this function's contract.
    unsafe { heads::rows::<Avx2Lanes, E, E, 2>(w, a, dst) }
}

/// Eight rows of eight floats turned into eight columns: `out[e]` lane `r` is `rows[r]` lane
/// `e` (the panel's layout, built eight elements of eight rows at a time instead of by 64 scalar
/// stores per row).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(in crate::ops::mul_mat::tiles) fn transpose8(rows: [__m256; 8]) -> [__m256; 8] {
    let [r0, r1, r2, r3, r4, r5, r6, r7] = rows;
    // pairs interleaved: [a0 b0 a1 b1 | a4 b4 a5 b5] and [a2 b2 a3 b3 | a6 b6 a7 b7]
    let (t0, t1) = (_mm256_unpacklo_ps(r0, r1), _mm256_unpackhi_ps(r0, r1));
    let (t2, t3) = (_mm256_unpacklo_ps(r2, r3), _mm256_unpackhi_ps(r2, r3));
    let (t4, t5) = (_mm256_unpacklo_ps(r4, r5), _mm256_unpackhi_ps(r4, r5));
    let (t6, t7) = (_mm256_unpacklo_ps(r6, r7), _mm256_unpackhi_ps(r6, r7));
    // fours: [a0 b0 c0 d0 | a4 b4 c4 d4], ...
    let (u0, u1) = (_mm256_shuffle_ps::<0x44>(t0, t2), _mm256_shuffle_ps::<0xEE>(t0, t2));
    let (u2, u3) = (_mm256_shuffle_ps::<0x44>(t1, t3), _mm256_shuffle_ps::<0xEE>(t1, t3));
    let (u4, u5) = (_mm256_shuffle_ps::<0x44>(t4, t6), _mm256_shuffle_ps::<0xEE>(t4, t6));
    let (u6, u7) = (_mm256_shuffle_ps::<0x44>(t5, t7), _mm256_shuffle_ps::<0xEE>(t5, t7));
    // halves joined: element e of all eight rows
    [
        _mm256_permute2f128_ps::<0x20>(u0, u4),
        _mm256_permute2f128_ps::<0x20>(u1, u5),
        _mm256_permute2f128_ps::<0x20>(u2, u6),
        _mm256_permute2f128_ps::<0x20>(u3, u7),
        _mm256_permute2f128_ps::<0x31>(u0, u4),
        _mm256_permute2f128_ps::<0x31>(u1, u5),
        _mm256_permute2f128_ps::<0x31>(u2, u6),
        _mm256_permute2f128_ps::<0x31>(u3, u7),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose8_moves_every_element() {
        if !crate::cpu_features::available_levels().contains(&crate::cpu_features::SimdLevel::Avx2) {
            return;
        }
        let m: [[f32; 8]; 8] = std::array::from_fn(|r| std::array::from_fn(|e| (10 * r + e) as f32));
        // SAFETY: AVX2 checked above; the arrays hold 8 floats each.
        let t = unsafe { transpose8(m.map(|row| _mm256_loadu_ps(row.as_ptr()))) };
        for (e, v) in t.iter().enumerate() {
            let mut out = [0f32; 8];
            // SAFETY: out holds 8 floats.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr(), *v) };
            assert_eq!(out, std::array::from_fn(|r| (10 * r + e) as f32), "column {e}");
        }
    }
}
