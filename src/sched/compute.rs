//! Running the splits: copy each split's inputs into its backend (with events when the devices
//! have them), compute, and drive the eval callback.

use super::Sched;
use crate::abi::vtable::call_eval_callback;
use crate::abi::*;
use crate::buffer::tensor_copy;
use crate::error::Result;
use crate::ensure;
use std::ffi::c_void;

/// The experts the last ids tensor read in this compute uses (2026's MoE weight copies; stock's
/// `prev_ids_tensor` / `used_ids`, local to one `compute_splits`).
pub(super) struct UsedExperts<R: Rev> {
    ids: *const Tensor<R>,
    used: Vec<bool>,
}

impl<R: Rev> UsedExperts<R> {
    fn new() -> Self {
        UsedExperts { ids: std::ptr::null(), used: Vec::new() }
    }
}

impl<R: Rev> Sched<R> {
    fn event(&self, b: usize) -> *mut Event<R> {
        self.members.event(b, self.copies.split())
    }

    /// Waits (on the host) until backend `b` is done with the current copy.
    fn host_wait(&self, b: usize, backend: &Backend<R>) -> Result<()> {
        match self.live.obj(self.event(b)) {
            Some(e) => crate::event::event_synchronize(e),
            None => {
                backend.synchronize();
                Ok(())
            }
        }
    }

    /// 2026: a weight in host memory whose copy the split's first node, a MUL_MAT_ID, reads gets
    /// only the experts the ids use copied (runs of consecutive experts, each with up to 512
    /// bytes of the next expert as padding), as stock. Returns false for any other input.
    fn copy_used_experts(&self, si: usize, k: usize, moe: &mut UsedExperts<R>) -> Result<bool> {
        let split = &self.splits[si];
        let b = split.backend_id;
        let input = split.inputs[k];
        let inp = self.live.obj(input).unwrap();
        let cpy = self.ids.copy(input, b, self.copies.split());
        let Some(node) = split.graph.nodes().first().and_then(|&n| self.live.obj(n)) else { return Ok(false) };
        let Some(buf) = self.live.obj(inp.buffer) else { return Ok(false) };
        if buf.usage != USAGE_WEIGHTS
            || !crate::buffer::is_host_buffer(inp.buffer_ref())
            || node.op != R::OPS.mul_mat_id
            || node.src[0] != cpy
        {
            return Ok(false);
        }
        let n_expert = inp.ne[2].max(0) as usize;
        let expert_size = inp.nb[2];
        if let Some(ib) = self.live.obj(self.tensor_backend(input)) {
            ib.synchronize();
        }
        let Some(mut ids) = self.live.obj(node.src[2]) else { return Ok(false) };
        // no ids, no expert to copy (b11118 skips; v0.20.0 reads past its bitset)
        if ids.ne.iter().any(|&n| n <= 0) {
            return Ok(true);
        }
        let mut ids_backend = self.members.backend(b);
        // an ids tensor that is a later input of this split is not copied yet: read the source
        for &later in &split.inputs[k + 1..] {
            if std::ptr::eq(ids, self.ids.copy(later, b, self.copies.split())) {
                ids = self.live.obj(later).unwrap();
                ids_backend = self.tensor_backend(later);
                break;
            }
        }
        if !std::ptr::eq(ids, moe.ids) {
            let n = crate::tensor::nbytes(ids)?;
            let mut v = vec![0i32; n / 4];
            let ib = self.live.obj(ids_backend).unwrap();
            crate::backend::tensor_get_async(ib, ids, v.as_mut_ptr() as *mut c_void, 0, n)?;
            ib.synchronize();
            moe.used = vec![false; n_expert];
            moe.ids = std::ptr::null();
            for i1 in 0..ids.ne[1] as usize {
                for i0 in 0..ids.ne[0] as usize {
                    let at = i1 * ids.nb[1] / 4 + i0 * ids.nb[0] / 4;
                    let id = v.get(at).copied().unwrap_or(-1);
                    ensure!(id >= 0 && (id as usize) < n_expert, "MUL_MAT_ID '{}': expert id {} out of range (0..{})", node.name(), id, n_expert);
                    moe.used[id as usize] = true;
                }
            }
            moe.ids = ids;
        }
        let be = self.members.get(b).unwrap();
        let cpy_t = self.live.obj(cpy).unwrap();
        let mut id = 0;
        while id < n_expert {
            if !moe.used[id] {
                id += 1;
                continue;
            }
            let first = id;
            while id + 1 < n_expert && moe.used[id + 1] {
                id += 1;
            }
            let last = id;
            let offset = first * expert_size;
            let padding_end = if last + 1 < n_expert { expert_size.min(512) } else { 0 };
            let size = (last - first + 1) * expert_size + padding_end;
            crate::backend::tensor_set_async(be, cpy_t, (inp.data as usize + offset) as *const c_void, offset, size)?;
            id += 1;
        }
        Ok(true)
    }

    fn copy_inputs(&self, si: usize, moe: &mut UsedExperts<R>) -> Result<()> {
        let split = &self.splits[si];
        let b = split.backend_id;
        let backend = self.members.get(b).unwrap();
        for (k, &input) in split.inputs.iter().enumerate() {
            let inp = self.live.obj(input).unwrap();
            let cpy_p = self.ids.copy(input, b, self.copies.split());
            let cpy = self.live.obj(cpy_p).unwrap();
            if inp.flags & TENSOR_FLAG_INPUT != 0 {
                // user inputs are copied now, before the user can overwrite them
                self.host_wait(b, backend)?;
                tensor_copy(inp, cpy)?;
            } else {
                // the split's backend must be done with this copy before it is overwritten
                match self.live.obj(self.event(b)) {
                    Some(_) => backend.event_wait(self.event(b))?,
                    None => backend.synchronize(),
                }
                if R::SCHED_COPY_USED_EXPERTS && self.copy_used_experts(si, k, moe)? {
                    continue;
                }
                let input_backend = self.tensor_backend(input);
                if !backend.cpy_tensor_async(input_backend, inp, cpy_p) {
                    if let Some(ib) = self.live.obj(input_backend) {
                        ib.synchronize();
                    }
                    self.host_wait(b, backend)?;
                    tensor_copy(inp, cpy)?;
                }
            }
        }
        Ok(())
    }

    /// Computes one split, asking the eval callback which nodes it wants to observe so that the
    /// unobserved ones run together. Returns ABORTED when the callback declines to continue.
    fn compute_split(&mut self, si: usize) -> Result<Status> {
        // (mutable: the backend is handed the split's graph, which ggml lets it write)
        let split = &mut self.splits[si];
        let backend = self.members.get(split.backend_id).unwrap();
        let Some(cb) = self.callback else {
            return backend.graph_compute(&mut split.graph);
        };
        let nodes = split.graph.nodes();
        let mut j0 = 0;
        while j0 < nodes.len() {
            let mut j1 = j0;
            let mut need = call_eval_callback(cb, nodes[j1], true, self.callback_data);
            while !need && j1 + 1 < nodes.len() {
                j1 += 1;
                need = call_eval_callback(cb, nodes[j1], true, self.callback_data);
            }
            let mut view = crate::graph::graph_view(&split.graph, j0, j1 + 1);
            let st = backend.graph_compute(&mut view)?;
            if st != STATUS_SUCCESS {
                return Ok(st);
            }
            backend.synchronize();
            // stock only ends the split here; the header promises a cancelled compute, so we stop
            if need && !call_eval_callback(cb, nodes[j1], false, self.callback_data) {
                return Ok(STATUS_ABORTED);
            }
            j0 = j1 + 1;
        }
        Ok(STATUS_SUCCESS)
    }

    pub(super) fn compute_splits(&mut self) -> Result<Status> {
        let mut prev_backend: Option<usize> = None;
        let mut moe = UsedExperts::new();
        for si in 0..self.splits.len() {
            let b = self.splits[si].backend_id;
            // b11118: the allocator may have reused the previous split's memory, which that
            // backend may still be working on
            if R::SCHED_WAIT_PREV_BACKEND && self.splits[si].inputs.is_empty() {
                if let Some(p) = prev_backend.filter(|&p| p != b) {
                    if let Some(pb) = self.members.get(p) {
                        self.host_wait(p, pb)?;
                    }
                }
            }
            self.copy_inputs(si, &mut moe)?;
            let st = self.compute_split(si)?;
            if st != STATUS_SUCCESS {
                return Ok(st);
            }
            prev_backend = Some(b);
            let split = &self.splits[si];
            if R::SCHED_EVENT_EVERY_SPLIT || !split.inputs.is_empty() {
                if let Some(be) = self.members.get(split.backend_id) {
                    if !self.event(split.backend_id).is_null() {
                        be.event_record(self.event(split.backend_id))?;
                    }
                }
            }
        }
        self.copies.advance();
        Ok(STATUS_SUCCESS)
    }
}
