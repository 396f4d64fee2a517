//! The library's own compute backend ("SIMD"): ggml graphs computed by Rust kernels with runtime
//! CPU feature detection, on host memory.
//!
//! `quant` (block formats, dot products), `matmul` (MUL_MAT kernels), `vexp` (ggml's vectorized
//! expf, SILU), `softmax_row` and `gelu` (those ops' row kernels), `cpu_features` (runtime
//! dispatch), `view` (raw views of tensor memory), `op` (the revision-free op of a node), `ops` (one module
//! per kind of op: `supports` and `compute`), `exec` (the op table, the graph loop), `fidelity` (which kinds of node
//! this host's ggml-cpu computes in another float order, so SIMD leaves them to it), `pool`
//! (threads), `device` (the reg/device/stream objects ggml sees).

pub mod affinity;
pub mod cpu_features;
pub mod device;
pub mod exec;
pub mod fidelity;
pub mod gelu;
pub mod matmul;
pub mod op;
pub mod ops;
pub mod pool;
pub mod profile;
pub mod quant;
pub mod softmax_row;
pub mod vexp;
pub mod view;
