//! Per-tensor scheduler state keyed by tensor address: the backend a tensor is assigned to and the
//! copies made of it for other backends (one per pipeline copy). Stock keeps this in a fixed-size
//! open-addressing hash set sized from `graph_size`; a growable map has no such limit, and the
//! size check is done explicitly where stock asserts.

use crate::abi::{Rev, Tensor};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Tensor addresses are already well spread; a multiply-shift is all the hashing they need.
#[derive(Default)]
pub struct PtrHasher(u64);
impl Hasher for PtrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = ((n as u64) >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

pub type PtrMap<V> = HashMap<usize, V, BuildHasherDefault<PtrHasher>>;

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
        let mut slot = PtrMap::default();
        slot.reserve(capacity);
        TensorMap { slot, backend: Vec::with_capacity(capacity), copies: Vec::new(), stride: n_backends * n_copies, n_copies }
    }

    pub fn clear(&mut self) {
        self.slot.clear();
        self.backend.clear();
        self.copies.clear();
    }

    fn slot_of(&mut self, t: *const Tensor<R>) -> usize {
        let next = self.backend.len() as u32;
        let s = *self.slot.entry(t as usize).or_insert(next) as usize;
        if s == self.backend.len() {
            self.backend.push(-1);
            self.copies.extend(std::iter::repeat_n(std::ptr::null_mut(), self.stride));
        }
        s
    }

    /// The backend assigned to `t`, -1 when none (or `t` is NULL).
    pub fn backend(&self, t: *const Tensor<R>) -> i32 {
        if t.is_null() {
            return -1;
        }
        self.slot.get(&(t as usize)).map(|&s| self.backend[s as usize]).unwrap_or(-1)
    }

    pub fn set_backend(&mut self, t: *const Tensor<R>, b: i32) {
        let s = self.slot_of(t);
        self.backend[s] = b;
    }

    pub fn copy(&self, t: *const Tensor<R>, backend: usize, c: usize) -> *mut Tensor<R> {
        match self.slot.get(&(t as usize)) {
            Some(&s) => self.copies[s as usize * self.stride + backend * self.n_copies + c],
            None => std::ptr::null_mut(),
        }
    }

    pub fn set_copy(&mut self, t: *const Tensor<R>, backend: usize, c: usize, copy: *mut Tensor<R>) {
        let s = self.slot_of(t);
        self.copies[s * self.stride + backend * self.n_copies + c] = copy;
    }
}
