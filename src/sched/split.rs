//! Pass 5 and the allocator's graph: splits where the backend changes, copies of split inputs
//! into the split's backend (one per pipeline copy), and the graph the allocator sees (each
//! split's input copies first, so they are allocated at the split's start).

use super::{Sched, Split};
use crate::abi::*;
use crate::error::Result;
use crate::tensor::is_view_op;
use crate::{bail, ensure};

/// 2026 graph uids (backends that capture graphs key their caches on them): a counter of ours, in
/// a range the host's `ggml_graph_next_uid` (which the host need not export) does not reach.
fn next_graph_uid() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1 << 63);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl<R: Rev> Sched<R> {
    fn backend_name(&self, b: usize) -> String {
        self.members.name(b)
    }

    /// Runs passes 1-5 on `g` and builds the allocator's graph. A failed split leaves no
    /// assignments behind: a later split of the same graph must not trust them (they may come
    /// from a pass that was about to be refused).
    pub(super) fn split_graph(&mut self, g: &mut CGraph<R>) -> Result<()> {
        let r = self.split_graph_passes(g);
        if r.is_err() {
            self.undo_redirects();
            self.ids.clear();
            self.is_reset = true;
        }
        r
    }

    /// Points the user's nodes back at their own sources instead of this scheduler's input
    /// copies: after a split that will not be computed (a failed allocation, a reserve), the
    /// graph is the caller's again and may be allocated later.
    pub(super) fn undo_redirects(&mut self) {
        for (node, j, src) in self.redirects.drain(..) {
            if let Some(n) = self.live.obj_mut(node) {
                n.src[j] = src;
            }
        }
    }

    fn split_graph_passes(&mut self, g: &mut CGraph<R>) -> Result<()> {
        // only this split's redirections may be undone; an earlier graph stays as it was split
        self.redirects.clear();
        R::set_graph_uid(g, next_graph_uid());
        // a graph whose sources were already redirected to this scheduler's copies was allocated
        // before; stock would silently read stale copies after a reset
        // (with no copies made, e.g. one backend, there is nothing to look up)
        for &node in g.nodes().iter().take(if self.arena.is_empty() { 0 } else { usize::MAX }) {
            if self.live.obj(node).unwrap().src.iter().any(|&s| !s.is_null() && self.arena.owns(s)) {
                bail!("graph was already split by this scheduler: build a new graph after sched_reset");
            }
        }
        self.splits.clear();
        self.copies.pin_split();
        self.graph_inputs.clear();
        self.is_reset = false;
        // the previous graph's copies and views die here: nothing may still point at them
        if !self.arena.is_empty() {
            for t in self.arena.tensors() {
                self.ids.forget(t);
            }
            self.ids.clear_copies();
        }
        self.arena.clear();

        if self.members.len() == 1 {
            self.assign_single_backend(g)?;
        } else {
            self.assign_from_buffers(g)?;
            self.expand_assignments(g);
            self.upgrade_to_higher_priority(g);
            self.assign_remaining_srcs(g);
        }
        self.split_at_backend_change(g)?;
        self.build_alloc_graph(g)
    }

    /// Makes `n_copies` copies of `src` for backend `b` (the current copy may be `src` itself).
    fn make_copies(&mut self, src: *mut Tensor<R>, b: usize, reuse_original: bool) {
        let live = self.live;
        let bname = self.backend_name(b);
        for c in 0..self.copies.n() {
            let copy = if reuse_original && c == self.copies.cur() {
                src
            } else {
                // (borrowed anew each time: the copy written below may be `src` itself)
                let s = live.obj(src).unwrap();
                self.arena.dup_layout(s, &format!("{}#{}#{}", bname, s.name(), c))
            };
            if self.copies.n() > 1 {
                // inputs and outputs: the allocator must neither share nor reuse their memory
                self.live.obj_mut(copy).unwrap().flags |= TENSOR_FLAG_INPUT | TENSOR_FLAG_OUTPUT;
            }
            self.ids.set_copy(src, b, c, copy);
        }
    }

    fn split_at_backend_change(&mut self, g: &CGraph<R>) -> Result<()> {
        let nodes = g.nodes();
        let mut i = nodes.iter().position(|&n| !is_view_op::<R>(self.live.obj(n).unwrap().op)).unwrap_or(nodes.len());
        let first_backend = nodes.get(i).map(|&n| self.ids.backend(n)).unwrap_or(-1);
        let mut split = Split { backend_id: first_backend.max(0) as usize, i_start: 0, i_end: 0, inputs: Vec::new(), graph: CGraph::zeroed() };
        let mut cur = first_backend;
        let live = self.live;
        while i < nodes.len() {
            let node = nodes[i];
            // read, not held: the node is written below (its sources redirected) and read by the
            // backends asked about it in between
            let (op, srcs) = live.obj(node).map(|n| (n.op, n.src)).unwrap();
            let name = || live.obj(node).map(|n| n.name()).unwrap_or_default();
            if is_view_op::<R>(op) {
                i += 1;
                continue;
            }
            let node_backend = self.ids.backend(node);
            // stock's pass 4 hands a node no backend supports to its consumer's backend, which
            // then fails (or computes garbage) at compute time: refuse here instead (passes 1-3
            // only assign backends that support the node, so only pass 4's choices are checked)
            ensure!(
                node_backend != -1
                    && (!self.unchecked.contains_key(node as usize) || self.supports_op(node_backend as usize, node)),
                "node '{}' ({}) could not be assigned to any backend (no backend supports it)",
                name(),
                crate::host::op_name::<R>(op)
            );

            let mut need_new_split = false;
            if node_backend == cur && !split.inputs.is_empty() {
                for &src in srcs.iter() {
                    let Some(s) = live.obj(src) else { continue };
                    // a weight on another, incompatible backend: a new split lets the memory of
                    // the previously offloaded weights be reused
                    if s.buffer_ref().is_some_and(|b| b.usage == USAGE_WEIGHTS) {
                        let sb = self.ids.backend(src);
                        if sb != cur && !self.buffer_supported(s, cur as usize) {
                            need_new_split = true;
                            break;
                        }
                    }
                    if split.inputs.len() >= R::SPLIT_INPUTS_SOFT_LIMIT {
                        let sb = self.ids.backend(src);
                        if sb != cur && self.ids.copy(src, cur as usize, 0).is_null() && !self.buffer_supported(s, cur as usize) {
                            need_new_split = true;
                            break;
                        }
                    }
                }
            }

            if node_backend != cur || need_new_split {
                split.i_end = i;
                let next = Split { backend_id: node_backend as usize, i_start: i, i_end: 0, inputs: Vec::new(), graph: CGraph::zeroed() };
                self.splits.push(std::mem::replace(&mut split, next));
                cur = node_backend;
            }

            for (j, &src) in srcs.iter().enumerate() {
                // (srcs[j] is n.src[j]: only source j is written, after it is read here)
                let Some(s) = live.obj(src) else { continue };
                let sb = self.ids.backend(src);
                ensure!(sb != -1, "input '{}' of node '{}' has no backend", s.name(), name());

                if !R::SCHED_COPIES_EVERY_INPUT_LEAF
                    && s.flags & TENSOR_FLAG_INPUT != 0
                    && self.copies.n() > 1
                    && self.ids.copy(src, sb as usize, 0).is_null()
                {
                    self.make_copies(src, sb as usize, true);
                    self.graph_inputs.push(src);
                }

                if sb != cur && !self.buffer_supported(s, cur as usize) {
                    if self.ids.copy(src, cur as usize, 0).is_null() {
                        self.make_copies(src, cur as usize, false);
                        split.inputs.push(src);
                    }
                    self.redirects.push((node, j, src));
                    let copy = self.ids.copy(src, cur as usize, self.copies.cur());
                    self.live.obj_mut(node).unwrap().src[j] = copy;
                }
            }
            i += 1;
        }
        split.i_end = nodes.len();
        self.splits.push(split);
        // GGML_SCHED_DEBUG prints here, as stock: before any backend's graph_optimize reorders a
        // split's nodes
        if self.debug > 0 {
            self.print_assignments(g);
        }
        if R::SCHED_COPIES_EVERY_INPUT_LEAF && self.copies.n() > 1 {
            self.copy_every_input_leaf(g)?;
        }
        // 2026: the backend may reorder the split's nodes (in the caller's node array, as stock)
        // before the allocator's graph is built from them; b11118: and add allocation
        // dependencies, which need every split optimized before that graph is built
        self.alloc_deps.clear();
        for sp in &mut self.splits {
            sp.graph = crate::graph::graph_view(g, sp.i_start, sp.i_end);
            if let Some(be) = self.members.get(sp.backend_id) {
                be.graph_optimize(&mut sp.graph, &mut self.alloc_deps);
            }
            R::set_graph_uid(&mut sp.graph, next_graph_uid());
        }
        if self.alloc_deps.rejected > 0 {
            crate::log_error!(
                R,
                "ggml_backend_sched_split_graph",
                "a backend's graph_optimize added {} allocation dependencies with a NULL tensor: ignored",
                self.alloc_deps.rejected
            );
        }
        Ok(())
    }

    /// 0.25.3: every INPUT-flagged leaf gets its pipeline copies and a place among the allocator's
    /// first leafs, used by a node or not, so that the graph's memory does not depend on which
    /// inputs a batch uses (`Rev::SCHED_COPIES_EVERY_INPUT_LEAF`).
    fn copy_every_input_leaf(&mut self, g: &CGraph<R>) -> Result<()> {
        for &leaf in g.leafs() {
            let l = self.live.obj(leaf).unwrap();
            if l.flags & TENSOR_FLAG_INPUT == 0 {
                continue;
            }
            let b = self.ids.backend(leaf);
            ensure!(b != -1, "input leaf '{}' has no backend", l.name());
            if self.ids.copy(leaf, b as usize, 0).is_null() {
                self.make_copies(leaf, b as usize, true);
            }
            self.graph_inputs.push(leaf);
        }
        Ok(())
    }

    /// The graph the allocator sees: per split, a view keeping each input's source alive until the
    /// copy, then the copy itself, then the split's nodes, each followed (b11118) by views keeping
    /// the tensors a backend asked for alive until it has run; with pipeline copies, all input
    /// copies as leafs first; then the original leafs.
    fn build_alloc_graph(&mut self, g: &CGraph<R>) -> Result<()> {
        self.plan.begin();

        let all_nodes = g.nodes();
        let mut dep_nodes = 0;
        for si in 0..self.splits.len() {
            let (backend_id, i_start, i_end) = (self.splits[si].backend_id, self.splits[si].i_start, self.splits[si].i_end);
            for k in 0..self.splits[si].inputs.len() {
                let input = self.splits[si].inputs[k];
                let input_cpy = self.ids.copy(input, backend_id, self.copies.cur());
                let dep = self.arena.view_of(&self.live, input);
                self.live.obj_mut(dep).unwrap().src[0] = input;
                self.plan.push_node(dep, self.ids.backend(input));
                self.plan.push_node(input_cpy, backend_id as i32);
            }
            for &node in &all_nodes[i_start..i_end] {
                self.plan.push_node(node, self.ids.backend(node));
                let Some(keep) = self.alloc_deps.of(node) else { continue };
                // stock: a view of the first kept tensor with up to GGML_MAX_SRC kept tensors as srcs
                for chunk in keep.chunks(MAX_SRC) {
                    let dep = self.arena.view_of(&self.live, chunk[0]);
                    let d = self.live.obj_mut(dep).unwrap();
                    for (s, &t) in chunk.iter().enumerate() {
                        d.src[s] = t;
                    }
                    self.plan.push_node(dep, backend_id as i32);
                    dep_nodes += 1;
                }
            }
        }
        // stock asserts: an `until` that is not a node of the optimized graph is never reached
        ensure!(
            dep_nodes == self.alloc_deps.n_nodes(),
            "a backend's graph_optimize kept tensors alive until a tensor that is not a node of its split"
        );
        if self.copies.n() > 1 {
            for k in 0..self.graph_inputs.len() {
                let input = self.graph_inputs[k];
                let b = self.ids.backend(input);
                for c in 0..self.copies.n() {
                    self.plan.push_leaf(self.ids.copy(input, b as usize, c), b);
                }
            }
            for sp in &self.splits {
                for &input in &sp.inputs {
                    for c in 0..self.copies.n() {
                        self.plan.push_leaf(self.ids.copy(input, sp.backend_id, c), sp.backend_id as i32);
                    }
                }
            }
        }
        for &leaf in g.leafs() {
            self.plan.push_leaf(leaf, self.ids.backend(leaf));
        }

        self.plan.finish();
        Ok(())
    }
}
