//! Passes 1-4: which backend runs each node. Lower backend index = higher priority; the last
//! backend is the CPU fallback.
//!
//! With the SIMD backend standing beside ggml-cpu (`GGML_RS_SIMD=1`, an ACCEL device ahead of the
//! CPU) the passes treat the two as one CPU group, where stock's passes see the CPU alone: a
//! node goes to the group wherever stock would put it on the CPU, and within the group to SIMD
//! when SIMD takes it. Seen as a backend of its own, SIMD would change more than who computes:
//! the GPU expansions stop at the CPU but not at an ACCEL device, a weight on the CPU is offered
//! to a GPU's `offload_op` only when it is the CPU's, and a node SIMD declines among SIMD nodes
//! stays unassigned and goes to the first backend that supports it (a GPU) in pass 3.

use super::Sched;
use crate::abi::*;
use crate::error::Result;
use crate::tensor::is_view_op;
use crate::bail;

impl<R: Rev> Sched<R> {
    fn last(&self) -> i32 {
        self.members.len() as i32 - 1
    }

    /// Is backend `id` the CPU, or the SIMD backend standing beside it?
    fn in_cpu_group(&self, id: i32) -> bool {
        id == self.last() || (id != -1 && self.simd_beside_cpu == Some(id))
    }

    /// Assigns `node` to backend `b` if it runs it; for the CPU group, to SIMD if SIMD takes it,
    /// else to the CPU. Whether it was assigned.
    fn set_if_supported(&mut self, node: *mut Tensor<R>, b: i32) -> bool {
        if self.in_cpu_group(b) {
            if let Some(simd) = self.simd_beside_cpu {
                if self.supports_op(simd as usize, node) {
                    self.ids.set_backend(node, simd);
                    return true;
                }
            }
            if self.supports_op(self.last() as usize, node) {
                self.ids.set_backend(node, self.last());
                return true;
            }
            return false;
        }
        if self.supports_op(b as usize, node) {
            self.ids.set_backend(node, b);
            return true;
        }
        false
    }

    /// The highest-priority backend that supports `tensor`'s buffer type and can run `op`.
    fn backend_from_buffer(&self, tensor: &Tensor<R>, op: *const Tensor<R>) -> i32 {
        let Some(buf) = self.live.obj(tensor.data_buffer()) else { return -1 };
        (0..self.members.len())
            .find(|&i| self.supports_buft(i, buf.buft) && self.supports_op(i, op))
            .map(|i| i as i32)
            .unwrap_or(-1)
    }

    /// Can backend `b` run `node` once its sources in buffers `b` cannot use are copied into a
    /// buffer of `b`'s type (what pass 5 does)? Asked on a stand-in of the node whose such
    /// sources are stand-ins of those copies: same layout, no data yet, in an empty buffer of
    /// `b`'s buffer type. Nothing is written to the graph.
    pub(super) fn supports_op_with_copies(&self, b: usize, node: &Tensor<R>) -> bool {
        let foreign = |s: &Tensor<R>| self.live.obj(s.data_buffer()).is_some_and(|buf| !self.supports_buft(b, buf.buft));
        if !node.src.iter().filter_map(|&s| self.live.obj(s)).any(foreign) {
            return self.supports_op(b, node);
        }
        let mut copy_buffer =
            Buffer { iface: BufferI::EMPTY, buft: self.members.buft(b), context: std::ptr::null_mut(), size: 0, usage: USAGE_COMPUTE };
        let mut copies: [Option<Tensor<R>>; MAX_SRC] = std::array::from_fn(|_| None);
        for (j, copy) in copies.iter_mut().enumerate() {
            let Some(s) = self.live.obj(node.src[j]).filter(|s| foreign(s)) else { continue };
            let mut c = s.clone();
            c.buffer = &mut copy_buffer;
            c.op = R::OPS.none;
            c.src = [std::ptr::null_mut(); MAX_SRC];
            c.view_src = std::ptr::null_mut();
            c.view_offs = 0;
            c.data = std::ptr::null_mut();
            c.extra = std::ptr::null_mut();
            *copy = Some(c);
        }
        let mut stand_in = node.clone();
        for (j, copy) in copies.iter_mut().enumerate() {
            if let Some(c) = copy {
                stand_in.src[j] = c;
            }
        }
        self.supports_op(b, &stand_in)
    }

    /// Pass 1 for one tensor: pinned by its (or its view source's) buffer, a graph input on the
    /// CPU, or next to its weights (unless a higher-priority backend wants to offload the op).
    fn backend_from_cur(&self, t: *mut Tensor<R>) -> Result<i32> {
        let tr = self.live.obj(t).unwrap();
        let id = self.backend_from_buffer(tr, t);
        if id != -1 {
            return Ok(id);
        }
        if let Some(vs) = tr.view_src() {
            let id = self.backend_from_buffer(vs, t);
            if id != -1 {
                return Ok(id);
            }
        }
        if !tr.data_buffer().is_null() {
            // stock aborts here: the tensor is pre-allocated where no backend can run its op
            let buf = self.live.obj(tr.data_buffer()).unwrap();
            bail!(
                "pre-allocated tensor '{}' in a buffer ({}) that cannot run the operation ({})",
                tr.name(),
                crate::abi::vtable::cstr(buf.buft()?.name()?),
                crate::host::op_name::<R>(tr.op)
            );
        }
        if tr.flags & TENSOR_FLAG_INPUT != 0 {
            return Ok(self.last());
        }
        for &src in tr.src.iter() {
            let Some(s) = self.live.obj(src) else { continue };
            let Some(sbuf) = self.live.obj(s.buffer) else { continue };
            // ROPE's frequency tensor is too small to choose a backend by
            if tr.op != R::OPS.rope && sbuf.usage == USAGE_WEIGHTS {
                let src_id = self.backend_from_buffer(s, t);
                let may_offload = if R::SCHED_OFFLOAD_NEEDS_HOST_BUFFER {
                    self.op_offload && sbuf.buft().map(|b| b.is_host()).unwrap_or(false)
                } else {
                    true
                };
                if self.in_cpu_group(src_id) && may_offload {
                    for b in (0..self.last() as usize).filter(|&b| Some(b as i32) != self.simd_beside_cpu) {
                        if self.supports_op(b, t) && self.offload_op(b, t) {
                            return Ok(b as i32);
                        }
                    }
                }
                return Ok(src_id);
            }
        }
        Ok(-1)
    }

    /// Pass 1: leafs and nodes with pre-allocated data or weights; user assignments are kept.
    pub(super) fn assign_from_buffers(&mut self, g: &CGraph<R>) -> Result<()> {
        for &leaf in g.leafs() {
            if self.ids.backend(leaf) == -1 {
                let id = self.backend_from_cur(leaf)?;
                self.ids.set_backend(leaf, id);
            }
        }
        for &node in g.nodes() {
            if R::SCHED_PASS1_SKIPS_VIEWS && is_view_op::<R>(self.live.obj(node).unwrap().op) {
                continue;
            }
            if self.ids.backend(node) == -1 {
                let id = self.backend_from_cur(node)?;
                self.ids.set_backend(node, id);
            }
        }
        Ok(())
    }

    /// One expansion sweep: unassigned nodes take the backend of the last assigned node seen
    /// (if it supports them); with `skip_cpu`, CPU-assigned nodes interrupt the run.
    fn expand(&mut self, order: &[*mut Tensor<R>], skip_cpu: bool) {
        let mut cur = -1;
        for &node in order {
            if is_view_op::<R>(self.live.obj(node).unwrap().op) {
                continue;
            }
            let id = self.ids.backend(node);
            if id != -1 {
                cur = if skip_cpu && self.in_cpu_group(id) { -1 } else { id };
            } else if cur != -1 {
                self.set_if_supported(node, cur);
            }
        }
    }

    /// Pass 2: GPU assignments spread down then up (ignoring the CPU), then every assignment.
    pub(super) fn expand_assignments(&mut self, g: &CGraph<R>) {
        let down: Vec<*mut Tensor<R>> = g.nodes().to_vec();
        let up: Vec<*mut Tensor<R>> = down.iter().rev().copied().collect();
        self.expand(&down, true);
        self.expand(&up, true);
        self.expand(&down, false);
        self.expand(&up, false);
    }

    /// Is `t` (allocated or assigned) in a buffer type backend `b` can use?
    pub(super) fn buffer_supported(&self, t: &Tensor<R>, b: usize) -> bool {
        let buft = match self.live.obj(t.data_buffer()) {
            Some(buf) => buf.buft,
            None => {
                let mut id = self.ids.backend(t);
                if id == -1 && !t.view_src.is_null() {
                    id = self.ids.backend(t.view_src);
                }
                if id == -1 {
                    return false;
                }
                self.members.buft(id as usize)
            }
        };
        !buft.is_null() && self.supports_buft(b, buft)
    }

    /// Pass 3: unassigned nodes go to the supporting backend with the most usable inputs;
    /// assigned nodes move to a higher-priority backend with the same buffer type when all their
    /// inputs are usable there.
    pub(super) fn upgrade_to_higher_priority(&mut self, g: &CGraph<R>) {
        for &node in g.nodes() {
            let n = self.live.obj(node).unwrap();
            if is_view_op::<R>(n.op) {
                continue;
            }
            let id = self.ids.backend(node);
            if id == -1 {
                let mut best = -1i32;
                for b in 0..self.members.len() {
                    if !self.supports_op(b, node) {
                        continue;
                    }
                    let supported = n
                        .src
                        .iter()
                        .filter_map(|&s| self.live.obj(s))
                        .filter(|s| {
                            (self.ids.backend(*s) != -1 || self.ids.backend(s.view_src) != -1) && self.buffer_supported(s, b)
                        })
                        .count() as i32;
                    if supported > best {
                        best = supported;
                        self.ids.set_backend(node, b as i32);
                    }
                }
            } else {
                for b in 0..id as usize {
                    if self.members.buft(b) == self.members.buft(id as usize)
                        && self.supports_op(b, node)
                        && n.src.iter().filter_map(|&s| self.live.obj(s)).all(|s| self.buffer_supported(s, b))
                    {
                        self.ids.set_backend(node, b as i32);
                        break;
                    }
                }
            }
        }
    }

    /// With one backend (the common CPU-only app) passes 1-4 can only end with everything on it:
    /// assign directly, checking what stock's passes would have rejected (a pre-allocated tensor
    /// in a buffer the backend cannot use, an op it cannot run).
    pub(super) fn assign_single_backend(&mut self, g: &CGraph<R>) -> Result<()> {
        self.unchecked.clear();
        for &leaf in g.leafs() {
            let l = self.live.obj(leaf).unwrap();
            if let Some(buf) = self.live.obj(l.data_buffer()) {
                if !self.supports_buft(0, buf.buft) {
                    bail!(
                        "pre-allocated tensor '{}' in a buffer ({}) the backend cannot use",
                        l.name(),
                        crate::abi::vtable::cstr(buf.buft()?.name()?)
                    );
                }
            }
            self.ids.set_backend(leaf, 0);
        }
        for &node in g.nodes() {
            let n = self.live.obj(node).unwrap();
            if self.ids.backend(node) == -1 {
                self.ids.set_backend(node, 0);
                if !is_view_op::<R>(n.op) {
                    // split_at_backend_change checks these against supports_op
                    self.unchecked.insert(node as usize, true);
                }
            }
            for &src in n.src.iter() {
                if !src.is_null() && self.ids.backend(src) == -1 {
                    self.ids.set_backend(src, 0);
                }
            }
        }
        Ok(())
    }

    /// Pass 4: views follow their source; sources still unassigned follow their consumer.
    pub(super) fn assign_remaining_srcs(&mut self, g: &CGraph<R>) {
        self.unchecked.clear();
        for &node in g.nodes() {
            let n = self.live.obj(node).unwrap();
            if !n.view_src.is_null() && self.ids.backend(node) == -1 {
                let id = self.ids.backend(n.view_src);
                self.ids.set_backend(node, id);
                self.unchecked.insert(node as usize, true);
            }
            let cur = self.ids.backend(node);
            for &src in n.src.iter() {
                let Some(s) = self.live.obj(src) else { continue };
                if self.ids.backend(src) == -1 {
                    let id = if !s.view_src.is_null() { self.ids.backend(s.view_src) } else { cur };
                    self.ids.set_backend(src, id);
                    self.unchecked.insert(src as usize, true);
                }
            }
        }
    }
}
