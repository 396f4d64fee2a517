//! MUL_MAT over ggml tensors: `dst[.., j, i] = a[.., i, :] . b[.., j, :]`, with `a` (the weights)
//! broadcast over `b`'s batch dimensions. The kernels are in `matmul`: dot products over
//! quantized activations for small batches, dequantized tiles + sgemm for large ones. Work is
//! split into chunks of weight rows x activation rows inside every batch (`batch_blocks`).
//! Decoding's products of one weight matrix and one activation row are `streamed`.

pub mod causal;
pub mod repacked;
pub mod streamed;

use super::{Raw, Session};
use crate::matmul::{self, Acts, DstView, QuantizedActs, Weights};
use crate::op::Node;
use crate::quant::WType;
use crate::quant::f16::fp16_to_fp32;
use crate::cpu_features::simd_level;
use crate::view::{F16, F32};
use parking_lot::Mutex;
use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Weights of any [`WType`] (packed along dim 0, whole blocks, aligned rows) broadcast over F32
/// or F16 activations with packed rows, F32 out.
pub fn supports(n: &Node) -> bool {
    if n.repack.is_some() {
        return repacked::supports(n);
    }
    let (d, Some(a), Some(b)) = (n.dst, n.src[0], n.src[1]) else { return false };
    let Some(w) = WType::from_ggml(a.ty) else { return false };
    let elem_b = match b.ty {
        F32 => 4,
        F16 => 2,
        _ => return false,
    };
    let wt_align = w.align();
    a.nb[0] == w.block_bytes()
        && a.ne[0].is_multiple_of(w.block_len())
        && a.nb[1].is_multiple_of(wt_align)
        && w.rows_aligned(a.data, &a.nb)
        && b.nb[0] == elem_b
        && b.ne[0] == a.ne[0]
        && a.ne[2] > 0
        && a.ne[3] > 0
        && b.ne[2].is_multiple_of(a.ne[2])
        && b.ne[3].is_multiple_of(a.ne[3])
        && d.ty == F32
        && d.nb[0] == 4
        && d.nb[1].is_multiple_of(4)
        && d.ne == [a.ne[1], b.ne[1], b.ne[2], b.ne[3]]
        && (matches!(w, WType::F16 | WType::F32) || crate::cpu_features::integer_products(simd_level()))
}

/// Rounds activation rows (of `k` values each) as ggml-cpu's vec_dot type for `w` would.
fn round_like_ggml(w: WType, rows: &mut [f32], k: usize) {
    use crate::quant::{f16, q8_0, q8_1, BlockQ8_0, BlockQ8_1};
    match w {
        WType::F32 => {}
        WType::F16 => rows.iter_mut().for_each(|x| *x = f16::fp16_to_fp32(f16::fp32_to_fp16(*x))),
        WType::Q4_0 | WType::Q5_0 | WType::Q8_0 | WType::IQ4NL => ROUND_Q8_0.with(|b| {
            let mut blocks = b.borrow_mut();
            blocks.resize(k / 32, BlockQ8_0::default());
            for row in rows.chunks_exact_mut(k) {
                q8_0::quantize_row(row, &mut blocks);
                q8_0::dequantize_row(&blocks, row);
            }
        }),
        WType::Q4K | WType::Q5K | WType::Q6K => ROUND_Q8K.with(|b| {
            use crate::quant::q8_k;
            let mut blocks = b.borrow_mut();
            blocks.resize(k / q8_k::QK_K, crate::quant::BlockQ8K::default());
            for row in rows.chunks_exact_mut(k) {
                q8_k::quantize_row(row, &mut blocks);
                q8_k::dequantize_row(&blocks, row);
            }
        }),
        WType::Q4_1 | WType::Q5_1 => ROUND_Q8_1.with(|b| {
            let mut blocks = b.borrow_mut();
            blocks.resize(k / 32, BlockQ8_1::default());
            for row in rows.chunks_exact_mut(k) {
                q8_1::quantize_row(row, &mut blocks);
                q8_1::dequantize_row(&blocks, row);
            }
        }),
    }
}

thread_local! {
    static ROUND_Q8_0: RefCell<Vec<crate::quant::BlockQ8_0>> = const { RefCell::new(Vec::new()) };
    static ROUND_Q8_1: RefCell<Vec<crate::quant::BlockQ8_1>> = const { RefCell::new(Vec::new()) };
    static ROUND_Q8K: RefCell<Vec<crate::quant::BlockQ8K>> = const { RefCell::new(Vec::new()) };
    /// Per-thread gemm panel, reused across calls (the pool's threads live as long as the backend).
    static SCRATCH: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
    /// The calling thread's converted activations, one per batch, reused across products.
    static PREPARED: RefCell<Vec<QuantizedActs>> = const { RefCell::new(Vec::new()) };
}

/// Converted activations a calling thread keeps from one graph to the next: a decode step's
/// (a few KB per product) and a prompt's (under 1 MB for SmolLM2) are reused, a whisper
/// encoder's (one f32 row of 1500 per frame and head, tens of MB) are given back when the graph
/// ends; before, an app that had finished transcribing held them until the thread exited.
const KEEP_BYTES: usize = 4 << 20;

/// Frees the calling thread's converted activations if they exceed `KEEP_BYTES`; called when
/// a graph computation ends. Returns the bytes kept.
pub fn trim_thread_buffers() -> usize {
    PREPARED.with(|p| {
        let mut p = p.borrow_mut();
        let bytes: usize = p.iter().map(QuantizedActs::heap_bytes).sum();
        if bytes > KEEP_BYTES {
            *p = Vec::new();
            0
        } else {
            bytes
        }
    })
}

/// Multiply-adds below which a product runs on the calling thread alone.
const SERIAL_MACS: usize = 64 * 1024;

/// Bytes of weight rows one chunk of a batched product covers: the chunk's weights stay in L2
/// while its activation rows stream past them once (the walk inside a chunk keeps 8 activation
/// rows in L1 against all its weight rows).
const CHUNK_WEIGHT_BYTES: usize = 256 * 1024;
/// Activation rows of a chunk are a multiple of this (the walk's cache block).
const ACT_MULTIPLE: usize = 8;

/// How a batched product (`n > 1` activation rows, `batches` products of `m` weight rows of
/// `row_bytes` each) is cut into chunks: `(weight-row parts, activation-row parts)` per batch.
///
/// Chunks are as many weight rows as fit [`CHUNK_WEIGHT_BYTES`], so every activation row is
/// read once per chunk of weights: with 16-row chunks whisper's 1500 x 1500 attention products
/// read their f32 activations (9 MB per head for KQV) from memory once per 16 weight rows, and
/// ran at a fifth of the FMA rate. Activation rows are then split until there are 8 chunks per
/// thread (for balance when a thread is delayed, and so that SmolLM2's 9 attention heads do not
/// leave one of two threads idle for a ninth of the product), but not below 32 rows.
fn batch_blocks(w: WType, k: usize, m: usize, n: usize, batches: usize, threads: usize) -> (usize, usize) {
    if !matches!(w, WType::F16 | WType::F32) {
        return (m.div_ceil(16), 1);
    }
    let parts = (m * w.row_bytes(k)).div_ceil(CHUNK_WEIGHT_BYTES).clamp(1, m.div_ceil(16));
    let want = (8 * threads).div_ceil(batches * parts);
    (parts, want.clamp(1, (n / 32).max(1)))
}

/// Query heads computed as one product at decode time: grouped-query attention gives `r2` query
/// heads one K (or V) matrix, and with one query row per head (`n = 1`) each head's product
/// converted and walked that matrix on its own: SmolLM2's KQ read every F16 K row three times,
/// and nine one-row products paid nine times the fixed costs. As one product of `r2` activation
/// rows, each weight row is loaded once for the group (every output keeps ggml's arithmetic).
/// 1 (no grouping) unless `n = 1`, `r2 > 1`, the exact dot-product path applies to `r2` rows and
/// the heads' strides can serve as row strides.
fn query_group(w: WType, a: Raw, b: Raw, d: Raw) -> usize {
    let r2 = b.ne[2] / a.ne[2];
    let elem_b = if b.ty == F16 { 2 } else { 4 };
    let ok = b.ne[1] == 1
        && r2 > 1
        && !matmul::use_gemm(w, r2)
        && b.nb[2].is_multiple_of(elem_b)
        && b.nb[2] / elem_b >= b.ne[0]
        && d.nb[2].is_multiple_of(4)
        && d.nb[2] / 4 >= d.ne[0];
    if ok { r2 } else { 1 }
}

pub fn compute(s: &Session, n: &Node) -> bool {
    if n.repack.is_some() {
        return repacked::compute(s, n);
    }
    product(s, n.order, n.q8k, n.dst, n.src(0), n.src(1), None)
}

/// `d = a . b` in the order before 2026, activations quantized by the Rust quantizers (the
/// ops' tests).
#[cfg(test)]
pub fn mul_mat(s: &Session, d: Raw, a: Raw, b: Raw) -> bool {
    product(s, crate::CpuOrder::BEFORE_2026, None, d, a, b, None)
}

/// [`mul_mat`] (node `n`) followed by the softmax whose only input it is (`then`, the rows of
/// the next node): each chunk's softmax rows are computed as soon as the chunk is, so that with
/// a causal mask the scores it masks need not be computed at all ([`causal`]); SmolLM2's chunks
/// of scores (128 KiB) are also still in the thread's cache then, whisper's (4.5 MB) are not.
/// Chunks of whole rows only; other products run the softmax after them.
pub fn mul_mat_softmax(s: &Session, n: &Node, then: &super::softmax::Rows) -> bool {
    if n.repack.is_some() {
        return repacked::compute(s, n) && super::for_rows(s, n.dst.nrows(), n.dst.nelements(), |r| then.row(r, None));
    }
    product(s, n.order, n.q8k, n.dst, n.src(0), n.src(1), Some(then))
}

/// `then`: see [`mul_mat_softmax`].
/// `d = a . b` in the float order `order` of the node's revision, K-quant activations quantized
/// by `host_q8k` when the host has it.
fn product(s: &Session, order: crate::CpuOrder, host_q8k: Option<crate::quant::HostQ8K>, d: Raw, a: Raw, b: Raw, then: Option<&super::softmax::Rows>) -> bool {
    // the softmax after the whole product, when its rows cannot follow the chunks
    let softmax_after = |then: Option<&super::softmax::Rows>| then.is_none_or(|t| super::for_rows(s, d.nrows(), d.nelements(), |r| t.row(r, None)));
    if let Some(p) = streamed::Streamed::new(d, a, b, order, host_q8k) {
        return streamed::compute(s, p) && softmax_after(then);
    }
    let w = WType::from_ggml(a.ty).expect("checked by supports");
    let (k, m, n) = (a.ne[0], a.ne[1], b.ne[1]);
    let (r2, r3) = (b.ne[2] / a.ne[2], b.ne[3] / a.ne[3]);
    let group = query_group(w, a, b, d);
    // one product per weight matrix and group of `group` heads (`group` is 1 unless decoding
    // with grouped-query attention), with `rows_per` activation rows each
    let batches: Vec<(usize, usize)> = (0..b.ne[3]).flat_map(|i3| (0..b.ne[2]).step_by(group).map(move |i2| (i2, i3))).collect();
    if m == 0 || n == 0 || batches.is_empty() {
        return softmax_after(then);
    }
    let rows_per = n * group;
    // the dimension that steps from one activation row of a product to the next, in b and d:
    // the heads of a group, else the rows
    let row_dim = if group > 1 { 2 } else { 1 };

    // activations as f32 rows: read in place when they already are, else converted once. On the
    // sgemm path they are also rounded the way ggml-cpu's dot products see them (Q8_0 / Q8_1
    // round trip for quantized weights, F16 for F16 weights), so that both backends multiply the
    // same numbers and differ only in summation order.
    let round = matmul::use_gemm(w, rows_per) && w != WType::F32;
    let direct = b.ty == F32 && b.nb[1].is_multiple_of(4) && !round;
    let mut converted: Vec<f32> = if direct { Vec::new() } else { vec![0f32; batches.len() * rows_per * k] };
    if !direct {
        // rows are converted (and rounded) in parallel, each row by one thread
        let rows: Vec<Mutex<&mut [f32]>> = converted.chunks_exact_mut(k).map(Mutex::new).collect();
        let ok = super::for_rows(s, rows.len(), rows.len() * k, |r| {
            // row j of product bi: row j % n of head i2 + j / n
            let (bi, jr) = (r / rows_per, r % rows_per);
            let (i2, i3) = batches[bi];
            let (i2, j) = (i2 + jr / n, jr % n);
            let mut dst = rows[r].lock();
            match b.ty {
                F32 if b.nb[0] == 4 => dst.copy_from_slice(b.f32_at(b.offset(0, j, i2, i3), k)),
                F16 => {
                    let bytes = b.bytes_at(b.offset(0, j, i2, i3), 2 * k);
                    for (x, h) in dst.iter_mut().zip(bytes.chunks_exact(2)) {
                        *x = fp16_to_fp32(u16::from_le_bytes([h[0], h[1]]));
                    }
                }
                _ => {
                    for (i0, x) in dst.iter_mut().enumerate() {
                        *x = b.read_f32(i0, j, i2, i3);
                    }
                }
            }
            if round {
                round_like_ggml(w, &mut dst, k);
            }
        });
        if !ok {
            return false;
        }
    }
    let converted = converted;
    let acts_of = |bi: usize| -> Acts<'_> {
        let (i2, i3) = batches[bi];
        if direct {
            let stride = b.nb[row_dim] / 4;
            Acts::new(b.f32_at(b.offset(0, 0, i2, i3), (rows_per - 1) * stride + k), k, rows_per, stride)
        } else {
            Acts::new(&converted[bi * rows_per * k..(bi + 1) * rows_per * k], k, rows_per, k)
        }
    };
    let weights_of = |bi: usize| -> Weights<'_> {
        let (i2, i3) = batches[bi];
        let off = a.offset(0, 0, i2 / r2, i3 / r3);
        Weights::new(a.bytes_at(off, (m - 1) * a.nb[1] + w.row_bytes(k)), w, k, a.nb[1], m).in_order(order)
    };

    // activations in the weights' partner format, prepared once per batch (rows spread over the
    // pool) before the products start
    let prepared = std::cell::Cell::new(true);
    // (buffers kept per thread between calls: a decode step runs hundreds of products)
    let mut quantized: Vec<QuantizedActs> = PREPARED.with(|p| std::mem::take(&mut *p.borrow_mut()));
    if matmul::needs_quantized_acts(w, rows_per) {
        quantized.resize_with(quantized.len().max(batches.len()), QuantizedActs::new);
        for (bi, q) in quantized.iter_mut().enumerate().take(batches.len()) {
            q.host_q8k = host_q8k;
            q.prepare_par(simd_level(), w, &acts_of(bi), &|rows, f| {
                prepared.set(super::for_rows(s, rows, rows * k, f) && prepared.get());
            });
        }
    } else {
        quantized.clear();
    }
    if !prepared.get() {
        PREPARED.with(|p| *p.borrow_mut() = quantized);
        return false;
    }
    let empty = QuantizedActs::new();

    // Every batch's output cut into chunks of weight rows that threads take in turn: a thread
    // delayed by the OS (phones, shared machines) then costs only its current chunk, not a
    // fixed share of the node (ggml-cpu balances its threads the same way).
    let stride = d.nb[row_dim] / 4;
    let gemm = matmul::use_gemm(w, rows_per);
    // Decoding (n = 1): see `streamed::decode_parts` (those waits were ~2 ms of a 13 ms decode
    // step). With many activations see `batch_blocks`.
    let (parts, multiple, act_parts) = if gemm {
        let rows = matmul::gemm_tile_rows(k);
        (m.div_ceil(rows), rows, 1)
    } else if n == 1 {
        (streamed::decode_parts(m, batches.len(), s.n_threads()), streamed::DECODE_MULTIPLE, 1)
    } else {
        let (parts, act_parts) = batch_blocks(w, k, m, n, batches.len(), s.n_threads());
        (parts, 16, act_parts)
    };
    // a chunk of whole rows (one head's queries, all its keys) ends with its softmax rows, each
    // reading only the keys its mask leaves (`limits`, per query)
    let fused = then.filter(|_| !gemm && parts == 1 && group == 1);
    let limits: Option<Vec<usize>> = fused
        .filter(|t| n >= causal::MIN_QUERIES && t.masks_by_adding())
        .and_then(|t| causal::limits(t.mask()?, m, n));
    // float products over many activations skip the keys where all of a block's activations are
    // zero (the probabilities of masked keys: `causal::trim_keys`)
    let trim = matches!(w, WType::F16 | WType::F32) && !gemm && group == 1 && n >= causal::MIN_QUERIES && k >= 2 * causal::KEY_STEP;
    let chunks: Vec<(usize, Mutex<Option<DstView<'_>>>)> = batches
        .iter()
        .enumerate()
        .flat_map(|(bi, &(i2, i3))| {
            let full = d.f32_at_mut(d.offset(0, 0, i2, i3), (rows_per - 1) * stride + m);
            DstView::new(full, rows_per, m, stride)
                .split_acts_even(act_parts, ACT_MULTIPLE)
                .into_iter()
                .flat_map(move |v| v.split_even(parts, multiple))
                .map(move |v| (bi, Mutex::new(Some(v))))
        })
        .collect();
    let next = AtomicUsize::new(0);

    let work = |_ith: usize, _nth: usize| {
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            loop {
                let c = next.fetch_add(1, Ordering::Relaxed);
                let Some((bi, slot)) = chunks.get(c) else { break };
                let Some(view) = slot.lock().take() else { continue };
                if view.weight_rows().is_empty() {
                    continue;
                }
                let q = quantized.get(*bi).unwrap_or(&empty);
                let (w, acts, rows) = (weights_of(*bi), acts_of(*bi), view.act_rows());
                match &limits {
                    Some(limits) => causal::split(view, limits, |v| matmul::mul_mat(&w, &acts, q, v, &mut scratch)),
                    None if trim => causal::trim_keys(view, &w, &acts, |v, k| matmul::mul_mat(&w.prefix(k), &acts.prefix(k), q, v, &mut scratch)),
                    None => matmul::mul_mat(&w, &acts, q, view, &mut scratch),
                }
                if let Some(t) = fused {
                    let (i2, i3) = batches[*bi];
                    rows.for_each(|j| t.row(j + n * (i2 + d.ne[2] * i3), limits.as_ref().map(|l| l[j])));
                }
            }
        })
    };
    // a product this small (decode's per-head KQ / KQV at short contexts) takes less time than
    // waking the other threads and waiting for the slowest: compute it here, chunk by chunk as
    // the pool would (each output's arithmetic does not depend on which thread computes it)
    let ok = if batches.len() * m * rows_per * k < SERIAL_MACS {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(0, 1))).is_ok()
    } else {
        s.run(&work)
    };
    drop(chunks);
    PREPARED.with(|p| *p.borrow_mut() = quantized);
    ok && (fused.is_some() || softmax_after(then))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::pool::Pool;
    use crate::quant::{f16::fp32_to_fp16, q8_0, type_id, BlockQ8_0};

    /// A contiguous tensor [ne0, ne1, ne2] of `elem` bytes per block of `block` values.
    pub(super) fn raw<T>(data: &mut [T], ty: i32, elem: usize, block: usize, ne: [usize; 3]) -> Raw {
        let row = ne[0] / block * elem;
        assert!(std::mem::size_of_val(data) >= row * ne[1] * ne[2]);
        Raw { data: data.as_mut_ptr() as *mut u8, ne: [ne[0], ne[1], ne[2], 1], nb: [elem, row, row * ne[1], row * ne[1] * ne[2]], ty }
    }

    /// The block formats' products are declined only on an aarch64 CPU without `sdot` in a build
    /// without the `neon-nodot` feature (scripts/test-aarch64.sh runs this on a Cortex-A53 without
    /// it); the float products never.
    #[test]
    fn integer_products_declined_only_without_their_path() {
        let declined = cfg!(target_arch = "aarch64")
            && !cfg!(feature = "neon-nodot")
            && simd_level() == crate::cpu_features::SimdLevel::Neon
            && !crate::cpu_features::has_dotprod();
        let (k, m, n) = (64, 4, 3);
        let mut acts = vec![0f32; k * n];
        let mut out = vec![0f32; m * n];
        for (ty, elem, block) in [(type_id::Q4_0, 18, 32), (type_id::Q8_0, 34, 32), (type_id::F16, 2, 1), (type_id::F32, 4, 1)] {
            let mut w = vec![0u32; k * m]; // enough bytes for F32, aligned for every format
            let node = Node {
                op: crate::op::Op::MulMat,
                dst: raw(&mut out, type_id::F32, 4, 1, [m, n, 1]),
                src: [Some(raw(&mut w, ty, elem, block, [k, m, 1])), Some(raw(&mut acts, type_id::F32, 4, 1, [k, n, 1])), None, None, None],
                params: [0; 16],
                order: crate::CpuOrder::BEFORE_2026,
                q8k: None,
                repack: None,
            };
            let float = ty == type_id::F16 || ty == type_id::F32;
            assert_eq!(supports(&node), float || !declined, "type {ty}, declined {declined}");
        }
    }

    /// Weights of type `ty`, `kvh` matrices of `m` rows of `k`, as bytes.
    pub(super) fn weight_bytes(ty: i32, k: usize, m: usize, kvh: usize) -> Vec<u8> {
        let x: Vec<f32> = (0..k * m * kvh).map(|i| ((i * 37 % 101) as f32 - 50.0) / 64.0).collect();
        match ty {
            type_id::F32 => x.iter().flat_map(|v| v.to_le_bytes()).collect(),
            type_id::F16 => x.iter().flat_map(|&v| fp32_to_fp16(v).to_le_bytes()).collect(),
            _ => {
                let mut blocks = vec![BlockQ8_0::default(); x.len() / 32];
                q8_0::quantize_row(&x, &mut blocks);
                // SAFETY: BlockQ8_0 is plain bytes (repr(C), no padding: ggml's block layout).
                unsafe { std::slice::from_raw_parts(blocks.as_ptr() as *const u8, std::mem::size_of_val(&blocks[..])) }.to_vec()
            }
        }
    }

    /// Query (activation) values for the tests and the bench.
    pub(super) fn query_values(n: usize) -> Vec<f32> {
        (0..n).map(|i| ((i * 53 % 97) as f32 - 48.0) / 48.0).collect()
    }

    /// Decoding with grouped query heads: the `r2` heads of a K/V matrix computed as one
    /// product give each head's own product's bits (F16 and F32 caches with and without
    /// leftovers past 32, a Q8_0 cache, groups of 2 to 5 heads, 1 and 2 threads).
    #[test]
    fn grouped_query_heads_equal_one_product_per_head() {
        let cases = [(type_id::F16, 64), (type_id::F16, 72), (type_id::F16, 448), (type_id::F32, 40), (type_id::Q8_0, 96)];
        for (ty, k) in cases {
            // bytes per block of `block` values
            let (elem, block) = match ty {
                type_id::F32 => (4, 1),
                type_id::F16 => (2, 1),
                _ => (std::mem::size_of::<BlockQ8_0>(), 32),
            };
            for (r2, kvh) in [(2usize, 3usize), (3, 3), (4, 2), (5, 1)] {
                for m in [13usize, 64] {
                    let qh = r2 * kvh;
                    let mut w = weight_bytes(ty, k, m, kvh);
                    // the query as llama.cpp permutes it: heads `hs` apart (padded here), the
                    // token stride across all heads
                    let hs = k + 8;
                    let mut x = query_values(hs * qh);
                    let xb = x.as_mut_ptr() as *mut u8;
                    let b = Raw { data: xb, ne: [k, 1, qh, 1], nb: [4, 4 * hs * qh, 4 * hs, 4 * hs * qh], ty: F32 };
                    let a = raw(&mut w, ty, elem, block, [k, m, kvh]);
                    for threads in [1, 2] {
                        let pool = Pool::new(threads);
                        let s = pool.session();
                        let mut grouped = vec![f32::NAN; m * qh];
                        let d = Raw { data: grouped.as_mut_ptr() as *mut u8, ne: [m, 1, qh, 1], nb: [4, 4 * m, 4 * m, 4 * m * qh], ty: F32 };
                        assert_eq!(query_group(WType::from_ggml(ty).unwrap(), a, b, d), r2);
                        assert!(mul_mat(&s, d, a, b));
                        let mut each = vec![f32::NAN; m * qh];
                        for h in 0..qh {
                            let ah = Raw { data: a.data.wrapping_add(h / r2 * a.nb[2]), ne: [k, m, 1, 1], ..a };
                            let bh = Raw { data: xb.wrapping_add(h * 4 * hs), ne: [k, 1, 1, 1], ..b };
                            let dh = Raw { data: (each.as_mut_ptr() as *mut u8).wrapping_add(h * 4 * m), ne: [m, 1, 1, 1], ..d };
                            assert!(mul_mat(&s, dh, ah, bh));
                        }
                        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(&grouped), bits(&each), "type {ty} k={k} r2={r2} kvh={kvh} m={m} threads={threads}");
                        assert!(grouped.iter().all(|v| v.is_finite()));
                    }
                }
            }
        }
    }

    /// A graph's large converted activations are given back when it ends; a decode step's stay.
    #[test]
    fn large_activation_buffers_are_freed_after_a_graph() {
        let prepare = |n: usize, k: usize| {
            let x = vec![0.5f32; n * k];
            let mut q = QuantizedActs::new();
            q.prepare(WType::F16, &Acts::new(&x, k, n, k));
            PREPARED.with(|p| *p.borrow_mut() = vec![q]);
        };
        prepare(1, 576);
        let small = trim_thread_buffers();
        assert!(small > 0 && small <= KEEP_BYTES, "{small}");
        assert_eq!(PREPARED.with(|p| p.borrow().len()), 1);
        prepare(1500, 1500);
        assert_eq!(trim_thread_buffers(), 0);
        assert!(PREPARED.with(|p| p.borrow().is_empty()));
    }

    /// Decode attention's products at a 448-token context (SmolLM2: 9 query heads on 3 KV heads
    /// of 64): KQ (F16 K rows of 64 against one query row per head) and KQV (F16 V^T rows of
    /// 448 against one softmax row per head), timed per node on a 1- and a 2-thread pool, with
    /// one cache and with 60 used in turn. `BENCH_ONLY=KQ1` (or KQV2, ...) times one case.
    /// `cargo test --release -p ggml-rs-kernels --lib bench_decode_attention -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn bench_decode_attention() {
        let (dh, l, kvh, qh) = (64usize, 448usize, 3usize, 9usize);
        let only = std::env::var("BENCH_ONLY").unwrap_or_default();
        for threads in [1, 2] {
            let pool = Pool::new(threads);
            let s = pool.session();
            for (name, k, m) in [("KQ ", dh, l), ("KQV", l, dh)] {
                if !only.is_empty() && format!("{}{threads}", name.trim()) != only {
                    continue;
                }
                // `layers` copies of the cache, used in turn as a decode step does (cold: from L3)
                for layers in [1usize, 60] {
                    let mut w = weight_bytes(type_id::F16, k, m, kvh * layers);
                    let mut x = query_values(k * qh);
                    let mut out = vec![0f32; m * qh];
                    let (a, b, d) = (raw(&mut w, F16, 2, 1, [k, m, kvh * layers]), raw(&mut x, F32, 4, 1, [k, 1, qh]), raw(&mut out, F32, 4, 1, [m, 1, qh]));
                    // llama.cpp's K view: a token's heads side by side (rows `kvh` heads apart)
                    let a = if name == "KQ " { Raw { nb: [2, 2 * k * kvh, 2 * k, 2 * k * m * kvh], ..a } } else { a };
                    let a_at = |l: usize| Raw { data: a.data.wrapping_add(l * 2 * k * m * kvh), ne: [k, m, kvh, 1], ..a };
                    for it in 0..200 {
                        assert!(mul_mat(&s, d, a_at(it % layers), b));
                    }
                    let iters = 4000;
                    let t = std::time::Instant::now();
                    for it in 0..iters {
                        mul_mat(&s, d, a_at(it % layers), b);
                    }
                    let us = t.elapsed().as_secs_f64() * 1e6 / iters as f64;
                    println!("{name} {threads} thread(s), {layers} cache(s): {us:.2} us per node ({:.1} MMAC/s)", (k * m * qh) as f64 / us);
                }
            }
        }
    }
}
