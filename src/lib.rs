//! ggml's backend layer (`ggml-backend.cpp` + `ggml-backend-reg.cpp`) in Rust, exported as a C ABI
//! for both llama.rn 0.4.4 (`lm_` symbols) and whisper.rn 0.4.3 (`wsp_` symbols).
//!
//! Layout: `abi` (C struct mirrors, the one place C pointers are trusted), `buffer`, `backend`,
//! `event`, `device`, `registry`, `loader` (safe core, generic over the revision), `ffi` (the two
//! export layers), `host` (weak references to the host's symbols), `host_graph` (small graphs
//! computed by the host's ggml-cpu, for the SIMD backend's fidelity check).

#[cfg(any(
    all(feature = "ggml-2026", feature = "ggml-b11118"),
    all(feature = "ggml-2026", feature = "ggml-0253"),
    all(feature = "ggml-b11118", feature = "ggml-0253")
))]
compile_error!("features ggml-2026, ggml-b11118 and ggml-0253 each export the unprefixed ggml_ ABI: pick one");

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
#[cfg(ggml_unprefixed)]
pub mod host_ggml;
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
