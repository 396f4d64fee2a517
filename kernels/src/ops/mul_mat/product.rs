//! A MUL_MAT node's product in steps, each a function: the streamed path taken when it applies
//! (decoding: `streamed`), else the product's batches read from the node ([`Product::new`]),
//! its activations as f32 rows ([`Product::f32_acts`]) and in the weights' partner format
//! ([`Product::quantized`]), its output cut into chunks ([`Product::chunking`],
//! [`Product::chunks`]) that the pool's threads take in turn ([`Product::run`]), and the
//! softmax after it fused into the chunks where it can be ([`Product::fusion`]).

use super::super::softmax::Rows;
use super::super::{for_rows, Raw, Session};
use super::buffers::{PREPARED, SCRATCH};
use super::tiles::{self, Acts, DstView, QuantizedActs, Weights};
use super::streamed::{self, SERIAL_MACS};
use super::{causal, f32_acts};
use crate::cpu_features::simd_level;
use crate::quant::{HostQ8K, WType};
use crate::view::{F16, F32};
use crate::CpuOrder;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

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
        && !tiles::use_gemm(w, r2)
        && b.nb[2].is_multiple_of(elem_b)
        && b.nb[2] / elem_b >= b.ne[0]
        && d.nb[2].is_multiple_of(4)
        && d.nb[2] / 4 >= d.ne[0];
    if ok { r2 } else { 1 }
}

/// `d = a . b` in the float order `order` of the node's revision, K-quant activations quantized
/// by `host_q8k` when the host has it; `then`: the softmax after it (see
/// [`mul_mat_softmax`](super::mul_mat_softmax)).
pub(super) fn product(s: &Session, order: CpuOrder, host_q8k: Option<HostQ8K>, d: Raw, a: Raw, b: Raw, then: Option<&Rows>) -> bool {
    // the softmax after the whole product, when its rows cannot follow the chunks
    let softmax_after = |then: Option<&Rows>| then.is_none_or(|t| for_rows(s, d.nrows(), d.nelements(), |r| t.row(r, None)));
    if let Some(p) = streamed::Streamed::new(d, a, b, order, host_q8k) {
        return streamed::compute(s, p) && softmax_after(then);
    }
    let p = Product::new(a, b, d, order);
    if p.m == 0 || p.n == 0 || p.batches.is_empty() {
        return softmax_after(then);
    }
    let Some(acts) = p.f32_acts(s) else { return false };
    let Some(quantized) = p.quantized(s, host_q8k, &acts) else { return false };
    let gemm = tiles::use_gemm(p.w, p.rows_per);
    let (parts, multiple, act_parts) = p.chunking(gemm, s.n_threads());
    let fusion = p.fusion(then, gemm, parts);
    let chunks = p.chunks(parts, multiple, act_parts);
    let ok = p.run(s, &chunks, &acts, &quantized, &fusion);
    drop(chunks);
    PREPARED.with(|p| *p.borrow_mut() = quantized);
    ok && (fusion.fused.is_some() || softmax_after(then))
}

/// A product that is not streamed, as read from its node: `m` weight rows of `k` values of type
/// `w` against `n` activation rows, in batches.
struct Product {
    a: Raw,
    b: Raw,
    d: Raw,
    order: CpuOrder,
    w: WType,
    k: usize,
    m: usize,
    n: usize,
    /// How many activation matrices share one weight matrix, along dims 2 and 3.
    r2: usize,
    r3: usize,
    /// Query heads computed as one product ([`query_group`]).
    group: usize,
    /// One product per weight matrix and group of `group` heads (`group` is 1 unless decoding
    /// with grouped-query attention): `(i2, i3)` of its first head.
    batches: Vec<(usize, usize)>,
    /// Activation rows of each batch's product.
    rows_per: usize,
    /// The dimension that steps from one activation row of a product to the next, in b and d:
    /// the heads of a group, else the rows.
    row_dim: usize,
}

/// A product's activations as f32 rows: read in place when they already are, else converted
/// once.
enum F32Acts {
    InPlace,
    Converted(Vec<f32>),
}

/// How the softmax after a product (`then`) rides on its chunks.
struct Fusion<'t> {
    /// A chunk of whole rows (one head's queries, all its keys) ends with its softmax rows, each
    /// reading only the keys its mask leaves (`limits`, per query).
    fused: Option<&'t Rows>,
    limits: Option<Vec<usize>>,
    /// Float products over many activations skip the keys where all of a block's activations
    /// are zero (the probabilities of masked keys: `causal::trim_keys`).
    trim: bool,
}

/// The chunks of a product's output: (the batch's index, its view, taken by the thread that
/// computes it).
type Chunks<'d> = Vec<(usize, Mutex<Option<DstView<'d>>>)>;

impl Product {
    fn new(a: Raw, b: Raw, d: Raw, order: CpuOrder) -> Product {
        let w = WType::from_ggml(a.ty).expect("checked by supports");
        let (k, m, n) = (a.ne[0], a.ne[1], b.ne[1]);
        let (r2, r3) = (b.ne[2] / a.ne[2], b.ne[3] / a.ne[3]);
        let group = query_group(w, a, b, d);
        let batches: Vec<(usize, usize)> = (0..b.ne[3]).flat_map(|i3| (0..b.ne[2]).step_by(group).map(move |i2| (i2, i3))).collect();
        let rows_per = n * group;
        let row_dim = if group > 1 { 2 } else { 1 };
        Product { a, b, d, order, w, k, m, n, r2, r3, group, batches, rows_per, row_dim }
    }

    /// The activations as f32 rows. On the sgemm path they are also rounded the way ggml-cpu's
    /// dot products see them (Q8_0 / Q8_1 round trip for quantized weights, F16 for F16
    /// weights), so that both backends multiply the same numbers and differ only in summation
    /// order. `None` when a worker panicked.
    fn f32_acts(&self, s: &Session) -> Option<F32Acts> {
        let (w, b) = (self.w, self.b);
        let round = tiles::use_gemm(w, self.rows_per) && w != WType::F32;
        let direct = b.ty == F32 && b.nb[1].is_multiple_of(4) && !round;
        if direct {
            return Some(F32Acts::InPlace);
        }
        f32_acts::convert(s, b, self.k, self.n, self.rows_per, &self.batches, round.then_some(w)).map(F32Acts::Converted)
    }

    /// Batch `bi`'s activation rows.
    fn acts<'c>(&self, f32_acts: &'c F32Acts, bi: usize) -> Acts<'c> {
        let (i2, i3) = self.batches[bi];
        let (b, k, rows_per) = (self.b, self.k, self.rows_per);
        match f32_acts {
            F32Acts::InPlace => {
                let stride = b.nb[self.row_dim] / 4;
                Acts::new(b.f32_at(b.offset(0, 0, i2, i3), (rows_per - 1) * stride + k), k, rows_per, stride)
            }
            F32Acts::Converted(converted) => Acts::new(&converted[bi * rows_per * k..(bi + 1) * rows_per * k], k, rows_per, k),
        }
    }

    /// Batch `bi`'s weight matrix.
    fn weights(&self, bi: usize) -> Weights<'_> {
        let (a, w, k, m) = (self.a, self.w, self.k, self.m);
        let (i2, i3) = self.batches[bi];
        let off = a.offset(0, 0, i2 / self.r2, i3 / self.r3);
        Weights::new(a.bytes_at(off, (m - 1) * a.nb[1] + w.row_bytes(k)), w, k, a.nb[1], m).in_order(self.order)
    }

    /// The activations in the weights' partner format, prepared once per batch (rows spread
    /// over the pool) before the products start, in the calling thread's buffers kept between
    /// calls (a decode step runs hundreds of products). `None` when a worker panicked (the
    /// buffers kept).
    fn quantized(&self, s: &Session, host_q8k: Option<HostQ8K>, acts: &F32Acts) -> Option<Vec<QuantizedActs>> {
        let prepared = std::cell::Cell::new(true);
        let mut quantized: Vec<QuantizedActs> = PREPARED.with(|p| std::mem::take(&mut *p.borrow_mut()));
        if tiles::needs_quantized_acts(self.w, self.rows_per) {
            quantized.resize_with(quantized.len().max(self.batches.len()), QuantizedActs::new);
            for (bi, q) in quantized.iter_mut().enumerate().take(self.batches.len()) {
                q.host_q8k = host_q8k;
                q.prepare_par(simd_level(), self.w, &self.acts(acts, bi), &|rows, f| {
                    prepared.set(for_rows(s, rows, rows * self.k, f) && prepared.get());
                });
            }
        } else {
            quantized.clear();
        }
        if !prepared.get() {
            PREPARED.with(|p| *p.borrow_mut() = quantized);
            return None;
        }
        Some(quantized)
    }

    /// How every batch's output is cut into chunks of weight rows that threads take in turn:
    /// `(weight-row parts, the multiple of their rows, activation-row parts)`. A thread delayed
    /// by the OS (phones, shared machines) then costs only its current chunk, not a fixed share
    /// of the node (ggml-cpu balances its threads the same way). Decoding (n = 1): see
    /// `streamed::decode_parts` (those waits were ~2 ms of a 13 ms decode step). With many
    /// activations see `batch_blocks`.
    fn chunking(&self, gemm: bool, threads: usize) -> (usize, usize, usize) {
        if gemm {
            let rows = tiles::gemm_tile_rows(self.k);
            (self.m.div_ceil(rows), rows, 1)
        } else if self.n == 1 {
            (streamed::decode_parts(self.m, self.batches.len(), threads), streamed::DECODE_MULTIPLE, 1)
        } else {
            let (parts, act_parts) = batch_blocks(self.w, self.k, self.m, self.n, self.batches.len(), threads);
            (parts, 16, act_parts)
        }
    }

    /// Which of the softmax's work the chunks take on (see [`Fusion`]).
    fn fusion<'t>(&self, then: Option<&'t Rows>, gemm: bool, parts: usize) -> Fusion<'t> {
        let (m, n, group) = (self.m, self.n, self.group);
        let fused = then.filter(|_| !gemm && parts == 1 && group == 1);
        let limits: Option<Vec<usize>> = fused
            .filter(|t| n >= causal::MIN_QUERIES && t.masks_by_adding())
            .and_then(|t| causal::limits(t.mask()?, m, n));
        let trim = matches!(self.w, WType::F16 | WType::F32) && !gemm && group == 1 && n >= causal::MIN_QUERIES && self.k >= 2 * causal::KEY_STEP;
        Fusion { fused, limits, trim }
    }

    /// Every batch's output as views of `parts` x `act_parts` chunks (`multiple` weight rows,
    /// [`ACT_MULTIPLE`] activation rows).
    fn chunks(&self, parts: usize, multiple: usize, act_parts: usize) -> Chunks<'_> {
        let (d, rows_per, m) = (self.d, self.rows_per, self.m);
        let stride = d.nb[self.row_dim] / 4;
        self.batches
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
            .collect()
    }

    /// Computes every chunk, each taken by the first thread to reach it. A product this small
    /// (decode's per-head KQ / KQV at short contexts) takes less time than waking the other
    /// threads and waiting for the slowest: it is computed here, chunk by chunk as the pool
    /// would (each output's arithmetic does not depend on which thread computes it). False when
    /// a worker panicked.
    fn run(&self, s: &Session, chunks: &Chunks<'_>, acts: &F32Acts, quantized: &[QuantizedActs], fusion: &Fusion<'_>) -> bool {
        let empty = QuantizedActs::new();
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
                    self.chunk(*bi, view, acts, q, fusion, &mut scratch);
                }
            })
        };
        if self.batches.len() * self.m * self.rows_per * self.k < SERIAL_MACS {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(0, 1))).is_ok()
        } else {
            s.run(&work)
        }
    }

    /// One chunk of batch `bi`: its outputs (only the keys the mask leaves, or not the keys
    /// whose activations are all zero, when `fusion` says so), then its softmax rows if fused.
    fn chunk(&self, bi: usize, view: DstView<'_>, acts: &F32Acts, q: &QuantizedActs, fusion: &Fusion<'_>, scratch: &mut Vec<f32>) {
        let (w, acts, rows) = (self.weights(bi), self.acts(acts, bi), view.act_rows());
        match &fusion.limits {
            Some(limits) => causal::split(view, limits, |v| tiles::mul_mat(&w, &acts, q, v, scratch)),
            None if fusion.trim => causal::trim_keys(view, &w, &acts, |v, k| tiles::mul_mat(&w.prefix(k), &acts.prefix(k), q, v, scratch)),
            None => tiles::mul_mat(&w, &acts, q, view, scratch),
        }
        if let Some(t) = fusion.fused {
            let (i2, i3) = self.batches[bi];
            let (n, d) = (self.n, self.d);
            rows.for_each(|j| t.row(j + n * (i2 + d.ne[2] * i3), fusion.limits.as_ref().map(|l| l[j])));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::super::mul_mat;
    use super::super::tests::{query_values, raw, weight_bytes};
    use crate::pool::Pool;
    use crate::quant::{type_id, BlockQ8_0};

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
