//! The library's own compute backend ("SIMD"): ggml graphs computed by Rust kernels with runtime
//! CPU feature detection, on host memory.
//!
//! The kernels (block formats, products, row ops, threads) are the crate `ggml-rs-kernels`
//! (kernels/, re-exported here under their module names); this module holds what reads ggml's
//! structs: `node` (a node of revision `R` as the kernels read it), `exec` (the op table, the
//! graph loop), `fidelity` (which kinds of node this host's ggml-cpu computes in another float
//! order, so SIMD leaves them to it), `device` (the reg/device/stream objects ggml sees).

pub use ggml_rs_kernels::{affinity, cpu_features, gelu, matmul, op, ops, pool, profile, quant, softmax_row, vexp, view};

pub mod device;
pub mod exec;
pub mod fidelity;
pub mod node;
