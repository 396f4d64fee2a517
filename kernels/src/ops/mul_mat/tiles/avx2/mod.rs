//! The AVX2 (+FMA, F16C) tile family: `quant` (the block formats' [`Avx2Tile`]s and the
//! integer tile kernel), `float` (F16 / F32 tiles), and here their entry points.

pub(super) mod float;
pub(super) mod heads;
mod iq4nl;
pub(super) mod kquant;
mod matvec;
pub(super) mod quant;

use super::walk::{put_tile, walk_tiles, walk_tiles_rows, FloatTiles, Tiles, PANEL_MIN_ACTS};
use super::acts::{ActRows, QuantizedActs};
use super::operands::{Acts, DstView, Weights};
use crate::quant::blocks_from_bytes;
use crate::quant::x86_util::{hsum_ps, load8_f32, prefetch_l2};
use crate::quant::{WType, Q4K, Q4_0, Q4_1, Q5K, Q5_0, Q5_1, Q8_0};
use quant::Avx2Tile;
use std::arch::x86_64::*;

/// Every output of `dst` with ggml-cpu's AVX2 arithmetic, in register tiles of weight rows
/// x activation rows (see `quant`).
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn mul_mat_tiles(w: &Weights<'_>, acts: &Acts<'_>, q: &QuantizedActs, dst: &mut DstView<'_>) {
    match w.wtype {
        WType::Q4_0 => quant_rows::<Q4_0>(w, &q.tile_rows(&q.q8_0), dst),
        WType::Q4_1 => quant_rows::<Q4_1>(w, &q.tile_rows(&q.q8_1), dst),
        WType::Q5_0 => quant_rows::<Q5_0>(w, &q.tile_rows(&q.q8_0), dst),
        WType::Q5_1 => quant_rows::<Q5_1>(w, &q.tile_rows(&q.q8_1), dst),
        WType::Q4K | WType::Q5K | WType::Q6K => k_products(w, q, dst),
        WType::Q8_0 => quant_rows::<Q8_0>(w, &q.tile_rows(&q.q8_0), dst),
        WType::IQ4NL => iq4nl_products(w, q, dst),
        WType::F16 => float_rows(|i| w.row_f16(i), |j| &q.hb_row(j)[..w.k()], dst),
        WType::F32 => float_rows(|i| w.row_f32(i), |j| acts.row(j), dst),
    }
}

/// Block-format weights against their prepared partner-format activations.
struct QuantTiles<'a, F: Avx2Tile> {
    w: &'a Weights<'a>,
    a: &'a ActRows<'a, F::A>,
}

impl<'q, F: Avx2Tile> Tiles for QuantTiles<'q, F> {
    type Row = &'q [F::W];
    #[inline(always)]
    fn w_row(&self, i: usize) -> &'q [F::W] {
        blocks_from_bytes::<F::W>(self.w.row(i))
    }
    #[inline(always)]
    unsafe fn tile<const R: usize, const C: usize>(&self, w: [&'q [F::W]; R], j: usize) -> [[f32; C]; R] {
        // SAFETY: AVX2/FMA/F16C by this function's contract; the kernel checks that columns
        // j..j + C exist and that the rows hold a.nb blocks.
        unsafe { quant::quant_tile::<F, R, C>(w, self.a, j) }
    }
    #[inline(always)]
    fn act_row_bytes(&self) -> usize {
        self.a.row_bytes()
    }
}

impl<'w, 'a, E: float::FloatElem + 'w, W: Fn(usize) -> &'w [E]> Tiles for FloatTiles<'a, W, E> {
    type Row = &'w [E];
    #[inline(always)]
    fn w_row(&self, i: usize) -> &'w [E] {
        (self.w)(i)
    }
    #[inline(always)]
    unsafe fn tile<const R: usize, const C: usize>(&self, w: [&'w [E]; R], j: usize) -> [[f32; C]; R] {
        // SAFETY: AVX2/FMA/F16C by this function's contract; the kernel checks that all rows
        // have the same length.
        unsafe { float::float_tile::<E, R, C>(w, self.acts(j)) }
    }
    #[inline(always)]
    fn act_row_bytes(&self) -> usize {
        FloatTiles::act_row_bytes(self)
    }
}

/// K-quant weights against their Q8_K activations.
struct KTiles<'a, F: kquant::Avx2KTile> {
    w: &'a Weights<'a>,
    a: &'a ActRows<'a, crate::quant::BlockQ8K>,
    _f: std::marker::PhantomData<F>,
}

impl<'q, F: kquant::Avx2KTile> Tiles for KTiles<'q, F> {
    type Row = &'q [F::W];
    #[inline(always)]
    fn w_row(&self, i: usize) -> &'q [F::W] {
        blocks_from_bytes::<F::W>(self.w.row(i))
    }
    #[inline(always)]
    unsafe fn tile<const R: usize, const C: usize>(&self, w: [&'q [F::W]; R], j: usize) -> [[f32; C]; R] {
        // SAFETY: AVX2/FMA/F16C by this function's contract; the kernel checks the shapes.
        unsafe { kquant::k_tile::<F, R, C>(w, self.a, j) }
    }
    #[inline(always)]
    fn act_row_bytes(&self) -> usize {
        self.a.row_bytes()
    }
}

/// IQ4_NL weights against their Q8_0 activations (`iq4nl`).
struct IQ4NLTiles<'a> {
    w: &'a Weights<'a>,
    a: &'a ActRows<'a, crate::quant::BlockQ8_0>,
}

impl<'q> Tiles for IQ4NLTiles<'q> {
    type Row = &'q [crate::quant::BlockIQ4NL];
    #[inline(always)]
    fn w_row(&self, i: usize) -> &'q [crate::quant::BlockIQ4NL] {
        blocks_from_bytes(self.w.row(i))
    }
    #[inline(always)]
    unsafe fn tile<const R: usize, const C: usize>(&self, w: [&'q [crate::quant::BlockIQ4NL]; R], j: usize) -> [[f32; C]; R] {
        // SAFETY: AVX2/FMA/F16C by this function's contract; the kernel checks the shapes.
        unsafe { iq4nl::iq4nl_tile::<R, C>(w, self.a, j) }
    }
    #[inline(always)]
    fn act_row_bytes(&self) -> usize {
        self.a.row_bytes()
    }
}

/// IQ4_NL weights in ggml's AVX2 order; the AVX-512 level runs this too (ggml-cpu has no
/// AVX-512 IQ4_NL code).
#[inline(never)] // as quant_rows
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn iq4nl_products(w: &Weights<'_>, q: &QuantizedActs, dst: &mut DstView<'_>) {
    // SAFETY: this function is compiled for and only entered with AVX2/FMA/F16C.
    unsafe { walk_tiles(&IQ4NLTiles { w, a: &q.tile_rows(&q.q8_0) }, dst) }
}

/// K-quant weights (Q4_K, Q5_K, Q6_K, the last in the revision's order) in ggml's AVX2 order; the
/// AVX-512 level runs this too.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn k_products(w: &Weights<'_>, q: &QuantizedActs, dst: &mut DstView<'_>) {
    match w.wtype {
        WType::Q4K => k_rows::<Q4K>(w, &q.k_rows(), dst),
        WType::Q5K => k_rows::<Q5K>(w, &q.k_rows(), dst),
        WType::Q6K if w.q6k_per_subblock => k_rows::<kquant::Q6KPerSubblock>(w, &q.k_rows(), dst),
        WType::Q6K => k_rows::<kquant::Q6KPerPair>(w, &q.k_rows(), dst),
        _ => unreachable!("k_products takes the K-quants"),
    }
}

#[inline(never)] // as quant_rows
#[target_feature(enable = "avx2,fma,f16c")]
fn k_rows<F: kquant::Avx2KTile>(w: &Weights<'_>, a: &ActRows<'_, crate::quant::BlockQ8K>, dst: &mut DstView<'_>) {
    // SAFETY: this function is compiled for and only entered with AVX2/FMA/F16C.
    unsafe { walk_tiles(&KTiles::<F> { w, a, _f: std::marker::PhantomData }, dst) }
}

/// Block-format weights unpacked into a [`quant::Panel`] (batched products).
struct PanelTiles<'p, 'a, F: Avx2Tile> {
    panel: &'p quant::Panel<F>,
    /// Weight row of panel row 0.
    r0: usize,
    a: &'a ActRows<'a, F::A>,
}

impl<'p, F: Avx2Tile> Tiles for PanelTiles<'p, '_, F> {
    type Row = quant::PanelRow<'p, F>;
    #[inline(always)]
    fn w_row(&self, i: usize) -> quant::PanelRow<'p, F> {
        self.panel.row(i - self.r0)
    }
    #[inline(always)]
    unsafe fn tile<const R: usize, const C: usize>(&self, w: [quant::PanelRow<'p, F>; R], j: usize) -> [[f32; C]; R] {
        // SAFETY: AVX2/FMA/F16C by this function's contract; the kernel checks that columns
        // j..j + C exist and that the rows hold a.nb blocks.
        unsafe { quant::panel_tile::<F, R, C>(w, self.a, j) }
    }
    #[inline(always)]
    fn act_row_bytes(&self) -> usize {
        self.a.row_bytes()
    }
}

#[inline(never)] // one call per chunk; keeps each format's kernel visible to profilers
#[target_feature(enable = "avx2,fma,f16c")]
fn quant_rows<F: Avx2Tile>(w: &Weights<'_>, a: &ActRows<'_, F::A>, dst: &mut DstView<'_>) {
    let rows = dst.weight_rows();
    if dst.is_single_act() {
        let r0 = rows.start;
        // SAFETY: this function is compiled for and only entered with AVX2/FMA/F16C; the kernel
        // checks the rows' lengths.
        return unsafe { matvec::matvec::<F>(|r| blocks_from_bytes::<F::W>(w.row(r0 + r)), rows.len(), a, dst.row_mut(0)) };
    }
    if dst.act_rows().len() >= PANEL_MIN_ACTS && !rows.is_empty() {
        // SAFETY: this function is compiled for and only entered with AVX2/FMA/F16C.
        let panel = unsafe { quant::Panel::<F>::new(rows.clone().map(|i| blocks_from_bytes::<F::W>(w.row(i))), a.nb).with_min_sums(a, dst.act_rows()) };
        // SAFETY: as above.
        return unsafe { walk_tiles(&PanelTiles::<F> { panel: &panel, r0: rows.start, a }, dst) };
    }
    // SAFETY: this function is compiled for and only entered with AVX2/FMA/F16C.
    unsafe { walk_tiles(&QuantTiles::<F> { w, a }, dst) }
}

#[inline(never)] // as quant_rows
#[target_feature(enable = "avx2,fma,f16c")]
fn float_rows<'w, 'a, E: float::FloatElem + 'w + 'a>(w: impl Fn(usize) -> &'w [E], a: impl Fn(usize) -> &'a [E], dst: &mut DstView<'_>) {
    let acts = dst.act_rows();
    // (a few activation rows, decoding with grouped query heads, are left to the tiles below,
    // which load each weight vector once for all of them)
    // SAFETY: as quant_rows.
    if unsafe { heads::rows(&w, &a, dst) } {
        return;
    }
    let tiles = FloatTiles::new(w, acts.clone(), a);
    let mut rows = dst.weight_rows();
    // SAFETY (few_acts): as quant_rows.
    match acts.len() {
        2 => return unsafe { few_acts::<E, _, 2>(&tiles, dst, rows) },
        3 => return unsafe { few_acts::<E, _, 3>(&tiles, dst, rows) },
        4 => return unsafe { few_acts::<E, _, 4>(&tiles, dst, rows) },
        _ => {}
    }
    if dst.is_single_act() && tiles.acts::<1>(0)[0].len() <= WIDE_DECODE_K {
        // Decoding attention (one query row against short K / V rows): eight weight rows per
        // tile, so the per-tile work (row lookups, the reduction, the stores) is shared by eight
        // outputs instead of two; it was most of the time with rows of 64.
        while rows.len() >= 8 {
            let i = rows.start;
            let w: [&[E]; 8] = std::array::from_fn(|r| (tiles.w)(i + r));
            // SAFETY: AVX2/FMA/F16C as quant_rows; the rows all have the activation's length k.
            let out = unsafe { float::float_tile::<E, 8, 1>(w, tiles.acts::<1>(0)) };
            put_tile(dst, i, 0, out);
            rows.start += 8;
        }
    }
    // SAFETY: as quant_rows.
    unsafe { walk_tiles_rows(&tiles, dst, rows) }
}

/// Two to four activation rows (decode attention with grouped query heads): weight rows in
/// pairs against all the activations (the tiles the walk would take), each pair fetching the
/// rows [`FEW_PREFETCH_ROWS`] ahead into L2. The K/V rows come from memory; with demand loads
/// alone SmolLM2's grouped KQ at 320 tokens took 22.3 us per node and KQV 22.9, with the
/// prefetch 16.9 and 19.1 (`GGML_RS_SIMD_AVX2_ONLY=1 GGML_RS_SIMD_PROFILE=1`), generation
/// 1.014x and 1.041x (11 and 15 interleaved runs). The first [`FEW_PREFETCH_ROWS`] rows, which
/// the look-ahead never reaches, are asked for at once before the loop: SmolLM2's decode
/// attention products per 128 tokens 61-66 -> 50-55 ms (AVX-512: 62-67 -> 48-50; 3 profiles
/// each). As on AVX-512 (`avx512::float::few_rows`).
///
/// # Safety
/// AVX2, FMA and F16C must be available.
#[inline(always)]
unsafe fn few_acts<'w, E: float::FloatElem + 'w, T: Tiles<Row = &'w [E]>, const C: usize>(tiles: &T, dst: &mut DstView<'_>, rows: std::ops::Range<usize>) {
    if rows.is_empty() {
        return;
    }
    let j = dst.act_rows().start;
    let row_bytes = std::mem::size_of_val(tiles.w_row(rows.start));
    // the rows before the loop's look-ahead reaches: asked for at once, not missed one by one
    for r in rows.start..(rows.start + FEW_PREFETCH_ROWS).min(rows.end) {
        // SAFETY: AVX2 by this function's contract (a prefetch never faults).
        unsafe { prefetch_l2(tiles.w_row(r).as_ptr() as *const u8, row_bytes) };
    }
    let mut i = rows.start;
    while i < rows.end {
        for r in i + FEW_PREFETCH_ROWS..(i + FEW_PREFETCH_ROWS + 2).min(rows.end) {
            // SAFETY: AVX2 by this function's contract (a prefetch never faults).
            unsafe { prefetch_l2(tiles.w_row(r).as_ptr() as *const u8, row_bytes) };
        }
        // SAFETY (tiles): AVX2/FMA/F16C by this function's contract; rows i, i + 1 < rows.end.
        if i + 2 <= rows.end {
            put_tile(dst, i, j, unsafe { tiles.tile::<2, C>([tiles.w_row(i), tiles.w_row(i + 1)], j) });
            i += 2;
        } else {
            put_tile(dst, i, j, unsafe { tiles.tile::<1, C>([tiles.w_row(i)], j) });
            i += 1;
        }
    }
}

/// How many weight rows ahead [`few_acts`] fetches into L2.
const FEW_PREFETCH_ROWS: usize = 16;

/// Longest rows (`k`) that [`float_rows`] multiplies eight at a time against one activation
/// row: attention heads (64) and decode-time KV lengths; longer rows are weight matrices
/// streamed from memory, where two interleaved rows prefetch better.
const WIDE_DECODE_K: usize = 512;

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let mut acc = [_mm256_setzero_ps(); 4];
    let mut i = 0;
    while i + 32 <= n {
        for (u, acc) in acc.iter_mut().enumerate() {
            let o = i + 8 * u;
            *acc = _mm256_fmadd_ps(load8_f32(&a[o..o + 8]), load8_f32(&b[o..o + 8]), *acc);
        }
        i += 32;
    }
    while i + 8 <= n {
        acc[0] = _mm256_fmadd_ps(load8_f32(&a[i..i + 8]), load8_f32(&b[i..i + 8]), acc[0]);
        i += 8;
    }
    let v = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    let mut sum = hsum_ps(v);
    for j in i..n {
        sum += a[j] * b[j];
    }
    sum
}
