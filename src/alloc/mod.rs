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
use plan::{Arenas, Plan, Rec, NONE};

/// Bytes per arena at the last reserve: what ggml-alloc's best fit would take for this graph,
/// what we took, and the most bytes alive at once.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ArenaStats {
    pub stock: usize,
    pub ours: usize,
    pub bound: usize,
}

pub struct GraphAlloc<R: Rev> {
    bufts: Vec<*mut BufferType<R>>,
    /// buffer id -> arena (buffer types listed twice share one arena and one buffer)
    arena_of: Vec<usize>,
    alignment: Vec<usize>,
    buffers: Vec<*mut Buffer<R>>,
    plan: Plan,
    offsets: Vec<usize>,
    scratch: Vec<usize>,
    bases: Vec<usize>,
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
        }
        let n = alignment.len();
        Ok(GraphAlloc {
            bufts: bufts.to_vec(),
            arena_of,
            alignment,
            buffers: vec![std::ptr::null_mut(); n],
            plan: Plan::default(),
            offsets: Vec::new(),
            scratch: Vec::new(),
            bases: Vec::new(),
            custom_size: bufts.iter().map(|&b| obj(b).is_some_and(|b| b.iface.get_alloc_size.is_some())).collect(),
            reserved: None,
            stats: vec![ArenaStats::default(); n],
            print_stats: std::env::var_os("GGML_RS_ALLOC_STATS").is_some_and(|v| v != "0"),
        })
    }

    /// Plans `g` and grows the buffers to fit it (they never shrink, as with ggml-alloc).
    pub fn reserve(&mut self, g: &CGraph<R>, node_ids: &[i32], leaf_ids: &[i32]) -> Result<()> {
        let sizes = self.plan_sizes(g, node_ids, leaf_ids)?;
        for (a, size) in sizes.into_iter().enumerate() {
            self.grow(a, size)?;
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
                if self.arena_of[..id].contains(&a) { 0 } else { sizes[a] }
            })
            .collect())
    }

    /// Plans `g` and places its blocks: the bytes per arena.
    fn plan_sizes(&mut self, g: &CGraph<R>, node_ids: &[i32], leaf_ids: &[i32]) -> Result<Vec<usize>> {
        self.reserved = None;
        let arenas = Arenas { bufts: &self.bufts, arena_of: &self.arena_of, alignment: &self.alignment };
        self.plan.build(&arenas, g.nodes(), g.leafs(), node_ids, leaf_ids)?;
        let blocks = &self.plan.blocks;
        self.offsets.clear();
        self.offsets.resize(blocks.len(), 0);
        self.scratch.clear();
        self.scratch.resize(blocks.len(), 0);
        let mut sizes = Vec::with_capacity(self.alignment.len());
        for a in 0..self.alignment.len() {
            let arena_of = &self.arena_of;
            let in_arena = |b: u32| arena_of[blocks[b as usize].buffer_id] == a;
            let members: Vec<u32> = (0..blocks.len() as u32).filter(|&b| in_arena(b)).collect();
            let stock = place::best_fit(blocks, &self.plan.events, in_arena, &mut self.offsets);
            let packed = place::by_size(blocks, &members, &mut self.scratch);
            let ours = if packed < stock && place::disjoint(blocks, &members, &self.scratch) {
                for &b in &members {
                    self.offsets[b as usize] = self.scratch[b as usize];
                }
                packed
            } else {
                stock
            };
            let bound = place::bound(blocks, &self.plan.events, in_arena);
            self.stats[a] = ArenaStats { stock, ours, bound };
            if self.print_stats {
                let name = obj(self.bufts[arena_of.iter().position(|&x| x == a).unwrap_or(0)])
                    .and_then(|b| b.name().ok())
                    .map(crate::abi::vtable::cstr)
                    .unwrap_or_default();
                eprintln!(
                    "GGML_RS_ALLOC {}reserve nodes={} leafs={} buft={} stock={} ours={} bound={}",
                    R::PREFIX,
                    g.n_nodes,
                    g.n_leafs,
                    name,
                    stock,
                    ours,
                    bound
                );
            }
            sizes.push(ours);
        }
        Ok(sizes)
    }

    fn grow(&mut self, a: usize, size: usize) -> Result<()> {
        let cur = obj(self.buffers[a]).map(|b| b.size);
        if cur.is_some_and(|c| c >= size) {
            return Ok(());
        }
        crate::buffer::buffer_free(std::mem::replace(&mut self.buffers[a], std::ptr::null_mut()));
        let first = self.arena_of.iter().position(|&x| x == a).unwrap_or(0);
        let Some(bt) = obj(self.bufts[first]) else { bail!("buffer type is NULL") };
        let b = crate::buffer::buft_alloc_buffer(bt, size)?;
        crate::buffer::buffer_set_usage(b, USAGE_COMPUTE)?;
        self.buffers[a] = b;
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
        for &b in &self.buffers {
            let base = match obj(b) {
                Some(buf) => {
                    buf.reset();
                    buf.base()? as usize
                }
                None => 0,
            };
            bases.push(base);
        }
        let r = self.place_graph(g, &bases);
        self.bases = bases;
        r.map(|()| true)
    }

    fn place_graph(&self, g: &CGraph<R>, bases: &[usize]) -> Result<()> {
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

    fn place(&self, p: *mut Tensor<R>, rec: Rec, bases: &[usize]) -> Result<()> {
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
        let buf = self.buffers[a];
        let Some(b) = obj(buf) else { bail!("compute buffer {} was not allocated", a) };
        t.buffer = buf;
        t.data = (bases[a] + self.offsets[rec.block as usize]) as *mut std::ffi::c_void;
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
        obj(self.buffers[a]).map(|b| b.size).unwrap_or(0)
    }
}

impl<R: Rev> Drop for GraphAlloc<R> {
    fn drop(&mut self) {
        for b in self.buffers.drain(..) {
            crate::buffer::buffer_free(b);
        }
    }
}

#[cfg(test)]
mod tests;
