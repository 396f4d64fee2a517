//! Tiles of F16 / F32 matrix-product outputs in exactly ggml-cpu's AVX2 `vec_dot_f16/f32` order
//! (see `tile` for why every output keeps ggml's arithmetic and the speed comes from the loop
//! nest).
//!
//! Everything here needs AVX2, FMA and F16C; callers dispatch through `cpu_features`.

// Register tiles index accumulators and rows with the same row and column numbers.
#![allow(clippy::needless_range_loop)]

use std::arch::x86_64::*;

/// One weight row element type of the float products (F16 or F32), with how ggml-cpu finishes
/// its dot product: F16 adds the leftovers (`k % 32`) in double, F32 in float, partly fused (see
/// [`f32_tail_unfused`]).
///
/// # Safety
/// `load8` uses AVX2/F16C; see [`super::quant::Avx2Tile`].
pub(crate) unsafe trait FloatElem: Copy {
    /// Eight elements from `p`, as f32. Raw pointer so the tile loops carry no bounds checks.
    ///
    /// # Safety
    /// `p` points at 8 readable elements.
    unsafe fn load8(p: *const Self) -> __m256;
    fn to_f32(self) -> f32;
    fn finish(reduced: f32, w: &[Self], a: &[f32]) -> f32;
}

// SAFETY: AVX2/F16C-only body, see the trait.
unsafe impl FloatElem for u16 {
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load8(p: *const u16) -> __m256 {
        // SAFETY: 16 readable bytes by the contract; loadu has no alignment requirement.
        _mm256_cvtph_ps(unsafe { _mm_loadu_si128(p as *const __m128i) })
    }
    #[inline]
    fn to_f32(self) -> f32 {
        crate::simd::quant::f16::fp16_to_fp32(self)
    }
    #[inline]
    fn finish(reduced: f32, w: &[u16], a: &[f32]) -> f32 {
        let mut sum = reduced as f64;
        for (&x, &y) in w.iter().zip(a) {
            sum += (x.to_f32() * y) as f64;
        }
        sum as f32
    }
}

// SAFETY: AVX2-only body, see the trait.
unsafe impl FloatElem for f32 {
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load8(p: *const f32) -> __m256 {
        // SAFETY: 32 readable bytes by the contract; loadu has no alignment requirement.
        unsafe { _mm256_loadu_ps(p) }
    }
    #[inline]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline]
    fn finish(reduced: f32, w: &[f32], a: &[f32]) -> f32 {
        let unfused = f32_tail_unfused(w.len());
        let mut sum = reduced;
        for (e, (&x, &y)) in w.iter().zip(a).enumerate() {
            sum = if e < unfused { sum + x * y } else { x.mul_add(y, sum) };
        }
        sum
    }
}

/// How many of an F32 dot product's `tail` leftovers ggml-cpu's AVX2 build adds as a rounded
/// product (`sum + x * y`) rather than fused: GCC vectorizes the leftover loop
/// `sumf += x[i]*y[i]` into groups of 8 and then one group of 4 (products with `vmulps`, then
/// added lane by lane in order) and only contracts the last `< 4` elements into scalar FMAs
/// (read from the stock build's disassembly; the k % 32 != 0 F32 cases in tests_c/simd_ops.c
/// check it). The sums stay sequential either way.
pub(crate) fn f32_tail_unfused(tail: usize) -> usize {
    tail / 8 * 8 + if tail % 8 >= 4 { 4 } else { 0 }
}

/// Float outputs `(r, c)` of weight rows `w[r]` with activation rows `a[c]` (already rounded to
/// what ggml's dot sees: F16 values for F16 weights), each in ggml's `vec_dot_f16/f32` order:
/// four accumulators over 32-element steps (accumulator `j` takes elements `32i + 8j..+8`),
/// reduced as `((acc0 + acc2) + (acc1 + acc3))`, halves added, two horizontal adds, then the
/// leftovers. The four accumulators are independent chains, so they are computed one after the
/// other: `R * C` live registers instead of `4 * R * C`.
///
/// # Safety
/// AVX2, FMA and F16C must be available. All rows have the same length (checked).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn float_tile<E: FloatElem, const R: usize, const C: usize>(w: [&[E]; R], a: [&[f32]; C]) -> [[f32; C]; R] {
    let k = a[0].len();
    assert!(w.iter().all(|r| r.len() == k) && a.iter().all(|r| r.len() == k));
    let np = k & !31;
    let wp = w.map(|r| r.as_ptr());
    let ap = a.map(|r| r.as_ptr());
    // parts[j]: accumulator j of every output. Built from the passes' results rather than
    // zeroed and then overwritten (the zeroing was a 1 KiB memset per 2x4 tile).
    let parts: [[[__m256; C]; R]; 4] = if C == 1 {
        // One activation row (decoding): all four accumulators in one pass, 4R registers.
        let mut parts = [[[_mm256_setzero_ps(); C]; R]; 4];
        let mut i = 0;
        while i < np {
            for j in 0..4 {
                // SAFETY (loads): i + 8j + 8 <= np <= k, the length of every row (asserted);
                // this function requires AVX2/F16C.
                let av = unsafe { _mm256_loadu_ps(ap[0].add(i + 8 * j)) };
                for r in 0..R {
                    let wv = unsafe { E::load8(wp[r].add(i + 8 * j)) };
                    parts[j][r][0] = _mm256_fmadd_ps(wv, av, parts[j][r][0]);
                }
            }
            i += 32;
        }
        parts
    } else {
        // SAFETY: the rows hold k >= np elements (asserted); this function requires AVX2/F16C.
        unsafe { [float_pass::<E, R, C>(wp, ap, np, 0), float_pass(wp, ap, np, 1), float_pass(wp, ap, np, 2), float_pass(wp, ap, np, 3)] }
    };
    let mut out = [[0f32; C]; R];
    for r in 0..R {
        for c in 0..C {
            let p = |j: usize| parts[j][r][c];
            let x = _mm256_add_ps(_mm256_add_ps(p(0), p(2)), _mm256_add_ps(p(1), p(3)));
            let t0 = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps::<1>(x));
            let t1 = _mm_hadd_ps(t0, t0);
            let reduced = _mm_cvtss_f32(_mm_hadd_ps(t1, t1));
            out[r][c] = E::finish(reduced, &w[r][np..], &a[c][np..]);
        }
    }
    out
}

/// Accumulator `j` of [`float_tile`] for every output: elements `32i + 8j..+8` of each row.
///
/// # Safety
/// AVX2, FMA and F16C must be available; `w[r]` and `a[c]` point at `np` readable elements.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn float_pass<E: FloatElem, const R: usize, const C: usize>(wp: [*const E; R], ap: [*const f32; C], np: usize, j: usize) -> [[__m256; C]; R] {
    let mut acc = [[_mm256_setzero_ps(); C]; R];
    // One 32-element step, elements i..i + 8 of each row.
    // SAFETY (callers): i + 8 <= np, so readable by the contract; AVX2/F16C by the contract.
    let step = |acc: &mut [[__m256; C]; R], i: usize| {
        let mut wv = [unsafe { E::load8(wp[0].add(i)) }; R];
        for r in 1..R {
            wv[r] = unsafe { E::load8(wp[r].add(i)) };
        }
        for c in 0..C {
            let av = unsafe { _mm256_loadu_ps(ap[c].add(i)) };
            for r in 0..R {
                acc[r][c] = _mm256_fmadd_ps(wv[r], av, acc[r][c]);
            }
        }
    };
    // Two steps per loop trip (same order: each accumulator still takes its steps one by one).
    let mut i = 8 * j;
    while i + 32 < np {
        step(&mut acc, i);
        step(&mut acc, i + 32);
        i += 64;
    }
    if i < np {
        step(&mut acc, i);
    }
    acc
}

