//! Liveness of one graph, decided the way ggml-alloc decides it: which tensors get memory of their
//! own, which write over a dying parent (in place), and in which order memory is taken and given
//! back. Offsets are not chosen here (see `place`): the decisions that can change what a kernel
//! reads (in place or not) are fixed by the graph alone, so any placement that keeps the blocks
//! alive at the same time apart computes the same bytes.
//!
//! Written once for every revision: the graph's tensors are read through [`Tensors`], by address.

use crate::abi::{MAX_SRC, TENSOR_FLAG_INPUT, TENSOR_FLAG_OUTPUT};
use crate::error::Result;
use crate::ptr_map::PtrMap;
use crate::ensure;

pub const NONE: u32 = u32::MAX;

/// A piece of memory: one tensor's, or a chain of tensors computed in place over each other.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Block {
    /// index of the buffer (scheduler backend) the first tensor was allocated for
    pub buffer_id: usize,
    /// size padded to the buffer type's alignment
    pub size: usize,
    /// first and one-past-last event during which it is live (`end == NONE`: until the graph ends)
    pub start: u32,
    pub end: u32,
}

impl Block {
    pub fn overlaps(&self, o: &Block) -> bool {
        self.start < o.end && o.start < self.end
    }
}

#[derive(Clone, Copy, Default)]
struct Slot {
    n_children: i32,
    n_views: i32,
    allocated: bool,
    block: u32,
}

/// Where one tensor of the graph goes, positionally (node i / its source j / leaf i), as
/// ggml-alloc records it; `block == NONE` for tensors it does not place (views, pre-allocated).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rec {
    pub block: u32,
    pub size: usize,
    /// for a source: the node (or `LEAF | leaf`) of the graph it was at reserve, `NONE` if it
    /// was neither; a source still found there needs no check or placement of its own
    pub home: u32,
}

pub const LEAF: u32 = 1 << 31;

impl Rec {
    pub const NOTHING: Rec = Rec { block: NONE, size: 0, home: NONE };
}

/// What the plan reads of one tensor.
#[derive(Clone, Copy)]
pub struct Seen {
    pub has_data: bool,
    /// address of its view source (0: none)
    pub view_src: usize,
    pub op: i32,
    pub flags: i32,
    /// addresses of its sources (0: none)
    pub src: [usize; MAX_SRC],
}

/// The graph's tensors as the plan reads them, by address: the revision's part (its tensor
/// type, buffer types and op ids) answers.
pub trait Tensors {
    /// The tensor at `p` (an error for NULL).
    fn get(&self, p: usize) -> Result<Seen>;
    /// Its size in buffer `buffer_id`'s buffer type.
    fn alloc_size(&self, buffer_id: usize, p: usize) -> Result<usize>;
    /// Same type, shape and strides.
    fn same_layout(&self, a: usize, b: usize) -> bool;
    fn name(&self, p: usize) -> String;
    /// ggml-alloc's `op_can_inplace`.
    fn can_inplace(&self, op: i32) -> bool;
    fn op_none(&self) -> i32;
}

/// The buffer types' facts the plan needs: per buffer id, which shared arena (buffer types used
/// twice share one) and its alignment.
pub struct Arenas<'a> {
    pub arena_of: &'a [usize],
    pub alignment: &'a [usize],
}

/// Bit j set when source j is present.
pub fn src_mask(present: impl IntoIterator<Item = bool>) -> u16 {
    present.into_iter().enumerate().fold(0u16, |m, (j, p)| m | (p as u16) << j)
}

/// Which graph inputs (`GGML_TENSOR_FLAG_INPUT`) keep their memory for the whole graph.
///
/// ggml-alloc gives an input's memory back after its last consumer (and may compute a node in
/// place over it), so a later node can overwrite what the caller wrote: computing the same
/// allocated graph again (after a cancelled compute, say) then reads garbage. Keeping an input
/// alive fixes that for free when its bytes would not be reused anyway, but can grow the buffer
/// when they would; the allocator pins the inputs it can afford (see `GraphAlloc::plan_sizes`)
/// and the scheduler saves and restores the others around each compute.
#[derive(Clone, Copy)]
pub enum Pin<'a> {
    /// every input lives to the end (no in-place over it)
    All,
    /// ggml-alloc's own rule: inputs are freed like any tensor
    Nothing,
    /// only the inputs at these addresses (sorted)
    These(&'a [usize]),
}

impl Pin<'_> {
    fn holds(&self, p: usize) -> bool {
        match self {
            Pin::All => true,
            Pin::Nothing => false,
            Pin::These(v) => v.binary_search(&p).is_ok(),
        }
    }
}

/// A graph input placed by the plan and not pinned: whether, and when, its memory goes to
/// another tensor (the allocator then decides from the offsets whether its bytes get overwritten).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InputRec {
    /// its node, or `LEAF | leaf`, in the planned graph
    pub home: u32,
    /// its address at plan time (the pin list is made of these)
    pub addr: usize,
    pub block: u32,
    /// the event after which its block may be reused (`NONE`: never given back)
    pub freed_at: u32,
    /// a node was computed in place over it: its bytes are overwritten for sure
    pub handed_on: bool,
}

#[derive(Default)]
pub struct Plan {
    /// the unpinned graph inputs this plan places (see [`Pin`])
    pub inputs: Vec<InputRec>,
    /// slot -> index in `inputs` (`NONE` if the slot is not one)
    input_of: Vec<u32>,
    pub blocks: Vec<Block>,
    /// in event order: (block, true = taken / false = given back)
    pub events: Vec<(u32, bool)>,
    pub nodes: Vec<Rec>,
    /// per node, its sources at reserve time: (index j, record)
    pub srcs: Vec<(u8, Rec)>,
    pub src_start: Vec<u32>,
    /// per node, bit j set when it had source j at reserve
    pub src_mask: Vec<u16>,
    pub leafs: Vec<Rec>,
    slots: Vec<Slot>,
    index: PtrMap<u32>,
    home: Vec<u32>,
}

struct Walk<'p, 'a> {
    plan: &'p mut Plan,
    g: &'p dyn Tensors,
    arenas: &'p Arenas<'a>,
    pin: Pin<'p>,
}

impl Walk<'_, '_> {
    /// Whether `t` keeps its memory to the end of the graph: graph outputs (read after it) and
    /// the pinned graph inputs (read again by a recompute).
    fn kept(&self, p: usize, t: &Seen) -> bool {
        t.flags & TENSOR_FLAG_OUTPUT != 0 || (t.flags & TENSOR_FLAG_INPUT != 0 && self.pin.holds(p))
    }

    fn input_index(&self, s: usize) -> Option<usize> {
        self.plan.input_of.get(s).copied().filter(|&i| i != NONE).map(|i| i as usize)
    }

    fn slot(&mut self, key: usize) -> usize {
        if let Some(i) = self.plan.index.get(key) {
            return i as usize;
        }
        let i = self.plan.slots.len();
        self.plan.slots.push(Slot { block: NONE, ..Slot::default() });
        self.plan.index.insert(key, i as u32);
        i
    }

    fn allocate(&mut self, p: usize, buffer_id: i32) -> Result<()> {
        let t = self.g.get(p)?;
        let s = self.slot(p);
        if t.has_data || self.plan.slots[s].allocated || t.view_src != 0 {
            return Ok(());
        }
        ensure!(buffer_id >= 0 && (buffer_id as usize) < self.arenas.arena_of.len(), "tensor '{}' has no buffer to be allocated in", self.g.name(p));
        self.plan.slots[s].allocated = true;
        if self.g.can_inplace(t.op) {
            for &pp in t.src.iter().filter(|&&pp| pp != 0) {
                let parent = self.g.get(pp)?;
                let ps = self.slot(pp);
                let pslot = self.plan.slots[ps];
                // only memory this plan owns can be handed on (views never own any)
                if !pslot.allocated || parent.view_src != 0 {
                    continue;
                }
                // outputs are read after the graph, pinned inputs by a recompute (see `free`)
                if self.kept(pp, &parent) || !self.g.same_layout(p, pp) {
                    continue;
                }
                if pslot.n_children == 1 && pslot.n_views == 0 {
                    self.plan.slots[s].block = pslot.block;
                    self.plan.slots[ps].allocated = false;
                    if let Some(k) = self.input_index(ps) {
                        self.plan.inputs[k].handed_on = true;
                    }
                    return Ok(());
                }
            }
        }
        let b = buffer_id as usize;
        let align = self.arenas.alignment[self.arenas.arena_of[b]];
        let size = self.g.alloc_size(b, p)?.div_ceil(align) * align;
        let id = self.plan.blocks.len() as u32;
        self.plan.blocks.push(Block { buffer_id: b, size, start: self.plan.events.len() as u32, end: NONE });
        self.plan.events.push((id, true));
        self.plan.slots[s].block = id;
        if t.flags & TENSOR_FLAG_INPUT != 0 && !self.kept(p, &t) {
            if self.plan.input_of.len() <= s {
                self.plan.input_of.resize(s + 1, NONE);
            }
            self.plan.input_of[s] = self.plan.inputs.len() as u32;
            self.plan.inputs.push(InputRec { home: NONE, addr: p, block: id, freed_at: NONE, handed_on: false });
        }
        Ok(())
    }

    fn free(&mut self, p: usize, s: usize) {
        // Graph outputs are never given back, and neither are pinned graph inputs (see [`Pin`]):
        // the caller's data must survive the compute, so that computing the same allocated graph
        // again (after a cancelled compute, say) reads what the caller wrote.
        if self.g.get(p).is_ok_and(|t| self.kept(p, &t)) {
            return;
        }
        let slot = &mut self.plan.slots[s];
        slot.allocated = false;
        let b = slot.block;
        if b != NONE {
            if let Some(k) = self.input_index(s) {
                self.plan.inputs[k].freed_at = self.plan.events.len() as u32;
            }
            self.plan.blocks[b as usize].end = self.plan.events.len() as u32 + 1;
            self.plan.events.push((b, false));
        }
    }

    fn record(&mut self, p: usize) -> Result<Rec> {
        let t = self.g.get(p)?;
        if t.view_src != 0 || t.has_data {
            return Ok(Rec::NOTHING);
        }
        let s = self.slot(p);
        let block = self.plan.slots[s].block;
        ensure!(block != NONE, "tensor '{}' was never allocated", self.g.name(p));
        let size = self.g.alloc_size(self.plan.blocks[block as usize].buffer_id, p)?;
        Ok(Rec { block, size, home: NONE })
    }
}

impl Plan {
    /// Walks `nodes` / `leafs` (with the buffer id of each) as ggml-alloc's reserve does, keeping
    /// the graph inputs `pin` names alive to the end.
    #[allow(clippy::too_many_arguments)]
    pub fn build(
        &mut self,
        g: &dyn Tensors,
        arenas: &Arenas<'_>,
        nodes: &[usize],
        leafs: &[usize],
        node_ids: &[i32],
        leaf_ids: &[i32],
        pin: Pin<'_>,
    ) -> Result<()> {
        self.inputs.clear();
        self.input_of.clear();
        self.blocks.clear();
        self.events.clear();
        self.slots.clear();
        self.index.clear();
        self.nodes.clear();
        self.srcs.clear();
        self.src_start.clear();
        self.src_mask.clear();
        self.leafs.clear();
        let id = |ids: &[i32], i: usize| ids.get(i).copied().unwrap_or(0);
        let mut w = Walk { plan: self, g, arenas, pin };

        // leafs first: the application may use them outside the graph too
        for (i, &leaf) in leafs.iter().enumerate() {
            w.allocate(leaf, id(leaf_ids, i))?;
        }
        // consumers and views of each tensor; graph inputs are allocated up front so that
        // nothing computed before their use can land on them
        for (i, &np) in nodes.iter().enumerate() {
            let node = g.get(np)?;
            // an OP_NONE view is the scheduler's way to keep its source alive, not a consumer
            if node.view_src != 0 && node.op != g.op_none() {
                let v = w.slot(node.view_src);
                w.plan.slots[v].n_views += 1;
            }
            if node.flags & TENSOR_FLAG_INPUT != 0 {
                w.allocate(np, id(node_ids, i))?;
            }
            for &sp in node.src.iter().filter(|&&sp| sp != 0) {
                let src = g.get(sp)?;
                let s = w.slot(sp);
                w.plan.slots[s].n_children += 1;
                if src.flags & TENSOR_FLAG_INPUT != 0 {
                    w.allocate(sp, id(node_ids, i))?;
                }
            }
        }
        for (i, &np) in nodes.iter().enumerate() {
            let node = g.get(np)?;
            let b = id(node_ids, i);
            for &sp in node.src.iter().filter(|&&sp| sp != 0) {
                w.allocate(sp, b)?;
            }
            w.allocate(np, b)?;
            for &sp in node.src.iter().filter(|&&sp| sp != 0) {
                let src = g.get(sp)?;
                let s = w.slot(sp);
                w.plan.slots[s].n_children -= 1;
                let slot = w.plan.slots[s];
                if slot.n_children != 0 || slot.n_views != 0 {
                    continue;
                }
                if src.view_src != 0 {
                    let v = w.slot(src.view_src);
                    w.plan.slots[v].n_views -= 1;
                    let vs = w.plan.slots[v];
                    if vs.n_views == 0 && vs.n_children == 0 && vs.allocated {
                        w.free(src.view_src, v);
                    }
                } else if slot.allocated {
                    w.free(sp, s);
                }
            }
        }

        // what alloc_graph needs, positionally
        w.plan.home.clear();
        let homes = nodes.iter().enumerate().map(|(k, &p)| (p, k as u32));
        let homes = homes.chain(leafs.iter().enumerate().map(|(l, &p)| (p, LEAF | l as u32))).collect::<Vec<_>>();
        for &(p, h) in homes.iter().rev() {
            let s = w.slot(p);
            if s >= w.plan.home.len() {
                w.plan.home.resize(s + 1, NONE);
            }
            w.plan.home[s] = h;
        }
        for &np in nodes {
            let rec = w.record(np)?;
            w.plan.nodes.push(rec);
            w.plan.src_start.push(w.plan.srcs.len() as u32);
            let node = g.get(np)?;
            w.plan.src_mask.push(src_mask(node.src.iter().map(|&sp| sp != 0)));
            for (j, &sp) in node.src.iter().enumerate() {
                if sp == 0 {
                    continue;
                }
                let mut rec = w.record(sp)?;
                let s = w.slot(sp);
                rec.home = w.plan.home.get(s).copied().unwrap_or(NONE);
                w.plan.srcs.push((j as u8, rec));
            }
        }
        w.plan.src_start.push(w.plan.srcs.len() as u32);
        for &lp in leafs {
            let rec = w.record(lp)?;
            w.plan.leafs.push(rec);
        }
        for k in 0..w.plan.inputs.len() {
            let s = w.slot(w.plan.inputs[k].addr);
            w.plan.inputs[k].home = w.plan.home.get(s).copied().unwrap_or(NONE);
        }
        Ok(())
    }

    /// The records of node `i`'s sources at reserve, in increasing `j`.
    pub fn srcs_of(&self, i: usize) -> &[(u8, Rec)] {
        let (a, b) = (self.src_start[i] as usize, self.src_start[i + 1] as usize);
        &self.srcs[a..b]
    }
}
