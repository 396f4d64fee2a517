//! Statics kept per ggml revision. Rust has no generic statics, so each owner (the CPU buffer
//! types in `buffer`, the registry, the host's symbols, the SIMD device) holds one [`PerRev`] and
//! asks it for its value for revision `R`. The revisions themselves (`abi`) stay facts only and
//! import none of the layers built on them.

use crate::abi::{Rev, REV_SLOTS};
use std::any::Any;
use std::sync::OnceLock;

type Erased = &'static (dyn Any + Send + Sync);

/// One lazily built, never freed value per revision; each owner stores a single type in it.
pub struct PerRev([OnceLock<Erased>; REV_SLOTS]);

impl PerRev {
    #[allow(clippy::new_without_default)] // only ever a `static`
    pub const fn new() -> Self {
        PerRev([const { OnceLock::new() }; REV_SLOTS])
    }

    /// `R`'s value, built by `init` on first use (once, even when many threads ask at once).
    pub fn get<R: Rev, T: Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> &'static T {
        let v: Erased = *self.0[R::SLOT].get_or_init(|| Box::leak(Box::new(init())));
        match v.downcast_ref::<T>() {
            Some(t) => t,
            // a PerRev holds one type per owner; two owners sharing one is a bug found by any test
            None => unreachable!("a PerRev asked for two different types"),
        }
    }
}
