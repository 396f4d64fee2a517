//! The SIMD backend's kernels, free of any ggml revision's types: `ggml_types` (the one table of
//! ggml's type ids: names, block sizes), `quant` (block formats, dot
//! products), `vexp` (ggml's vectorized expf, SILU), `softmax_row` and `gelu` (those ops' row
//! kernels), `cpu_features` (runtime dispatch), `view` (raw views of tensor memory), `op` (a node
//! as the kernels read it), `ops` (one module per kind of op: `supports` and `compute`; MUL_MAT's
//! products and their ISA tiles all in `ops::mul_mat`), `pool` and `affinity` (threads), `profile` (per-op timings).
//!
//! A crate of its own so that a build can optimize it for speed (opt-level 3, 16 codegen units:
//! the kernels' code is what the speed and instruction-count figures measured) and the library
//! around it for size (its scheduler, allocator and exports run nothing hot): Cargo sets the
//! opt-level per crate (the library's `release-small` profile, docs/size.md). The library reads
//! ggml's structs and turns a node into an [`op::Node`] (its `simd::node`); nothing here reads a
//! ggml struct.

pub mod ggml_types;
pub mod order;
pub use order::CpuOrder;

/// ggml's `ggml_from_float_t`: `void (*)(const float * x, void * y, int64_t k)`, a quantizer of
/// the host's ggml-cpu (the library reads them from its type traits; [`quant::HostQ8K`] calls one).
pub type FromFloat = unsafe extern "C" fn(*const f32, *mut std::ffi::c_void, i64);

#[cfg(feature = "compute")]
pub mod affinity;
#[cfg(feature = "compute")]
pub mod cpu_features;
#[cfg(feature = "compute")]
pub mod gelu;
// (its table also without `compute`: the library reads op ids by name in every build)
pub mod op;
#[cfg(feature = "compute")]
pub mod ops;
#[cfg(feature = "compute")]
pub mod pool;
#[cfg(feature = "compute")]
pub mod profile;
#[cfg(feature = "compute")]
pub mod quant;
#[cfg(feature = "compute")]
pub mod softmax_row;
#[cfg(feature = "compute")]
pub mod vexp;
#[cfg(feature = "compute")]
pub mod view;
