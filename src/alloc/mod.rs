//! The scheduler's graph allocator (the role of the host's `ggml-alloc`): one compute buffer per
//! buffer type, sized at reserve from a worst-case graph, then every later graph of the same shape
//! placed positionally into it without asking anything of C but the buffers' own `init_tensor`.
//!
//! Same outcomes as ggml-alloc where callers can see them: the same tensors get memory, the same
//! nodes are computed in place over their parents, views take `view_src->data + view_offs`, and
//! a graph that no longer fits is planned again (one buffer) or refused so the scheduler
//! re-reserves (several). Only the offsets differ when a tighter placement is found (`place`).
//!
//! `plan` decides liveness and in-place reuse; `place` turns lifetimes into offsets.

pub mod place;
pub mod plan;

use crate::abi::vtable::{obj, obj_mut};
use crate::abi::*;
use crate::error::Result;
use crate::{bail, ensure};
use plan::{Arenas, Pin, Plan, Rec, NONE};

/// ggml-alloc's `GGML_VBUFFER_MAX_CHUNKS` (2026): at most this many buffers per buffer type.
pub const MAX_CHUNKS: usize = 16;

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

/// A graph input whose bytes a later node of the placed graph overwrites (see
/// [`GraphAlloc::at_risk`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AtRisk<R: Rev> {
    pub tensor: *mut Tensor<R>,
    /// the scheduler backend (buffer id) whose compute buffer holds it
    pub buffer_id: usize,
    /// no tensor alive at the end of the graph (an output) shares its bytes, so the caller's data
    /// can be written back as soon as the compute ends; else only before the next compute, and
    /// only if the caller wrote nothing new in between
    pub eager: bool,
}

pub struct GraphAlloc<R: Rev> {
    bufts: Vec<*mut BufferType<R>>,
    /// buffer id -> arena (buffer types listed twice share one arena and one buffer)
    arena_of: Vec<usize>,
    alignment: Vec<usize>,
    /// per arena: the buffer type's max size where this revision honours it (else unbounded)
    max_size: Vec<usize>,
    /// per arena, its chunks' buffers (one unless the plan exceeds `max_size`)
    buffers: Vec<Vec<*mut Buffer<R>>>,
    plan: Plan,
    offsets: Vec<usize>,
    /// per block: the chunk of its arena it lives in
    chunk: Vec<u8>,
    scratch: Vec<usize>,
    scratch_chunk: Vec<u8>,
    bases: Vec<[usize; MAX_CHUNKS]>,
    /// the unpinned graph inputs whose bytes a later node of the reserved plan overwrites, as
    /// (position in the graph: node or `LEAF | leaf`, buffer id, may be written back at once)
    at_risk_homes: Vec<(u32, usize, bool)>,
    /// those inputs in the graph last placed (see [`GraphAlloc::at_risk`])
    at_risk: Vec<AtRisk<R>>,
    /// per buffer id: the buffer type sizes tensors itself (else `nbytes`)
    custom_size: Vec<bool>,
    reserved: Option<(usize, usize)>,
    pub stats: Vec<ArenaStats>,
    /// `GGML_RS_ALLOC_STATS`: print the stats of every reserve to stderr (for scripts/bench.sh)
    print_stats: bool,
}

impl<R: Rev> GraphAlloc<R> {
    pub fn new(bufts: &[*mut BufferType<R>]) -> Result<Self> {
        let mut arena_of = Vec::with_capacity(bufts.len());
        let mut alignment = Vec::new();
        let mut max_size = Vec::new();
        for (i, &bt) in bufts.iter().enumerate() {
            let Some(b) = obj(bt) else { bail!("buffer type {} is NULL", i) };
            if let Some(j) = bufts[..i].iter().position(|&o| o == bt) {
                arena_of.push(arena_of[j]);
                continue;
            }
            let a = b.alignment()?;
            ensure!(a.is_power_of_two(), "buffer type {} has alignment {}, not a power of two", i, a);
            arena_of.push(alignment.len());
            alignment.push(a);
            // ggml-alloc clamps it so that sizes never overflow
            max_size.push(if R::ALLOC_HONOURS_MAX_SIZE { b.max_size().clamp(1, usize::MAX / 2) } else { usize::MAX / 2 });
        }
        let n = alignment.len();
        Ok(GraphAlloc {
            bufts: bufts.to_vec(),
            arena_of,
            alignment,
            max_size,
            buffers: vec![Vec::new(); n],
            plan: Plan::default(),
            offsets: Vec::new(),
            chunk: Vec::new(),
            scratch: Vec::new(),
            scratch_chunk: Vec::new(),
            bases: Vec::new(),
            at_risk_homes: Vec::new(),
            at_risk: Vec::new(),
            custom_size: bufts.iter().map(|&b| obj(b).is_some_and(|b| b.iface.get_alloc_size.is_some())).collect(),
            reserved: None,
            stats: vec![ArenaStats::default(); n],
            print_stats: std::env::var_os("GGML_RS_ALLOC_STATS").is_some_and(|v| v != "0"),
        })
    }

    /// Plans `g` and grows the buffers to fit it (they never shrink, as with ggml-alloc).
    pub fn reserve(&mut self, g: &CGraph<R>, node_ids: &[i32], leaf_ids: &[i32]) -> Result<()> {
        let sizes = self.plan_sizes(g, node_ids, leaf_ids)?;
        for (a, chunks) in sizes.iter().enumerate() {
            self.grow(a, chunks)?;
        }
        self.reserved = Some((g.n_nodes.max(0) as usize, g.n_leafs.max(0) as usize));
        Ok(())
    }

    /// The bytes each buffer id would need for `g` (2026's `gallocr_reserve_n_size`), nothing
    /// allocated; a buffer type listed twice counts at its first id. The plan is `g`'s now, so
    /// the next graph is planned again.
    pub fn measure(&mut self, g: &CGraph<R>, node_ids: &[i32], leaf_ids: &[i32]) -> Result<Vec<usize>> {
        let sizes = self.plan_sizes(g, node_ids, leaf_ids)?;
        self.reserved = None;
        Ok((0..self.bufts.len())
            .map(|id| {
                let a = self.arena_of[id];
                if self.arena_of[..id].contains(&a) { 0 } else { sizes[a].iter().sum() }
            })
            .collect())
    }

    /// Plans `g` and places its blocks: the chunk sizes per arena.
    ///
    /// Never more than ggml-alloc: stock's numbers are computed first (its liveness, inputs
    /// freed after their last use, replayed through its best fit). Then the graph inputs are
    /// pinned (kept to the end, so that a recompute reads what the caller wrote) as far as that
    /// stays within stock's bytes in every arena: all of them if that fits (the usual case, as
    /// the inputs live long anyway), else one at a time those whose bytes would be overwritten.
    /// The inputs left at risk are handed to the scheduler, which saves and restores them around
    /// each compute (`at_risk`).
    fn plan_sizes(&mut self, g: &CGraph<R>, node_ids: &[i32], leaf_ids: &[i32]) -> Result<Vec<Vec<usize>>> {
        self.reserved = None;
        let n = self.alignment.len();
        // stock: ggml-alloc's plan and placement
        self.build(g, node_ids, leaf_ids, Pin::Nothing)?;
        let stock: Vec<Vec<usize>> = (0..n).map(|a| self.stock_chunks(a)).collect();
        let fits = |ours: &[Vec<usize>]| ours.iter().zip(&stock).all(|(o, s)| o.iter().sum::<usize>() <= s.iter().sum::<usize>());

        let mut chosen = None;
        if self.plan.inputs.is_empty() {
            // nothing to pin: this plan is every plan
            chosen = Some(self.place_all());
        } else {
            self.build(g, node_ids, leaf_ids, Pin::All)?;
            let all = self.place_all();
            if fits(&all) {
                chosen = Some(all);
            }
        }
        if chosen.is_none() {
            // stock's plan with our placement (never larger than stock's), then pin what fits
            self.build(g, node_ids, leaf_ids, Pin::Nothing)?;
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
                self.build(g, node_ids, leaf_ids, Pin::These(&trial))?;
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
                self.build(g, node_ids, leaf_ids, Pin::These(&pinned))?;
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
            if self.print_stats {
                let name = obj(self.bufts[arena_of.iter().position(|&x| x == a).unwrap_or(0)])
                    .and_then(|b| b.name().ok())
                    .map(crate::abi::vtable::cstr)
                    .unwrap_or_default();
                let s = &self.stats[a];
                eprintln!(
                    "GGML_RS_ALLOC {}reserve nodes={} leafs={} buft={} stock={} ours={} bound={} chunks={} stock_chunks={} inputs_restored={} restored_bytes={}",
                    R::PREFIX,
                    g.n_nodes,
                    g.n_leafs,
                    name,
                    s.stock,
                    s.ours,
                    s.bound,
                    s.chunks.len(),
                    s.stock_chunks.len(),
                    s.unpinned_at_risk,
                    s.restored_bytes
                );
            }
        }
        Ok(ours)
    }

    fn build(&mut self, g: &CGraph<R>, node_ids: &[i32], leaf_ids: &[i32], pin: Pin<'_>) -> Result<()> {
        let arenas = Arenas { bufts: &self.bufts, arena_of: &self.arena_of, alignment: &self.alignment };
        self.plan.build(&arenas, g.nodes(), g.leafs(), node_ids, leaf_ids, pin)?;
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

    /// The graph inputs of the graph last placed whose bytes a later node overwrites (they are
    /// not pinned: keeping them would make the buffer larger than stock's). The scheduler saves
    /// them before a compute and writes them back (see [`AtRisk::eager`]), so that a recompute
    /// still reads what the caller wrote.
    pub fn at_risk(&self) -> &[AtRisk<R>] {
        &self.at_risk
    }

    /// Gives arena `a` buffers of at least `sizes` bytes, one per chunk (they never shrink, as
    /// with ggml-alloc; all are reallocated when one must grow, as ggml-alloc's vbuffer is).
    fn grow(&mut self, a: usize, sizes: &[usize]) -> Result<()> {
        let cur: Vec<usize> = self.buffers[a].iter().map(|&b| obj(b).map(|b| b.size).unwrap_or(0)).collect();
        let enough = !cur.is_empty() && sizes.iter().enumerate().all(|(c, &s)| cur.get(c).is_some_and(|&have| have >= s));
        if enough {
            return Ok(());
        }
        for b in std::mem::take(&mut self.buffers[a]) {
            crate::buffer::buffer_free(b);
        }
        let first = self.arena_of.iter().position(|&x| x == a).unwrap_or(0);
        let Some(bt) = obj(self.bufts[first]) else { bail!("buffer type is NULL") };
        // even an arena with no tensors gets a buffer (ggml-alloc's, for views)
        let n = sizes.len().max(1);
        for c in 0..n {
            let size = sizes.get(c).copied().unwrap_or(0).max(cur.get(c).copied().unwrap_or(0));
            let b = crate::buffer::buft_alloc_buffer(bt, size)?;
            crate::buffer::buffer_set_usage(b, USAGE_COMPUTE)?;
            self.buffers[a].push(b);
        }
        Ok(())
    }

    fn fits(&self, t: &Tensor<R>, rec: Rec) -> bool {
        if !t.data.is_null() || !t.view_src.is_null() {
            return true;
        }
        if rec.block == NONE {
            return false;
        }
        let b = self.plan.blocks[rec.block as usize].buffer_id;
        let size = if self.custom_size[b] { plan::alloc_size(self.bufts[b], t) } else { crate::tensor::nbytes(t) };
        size.is_ok_and(|s| s <= rec.size)
    }

    /// Whether source record `rec` is the node / leaf of the graph it was at reserve (then that
    /// position's own record checks and places it).
    #[inline]
    fn at_home(nodes: &[*mut Tensor<R>], leafs: &[*mut Tensor<R>], rec: &Rec, src: *mut Tensor<R>) -> bool {
        let h = rec.home;
        if h == NONE {
            return false;
        }
        let list = if h & plan::LEAF != 0 { leafs } else { nodes };
        list.get((h & !plan::LEAF) as usize) == Some(&src)
    }

    /// The records of node `i`'s sources, matched to `node.src` by index. When the node has the
    /// same sources as at reserve (the usual case) only those are visited.
    #[inline]
    fn each_src(&self, i: usize, node: &Tensor<R>, mut f: impl FnMut(*mut Tensor<R>, Rec) -> Result<bool>) -> Result<bool> {
        let recs = self.plan.srcs_of(i);
        if plan::src_mask(node) == self.plan.src_mask[i] {
            for &(j, rec) in recs {
                if !f(node.src[j as usize], rec)? {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        for (j, &sp) in node.src.iter().enumerate() {
            if sp.is_null() {
                continue;
            }
            let rec = recs.iter().find(|r| r.0 as usize == j).map(|r| r.1).unwrap_or(Rec::NOTHING);
            if !f(sp, rec)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Whether `g` can take the reserved plan (ggml-alloc's `needs_realloc`, negated): same node
    /// and leaf counts, and each tensor to place no larger than what was reserved at its
    /// position. A source that is still the node or leaf it was at reserve is checked there.
    fn plan_fits(&self, g: &CGraph<R>) -> bool {
        if self.reserved != Some((g.n_nodes.max(0) as usize, g.n_leafs.max(0) as usize)) {
            return false;
        }
        let leafs_fit = g.leafs().iter().zip(&self.plan.leafs).all(|(&lp, &rec)| obj(lp).is_some_and(|l| self.fits(l, rec)));
        if !leafs_fit {
            return false;
        }
        let (nodes, leafs) = (g.nodes(), g.leafs());
        for (i, &np) in nodes.iter().enumerate() {
            let Some(node) = obj(np) else { return false };
            if !self.fits(node, self.plan.nodes[i]) {
                return false;
            }
            let srcs_fit = self.each_src(i, node, |sp, rec| Ok(Self::at_home(nodes, leafs, &rec, sp) || obj(sp).is_some_and(|s| self.fits(s, rec))));
            if !srcs_fit.unwrap_or(false) {
                return false;
            }
        }
        true
    }

    /// Places `g` into the buffers. `Ok(false)`: it does not fit the plan and there are several
    /// buffers, so the caller must reserve again (ggml-alloc's contract).
    pub fn alloc_graph(&mut self, g: &CGraph<R>) -> Result<bool> {
        if !self.plan_fits(g) {
            if self.bufts.len() != 1 {
                return Ok(false);
            }
            self.reserve(g, &[], &[])?;
        }
        let mut bases = std::mem::take(&mut self.bases);
        bases.clear();
        for chunks in &self.buffers {
            let mut row = [0usize; MAX_CHUNKS];
            for (c, &b) in chunks.iter().enumerate().take(MAX_CHUNKS) {
                if let Some(buf) = obj(b) {
                    buf.reset();
                    row[c] = buf.base()? as usize;
                }
            }
            bases.push(row);
        }
        let r = self.place_graph(g, &bases);
        self.bases = bases;
        self.at_risk.clear();
        if r.is_ok() {
            let (nodes, leafs) = (g.nodes(), g.leafs());
            for &(h, id, eager) in &self.at_risk_homes {
                let list = if h & plan::LEAF != 0 { leafs } else { nodes };
                let Some(&p) = list.get((h & !plan::LEAF) as usize) else { continue };
                // only memory of ours can be overwritten by our plan
                let ours = obj(p).is_some_and(|t| self.buffers[self.arena_of[id]].contains(&t.buffer));
                if ours {
                    self.at_risk.push(AtRisk { tensor: p, buffer_id: id, eager });
                }
            }
        }
        r.map(|()| true)
    }

    fn place_graph(&self, g: &CGraph<R>, bases: &[[usize; MAX_CHUNKS]]) -> Result<()> {
        let (nodes, leafs) = (g.nodes(), g.leafs());
        for (i, &lp) in leafs.iter().enumerate() {
            self.place(lp, self.plan.leafs[i], bases)?;
        }
        for (i, &np) in nodes.iter().enumerate() {
            let Some(node) = obj(np) else { bail!("graph holds a NULL node") };
            self.each_src(i, node, |sp, rec| {
                if !Self::at_home(nodes, leafs, &rec, sp) {
                    self.place(sp, rec, bases)?;
                }
                Ok(true)
            })?;
            self.place(np, self.plan.nodes[i], bases)?;
        }
        Ok(())
    }

    fn place(&self, p: *mut Tensor<R>, rec: Rec, bases: &[[usize; MAX_CHUNKS]]) -> Result<()> {
        let Some(t) = obj_mut(p) else { bail!("graph holds a NULL tensor") };
        if let Some(src) = obj(t.view_src) {
            // a view of memory ggml-backend does not manage is left alone, as ggml-alloc does
            if t.buffer.is_null() && !src.buffer.is_null() {
                ensure!(!src.data.is_null(), "view source of '{}' is not allocated", t.name());
                t.buffer = src.buffer;
                t.data = (src.data as usize).wrapping_add(t.view_offs) as *mut std::ffi::c_void;
                if let Some(b) = obj(t.buffer) {
                    let _ = b.init_tensor(p);
                }
            }
            return Ok(());
        }
        if !t.data.is_null() {
            return Ok(());
        }
        ensure!(rec.block != NONE, "tensor '{}' has no place in the reserved plan", t.name());
        let a = self.arena_of[self.plan.blocks[rec.block as usize].buffer_id];
        let c = self.chunk[rec.block as usize] as usize;
        let buf = self.buffers[a].get(c).copied().unwrap_or(std::ptr::null_mut());
        let Some(b) = obj(buf) else { bail!("compute buffer {} (chunk {}) was not allocated", a, c) };
        t.buffer = buf;
        t.data = (bases[a][c] + self.offsets[rec.block as usize]) as *mut std::ffi::c_void;
        // ggml-alloc ignores the status (wsp); a failing backend reports it at compute
        let _ = b.init_tensor(p);
        Ok(())
    }

    /// `ggml_gallocr_get_buffer_size`: a buffer shared by several ids counts at the first only.
    pub fn buffer_size(&self, id: usize) -> usize {
        let Some(&a) = self.arena_of.get(id) else { return 0 };
        if self.arena_of[..id].contains(&a) {
            return 0;
        }
        self.buffers[a].iter().filter_map(|&b| obj(b)).map(|b| b.size).sum()
    }

    /// The sizes of arena `id`'s chunk buffers (tests and the stats).
    pub fn chunk_sizes(&self, id: usize) -> Vec<usize> {
        let Some(&a) = self.arena_of.get(id) else { return Vec::new() };
        self.buffers[a].iter().filter_map(|&b| obj(b)).map(|b| b.size).collect()
    }
}

impl<R: Rev> Drop for GraphAlloc<R> {
    fn drop(&mut self) {
        for chunks in self.buffers.drain(..) {
            for b in chunks {
                crate::buffer::buffer_free(b);
            }
        }
    }
}

#[cfg(test)]
mod tests;
