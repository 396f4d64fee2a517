//! The scheduler's graph allocator (the role of the host's `ggml-alloc`): one compute buffer per
//! buffer type, sized at reserve from a worst-case graph, then every later graph of the same shape
//! placed positionally into it without asking anything of C but the buffers' own `init_tensor`.
//!
//! Same outcomes as ggml-alloc where callers can see them: the same tensors get memory, the same
//! nodes are computed in place over their parents, views take `view_src->data + view_offs`, and
//! a graph that no longer fits is planned again (one buffer) or refused so the scheduler
//! re-reserves (several). Only the offsets differ when a tighter placement is found (`place`).
//!
//! `plan` decides liveness and in-place reuse; `layout` chooses the pins and keeps the placement,
//! whose offsets `place` computes from the lifetimes.

pub mod layout;
pub mod place;
pub mod plan;

use crate::abi::vtable::Live;
use crate::abi::*;
use crate::error::Result;
use crate::{bail, ensure};
pub use layout::ArenaStats;
use layout::Layout;
use plan::{Arenas, Pin, Plan, Rec, Seen, NONE};

/// ggml-alloc's `GGML_VBUFFER_MAX_CHUNKS` (2026): at most this many buffers per buffer type.
pub const MAX_CHUNKS: usize = 16;

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
    /// follows the buffer types, buffers and graph tensors (the scheduler's promise)
    live: Live,
    bufts: Vec<*mut BufferType<R>>,
    /// the arenas, the plan and its placement (revision-free)
    pub layout: Layout,
    /// per arena, its chunks' buffers (one unless the plan exceeds the max size)
    buffers: Vec<Vec<*mut Buffer<R>>>,
    bases: Vec<[usize; MAX_CHUNKS]>,
    /// the at-risk inputs (`Layout::at_risk_homes`) in the graph last placed (see
    /// [`GraphAlloc::at_risk`])
    at_risk: Vec<AtRisk<R>>,
    /// per buffer id: the buffer type sizes tensors itself (else `nbytes`)
    custom_size: Vec<bool>,
    reserved: Option<(usize, usize)>,
    /// `GGML_RS_ALLOC_STATS`: print the stats of every reserve to stderr (for scripts/bench.sh)
    print_stats: bool,
}

impl<R: Rev> GraphAlloc<R> {
    pub fn new(live: Live, bufts: &[*mut BufferType<R>]) -> Result<Self> {
        let mut arena_of = Vec::with_capacity(bufts.len());
        let mut alignment = Vec::new();
        let mut max_size = Vec::new();
        for (i, &bt) in bufts.iter().enumerate() {
            let Some(b) = live.obj(bt) else { bail!("buffer type {} is NULL", i) };
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
            live,
            bufts: bufts.to_vec(),
            layout: Layout::new(arena_of, alignment, max_size),
            buffers: vec![Vec::new(); n],
            bases: Vec::new(),
            at_risk: Vec::new(),
            custom_size: bufts.iter().map(|&b| live.obj(b).is_some_and(|b| b.iface.get_alloc_size.is_some())).collect(),
            reserved: None,
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
                let a = self.layout.arena_of[id];
                if self.layout.arena_of[..id].contains(&a) { 0 } else { sizes[a].iter().sum() }
            })
            .collect())
    }

    /// Plans `g` and places its blocks (`Layout::plan_sizes`): the chunk sizes per arena.
    fn plan_sizes(&mut self, g: &CGraph<R>, node_ids: &[i32], leaf_ids: &[i32]) -> Result<Vec<Vec<usize>>> {
        self.reserved = None;
        let tensors = PlanTensors { live: self.live, bufts: &self.bufts };
        let addrs = |list: &[*mut Tensor<R>]| list.iter().map(|&p| p as usize).collect::<Vec<_>>();
        let (nodes, leafs) = (addrs(g.nodes()), addrs(g.leafs()));
        let mut build = |plan: &mut Plan, arena_of: &[usize], alignment: &[usize], pin: Pin<'_>| {
            plan.build(&tensors, &Arenas { arena_of, alignment }, &nodes, &leafs, node_ids, leaf_ids, pin)
        };
        let ours = self.layout.plan_sizes(&mut build)?;
        if self.print_stats {
            for (a, s) in self.layout.stats.iter().enumerate() {
                let name = self.live.obj(self.bufts[self.layout.arena_of.iter().position(|&x| x == a).unwrap_or(0)])
                    .and_then(|b| b.name().ok())
                    .map(crate::abi::vtable::cstr)
                    .unwrap_or_default();
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
        let cur: Vec<usize> = self.buffers[a].iter().map(|&b| self.live.obj(b).map(|b| b.size).unwrap_or(0)).collect();
        let enough = !cur.is_empty() && sizes.iter().enumerate().all(|(c, &s)| cur.get(c).is_some_and(|&have| have >= s));
        if enough {
            return Ok(());
        }
        for b in std::mem::take(&mut self.buffers[a]) {
            crate::buffer::buffer_free(b);
        }
        let first = self.layout.arena_of.iter().position(|&x| x == a).unwrap_or(0);
        let Some(bt) = self.live.obj(self.bufts[first]) else { bail!("buffer type is NULL") };
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
        let b = self.layout.plan.blocks[rec.block as usize].buffer_id;
        let size = if self.custom_size[b] { alloc_size(self.live, self.bufts[b], t) } else { crate::tensor::nbytes(t) };
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
        let recs = self.layout.plan.srcs_of(i);
        if plan::src_mask(node.src.iter().map(|s| !s.is_null())) == self.layout.plan.src_mask[i] {
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
        let leafs_fit = g.leafs().iter().zip(&self.layout.plan.leafs).all(|(&lp, &rec)| self.live.obj(lp).is_some_and(|l| self.fits(l, rec)));
        if !leafs_fit {
            return false;
        }
        let (nodes, leafs) = (g.nodes(), g.leafs());
        for (i, &np) in nodes.iter().enumerate() {
            let Some(node) = self.live.obj(np) else { return false };
            if !self.fits(node, self.layout.plan.nodes[i]) {
                return false;
            }
            let srcs_fit = self.each_src(i, node, |sp, rec| Ok(Self::at_home(nodes, leafs, &rec, sp) || self.live.obj(sp).is_some_and(|s| self.fits(s, rec))));
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
                if let Some(buf) = self.live.obj(b) {
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
            for &(h, id, eager) in &self.layout.at_risk_homes {
                let list = if h & plan::LEAF != 0 { leafs } else { nodes };
                let Some(&p) = list.get((h & !plan::LEAF) as usize) else { continue };
                // only memory of ours can be overwritten by our plan
                let ours = self.live.obj(p).is_some_and(|t| self.buffers[self.layout.arena_of[id]].contains(&t.buffer));
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
            self.place(lp, self.layout.plan.leafs[i], bases)?;
        }
        for (i, &np) in nodes.iter().enumerate() {
            let Some(node) = self.live.obj(np) else { bail!("graph holds a NULL node") };
            self.each_src(i, node, |sp, rec| {
                if !Self::at_home(nodes, leafs, &rec, sp) {
                    self.place(sp, rec, bases)?;
                }
                Ok(true)
            })?;
            self.place(np, self.layout.plan.nodes[i], bases)?;
        }
        Ok(())
    }

    fn place(&self, p: *mut Tensor<R>, rec: Rec, bases: &[[usize; MAX_CHUNKS]]) -> Result<()> {
        let mut live = self.live;
        let Some(t) = live.obj_mut(p) else { bail!("graph holds a NULL tensor") };
        if let Some(src) = self.live.obj(t.view_src) {
            // a view of memory ggml-backend does not manage is left alone, as ggml-alloc does
            if t.buffer.is_null() && !src.buffer.is_null() {
                ensure!(!src.data.is_null(), "view source of '{}' is not allocated", t.name());
                t.buffer = src.buffer;
                t.data = (src.data as usize).wrapping_add(t.view_offs) as *mut std::ffi::c_void;
                if let Some(b) = self.live.obj(t.buffer) {
                    let _ = b.init_tensor(p);
                }
            }
            return Ok(());
        }
        if !t.data.is_null() {
            return Ok(());
        }
        ensure!(rec.block != NONE, "tensor '{}' has no place in the reserved plan", t.name());
        let a = self.layout.arena_of[self.layout.plan.blocks[rec.block as usize].buffer_id];
        let c = self.layout.chunk[rec.block as usize] as usize;
        let buf = self.buffers[a].get(c).copied().unwrap_or(std::ptr::null_mut());
        let Some(b) = self.live.obj(buf) else { bail!("compute buffer {} (chunk {}) was not allocated", a, c) };
        t.buffer = buf;
        t.data = (bases[a][c] + self.layout.offsets[rec.block as usize]) as *mut std::ffi::c_void;
        // ggml-alloc ignores the status (wsp); a failing backend reports it at compute
        let _ = b.init_tensor(p);
        Ok(())
    }

    /// `ggml_gallocr_get_buffer_size`: a buffer shared by several ids counts at the first only.
    pub fn buffer_size(&self, id: usize) -> usize {
        let Some(&a) = self.layout.arena_of.get(id) else { return 0 };
        if self.layout.arena_of[..id].contains(&a) {
            return 0;
        }
        self.buffers[a].iter().filter_map(|&b| self.live.obj(b)).map(|b| b.size).sum()
    }

    /// The sizes of arena `id`'s chunk buffers (tests and the stats).
    pub fn chunk_sizes(&self, id: usize) -> Vec<usize> {
        let Some(&a) = self.layout.arena_of.get(id) else { return Vec::new() };
        self.buffers[a].iter().filter_map(|&b| self.live.obj(b)).map(|b| b.size).collect()
    }
}

fn alloc_size<R: Rev>(live: Live, buft: *mut BufferType<R>, t: &Tensor<R>) -> Result<usize> {
    match live.obj(buft) {
        Some(b) => crate::buffer::buft_get_alloc_size(b, t),
        None => bail!("buffer type is NULL"),
    }
}

/// A revision's graph as the plan reads it (`plan::Tensors`): its tensors by address, sized by
/// the scheduler's buffer types.
struct PlanTensors<'a, R: Rev> {
    live: Live,
    bufts: &'a [*mut BufferType<R>],
}

impl<R: Rev> PlanTensors<'_, R> {
    fn tensor(&self, p: usize) -> Result<&Tensor<R>> {
        match self.live.obj(p as *const Tensor<R>) {
            Some(t) => Ok(t),
            None => bail!("graph holds a NULL tensor"),
        }
    }
}

impl<R: Rev> plan::Tensors for PlanTensors<'_, R> {
    fn get(&self, p: usize) -> Result<Seen> {
        let t = self.tensor(p)?;
        Ok(Seen { has_data: !t.data.is_null(), view_src: t.view_src as usize, op: t.op, flags: t.flags, src: t.src.map(|s| s as usize) })
    }
    fn alloc_size(&self, buffer_id: usize, p: usize) -> Result<usize> {
        alloc_size(self.live, self.bufts[buffer_id], self.tensor(p)?)
    }
    fn same_layout(&self, a: usize, b: usize) -> bool {
        matches!((self.tensor(a), self.tensor(b)), (Ok(a), Ok(b)) if crate::tensor::same_layout(a, b))
    }
    fn name(&self, p: usize) -> String {
        self.tensor(p).map(|t| t.name()).unwrap_or_default()
    }
    fn can_inplace(&self, op: i32) -> bool {
        R::INPLACE_OPS.contains(&op)
    }
    fn op_none(&self) -> i32 {
        R::OPS.none
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
