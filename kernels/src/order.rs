//! ggml-cpu's float order where it differs between ggml revisions: which of the kernels' orders to
//! follow. Each revision's value is a fact of that revision (`Rev::CPU_ORDER` in the library's
//! `abi`); this crate only reads it.

/// Where a revision's ggml-cpu orders its float operations differently from the other
/// revisions', for the ops the SIMD backend reproduces bit for bit (it follows the order of the
/// revision it serves; see `op::Node::order`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuOrder {
    /// NORM takes its mean from `ggml_vec_sum_f32` (the f64 sum rounded to f32, then divided in
    /// f32) and its variance from `ggml_vec_cvar_f32` (squares summed per vector block in f32,
    /// the blocks in f64); before 2026 both sums run element by element in f64, divided in f64.
    pub norm_vec_sums: bool,
    /// ROPE's normal mode runs the `rotate_pairs` template, which GCC vectorizes with fused
    /// multiply-adds in place too (its overlap check lets dst == src through; an odd last pair,
    /// and rows of few pairs, get rounded products); before 2026 an in-place normal-mode ROPE
    /// ran the scalar loop with rounded products.
    pub rope_rotate_pairs: bool,
    /// Q6_K's AVX2 `vec_dot` takes the quants' offset of 32 out per sub-block
    /// (`32 * scale * bsum`, split over the eight lanes by sub-block pairs); before 2026 it
    /// subtracts `32 * q8` per byte pair before scaling, so each lane's integer differs.
    pub q6k_offset_per_subblock: bool,
}

impl CpuOrder {
    /// The revisions before 2026 (llama.rn 0.4.4, whisper.rn 0.4.3).
    pub const BEFORE_2026: CpuOrder = CpuOrder { norm_vec_sums: false, rope_rotate_pairs: false, q6k_offset_per_subblock: false };
}
