//! The two MUL_MAT kernels of the CPU backend, over plain row-major memory.
//!
//! Shapes follow ggml: weights are `rows` rows of `k` values (`src0`), activations are `n` rows
//! of `k` f32 (`src1`), and the result has `n` rows of `rows` values (`dst[j][i] = w_i . a_j`).
//! Work is split across threads by weight rows: every entry point computes exactly the weight
//! rows covered by its [`DstView`], and [`DstView::split_at`] / [`DstView::split_even`] hand out
//! disjoint column ranges of one output buffer without unsafe code on the caller's side.
//!
//! * [`mul_mat_vec`] (small `n`): activations are quantized once to the weights' partner format
//!   ([`QuantizedActs`], shared read-only by all threads) and each output is one SIMD dot product,
//!   like ggml-cpu's `vec_dot` path. Memory-bound; the right choice for decoding.
//! * [`mul_mat_gemm`] (large `n`): weight rows are dequantized tile by tile into an f32 panel
//!   and multiplied with `matrixmultiply::sgemm`, which is compute-bound and amortizes the
//!   dequantization over all `n` activations. Activations stay f32, so this path is slightly
//!   more accurate than the quantized one.

use std::marker::PhantomData;
use std::ops::Range;

use crate::simd::cpu_features::{clamp_level, simd_level, SimdLevel};
use crate::simd::quant::{self, blocks_from_bytes, q4_0, q4_1, q8_0, q8_1, QK};
use crate::simd::quant::{BlockQ4_0, BlockQ4_1, BlockQ8_0, BlockQ8_1};

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

    fn row(&self, j: usize) -> &'a [f32] {
        &self.data[j * self.stride..j * self.stride + self.k]
    }
}

thread_local! {
    /// Row buffer for rounding activations to half precision.
    static HALVES: std::cell::RefCell<Vec<u16>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// How a caller runs `f(j)` for every row `j < n` (possibly in parallel, see
/// [`QuantizedActs::prepare_par`]).
pub type ParRows<'a> = &'a dyn Fn(usize, &(dyn Fn(usize) + Sync));

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum QKind {
    None,
    F16,
    Q8_0,
    Q8_1,
}

/// Activation rows converted to the partner format of a quantized weight type (Q8_0 for Q4_0 and
/// Q8_0 weights, Q8_1 for Q4_1), computed once per MUL_MAT and then read by every thread.
/// Keeps its buffers between calls so steady-state inference does not allocate.
#[derive(Debug)]
pub struct QuantizedActs {
    q8_0: Vec<BlockQ8_0>,
    q8_1: Vec<BlockQ8_1>,
    /// Block scales (and Q8_1 sums) as f32, block-major (`[b * n + j]`) for the tile kernels.
    d: Vec<f32>,
    s: Vec<f32>,
    /// For F16 weights: the activations rounded to half precision (ggml's F16 partner format),
    /// kept widened as f32 so the kernels load them directly; `n` rows of `k`.
    h: Vec<f32>,
    /// x86 with AVX-512: Q8_0 blocks' 4-byte sums times -8 (Q4_0 weights) or -128 (Q8_0), the
    /// start values of `vpdpbusd` over unsigned weight bytes (see `quant::tile_avx512`).
    #[cfg(target_arch = "x86_64")]
    off: Vec<[i32; 8]>,
    /// Row `j` of `h` starts at `h_off + j * h_stride` (64-byte aligned rows).
    h_off: usize,
    h_stride: usize,
    kind: QKind,
    k: usize,
    n: usize,
}

impl Default for QuantizedActs {
    fn default() -> Self {
        Self::new()
    }
}

impl QuantizedActs {
    pub fn new() -> Self {
        QuantizedActs {
            q8_0: Vec::new(),
            q8_1: Vec::new(),
            d: Vec::new(),
            s: Vec::new(),
            h: Vec::new(),
            #[cfg(target_arch = "x86_64")]
            off: Vec::new(),
            h_off: 0,
            h_stride: 0,
            kind: QKind::None,
            k: 0,
            n: 0,
        }
    }

    /// Converts `acts` to `wtype`'s partner format: Q8_0 / Q8_1 blocks for quantized weights,
    /// half-rounded values for F16 weights; F32 weights read the activations as they are.
    pub fn prepare(&mut self, wtype: WType, acts: &Acts<'_>) {
        self.prepare_at(simd_level(), wtype, acts)
    }

    /// [`Self::prepare`] on an explicit kernel level (each level converts as ggml-cpu does on
    /// that kind of CPU).
    pub fn prepare_at(&mut self, level: SimdLevel, wtype: WType, acts: &Acts<'_>) {
        self.prepare_par(level, wtype, acts, &|n, f| (0..n).for_each(f));
    }

    /// [`Self::prepare_at`] with the rows converted through `par(n, f)`, which must call `f(j)`
    /// once for every `j < n`, in any order and on any threads (a prompt's activations are as
    /// much work as a small matrix product, so the caller spreads them over its thread pool).
    pub fn prepare_par(&mut self, level: SimdLevel, wtype: WType, acts: &Acts<'_>, par: ParRows<'_>) {
        let (k, n) = (acts.k, acts.n);
        self.k = k;
        self.n = n;
        /// Converts row `j` of `acts` into `out`'s `j`-th chunk of `width` items, rows in parallel.
        fn rows<T: Send>(out: &mut [T], width: usize, n: usize, par: ParRows<'_>, f: impl Fn(usize, &mut [T]) + Sync) {
            let slots: Vec<parking_lot::Mutex<&mut [T]>> = out.chunks_exact_mut(width.max(1)).take(n).map(parking_lot::Mutex::new).collect();
            par(slots.len(), &|j| f(j, &mut slots[j].lock()));
        }
        match wtype {
            WType::F32 => self.kind = QKind::None,
            WType::F16 => {
                self.kind = QKind::F16;
                // rows start on 64-byte boundaries (stride rounded up to 16 floats): the AVX-512
                // tiles load whole cache lines, and split-line loads slowed whisper's attention
                let hs = k.next_multiple_of(16);
                self.h.resize(n * hs + 15, 0.0);
                self.h_off = (16 - (self.h.as_ptr() as usize / 4) % 16) % 16;
                self.h_stride = hs;
                let off = self.h_off;
                rows(&mut self.h[off..], hs, n, par, |j, out| quant::f16::round_f16_slice_at(level, acts.row(j), &mut out[..k]));
            }
            WType::Q4_0 | WType::Q8_0 => {
                assert!(k.is_multiple_of(QK), "k = {k} is not a multiple of {QK}");
                self.kind = QKind::Q8_0;
                let nb = k / QK;
                self.q8_0.resize(nb * n, BlockQ8_0::default());
                rows(&mut self.q8_0, nb, n, par, |j, out| q8_0::quantize_row_at(level, acts.row(j), out));
                self.d.resize(nb * n, 0.0);
                for (i, b) in self.q8_0.iter().enumerate() {
                    self.d[(i % nb) * n + i / nb] = quant::f16::fp16_to_fp32(b.d);
                }
                #[cfg(target_arch = "x86_64")]
                if clamp_level(level) == SimdLevel::Avx2 && crate::simd::cpu_features::has_avx512() {
                    let off = if wtype == WType::Q4_0 { -8 } else { -128 };
                    quant::tile_avx512::offsets(self.q8_0.iter().map(|b| b.qs), off, &mut self.off);
                }
            }
            WType::Q4_1 => {
                assert!(k.is_multiple_of(QK), "k = {k} is not a multiple of {QK}");
                self.kind = QKind::Q8_1;
                let nb = k / QK;
                self.q8_1.resize(nb * n, BlockQ8_1::default());
                rows(&mut self.q8_1, nb, n, par, |j, out| q8_1::quantize_row_at(level, acts.row(j), out));
                self.d.resize(nb * n, 0.0);
                self.s.resize(nb * n, 0.0);
                for (i, b) in self.q8_1.iter().enumerate() {
                    self.d[(i % nb) * n + i / nb] = quant::f16::fp16_to_fp32(b.d);
                    self.s[(i % nb) * n + i / nb] = quant::f16::fp16_to_fp32(b.s);
                }
            }
        }
    }

    fn check(&self, kind: QKind, acts: &Acts<'_>) {
        assert!(
            self.kind == kind && self.k == acts.k && self.n == acts.n,
            "QuantizedActs not prepared for this weight type / activation shape"
        );
    }

    fn q8_0_row(&self, j: usize) -> &[BlockQ8_0] {
        let nb = self.k / QK;
        &self.q8_0[j * nb..(j + 1) * nb]
    }

    fn q8_1_row(&self, j: usize) -> &[BlockQ8_1] {
        let nb = self.k / QK;
        &self.q8_1[j * nb..(j + 1) * nb]
    }

    fn h_row(&self, j: usize) -> &[f32] {
        let start = self.h_off + j * self.h_stride;
        &self.h[start..start + self.k]
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn tile_rows<'q, A: quant::QuantBlock>(&'q self, blocks: &'q [A]) -> quant::ActRows<'q, A> {
        quant::ActRows { blocks, d: &self.d, s: &self.s, nb: self.k / QK, n: self.n }
    }
}

/// Mutable view of the output columns (weight rows) one worker computes.
///
/// Element (activation `j`, weight row `i`) lives at `j * stride + (i - first)` from the start
/// of the buffer the view was made from. Splitting by weight rows yields views that never share
/// an element, so they can be sent to different threads even though their memory interleaves.
#[derive(Debug)]
pub struct DstView<'a> {
    /// Element (0, rows.start).
    ptr: *mut f32,
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
        DstView { ptr: data.as_mut_ptr(), n, stride, rows, _borrow: PhantomData }
    }

    /// Weight rows (= output columns) this view covers.
    pub fn weight_rows(&self) -> Range<usize> {
        self.rows.clone()
    }

    /// Number of activation rows.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Splits into `[start, row)` and `[row, end)`.
    pub fn split_at(self, row: usize) -> (DstView<'a>, DstView<'a>) {
        assert!(self.rows.contains(&row) || row == self.rows.end, "split point outside the view");
        let right_ptr = self.ptr.wrapping_add(row - self.rows.start);
        let left = DstView { ptr: self.ptr, n: self.n, stride: self.stride, rows: self.rows.start..row, _borrow: PhantomData };
        let right = DstView { ptr: right_ptr, n: self.n, stride: self.stride, rows: row..self.rows.end, _borrow: PhantomData };
        (left, right)
    }

    /// Splits into `parts` views of nearly equal width whose boundaries are multiples of
    /// `multiple` weight rows (relative to the view start), e.g. the gemm tile height, so no
    /// worker gets a ragged tile in the middle. Some views may be empty.
    pub fn split_even(self, parts: usize, multiple: usize) -> Vec<DstView<'a>> {
        let parts = parts.max(1);
        let multiple = multiple.max(1);
        let start = self.rows.start;
        let len = self.rows.len();
        let units = len.div_ceil(multiple);
        let mut out = Vec::with_capacity(parts);
        let mut rest = self;
        for p in 1..parts {
            // Non-decreasing in p, so each split point lies inside the remaining view.
            let at = start + (units * p / parts * multiple).min(len);
            let (left, right) = rest.split_at(at);
            out.push(left);
            rest = right;
        }
        out.push(rest);
        out
    }

    /// The covered columns of activation row `j`.
    fn row_mut(&mut self, j: usize) -> &mut [f32] {
        assert!(j < self.n);
        if self.rows.is_empty() {
            // The buffer may be empty (dangling pointer); no element to hand out.
            return &mut [];
        }
        // SAFETY: `for_rows` checked that the original slice holds element (j, c) for every
        // j < n and c < cols of the original view, and splitting only narrows the column range,
        // so this range is inside the borrowed buffer; no other view covers these columns, and
        // `&mut self` prevents a second live slice from this view.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(j * self.stride), self.rows.len()) }
    }

    /// Pointer to element (0, `i`) for sgemm.
    fn col_ptr(&mut self, i: usize) -> *mut f32 {
        debug_assert!(self.rows.contains(&i));
        self.ptr.wrapping_add(i - self.rows.start)
    }
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
        SimdLevel::Avx2 => unsafe { x86::dot_f32(a, b) },
        _ => dot_f32_portable(a, b),
    }
}

fn dot_f32_portable(a: &[f32], b: &[f32]) -> f32 {
    quant::f16::dot_lanes(a.len().min(b.len()), |i| a[i] * b[i])
}

/// Picks the kernel for `acts.n` activations: on AVX2 and NEON always ggml's dot products (tiled,
/// see `quant::tile` / `quant::tile_neon`), so results equal ggml-cpu's bit for bit; on the portable level dot products
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
/// stock's exact answers. Faster for F16 weights (whisper's encoder: ~1.2-1.3x ggml-cpu instead
/// of ~0.9-1.0x), but activations keep f32 sums in sgemm's order, so results are close to
/// ggml-cpu's (NMSE ~1e-3 at the logits), not identical. Read once.
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
        SimdLevel::Avx2 => unsafe { x86::mul_mat_tiles(w, acts, q, &mut dst) },
        #[cfg(target_arch = "aarch64")]
        SimdLevel::Neon => neon::mul_mat_tiles(w, acts, q, &mut dst),
        _ => mul_mat_vec_portable(w, acts, q, &mut dst),
    }
}

/// Shared loop of the dot-product kernel: weight row outer, activations inner, so each weight
/// row is streamed from memory once and stays in L1 while it meets every activation row.
#[inline(always)]
fn for_each_output<R>(dst: &mut DstView<'_>, n: usize, row: impl Fn(usize) -> R, dot: impl Fn(&R, usize) -> f32) {
    let rows = dst.weight_rows();
    let r0 = rows.start;
    for i in rows {
        let wr = row(i);
        for j in 0..n {
            let v = dot(&wr, j);
            dst.row_mut(j)[i - r0] = v;
        }
    }
}

/// The portable dot-product kernel (ggml's scalar `vec_dot`s); the SIMD levels use tiles.
fn mul_mat_vec_portable(w: &Weights<'_>, acts: &Acts<'_>, q: &QuantizedActs, dst: &mut DstView<'_>) {
    let n = acts.n;
    match w.wtype {
        WType::F32 => for_each_output(dst, n, |i| w.row_f32(i), |wr, j| dot_f32_portable(wr, acts.row(j))),
        WType::F16 => for_each_output(dst, n, |i| w.row_f16(i), |wr, j| quant::f16::dot_f16_f32_portable(wr, acts.row(j))),
        WType::Q4_0 => for_each_output(dst, n, |i| blocks_from_bytes::<BlockQ4_0>(w.row(i)), |wr, j| q4_0::vec_dot_portable(wr, q.q8_0_row(j))),
        WType::Q4_1 => for_each_output(dst, n, |i| blocks_from_bytes::<BlockQ4_1>(w.row(i)), |wr, j| q4_1::vec_dot_portable(wr, q.q8_1_row(j))),
        WType::Q8_0 => for_each_output(dst, n, |i| blocks_from_bytes::<BlockQ8_0>(w.row(i)), |wr, j| q8_0::vec_dot_portable(wr, q.q8_0_row(j))),
    }
}

/// Weight rows dequantized per sgemm call: a panel of about 256 KiB so it stays in L2 while
/// sgemm streams the activations past it; a multiple of 8 to match sgemm's register tile.
pub fn gemm_tile_rows(k: usize) -> usize {
    ((64 * 1024) / k.max(1)).clamp(8, 256) / 8 * 8
}

/// sgemm kernel for the weight rows of `dst`. `scratch` holds the dequantized panel; it is grown
/// once (to `gemm_tile_rows(k) * k` floats) and reused, so keep one per worker thread.
pub fn mul_mat_gemm(w: &Weights<'_>, acts: &Acts<'_>, dst: DstView<'_>, scratch: &mut Vec<f32>) {
    mul_mat_gemm_at(simd_level(), w, acts, dst, scratch)
}

/// [`mul_mat_gemm`] on an explicit kernel level (affects the dequantization only; sgemm does
/// its own CPU detection).
pub fn mul_mat_gemm_at(level: SimdLevel, w: &Weights<'_>, acts: &Acts<'_>, mut dst: DstView<'_>, scratch: &mut Vec<f32>) {
    check_shapes(w, acts, &dst);
    let rows = dst.weight_rows();
    let (k, n) = (w.k, acts.n);
    if n == 0 || rows.is_empty() {
        return;
    }
    if k == 0 {
        for j in 0..n {
            dst.row_mut(j).fill(0.0);
        }
        return;
    }
    let a = acts.data.as_ptr();
    let rsa = acts.stride as isize;
    let rsc = dst.stride as isize;
    if w.wtype == WType::F32 {
        // No conversion needed: sgemm reads the weight rows in place as B = W^T.
        let b = w.row_f32(rows.start).as_ptr();
        let c = dst.col_ptr(rows.start);
        // SAFETY: A = n x k activations inside `acts.data` (checked by Acts::new); B = k x cols
        // read at b + c*1 + i*(row_stride/4), i.e. rows rows.start..rows.end of the weights,
        // inside `w.data` (Weights::new checked length and 4-byte alignment, check_shapes checked
        // rows.end <= w.rows); C = n x cols written at element (j, i) of the view, inside the
        // borrowed dst buffer (DstView::for_rows) and not aliased by any other view or by A/B.
        unsafe {
            matrixmultiply::sgemm(
                n, k, rows.len(), 1.0,
                a, rsa, 1,
                b, 1, (w.row_stride / 4) as isize,
                0.0,
                c, rsc, 1,
            );
        }
        return;
    }
    let tile = gemm_tile_rows(k);
    if scratch.len() < tile * k {
        scratch.resize(tile * k, 0.0);
    }
    let mut t0 = rows.start;
    while t0 < rows.end {
        let t1 = (t0 + tile).min(rows.end);
        for i in t0..t1 {
            let off = (i - t0) * k;
            w.dequantize_row_at(level, i, &mut scratch[off..off + k]);
        }
        let c = dst.col_ptr(t0);
        // SAFETY: A as above; B = k x (t1 - t0) read from the panel at element c + i*k, with
        // (t1 - t0) * k <= scratch.len(); C = n x (t1 - t0) at columns t0..t1 of the view, inside
        // the borrowed dst buffer and disjoint from A, B and every other view.
        unsafe {
            matrixmultiply::sgemm(
                n, k, t1 - t0, 1.0,
                a, rsa, 1,
                scratch.as_ptr(), 1, k as isize,
                0.0,
                c, rsc, 1,
            );
        }
        t0 = t1;
    }
}

fn check_shapes(w: &Weights<'_>, acts: &Acts<'_>, dst: &DstView<'_>) {
    assert_eq!(w.k, acts.k, "weights and activations disagree on k");
    assert_eq!(dst.n, acts.n, "dst and activations disagree on n");
    assert!(dst.rows.end <= w.rows, "dst covers weight rows {:?} but there are {}", dst.rows, w.rows);
}

/// A register-tile kernel for the SIMD levels: the outputs of weight rows `i..i + R` against
/// activation rows `j..j + C`, computed together.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
trait Tiles {
    /// One weight row as the kernel reads it. Looked up once per row pair, not once per tile:
    /// per-tile lookups (slicing, block casts, array building) were a fifth of whisper's F16
    /// product instructions.
    type Row: Copy;
    fn w_row(&self, i: usize) -> Self::Row;
    /// # Safety
    /// The CPU must have the features the implementing kernel is compiled for.
    unsafe fn tile<const R: usize, const C: usize>(&self, w: [Self::Row; R], j: usize) -> [[f32; C]; R];
}

/// Fills `dst` tile by tile: weight rows in pairs and activation rows in fours, then the ragged
/// edges, over blocks of [`COL_BLOCK`] activation rows so that a block stays in cache while every
/// weight row of the chunk passes over it (one pass of all activations per row pair reloaded
/// them from L3 when they outgrow L2: whisper's 1500x1500 attention products). Four weight rows
/// per tile when decoding measured slower: the interleaved streams defeat the hardware
/// prefetcher even with software prefetch. Inlined into each level's `#[target_feature]` entry,
/// so the kernels compile with that level's instructions.
///
/// # Safety
/// As [`Tiles::tile`].
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
unsafe fn walk_tiles<K: Tiles>(k: &K, dst: &mut DstView<'_>) {
    let rows = dst.weight_rows();
    let n = dst.n();
    let mut j0 = 0;
    while j0 < n {
        let j1 = (j0 + COL_BLOCK).min(n);
        let mut i = rows.start;
        // SAFETY (walk_cols): passed on from this function's contract.
        while i + 2 <= rows.end {
            unsafe { walk_cols::<K, 2>(k, dst, i, j0..j1) };
            i += 2;
        }
        if i < rows.end {
            unsafe { walk_cols::<K, 1>(k, dst, i, j0..j1) };
        }
        j0 = j1;
    }
}

/// Activation rows per cache block of [`walk_tiles`]: with a chunk's 16 weight rows, 8 rows of
/// 1500 floats (48 KB) and 16 F16 weight rows (48 KB) stay in L2, and a quantized block in L1.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const COL_BLOCK: usize = 8;

/// # Safety
/// As [`Tiles::tile`].
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
unsafe fn walk_cols<K: Tiles, const R: usize>(k: &K, dst: &mut DstView<'_>, i: usize, cols: Range<usize>) {
    let mut w = [k.w_row(i); R];
    for (r, w) in w.iter_mut().enumerate().skip(1) {
        *w = k.w_row(i + r);
    }
    let mut j = cols.start;
    // SAFETY (tile calls): passed on from this function's contract.
    while j + 4 <= cols.end {
        put_tile(dst, i, j, unsafe { k.tile::<R, 4>(w, j) });
        j += 4;
    }
    match cols.end - j {
        3 => put_tile(dst, i, j, unsafe { k.tile::<R, 3>(w, j) }),
        2 => put_tile(dst, i, j, unsafe { k.tile::<R, 2>(w, j) }),
        1 => put_tile(dst, i, j, unsafe { k.tile::<R, 1>(w, j) }),
        _ => {}
    }
}

/// F16 / F32 weight rows `w(i)` against activation rows `a(j)` (already in ggml's partner
/// precision); each level implements [`Tiles`] for it with its float kernel.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
struct FloatTiles<'a, W> {
    w: W,
    /// Every activation row, sliced once per chunk rather than once per tile.
    a: Vec<&'a [f32]>,
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
impl<'a, W> FloatTiles<'a, W> {
    fn new(w: W, n: usize, a: impl Fn(usize) -> &'a [f32]) -> Self {
        FloatTiles { w, a: (0..n).map(a).collect() }
    }

    /// Activation rows `j..j + C`.
    #[inline(always)]
    fn acts<const C: usize>(&self, j: usize) -> [&'a [f32]; C] {
        let mut a = [self.a[j]; C];
        a.copy_from_slice(&self.a[j..j + C]);
        a
    }
}

/// Stores a finished tile: output (weight row `i + r`, activation `j + c`).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
fn put_tile<const R: usize, const C: usize>(dst: &mut DstView<'_>, i: usize, j: usize, out: [[f32; C]; R]) {
    let r0 = dst.rows.start;
    for (c, col) in (j..j + C).enumerate() {
        let row = dst.row_mut(col);
        for r in 0..R {
            row[i + r - r0] = out[r][c];
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::*;
    use crate::simd::cpu_features::has_avx512;
    use crate::simd::quant::{float_tile, float_tile_avx512, tile, tile_avx512};
    use crate::simd::quant::x86_util::{hsum_ps, load8_f32};
    use std::arch::x86_64::*;

    /// Every output of `dst` with ggml-cpu's AVX2 arithmetic, in register tiles of weight rows
    /// x activation rows (see `quant::tile`).
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn mul_mat_tiles(w: &Weights<'_>, acts: &Acts<'_>, q: &QuantizedActs, dst: &mut DstView<'_>) {
        let wide = crate::simd::cpu_features::has_avx512();
        match w.wtype {
            // SAFETY (wide_rows): has_avx512 detected AVX-512 F/BW/VL/DQ/VNNI at runtime.
            WType::Q4_0 if wide => unsafe { wide_rows::<tile::Q4_0>(w, &q.tile_rows(&q.q8_0), &q.off, dst) },
            WType::Q4_1 if wide => unsafe { wide_rows::<tile::Q4_1>(w, &q.tile_rows(&q.q8_1), &[], dst) },
            WType::Q8_0 if wide => unsafe { wide_rows::<tile::Q8_0>(w, &q.tile_rows(&q.q8_0), &q.off, dst) },
            WType::Q4_0 => quant_rows::<tile::Q4_0>(w, &q.tile_rows(&q.q8_0), dst),
            WType::Q4_1 => quant_rows::<tile::Q4_1>(w, &q.tile_rows(&q.q8_1), dst),
            WType::Q8_0 => quant_rows::<tile::Q8_0>(w, &q.tile_rows(&q.q8_0), dst),
            WType::F16 if has_avx512() => {
                // SAFETY: AVX-512 was detected at runtime (has_avx512); AVX2/FMA/F16C by this
                // function's contract.
                unsafe { float_rows_avx512(|i| w.row_f16(i), |j| q.h_row(j), dst) }
            }
            // SAFETY: as above.
            WType::F32 if has_avx512() => unsafe { float_rows_avx512(|i| w.row_f32(i), |j| acts.row(j), dst) },
            WType::F16 => float_rows(|i| w.row_f16(i), |j| q.h_row(j), dst),
            WType::F32 => float_rows(|i| w.row_f32(i), |j| acts.row(j), dst),
        }
    }

    /// F16 / F32 outputs of `dst` with the AVX-512 kernels (same values, see
    /// `quant::float_tile_avx512`).
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW/VL/DQ (`has_avx512`).
    #[inline(never)] // as quant_rows
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
    unsafe fn float_rows_avx512<'w, 'a, E: float_tile_avx512::Elem512 + 'w>(w: impl Fn(usize) -> &'w [E], a: impl Fn(usize) -> &'a [f32], dst: &mut DstView<'_>) {
        let rows = dst.weight_rows();
        let wr: Vec<&[E]> = rows.clone().map(w).collect();
        let ar: Vec<&[f32]> = (0..dst.n()).map(a).collect();
        // SAFETY: features by this function's contract.
        unsafe { float_tile_avx512::float_rows(&wr, &ar, |j, r, v| {
            // fixed-size copies for the usual lengths: a variable-length copy of 2 values went
            // through memcpy, 13% of whisper's KQ
            let row = &mut dst.row_mut(j)[r..r + v.len()];
            match (<&mut [f32; 2]>::try_from(&mut *row), <&[f32; 2]>::try_from(v)) {
                (Ok(d), Ok(s)) => *d = *s,
                _ => match (<&mut [f32; 8]>::try_from(&mut *row), <&[f32; 8]>::try_from(v)) {
                    (Ok(d), Ok(s)) => *d = *s,
                    _ => row.copy_from_slice(v),
                },
            }
        }) }
    }

    /// Q4_0 / Q4_1 / Q8_0 weights against their prepared partner-format activations.
    struct QuantTiles<'a, F: tile::Format> {
        w: &'a Weights<'a>,
        a: &'a tile::ActRows<'a, F::A>,
    }

    impl<'q, F: tile::Format> Tiles for QuantTiles<'q, F> {
        type Row = &'q [F::W];
        #[inline(always)]
        fn w_row(&self, i: usize) -> &'q [F::W] {
            blocks_from_bytes::<F::W>(self.w.row(i))
        }
        #[inline(always)]
        unsafe fn tile<const R: usize, const C: usize>(&self, w: [&'q [F::W]; R], j: usize) -> [[f32; C]; R] {
            // SAFETY: AVX2/FMA/F16C by this function's contract; the kernel checks that columns
            // j..j + C exist and that the rows hold a.nb blocks.
            unsafe { tile::quant_tile::<F, R, C>(w, self.a, j) }
        }
    }

    impl<'w, 'a, E: float_tile::FloatElem + 'w, W: Fn(usize) -> &'w [E]> Tiles for FloatTiles<'a, W> {
        type Row = &'w [E];
        #[inline(always)]
        fn w_row(&self, i: usize) -> &'w [E] {
            (self.w)(i)
        }
        #[inline(always)]
        unsafe fn tile<const R: usize, const C: usize>(&self, w: [&'w [E]; R], j: usize) -> [[f32; C]; R] {
            // SAFETY: AVX2/FMA/F16C by this function's contract; the kernel checks that all rows
            // have the same length.
            unsafe { float_tile::float_tile::<E, R, C>(w, self.acts(j)) }
        }
    }

    #[inline(never)] // one call per chunk; keeps each format's kernel visible to profilers
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn quant_rows<F: tile::Format>(w: &Weights<'_>, a: &tile::ActRows<'_, F::A>, dst: &mut DstView<'_>) {
        // SAFETY: this function is compiled for and only entered with AVX2/FMA/F16C.
        unsafe { walk_tiles(&QuantTiles::<F> { w, a }, dst) }
    }

    /// Weight rows per [`tile_avx512::Panel`]: 16 rows of up to 48 blocks unpack to 48 KiB.
    const PANEL_ROWS: usize = 16;
    /// Row pairs x activation columns of one 512-bit register tile.
    const WIDE_P: usize = 2;
    const WIDE_C: usize = 4;

    thread_local! {
        /// Each worker's unpacked weight panel, reused across chunks and products.
        static PANEL: std::cell::RefCell<tile_avx512::Panel> = const { std::cell::RefCell::new(tile_avx512::Panel::new()) };
    }

    /// The rows of `dst` with the AVX-512 kernels: one activation column streams the weights
    /// through [`tile_avx512::matvec`]; batches unpack [`PANEL_ROWS`] rows at a time into a panel
    /// and walk it in tiles of [`WIDE_P`] row pairs x [`WIDE_C`] columns. `off` is the prepared
    /// activations' `vpdpbusd` start values (empty for Q4_1).
    ///
    /// # Safety
    /// AVX-512 F/BW/VL/DQ/VNNI must be available (AVX2/FMA/F16C too).
    #[inline(never)] // one call per chunk; keeps each format's kernel visible to profilers
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    pub(super) unsafe fn wide_rows<F: tile_avx512::Wide>(w: &Weights<'_>, a: &tile::ActRows<'_, F::A>, off: &[[i32; 8]], dst: &mut DstView<'_>) {
        let rows = dst.weight_rows();
        let n = dst.n();
        if rows.is_empty() || n == 0 {
            return;
        }
        let r0 = rows.start;
        let mut wr: [&[F::W]; PANEL_ROWS] = [&[]; PANEL_ROWS];
        if n == 1 {
            let out = dst.row_mut(0);
            let mut i = rows.start;
            while i < rows.end {
                let m = (rows.end - i).min(PANEL_ROWS);
                for (r, slot) in wr[..m].iter_mut().enumerate() {
                    *slot = blocks_from_bytes::<F::W>(w.row(i + r));
                }
                // SAFETY: CPU features by this function's contract; shapes are checked inside.
                unsafe { tile_avx512::matvec::<F, 4>(&wr[..m], a, off, &mut out[i - r0..i - r0 + m]) };
                i += m;
            }
            return;
        }
        PANEL.with(|panel| {
            let mut panel = panel.borrow_mut();
            let mut i = rows.start;
            while i < rows.end {
                let m = (rows.end - i).min(PANEL_ROWS);
                for (r, slot) in wr[..m].iter_mut().enumerate() {
                    *slot = blocks_from_bytes::<F::W>(w.row(i + r));
                }
                // SAFETY (prepare, tiles): CPU features by this function's contract; shapes are
                // checked inside.
                unsafe { panel.prepare::<F>(&wr[..m], a) };
                let pairs = panel.pairs();
                let mut j = 0;
                while j + WIDE_C <= n {
                    unsafe { wide_cols::<F, WIDE_C>(&panel, a, off, pairs, i, j, m, dst) };
                    j += WIDE_C;
                }
                match n - j {
                    3 => unsafe { wide_cols::<F, 3>(&panel, a, off, pairs, i, j, m, dst) },
                    2 => unsafe { wide_cols::<F, 2>(&panel, a, off, pairs, i, j, m, dst) },
                    1 => unsafe { wide_cols::<F, 1>(&panel, a, off, pairs, i, j, m, dst) },
                    _ => {}
                }
                i += m;
            }
        });
    }

    /// Columns `j..j + C` of every row pair of `panel` (rows `i..i + m` of `dst`).
    ///
    /// # Safety
    /// As [`wide_rows`].
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn wide_cols<F: tile_avx512::Wide, const C: usize>(
        panel: &tile_avx512::Panel,
        a: &tile::ActRows<'_, F::A>,
        off: &[[i32; 8]],
        pairs: usize,
        i: usize,
        j: usize,
        m: usize,
        dst: &mut DstView<'_>,
    ) {
        let mut p = 0;
        // SAFETY (tile calls): passed on from this function's contract.
        while p + WIDE_P <= pairs {
            let t = unsafe { panel.tile::<F, WIDE_P, C>(p, a, off, j) };
            put_pairs(dst, i, j, m, p, &t);
            p += WIDE_P;
        }
        while p < pairs {
            let t = unsafe { panel.tile::<F, 1, C>(p, a, off, j) };
            put_pairs(dst, i, j, m, p, &t);
            p += 1;
        }
    }

    /// Stores a panel tile: `t[p][h][c]` is weight row `i + 2 (p0 + p) + h` (when below `m`
    /// rows of the panel), activation `j + c`.
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // c, p, h name the output as in the kernel
    fn put_pairs<const P: usize, const C: usize>(dst: &mut DstView<'_>, i: usize, j: usize, m: usize, p0: usize, t: &[[[f32; C]; 2]; P]) {
        let base = i - dst.rows.start;
        for c in 0..C {
            let row = dst.row_mut(j + c);
            for p in 0..P {
                for h in 0..2 {
                    let r = 2 * (p0 + p) + h;
                    if r < m {
                        row[base + r] = t[p][h][c];
                    }
                }
            }
        }
    }

    #[inline(never)] // as quant_rows
    #[target_feature(enable = "avx2,fma,f16c")]
    fn float_rows<'w, 'a, E: float_tile::FloatElem + 'w>(w: impl Fn(usize) -> &'w [E], a: impl Fn(usize) -> &'a [f32], dst: &mut DstView<'_>) {
        let tiles = FloatTiles::new(w, dst.n(), a);
        // SAFETY: as quant_rows.
        unsafe { walk_tiles(&tiles, dst) }
    }

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
}

#[cfg(target_arch = "aarch64")]
mod neon {
    use super::*;
    use crate::simd::quant::tile_neon as tile;

    /// Every output of `dst` with ggml-cpu's NEON arithmetic, in register tiles of weight rows x
    /// activation rows (see `quant::tile_neon`); `sdot` for the integer sums where the CPU has
    /// it (same values without).
    pub(super) fn mul_mat_tiles(w: &Weights<'_>, acts: &Acts<'_>, q: &QuantizedActs, dst: &mut DstView<'_>) {
        if crate::simd::cpu_features::has_dotprod() {
            // SAFETY: dotprod was detected at runtime.
            unsafe { tiles_sdot(w, acts, q, dst) }
        } else {
            // SAFETY: DOT = false needs nothing beyond NEON.
            unsafe { tiles::<false>(w, acts, q, dst) }
        }
    }

    /// # Safety
    /// The CPU must have the dot product extension.
    #[target_feature(enable = "dotprod")]
    unsafe fn tiles_sdot(w: &Weights<'_>, acts: &Acts<'_>, q: &QuantizedActs, dst: &mut DstView<'_>) {
        // SAFETY: this function requires dotprod.
        unsafe { tiles::<true>(w, acts, q, dst) }
    }

    /// # Safety
    /// With `DOT`, the CPU must have the dot product extension.
    #[inline(always)]
    unsafe fn tiles<const DOT: bool>(w: &Weights<'_>, acts: &Acts<'_>, q: &QuantizedActs, dst: &mut DstView<'_>) {
        // SAFETY (quant_rows): passed on from this function's contract.
        match w.wtype {
            WType::Q4_0 => unsafe { walk_tiles(&QuantTiles::<tile::Q4_0, DOT> { w, a: &q.tile_rows(&q.q8_0) }, dst) },
            WType::Q4_1 => unsafe { walk_tiles(&QuantTiles::<tile::Q4_1, DOT> { w, a: &q.tile_rows(&q.q8_1) }, dst) },
            WType::Q8_0 => unsafe { walk_tiles(&QuantTiles::<tile::Q8_0, DOT> { w, a: &q.tile_rows(&q.q8_0) }, dst) },
            // SAFETY: FEAT_FP16 was detected at runtime.
            WType::F16 if crate::simd::cpu_features::has_fp16() => unsafe { f16_rows_hp(w, q, dst) },
            // SAFETY (walk_tiles): the float kernels need nothing beyond NEON.
            WType::F16 => unsafe { walk_tiles(&FloatTiles::new(|i| w.row_f16(i), dst.n(), |j| q.h_row(j)), dst) },
            WType::F32 => unsafe { walk_tiles(&FloatTiles::new(|i| w.row_f32(i), dst.n(), |j| acts.row(j)), dst) },
        }
    }

    /// F16 products in half precision, as ggml-cpu built with `+fp16` (see `tile::f16_tile_hp`).
    ///
    /// # Safety
    /// The CPU must have FEAT_FP16.
    #[target_feature(enable = "fp16")]
    unsafe fn f16_rows_hp(w: &Weights<'_>, q: &QuantizedActs, dst: &mut DstView<'_>) {
        let rows = dst.weight_rows();
        let n = dst.n();
        let mut i = rows.start;
        // SAFETY (tile calls): FEAT_FP16 by this function's contract; shapes are checked inside.
        while i + 2 <= rows.end {
            let wr = [w.row_f16(i), w.row_f16(i + 1)];
            let mut j = 0;
            while j + 2 <= n {
                put_tile(dst, i, j, unsafe { tile::f16_tile_hp::<2, 2>(wr, [q.h_row(j), q.h_row(j + 1)]) });
                j += 2;
            }
            if j < n {
                put_tile(dst, i, j, unsafe { tile::f16_tile_hp::<2, 1>(wr, [q.h_row(j)]) });
            }
            i += 2;
        }
        if i < rows.end {
            for j in 0..n {
                put_tile(dst, i, j, unsafe { tile::f16_tile_hp::<1, 1>([w.row_f16(i)], [q.h_row(j)]) });
            }
        }
    }

    /// Q4_0 / Q4_1 / Q8_0 weights against their prepared partner-format activations, `sdot`
    /// when `DOT`. (The AVX2 tile shape; not tuned on a phone yet.)
    struct QuantTiles<'a, F: tile::Format, const DOT: bool> {
        w: &'a Weights<'a>,
        a: &'a quant::ActRows<'a, F::A>,
    }

    impl<'q, F: tile::Format, const DOT: bool> Tiles for QuantTiles<'q, F, DOT> {
        type Row = &'q [F::W];
        #[inline(always)]
        fn w_row(&self, i: usize) -> &'q [F::W] {
            blocks_from_bytes::<F::W>(self.w.row(i))
        }
        #[inline(always)]
        unsafe fn tile<const R: usize, const C: usize>(&self, w: [&'q [F::W]; R], j: usize) -> [[f32; C]; R] {
            // SAFETY: dotprod when DOT, by this function's contract; the kernel checks that
            // columns j..j + C exist and that the rows hold a.nb blocks.
            unsafe { tile::quant_tile::<F, DOT, R, C>(w, self.a, j) }
        }
    }

    impl<'w, 'a, E: tile::FloatElem + 'w, W: Fn(usize) -> &'w [E]> Tiles for FloatTiles<'a, W> {
        type Row = &'w [E];
        #[inline(always)]
        fn w_row(&self, i: usize) -> &'w [E] {
            (self.w)(i)
        }
        #[inline(always)]
        unsafe fn tile<const R: usize, const C: usize>(&self, w: [&'w [E]; R], j: usize) -> [[f32; C]; R] {
            tile::float_tile::<E, R, C>(w, self.acts(j))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simd::cpu_features::available_levels;
    use crate::simd::quant::f16::{fp16_to_fp32, fp32_to_fp16};
    use crate::simd::quant::test_util::{nmse, Lcg};
    use crate::simd::quant::{blocks_as_bytes, QuantBlock};

    const TYPES: [WType; 5] = [WType::F32, WType::F16, WType::Q4_0, WType::Q4_1, WType::Q8_0];

    /// Weight bytes in a u32-backed buffer (so 4-byte aligned), rows padded by `pad` bytes.
    struct TestWeights {
        buf: Vec<u32>,
        wtype: WType,
        k: usize,
        rows: usize,
        stride: usize,
        /// The exact f32 values the weights represent (portable dequantization).
        deq: Vec<f32>,
    }

    impl TestWeights {
        fn new(wtype: WType, k: usize, rows: usize, rng: &mut Lcg) -> Self {
            let rb = wtype.row_bytes(k);
            let stride = (rb + 4).div_ceil(4) * 4; // padded, keeps 4-byte alignment for F32
            let mut bytes = vec![0xAAu8; stride * rows];
            let mut deq = vec![0f32; k * rows];
            for i in 0..rows {
                let src: Vec<f32> = (0..k).map(|_| rng.next_gauss() + if i % 3 == 0 { 0.2 } else { 0.0 }).collect();
                let row = &mut bytes[i * stride..i * stride + rb];
                let out = &mut deq[i * k..(i + 1) * k];
                fn put<B: QuantBlock>(row: &mut [u8], b: &[B]) {
                    row.copy_from_slice(blocks_as_bytes(b));
                }
                match wtype {
                    WType::F32 => {
                        for (c, v) in src.iter().enumerate() {
                            row[c * 4..c * 4 + 4].copy_from_slice(&v.to_le_bytes());
                        }
                        out.copy_from_slice(&src);
                    }
                    WType::F16 => {
                        for (c, v) in src.iter().enumerate() {
                            let h = fp32_to_fp16(*v);
                            row[c * 2..c * 2 + 2].copy_from_slice(&h.to_le_bytes());
                            out[c] = fp16_to_fp32(h);
                        }
                    }
                    WType::Q4_0 => {
                        let mut b = vec![BlockQ4_0::default(); k / QK];
                        q4_0::quantize_row(&src, &mut b);
                        q4_0::dequantize_row_at(SimdLevel::Portable, &b, out);
                        put(row, &b);
                    }
                    WType::Q4_1 => {
                        let mut b = vec![BlockQ4_1::default(); k / QK];
                        q4_1::quantize_row(&src, &mut b);
                        q4_1::dequantize_row_at(SimdLevel::Portable, &b, out);
                        put(row, &b);
                    }
                    WType::Q8_0 => {
                        let mut b = vec![BlockQ8_0::default(); k / QK];
                        q8_0::quantize_row_at(SimdLevel::Portable, &src, &mut b);
                        q8_0::dequantize_row_at(SimdLevel::Portable, &b, out);
                        put(row, &b);
                    }
                }
            }
            let mut buf = vec![0u32; bytes.len().div_ceil(4)];
            // SAFETY: test-only byte view of an initialized u32 buffer of at least bytes.len() bytes.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.as_mut_ptr() as *mut u8, bytes.len()) };
            TestWeights { buf, wtype, k, rows, stride, deq }
        }

        fn weights(&self) -> Weights<'_> {
            // SAFETY: test-only byte view of the initialized u32 buffer.
            let bytes = unsafe { std::slice::from_raw_parts(self.buf.as_ptr() as *const u8, self.buf.len() * 4) };
            Weights::new(bytes, self.wtype, self.k, self.stride, self.rows)
        }

        /// dst[j][i] = deq_i . a_j in f64.
        fn reference(&self, acts: &[f32], astride: usize, n: usize) -> Vec<f32> {
            let mut out = vec![0f32; n * self.rows];
            for j in 0..n {
                let a = &acts[j * astride..j * astride + self.k];
                for i in 0..self.rows {
                    let w = &self.deq[i * self.k..(i + 1) * self.k];
                    out[j * self.rows + i] = w.iter().zip(a).map(|(&x, &y)| x as f64 * y as f64).sum::<f64>() as f32;
                }
            }
            out
        }
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Path {
        Vec(SimdLevel),
        Gemm(SimdLevel),
    }

    /// Runs one path into a padded dst (stride rows + 3, sentinel-filled), checks the padding is
    /// untouched and returns the dense n x rows result.
    fn run(path: Path, tw: &TestWeights, acts: &[f32], astride: usize, n: usize, threads: usize) -> Vec<f32> {
        let w = tw.weights();
        let a = Acts::new(acts, tw.k, n, astride);
        let dstride = tw.rows + 3;
        let mut dst = vec![f32::from_bits(0x7FC0_1234); n * dstride];
        let mut q = QuantizedActs::new();
        if let Path::Vec(level) = path {
            q.prepare_at(level, tw.wtype, &a);
        }
        let views = DstView::new(&mut dst, n, tw.rows, dstride).split_even(threads, gemm_tile_rows(tw.k));
        std::thread::scope(|s| {
            for view in views {
                let (w, a, q) = (&w, &a, &q);
                s.spawn(move || {
                    let mut scratch = Vec::new();
                    match path {
                        Path::Vec(level) => mul_mat_vec_at(level, w, a, q, view),
                        Path::Gemm(level) => mul_mat_gemm_at(level, w, a, view, &mut scratch),
                    }
                });
            }
        });
        let mut dense = Vec::with_capacity(n * tw.rows);
        for j in 0..n {
            dense.extend_from_slice(&dst[j * dstride..j * dstride + tw.rows]);
            for p in tw.rows..dstride {
                assert_eq!(dst[j * dstride + p].to_bits(), 0x7FC0_1234, "padding overwritten");
            }
        }
        dense
    }

    /// What the dot-product path computes exactly, in f64: the weight blocks against the
    /// activations as quantized by the partner format (including Q8_1's half-rounded `s`), plus
    /// the magnitude sum used to bound float rounding. Per output `(value, magnitude)`.
    /// What the dot-product path computes on `level` (whose activation quantizer and F16
    /// rounding follow ggml-cpu's on that level), in f64.
    fn quantized_reference(level: SimdLevel, tw: &TestWeights, acts: &[f32], astride: usize, n: usize) -> Vec<(f64, f64)> {
        let w = tw.weights();
        let a = Acts::new(acts, tw.k, n, astride);
        let mut q = QuantizedActs::new();
        q.prepare_at(level, tw.wtype, &a);
        let f16_acts = tw.wtype == WType::F16 && clamp_level(level) != SimdLevel::Portable;
        let h = |x: u16| fp16_to_fp32(x) as f64;
        let mut out = Vec::with_capacity(n * tw.rows);
        for j in 0..n {
            for i in 0..tw.rows {
                let (mut v, mut m) = (0f64, 0f64);
                match tw.wtype {
                    WType::F32 | WType::F16 => {
                        let wr = &tw.deq[i * tw.k..(i + 1) * tw.k];
                        let ar = if f16_acts { q.h_row(j) } else { a.row(j) };
                        for (&x, &y) in wr.iter().zip(ar) {
                            v += x as f64 * y as f64;
                            m += (x as f64 * y as f64).abs();
                        }
                    }
                    WType::Q4_0 => {
                        let wr: &[BlockQ4_0] = blocks_from_bytes(w.row(i));
                        for (bx, by) in wr.iter().zip(q.q8_0_row(j)) {
                            let (mut si, mut sa) = (0i64, 0i64);
                            for c in 0..32 {
                                let qx = ((bx.qs[c % 16] >> (4 * (c / 16))) & 15) as i64 - 8;
                                si += qx * by.qs[c] as i64;
                                sa += (qx * by.qs[c] as i64).abs();
                            }
                            v += h(bx.d) * h(by.d) * si as f64;
                            m += (h(bx.d) * h(by.d)).abs() * sa as f64;
                        }
                    }
                    WType::Q4_1 => {
                        let wr: &[BlockQ4_1] = blocks_from_bytes(w.row(i));
                        for (bx, by) in wr.iter().zip(q.q8_1_row(j)) {
                            let (mut si, mut sa) = (0i64, 0i64);
                            for c in 0..32 {
                                let qx = ((bx.qs[c % 16] >> (4 * (c / 16))) & 15) as i64;
                                si += qx * by.qs[c] as i64;
                                sa += (qx * by.qs[c] as i64).abs();
                            }
                            v += h(bx.d) * h(by.d) * si as f64 + h(bx.m) * h(by.s);
                            m += (h(bx.d) * h(by.d)).abs() * sa as f64 + (h(bx.m) * h(by.s)).abs();
                        }
                    }
                    WType::Q8_0 => {
                        let wr: &[BlockQ8_0] = blocks_from_bytes(w.row(i));
                        for (bx, by) in wr.iter().zip(q.q8_0_row(j)) {
                            let (mut si, mut sa) = (0i64, 0i64);
                            for c in 0..32 {
                                si += bx.qs[c] as i64 * by.qs[c] as i64;
                                sa += (bx.qs[c] as i64 * by.qs[c] as i64).abs();
                            }
                            v += h(bx.d) * h(by.d) * si as f64;
                            m += (h(bx.d) * h(by.d)).abs() * sa as f64;
                        }
                    }
                }
                out.push((v, m));
            }
        }
        out
    }

    /// Whether `level` accumulates F16 products in half precision (NEON with FEAT_FP16, as
    /// ggml-cpu built with `+fp16`).
    fn half_accumulation(level: SimdLevel, wtype: WType) -> bool {
        wtype == WType::F16 && clamp_level(level) == SimdLevel::Neon && crate::simd::cpu_features::has_fp16()
    }

    /// For each weight type and k: every path and level, every (rows, n) shape.
    ///
    /// Per output, the result must equal what the path is defined to compute up to f32
    /// rounding (dot path: weights x quantized activations; sgemm path: dequantized weights x f32
    /// activations), bounded by 2e-5 of the magnitude sum. Then the NMSE against the naive f32
    /// reference (dequantized weights x f32 activations) is taken over all outputs of the
    /// (type, k) group: a single output can be arbitrarily close to zero, which makes a
    /// per-output NMSE meaningless for rows = n = 1.
    fn check_all(ks: &[usize], rows_list: &[usize], ns: &[usize]) {
        let mut rng = Lcg::new(99);
        for &wtype in &TYPES {
            let quantized = !matches!(wtype, WType::F32 | WType::F16);
            for &k in ks {
                let levels = available_levels();
                let paths: Vec<Path> = levels.iter().flat_map(|&l| [Path::Vec(l), Path::Gemm(l)]).collect();
                let mut all_got: Vec<Vec<f32>> = vec![Vec::new(); paths.len()];
                let mut all_want = Vec::new();
                for &rows in rows_list {
                    let tw = TestWeights::new(wtype, k, rows, &mut rng);
                    for &n in ns {
                        let astride = k + 5;
                        let acts: Vec<f32> = (0..n * astride).map(|_| rng.next_gauss()).collect();
                        let want = tw.reference(&acts, astride, n);
                        let want_q: Vec<Vec<(f64, f64)>> = levels.iter().map(|&l| quantized_reference(l, &tw, &acts, astride, n)).collect();
                        let mag_f: Vec<f64> = (0..n)
                            .flat_map(|j| (0..rows).map(move |i| (i, j)))
                            .map(|(i, j)| {
                                let wr = &tw.deq[i * k..(i + 1) * k];
                                let ar = &acts[j * astride..j * astride + k];
                                wr.iter().zip(ar).map(|(&x, &y)| (x as f64 * y as f64).abs()).sum()
                            })
                            .collect();
                        for (p, &path) in paths.iter().enumerate() {
                            let got = run(path, &tw, &acts, astride, n, 1);
                            for (o, &g) in got.iter().enumerate() {
                                let (exact, mag) = match path {
                                    Path::Vec(l) => want_q[levels.iter().position(|&x| x == l).unwrap()][o],
                                    Path::Gemm(_) => (want[o] as f64, mag_f[o]),
                                };
                                // half-precision accumulators: every one of a lane's k/32 FMAs
                                // rounds to 11 bits of a partial sum bounded by the magnitude sum
                                let rel = match path {
                                    Path::Vec(l) if half_accumulation(l, wtype) => (k / 32 + 4) as f64 * 2f64.powi(-11),
                                    _ => 2e-5,
                                };
                                assert!(
                                    (g as f64 - exact).abs() <= rel * mag + 1e-30,
                                    "{wtype:?} k={k} rows={rows} n={n} {path:?} out {o}: {g} vs {exact}"
                                );
                            }
                            all_got[p].extend_from_slice(&got);
                        }
                        all_want.extend_from_slice(&want);
                    }
                }
                for (p, &path) in paths.iter().enumerate() {
                    let e = nmse(&all_got[p], &all_want);
                    let limit = match path {
                        Path::Vec(_) if quantized => 5e-4,
                        Path::Vec(l) if half_accumulation(l, wtype) => 5e-4,
                        _ => 1e-7,
                    };
                    assert!(e < limit, "{wtype:?} k={k} {path:?}: nmse {e:e} >= {limit:e}");
                }
            }
        }
    }

    #[test]
    fn mul_mat_matches_reference_small() {
        check_all(&[64, 576], &[1, 7, 33], &[1, 3, 17]);
    }

    #[test]
    fn mul_mat_matches_reference_large_k() {
        check_all(&[1536], &[1, 7, 33], &[1, 3, 17]);
        check_all(&[49152], &[1, 7], &[1, 3, 17]);
    }

    /// Splitting the output across threads gives bit-identical results on the dot path (every
    /// element is computed by the same code) and near-identical ones on the sgemm path.
    #[test]
    fn threaded_split_matches_single() {
        let mut rng = Lcg::new(5);
        for &wtype in &TYPES {
            let (k, rows, n) = (576, 67, 17);
            let tw = TestWeights::new(wtype, k, rows, &mut rng);
            let acts: Vec<f32> = (0..n * k).map(|_| rng.next_gauss()).collect();
            for level in available_levels() {
                let one = run(Path::Vec(level), &tw, &acts, k, n, 1);
                for threads in [2, 3, 8] {
                    assert_eq!(run(Path::Vec(level), &tw, &acts, k, n, threads), one, "{wtype:?}");
                }
                let g1 = run(Path::Gemm(level), &tw, &acts, k, n, 1);
                let g3 = run(Path::Gemm(level), &tw, &acts, k, n, 3);
                assert!(nmse(&g3, &g1) < 1e-12, "{wtype:?}");
            }
        }
    }

    /// The AVX-512 tiles give the AVX2 tiles' bits (ggml's AVX2 order) on every shape edge:
    /// odd row counts and chunk remainders, column tails, n = 1 (matrix-vector), extreme quants.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn wide_tiles_match_avx2_bitwise() {
        use crate::simd::quant::tile;
        if !crate::simd::cpu_features::has_avx512() {
            return;
        }
        let mut rng = Lcg::new(77);
        for &wtype in &[WType::Q4_0, WType::Q4_1, WType::Q8_0] {
            for &k in &[32usize, 96, 576] {
                for &rows in &[1usize, 2, 5, 16, 17, 35] {
                    let tw = TestWeights::new(wtype, k, rows, &mut rng);
                    let w = tw.weights();
                    for &n in &[1usize, 2, 3, 4, 5, 7, 9, 17] {
                        // a few saturated values per row so quants reach -127 / 127
                        let acts: Vec<f32> = (0..n * k).map(|i| if i % 37 == 0 { 50.0 } else if i % 41 == 0 { -50.0 } else { rng.next_gauss() }).collect();
                        let a = Acts::new(&acts, k, n, k);
                        let mut q = QuantizedActs::new();
                        q.prepare_at(SimdLevel::Avx2, wtype, &a);
                        let mut want = vec![0f32; n * rows];
                        let mut got = vec![f32::NAN; n * rows];
                        for (buf, wide) in [(&mut want, false), (&mut got, true)] {
                            // both halves of a split, so views that start mid-matrix are covered
                            let (l, r) = DstView::new(buf, n, rows, rows).split_at(rows / 3);
                            for mut v in [l, r] {
                                // SAFETY: AVX2 is implied by AVX-512 (checked above).
                                unsafe {
                                    match (wtype, wide) {
                                        (WType::Q4_0, false) => x86::quant_rows::<tile::Q4_0>(&w, &q.tile_rows(&q.q8_0), &mut v),
                                        (WType::Q4_1, false) => x86::quant_rows::<tile::Q4_1>(&w, &q.tile_rows(&q.q8_1), &mut v),
                                        (_, false) => x86::quant_rows::<tile::Q8_0>(&w, &q.tile_rows(&q.q8_0), &mut v),
                                        (WType::Q4_0, true) => x86::wide_rows::<tile::Q4_0>(&w, &q.tile_rows(&q.q8_0), &q.off, &mut v),
                                        (WType::Q4_1, true) => x86::wide_rows::<tile::Q4_1>(&w, &q.tile_rows(&q.q8_1), &[], &mut v),
                                        (_, true) => x86::wide_rows::<tile::Q8_0>(&w, &q.tile_rows(&q.q8_0), &q.off, &mut v),
                                    }
                                }
                            }
                        }
                        let wb: Vec<u32> = want.iter().map(|x| x.to_bits()).collect();
                        let gb: Vec<u32> = got.iter().map(|x| x.to_bits()).collect();
                        assert_eq!(gb, wb, "{wtype:?} k={k} rows={rows} n={n}");
                    }
                }
            }
        }
    }

    /// Decode-shaped matrix-vector throughput with hot (one matrix) and cold (many matrices, more
    /// than the caches) weights, AVX2 vs AVX-512 tiles, on one thread. Not a test:
    /// `cargo test --release --lib bench_matvec -- --ignored --nocapture`
    #[cfg(target_arch = "x86_64")]
    #[test]
    #[ignore = "timing printout"]
    fn bench_matvec() {
        use crate::simd::quant::tile;
        use std::time::Instant;
        let mut rng = Lcg::new(1);
        let (k, rows) = (576, 1536);
        let tw = TestWeights::new(WType::Q4_1, k, rows, &mut rng);
        let bytes: Vec<u8> = {
            let w = tw.weights();
            w.data.to_vec()
        };
        let copies = 400; // ~220 MB
        let big: Vec<u8> = (0..copies).flat_map(|_| bytes.iter().copied()).collect();
        let acts: Vec<f32> = (0..k).map(|_| rng.next_gauss()).collect();
        let a = Acts::new(&acts, k, 1, k);
        let mut q = QuantizedActs::new();
        q.prepare_at(SimdLevel::Avx2, WType::Q4_1, &a);
        let mut out = vec![0f32; rows];
        for wide in [false, true] {
            for cold in [false, true] {
                let t = Instant::now();
                let iters = 2000;
                for it in 0..iters {
                    let c = if cold { it % copies } else { 0 };
                    let w = Weights::new(&big[c * bytes.len()..(c + 1) * bytes.len()], WType::Q4_1, k, tw.stride, rows);
                    let mut v = DstView::new(&mut out, 1, rows, rows);
                    // SAFETY: AVX-512 / AVX2 detected by the caller of this ignored bench.
                    unsafe {
                        if wide {
                            x86::wide_rows::<tile::Q4_1>(&w, &q.tile_rows(&q.q8_1), &[], &mut v)
                        } else {
                            x86::quant_rows::<tile::Q4_1>(&w, &q.tile_rows(&q.q8_1), &mut v)
                        }
                    }
                }
                let dt = t.elapsed().as_secs_f64() / iters as f64;
                println!("wide={wide} cold={cold}: {:.1} us  {:.1} GB/s", dt * 1e6, bytes.len() as f64 / dt / 1e9);
            }
        }
    }

    #[test]
    fn split_even_partitions() {
        let mut buf = vec![0f32; 4 * 100];
        let v = DstView::new(&mut buf, 4, 100, 100);
        let parts = v.split_even(3, 8);
        let ranges: Vec<_> = parts.iter().map(|p| p.weight_rows()).collect();
        assert_eq!(ranges, vec![0..32, 32..64, 64..100]);
        let mut buf = vec![0f32; 10];
        let parts = DstView::for_rows(&mut buf, 1, 20..30, 10).split_even(4, 1);
        let ranges: Vec<_> = parts.iter().map(|p| p.weight_rows()).collect();
        assert_eq!(ranges, vec![20..22, 22..25, 25..27, 27..30]);
        let mut buf = vec![0f32; 5];
        let parts = DstView::new(&mut buf, 1, 5, 5).split_even(8, 4);
        assert_eq!(parts.iter().map(|p| p.weight_rows().len()).sum::<usize>(), 5);
    }

    /// A worker can own just its slice of the output via `for_rows`.
    #[test]
    fn for_rows_view() {
        let mut rng = Lcg::new(17);
        let tw = TestWeights::new(WType::Q8_0, 64, 10, &mut rng);
        let acts: Vec<f32> = (0..2 * 64).map(|_| rng.next_gauss()).collect();
        let a = Acts::new(&acts, 64, 2, 64);
        let mut q = QuantizedActs::new();
        q.prepare(WType::Q8_0, &a);
        let mut full = vec![0f32; 20];
        mul_mat(&tw.weights(), &a, &q, DstView::new(&mut full, 2, 10, 10), &mut Vec::new());
        let mut part = vec![0f32; 2 * 4];
        mul_mat(&tw.weights(), &a, &q, DstView::for_rows(&mut part, 2, 3..7, 4), &mut Vec::new());
        assert_eq!(&part[0..4], &full[3..7]);
        assert_eq!(&part[4..8], &full[13..17]);
    }

    #[test]
    #[should_panic(expected = "not prepared")]
    fn unprepared_acts_panic() {
        let mut rng = Lcg::new(1);
        let tw = TestWeights::new(WType::Q4_1, 64, 2, &mut rng);
        let acts = vec![1.0f32; 64];
        let a = Acts::new(&acts, 64, 1, 64);
        let mut q = QuantizedActs::new();
        q.prepare(WType::Q4_0, &a); // wrong partner format (Q8_0 instead of Q8_1)
        let mut out = vec![0f32; 2];
        mul_mat_vec(&tw.weights(), &a, &q, DstView::new(&mut out, 1, 2, 2));
    }

    #[test]
    fn dot_f32_levels() {
        let mut rng = Lcg::new(3);
        for n in [0usize, 1, 7, 8, 33, 1000] {
            let a: Vec<f32> = (0..n).map(|_| rng.next_f32()).collect();
            let b: Vec<f32> = (0..n).map(|_| rng.next_f32()).collect();
            let exact: f64 = a.iter().zip(&b).map(|(&x, &y)| x as f64 * y as f64).sum();
            for level in available_levels() {
                let d = dot_f32_at(level, &a, &b) as f64;
                assert!((d - exact).abs() <= n as f64 * 1.2e-7 + 1e-7, "{level:?} n={n}");
            }
        }
    }

    /// Rough single-thread throughput; not a test. `cargo test --release --lib bench_ -- --ignored --nocapture`
    #[test]
    #[ignore = "timing printout"]
    fn bench_mul_mat() {
        use std::time::Instant;
        let mut rng = Lcg::new(1);
        let (k, rows) = (576, 1536);
        for &wtype in &TYPES {
            let tw = TestWeights::new(wtype, k, rows, &mut rng);
            let w = tw.weights();
            for &n in &[1usize, 4, 8, 12, 16, 64] {
                let acts: Vec<f32> = (0..n * k).map(|_| rng.next_gauss()).collect();
                let a = Acts::new(&acts, k, n, k);
                let mut q = QuantizedActs::new();
                let mut out = vec![0f32; n * rows];
                let mut scratch = Vec::new();
                for gemm in [false, true] {
                    // Best of several short runs: the build machine is shared.
                    let iters = (100 / n).max(3);
                    let mut dt = f64::INFINITY;
                    for _ in 0..7 {
                        let t = Instant::now();
                        for _ in 0..iters {
                            let dst = DstView::new(&mut out, n, rows, rows);
                            if gemm {
                                mul_mat_gemm(&w, &a, dst, &mut scratch);
                            } else {
                                q.prepare(wtype, &a);
                                mul_mat_vec(&w, &a, &q, dst);
                            }
                        }
                        dt = dt.min(t.elapsed().as_secs_f64() / iters as f64);
                    }
                    let gflops = 2.0 * (k * rows * n) as f64 / dt / 1e9;
                    println!(
                        "{wtype:?} {k}x{rows} n={n:3} {}: {:8.1} us  {gflops:6.2} GFLOP/s",
                        if gemm { "gemm" } else { "vec " },
                        dt * 1e6
                    );
                }
            }
        }
    }
}
