//! Running the splits: copy each split's inputs into its backend (with events when the devices
//! have them), compute, and drive the eval callback.

use super::Sched;
use crate::abi::vtable::{call_eval_callback, obj};
use crate::abi::*;
use crate::buffer::tensor_copy;
use crate::error::Result;

impl<R: Rev> Sched<R> {
    fn event(&self, b: usize) -> *mut Event<R> {
        self.events[b][self.split_copy]
    }

    /// Waits (on the host) until backend `b` is done with the current copy.
    fn host_wait(&self, b: usize, backend: &Backend<R>) -> Result<()> {
        match obj(self.event(b)) {
            Some(e) => crate::event::event_synchronize(e),
            None => {
                backend.synchronize();
                Ok(())
            }
        }
    }

    fn copy_inputs(&self, si: usize) -> Result<()> {
        let split = &self.splits[si];
        let b = split.backend_id;
        let backend = obj(self.backends[b]).unwrap();
        for &input in &split.inputs {
            let inp = obj(input).unwrap();
            let cpy = obj(self.ids.copy(input, b, self.split_copy)).unwrap();
            if inp.flags & TENSOR_FLAG_INPUT != 0 {
                // user inputs are copied now, before the user can overwrite them
                self.host_wait(b, backend)?;
                tensor_copy(inp, cpy)?;
            } else {
                // the split's backend must be done with this copy before it is overwritten
                match obj(self.event(b)) {
                    Some(_) => backend.event_wait(self.event(b))?,
                    None => backend.synchronize(),
                }
                let input_backend = self.tensor_backend(input);
                if !backend.cpy_tensor_async(input_backend, inp, cpy as *const _ as *mut _) {
                    if let Some(ib) = obj(input_backend) {
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
    fn compute_split(&self, si: usize) -> Result<Status> {
        let split = &self.splits[si];
        let backend = obj(self.backends[split.backend_id]).unwrap();
        let Some(cb) = self.callback else {
            return backend.graph_compute(&split.graph as *const _ as *mut _);
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
        for si in 0..self.splits.len() {
            let b = self.splits[si].backend_id;
            // b11118: the allocator may have reused the previous split's memory, which that
            // backend may still be working on
            if R::SCHED_WAIT_PREV_BACKEND && self.splits[si].inputs.is_empty() {
                if let Some(p) = prev_backend.filter(|&p| p != b) {
                    if let Some(pb) = obj(self.backends[p]) {
                        self.host_wait(p, pb)?;
                    }
                }
            }
            self.copy_inputs(si)?;
            let st = self.compute_split(si)?;
            if st != STATUS_SUCCESS {
                return Ok(st);
            }
            prev_backend = Some(b);
            let split = &self.splits[si];
            if R::SCHED_EVENT_EVERY_SPLIT || !split.inputs.is_empty() {
                if let Some(be) = obj(self.backends[split.backend_id]) {
                    if !self.event(split.backend_id).is_null() {
                        be.event_record(self.event(split.backend_id))?;
                    }
                }
            }
        }
        self.cur_copy = (self.cur_copy + 1) % self.n_copies;
        Ok(STATUS_SUCCESS)
    }
}
