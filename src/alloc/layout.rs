//! What a reserve decides once the graph is planned, the same for every revision: which graph
//! inputs to pin, where each block goes (offset and chunk), which inputs stay at risk, and the
//! bytes per arena. Building a plan from the graph (`plan`) is the revision's part, handed in.

use super::place;
use super::plan::{Pin, Plan, NONE};
use crate::error::Result;

/// How many single-input pins `plan_sizes` tries after pinning them all did not fit: each is a
/// plan and a placement of the whole graph, and a graph has few inputs of its own.
const PIN_TRIES: usize = 8;

/// Bytes per arena at the last reserve: what ggml-alloc would take for this graph (its liveness,
/// inputs freed after their last use, and its best fit, in chunks where it makes them), what we
/// took, and the most bytes alive at once in our plan.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ArenaStats {
    pub stock: usize,
    pub ours: usize,
    pub bound: usize,
    /// our buffers' sizes (one per chunk; several only past the buffer type's max size, 2026)
    pub chunks: Vec<usize>,
    /// stock's chunk sizes for the same graph
    pub stock_chunks: Vec<usize>,
    /// graph inputs whose memory we do not keep (the scheduler saves and restores them)
    pub unpinned_at_risk: usize,
    /// their bytes: the host copy the scheduler keeps for them, outside the compute buffers
    pub restored_bytes: usize,
}

/// Plans the graph into `plan` with `pin`, given each buffer id's arena and each arena's alignment.
pub type BuildPlan<'a> = dyn FnMut(&mut Plan, &[usize], &[usize], Pin<'_>) -> Result<()> + 'a;

/// The arenas, the current plan and its placement.
pub struct Layout {
    /// buffer id -> arena (buffer types listed twice share one arena and one buffer)
    pub arena_of: Vec<usize>,
    pub alignment: Vec<usize>,
    /// per arena: the buffer type's max size where this revision honours it (else unbounded)
    pub max_size: Vec<usize>,
    pub plan: Plan,
    pub offsets: Vec<usize>,
    /// per block: the chunk of its arena it lives in
    pub chunk: Vec<u8>,
    scratch: Vec<usize>,
    scratch_chunk: Vec<u8>,
    /// the unpinned graph inputs whose bytes a later node of the reserved plan overwrites, as
    /// (position in the graph: node or `LEAF | leaf`, buffer id, may be written back at once)
    pub at_risk_homes: Vec<(u32, usize, bool)>,
    pub stats: Vec<ArenaStats>,
}

impl Layout {
    pub fn new(arena_of: Vec<usize>, alignment: Vec<usize>, max_size: Vec<usize>) -> Self {
        let n = alignment.len();
        Layout {
            arena_of,
            alignment,
            max_size,
            plan: Plan::default(),
            offsets: Vec::new(),
            chunk: Vec::new(),
            scratch: Vec::new(),
            scratch_chunk: Vec::new(),
            at_risk_homes: Vec::new(),
            stats: vec![ArenaStats::default(); n],
        }
    }

    /// Plans the graph (`build`) and places its blocks: the chunk sizes per arena.
    ///
    /// Never more than ggml-alloc: stock's numbers are computed first (its liveness, inputs
    /// freed after their last use, replayed through its best fit). Then the graph inputs are
    /// pinned (kept to the end, so that a recompute reads what the caller wrote) as far as that
    /// stays within stock's bytes in every arena: all of them if that fits (the usual case, as
    /// the inputs live long anyway), else one at a time those whose bytes would be overwritten.
    /// The inputs left at risk are handed to the scheduler, which saves and restores them around
    /// each compute (`GraphAlloc::at_risk`).
    pub fn plan_sizes(&mut self, build: &mut BuildPlan<'_>) -> Result<Vec<Vec<usize>>> {
        let n = self.alignment.len();
        // stock: ggml-alloc's plan and placement
        self.build(build, Pin::Nothing)?;
        let stock: Vec<Vec<usize>> = (0..n).map(|a| self.stock_chunks(a)).collect();
        let fits = |ours: &[Vec<usize>]| ours.iter().zip(&stock).all(|(o, s)| o.iter().sum::<usize>() <= s.iter().sum::<usize>());

        let mut chosen = None;
        if self.plan.inputs.is_empty() {
            // nothing to pin: this plan is every plan
            chosen = Some(self.place_all());
        } else {
            self.build(build, Pin::All)?;
            let all = self.place_all();
            if fits(&all) {
                chosen = Some(all);
            }
        }
        if chosen.is_none() {
            // stock's plan with our placement (never larger than stock's), then pin what fits
            self.build(build, Pin::Nothing)?;
            let mut best = self.place_all();
            let mut risky: Vec<(usize, usize)> =
                self.risky_inputs().into_iter().map(|k| (self.plan.blocks[self.plan.inputs[k].block as usize].size, self.plan.inputs[k].addr)).collect();
            risky.sort_unstable();
            let mut pinned: Vec<usize> = Vec::new();
            let mut current_is_best = true;
            for &(_, addr) in risky.iter().take(PIN_TRIES) {
                let mut trial = pinned.clone();
                trial.push(addr);
                trial.sort_unstable();
                self.build(build, Pin::These(&trial))?;
                let sizes = self.place_all();
                if fits(&sizes) {
                    pinned = trial;
                    best = sizes;
                    current_is_best = true;
                } else {
                    current_is_best = false;
                }
            }
            if !current_is_best {
                self.build(build, Pin::These(&pinned))?;
                best = self.place_all();
            }
            chosen = Some(best);
        }
        let ours = chosen.unwrap_or_default();

        let risky = self.risky_inputs();
        self.at_risk_homes = risky
            .iter()
            .map(|&k| (self.plan.inputs[k].home, self.plan.blocks[self.plan.inputs[k].block as usize].buffer_id, !self.shares_end(k)))
            .collect();
        for a in 0..n {
            let arena_of = &self.arena_of;
            let blocks = &self.plan.blocks;
            let bound = place::bound(blocks, &self.plan.events, |b: u32| arena_of[blocks[b as usize].buffer_id] == a);
            let here: Vec<usize> = risky.iter().copied().filter(|&k| arena_of[blocks[self.plan.inputs[k].block as usize].buffer_id] == a).collect();
            let at_risk = here.len();
            let restored_bytes = here.iter().map(|&k| blocks[self.plan.inputs[k].block as usize].size).sum();
            self.stats[a] = ArenaStats {
                stock: stock[a].iter().sum(),
                ours: ours[a].iter().sum(),
                bound,
                chunks: ours[a].clone(),
                stock_chunks: stock[a].clone(),
                unpinned_at_risk: at_risk,
                restored_bytes,
            };
        }
        Ok(ours)
    }

    fn build(&mut self, build: &mut BuildPlan<'_>, pin: Pin<'_>) -> Result<()> {
        build(&mut self.plan, &self.arena_of, &self.alignment, pin)?;
        let nb = self.plan.blocks.len();
        for v in [&mut self.offsets, &mut self.scratch] {
            v.clear();
            v.resize(nb, 0);
        }
        for v in [&mut self.chunk, &mut self.scratch_chunk] {
            v.clear();
            v.resize(nb, 0);
        }
        Ok(())
    }

    fn members(&self, a: usize) -> Vec<u32> {
        (0..self.plan.blocks.len() as u32).filter(|&b| self.arena_of[self.plan.blocks[b as usize].buffer_id] == a).collect()
    }

    /// What ggml-alloc's placement takes for arena `a` of the current plan: its best fit, in
    /// chunks of at most the max size where the revision makes them. Fills `scratch`.
    fn stock_chunks(&mut self, a: usize) -> Vec<usize> {
        let (arena_of, blocks) = (&self.arena_of, &self.plan.blocks);
        let in_arena = |b: u32| arena_of[blocks[b as usize].buffer_id] == a;
        place::best_fit_chunked(blocks, &self.plan.events, in_arena, self.max_size[a], &mut self.scratch, &mut self.scratch_chunk)
    }

    /// Places every arena of the current plan into `offsets` / `chunk`: the smaller of stock's
    /// best fit and the offline by-size packing when it fits in one chunk, else stock's chunks.
    fn place_all(&mut self) -> Vec<Vec<usize>> {
        let mut out = Vec::with_capacity(self.alignment.len());
        for a in 0..self.alignment.len() {
            let members = self.members(a);
            let fit = self.stock_chunks(a);
            let blocks = &self.plan.blocks;
            for &b in &members {
                self.offsets[b as usize] = self.scratch[b as usize];
                self.chunk[b as usize] = self.scratch_chunk[b as usize];
            }
            let packed = place::by_size(blocks, &members, &mut self.scratch);
            let total: usize = fit.iter().sum();
            if packed < total && packed <= self.max_size[a] && place::disjoint(blocks, &members, &self.scratch) {
                for &b in &members {
                    self.offsets[b as usize] = self.scratch[b as usize];
                    self.chunk[b as usize] = 0;
                }
                out.push(vec![packed]);
            } else {
                out.push(fit);
            }
        }
        out
    }

    /// The unpinned inputs of the current plan (indices into `plan.inputs`) whose bytes a later
    /// tensor overwrites with the current offsets: computed in place over, or overlapped by a
    /// block taken after they were given back.
    fn risky_inputs(&self) -> Vec<usize> {
        let blocks = &self.plan.blocks;
        let arena = |b: u32| self.arena_of[blocks[b as usize].buffer_id];
        let mut out = Vec::new();
        for (k, inp) in self.plan.inputs.iter().enumerate() {
            if inp.handed_on {
                out.push(k);
                continue;
            }
            if inp.freed_at == NONE {
                continue;
            }
            let (ib, a) = (inp.block, arena(inp.block));
            let (lo, hi) = (self.offsets[ib as usize], self.offsets[ib as usize] + blocks[ib as usize].size);
            let hit = (0..blocks.len() as u32).any(|b| {
                let blk = &blocks[b as usize];
                b != ib
                    && blk.start > inp.freed_at
                    && blk.size > 0
                    && arena(b) == a
                    && self.chunk[b as usize] == self.chunk[ib as usize]
                    && self.offsets[b as usize] < hi
                    && lo < self.offsets[b as usize] + blk.size
            });
            if hit {
                out.push(k);
            }
        }
        out
    }

    /// Whether input `k`'s bytes (an at-risk one) end the graph under a tensor alive at its end:
    /// the block a node computed in place over it, or another block never given back (outputs).
    /// Writing the input back right after the compute would then destroy that tensor.
    fn shares_end(&self, k: usize) -> bool {
        let blocks = &self.plan.blocks;
        let inp = &self.plan.inputs[k];
        let ib = inp.block as usize;
        if inp.handed_on && blocks[ib].end == NONE {
            return true;
        }
        let a = self.arena_of[blocks[ib].buffer_id];
        let (lo, hi) = (self.offsets[ib], self.offsets[ib] + blocks[ib].size);
        (0..blocks.len()).any(|b| {
            let blk = &blocks[b];
            b != ib
                && blk.end == NONE
                && blk.size > 0
                && self.arena_of[blk.buffer_id] == a
                && self.chunk[b] == self.chunk[ib]
                && self.offsets[b] < hi
                && lo < self.offsets[b] + blk.size
        })
    }
}
