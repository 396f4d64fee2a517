//! The buffers a calling thread keeps from one product to the next (a decode step runs hundreds
//! of products), shared by the general products (`product`) and the streamed ones, and when
//! they are given back.

use super::tiles::QuantizedActs;
use std::cell::RefCell;

thread_local! {
    /// Per-thread gemm panel, reused across calls (the pool's threads live as long as the backend).
    pub(super) static SCRATCH: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
    /// The calling thread's converted activations, one per batch, reused across products.
    pub(super) static PREPARED: RefCell<Vec<QuantizedActs>> = const { RefCell::new(Vec::new()) };
}

/// Converted activations a calling thread keeps from one graph to the next: a decode step's
/// (a few KB per product) and a prompt's (under 1 MB for SmolLM2) are reused, a whisper
/// encoder's (one f32 row of 1500 per frame and head, tens of MB) are given back when the graph
/// ends; before, an app that had finished transcribing held them until the thread exited.
const KEEP_BYTES: usize = 4 << 20;

/// Frees the calling thread's converted activations if they exceed `KEEP_BYTES`; called when
/// a graph computation ends. Returns the bytes kept.
pub fn trim_thread_buffers() -> usize {
    PREPARED.with(|p| {
        let mut p = p.borrow_mut();
        let bytes: usize = p.iter().map(QuantizedActs::heap_bytes).sum();
        if bytes > KEEP_BYTES {
            *p = Vec::new();
            0
        } else {
            bytes
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::super::tiles::Acts;
    use crate::quant::WType;

    /// A graph's large converted activations are given back when it ends; a decode step's stay.
    #[test]
    fn large_activation_buffers_are_freed_after_a_graph() {
        let prepare = |n: usize, k: usize| {
            let x = vec![0.5f32; n * k];
            let mut q = QuantizedActs::new();
            q.prepare(WType::F16, &Acts::new(&x, k, n, k));
            PREPARED.with(|p| *p.borrow_mut() = vec![q]);
        };
        prepare(1, 576);
        let small = trim_thread_buffers();
        assert!(small > 0 && small <= KEEP_BYTES, "{small}");
        assert_eq!(PREPARED.with(|p| p.borrow().len()), 1);
        prepare(1500, 1500);
        assert_eq!(trim_thread_buffers(), 0);
        assert!(PREPARED.with(|p| p.borrow().is_empty()));
    }
}
