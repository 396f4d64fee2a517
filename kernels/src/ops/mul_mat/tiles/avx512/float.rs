//! AVX-512 tiles of F16 / F32 matrix-product outputs, bit-identical to ggml-cpu's AVX2
//! `vec_dot_f16/f32` (the order `float_tile` documents), for CPUs that have AVX-512.
//!
//! Why it can be exact: ggml keeps four 8-lane accumulators per output, accumulator `j` taking
//! elements `32i + 8j..+8`. One 512-bit register holding `[acc0 | acc1]` is fed elements
//! `32i..32i + 16` (contiguous) and one holding `[acc2 | acc3]` elements `32i + 16..32i + 32`;
//! every lane sees the same fused multiply-adds in the same order. Their sum is
//! `[acc0 + acc2 | acc1 + acc3]`, and adding its 256-bit halves gives ggml's
//! `(acc0 + acc2) + (acc1 + acc3)`; the 128-bit halves and the two horizontal adds follow.
//! So each output costs two FMAs per 32 elements instead of four.
//!
//! Why it is faster beyond that: the horizontal reductions of eight outputs are done together
//! ([`reduce8`]: whole-register shuffles and adds, ~3 instructions per output instead of ~7),
//! F16 weight rows are widened once per chunk instead of once per tile, and the leftovers
//! (`k % 32` elements, added one by one in f64 for F16 and in f32 for F32) are added for
//! eight outputs at a time from small transposed tables, one lane per output, each lane still
//! in ggml's sequential order.
//!
//! Everything here needs AVX-512 F/BW/VL/DQ plus AVX2/FMA/F16C; callers check
//! `cpu_features::has_avx512`.

// Register tiles index accumulators, rows and columns with the same numbers.
#![allow(clippy::needless_range_loop)]

use crate::quant::x86_util::prefetch_l2;
use std::arch::x86_64::*;
use std::cell::RefCell;

/// Weight element types of the float products (F16 as raw `u16`, or f32).
///
/// # Safety
/// `load16` needs AVX-512F (and F16C for halves); see the module doc.
pub(crate) unsafe trait Elem512: Copy {
    /// ggml adds F16 leftovers in double, F32 leftovers with f32 FMA.
    const F64_TAIL: bool;
    /// Sixteen elements from `p` as f32.
    ///
    /// # Safety
    /// `p` points at 16 readable elements; the CPU has AVX-512F.
    unsafe fn load16(p: *const Self) -> __m512;
    fn to_f32(self) -> f32;
    /// A whole row as f32 (exact).
    fn widen(src: &[Self], dst: &mut [f32]);
}

// SAFETY: AVX-512F body, callers guarantee the features (trait contract).
unsafe impl Elem512 for u16 {
    const F64_TAIL: bool = true;
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
    unsafe fn load16(p: *const u16) -> __m512 {
        // SAFETY: 32 readable bytes by the contract; loadu has no alignment requirement.
        _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(p as *const __m256i) })
    }
    #[inline]
    fn to_f32(self) -> f32 {
        crate::quant::f16::fp16_to_fp32(self)
    }
    #[inline]
    fn widen(src: &[u16], dst: &mut [f32]) {
        crate::quant::f16::f16_to_f32_slice(src, dst)
    }
}

// SAFETY: AVX-512F body, callers guarantee the features (trait contract).
unsafe impl Elem512 for f32 {
    const F64_TAIL: bool = false;
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
    unsafe fn load16(p: *const f32) -> __m512 {
        // SAFETY: 64 readable bytes by the contract; loadu has no alignment requirement.
        unsafe { _mm512_loadu_ps(p) }
    }
    #[inline]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline]
    fn widen(src: &[f32], dst: &mut [f32]) {
        dst.copy_from_slice(src)
    }
}

thread_local! {
    /// Per-thread scratch: the chunk's weight rows widened to f32, and the leftover tables.
    static SCRATCH: RefCell<Scratch> = const { RefCell::new(Scratch { w: Vec::new(), lw: Vec::new(), la: Vec::new() }) };
}

struct Scratch {
    /// Weight rows widened to f32 (F16 weights only), `k` each, padded to an even count.
    w: Vec<f32>,
    /// Weight leftovers, element-major: `lw[e * rows + r]`.
    lw: Vec<f32>,
    /// Leftovers of one tile column group, element-major, each value twice (one per weight row
    /// of the 2-row tile): `la[e * 8 + 2c + {0,1}]`.
    la: Vec<f32>,
}

/// Horizontal reductions of eight outputs at once. `s[o]` is `[acc0 + acc2 | acc1 + acc3]` of
/// output `o`; returns lane `o` = ggml's reduced sum of output `o` (before the leftovers): for
/// each output `x = lo256 + hi256`, `t = lo128(x) + hi128(x)`, then `(t0 + t1) + (t2 + t3)` as
/// the two `hadd`s form it. Every step is a lane-wise add of the same two values ggml adds (the
/// shuffles only move values between registers), so the results are identical.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
fn reduce8(s: [__m512; 8]) -> __m256 {
    // [x_a | x_b]: 128-bit blocks 0,1 of a and b plus blocks 2,3 of a and b.
    let x = |a: __m512, b: __m512| _mm512_add_ps(_mm512_shuffle_f32x4::<0b01_00_01_00>(a, b), _mm512_shuffle_f32x4::<0b11_10_11_10>(a, b));
    // [t_a | t_b | t_c | t_d]: low plus high 128 bits of each x.
    let t = |ab: __m512, cd: __m512| _mm512_add_ps(_mm512_shuffle_f32x4::<0b10_00_10_00>(ab, cd), _mm512_shuffle_f32x4::<0b11_01_11_01>(ab, cd));
    let t1 = t(x(s[0], s[1]), x(s[2], s[3]));
    let t2 = t(x(s[4], s[5]), x(s[6], s[7]));
    // first hadd: block k = [t_k0 + t_k1, t_k2 + t_k3, t_(4+k)0 + t_(4+k)1, t_(4+k)2 + t_(4+k)3]
    let u = _mm512_add_ps(_mm512_shuffle_ps::<0x88>(t1, t2), _mm512_shuffle_ps::<0xDD>(t1, t2));
    // second hadd: block k = [r_k, r_(4+k), r_k, r_(4+k)]
    let v = _mm512_add_ps(_mm512_shuffle_ps::<0x88>(u, u), _mm512_shuffle_ps::<0xDD>(u, u));
    let order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0);
    _mm512_castps512_ps256(_mm512_permutexvar_ps(order, v))
}

/// Reads 2 adjacent f32 at `p` and broadcasts the pair to all four 64-bit lanes.
///
/// # Safety
/// `p` points at 2 readable f32; AVX2.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
unsafe fn pair_x4(p: *const f32) -> __m256 {
    // SAFETY: 8 readable bytes by the contract; read_unaligned has no alignment requirement.
    _mm256_castsi256_ps(_mm256_set1_epi64x(unsafe { std::ptr::read_unaligned(p as *const i64) }))
}

/// Adds the leftovers to eight reduced sums (lane `o` = output `o`), ggml's way: for each
/// leftover element `e` in order, `sum += w * a` with the product rounded to f32 and the sum
/// kept in f64 (`F64`) or in f32, fused as ggml's build does (`float_tile::f32_tail_unfused`).
/// `wv(e)` and `av(e)` give the eight lanes' operands.
#[inline(always)]
unsafe fn add_tail<const F64: bool>(reduced: __m256, tail: usize, wv: impl Fn(usize) -> __m256, av: impl Fn(usize) -> __m256) -> __m256 {
    if tail == 0 {
        return reduced;
    }
    if F64 {
        // SAFETY (intrinsics): the callers are compiled with AVX-512F.
        unsafe {
            let mut sum = _mm512_cvtps_pd(reduced);
            for e in 0..tail {
                sum = _mm512_add_pd(sum, _mm512_cvtps_pd(_mm256_mul_ps(wv(e), av(e))));
            }
            _mm512_cvtpd_ps(sum)
        }
    } else {
        let unfused = super::super::avx2::float::f32_tail_unfused(tail);
        let mut sum = reduced;
        for e in 0..tail {
            sum = if e < unfused { _mm256_add_ps(sum, _mm256_mul_ps(wv(e), av(e))) } else { _mm256_fmadd_ps(wv(e), av(e), sum) };
        }
        sum
    }
}

/// Outputs of weight rows `w[0..2]` (f32, `np` elements past which nothing is read) against
/// activation rows `a[0..4]`, before the leftovers: lane `2c + r` = output `(r, c)`.
///
/// # Safety
/// AVX-512 F/BW/VL/DQ; every pointer has `np` readable f32, `np` a multiple of 32.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
unsafe fn tile_2x4<A: Elem512>(w: [*const f32; 2], a: [*const A; 4], np: usize) -> __m256 {
    // acc[c][r][h]: half h ([acc0|acc1] or [acc2|acc3]) of output (r, c)
    let mut acc = [[[_mm512_setzero_ps(); 2]; 2]; 4];
    let mut i = 0;
    while i < np {
        // SAFETY: i + 32 <= np, inside every row by the contract.
        unsafe {
            let wv = [[_mm512_loadu_ps(w[0].add(i)), _mm512_loadu_ps(w[0].add(i + 16))], [_mm512_loadu_ps(w[1].add(i)), _mm512_loadu_ps(w[1].add(i + 16))]];
            for c in 0..4 {
                let a0 = A::load16(a[c].add(i));
                let a1 = A::load16(a[c].add(i + 16));
                for r in 0..2 {
                    acc[c][r][0] = _mm512_fmadd_ps(wv[r][0], a0, acc[c][r][0]);
                    acc[c][r][1] = _mm512_fmadd_ps(wv[r][1], a1, acc[c][r][1]);
                }
            }
        }
        i += 32;
    }
    let s = |c: usize, r: usize| _mm512_add_ps(acc[c][r][0], acc[c][r][1]);
    reduce8([s(0, 0), s(0, 1), s(1, 0), s(1, 1), s(2, 0), s(2, 1), s(3, 0), s(3, 1)])
}

/// Outputs of weight rows `w[0..8]` against one activation row `a` (decoding), before the
/// leftovers: lane `r` = output `r`. Weights are read in their own type (memory-bound).
///
/// # Safety
/// AVX-512 F/BW/VL/DQ; every pointer has `np` readable elements, `np` a multiple of 32.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
unsafe fn tile_8x1<E: Elem512, A: Elem512>(w: [*const E; 8], a: *const A, np: usize) -> __m256 {
    let mut acc = [[_mm512_setzero_ps(); 2]; 8];
    let mut i = 0;
    while i < np {
        // SAFETY: i + 32 <= np, inside every row by the contract.
        unsafe {
            let a0 = A::load16(a.add(i));
            let a1 = A::load16(a.add(i + 16));
            for r in 0..8 {
                acc[r][0] = _mm512_fmadd_ps(E::load16(w[r].add(i)), a0, acc[r][0]);
                acc[r][1] = _mm512_fmadd_ps(E::load16(w[r].add(i + 16)), a1, acc[r][1]);
            }
        }
        i += 32;
    }
    let s = |r: usize| _mm512_add_ps(acc[r][0], acc[r][1]);
    reduce8([s(0), s(1), s(2), s(3), s(4), s(5), s(6), s(7)])
}

/// Outputs of weight rows `w[0..R]` against activation rows `a[0..C]` (a few activations:
/// decoding with grouped query heads), before the leftovers: `s[c][r]` is
/// `[acc0 + acc2 | acc1 + acc3]` of output `(r, c)`, as [`tile_8x1`] forms it. Each weight
/// vector is loaded and widened once for all `C` activations.
///
/// # Safety
/// AVX-512 F/BW/VL/DQ; every pointer has `np` readable elements, `np` a multiple of 32.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
unsafe fn tile_few<E: Elem512, A: Elem512, const R: usize, const C: usize>(w: [*const E; R], a: [*const A; C], np: usize) -> [[__m512; R]; C] {
    let mut acc = [[[_mm512_setzero_ps(); 2]; R]; C];
    let mut i = 0;
    while i < np {
        // SAFETY: i + 32 <= np, inside every row by the contract.
        unsafe {
            for r in 0..R {
                let w0 = E::load16(w[r].add(i));
                let w1 = E::load16(w[r].add(i + 16));
                for c in 0..C {
                    acc[c][r][0] = _mm512_fmadd_ps(w0, A::load16(a[c].add(i)), acc[c][r][0]);
                    acc[c][r][1] = _mm512_fmadd_ps(w1, A::load16(a[c].add(i + 16)), acc[c][r][1]);
                }
            }
        }
        i += 32;
    }
    // (loops, not array maps: the maps' closures were calls that passed vectors through memory)
    let mut sums = [[_mm512_setzero_ps(); R]; C];
    for c in 0..C {
        for r in 0..R {
            sums[c][r] = _mm512_add_ps(acc[c][r][0], acc[c][r][1]);
        }
    }
    sums
}

/// Weight rows per register tile of [`float_rows`] against `n` activation rows: 8 for one
/// ([`tile_8x1`]), 24 accumulators' worth for two to four ([`few_rows`]), 2 (x 4 columns) above.
const fn tile_rows(n: usize) -> usize {
    match n {
        1 => 8,
        2 => 6,
        3 => 4,
        4 => 3,
        _ => 2,
    }
}

/// Every output of weight rows `w` against `C` (2 to 4) activation rows `a`, `R` weight rows
/// per tile ([`tile_few`]), handed to `put` as [`float_rows`] does; `lw` is the leftover table
/// of `mp` (a multiple of `R`) rows.
///
/// # Safety
/// As [`float_rows`]; every row holds `np + tail` elements, `lw` holds `tail * mp` values.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
unsafe fn few_rows<E: Elem512, A: Elem512, const R: usize, const C: usize>(w: &[&[E]], a: &[&[A]], np: usize, tail: usize, lw: &[f32], mp: usize, put: &mut impl FnMut(usize, usize, &[f32])) {
    const { assert!(R * C <= 16, "two reductions of eight per tile") };
    let m = w.len();
    assert!(a.len() == C && mp.is_multiple_of(R) && mp >= m && lw.len() >= tail * mp);
    let ap: [*const A; C] = std::array::from_fn(|c| a[c].as_ptr());
    let mut r0 = 0;
    let row_bytes = (np + tail) * std::mem::size_of::<E>();
    // the rows before the loop's look-ahead reaches: asked for at once, not missed one by one
    for row in &w[..FEW_PREFETCH_ROWS.min(m)] {
        prefetch_l2(row.as_ptr() as *const u8, row_bytes);
    }
    while r0 < m {
        for r in r0 + FEW_PREFETCH_ROWS..(r0 + FEW_PREFETCH_ROWS + R).min(m) {
            prefetch_l2(w[r].as_ptr() as *const u8, row_bytes);
        }
        let rows: [*const E; R] = std::array::from_fn(|r| w[(r0 + r).min(m - 1)].as_ptr());
        // SAFETY: rows hold k >= np elements; features by this function's contract.
        let sums = unsafe { tile_few::<E, A, R, C>(rows, ap, np) };
        // outputs c-major (c * R + r), reduced eight at a time; the last group repeats its last
        let outs = R * C;
        let mut flat = [_mm512_setzero_ps(); 16];
        for c in 0..C {
            flat[c * R..(c + 1) * R].copy_from_slice(&sums[c]);
        }
        let mut vals = [0f32; 16];
        for g in 0..outs.div_ceil(8) {
            let at = |o: usize| (g * 8 + o).min(outs - 1);
            let mut s8 = [_mm512_setzero_ps(); 8];
            for o in 0..8 {
                s8[o] = flat[at(o)];
            }
            let red = reduce8(s8);
            let lanes = |f: &dyn Fn(usize) -> f32| -> __m256 {
                let v: [f32; 8] = std::array::from_fn(|o| f(at(o)));
                // SAFETY: 8 readable f32.
                unsafe { _mm256_loadu_ps(v.as_ptr()) }
            };
            // SAFETY (tail reads): e < tail, so e * mp + r0 + r < tail * mp and np + e < k.
            let out = unsafe {
                let wv = |e: usize| lanes(&|o| *lw.get_unchecked(e * mp + r0 + o % R));
                let av = |e: usize| lanes(&|o| a[o / R].get_unchecked(np + e).to_f32());
                if E::F64_TAIL { add_tail::<true>(red, tail, wv, av) } else { add_tail::<false>(red, tail, wv, av) }
            };
            // SAFETY: g * 8 + 8 <= 16 writable f32 (outs <= 16).
            unsafe { _mm256_storeu_ps(vals[g * 8..].as_mut_ptr(), out) };
        }
        let len = (m - r0).min(R);
        for c in 0..C {
            put(c, r0, &vals[c * R..c * R + len]);
        }
        r0 += R;
    }
}

/// How many weight rows ahead [`few_rows`] fetches into L2. Decode attention's K and V rows
/// come from memory (a decode step streams ~100 MB of weights between two uses of a layer's
/// cache), and with demand loads alone the tile waited on them with one core's few L1 miss
/// buffers in flight. Fetched into L2 (`T1`, which frees the L1 buffer at once) 16 rows ahead,
/// SmolLM2's grouped KQ at 320 tokens took 13.6-14.6 us per node instead of 18.8, KQV 13.6-14.5
/// instead of 16.5 (`GGML_RS_SIMD_PROFILE=1`; 8, 24 and 64 rows ahead: the same, the same,
/// less); host generation 1.012-1.019x (11 interleaved runs, 8 to 24 rows ahead).
const FEW_PREFETCH_ROWS: usize = 16;

/// Every output of weight rows `w` (one chunk) against activation rows `a`, handed to
/// `put(j, r, values)`: outputs of activation `j` for weight rows `r..r + values.len()` (`r`
/// relative to the chunk). All rows have the same length (checked).
///
/// Loop nest: with several activations, weight rows are widened into a per-thread f32 panel
/// (F16) and tiles of 2 weight rows x 4 activations walk activation groups outside and weight
/// row pairs inside, so the group's four rows stay in L1 while the chunk's (L1/L2-resident)
/// panel streams past them. With one activation (decoding), 8 weight rows at a time straight
/// from the weights; with two to four (decoding with grouped query heads), [`few_rows`], also
/// straight from the weights: widening them into the panel for so few activations made the
/// grouped KQ slower than one product per head.
///
/// # Safety
/// The CPU has AVX-512 F/BW/VL/DQ, AVX2, FMA and F16C.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
pub(crate) unsafe fn float_rows<E: Elem512, A: Elem512>(w: &[&[E]], a: &[&[A]], mut put: impl FnMut(usize, usize, &[f32])) {
    let (m, n) = (w.len(), a.len());
    if m == 0 || n == 0 {
        return;
    }
    let k = a[0].len();
    assert!(w.iter().all(|r| r.len() == k) && a.iter().all(|r| r.len() == k), "float_rows: rows of different lengths");
    let np = k & !31;
    let tail = k - np;
    SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        let s = &mut *s;
        let mp = m.next_multiple_of(tile_rows(n));
        // leftover table of the weights, rows past m repeat the last row (their outputs are
        // computed and dropped)
        s.lw.clear();
        s.lw.resize(tail * mp, 0.0);
        for e in 0..tail {
            for r in 0..mp {
                s.lw[e * mp + r] = w[r.min(m - 1)][np + e].to_f32();
            }
        }
        if (2..=4).contains(&n) {
            let lw = &s.lw[..];
            // SAFETY: features by this function's contract; rows hold k = np + tail elements
            // (asserted); lw holds tail * mp values, mp a multiple of the tile's rows.
            unsafe {
                match n {
                    2 => few_rows::<E, A, { tile_rows(2) }, 2>(w, a, np, tail, lw, mp, &mut put),
                    3 => few_rows::<E, A, { tile_rows(3) }, 3>(w, a, np, tail, lw, mp, &mut put),
                    _ => few_rows::<E, A, { tile_rows(4) }, 4>(w, a, np, tail, lw, mp, &mut put),
                }
            }
            return;
        }
        if n == 1 {
            // SAFETY: features by this function's contract; rows hold k = np + tail elements
            // (asserted); lw holds tail * mp values, mp a multiple of 8.
            unsafe { one_row(w, a[0], np, tail, mp, s, &mut put) };
            return;
        }
        // SAFETY: as above; mp is a multiple of 2.
        unsafe { many_rows(w, a, np, tail, mp, s, &mut put) }
    })
}

/// [`float_rows`] with one activation (decoding): 8 weight rows at a time straight from the
/// weights, the leftovers from `s.lw` (`tail * mp` values).
///
/// # Safety
/// As [`float_rows`]; rows hold `np + tail` elements and `mp` is a multiple of 8.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
unsafe fn one_row<E: Elem512, A: Elem512>(w: &[&[E]], av: &[A], np: usize, tail: usize, mp: usize, s: &Scratch, put: &mut impl FnMut(usize, usize, &[f32])) {
    let m = w.len();
    let lw = s.lw.as_ptr();
    let mut r0 = 0;
    while r0 < m {
        let mut rows = [w[r0].as_ptr(); 8];
        for (r, p) in rows.iter_mut().enumerate() {
            *p = w[(r0 + r).min(m - 1)].as_ptr();
        }
        // SAFETY: rows hold k >= np elements (asserted); features by this function's
        // contract; the tail reads lw[e * mp + r0..+8] (r0 + 8 <= mp) and av[np + e].
        let out = unsafe {
            let red = tile_8x1::<E, A>(rows, av.as_ptr(), np);
            if E::F64_TAIL {
                add_tail::<true>(red, tail, |e| _mm256_loadu_ps(lw.add(e * mp + r0)), |e| _mm256_set1_ps(av[np + e].to_f32()))
            } else {
                add_tail::<false>(red, tail, |e| _mm256_loadu_ps(lw.add(e * mp + r0)), |e| _mm256_set1_ps(av[np + e].to_f32()))
            }
        };
        let mut vals = [0f32; 8];
        // SAFETY: 8 writable f32.
        unsafe { _mm256_storeu_ps(vals.as_mut_ptr(), out) };
        let len = (m - r0).min(8);
        put(0, r0, &vals[..len]);
        r0 += 8;
    }
}

/// [`float_rows`] with five or more activations: the weight rows as f32 (widened into the
/// panel `s.w` for F16), tiles of 2 weight rows x 4 activations, the activations' leftovers
/// in `s.la`, the weights' in `s.lw` (`tail * mp` values).
///
/// # Safety
/// As [`float_rows`]; rows hold `np + tail` elements and `mp` is a multiple of 2.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
unsafe fn many_rows<E: Elem512, A: Elem512>(w: &[&[E]], a: &[&[A]], np: usize, tail: usize, mp: usize, s: &mut Scratch, put: &mut impl FnMut(usize, usize, &[f32])) {
    let (m, n, k) = (w.len(), a.len(), np + tail);
    let lw = s.lw.as_ptr();
    // f32 weight rows: widened into the panel (F16) or read in place (F32)
    let wrows: Vec<*const f32> = if E::F64_TAIL {
        // rows on 64-byte boundaries, as the activations (no split-line loads)
        let kp = k.next_multiple_of(16);
        s.w.resize(m * kp + 15, 0.0);
        let off = (16 - (s.w.as_ptr() as usize / 4) % 16) % 16;
        for (r, row) in w.iter().enumerate() {
            E::widen(row, &mut s.w[off + r * kp..off + r * kp + k]);
        }
        (0..mp).map(|r| s.w[off + r.min(m - 1) * kp..].as_ptr()).collect()
    } else {
        // SAFETY of the cast: E is f32 when F64_TAIL is false (the only two impls).
        (0..mp).map(|r| w[r.min(m - 1)].as_ptr() as *const f32).collect()
    };
    s.la.resize(tail * 8, 0.0);
    let la = s.la.as_mut_ptr();
    let mut j0 = 0;
    while j0 < n {
        let cols: [&[A]; 4] = [a[j0], a[(j0 + 1).min(n - 1)], a[(j0 + 2).min(n - 1)], a[(j0 + 3).min(n - 1)]];
        for e in 0..tail {
            for c in 0..4 {
                let v = cols[c][np + e].to_f32();
                // SAFETY: e * 8 + 2c + 1 < tail * 8 = la's length.
                unsafe {
                    *la.add(e * 8 + 2 * c) = v;
                    *la.add(e * 8 + 2 * c + 1) = v;
                }
            }
        }
        let ap = cols.map(|c| c.as_ptr());
        let nc = (n - j0).min(4);
        let mut r0 = 0;
        while r0 < m {
            // SAFETY: rows hold k >= np f32 (asserted; the panel rows are k long); features
            // by this function's contract; the tail reads lw[e * mp + r0..+2] (r0 + 2 <= mp)
            // and la[e * 8..+8].
            let out = unsafe {
                let red = tile_2x4([wrows[r0], wrows[r0 + 1]], ap, np);
                if E::F64_TAIL {
                    add_tail::<true>(red, tail, |e| pair_x4(lw.add(e * mp + r0)), |e| _mm256_loadu_ps(la.add(e * 8)))
                } else {
                    add_tail::<false>(red, tail, |e| pair_x4(lw.add(e * mp + r0)), |e| _mm256_loadu_ps(la.add(e * 8)))
                }
            };
            let mut vals = [0f32; 8];
            // SAFETY: 8 writable f32.
            unsafe { _mm256_storeu_ps(vals.as_mut_ptr(), out) };
            let len = (m - r0).min(2);
            for c in 0..nc {
                put(j0 + c, r0, &vals[2 * c..2 * c + len]);
            }
            r0 += 2;
        }
        j0 += 4;
    }
}
