//! The NEON tile family, with and without `sdot` / FEAT_FP16: `quant` (the 32-value block
//! formats' [`NeonTile`](quant::NeonTile)s and their tile kernel), `panel` (their weight rows
//! unpacked for batched products), `kquant` (the K-quants), `iq4nl` (IQ4_NL), `float` (F16 /
//! F32 tiles), `matvec` (decoding), `lanes` (the integer lane sums they share), `tests` (the
//! tiles against ggml-cpu's NEON `vec_dot`s), and here their entry points.

mod float;
mod iq4nl;
mod kquant;
mod lanes;
mod matvec;
mod panel;
pub(super) mod quant;
#[cfg(test)]
mod tests;

use super::walk::{put_tile, walk_tiles, walk_tiles_rows, FloatTiles, TileShapes, Tiles, PANEL_MIN_ACTS};
use super::acts::{ActRows, QuantizedActs};
use super::operands::{Acts, DstView, Weights};
use crate::quant::{blocks_from_bytes, WType, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0};

/// Every output of `dst` with ggml-cpu's NEON arithmetic, in register tiles of weight rows x
/// activation rows (see `quant`); `sdot` for the integer sums where the CPU has
/// it (same values without).
pub(super) fn mul_mat_tiles(w: &Weights<'_>, acts: &Acts<'_>, q: &QuantizedActs, dst: &mut DstView<'_>) {
    if crate::cpu_features::has_dotprod() {
        // SAFETY: dotprod was detected at runtime.
        unsafe { tiles_sdot(w, acts, q, dst) }
    } else {
        // SAFETY: DOT = false needs nothing beyond NEON.
        #[cfg(feature = "neon-nodot")]
        return unsafe { tiles::<false>(w, acts, q, dst) };
        #[cfg(not(feature = "neon-nodot"))]
        unreachable!("integer products without sdot are declined (cpu_features::integer_products)");
    }
}

/// # Safety
/// The CPU must have the dot product extension.
#[target_feature(enable = "dotprod")]
unsafe fn tiles_sdot(w: &Weights<'_>, acts: &Acts<'_>, q: &QuantizedActs, dst: &mut DstView<'_>) {
    // SAFETY: this function requires dotprod.
    unsafe { tiles::<true>(w, acts, q, dst) }
}

/// The format dispatch. Each format's products are a function of their own, out of line
/// ([`walk`], [`matvec`], [`float_rows`]): expanded into this one body they were a single
/// 216 KB function (ARMv8.0) and a 173 KB one (`sdot`), and LLVM gave the shared loops no chance
/// to stay shared. One call per product view; the kernels stay inlined inside each function.
///
/// # Safety
/// With `DOT`, the CPU must have the dot product extension.
#[inline(always)]
unsafe fn tiles<const DOT: bool>(w: &Weights<'_>, acts: &Acts<'_>, q: &QuantizedActs, dst: &mut DstView<'_>) {
    // SAFETY (quant_rows): passed on from this function's contract.
    // (decoding, and batches too small to repay a panel: see `matvec::quant_matvec`)
    if dst.is_single_act() || dst.act_rows().len() < PANEL_MIN_ACTS {
        // SAFETY (matvec): passed on from this function's contract.
        match w.wtype {
            WType::Q4_0 => return unsafe { matvec::<Q4_0, DOT>(w, &q.tile_rows(&q.q8_0), dst) },
            WType::Q4_1 => return unsafe { matvec::<Q4_1, DOT>(w, &q.tile_rows(&q.q8_1), dst) },
            WType::Q8_0 => return unsafe { matvec::<Q8_0, DOT>(w, &q.tile_rows(&q.q8_0), dst) },
            WType::Q5_0 => return unsafe { matvec::<Q5_0, DOT>(w, &q.tile_rows(&q.q8_0), dst) },
            WType::Q5_1 => return unsafe { matvec::<Q5_1, DOT>(w, &q.tile_rows(&q.q8_1), dst) },
            _ => {}
        }
    }
    match w.wtype {
        WType::Q4_0 => unsafe { quant_rows::<Q4_0, Q4_0, DOT>(w, &q.tile_rows(&q.q8_0), dst) },
        WType::Q4_1 => unsafe { quant_rows::<Q4_1, Q4_1, DOT>(w, &q.tile_rows(&q.q8_1), dst) },
        WType::Q8_0 => unsafe { quant_rows::<Q8_0, Q8_0, DOT>(w, &q.tile_rows(&q.q8_0), dst) },
        WType::Q5_0 => unsafe { quant_rows::<Q5_0, Q8_0, DOT>(w, &q.tile_rows(&q.q8_0), dst) },
        WType::Q5_1 => unsafe { quant_rows::<Q5_1, Q5_1, DOT>(w, &q.tile_rows(&q.q8_1), dst) },
        // SAFETY (walk): passed on from this function's contract.
        WType::Q4K => unsafe { walk::<_, DOT>(&KTiles::<crate::quant::Q4K, DOT> { w, a: &q.k_rows(), _f: std::marker::PhantomData }, dst) },
        WType::IQ4NL => unsafe { walk::<_, DOT>(&IQ4NLTiles::<DOT> { w, a: &q.tile_rows(&q.q8_0) }, dst) },
        WType::Q5K => unsafe { walk::<_, DOT>(&KTiles::<crate::quant::Q5K, DOT> { w, a: &q.k_rows(), _f: std::marker::PhantomData }, dst) },
        WType::Q6K => unsafe { walk::<_, DOT>(&KTiles::<crate::quant::Q6K, DOT> { w, a: &q.k_rows(), _f: std::marker::PhantomData }, dst) },
        // (the same rule as `acts::halves`, which prepared these activations as half bits)
        // SAFETY: FEAT_FP16 was detected at runtime.
        WType::F16 if crate::cpu_features::has_fp16() => unsafe { f16_rows_hp(w, q, dst) },
        WType::F16 | WType::F32 => float_rows(w, acts, q, dst),
    }
}

/// The tile walk of `k` as a function of its own (one per tile kind and `DOT`; see [`tiles`]).
///
/// # Safety
/// With `DOT`, the CPU must have the dot product extension.
#[inline(always)]
unsafe fn walk<K: Tiles, const DOT: bool>(k: &K, dst: &mut DstView<'_>) {
    // SAFETY: dotprod when DOT, by this function's contract; the kernels need nothing else.
    unsafe {
        if DOT {
            walk_sdot(k, dst)
        } else {
            walk_base(k, dst)
        }
    }
}

/// A call that stays a call: rustc drops `#[inline(never)]` from a `#[target_feature]`
/// function (rustc 1.95: the walk was inlined back into `tiles_sdot`), but LLVM never inlines a
/// function with more target features into one with fewer, so this featureless `inline(never)`
/// step keeps [`walk_sdot_body`] out of line.
///
/// # Safety
/// The CPU must have the dot product extension.
#[inline(never)]
unsafe fn walk_sdot<K: Tiles>(k: &K, dst: &mut DstView<'_>) {
    // SAFETY: passed on from this function's contract.
    unsafe { walk_sdot_body(k, dst) }
}

/// # Safety
/// The CPU must have the dot product extension.
#[target_feature(enable = "dotprod")]
unsafe fn walk_sdot_body<K: Tiles>(k: &K, dst: &mut DstView<'_>) {
    // SAFETY: the tiles' requirement (dotprod at most) is this function's.
    unsafe { walk_tiles(k, dst) }
}

/// # Safety
/// As `K`'s tiles (for the kinds walked here: nothing beyond NEON).
#[inline(never)]
unsafe fn walk_base<K: Tiles>(k: &K, dst: &mut DstView<'_>) {
    // SAFETY: passed on from this function's contract.
    unsafe { walk_tiles(k, dst) }
}

/// [`matvec::quant_matvec`] as a function of its own per format and `DOT` (see [`tiles`]).
///
/// # Safety
/// With `DOT`, the CPU must have the dot product extension.
#[inline(always)]
unsafe fn matvec<F: quant::NeonTile, const DOT: bool>(w: &Weights<'_>, a: &ActRows<'_, F::A>, dst: &mut DstView<'_>) {
    /// # Safety
    /// The CPU must have the dot product extension. (Out of line as [`walk_sdot`].)
    #[inline(never)]
    unsafe fn sdot<F: quant::NeonTile>(w: &Weights<'_>, a: &ActRows<'_, F::A>, dst: &mut DstView<'_>) {
        // SAFETY: passed on from this function's contract.
        unsafe { sdot_body::<F>(w, a, dst) }
    }
    /// # Safety
    /// The CPU must have the dot product extension.
    #[target_feature(enable = "dotprod")]
    unsafe fn sdot_body<F: quant::NeonTile>(w: &Weights<'_>, a: &ActRows<'_, F::A>, dst: &mut DstView<'_>) {
        // SAFETY: dotprod by this function's contract.
        unsafe { matvec::quant_matvec::<F, true>(w, a, dst) }
    }
    #[inline(never)]
    fn base<F: quant::NeonTile>(w: &Weights<'_>, a: &ActRows<'_, F::A>, dst: &mut DstView<'_>) {
        // SAFETY: DOT = false needs nothing beyond NEON.
        unsafe { matvec::quant_matvec::<F, false>(w, a, dst) }
    }
    if DOT {
        // SAFETY: dotprod when DOT, by this function's contract.
        unsafe { sdot::<F>(w, a, dst) }
    } else {
        base::<F>(w, a, dst)
    }
}

/// F16 (without FEAT_FP16) and F32 products: float kernels, the same with and without `sdot`,
/// so one copy out of line rather than one in each of [`tiles`]' two bodies.
#[inline(never)]
fn float_rows(w: &Weights<'_>, acts: &Acts<'_>, q: &QuantizedActs, dst: &mut DstView<'_>) {
    // SAFETY (walk_tiles): the float kernels need nothing beyond NEON.
    if w.wtype == WType::F16 {
        unsafe { walk_tiles(&FloatTiles::new(|i| w.row_f16(i), dst.act_rows(), |j| &q.h_row(j)[..w.k()]), dst) }
    } else {
        unsafe { walk_tiles(&FloatTiles::new(|i| w.row_f32(i), dst.act_rows(), |j| acts.row(j)), dst) }
    }
}

/// F16 products in half precision, as ggml-cpu built with `+fp16` (see `float::f16_tile_hp`), in
/// the shared tile walk (its cache blocks of activation rows).
///
/// # Safety
/// The CPU must have FEAT_FP16.
#[target_feature(enable = "fp16")]
unsafe fn f16_rows_hp(w: &Weights<'_>, q: &QuantizedActs, dst: &mut DstView<'_>) {
    let a: Vec<&[u16]> = dst.act_rows().map(|j| &q.hb_row(j)[..w.k()]).collect();
    let tiles = HalfTiles { w, a, first: dst.act_rows().start };
    let mut rows = dst.weight_rows();
    if dst.is_single_act() {
        // Decoding attention (one query row against K / V rows): four weight rows per tile, so
        // the per-tile work (row lookups, the reduction, the stores) is shared by four outputs.
        while rows.len() >= 4 {
            let i = rows.start;
            let wr: [&[u16]; 4] = std::array::from_fn(|r| w.row_f16(i + r));
            // SAFETY: FEAT_FP16 by this function's contract; the kernel checks the row lengths.
            put_tile(dst, i, 0, unsafe { float::f16_tile_hp::<4, 1>(wr, [tiles.a[0]]) });
            rows.start += 4;
        }
    }
    // SAFETY: FEAT_FP16 by this function's contract.
    unsafe { walk_tiles_rows(&tiles, dst, rows) }
}

/// F16 weight rows against F16 activation rows (half bits), accumulated in half precision.
struct HalfTiles<'a> {
    w: &'a Weights<'a>,
    /// The view's activation rows (`first..`), sliced once per chunk.
    a: Vec<&'a [u16]>,
    first: usize,
}

impl<'a> Tiles for HalfTiles<'a> {
    /// Every shape here: with [`TileShapes::Few`] whisper's KQ product (1500 x 1500 x 2 heads,
    /// whose views are all 4-column tiles of row pairs) counted 4.6 % more instructions under
    /// qemu, for a code saving of 10 KB (not investigated further).
    const SHAPES: TileShapes = TileShapes::All;
    type Row = &'a [u16];
    #[inline(always)]
    fn w_row(&self, i: usize) -> &'a [u16] {
        self.w.row_f16(i)
    }
    /// # Safety
    /// The CPU must have FEAT_FP16 (walked from [`f16_rows_hp`] only).
    #[inline(always)]
    unsafe fn tile<const R: usize, const C: usize>(&self, w: [&'a [u16]; R], j: usize) -> [[f32; C]; R] {
        let j = j - self.first;
        let mut a = [self.a[j]; C];
        a.copy_from_slice(&self.a[j..j + C]);
        // SAFETY: FEAT_FP16 by this function's contract; the kernel checks the row lengths.
        unsafe { float::f16_tile_hp::<R, C>(w, a) }
    }
    #[inline(always)]
    fn act_row_bytes(&self) -> usize {
        self.a.first().map_or(0, |r| std::mem::size_of_val(*r))
    }
}

/// IQ4_NL weights against their Q8_0 activations (`iq4nl`), `sdot` when `DOT`.
struct IQ4NLTiles<'a, const DOT: bool> {
    w: &'a Weights<'a>,
    a: &'a ActRows<'a, crate::quant::BlockQ8_0>,
}

impl<'q, const DOT: bool> Tiles for IQ4NLTiles<'q, DOT> {
    const SHAPES: TileShapes = TileShapes::Few;
    type Row = &'q [crate::quant::BlockIQ4NL];
    #[inline(always)]
    fn w_row(&self, i: usize) -> &'q [crate::quant::BlockIQ4NL] {
        blocks_from_bytes(self.w.row(i))
    }
    #[inline(always)]
    unsafe fn tile<const R: usize, const C: usize>(&self, w: [&'q [crate::quant::BlockIQ4NL]; R], j: usize) -> [[f32; C]; R] {
        // SAFETY: dotprod when DOT, by this function's contract; the kernel checks the shapes.
        unsafe { iq4nl::iq4nl_tile::<DOT, R, C>(w, self.a, j) }
    }
    #[inline(always)]
    fn act_row_bytes(&self) -> usize {
        self.a.row_bytes()
    }
}

/// K-quant weights against their Q8_K activations (`kquant`), `sdot` when `DOT`.
struct KTiles<'a, F: kquant::NeonKTile, const DOT: bool> {
    w: &'a Weights<'a>,
    a: &'a ActRows<'a, crate::quant::BlockQ8K>,
    _f: std::marker::PhantomData<F>,
}

impl<'q, F: kquant::NeonKTile, const DOT: bool> Tiles for KTiles<'q, F, DOT> {
    const SHAPES: TileShapes = TileShapes::Few;
    type Row = &'q [F::W];
    #[inline(always)]
    fn w_row(&self, i: usize) -> &'q [F::W] {
        blocks_from_bytes::<F::W>(self.w.row(i))
    }
    #[inline(always)]
    unsafe fn tile<const R: usize, const C: usize>(&self, w: [&'q [F::W]; R], j: usize) -> [[f32; C]; R] {
        // SAFETY: dotprod when DOT, by this function's contract; the kernel checks the shapes.
        unsafe { kquant::k_tile::<F, DOT, R, C>(w, self.a, j) }
    }
    #[inline(always)]
    fn act_row_bytes(&self) -> usize {
        self.a.row_bytes()
    }
}

/// Q4_0 / Q4_1 / Q8_0 weights unpacked into a [`panel::Panel`] (batched products).
struct PanelTiles<'p, 'a, F: quant::NeonTile, const DOT: bool> {
    panel: &'p panel::Panel<F>,
    /// Weight row of panel row 0.
    r0: usize,
    a: &'a ActRows<'a, F::A>,
}

impl<'p, F: quant::NeonTile, const DOT: bool> Tiles for PanelTiles<'p, '_, F, DOT> {
    const SHAPES: TileShapes = TileShapes::Few;
    type Row = panel::PanelRow<'p>;
    #[inline(always)]
    fn w_row(&self, i: usize) -> panel::PanelRow<'p> {
        self.panel.row(i - self.r0)
    }
    #[inline(always)]
    unsafe fn tile<const R: usize, const C: usize>(&self, w: [panel::PanelRow<'p>; R], j: usize) -> [[f32; C]; R] {
        // SAFETY: dotprod when DOT, by this function's contract; the kernel checks that
        // columns j..j + C exist and that the rows hold a.nb blocks.
        unsafe { quant::quant_tile::<F, DOT, R, C, _>(w, self.a, j) }
    }
    #[inline(always)]
    fn act_row_bytes(&self) -> usize {
        self.a.row_bytes()
    }
}

/// A batched product of quantized weights (at least [`PANEL_MIN_ACTS`] activation rows), through
/// a panel: the weights unpacked once ([`panel::Panel`]), then the tiles. AVX2 walks smaller
/// batches on the packed blocks, which NEON did too, at the price of a second walk per format
/// and `DOT` (5 to 7 KB each, 55 KB in all of the Android library); NEON computes them with the
/// matrix-vector kernel instead (`matvec::quant_matvec`). Q5_0's panel is walked as Q8_0's: once
/// unpacked, the two formats' products are the same operations (the same activation format, no
/// minimum, and ggml's tails `(dw*da)*sumi` and `sumi*(dw*da)` are one fused operation with the
/// factors swapped): `G` is the format whose panel walk computes `F`'s, `F` itself for the
/// others.
///
/// # Safety
/// With `DOT`, the CPU must have the dot product extension.
#[inline(always)]
unsafe fn quant_rows<F: quant::NeonTile, G: quant::NeonTile<A = F::A>, const DOT: bool>(w: &Weights<'_>, a: &ActRows<'_, F::A>, dst: &mut DstView<'_>) {
    let r0 = dst.weight_rows().start;
    if dst.weight_rows().is_empty() {
        return;
    }
    let panel = panel::<F>(w, a, dst).as_format::<G>();
    // SAFETY: passed on from this function's contract.
    unsafe { walk::<_, DOT>(&PanelTiles::<G, DOT> { panel: &panel, r0, a }, dst) }
}

/// The view's weight rows unpacked ([`panel::Panel`]): one function per format, shared by both
/// `DOT` paths.
#[inline(never)]
fn panel<F: quant::NeonTile>(w: &Weights<'_>, a: &ActRows<'_, F::A>, dst: &DstView<'_>) -> panel::Panel<F> {
    panel::Panel::<F>::new(dst.weight_rows().map(|i| blocks_from_bytes::<F::W>(w.row(i))), a.nb).with_min_sums(a, dst.act_rows())
}

impl<'w, 'a, E: float::FloatElem + 'w, W: Fn(usize) -> &'w [E]> Tiles for FloatTiles<'a, W, f32> {
    const SHAPES: TileShapes = TileShapes::Few;
    type Row = &'w [E];
    #[inline(always)]
    fn w_row(&self, i: usize) -> &'w [E] {
        (self.w)(i)
    }
    #[inline(always)]
    unsafe fn tile<const R: usize, const C: usize>(&self, w: [&'w [E]; R], j: usize) -> [[f32; C]; R] {
        float::float_tile::<E, R, C>(w, self.acts(j))
    }
    #[inline(always)]
    fn act_row_bytes(&self) -> usize {
        FloatTiles::act_row_bytes(self)
    }
}
