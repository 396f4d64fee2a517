//! The library's own compute backend ("SIMD"): ggml graphs computed by Rust kernels with runtime
//! CPU feature detection, on host memory.
//!
//! The kernels (block formats, products, row ops, threads) are the crate `ggml-rs-kernels`
//! (kernels/, re-exported here under their module names); this module holds what reads ggml's
//! structs: `node` (a node of revision `R` as the kernels read it), `exec` (the op table, the
//! graph loop), `fidelity` (which kinds of node this host's ggml-cpu computes in another float
//! order, so SIMD leaves them to it), `device` (the reg/device/stream objects ggml sees).

pub use ggml_rs_kernels::{affinity, cpu_features, gelu, op, ops, pool, profile, quant, softmax_row, vexp, view};

pub mod device;
pub mod exec;
pub mod fidelity;
pub mod node;

/// Whether this build serves a 2026 revision (a 2026 cargo feature; build.rs sets the cfg from
/// src/abi/revisions.list): only then does the executor route the 2026 graphs' ops (SET_ROWS,
/// GLU, FLASH_ATTN_EXT) to their kernels and the fidelity check probe them. The default build (the
/// 2024 revisions, the Android phone library among them) leaves those kernels unreferenced, so the
/// link drops them (its size budget, docs/size.md).
pub const SERVES_2026: bool = cfg!(ggml_serves_2026);
