//! What a scheduler is made of and never changes after `sched_new`: its backends (the last one the
//! CPU fallback), the buffer type each allocates its compute buffer from, and with pipeline
//! parallelism an event per backend and copy; and which pipeline copy is in use. The passes ask
//! these questions through narrow methods, so that the set cannot change under them.

use super::MAX_COPIES;
use crate::abi::vtable::{c_handle, cstr, Live};
use crate::abi::*;
use crate::error::Result;
use crate::{bail, ensure};

pub(super) struct Members<R: Rev> {
    live: Live,
    backends: Vec<*mut Backend<R>>,
    bufts: Vec<*mut BufferType<R>>,
    /// [backend][copy]; NULL where the device has no events or without pipeline parallelism
    events: Vec<[*mut Event<R>; MAX_COPIES]>,
}

impl<R: Rev> Members<R> {
    /// Checks what stock asserts (and more: NULL backends and buffer types, a backend that
    /// cannot use its buffer type) and creates the events of `n_copies` copies.
    pub(super) fn new(live: Live, backends: &[*mut Backend<R>], bufts: Option<&[*mut BufferType<R>]>, n_copies: usize) -> Result<Self> {
        let n = backends.len();
        ensure!(n > 0, "at least one backend is needed");
        ensure!(n <= super::MAX_BACKENDS, "{} backends, at most {} are supported", n, super::MAX_BACKENDS);
        for (i, &b) in backends.iter().enumerate() {
            ensure!(!b.is_null(), "backend {} is NULL", i);
        }
        // stock aborts unless the last backend is a CPU device: the fallback for every op
        let last = live.obj(backends[n - 1]).and_then(|b| live.obj(b.device));
        let last_type = match last {
            Some(d) => d.type_()?,
            None => bail!("the last backend has no device"),
        };
        ensure!(last_type == DEV_TYPE_CPU, "the last backend must be a CPU device (got device type {})", last_type);

        let mut bts = Vec::with_capacity(n);
        for (i, &b) in backends.iter().enumerate() {
            let be = live.obj(b).unwrap();
            let buft = match bufts {
                Some(list) => list[i],
                None => c_handle(crate::backend::default_buffer_type(be)?),
            };
            ensure!(!buft.is_null(), "buffer type {} is NULL", i);
            ensure!(crate::backend::supports_buft(be, buft)?, "backend {} does not support buffer type {}", i, cstr(live.obj(buft).map(|t| t.name()).transpose()?.unwrap_or(std::ptr::null())));
            bts.push(buft);
        }

        let mut events = vec![[std::ptr::null_mut(); MAX_COPIES]; n];
        if n_copies > 1 {
            for (b, ev) in events.iter_mut().enumerate() {
                let dev = live.obj(backends[b]).and_then(|be| live.obj(be.device));
                for e in ev.iter_mut().take(n_copies) {
                    *e = crate::event::event_new(dev);
                }
            }
        }
        Ok(Members { live, backends: backends.to_vec(), bufts: bts, events })
    }

    pub(super) fn len(&self) -> usize {
        self.backends.len()
    }

    /// The handle of backend `b` (as the caller gave it).
    pub(super) fn backend(&self, b: usize) -> *mut Backend<R> {
        self.backends[b]
    }

    /// Backend `b`, if it is still alive.
    pub(super) fn get(&self, b: usize) -> Option<&Backend<R>> {
        self.live.obj(self.backends[b])
    }

    pub(super) fn buft(&self, b: usize) -> *mut BufferType<R> {
        self.bufts[b]
    }

    /// The buffer types, one per backend, for the graph allocator (which copies them).
    pub(super) fn bufts_mut(&mut self) -> &mut [*mut BufferType<R>] {
        &mut self.bufts
    }

    pub(super) fn index_of(&self, backend: *mut Backend<R>) -> Option<usize> {
        self.backends.iter().position(|&b| b == backend)
    }

    /// The CPU fallback.
    #[cfg_attr(not(feature = "simd"), allow(dead_code))]
    pub(super) fn last(&self) -> *mut Backend<R> {
        self.backends[self.backends.len() - 1]
    }

    pub(super) fn event(&self, b: usize, copy: usize) -> *mut Event<R> {
        self.events[b][copy]
    }

    pub(super) fn name(&self, b: usize) -> String {
        self.get(b).and_then(|be| be.name().ok()).map(cstr).unwrap_or_default()
    }

    /// Waits until every backend is idle.
    pub(super) fn synchronize_all(&self) {
        for b in 0..self.len() {
            if let Some(be) = self.get(b) {
                be.synchronize();
            }
        }
    }

    pub(super) fn supports_op(&self, b: usize, t: *const Tensor<R>) -> bool {
        self.get(b).and_then(|be| self.live.obj(t).map(|t| crate::backend::supports_op(be, t).unwrap_or(false))).unwrap_or(false)
    }

    pub(super) fn supports_buft(&self, b: usize, buft: *mut BufferType<R>) -> bool {
        self.get(b).map(|be| crate::backend::supports_buft(be, buft).unwrap_or(false)).unwrap_or(false)
    }

    pub(super) fn offload_op(&self, b: usize, t: *const Tensor<R>) -> bool {
        self.get(b).and_then(|be| self.live.obj(t).map(|t| crate::backend::offload_op(be, t).unwrap_or(false))).unwrap_or(false)
    }
}

impl<R: Rev> Drop for Members<R> {
    fn drop(&mut self) {
        for ev in &self.events {
            for &e in ev {
                let _ = crate::event::event_free(e);
            }
        }
    }
}

/// The pipeline copies (`parallel`: `MAX_COPIES` of every split input, so that a graph's inputs
/// can be written while the previous graph still reads its own).
pub(super) struct Copies {
    n: usize,
    cur: usize,
    /// The copy the current splits' nodes read their inputs from (`cur` when the graph was
    /// split). Stock copies a recomputed graph's inputs into `cur`, which has moved on, so the
    /// nodes read the previous run's copies; ours copies into the one they read.
    split: usize,
}

impl Copies {
    pub(super) fn new(parallel: bool) -> Self {
        Copies { n: if parallel { MAX_COPIES } else { 1 }, cur: 0, split: 0 }
    }
    pub(super) fn n(&self) -> usize {
        self.n
    }
    pub(super) fn cur(&self) -> usize {
        self.cur
    }
    pub(super) fn split(&self) -> usize {
        self.split
    }
    /// A graph was split: its nodes read the current copy.
    pub(super) fn pin_split(&mut self) {
        self.split = self.cur;
    }
    /// A graph was computed: the next one uses the next copy.
    pub(super) fn advance(&mut self) {
        self.cur = (self.cur + 1) % self.n;
    }
    /// Back to the first copy (2024's `sched_synchronize` outside an allocation).
    pub(super) fn rewind(&mut self) {
        self.cur = 0;
    }
}
