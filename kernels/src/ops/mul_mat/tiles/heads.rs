//! Float products with short rows (`k` of 64, 128, 192 or 256: whisper's and SmolLM2's KQ, one
//! attention head long, and a prompt's KQV, as long as the keys it reads), with the vector lanes
//! across weight rows instead of along the row; each x86 level supplies its vectors ([`Lanes`]:
//! eight lanes on AVX2, sixteen on AVX-512).
//!
//! ggml's order gives each output four accumulators of `k / 32` multiply-adds each, then a fold
//! and a horizontal sum: with lanes along the row (the levels' `float` tiles) the sum is a lane
//! shuffle per output, which at `k` = 64 costs about what the multiply-adds do (AVX2: the tile's
//! 32 accumulators do not fit its 16 registers either, so whisper's KQ ran at a quarter of the
//! FMA rate). Here lane `r` of a vector is weight row `LANES * g + r`: the same multiply-adds,
//! folds and sums of the same operands happen lane by lane, with no shuffle, and a finished
//! vector is `LANES` neighbouring outputs of one activation row, stored at once. The weights are
//! widened into a transposed f32 panel once per chunk (element `e` of the group's rows side by
//! side); each activation value is broadcast from memory, `C` activation rows per panel load.
//!
//! Everything here is `#[inline(always)]` and free of closures on the hot path, so it compiles
//! inside each level's `#[target_feature]` entry with that level's instructions; only the inner
//! [`group`] is a function of its own per level ([`Lanes::group`]).

// Output arrays index activation rows and lanes with the same numbers as the kernel's doc.
#![allow(clippy::needless_range_loop)]

use super::operands::DstView;
use std::cell::RefCell;

/// Activation rows up to which [`rows`] declines (decoding with grouped query heads): the levels'
/// few-row tiles read each weight vector once for all the rows, straight from the weights, where
/// this kernel would build its panel for a handful of outputs.
const FEW_ACTS: usize = 4;

/// Activation rows widened per block; each group of the panel passes over all of them while in
/// L1 (pair by pair, the whole panel streamed from L2 for every pair, at L2's bandwidth).
const BLOCK: usize = 8;

/// Most lanes a level may have (sizes the buffer of a ragged last group).
const MAX_LANES: usize = 16;

/// One SIMD level's f32 vectors, `LANES` wide.
///
/// # Safety
/// The methods need the implementing level's CPU features; [`rows`] is only entered with them.
pub(super) unsafe trait Lanes {
    type V: Copy;
    const LANES: usize;
    /// # Safety (all methods)
    /// The level's CPU features; pointers valid for `LANES` floats (`splat`: one).
    unsafe fn zero() -> Self::V;
    unsafe fn load(p: *const f32) -> Self::V;
    unsafe fn splat(p: *const f32) -> Self::V;
    unsafe fn fma(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn store(p: *mut f32, v: Self::V);
    /// [`group`], compiled as a function of its own with the level's features: inlined into
    /// [`rows`], LLVM spilled the accumulators and indexed the activation rows through the
    /// stack (whisper's KQ 5.9 ms against 4.3 ms per two heads, `bench_ops_lm`).
    ///
    /// # Safety
    /// As [`group`].
    unsafe fn group<const C: usize, const K: usize>(p: *const f32, a: [*const f32; C]) -> [Self::V; C];
}

/// Rows of element type `T` (F16 as half bits, or f32) as a level widens them.
///
/// # Safety
/// As [`Lanes`].
pub(super) unsafe trait LaneRows<T>: Lanes {
    /// Writes element `e` of `rows[r]` to `panel[e * LANES + r]` for every `e < k`.
    ///
    /// # Safety
    /// `rows` holds `LANES` rows of `k` elements (a multiple of 16); `panel` has `k * LANES`
    /// writable floats; the level's CPU features.
    unsafe fn transpose(rows: &[&[T]], k: usize, panel: *mut f32);
    /// Row `row` (a multiple of 16 elements) as f32 into `out` (as many writable floats).
    ///
    /// # Safety
    /// As above.
    unsafe fn widen(row: &[T], out: *mut f32);
}

thread_local! {
    /// Each worker's transposed weight panel, reused across chunks and products.
    static PANEL: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// Every output of `dst` in exactly ggml-cpu's `vec_dot_f16/f32` arithmetic (see the module doc),
/// `C` activation rows per panel pass, when this kernel takes the product; false (nothing
/// computed) when it does not: up to [`FEW_ACTS`] activation rows, or rows other than 64, 128,
/// 192 or 256 long. Those are whole steps of ggml's 32-element loop, each length its own
/// instantiation (the step count a constant of the code: with a variable one the 64-long KQ ran
/// 1.3-1.4x slower), up to where a block's rows and a group's panel still sit in L1; prompt
/// KQV's key counts are whole multiples of 64 (`causal::trim_keys`).
///
/// # Safety
/// The CPU has the features of `L`'s level; inlined into a function compiled for them.
#[inline(always)]
pub(super) unsafe fn rows<'w, 'a, L: LaneRows<E> + LaneRows<A>, E: 'w, A: 'a, const C: usize>(w: impl Fn(usize) -> &'w [E], a: impl Fn(usize) -> &'a [A], dst: &mut DstView<'_>) -> bool {
    let acts = dst.act_rows();
    if acts.len() <= FEW_ACTS {
        return false;
    }
    // SAFETY (all arms): passed on from this function's contract.
    unsafe {
        match a(acts.start).len() {
            64 => rows_k::<L, E, A, C, 64>(w, a, dst),
            128 => rows_k::<L, E, A, C, 128>(w, a, dst),
            192 => rows_k::<L, E, A, C, 192>(w, a, dst),
            256 => rows_k::<L, E, A, C, 256>(w, a, dst),
            _ => return false,
        }
    }
    true
}

/// [`rows`] for rows of `K` elements.
///
/// # Safety
/// As [`rows`].
#[inline(always)]
unsafe fn rows_k<'w, 'a, L: LaneRows<E> + LaneRows<A>, E: 'w, A: 'a, const C: usize, const K: usize>(w: impl Fn(usize) -> &'w [E], a: impl Fn(usize) -> &'a [A], dst: &mut DstView<'_>) {
    const { assert!(C >= 1 && C <= BLOCK) };
    let lanes = <L as Lanes>::LANES;
    assert!(lanes <= MAX_LANES);
    let rows = dst.weight_rows();
    let (m, r0) = (rows.len(), rows.start);
    if m == 0 {
        return;
    }
    let groups = m.div_ceil(lanes);
    // (taken out of the thread-local rather than used inside `with`: a closure would not be
    // compiled with the level's features)
    let mut panel = PANEL.with(|p| std::mem::take(&mut *p.borrow_mut()));
    // SAFETY: passed on from this function's contract.
    unsafe { transpose_rows::<L, E, K>(&w, r0, m, &mut panel) };
    let full = m / lanes;
    let acts = dst.act_rows();
    let mut ar = [[0f32; K]; BLOCK];
    let mut j0 = acts.start;
    while j0 < acts.end {
        let nb = (acts.end - j0).min(BLOCK);
        // the block's activation rows as f32; rows past the block's last repeat it (computed,
        // not stored)
        for c in 0..BLOCK {
            let row = a(j0 + c.min(nb - 1));
            assert_eq!(row.len(), K, "row of the wrong length");
            // SAFETY: K elements (asserted) into K floats; features by this function's contract.
            unsafe { <L as LaneRows<A>>::widen(row, ar[c].as_mut_ptr()) };
        }
        for g in 0..groups {
            let mut c = 0;
            while c < nb {
                let mut ap = [ar[0].as_ptr(); C];
                for i in 0..C {
                    ap[i] = ar[(c + i).min(nb - 1)].as_ptr();
                }
                // SAFETY: group g's K * LANES floats are inside the panel, each `ap` row holds K
                // floats; features by this function's contract.
                let v = unsafe { L::group::<C, K>(panel.as_ptr().add(g * K * lanes), ap) };
                for i in 0..C.min(nb - c) {
                    let row = dst.row_mut(j0 + c + i);
                    if g < full {
                        // SAFETY: (g + 1) * LANES <= m floats in the row; features as above.
                        unsafe { L::store(row[g * lanes..(g + 1) * lanes].as_mut_ptr(), v[i]) };
                    } else {
                        let mut last = [0f32; MAX_LANES];
                        // SAFETY: LANES <= MAX_LANES writable floats; features as above.
                        unsafe { L::store(last.as_mut_ptr(), v[i]) };
                        row[g * lanes..].copy_from_slice(&last[..m - g * lanes]);
                    }
                }
                c += C;
            }
        }
        j0 += nb;
    }
    PANEL.with(|p| *p.borrow_mut() = panel);
}

/// The weight rows `r0..r0 + m` of [`rows_k`] transposed into `panel`, `LANES` rows a group
/// (`K * LANES` floats each); lanes past the last row repeat it (computed, not stored).
///
/// # Safety
/// As [`rows`].
#[inline(always)]
unsafe fn transpose_rows<'w, L: LaneRows<E>, E: 'w, const K: usize>(w: &impl Fn(usize) -> &'w [E], r0: usize, m: usize, panel: &mut Vec<f32>) {
    let lanes = <L as Lanes>::LANES;
    let groups = m.div_ceil(lanes);
    panel.clear();
    panel.resize(groups * K * lanes, 0.0);
    let mut group_rows: Vec<&[E]> = Vec::with_capacity(lanes);
    for g in 0..groups {
        // lanes past the last row repeat it (computed, not stored)
        group_rows.clear();
        group_rows.extend((0..lanes).map(|lane| w(r0 + (lanes * g + lane).min(m - 1))));
        assert!(group_rows.iter().all(|r| r.len() == K), "row of the wrong length");
        // SAFETY: LANES rows of K elements (asserted); group g's K * LANES floats are inside the
        // panel (resized above); features by this function's contract.
        unsafe { <L as LaneRows<E>>::transpose(&group_rows, K, panel.as_mut_ptr().add(g * K * lanes)) };
    }
}

/// `LANES` outputs (lanes: the group's weight rows) for each of `C` activation rows. Output
/// `(r, c)` in ggml's order: accumulator `j` over lanes `l` is
/// `p_j[l] = fma(w[32s + 8j + l], a[32s + 8j + l], ... fma(w[8j + l], a[8j + l], 0))` over the
/// row's `K / 32` steps `s`, folded as
/// `x[l] = (p_0 + p_2) + (p_1 + p_3)`, then summed as `t_i = x_i + x_{i+4}`,
/// `(t_0 + t_1) + (t_2 + t_3)`.
///
/// # Safety
/// The level's features; `p` points at `K` x `LANES` floats (`p[LANES * e + r]`: element `e`
/// of weight row `r`) and every `a[c]` at `K` floats.
#[inline(always)]
pub(super) unsafe fn group<L: Lanes, const C: usize, const K: usize>(p: *const f32, a: [*const f32; C]) -> [L::V; C] {
    // SAFETY (all): passed on from this function's contract.
    unsafe {
        let (t0, t1) = (t_of::<L, C, K>(p, a, 0), t_of::<L, C, K>(p, a, 1));
        let mut u0 = [L::zero(); C];
        for c in 0..C {
            u0[c] = L::add(t0[c], t1[c]);
        }
        let (t2, t3) = (t_of::<L, C, K>(p, a, 2), t_of::<L, C, K>(p, a, 3));
        let mut out = [L::zero(); C];
        for c in 0..C {
            out[c] = L::add(u0[c], L::add(t2[c], t3[c]));
        }
        out
    }
}

/// `t_i = x_i + x_{i+4}` of [`group`].
///
/// # Safety
/// As [`group`].
#[inline(always)]
unsafe fn t_of<L: Lanes, const C: usize, const K: usize>(p: *const f32, a: [*const f32; C], i: usize) -> [L::V; C] {
    // SAFETY: passed on from this function's contract.
    unsafe {
        let (lo, hi) = (x_of::<L, C, K>(p, a, i), x_of::<L, C, K>(p, a, i + 4));
        let mut t = [L::zero(); C];
        for c in 0..C {
            t[c] = L::add(lo[c], hi[c]);
        }
        t
    }
}

/// `x_l = (p_0 + p_2) + (p_1 + p_3)` of [`group`].
///
/// # Safety
/// As [`group`].
#[inline(always)]
unsafe fn x_of<L: Lanes, const C: usize, const K: usize>(p: *const f32, a: [*const f32; C], l: usize) -> [L::V; C] {
    // SAFETY: passed on from this function's contract.
    unsafe {
        let (p0, p2) = (acc::<L, C, K>(p, a, 0, l), acc::<L, C, K>(p, a, 2, l));
        let mut h = [L::zero(); C];
        for c in 0..C {
            h[c] = L::add(p0[c], p2[c]);
        }
        let (p1, p3) = (acc::<L, C, K>(p, a, 1, l), acc::<L, C, K>(p, a, 3, l));
        for c in 0..C {
            h[c] = L::add(h[c], L::add(p1[c], p3[c]));
        }
        h
    }
}

/// Accumulator `j`, lane `l` of [`group`]: its `K / 32` multiply-adds, the first onto +0 as
/// ggml's zeroed accumulators (a `-0` product then sums as `+0`, as in ggml).
///
/// # Safety
/// As [`group`].
#[inline(always)]
unsafe fn acc<L: Lanes, const C: usize, const K: usize>(p: *const f32, a: [*const f32; C], j: usize, l: usize) -> [L::V; C] {
    const { assert!(K.is_multiple_of(32) && K >= 32) };
    // SAFETY: every element 32s + 8j + l < K, inside both operands by the contract.
    unsafe {
        let zero = L::zero();
        let mut out = [zero; C];
        for step in 0..K / 32 {
            let e = 32 * step + 8 * j + l;
            let w = L::load(p.add(L::LANES * e));
            for c in 0..C {
                out[c] = L::fma(w, L::splat(a[c].add(e)), out[c]);
            }
        }
        out
    }
}
