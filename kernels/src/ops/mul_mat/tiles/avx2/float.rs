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
    /// ggml's leftover loop for every output of a tile at once: `reduced[r][c]` plus the
    /// products of `w[r]` and `a[c]` (the `k % 32` leftovers), each output in its own sequential
    /// order. Element-outer so the tile's independent sums overlap: one output after the other
    /// waited on every add (whisper's KQV, `k` = 1500, spent longer in its 28 leftovers than in
    /// its 1472 vector elements).
    fn finish_tile<const R: usize, const C: usize>(reduced: [[f32; C]; R], w: [&[Self]; R], a: [&[Self]; C]) -> [[f32; C]; R];
}

// SAFETY: AVX2/F16C-only body, see the trait.
unsafe impl FloatElem for u16 {
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load8(p: *const u16) -> __m256 {
        // SAFETY: 16 readable bytes by the contract; loadu has no alignment requirement.
        _mm256_cvtph_ps(unsafe { _mm_loadu_si128(p as *const __m128i) })
    }
    /// ggml-cpu adds the leftovers in double: `sum += (double) (x * y)`.
    #[inline(always)]
    fn finish_tile<const R: usize, const C: usize>(reduced: [[f32; C]; R], w: [&[u16]; R], a: [&[u16]; C]) -> [[f32; C]; R] {
        let tail = a[0].len();
        if tail == 0 {
            return reduced;
        }
        // SAFETY: finish_tile is only called from float_tile, which requires AVX2/F16C.
        let (wf, af) = unsafe { (widen_tail(w), widen_tail(a)) };
        let mut sum = reduced.map(|row| row.map(|v| v as f64));
        for e in 0..tail {
            for r in 0..R {
                let x = wf[r][e];
                for c in 0..C {
                    sum[r][c] += (x * af[c][e]) as f64;
                }
            }
        }
        sum.map(|row| row.map(|v| v as f32))
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
    #[inline(always)]
    fn finish_tile<const R: usize, const C: usize>(reduced: [[f32; C]; R], w: [&[f32]; R], a: [&[f32]; C]) -> [[f32; C]; R] {
        let tail = a[0].len();
        let unfused = f32_tail_unfused(tail);
        let mut sum = reduced;
        for e in 0..tail {
            for r in 0..R {
                let x = w[r][e];
                for c in 0..C {
                    let y = a[c][e];
                    sum[r][c] = if e < unfused { sum[r][c] + x * y } else { x.mul_add(y, sum[r][c]) };
                }
            }
        }
        sum
    }
}

/// The `< 32` leftover halves of each row (weights or activations) as f32, eight at a time through a zero-padded
/// copy (a row's leftovers end the row, so they cannot be loaded in place 8 at a time). One
/// by one, the bit-level conversion took more instructions than the products.
///
/// # Safety
/// AVX2 and F16C must be available.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn widen_tail<const R: usize>(w: [&[u16]; R]) -> [[f32; 32]; R] {
    let mut out = [[0f32; 32]; R];
    for r in 0..R {
        let n = w[r].len().min(32);
        let mut h = [0u16; 32];
        h[..n].copy_from_slice(&w[r][..n]);
        for q in 0..n.div_ceil(8) {
            // SAFETY: h and out[r] hold 32 elements and q < 4; AVX2/F16C by the contract.
            unsafe { _mm256_storeu_ps(out[r].as_mut_ptr().add(8 * q), u16::load8(h.as_ptr().add(8 * q))) };
        }
    }
    out
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

/// Float outputs `(r, c)` of weight rows `w[r]` with activation rows `a[c]` of the same element
/// type (F16 activations as half bits, as ggml's F16 work buffer holds them: widened by
/// `vcvtph2ps` as they are loaded, at the rate of plain loads, where an f32 copy doubled the
/// bytes prepared and read), each in ggml's `vec_dot_f16/f32` order:
/// four accumulators over 32-element steps (accumulator `j` takes elements `32i + 8j..+8`),
/// reduced as `((acc0 + acc2) + (acc1 + acc3))`, halves added, two horizontal adds, then the
/// leftovers. The four accumulators are independent chains, so they are computed one after the
/// other: `R * C` live registers instead of `4 * R * C`.
///
/// # Safety
/// AVX2, FMA and F16C must be available. All rows have the same length (checked).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn float_tile<E: FloatElem, const R: usize, const C: usize>(w: [&[E]; R], a: [&[E]; C]) -> [[f32; C]; R] {
    let k = a[0].len();
    assert!(w.iter().all(|r| r.len() == k) && a.iter().all(|r| r.len() == k));
    let np = k & !31;
    let wp = w.map(|r| r.as_ptr());
    let ap = a.map(|r| r.as_ptr());
    // parts[j]: accumulator j of every output. Built from the passes' results rather than
    // zeroed and then overwritten (the zeroing was a 1 KiB memset per 2x4 tile).
    let parts: [[[__m256; C]; R]; 4] = if C == 1 && R <= 2 {
        // One activation row (decoding): all four accumulators in one pass, 4R registers.
        let mut parts = [[[_mm256_setzero_ps(); C]; R]; 4];
        let mut i = 0;
        while i < np {
            for j in 0..4 {
                // SAFETY (loads): i + 8j + 8 <= np <= k, the length of every row (asserted);
                // this function requires AVX2/F16C.
                let av = unsafe { E::load8(ap[0].add(i + 8 * j)) };
                for r in 0..R {
                    let wv = unsafe { E::load8(wp[r].add(i + 8 * j)) };
                    parts[j][r][0] = _mm256_fmadd_ps(wv, av, parts[j][r][0]);
                }
            }
            i += 32;
        }
        parts
    } else if np == 64 {
        // SAFETY: the rows hold k >= np = 64 elements (asserted); AVX2/F16C by the contract.
        unsafe { short_parts::<E, R, C, 2>(wp, ap) }
    } else {
        // The four passes go over the rows segment by segment, so a segment of the tile's rows
        // (2 x 4 rows of 512: 10 KiB) stays in L1 while all four read it: over whole rows of
        // 2048 (whisper's FFN down product, 40 KiB) each pass reloaded them from L2.
        let mut parts = [[[_mm256_setzero_ps(); C]; R]; 4];
        let mut lo = 0;
        while lo < np {
            let hi = (lo + K_SEGMENT).min(np);
            for (j, part) in parts.iter_mut().enumerate() {
                // SAFETY: the rows hold k >= np >= hi elements (asserted); AVX2/F16C likewise.
                *part = unsafe { float_pass::<E, R, C>(wp, ap, lo, hi, j, *part) };
            }
            lo = hi;
        }
        parts
    };
    const { assert!(R * C <= 8, "the reduction handles up to 8 outputs at once") };
    let mut x = [_mm256_setzero_ps(); 8];
    for r in 0..R {
        for c in 0..C {
            let p = |j: usize| parts[j][r][c];
            x[r * C + c] = _mm256_add_ps(_mm256_add_ps(p(0), p(2)), _mm256_add_ps(p(1), p(3)));
        }
    }
    let mut reduced = [[0f32; C]; R];
    if R * C >= 4 {
        let s = hsum8(x);
        for r in 0..R {
            for c in 0..C {
                reduced[r][c] = s[r * C + c];
            }
        }
    } else {
        for r in 0..R {
            for c in 0..C {
                let x = x[r * C + c];
                let t0 = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps::<1>(x));
                let t1 = _mm_hadd_ps(t0, t0);
                reduced[r][c] = _mm_cvtss_f32(_mm_hadd_ps(t1, t1));
            }
        }
    }
    if np == k {
        return reduced;
    }
    let mut wt = [&w[0][..0]; R];
    for r in 0..R {
        wt[r] = &w[r][np..];
    }
    let mut at = [&a[0][..0]; C];
    for c in 0..C {
        at[c] = &a[c][np..];
    }
    E::finish_tile(reduced, wt, at)
}

/// ggml's horizontal sum of an 8-lane accumulator (halves added, then two `hadd`s), for eight
/// accumulators at once: the same additions of the same operands, so the same bits, in 15
/// instructions instead of ~50. With `k` = 64 (every attention head's KQ) the one-by-one sums
/// cost more than the products.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn hsum8(x: [__m256; 8]) -> [f32; 8] {
    // [halves of x[a] added | halves of x[b] added]
    let halves = |a: __m256, b: __m256| _mm256_add_ps(_mm256_permute2f128_ps::<0x20>(a, b), _mm256_permute2f128_ps::<0x31>(a, b));
    let (y01, y23, y45, y67) = (halves(x[0], x[1]), halves(x[2], x[3]), halves(x[4], x[5]), halves(x[6], x[7]));
    // first hadd: [x0 x0 x2 x2 | x1 x1 x3 x3] and the same for x4..x7; second: [x0 x2 x4 x6 | x1 x3 x5 x7]
    let h = _mm256_hadd_ps(_mm256_hadd_ps(y01, y23), _mm256_hadd_ps(y45, y67));
    let mut o = [0f32; 8];
    // SAFETY: o is 8 writable f32; storeu has no alignment requirement.
    unsafe { _mm256_storeu_ps(o.as_mut_ptr(), h) };
    [o[0], o[4], o[1], o[5], o[2], o[6], o[3], o[7]]
}

/// The four accumulators of every output for rows of exactly `S` 32-element steps, unrolled:
/// attention heads of 64 (whisper's and SmolLM2's KQ) spent more time in the passes' loop
/// control and spills than in their 8 multiply-adds per output.
///
/// # Safety
/// AVX2, FMA and F16C must be available; `w[r]` and `a[c]` point at `32 * S` readable elements.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn short_parts<E: FloatElem, const R: usize, const C: usize, const S: usize>(wp: [*const E; R], ap: [*const E; C]) -> [[[__m256; C]; R]; 4] {
    let mut parts = [[[_mm256_setzero_ps(); C]; R]; 4];
    for j in 0..4 {
        for s in 0..S {
            // SAFETY: 32s + 8j + 8 <= 32 * S, readable by the contract; AVX2/F16C likewise.
            unsafe { step8(wp, ap, 32 * s + 8 * j, &mut parts[j]) };
        }
    }
    parts
}

/// Elements `i..i + 8` of every row, multiplied into the tile's accumulators: each weight vector
/// loaded (and widened) once for all `C` activation rows.
///
/// # Safety
/// AVX2, FMA and F16C must be available; `w[r]` and `a[c]` point at `i + 8` readable elements.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn step8<E: FloatElem, const R: usize, const C: usize>(wp: [*const E; R], ap: [*const E; C], i: usize, acc: &mut [[__m256; C]; R]) {
    // SAFETY (loads): readable by the contract.
    let mut wv = [unsafe { E::load8(wp[0].add(i)) }; R];
    for r in 1..R {
        wv[r] = unsafe { E::load8(wp[r].add(i)) };
    }
    for c in 0..C {
        let av = unsafe { E::load8(ap[c].add(i)) };
        for r in 0..R {
            acc[r][c] = _mm256_fmadd_ps(wv[r], av, acc[r][c]);
        }
    }
}

/// Elements per segment of [`float_tile`]'s passes (a multiple of 32, so every accumulator keeps
/// its elements and their order).
const K_SEGMENT: usize = 512;

/// Accumulator `j` of [`float_tile`] for every output, continued over elements `lo..np` of each
/// row: elements `32i + 8j..+8` in order (`lo` a multiple of 32).
///
/// # Safety
/// AVX2, FMA and F16C must be available; `w[r]` and `a[c]` point at `np` readable elements.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn float_pass<E: FloatElem, const R: usize, const C: usize>(wp: [*const E; R], ap: [*const E; C], lo: usize, np: usize, j: usize, mut acc: [[__m256; C]; R]) -> [[__m256; C]; R] {
    debug_assert!(lo.is_multiple_of(32));
    // One 32-element step, elements i..i + 8 of each row.
    // SAFETY (callers): i + 8 <= np, so readable by the contract; AVX2/F16C by the contract.
    let step = |acc: &mut [[__m256; C]; R], i: usize| unsafe { step8(wp, ap, i, acc) };
    // Two steps per loop trip (same order: each accumulator still takes its steps one by one).
    let mut i = lo + 8 * j;
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
