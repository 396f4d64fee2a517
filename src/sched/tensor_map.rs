//! Per-tensor scheduler state keyed by tensor address: the backend a tensor is assigned to and the
//! copies made of it for other backends (one per pipeline copy).
//!
//! The scheduler looks tensors up thousands of times per graph, so the table is built on
//! `crate::ptr_map::PtrMap` (no fixed `graph_size` limit; the size check is done explicitly where
//! stock asserts).

use crate::abi::{Rev, Tensor};
use crate::ptr_map::PtrMap;

pub struct TensorMap<R: Rev> {
    slot: PtrMap<u32>,
    backend: Vec<i32>,
    copies: Vec<*mut Tensor<R>>,
    /// n_backends * n_copies
    stride: usize,
    n_copies: usize,
}

impl<R: Rev> TensorMap<R> {
    pub fn new(n_backends: usize, n_copies: usize, capacity: usize) -> Self {
        TensorMap {
            slot: PtrMap::with_capacity(capacity.min(4096)),
            backend: Vec::with_capacity(capacity),
            copies: Vec::new(),
            stride: n_backends * n_copies,
            n_copies,
        }
    }

    pub fn clear(&mut self) {
        self.slot.clear();
        self.backend.clear();
        self.copies.clear();
    }

    /// Drops every input copy (their tensors are about to be freed) but keeps the assignments:
    /// a graph split again without `sched_reset` keeps the caller's `set_tensor_backend` choices
    /// and must make fresh copies, never reuse freed ones.
    pub fn clear_copies(&mut self) {
        self.copies.iter_mut().for_each(|c| *c = std::ptr::null_mut());
    }

    /// Forgets `t` entirely (a scheduler-made tensor about to be freed, whose address may come back).
    pub fn forget(&mut self, t: *const Tensor<R>) {
        if let Some(s) = self.slot.get(t as usize) {
            self.backend[s as usize] = -1;
        }
    }

    fn slot_of(&mut self, t: *const Tensor<R>) -> usize {
        if let Some(s) = self.slot.get(t as usize) {
            return s as usize;
        }
        let s = self.backend.len();
        self.slot.insert(t as usize, s as u32);
        self.backend.push(-1);
        self.copies.extend(std::iter::repeat_n(std::ptr::null_mut(), self.stride));
        s
    }

    /// The backend assigned to `t`, -1 when none (or `t` is NULL).
    #[inline]
    pub fn backend(&self, t: *const Tensor<R>) -> i32 {
        if t.is_null() {
            return -1;
        }
        self.slot.get(t as usize).map(|s| self.backend[s as usize]).unwrap_or(-1)
    }

    pub fn set_backend(&mut self, t: *const Tensor<R>, b: i32) {
        let s = self.slot_of(t);
        self.backend[s] = b;
    }

    pub fn copy(&self, t: *const Tensor<R>, backend: usize, c: usize) -> *mut Tensor<R> {
        match self.slot.get(t as usize) {
            Some(s) => self.copies[s as usize * self.stride + backend * self.n_copies + c],
            None => std::ptr::null_mut(),
        }
    }

    pub fn set_copy(&mut self, t: *const Tensor<R>, backend: usize, c: usize, copy: *mut Tensor<R>) {
        let s = self.slot_of(t);
        self.copies[s * self.stride + backend * self.n_copies + c] = copy;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::lm::Lm;

    #[test]
    fn backends_and_copies_by_address() {
        // addresses only: the map never reads a tensor
        let (a, b) = (0x1000 as *mut Tensor<Lm>, 0x2000 as *mut Tensor<Lm>);
        let (ca, cb) = (0x3000 as *mut Tensor<Lm>, 0x4000 as *mut Tensor<Lm>);
        let mut m = TensorMap::<Lm>::new(2, 2, 8);
        assert_eq!((m.backend(a), m.backend(std::ptr::null())), (-1, -1));
        m.set_backend(a, 1);
        m.set_copy(a, 0, 1, ca);
        m.set_copy(b, 1, 0, cb);
        assert_eq!((m.backend(a), m.backend(b)), (1, -1));
        assert_eq!((m.copy(a, 0, 1), m.copy(a, 0, 0), m.copy(b, 1, 0)), (ca, std::ptr::null_mut(), cb));
        // copies die with their graph, assignments stay
        m.clear_copies();
        assert_eq!((m.copy(a, 0, 1), m.backend(a)), (std::ptr::null_mut(), 1));
        m.forget(a);
        assert_eq!(m.backend(a), -1);
        m.clear();
        assert_eq!(m.copy(b, 1, 0), std::ptr::null_mut());
    }
}
