//! Tiles of matrix-product outputs computed in exactly ggml-cpu's AVX2 float order.
//!
//! ggml-cpu computes every MUL_MAT output as one `vec_dot` of a weight row with the activation
//! row converted to the weight type's partner format (Q8_0, Q8_1 or F16), and each `vec_dot` has
//! a fixed accumulation order: one 8-lane accumulator fed block by block for the quantized
//! types, four interleaved accumulators and a particular horizontal sum for F16/F32. The models
//! quantize activations again before the next product, so a one-ulp difference flips a
//! quantization step and grows through the layers. To give stock's answers we therefore keep
//! ggml's arithmetic for every single output and take the speed from the loop nest instead: an
//! `R x C` tile of outputs is computed together, each weight block unpacked once for `C`
//! activation rows and each activation block loaded once for `R` weight rows (a gemm's register
//! tiling around ggml's dot products). `R = C = 1` is ggml's `vec_dot` itself.
//!
//! Everything here needs AVX2, FMA and F16C; callers dispatch through `cpu_features`.

// Register tiles index several arrays (accumulators, prepared rows, scales) with the same row
// and column numbers; iterator chains over them would hide which output each FMA feeds.
#![allow(clippy::needless_range_loop)]

use crate::quant::x86_util::*;
use crate::quant::{BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ5_1, BlockQ8_0, BlockQ8_1, Format, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0};
use std::arch::x86_64::*;

/// A block format ([`Format`]: the block and its activation partner) as ggml-cpu's AVX2
/// `vec_dot` sees it.
///
/// # Safety
/// The methods use AVX2/FMA/F16C instructions: call them only from code running on a CPU that
/// has them (the tile kernels below are `#[target_feature]` functions entered after detection).
pub unsafe trait Avx2Tile: Format {
    /// A weight block unpacked once and reused for every activation column of a tile.
    type Prep: Copy;
    /// Q4_1 / Q5_1 add `m * s` per block (weight minimum times the activation block's sum).
    const HAS_MIN: bool;
    /// Whether the matrix-vector product (`matvec`) prefetches this format's weights into L2
    /// (`T1`) rather than L1 (`T0`). L2 prefetches free their L1 miss buffer at once and keep
    /// more lines in flight: `bench_matvec` cold, four rows per pass, Q4_1 42 -> 35 us and Q8_0
    /// likewise; Q4_0's went 40 -> 51-54 us, so it keeps L1.
    const PREFETCH_L2: bool;
    /// The unpacked block, its scale and (Q4_1) its minimum, as f32.
    unsafe fn prep(w: &Self::W) -> (Self::Prep, f32, f32);
    /// The unpacked block alone (what [`Self::prep`] returns first).
    unsafe fn quants(w: &Self::W) -> Self::Prep;
    /// The block's half-precision scale in the low 16 bits and (Q4_1) its minimum in the high
    /// 16 (zero for the other formats): four rows' words widen with one conversion.
    fn scale_bits(w: &Self::W) -> u32;
    /// The activation block's 32 quants.
    unsafe fn acts(a: &Self::A) -> __m256i;
    /// The block's integer dot product as 8 lanes of 4-product sums, converted to float. Integer
    /// sums are exact, so only the lane grouping (bytes 4i..4i+4 in lane i) must match ggml.
    unsafe fn ints(p: Self::Prep, a: __m256i) -> __m256;
}

/// The formats with signed weights against Q8_0 activations (Q4_0, Q5_0, Q8_0). Prep is (|q|, q): ggml's
/// signed-times-signed trick moves the weight's sign onto the activation so the
/// unsigned-by-signed byte multiply applies.
macro_rules! signed_format {
    ($fmt:ident, $block:ident, $l2:expr, |$w:ident| $quants:expr) => {
        // SAFETY: AVX2-only bodies, see the trait.
        unsafe impl Avx2Tile for $fmt {
            type Prep = (__m256i, __m256i);
            const HAS_MIN: bool = false;
            const PREFETCH_L2: bool = $l2;
            #[inline]
            #[target_feature(enable = "avx2,fma,f16c")]
            unsafe fn prep(w: &$block) -> (Self::Prep, f32, f32) {
                // SAFETY: AVX2 by this function's contract.
                (unsafe { Self::quants(w) }, half(w.d), 0.0)
            }
            #[inline]
            #[target_feature(enable = "avx2,fma,f16c")]
            unsafe fn quants($w: &$block) -> Self::Prep {
                let q = $quants;
                (_mm256_sign_epi8(q, q), q)
            }
            #[inline]
            fn scale_bits(w: &$block) -> u32 {
                w.d as u32
            }
            #[inline]
            #[target_feature(enable = "avx2,fma,f16c")]
            unsafe fn acts(a: &BlockQ8_0) -> __m256i {
                load_i8x32(&a.qs)
            }
            #[inline]
            #[target_feature(enable = "avx2,fma,f16c")]
            unsafe fn ints(p: Self::Prep, a: __m256i) -> __m256 {
                mul_sum_us8_pairs_float(p.0, _mm256_sign_epi8(a, p.1))
            }
        }
    };
}
signed_format!(Q4_0, BlockQ4_0, false, |w| _mm256_sub_epi8(nibbles32(&w.qs), _mm256_set1_epi8(8)));
signed_format!(Q8_0, BlockQ8_0, true, |w| load_i8x32(&w.qs));
// ggml ORs 0xF0 into the nibbles whose fifth bit is clear: q - 16 as a signed byte
signed_format!(Q5_0, BlockQ5_0, true, |w| _mm256_sub_epi8(quants5_32(&w.qs, &w.qh), _mm256_set1_epi8(16)));

/// The formats with unsigned weights and a per-block minimum against Q8_1 activations (Q4_1,
/// Q5_1).
macro_rules! min_format {
    ($fmt:ident, $block:ident, |$w:ident| $quants:expr) => {
        // SAFETY: AVX2-only bodies, see the trait.
        unsafe impl Avx2Tile for $fmt {
            /// The quants are unsigned already.
            type Prep = __m256i;
            const HAS_MIN: bool = true;
            const PREFETCH_L2: bool = true;
            #[inline]
            #[target_feature(enable = "avx2,fma,f16c")]
            unsafe fn prep(w: &$block) -> (Self::Prep, f32, f32) {
                let dm = halves4(w.d, w.m, 0, 0);
                // SAFETY: AVX2 by this function's contract.
                (unsafe { Self::quants(w) }, _mm_cvtss_f32(dm), _mm_cvtss_f32(_mm_movehdup_ps(dm)))
            }
            #[inline]
            #[target_feature(enable = "avx2,fma,f16c")]
            unsafe fn quants($w: &$block) -> Self::Prep {
                $quants
            }
            #[inline]
            fn scale_bits(w: &$block) -> u32 {
                w.d as u32 | (w.m as u32) << 16
            }
            #[inline]
            #[target_feature(enable = "avx2,fma,f16c")]
            unsafe fn acts(a: &BlockQ8_1) -> __m256i {
                load_i8x32(&a.qs)
            }
            #[inline]
            #[target_feature(enable = "avx2,fma,f16c")]
            unsafe fn ints(p: Self::Prep, a: __m256i) -> __m256 {
                mul_sum_us8_pairs_float(p, a)
            }
        }
    };
}
min_format!(Q4_1, BlockQ4_1, |w| nibbles32(&w.qs));
// ggml's Q5_1 `vec_dot` is Q4_1's with the fifth bits ORed in (`acc = fma(q, dx * dy, acc)`
// is the same single rounding as Q4_1's `fma(dx * dy, q, acc)`)
min_format!(Q5_1, BlockQ5_1, |w| quants5_32(&w.qs, &w.qh));

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn half(h: u16) -> f32 {
    _mm_cvtss_f32(halves4(h, 0, 0, 0))
}

use super::super::acts::{ActRows, MinSums, MinSumsRow};

/// Outputs `(r, c)` of rows `w[r]` with activation rows `c0 + c`: for every output, ggml's
/// `acc = fma(dw * da, ints, acc)` over the blocks in order, `summs = fma(m, s, summs)` for
/// Q4_1, then `hsum(acc) (+ summs)`.
///
/// # Safety
/// AVX2, FMA and F16C must be available. `w[r]` hold at least `a.nb` blocks; columns
/// `c0..c0 + C` exist in `a` (checked).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn quant_tile<F: Avx2Tile, const R: usize, const C: usize>(w: [&[F::W]; R], a: &ActRows<'_, F::A>, c0: usize) -> [[f32; C]; R] {
    const { assert!(C <= 4, "Q4_1's minimum sums are kept one column per __m128 lane") };
    let nb = a.nb;
    assert!(c0 + C <= a.n && w.iter().all(|r| r.len() >= nb));
    assert!(a.blocks.len() >= a.n * nb && a.d.len() >= a.n * nb && (!F::HAS_MIN || a.s.len() >= a.n * nb));
    let mut acc = [[_mm256_setzero_ps(); C]; R];
    let mut summs = [_mm_setzero_ps(); R];
    for b in 0..nb {
        let col = b * a.n + c0;
        // SAFETY (for the Avx2Tile calls and unchecked reads in this loop): this function requires
        // AVX2/FMA/F16C; with b < nb and c0 + c < n (asserted), (c0 + c) * nb + b and
        // b * n + c0 + c are below n * nb <= the length of blocks, d and (Q4_1) s, and b is
        // below every w[r].len().
        let mut sv = _mm_setzero_ps();
        if F::HAS_MIN {
            let mut s4 = [0f32; 4];
            s4[..C].copy_from_slice(unsafe { a.s.get_unchecked(col..col + C) });
            // SAFETY: s4 is 4 readable f32.
            sv = unsafe { _mm_loadu_ps(s4.as_ptr()) };
        }
        // each weight block is unpacked once and used for every column while in registers
        for r in 0..R {
            let (p, dw, mw) = unsafe { F::prep(w[r].get_unchecked(b)) };
            if F::HAS_MIN {
                summs[r] = _mm_fmadd_ps(_mm_set1_ps(mw), sv, summs[r]);
            }
            // The activation quants and scale are read from memory for every row (loads fold
            // into the multiply and the broadcast) rather than held in registers across the
            // rows: with the tile's accumulators that was more registers than AVX2 has, and the
            // accumulators went to the stack. `dw * da` as a vector multiply of two broadcasts
            // is the same single-precision product as ggml's scalar one.
            // (One column: the scalar product, which measured faster when decoding ran here.)
            let dwv = _mm256_set1_ps(dw);
            for c in 0..C {
                let q = unsafe { F::ints(p, F::acts(a.blocks.get_unchecked((c0 + c) * nb + b))) };
                let d = if C == 1 {
                    _mm256_set1_ps(dw * unsafe { *a.d.get_unchecked(col) })
                } else {
                    _mm256_mul_ps(dwv, unsafe { _mm256_broadcast_ss(a.d.get_unchecked(col + c)) })
                };
                acc[r][c] = _mm256_fmadd_ps(d, q, acc[r][c]);
            }
        }
    }
    finish::<F, R, C>(acc, summs)
}

/// ggml's end of a quantized `vec_dot` for every output of a tile: the accumulator's horizontal
/// sum, plus (Q4_1) the `m * s` sum in lane `c` of `summs[r]`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn finish<F: Avx2Tile, const R: usize, const C: usize>(acc: [[__m256; C]; R], summs: [__m128; R]) -> [[f32; C]; R] {
    let mut out = [[0f32; C]; R];
    for r in 0..R {
        let mut sm = [0f32; 4];
        // SAFETY: sm is 4 writable f32.
        unsafe { _mm_storeu_ps(sm.as_mut_ptr(), summs[r]) };
        for c in 0..C {
            out[r][c] = if F::HAS_MIN { hsum_ps(acc[r][c]) + sm[c] } else { hsum_ps(acc[r][c]) };
        }
    }
    out
}

/// A chunk's weight blocks unpacked once ([`Avx2Tile::prep`]: quants as bytes, scale and
/// minimum as f32), for batched products: the tile kernel then reads them instead of unpacking
/// every block again for each group of four activation rows (the unpacking was about a third of
/// the tile's vector instructions).
pub(crate) struct Panel<F: Avx2Tile> {
    prep: Vec<F::Prep>,
    /// Every block's scale `d`, as f32.
    d: Vec<f32>,
    /// Every block's minimum `m` (Q4_1), as f32.
    m: Vec<f32>,
    /// Q4_1: every output's `m * s` sum ([`Self::with_min_sums`]).
    summs: MinSums,
    nb: usize,
}

impl<F: Avx2Tile> Panel<F> {
    /// Unpacks `rows` (each at least `nb` blocks long), row by row.
    ///
    /// # Safety
    /// AVX2, FMA and F16C must be available.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) unsafe fn new<'w>(rows: impl Iterator<Item = &'w [F::W]>, nb: usize) -> Self
    where
        F::W: 'w,
    {
        // sized once (a chunk's panel grew by doubling: nine reallocations of each vector for
        // SmolLM2's 16 x 18 blocks)
        let n = rows.size_hint().0 * nb;
        let (mut prep, mut dv, mut mv) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
        for row in rows {
            assert!(row.len() >= nb);
            for blk in &row[..nb] {
                // SAFETY: AVX2/FMA/F16C by this function's contract.
                let (p, d, m) = unsafe { F::prep(blk) };
                prep.push(p);
                dv.push(d);
                mv.push(m);
            }
        }
        Panel { prep, d: dv, m: mv, summs: MinSums::default(), nb }
    }

    /// Q4_1: ggml's `summs = fma(m, s, summs)` over the blocks, for every row of the panel and
    /// every activation row in `acts`, before the tiles run. In the tile these were a chain of
    /// dependent FMAs per row (one per block, four cycles each) beside the block loop; here eight
    /// rows' chains run side by side, eight activation rows per vector (SmolLM2's prompt 3 %
    /// faster). Each output's chain is the same FMAs in the same order.
    ///
    /// # Safety
    /// AVX2, FMA and F16C must be available.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) unsafe fn with_min_sums(mut self, a: &ActRows<'_, F::A>, acts: std::ops::Range<usize>) -> Self {
        if !F::HAS_MIN || self.nb == 0 {
            return self;
        }
        let (nb, n) = (self.nb, a.n);
        let rows = self.m.len() / nb;
        assert!(nb == a.nb && acts.end <= n && a.s.len() >= n * nb);
        let mut sums = MinSums::new(rows, acts.clone());
        let m = &self.m;
        let mut j = acts.start;
        while j + 8 <= acts.end {
            for r0 in (0..rows).step_by(8) {
                // rows past the last repeat it (computed, not stored)
                let at: [usize; 8] = std::array::from_fn(|r| (r0 + r).min(rows - 1) * nb);
                let mut acc = [_mm256_setzero_ps(); 8];
                for b in 0..nb {
                    // SAFETY: b * n + j + 8 <= (nb - 1) * n + n <= s.len() (asserted), and
                    // at[r] + b < rows * nb = m.len().
                    unsafe {
                        let sv = _mm256_loadu_ps(a.s.as_ptr().add(b * n + j));
                        for r in 0..8 {
                            acc[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(m.get_unchecked(at[r] + b)), sv, acc[r]);
                        }
                    }
                }
                for r in 0..8.min(rows - r0) {
                    let o = sums.at(r0 + r, j);
                    // SAFETY: the slice holds 8 floats (outputs j..j + 8 of row r0 + r).
                    unsafe { _mm256_storeu_ps(sums.values_mut()[o..o + 8].as_mut_ptr(), acc[r]) };
                }
            }
            j += 8;
        }
        for jj in j..acts.end {
            for r in 0..rows {
                let mut sum = 0f32;
                for b in 0..nb {
                    sum = m[r * nb + b].mul_add(a.s[b * n + jj], sum);
                }
                let o = sums.at(r, jj);
                sums.values_mut()[o] = sum;
            }
        }
        self.summs = sums;
        self
    }

    /// Panel row `r` (the `r`-th row given to [`Self::new`]).
    #[inline(always)]
    pub(crate) fn row(&self, r: usize) -> PanelRow<'_, F> {
        let at = r * self.nb..(r + 1) * self.nb;
        PanelRow { prep: &self.prep[at.clone()], d: &self.d[at.clone()], m: &self.m[at], summs: self.summs.row(r) }
    }
}

/// Blocks whose scale products [`panel_tile`] computes ahead of their integer products.
const SCALE_RUN: usize = 16;

/// [`panel_tile`]'s scale products, on whole cache lines: at the 16-byte stack alignment the ABI
/// guarantees, half of its 32-byte stores and loads could straddle two lines, depending on the
/// callers' frame sizes; a change elsewhere in the crate shifted them and made SmolLM2's AVX2
/// prompt 8 % slower (the stores to this array were the hot spots in a profile).
#[repr(align(64))]
struct ScaleRun([[f32; 8]; SCALE_RUN]);

/// One unpacked weight row of a [`Panel`].
pub(crate) struct PanelRow<'p, F: Avx2Tile> {
    prep: &'p [F::Prep],
    d: &'p [f32],
    m: &'p [f32],
    /// The row's `m * s` sums ([`Panel::with_min_sums`]).
    summs: MinSumsRow<'p>,
}

impl<F: Avx2Tile> Clone for PanelRow<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<F: Avx2Tile> Copy for PanelRow<'_, F> {}

/// [`quant_tile`] over unpacked rows: the same arithmetic for every output (ggml's
/// `acc = fma(dw * da, ints, acc)` over the blocks in order, `summs = fma(m, s, summs)` for
/// Q4_1, then `hsum(acc) (+ summs)`), the weight side read from the panel.
///
/// # Safety
/// AVX2, FMA and F16C must be available. Columns `c0..c0 + C` exist in `a` and the rows hold
/// `a.nb` blocks (checked).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn panel_tile<F: Avx2Tile, const R: usize, const C: usize>(w: [PanelRow<'_, F>; R], a: &ActRows<'_, F::A>, c0: usize) -> [[f32; C]; R] {
    const { assert!(C <= 4, "Q4_1's minimum sums are kept one column per __m128 lane") };
    const { assert!(R <= 2, "the scale products of a block are one vector, four lanes per row") };
    let nb = a.nb;
    assert!(c0 + C <= a.n && w.iter().all(|r| r.prep.len() >= nb && r.d.len() >= nb && r.m.len() >= nb));
    assert!(a.blocks.len() >= a.n * nb && a.d.len() >= a.n * nb && (!F::HAS_MIN || a.s.len() >= a.n * nb));
    // SAFETY (unchecked reads and Avx2Tile calls in both loops): this function requires
    // AVX2/FMA/F16C; with b < nb and c0 + c < n (asserted), (c0 + c) * nb + b and b * n + c0 + c
    // are below n * nb <= the lengths of blocks, d and (Q4_1) s, and b is below every panel row's
    // length.
    // Q4_1's `m * s` sums come from the panel ([`Panel::with_min_sums`]).
    let mut summs = [_mm_setzero_ps(); R];
    if F::HAS_MIN {
        for r in 0..R {
            let mut s4 = [0f32; 4];
            s4[..C].copy_from_slice(&w[r].summs.cols::<C>(c0));
            // SAFETY: s4 is 4 readable f32.
            summs[r] = unsafe { _mm_loadu_ps(s4.as_ptr()) };
        }
    }
    // Column-outer inside a block: each activation block is loaded once and used for the R rows
    // right away, so the live registers are the R x C accumulators, R unpacked weight blocks and
    // one activation block (row-outer kept all C activation blocks live and spilled).
    let mut acc = [[_mm256_setzero_ps(); C]; R];
    let mut dd = ScaleRun([[0f32; 8]; SCALE_RUN]);
    let dd = &mut dd.0;
    let mut b0 = 0;
    while b0 < nb {
        let run = (nb - b0).min(SCALE_RUN);
        // ggml's `dw * da` of output (r, c) in lane 4r + c: one multiply per block for the whole
        // tile, stored so that the block loop takes each product as a broadcasting load (a load
        // port) instead of one multiply per output and block on the two busy vector ports
        for (i, dd) in dd[..run].iter_mut().enumerate() {
            let b = b0 + i;
            let col = b * a.n + c0;
            let dw = unsafe {
                if R == 2 {
                    _mm256_set_m128(_mm_set1_ps(*w[1].d.get_unchecked(b)), _mm_set1_ps(*w[0].d.get_unchecked(b)))
                } else {
                    _mm256_set1_ps(*w[0].d.get_unchecked(b))
                }
            };
            let da = if C == 4 {
                // SAFETY: col + 3 < n * nb (see above); loadu has no alignment requirement.
                unsafe { _mm_loadu_ps(a.d.as_ptr().add(col)) }
            } else {
                let mut d4 = [0f32; 4];
                d4[..C].copy_from_slice(unsafe { a.d.get_unchecked(col..col + C) });
                // SAFETY: d4 is 4 readable f32.
                unsafe { _mm_loadu_ps(d4.as_ptr()) }
            };
            // SAFETY: dd holds 8 writable f32.
            unsafe { _mm256_storeu_ps(dd.as_mut_ptr(), _mm256_mul_ps(dw, _mm256_set_m128(da, da))) };
        }
        for (i, dd) in dd[..run].iter().enumerate() {
            let b = b0 + i;
            let p: [F::Prep; R] = std::array::from_fn(|r| unsafe { *w[r].prep.get_unchecked(b) });
            for c in 0..C {
                let qa = unsafe { F::acts(a.blocks.get_unchecked((c0 + c) * nb + b)) };
                for r in 0..R {
                    let q = unsafe { F::ints(p[r], qa) };
                    acc[r][c] = _mm256_fmadd_ps(_mm256_broadcast_ss(&dd[4 * r + c]), q, acc[r][c]);
                }
            }
        }
        b0 += run;
    }
    finish::<F, R, C>(acc, summs)
}

/// ggml's `vec_dot` for one quantized row pair (`R = C = 1`).
///
/// # Safety
/// AVX2, FMA and F16C must be available.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn quant_dot<F: Avx2Tile>(w: &[F::W], a: &[F::A], d: &[f32], s: &[f32]) -> f32 {
    let rows = ActRows { blocks: a, d, s, nb: a.len(), n: 1 };
    // SAFETY: same requirements as this function.
    unsafe { quant_tile::<F, 1, 1>([w], &rows, 0)[0][0] }
}
