//! The operands of a matrix product as views over plain row-major memory: the weights
//! ([`Weights`]), the f32 activations ([`Acts`]) and the outputs one worker writes ([`DstView`]).
//!
//! They sit at the bottom of `tiles`: every other file reads them (the dispatch, the sgemm
//! path, the prepared activations, the tile walk and each ISA family), and they read nothing of
//! `tiles` back, so a kernel can take an operand without importing the dispatch that calls it.
//! Fields and row accessors are `pub(super)`, seen by `tiles` and its kernels only: the kernels
//! index them directly; callers outside `tiles` (the op's products) go through the checked
//! constructors and the splitting methods.

use std::marker::PhantomData;
use std::ops::Range;

use crate::cpu_features::SimdLevel;
use crate::quant::{QuantBlock, WType};
#[cfg(doc)]
use crate::quant::blocks_from_bytes;

/// A weight matrix: `rows` rows of `k` values of type `wtype`, row `i` starting at byte
/// `i * row_stride` of `data` (ggml's `nb[1]`, so views and padded rows work).
#[derive(Clone, Copy, Debug)]
pub struct Weights<'a> {
    pub(super) data: &'a [u8],
    pub(super) wtype: WType,
    pub(super) k: usize,
    pub(super) row_stride: usize,
    pub(super) rows: usize,
    /// `wtype.row_bytes(k)`, computed once: the tile walkers look rows up per tile, and the
    /// division in `row_bytes` showed in profiles (~1.6% of whisper's instructions)
    row_bytes: usize,
    /// Q6_K: the 2026 revision's lane split of the offset (`CpuOrder::q6k_offset_per_subblock`),
    /// which only ggml-cpu's AVX2 kernel has (its NEON and generic kernels see integer totals).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(super) q6k_per_subblock: bool,
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
        Weights { data, wtype, k, row_stride, rows, row_bytes: rb, q6k_per_subblock: false }
    }

    /// The same weights, computed in the float order of the revision `order` describes (where
    /// ggml-cpu's kernels for this type differ between revisions).
    pub fn in_order(mut self, order: crate::CpuOrder) -> Self {
        self.q6k_per_subblock = order.q6k_offset_per_subblock;
        self
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

    pub(super) fn row(&self, i: usize) -> &'a [u8] {
        let start = i * self.row_stride;
        &self.data[start..start + self.row_bytes]
    }

    /// The rows as blocks of `B` ([`blocks_from_bytes`] of every [`Self::row`]), their lengths
    /// and alignment checked once here rather than per row: the matrix x vector kernel's per-row
    /// checks were a fair part of its work per four rows of short (`k` = 640) rows.
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    #[inline(always)]
    pub(super) fn block_rows<B: QuantBlock>(&self) -> BlockRows<'a, B> {
        let (data, s, rb, rows) = (self.data, self.row_stride, self.row_bytes, self.rows);
        let align = std::mem::align_of::<B>();
        let fits = rows == 0 || (rows - 1).checked_mul(s).and_then(|e| e.checked_add(rb)).is_some_and(|e| e <= data.len());
        assert!(
            fits && rb.is_multiple_of(B::BYTES) && (data.as_ptr() as usize).is_multiple_of(align) && (rows <= 1 || s.is_multiple_of(align)),
            "cannot view {rows} rows of {rb} bytes, stride {s} in {} bytes as {}-byte blocks (length or alignment)",
            data.len(),
            B::BYTES
        );
        BlockRows { data, stride: s, rows, blocks: rb / B::BYTES, _b: PhantomData }
    }

    pub(super) fn row_f32(&self, i: usize) -> &'a [f32] {
        let b = self.row(i);
        // SAFETY: `new` checked 4-byte alignment of every row for F32 (the only caller), the
        // length is k * 4 bytes, and every bit pattern is a valid f32.
        unsafe { std::slice::from_raw_parts(b.as_ptr() as *const f32, self.k) }
    }

    pub(super) fn row_f16(&self, i: usize) -> &'a [u16] {
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
    pub(super) fn dequantize_row_at(&self, level: SimdLevel, i: usize, out: &mut [f32]) {
        self.wtype.to_f32_at(level, self.row(i), out)
    }
}

/// `n` activation rows of `k` f32, row `j` starting at element `j * stride` (ggml's `nb[1] / 4`).
#[derive(Clone, Copy, Debug)]
pub struct Acts<'a> {
    data: &'a [f32],
    pub(super) k: usize,
    pub(super) n: usize,
    pub(super) stride: usize,
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

/// [`Weights::block_rows`]: weight rows as blocks, a bounds check per call (NEON's matrix x
/// vector kernel).
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
pub(super) struct BlockRows<'a, B> {
    data: &'a [u8],
    stride: usize,
    rows: usize,
    blocks: usize,
    _b: PhantomData<&'a B>,
}

#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
impl<'a, B: QuantBlock> BlockRows<'a, B> {
    /// Rows `i..i + R`.
    #[inline(always)]
    pub(super) fn rows<const R: usize>(&self, i: usize) -> [&'a [B]; R] {
        assert!(i < self.rows && R <= self.rows - i, "weight rows {i}..{i} + {R} of {}", self.rows);
        std::array::from_fn(|r| {
            // SAFETY: row i + r < rows, whose `blocks` blocks lie inside `data`, start aligned for
            // B (the data's start and the stride are, or the row is the first) and are valid Bs
            // for any bytes (QuantBlock): checked by `Weights::block_rows`.
            unsafe { std::slice::from_raw_parts(self.data.as_ptr().add((i + r) * self.stride) as *const B, self.blocks) }
        })
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
    pub(super) acts: Range<usize>,
    pub(super) n: usize,
    pub(super) stride: usize,
    pub(super) rows: Range<usize>,
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
    pub(super) fn row_mut(&mut self, j: usize) -> &mut [f32] {
        assert!(self.acts.contains(&j), "activation row {j} outside the view's {}..{}", self.acts.start, self.acts.end);
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
    pub(super) fn col_ptr(&mut self, i: usize) -> *mut f32 {
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

/// Panics unless the operands of one product agree: `k`, `n`, and the view's weight rows.
pub(super) fn check_shapes(w: &Weights<'_>, acts: &Acts<'_>, dst: &DstView<'_>) {
    assert_eq!(w.k, acts.k, "weights and activations disagree on k");
    assert_eq!(dst.n, acts.n, "dst and activations disagree on n");
    assert!(dst.rows.end <= w.rows, "dst covers weight rows {:?} but there are {}", dst.rows, w.rows);
}
