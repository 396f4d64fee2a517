//! The two MUL_MAT kernels of the CPU backend, over plain row-major memory.
//!
//! Shapes follow ggml: weights are `rows` rows of `k` values (`src0`), activations are `n` rows
//! of `k` f32 (`src1`), and the result has `n` rows of `rows` values (`dst[j][i] = w_i . a_j`).
//! Work is split across threads in blocks of weight rows x activation rows: every entry point
//! computes exactly the outputs covered by its [`DstView`], and [`DstView::split_even`] /
//! [`DstView::split_acts_even`] hand out disjoint blocks of one output buffer without unsafe code
//! on the caller's side.
//!
//! * [`mul_mat_vec`] (small `n`): activations are quantized once to the weights' partner format
//!   ([`QuantizedActs`], shared read-only by all threads) and each output is one SIMD dot product,
//!   like ggml-cpu's `vec_dot` path. Memory-bound; the right choice for decoding.
//! * [`mul_mat_gemm`] (large `n`): weight rows are dequantized tile by tile into an f32 panel
//!   and multiplied with `matrixmultiply::sgemm`, which is compute-bound and amortizes the
//!   dequantization over all `n` activations. Activations stay f32, so this path is slightly
//!   more accurate than the quantized one.
//!
//! Files: this one holds the operand views ([`Weights`], [`Acts`], [`DstView`]) and the dispatch
//! (level, vec or gemm); `acts` the activations in the weights' partner format; `gemm` the sgemm
//! path; `walk` the register-tile walk shared by the SIMD levels; `avx2`, `avx512` and `neon` one
//! folder per ISA tile family, each implementing its tile trait for the block formats of
//! `quant` ([`crate::simd::quant::Format`]); `tests` compares every level with the portable one.

mod acts;
mod dot;
mod gemm;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod walk;
#[cfg(target_arch = "x86_64")]
mod heads;
#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "aarch64")]
mod neon;
#[cfg(test)]
mod tests;

pub use acts::{ActRows, ParRows, QuantizedActs};
pub use dot::{vec_dot_at, TileFormat};
pub use gemm::{gemm_tile_rows, mul_mat_gemm, mul_mat_gemm_at};

use acts::QKind;
use std::marker::PhantomData;
use std::ops::Range;

use crate::simd::cpu_features::{clamp_level, simd_level, SimdLevel};
use crate::simd::quant::{self, blocks_from_bytes, q4_0, q4_1, q8_0};
use crate::simd::quant::{BlockQ4_0, BlockQ4_1, BlockQ8_0};

pub use crate::simd::quant::WType;

impl WType {
    /// Smallest activation count for which [`mul_mat`] picks the sgemm path. Below it the
    /// dequantize + pack overhead of sgemm is not repaid (and matrixmultiply's 8x8 register
    /// tile wastes work on ragged batches); F32 needs no dequantization so it switches earlier.
    /// Crossovers measured with the ignored `bench_mul_mat` test on an AVX2 EPYC core.
    pub const fn gemm_min_batch(self) -> usize {
        match self {
            WType::F32 => 8,
            WType::F16 | WType::Q4_0 | WType::Q4_1 | WType::Q8_0 => 16,
        }
    }
}

/// A weight matrix: `rows` rows of `k` values of type `wtype`, row `i` starting at byte
/// `i * row_stride` of `data` (ggml's `nb[1]`, so views and padded rows work).
#[derive(Clone, Copy, Debug)]
pub struct Weights<'a> {
    data: &'a [u8],
    wtype: WType,
    k: usize,
    row_stride: usize,
    rows: usize,
    /// `wtype.row_bytes(k)`, computed once: the tile walkers look rows up per tile, and the
    /// division in `row_bytes` showed in profiles (~1.6% of whisper's instructions)
    row_bytes: usize,
}

impl<'a> Weights<'a> {
    /// Validates the layout once so the kernels can index without re-checking.
    ///
    /// Panics if `k` is not a multiple of the block length, rows overlap or run past `data`, or
    /// rows are not aligned for their element type (2 bytes; 4 for F32).
    pub fn new(data: &'a [u8], wtype: WType, k: usize, row_stride: usize, rows: usize) -> Self {
        assert!(k.is_multiple_of(wtype.block_len()), "k = {k} is not a multiple of {}", wtype.block_len());
        let rb = wtype.row_bytes(k);
        if rows > 0 {
            assert!(rows == 1 || row_stride >= rb, "row_stride {row_stride} < row bytes {rb}");
            assert!(
                data.len() >= (rows - 1) * row_stride + rb,
                "weights: {} bytes cannot hold {rows} rows of stride {row_stride}",
                data.len()
            );
        }
        let a = wtype.align();
        assert!(
            rows == 0 || ((data.as_ptr() as usize).is_multiple_of(a) && (rows == 1 || row_stride.is_multiple_of(a))),
            "weights: rows must be {a}-byte aligned"
        );
        Weights { data, wtype, k, row_stride, rows, row_bytes: rb }
    }

    pub fn wtype(&self) -> WType {
        self.wtype
    }
    pub fn k(&self) -> usize {
        self.k
    }
    pub fn rows(&self) -> usize {
        self.rows
    }

    fn row(&self, i: usize) -> &'a [u8] {
        let start = i * self.row_stride;
        &self.data[start..start + self.row_bytes]
    }

    fn row_f32(&self, i: usize) -> &'a [f32] {
        let b = self.row(i);
        // SAFETY: `new` checked 4-byte alignment of every row for F32 (the only caller), the
        // length is k * 4 bytes, and every bit pattern is a valid f32.
        unsafe { std::slice::from_raw_parts(b.as_ptr() as *const f32, self.k) }
    }

    fn row_f16(&self, i: usize) -> &'a [u16] {
        let b = self.row(i);
        // SAFETY: `new` checked 2-byte alignment of every row, the length is k * 2 bytes for F16
        // (the only caller), and every bit pattern is a valid u16.
        unsafe { std::slice::from_raw_parts(b.as_ptr() as *const u16, self.k) }
    }

    /// The first `k` elements of every row (F16 / F32: see `ops::mul_mat::causal::trim_keys`).
    pub fn prefix(&self, k: usize) -> Weights<'a> {
        assert!(k <= self.k && matches!(self.wtype, WType::F16 | WType::F32), "prefix of {k} from a row of {}", self.k);
        Weights { k, row_bytes: self.wtype.row_bytes(k), ..*self }
    }

    /// Row `i`'s elements as f32 bits or half bits, for checks that read no values (F16 / F32).
    pub fn row_bits(&self, i: usize) -> RowBits<'a> {
        match self.wtype {
            WType::F16 => RowBits::F16(self.row_f16(i)),
            _ => RowBits::F32(self.row_f32(i)),
        }
    }

    /// Writes row `i` as `k` floats.
    fn dequantize_row_at(&self, level: SimdLevel, i: usize, out: &mut [f32]) {
        self.wtype.to_f32_at(level, self.row(i), out)
    }
}

/// `n` activation rows of `k` f32, row `j` starting at element `j * stride` (ggml's `nb[1] / 4`).
#[derive(Clone, Copy, Debug)]
pub struct Acts<'a> {
    data: &'a [f32],
    k: usize,
    n: usize,
    stride: usize,
}

impl<'a> Acts<'a> {
    /// Panics if the rows overlap or run past `data`.
    pub fn new(data: &'a [f32], k: usize, n: usize, stride: usize) -> Self {
        if n > 0 {
            assert!(n == 1 || stride >= k, "activation stride {stride} < k {k}");
            assert!(data.len() >= (n - 1) * stride + k, "activations: slice too short");
        }
        Acts { data, k, n, stride }
    }

    pub fn k(&self) -> usize {
        self.k
    }
    pub fn n(&self) -> usize {
        self.n
    }

    pub fn row(&self, j: usize) -> &'a [f32] {
        &self.data[j * self.stride..j * self.stride + self.k]
    }

    /// The first `k` elements of every row.
    pub fn prefix(&self, k: usize) -> Acts<'a> {
        assert!(k <= self.k);
        Acts { k, ..*self }
    }
}

/// A float weight row ([`Weights::row_bits`]).
pub enum RowBits<'a> {
    F16(&'a [u16]),
    F32(&'a [f32]),
}

/// Mutable view of the outputs one worker computes: a block of weight rows (output columns) x
/// activation rows (output rows).
///
/// Element (activation `j`, weight row `i`) lives at `j * stride + (i - first)` from the start
/// of the buffer the view was made from. Splitting by weight rows or by activation rows yields
/// views that never share an element, so they can be sent to different threads even though
/// their memory interleaves. Kernels index activations absolutely (`j` of the whole product),
/// so a view of activation rows `j0..j1` needs no re-based activation buffers.
#[derive(Debug)]
pub struct DstView<'a> {
    /// Element (0, rows.start) (not necessarily covered: see `acts`).
    ptr: *mut f32,
    /// Activation rows this view covers, out of the `n` of the product it was made from.
    acts: Range<usize>,
    n: usize,
    stride: usize,
    rows: Range<usize>,
    _borrow: PhantomData<&'a mut [f32]>,
}

// SAFETY: a DstView is a unique borrow of a set of f32 elements no other view covers (splitting
// partitions the columns), exactly like `&mut [f32]`, which is Send.
unsafe impl Send for DstView<'_> {}

impl<'a> DstView<'a> {
    /// View of a full result: `data[j * stride + i]` for `j < n`, `i < weight_rows`.
    pub fn new(data: &'a mut [f32], n: usize, weight_rows: usize, stride: usize) -> Self {
        Self::for_rows(data, n, 0..weight_rows, stride)
    }

    /// View whose buffer starts at weight row `rows.start`: element (j, i) is at
    /// `data[j * stride + (i - rows.start)]`. Lets a caller hand a kernel just its own slice.
    pub fn for_rows(data: &'a mut [f32], n: usize, rows: Range<usize>, stride: usize) -> Self {
        assert!(rows.start <= rows.end);
        let cols = rows.len();
        if n > 0 && cols > 0 {
            assert!(n == 1 || stride >= cols, "dst stride {stride} < columns {cols}");
            assert!(data.len() >= (n - 1) * stride + cols, "dst: slice too short");
        }
        DstView { ptr: data.as_mut_ptr(), acts: 0..n, n, stride, rows, _borrow: PhantomData }
    }

    /// Weight rows (= output columns) this view covers.
    pub fn weight_rows(&self) -> Range<usize> {
        self.rows.clone()
    }

    /// Activation rows (= output rows) this view covers.
    pub fn act_rows(&self) -> Range<usize> {
        self.acts.clone()
    }

    /// Whether this view is part of a single-activation product (decoding): the kernels' matrix
    /// x vector paths read the prepared activations as one row (scales at `[b]`, not `[b * n]`).
    pub(crate) fn is_single_act(&self) -> bool {
        self.n == 1
    }

    /// Splits into weight rows `[start, row)` and `[row, end)`.
    pub fn split_at(self, row: usize) -> (DstView<'a>, DstView<'a>) {
        assert!(self.rows.contains(&row) || row == self.rows.end, "split point outside the view");
        let right_ptr = self.ptr.wrapping_add(row - self.rows.start);
        let left = DstView { ptr: self.ptr, acts: self.acts.clone(), n: self.n, stride: self.stride, rows: self.rows.start..row, _borrow: PhantomData };
        let right = DstView { ptr: right_ptr, acts: self.acts, n: self.n, stride: self.stride, rows: row..self.rows.end, _borrow: PhantomData };
        (left, right)
    }

    /// Splits into activation rows `[start, j)` and `[j, end)` (the same weight rows).
    pub fn split_acts_at(self, j: usize) -> (DstView<'a>, DstView<'a>) {
        assert!(self.acts.contains(&j) || j == self.acts.end, "split point outside the view");
        let left = DstView { ptr: self.ptr, acts: self.acts.start..j, n: self.n, stride: self.stride, rows: self.rows.clone(), _borrow: PhantomData };
        let right = DstView { ptr: self.ptr, acts: j..self.acts.end, n: self.n, stride: self.stride, rows: self.rows, _borrow: PhantomData };
        (left, right)
    }

    /// Splits into `parts` views of nearly equal activation-row ranges whose boundaries are
    /// multiples of `multiple` rows (relative to the view start). Some views may be empty.
    pub fn split_acts_even(self, parts: usize, multiple: usize) -> Vec<DstView<'a>> {
        let cuts = even_cuts(self.acts.clone(), parts, multiple);
        self.split_by(cuts, DstView::split_acts_at)
    }

    /// Splits into `parts` views of nearly equal width whose boundaries are multiples of
    /// `multiple` weight rows (relative to the view start), e.g. the gemm tile height, so no
    /// worker gets a ragged tile in the middle. Some views may be empty.
    pub fn split_even(self, parts: usize, multiple: usize) -> Vec<DstView<'a>> {
        let cuts = even_cuts(self.rows.clone(), parts, multiple);
        self.split_by(cuts, DstView::split_at)
    }

    /// Splits at each of the ascending points `cuts` with `split`.
    fn split_by(self, cuts: Vec<usize>, split: fn(DstView<'a>, usize) -> (DstView<'a>, DstView<'a>)) -> Vec<DstView<'a>> {
        let mut out = Vec::with_capacity(cuts.len() + 1);
        let mut rest = self;
        for at in cuts {
            let (left, right) = split(rest, at);
            out.push(left);
            rest = right;
        }
        out.push(rest);
        out
    }

    /// The covered columns of activation row `j` (one of [`Self::act_rows`]).
    fn row_mut(&mut self, j: usize) -> &mut [f32] {
        assert!(self.acts.contains(&j), "activation row {j} outside the view's {:?}", self.acts);
        if self.rows.is_empty() {
            // The buffer may be empty (dangling pointer); no element to hand out.
            return &mut [];
        }
        // SAFETY: `for_rows` checked that the original slice holds element (j, c) for every
        // j < n and c < cols of the original view, and splitting only narrows the column and
        // activation ranges, so this range is inside the borrowed buffer; no other view covers
        // these elements, and `&mut self` prevents a second live slice from this view.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(j * self.stride), self.rows.len()) }
    }

    /// Sets every covered element to `v`.
    #[cfg(test)]
    pub(crate) fn fill(&mut self, v: f32) {
        for j in self.acts.clone() {
            self.row_mut(j).fill(v);
        }
    }

    /// Pointer to element (0, `i`) for sgemm.
    fn col_ptr(&mut self, i: usize) -> *mut f32 {
        debug_assert!(self.rows.contains(&i));
        self.ptr.wrapping_add(i - self.rows.start)
    }
}

/// The `parts - 1` points cutting `range` into `parts` nearly equal pieces whose boundaries are
/// multiples of `multiple` (relative to its start); non-decreasing, so each lies inside what is
/// left after the previous cut.
fn even_cuts(range: Range<usize>, parts: usize, multiple: usize) -> Vec<usize> {
    let (parts, multiple) = (parts.max(1), multiple.max(1));
    let (start, len) = (range.start, range.len());
    let units = len.div_ceil(multiple);
    (1..parts).map(|p| start + (units * p / parts * multiple).min(len)).collect()
}

/// f32 dot product (8-lane portable / AVX2+FMA with 4 accumulators).
pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    dot_f32_at(simd_level(), a, b)
}

/// [`dot_f32`] on an explicit kernel level (clamped to what the CPU supports).
pub fn dot_f32_at(level: SimdLevel, a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "dot_f32: length mismatch");
    match clamp_level(level) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: clamp_level only returns Avx2 when AVX2, FMA and F16C were detected at runtime.
        SimdLevel::Avx2 | SimdLevel::Avx512 => unsafe { avx2::dot_f32(a, b) },
        _ => dot_f32_portable(a, b),
    }
}

fn dot_f32_portable(a: &[f32], b: &[f32]) -> f32 {
    quant::f16::dot_lanes(a.len().min(b.len()), |i| a[i] * b[i])
}

/// Picks the kernel for `acts.n` activations: on the SIMD levels always ggml's dot products
/// (tiled, see `avx2`, `avx512`, `neon`), so results equal ggml-cpu's bit for bit; on the
/// portable level dot products
/// below [`WType::gemm_min_batch`] and sgemm above. `q` is read unless
/// [`needs_quantized_acts`] says it need not be prepared.
pub fn mul_mat(w: &Weights<'_>, acts: &Acts<'_>, q: &QuantizedActs, dst: DstView<'_>, scratch: &mut Vec<f32>) {
    if use_gemm(w.wtype, acts.n) {
        mul_mat_gemm(w, acts, dst, scratch)
    } else {
        mul_mat_vec(w, acts, q, dst)
    }
}

/// Whether [`mul_mat`] takes the sgemm path for `n` activations.
pub fn use_gemm(wtype: WType, n: usize) -> bool {
    use_gemm_at(simd_level(), wtype, n)
}

/// [`use_gemm`] on an explicit kernel level.
pub fn use_gemm_at(level: SimdLevel, wtype: WType, n: usize) -> bool {
    (clamp_level(level) == SimdLevel::Portable || *SGEMM) && n >= wtype.gemm_min_batch()
}

/// `GGML_RS_SIMD_SGEMM=1`: batches through sgemm on every level, for apps that prefer speed to
/// stock's exact answers. A little faster for F16 weights (whisper base encode 1.85x ggml-cpu
/// against the exact tiles' 1.75x), but activations keep f32 sums in sgemm's order, so results
/// are close to ggml-cpu's (NMSE ~1e-3 at the logits), not identical. Read once.
static SGEMM: once_cell::sync::Lazy<bool> = once_cell::sync::Lazy::new(|| std::env::var("GGML_RS_SIMD_SGEMM").is_ok_and(|v| v == "1"));

/// Whether [`mul_mat`] reads a prepared [`QuantizedActs`] for this type and batch.
pub fn needs_quantized_acts(wtype: WType, n: usize) -> bool {
    needs_quantized_acts_at(simd_level(), wtype, n)
}

/// [`needs_quantized_acts`] on an explicit kernel level.
pub fn needs_quantized_acts_at(level: SimdLevel, wtype: WType, n: usize) -> bool {
    match clamp_level(level) {
        _ if use_gemm_at(level, wtype, n) => false,
        SimdLevel::Portable => matches!(wtype, WType::Q4_0 | WType::Q4_1 | WType::Q8_0),
        _ => wtype != WType::F32,
    }
}

/// Dot-product kernel for the weight rows of `dst`. `q` must have been prepared from `acts` for
/// `w.wtype()` (checked) when the weights are quantized.
pub fn mul_mat_vec(w: &Weights<'_>, acts: &Acts<'_>, q: &QuantizedActs, dst: DstView<'_>) {
    mul_mat_vec_at(simd_level(), w, acts, q, dst)
}

/// [`mul_mat_vec`] on an explicit kernel level.
pub fn mul_mat_vec_at(level: SimdLevel, w: &Weights<'_>, acts: &Acts<'_>, q: &QuantizedActs, mut dst: DstView<'_>) {
    check_shapes(w, acts, &dst);
    let level = clamp_level(level);
    match w.wtype {
        WType::F32 => {}
        // the portable F16 kernel reads the f32 activations directly
        WType::F16 if level == SimdLevel::Portable => {}
        WType::F16 => q.check(QKind::F16, acts),
        WType::Q4_0 | WType::Q8_0 => q.check(QKind::Q8_0, acts),
        WType::Q4_1 => q.check(QKind::Q8_1, acts),
    }
    // Dispatch once per call, not per dot product: the whole loop is compiled with the level's
    // target features so the dot kernels inline into it.
    match level {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: clamp_level only returns Avx2 when AVX2, FMA and F16C were detected at runtime.
        SimdLevel::Avx2 => unsafe { avx2::mul_mat_tiles(w, acts, q, &mut dst) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: clamp_level only returns Avx512 when its AVX-512 subset was detected too.
        SimdLevel::Avx512 => unsafe { avx512::mul_mat_tiles(w, acts, q, &mut dst) },
        #[cfg(target_arch = "aarch64")]
        SimdLevel::Neon => neon::mul_mat_tiles(w, acts, q, &mut dst),
        _ => mul_mat_vec_portable(w, acts, q, &mut dst),
    }
}

/// Shared loop of the dot-product kernel: weight row outer, activations inner, so each weight
/// row is streamed from memory once and stays in L1 while it meets every activation row.
#[inline(always)]
fn for_each_output<R>(dst: &mut DstView<'_>, row: impl Fn(usize) -> R, dot: impl Fn(&R, usize) -> f32) {
    let rows = dst.weight_rows();
    let r0 = rows.start;
    for i in rows {
        let wr = row(i);
        for j in dst.act_rows() {
            let v = dot(&wr, j);
            dst.row_mut(j)[i - r0] = v;
        }
    }
}

/// The portable dot-product kernel (ggml's scalar `vec_dot`s); the SIMD levels use tiles.
fn mul_mat_vec_portable(w: &Weights<'_>, acts: &Acts<'_>, q: &QuantizedActs, dst: &mut DstView<'_>) {
    match w.wtype {
        WType::F32 => for_each_output(dst, |i| w.row_f32(i), |wr, j| dot_f32_portable(wr, acts.row(j))),
        WType::F16 => for_each_output(dst, |i| w.row_f16(i), |wr, j| quant::f16::dot_f16_f32_portable(wr, acts.row(j))),
        WType::Q4_0 => for_each_output(dst, |i| blocks_from_bytes::<BlockQ4_0>(w.row(i)), |wr, j| q4_0::vec_dot_portable(wr, q.q8_0_row(j))),
        WType::Q4_1 => for_each_output(dst, |i| blocks_from_bytes::<BlockQ4_1>(w.row(i)), |wr, j| q4_1::vec_dot_portable(wr, q.q8_1_row(j))),
        WType::Q8_0 => for_each_output(dst, |i| blocks_from_bytes::<BlockQ8_0>(w.row(i)), |wr, j| q8_0::vec_dot_portable(wr, q.q8_0_row(j))),
    }
}

fn check_shapes(w: &Weights<'_>, acts: &Acts<'_>, dst: &DstView<'_>) {
    assert_eq!(w.k, acts.k, "weights and activations disagree on k");
    assert_eq!(dst.n, acts.n, "dst and activations disagree on n");
    assert!(dst.rows.end <= w.rows, "dst covers weight rows {:?} but there are {}", dst.rows, w.rows);
}

