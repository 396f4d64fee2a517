//! ggml's backend layer (`ggml-backend.cpp` + `ggml-backend-reg.cpp`) in Rust, exported as a C ABI
//! for the ggml revisions of `src/abi/revisions.list`: one per symbol prefix in a build (`lm_`:
//! llama.rn 0.4.4 or, with a cargo feature, the 2026 packages; `wsp_`: whisper.rn 0.4.3 or 0.7.4;
//! unprefixed: upstream ggml, with its feature).
//!
//! Layout: `abi` (C struct mirrors, the revisions' facts), `buffer`, `backend`, `event`, `device`,
//! `registry`, `loader` (safe core, generic over the revision), `ffi` (one export layer per
//! prefix), `host` (weak references to the host's symbols), `host_graph` (small graphs computed
//! by the host's ggml-cpu, for the SIMD backend's fidelity check).

pub mod abi;
pub mod alloc;
pub mod backend;
pub mod buffer;
pub mod device;
pub mod dl;
pub mod error;
pub mod event;
pub mod ffi;
pub mod host;
pub mod host_try;
#[cfg(feature = "simd")]
pub mod host_graph;
pub mod loader;
pub mod per_rev;
pub mod ptr_map;
pub mod registry;
pub mod tensor;
pub mod tensor_2d;
pub mod graph;
pub mod guard;
pub mod sched;
#[cfg(feature = "simd")]
pub mod simd;
