//! The caller's bytes of the graph inputs the allocator left at risk (their memory is reused by
//! later nodes; see `alloc::GraphAlloc::at_risk`): saved before a compute, written back after it,
//! so that reading an input or computing again sees what the caller wrote. Stock has no such
//! guard: its allocator never lets a later node reuse an input's memory, at the cost of larger
//! compute buffers.

use crate::abi::vtable::Live;
use crate::abi::*;
use crate::alloc::AtRisk;
use crate::ensure;
use crate::error::Result;
use std::ffi::c_void;

/// What one allocation's at-risk inputs held: the caller's data and what the last compute left.
pub(super) struct InputGuard {
    /// the caller's bytes of every at-risk input, one after the other
    stash: Vec<u8>,
    /// what the last compute left in those inputs (compared before the next one)
    after: Vec<u8>,
    scratch: Vec<u8>,
    /// `stash` belongs to the current allocation
    valid: bool,
}

impl InputGuard {
    pub(super) fn new() -> Self {
        InputGuard { stash: Vec::new(), after: Vec::new(), scratch: Vec::new(), valid: false }
    }

    /// A new allocation: the inputs now hold whatever the caller writes next, nothing saved applies.
    pub(super) fn forget(&mut self) {
        self.valid = false;
    }

    /// Before a compute: makes each at-risk input hold the caller's data and saves that data.
    /// An input written back after the last compute (eager) holds the caller's data already (or
    /// newer data the caller wrote since). A lazy one still holds what the last compute left
    /// there: if its bytes are exactly that, the caller wrote nothing new and its saved data goes
    /// back; any other bytes are new data from the caller, saved instead.
    pub(super) fn save<R: Rev>(&mut self, live: Live, risky: &[AtRisk<R>]) -> Result<()> {
        let mut before = std::mem::take(&mut self.stash);
        let mut now = std::mem::take(&mut self.scratch);
        let fresh = !self.valid;
        if fresh {
            before.clear();
        }
        let mut at = 0;
        for r in risky {
            let Some(t) = live.obj(r.tensor) else { continue };
            let n = crate::tensor::nbytes(t)?;
            if fresh {
                before.resize(at + n, 0);
            }
            ensure!(at + n <= before.len(), "graph input '{}' changed size since it was saved", t.name());
            if fresh || r.eager {
                crate::buffer::tensor_get(t, before[at..].as_mut_ptr() as *mut c_void, 0, n)?;
            } else {
                now.clear();
                now.resize(n, 0);
                crate::buffer::tensor_get(t, now.as_mut_ptr() as *mut c_void, 0, n)?;
                if self.after.get(at..at + n) == Some(&now[..]) {
                    crate::buffer::tensor_set(t, before[at..].as_ptr() as *const c_void, 0, n)?;
                } else {
                    before[at..at + n].copy_from_slice(&now);
                }
            }
            at += n;
        }
        self.stash = before;
        self.scratch = now;
        self.valid = true;
        Ok(())
    }

    /// After a compute (finished, failed or cancelled), once the backend holding each input is
    /// done with it (`settle(buffer_id)`): writes the eager inputs back and records what the
    /// compute left in the lazy ones (whose bytes an output now holds) for `save` to tell
    /// untouched from rewritten.
    pub(super) fn restore<R: Rev>(&mut self, live: Live, risky: &[AtRisk<R>], settle: impl Fn(usize)) -> Result<()> {
        let mut after = std::mem::take(&mut self.after);
        after.resize(self.stash.len(), 0);
        let mut at = 0;
        let mut r = Ok(());
        for ar in risky {
            let Some(t) = live.obj(ar.tensor) else { continue };
            settle(ar.buffer_id);
            let Ok(n) = crate::tensor::nbytes(t) else { continue };
            if at + n > self.stash.len() {
                break;
            }
            let done = if ar.eager {
                crate::buffer::tensor_set(t, self.stash[at..].as_ptr() as *const c_void, 0, n)
            } else {
                crate::buffer::tensor_get(t, after[at..].as_mut_ptr() as *mut c_void, 0, n)
            };
            if done.is_err() {
                r = done;
            }
            at += n;
        }
        self.after = after;
        r
    }
}
