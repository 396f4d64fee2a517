//! The unpacked weight panel of batched block-format products: a chunk's weight rows unpacked
//! once ([`Panel`]), read by the tile kernel as [`WeightRow`]s ([`PanelRow`]), with Q4_1's
//! minimum sums computed before the tiles.

// Register tiles index several arrays (accumulators, prepared rows, scales) with the same row
// and column numbers; iterator chains over them would hide which output each FMA feeds.
#![allow(clippy::needless_range_loop)]

use super::super::acts::{ActRows, MinSums, MinSumsRow};
use super::quant::{NeonTile, WeightRow};
use std::arch::aarch64::*;

/// A chunk's weight blocks unpacked once (quants as signed bytes, scale and minimum as f32) for
/// batched products: the tile kernel then reads them instead of unpacking every block again for
/// each group of four activation rows.
pub(crate) struct Panel<F: NeonTile> {
    q: Vec<[int8x16_t; 2]>,
    /// `[d, m]` of every block.
    dm: Vec<[f32; 2]>,
    /// Q4_1: every output's `m * s` sum over the block pairs ([`Self::with_min_sums`]).
    summs: MinSums,
    nb: usize,
    _format: std::marker::PhantomData<F>,
}

impl<F: NeonTile> Panel<F> {
    /// Unpacks `rows` (each at least `nb` blocks long), row by row.
    pub(crate) fn new<'w>(rows: impl Iterator<Item = &'w [F::W]>, nb: usize) -> Self
    where
        F::W: 'w,
    {
        let (mut q, mut dm) = (Vec::new(), Vec::new());
        for row in rows {
            assert!(row.len() >= nb);
            for blk in &row[..nb] {
                let (p, d) = F::prep(blk);
                q.push(p);
                dm.push([d, F::min(blk)]);
            }
        }
        Panel { q, dm, summs: MinSums::default(), nb, _format: std::marker::PhantomData }
    }

    /// Q4_1: ggml's `summs += m0 * s0 + m1 * s1` (the first product fused) over the block pairs,
    /// for every row of the panel and every activation row in `acts`, four activation rows per
    /// vector, before the tiles run: in the tile it was three scalar operations per output and
    /// pair (7 % of the Q4_1 prompt products' instructions, counted). Each output's operations
    /// are the same, in the same order (an odd last block stays in the tile's tail, as in ggml).
    pub(crate) fn with_min_sums(mut self, a: &ActRows<'_, F::A>, acts: std::ops::Range<usize>) -> Self {
        // (Q5_1's two sums stay in the tile: its panel rows say MIN_SUMS = false)
        if !F::HAS_MIN || F::SPLIT_MIN {
            return self;
        }
        let (nb, n) = (self.nb, a.n);
        let rows = self.dm.len() / nb;
        assert!(nb == a.nb && acts.end <= n && a.s.len() >= n * nb);
        let mut sums = MinSums::new(rows, acts.clone());
        let dm = &self.dm;
        let pairs_end = nb & !1;
        let mut j = acts.start;
        while j + 4 <= acts.end {
            for r0 in (0..rows).step_by(8) {
                // rows past the last repeat it (computed, not stored)
                let at: [usize; 8] = std::array::from_fn(|r| (r0 + r).min(rows - 1) * nb);
                // SAFETY: NEON is baseline; (b + 1) * n + j + 4 <= nb * n <= s.len() (asserted);
                // at[r] + b + 1 < rows * nb = dm.len(); the stores are inside summs: r0 + r < rows
                // and j + 4 <= acts.end.
                unsafe {
                    let mut acc = [vdupq_n_f32(0.0); 8];
                    let mut b = 0;
                    while b < pairs_end {
                        let s0 = vld1q_f32(a.s.as_ptr().add(b * n + j));
                        let s1 = vld1q_f32(a.s.as_ptr().add((b + 1) * n + j));
                        for r in 0..8 {
                            let (m0, m1) = (dm.get_unchecked(at[r] + b)[1], dm.get_unchecked(at[r] + b + 1)[1]);
                            acc[r] = vaddq_f32(acc[r], vfmaq_n_f32(vmulq_n_f32(s1, m1), s0, m0));
                        }
                        b += 2;
                    }
                    for r in 0..8.min(rows - r0) {
                        let o = sums.at(r0 + r, j);
                        vst1q_f32(sums.values_mut()[o..o + 4].as_mut_ptr(), acc[r]);
                    }
                }
            }
            j += 4;
        }
        for jj in j..acts.end {
            for r in 0..rows {
                let mut sum = 0f32;
                let mut b = 0;
                while b < pairs_end {
                    let (m0, m1) = (dm[r * nb + b][1], dm[r * nb + b + 1][1]);
                    sum += m0.mul_add(a.s[b * n + jj], m1 * a.s[(b + 1) * n + jj]);
                    b += 2;
                }
                let o = sums.at(r, jj);
                sums.values_mut()[o] = sum;
            }
        }
        self.summs = sums;
        self
    }

    /// The same unpacked rows, walked as format `G`'s: for formats whose products are the
    /// same operations once unpacked (the caller's claim; the minimums' handling is checked
    /// here). A panel holds no format-specific data: quants as signed bytes, `[d, m]`, sums.
    pub(crate) fn as_format<G: NeonTile<A = F::A>>(self) -> Panel<G> {
        const { assert!(F::HAS_MIN == G::HAS_MIN && F::SPLIT_MIN == G::SPLIT_MIN) };
        Panel { q: self.q, dm: self.dm, summs: self.summs, nb: self.nb, _format: std::marker::PhantomData }
    }

    /// Panel row `r` (the `r`-th row given to [`Self::new`]).
    #[inline(always)]
    pub(crate) fn row(&self, r: usize) -> PanelRow<'_> {
        let at = r * self.nb..(r + 1) * self.nb;
        PanelRow { q: &self.q[at.clone()], dm: &self.dm[at], summs: self.summs.row(r) }
    }
}

/// One unpacked weight row of a [`Panel`].
#[derive(Clone, Copy)]
pub(crate) struct PanelRow<'p> {
    q: &'p [[int8x16_t; 2]],
    dm: &'p [[f32; 2]],
    /// The row's `m * s` sums ([`Panel::with_min_sums`]).
    summs: MinSumsRow<'p>,
}

impl<F: NeonTile> WeightRow<F> for PanelRow<'_> {
    #[inline(always)]
    fn blocks(&self) -> usize {
        self.q.len()
    }
    #[inline(always)]
    unsafe fn prep_at(&self, b: usize) -> ([int8x16_t; 2], f32) {
        // SAFETY: b < len by the contract (q and dm have the same length).
        unsafe { (*self.q.get_unchecked(b), self.dm.get_unchecked(b)[0]) }
    }
    #[inline(always)]
    unsafe fn min_at(&self, b: usize) -> f32 {
        // SAFETY: as prep_at.
        unsafe { self.dm.get_unchecked(b)[1] }
    }
    const MIN_SUMS: bool = !F::SPLIT_MIN;
    #[inline(always)]
    fn min_sums(&self) -> Option<MinSumsRow<'_>> {
        Some(self.summs)
    }
}
