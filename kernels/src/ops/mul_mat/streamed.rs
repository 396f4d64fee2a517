//! Decode-time products: weight matrices against one activation row, which read every weight
//! row from memory once per token. Two things make them faster than the general chunk loop:
//!
//! * **Own runs of rows** (`stream_order`): each thread streams a contiguous run of chunks and
//!   only then takes the other threads' leftovers, so the kernel's prefetching (a few KiB ahead
//!   of the rows it is on) runs ahead of its own next rows.
//! * **Siblings computed together** ([`siblings`]): products of the same activation row that
//!   follow in the graph (Q, K and V of a layer; FFN gate and up) run as one product, so the
//!   activation is quantized once and the threads meet once. A decode step had ~210 products,
//!   and each paid ~2.5 us outside its rows (preparing, handing out work, waiting for the last
//!   thread). The siblings' outputs wait in [`Ahead`] until their own node comes: their
//!   destinations may still hold tensors that the nodes in between read (ggml's allocator gave
//!   SmolLM2's K product the bytes of the Q product, which ROPE reads before K is computed).

use super::buffers::{PREPARED, SCRATCH};
use super::{Raw, Session};
use crate::ops::for_rows;
use crate::cpu_features::simd_level;
use super::tiles::{self, Acts, DstView, QuantizedActs, Weights};
use crate::op::{Node, Op};
use crate::pool::share;
use crate::CpuOrder;
use crate::quant::HostQ8K;
use crate::quant::WType;
use crate::view::{alias, Alias, F32};
use parking_lot::Mutex;
use std::ops::Range;

/// Multiply-adds below which a product (streamed or not) runs on the calling thread alone.
pub(super) const SERIAL_MACS: usize = 64 * 1024;

/// One streamed product: weights `a` (one matrix) times the one F32 row `b`, into `d`.
#[derive(Clone, Copy)]
pub struct Streamed {
    w: WType,
    a: Raw,
    b: Raw,
    d: Raw,
    /// The revision's float order (the node's).
    order: CpuOrder,
    /// The node's host Q8_K quantizer.
    q8k: Option<HostQ8K>,
}

impl Streamed {
    /// The product `d = a . b` if it is streamed: one weight matrix (not empty), one packed F32
    /// activation row, the exact dot-product kernels (not sgemm). `supports` must hold.
    pub fn new(d: Raw, a: Raw, b: Raw, order: CpuOrder, q8k: Option<HostQ8K>) -> Option<Streamed> {
        let w = WType::from_ggml(a.ty)?;
        let one_row = b.ne[1] == 1 && b.ne[2] == 1 && b.ne[3] == 1;
        let ok = one_row && b.ty == F32 && b.nb[0] == 4 && a.ne[2] == 1 && a.ne[3] == 1 && a.ne[0] > 0 && a.ne[1] > 0 && !tiles::use_gemm(w, 1);
        ok.then_some(Streamed { w, a, b, d, order, q8k })
    }

    /// [`Self::new`] of a MUL_MAT node.
    pub fn of(n: &Node) -> Option<Streamed> {
        // (repacked weights have a kernel of their own, `repacked`)
        if n.op != Op::MulMat || n.repack.is_some() {
            return None;
        }
        Streamed::new(n.dst, n.src[0]?, n.src[1]?, n.order, n.q8k)
    }

    fn rows(&self) -> usize {
        self.a.ne[1]
    }

    /// Whether `other` multiplies the same activation row in the same partner format.
    fn shares_acts(&self, other: &Streamed) -> bool {
        let (x, y) = (&self.b, &other.b);
        self.w == other.w && x.data == y.data && x.ne == y.ne && x.nb == y.nb
    }

    /// The weights (a view of the tensor's bytes, which outlive the computation).
    fn weights<'a>(self) -> Weights<'a> {
        let (k, m) = (self.a.ne[0], self.rows());
        Weights::new(self.a.bytes_at(0, (m - 1) * self.a.nb[1] + self.w.row_bytes(k)), self.w, k, self.a.nb[1], m).in_order(self.order)
    }
}

/// Rows of a decode product's chunks are a multiple of this.
pub(super) const DECODE_MULTIPLE: usize = 8;

/// Chunks per batch of a decode product (`n = 1`) of `m` weight rows in `batches` batches:
/// large (up to 256 rows), as each chunk has a fixed cost (views, checks), but never fewer than
/// four per thread while they can stay 32 rows or more: with one chunk of 256 rows per thread a
/// 192-row product (K and V) ran on one thread while the other waited, and 576 rows (Q, O, FFN
/// down) split 256 + 256 + 64. With several batches (decode attention: one product per head)
/// the heads themselves are chunks enough; splitting each into 4 x threads more made 72 chunks
/// of 36 rows for SmolLM2's 9 heads, each paying the chunk's fixed cost.
pub(super) fn decode_parts(m: usize, batches: usize, threads: usize) -> usize {
    let total = (4 * threads).min(batches * m / 32);
    m.div_ceil(256).max(total.div_ceil(batches)).max(1)
}

/// `products[0]` and its siblings `products[1..]` (all sharing `products[0]`'s activation row),
/// each into its output slice. Every output keeps the one-product arithmetic.
fn run(s: &Session, products: &mut [(Streamed, &mut [f32])]) -> bool {
    // with GGML_RS_SIMD_PROFILE: what a product costs before its rows (quantizing the
    // activation, cutting the chunks), ~1.1 us per product of a SmolLM2 decode step
    let entered = crate::profile::enabled().then(std::time::Instant::now);
    let first = products[0].0;
    let k = first.b.ne[0];
    let acts = Acts::new(first.b.f32_at(0, k), k, 1, k);
    // the calling thread's activation buffers, kept between products
    let mut prepared = PREPARED.with(|p| std::mem::take(&mut *p.borrow_mut()));
    if prepared.is_empty() {
        prepared.push(QuantizedActs::new());
    }
    let q = &mut prepared[0];
    let converted = std::cell::Cell::new(true);
    if tiles::needs_quantized_acts(first.w, 1) {
        // (one row of a few thousand values: `for_rows` converts it on this thread)
        q.host_q8k = first.q8k;
        q.prepare_par(simd_level(), first.w, &acts, &|rows, f| converted.set(for_rows(s, rows, rows * k, f) && converted.get()));
    }
    if !converted.get() {
        PREPARED.with(|p| *p.borrow_mut() = prepared);
        return false;
    }
    let q = &prepared[0];
    let weights: Vec<Weights<'_>> = products.iter().map(|(p, _)| p.weights()).collect();
    let rows: usize = products.iter().map(|(p, _)| p.rows()).sum();
    let sizes: Vec<usize> = products.iter().map(|(p, _)| p.rows()).collect();
    let (pieces, runs) = graded_chunks(&sizes, s.n_threads());
    let mut chunks: Vec<(usize, Mutex<Option<DstView<'_>>>)> = Vec::with_capacity(pieces.len());
    let mut pieces = pieces.iter().peekable();
    for (i, (p, out)) in products.iter_mut().enumerate() {
        let m = p.rows();
        let mut rest = DstView::new(&mut out[..m], 1, m, m);
        while let Some((_, r)) = pieces.next_if(|(pi, _)| *pi == i) {
            let (piece, right) = rest.split_at(r.end);
            chunks.push((i, Mutex::new(Some(piece))));
            rest = right;
        }
    }
    let work = |ith: usize, _nth: usize| {
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            for c in stream_order(&runs, ith) {
                let (i, slot) = &chunks[c];
                let Some(view) = slot.lock().take() else { continue };
                tiles::mul_mat(&weights[*i], &acts, q, view, &mut scratch);
            }
        })
    };
    if let Some(t0) = entered {
        crate::profile::record("(streamed) product set up before its threads start".to_string(), t0.elapsed());
    }
    let ok = if rows * k < SERIAL_MACS { std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(0, 1))).is_ok() } else { s.run(&work) };
    drop(chunks);
    PREPARED.with(|p| *p.borrow_mut() = prepared);
    ok
}

/// One streamed product into its own destination.
pub fn compute(s: &Session, p: Streamed) -> bool {
    let out = p.d.f32_at_mut(0, p.rows());
    run(s, &mut [(p, out)])
}

/// A chunk of a streamed product: (the product's index, its weight rows).
type Piece = (usize, Range<usize>);

/// Where the chunks of a thread's run end, in sixteenths of the run: three big chunks, then
/// smaller ones (1/8, 1/16, 1/16) at the end, which is where another thread steals from. With
/// four equal chunks per thread, the thread that ran out first waited for up to a quarter of
/// the other's run (SmolLM2's FFN gate + up: a chunk of ~11 us).
const RUN_CUTS: [usize; 6] = [4, 8, 12, 14, 15, 16];

/// The chunks of products of `rows[i]` weight rows computed together by `nth` threads: the
/// products' rows side by side are split into one run per thread (multiples of
/// [`DECODE_MULTIPLE`] rows), each run cut at [`RUN_CUTS`] and at the products' boundaries.
/// Returns the chunks in row order as (product, its rows) and each thread's run as a range of
/// chunk indices.
fn graded_chunks(rows: &[usize], nth: usize) -> (Vec<Piece>, Vec<Range<usize>>) {
    let total: usize = rows.iter().sum();
    let units = total.div_ceil(DECODE_MULTIPLE);
    let at = |u: usize| (u * DECODE_MULTIPLE).min(total);
    let mut chunks = Vec::new();
    let mut runs = Vec::with_capacity(nth);
    // (product, first row of the product in the rows side by side)
    let mut product = (0, 0);
    for t in 0..nth.max(1) {
        let (a, b) = share(units, t, nth.max(1));
        let first = chunks.len();
        let mut start = at(a);
        for f in RUN_CUTS {
            let end = at(a + (b - a) * f / 16);
            while start < end {
                while start >= product.1 + rows[product.0] {
                    product = (product.0 + 1, product.1 + rows[product.0]);
                }
                let stop = end.min(product.1 + rows[product.0]);
                chunks.push((product.0, start - product.1..stop - product.1));
                start = stop;
            }
        }
        runs.push(first..chunks.len());
    }
    (chunks, runs)
}

/// The order in which thread `ith` takes the chunks of a streamed product: its own run first,
/// front to back, then the other threads' runs back to front, each chunk taken by whichever
/// thread comes first.
///
/// With chunks handed out in turn from one counter, the next chunk of a thread lay past the
/// other thread's, so each chunk started with nothing in flight and its last prefetches fetched
/// the other thread's rows. Own runs keep each thread's stream contiguous (SmolLM2's generation
/// 1.048-1.076x on two threads), and taking the others' leftovers from their far end (the
/// small chunks of [`RUN_CUTS`]) still balances a thread the OS delays.
fn stream_order(runs: &[Range<usize>], ith: usize) -> impl Iterator<Item = usize> + '_ {
    let n = runs.len();
    let own = runs.get(ith).cloned().unwrap_or(0..0);
    let others = (1..=n).map(move |t| (ith + t) % n).filter(move |&r| r != ith).flat_map(move |r| runs[r].clone().rev());
    own.chain(others)
}

/// Nodes after a streamed product that [`siblings`] looks at (SmolLM2's V product is the sixth
/// node after its Q product).
pub const LOOKAHEAD: usize = 8;

/// A node after the first product, as [`siblings`] sees it.
pub struct Later {
    /// the node's index in the graph
    pub index: usize,
    /// what the node writes (its destination; nodes that write nothing are left out)
    pub dst: Raw,
    /// the node as a streamed product the backend supports, if it is one
    pub product: Option<Streamed>,
}

/// Which of the nodes `later` (in graph order, up to [`LOOKAHEAD`] after `first`) can be
/// computed now, together with `first`: streamed products of the same activation row whose
/// activation and weights no node before them writes. Returns their positions in `later`.
pub fn siblings(first: &Streamed, later: &[Later]) -> Vec<usize> {
    let mut found = Vec::new();
    // what the nodes from `first` up to the one looked at write
    let mut between: Vec<Raw> = vec![first.d];
    for (i, node) in later.iter().enumerate() {
        if let Some(p) = node.product.filter(|p| first.shares_acts(p)) {
            // computed now, it reads the weights it would read at its turn
            if between.iter().all(|d| alias(d, &p.a) == Alias::Apart) {
                found.push(i);
            }
        }
        // from a node that writes the activation on, the products would read other values
        if alias(&node.dst, &first.b) != Alias::Apart {
            break;
        }
        between.push(node.dst);
    }
    found
}

/// Outputs of sibling products computed ahead of their nodes, by node index.
#[derive(Default)]
pub struct Ahead {
    done: Vec<(usize, Vec<f32>)>,
    /// buffers of outputs already stored, for the next siblings
    spare: Vec<Vec<f32>>,
    /// A softmax node computed with the product before it (`exec::fused_softmax`).
    pub fused: Option<usize>,
}

impl Ahead {
    /// Computes `first` (into its destination) and the products `later[i]` for every `i` in
    /// `picked` (into buffers kept until their nodes come, see [`Self::store`]).
    pub fn compute(&mut self, s: &Session, first: Streamed, later: &[Later], picked: &[usize]) -> bool {
        let mut outs: Vec<(usize, Streamed, Vec<f32>)> = picked
            .iter()
            .filter_map(|&i| {
                let p = later[i].product?;
                let mut buf = self.spare.pop().unwrap_or_default();
                buf.clear();
                buf.resize(p.rows(), 0.0);
                Some((later[i].index, p, buf))
            })
            .collect();
        let first_out = first.d.f32_at_mut(0, first.rows());
        let mut products: Vec<(Streamed, &mut [f32])> = vec![(first, first_out)];
        products.extend(outs.iter_mut().map(|(_, p, buf)| (*p, buf.as_mut_slice())));
        let ok = run(s, &mut products);
        drop(products);
        self.done.extend(outs.into_iter().map(|(index, _, buf)| (index, buf)));
        ok
    }

    /// If node `index` was computed ahead, writes its outputs into `dst` and returns true.
    /// (Outputs that do not fit `dst`, which no graph produces, are dropped: the node is then
    /// computed at its turn.)
    pub fn store(&mut self, index: usize, dst: &Raw) -> bool {
        let Some(at) = self.done.iter().position(|(i, _)| *i == index) else { return false };
        let (_, buf) = self.done.swap_remove(at);
        let fits = dst.ty == F32 && dst.nb[0] == 4 && dst.ne == [buf.len(), 1, 1, 1];
        if fits {
            dst.f32_at_mut(0, buf.len()).copy_from_slice(&buf);
        }
        self.spare.push(buf);
        fits
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{query_values, raw, weight_bytes};
    use super::*;
    use crate::pool::Pool;
    use crate::quant::type_id;

    /// An F32 row of `n` values at byte `at` of a fake arena (never read: addresses only).
    fn row_at(at: usize, n: usize) -> Raw {
        Raw { data: (0x10_0000 + at) as *mut u8, ne: [n, 1, 1, 1], nb: [4, 4 * n, 4 * n, 4 * n], ty: F32 }
    }

    /// A streamed Q8_0 product of `m` rows of `k` at byte `w` of the arena, against `b`.
    fn product(w: usize, k: usize, m: usize, b: Raw, d: Raw) -> Streamed {
        let row = k / 32 * 34;
        let a = Raw { data: (0x10_0000 + w) as *mut u8, ne: [k, m, 1, 1], nb: [34, row, row * m, row * m], ty: type_id::Q8_0 };
        Streamed::new(d, a, b, CpuOrder::BEFORE_2026, None).expect("a streamed product")
    }

    /// Which later products are computed with the first: those of the same activation row,
    /// up to the first node that writes that row, and not one whose weights a node before it
    /// writes; a different activation row or weight type never.
    #[test]
    fn siblings_stop_where_the_activation_is_written() {
        let k = 64;
        let act = row_at(0, k);
        let first = product(1 << 16, k, 96, act, row_at(4096, 96));
        let later = |dst: Raw, p: Option<Streamed>, index: usize| Later { index, dst, product: p };
        // Q, ROPE (writes elsewhere), K, ROPE, V: K and V are siblings
        let k_out = row_at(4096, 32); // K's destination: Q's bytes, which ROPE reads before K
        let nodes = vec![
            later(row_at(8192, 96), None, 1),
            later(k_out, Some(product(2 << 16, k, 32, act, k_out)), 2),
            later(row_at(12288, 32), None, 3),
            later(row_at(16384, 32), Some(product(3 << 16, k, 32, act, row_at(16384, 32))), 4),
        ];
        assert_eq!(siblings(&first, &nodes), [1, 3]);
        // a node writing into the activation row: products after it are not siblings
        let mut cut = nodes;
        cut[2].dst = row_at(128, 8);
        assert_eq!(siblings(&first, &cut), [1]);
        // another activation row, another weight type: not siblings
        let other = row_at(20480, k);
        let f16 = {
            let mut p = product(4 << 16, k, 32, act, row_at(24576, 32));
            p.w = WType::F16;
            p
        };
        let nodes = vec![later(row_at(24576, 32), Some(product(4 << 16, k, 32, other, row_at(24576, 32))), 1), later(row_at(28672, 32), Some(f16), 2)];
        assert!(siblings(&first, &nodes).is_empty());
        // weights written by a node in between: that product waits for its turn, a later one
        // with untouched weights does not
        let w2 = 2 << 16;
        let nodes = vec![
            later(row_at(w2, 8), None, 1),
            later(row_at(8192, 32), Some(product(w2, k, 32, act, row_at(8192, 32))), 2),
            later(row_at(12288, 32), Some(product(3 << 16, k, 32, act, row_at(12288, 32))), 3),
        ];
        assert_eq!(siblings(&first, &nodes), [2]);
    }

    /// An empty weight matrix is no streamed product (its last row's end would wrap around):
    /// the general path returns at once, and nothing is written.
    #[test]
    fn empty_weights_are_not_streamed() {
        let k = 64;
        let mut acts = query_values(k);
        let b = raw(&mut acts, F32, 4, 1, [k, 1, 1]);
        let mut none: Vec<u8> = Vec::new();
        let a = raw(&mut none, type_id::Q8_0, 34, 32, [k, 0, 1]);
        let mut out: Vec<f32> = Vec::new();
        let d = raw(&mut out, F32, 4, 1, [0, 1, 1]);
        assert!(Streamed::new(d, a, b, CpuOrder::BEFORE_2026, None).is_none());
        let pool = Pool::new(2);
        assert!(super::super::mul_mat(&pool.session(), d, a, b));
    }

    /// Products computed ahead with the first give each product's own bits, stored when their
    /// nodes come (Q8_0 and F16 weights, 1 and 2 threads).
    #[test]
    fn products_computed_ahead_equal_one_product_each() {
        let k = 96;
        for ty in [type_id::Q8_0, type_id::F16] {
            let (elem, block) = if ty == type_id::Q8_0 { (34, 32) } else { (2, 1) };
            let rows = [200, 64, 72];
            let mut weights: Vec<Vec<u8>> = rows.iter().map(|&m| weight_bytes(ty, k, m, 1)).collect();
            let mut acts = query_values(k);
            let b = raw(&mut acts, F32, 4, 1, [k, 1, 1]);
            for threads in [1, 2] {
                let pool = Pool::new(threads);
                let s = pool.session();
                let mut want: Vec<Vec<f32>> = rows.iter().map(|&m| vec![0f32; m]).collect();
                let mut got: Vec<Vec<f32>> = rows.iter().map(|&m| vec![f32::NAN; m]).collect();
                let mut ps = Vec::new();
                for i in 0..rows.len() {
                    let a = raw(&mut weights[i], ty, elem, block, [k, rows[i], 1]);
                    assert!(super::super::mul_mat(&s, raw(&mut want[i], F32, 4, 1, [rows[i], 1, 1]), a, b));
                    ps.push(Streamed::new(raw(&mut got[i], F32, 4, 1, [rows[i], 1, 1]), a, b, CpuOrder::BEFORE_2026, None).unwrap());
                }
                let later: Vec<Later> = ps[1..].iter().enumerate().map(|(i, p)| Later { index: 5 + i, dst: p.d, product: Some(*p) }).collect();
                let mut ahead = Ahead::default();
                assert!(ahead.compute(&s, ps[0], &later, &[0, 1]));
                assert!(got[1].iter().chain(&got[2]).all(|x| x.is_nan()), "siblings are stored at their own nodes");
                assert!(!ahead.store(4, &ps[1].d));
                assert!(ahead.store(6, &ps[2].d) && ahead.store(5, &ps[1].d));
                assert!(!ahead.store(5, &ps[1].d), "stored once");
                for i in 0..rows.len() {
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&got[i]), bits(&want[i]), "type {ty}, product {i}, {threads} threads");
                }
            }
        }
    }

    /// Each thread's order holds every chunk once: its own run front to back, then the others'
    /// runs back to front (the next thread's first), so a thread the OS delays loses only the
    /// chunks at the far end of its run.
    #[test]
    fn stream_order_runs_own_chunks_then_steals_from_the_far_end() {
        let two = [0..4, 4..8];
        assert_eq!(stream_order(&two, 0).collect::<Vec<_>>(), [0, 1, 2, 3, 7, 6, 5, 4]);
        assert_eq!(stream_order(&two, 1).collect::<Vec<_>>(), [4, 5, 6, 7, 3, 2, 1, 0]);
        let three = [0..3, 3..5, 5..7];
        assert_eq!(stream_order(&three, 1).collect::<Vec<_>>(), [3, 4, 6, 5, 2, 1, 0]);
        assert_eq!(stream_order(std::slice::from_ref(&(0..5)), 0).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
        // a thread without a run of its own (serial fallback) takes every run from the far end
        assert_eq!(stream_order(&two, 2).collect::<Vec<_>>(), [7, 6, 5, 4, 3, 2, 1, 0]);
    }

    /// The products' rows side by side, one run per thread, each run cut into 4/16, 4/16, 4/16,
    /// 2/16, 1/16 and 1/16 of its rows (multiples of 8) and at the products' boundaries: every
    /// row of every product in exactly one chunk, the smallest chunks at a run's end.
    #[test]
    fn graded_chunks_cover_every_row_once_small_ones_last() {
        // Q, K and V of SmolLM2 on two threads: 480 rows each
        let (chunks, runs) = graded_chunks(&[576, 192, 192], 2);
        assert_eq!(runs, [0..6, 6..14]);
        let lens = |r: Range<usize>| chunks[r].iter().map(|(_, r)| r.len()).collect::<Vec<_>>();
        assert_eq!(lens(runs[0].clone()), [120, 120, 120, 56, 32, 32]);
        // thread 1's run (rows 480..960) starts in Q and is cut where K and V begin
        assert_eq!(chunks[6..10], [(0, 480..576), (1, 0..24), (1, 24..144), (1, 144..192)]);
        assert_eq!(lens(runs[1].clone()), [96, 24, 120, 48, 72, 56, 32, 32]);
        for (sizes, nth) in [(vec![576usize, 192, 192], 2), (vec![1536, 1536], 2), (vec![49152], 2), (vec![13], 2), (vec![8, 8, 40], 3), (vec![576], 1), (vec![200, 64, 72], 4)] {
            let (chunks, runs) = graded_chunks(&sizes, nth);
            assert_eq!(runs.len(), nth);
            assert_eq!(runs.first().map(|r| r.start), Some(0));
            assert!(runs.windows(2).all(|w| w[0].end == w[1].start) && runs.last().map(|r| r.end) == Some(chunks.len()));
            for (i, &m) in sizes.iter().enumerate() {
                let mut got: Vec<usize> = chunks.iter().filter(|(p, _)| *p == i).flat_map(|(_, r)| r.clone()).collect();
                assert!(got.windows(2).all(|w| w[0] < w[1]), "{sizes:?}: product {i} in row order");
                got.dedup();
                assert_eq!(got, (0..m).collect::<Vec<_>>(), "{sizes:?} on {nth}: product {i}");
            }
            assert!(chunks.iter().all(|(_, r)| !r.is_empty()));
        }
    }
}
