//! The library's own compute backend ("SIMD"): ggml graphs computed by Rust kernels with runtime
//! CPU feature detection, on host memory.
//!
//! `quant` (block formats, dot products), `matmul` (MUL_MAT kernels), `vexp` (ggml's vectorized
//! expf, SILU), `softmax_row` and `gelu` (those ops' row kernels), `cpu_features` (runtime
//! dispatch), `tensor` (raw views), `ops` (one function per op), `exec` (what is supported, the
//! graph loop), `pool` (threads), `backend` (the reg/device/stream objects ggml sees).

pub mod backend;
pub mod cpu_features;
pub mod exec;
pub mod gelu;
pub mod matmul;
pub mod ops;
pub mod pool;
pub mod profile;
pub mod quant;
pub mod softmax_row;
pub mod tensor;
pub mod vexp;
