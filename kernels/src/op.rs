//! The ops the SIMD backend knows, free of any ggml revision's numbering.
//!
//! ggml revisions number `enum ggml_op` differently (and later ones add ops); the library
//! translates a node's op id once, from its revision's table (`simd::node` there), and every
//! kernel matches on [`Op`]. An id the table does not name becomes [`Op::Unsupported`], which
//! `supports` declines, so a newer revision's ops fall to
//! ggml-cpu instead of being misread as one of ours.

use super::view::Raw;
use crate::quant::HostQ8K;
use crate::CpuOrder;

/// A graph node's operation, as the kernels see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// GGML_OP_NONE: a leaf, nothing to compute.
    None,
    /// VIEW, RESHAPE, PERMUTE, TRANSPOSE: metadata only, nothing to compute.
    View,
    Add,
    Sub,
    Mul,
    Div,
    Scale,
    Sqr,
    Sqrt,
    /// UNARY with GGML_UNARY_OP_SILU.
    Silu,
    /// UNARY with GGML_UNARY_OP_GELU.
    Gelu,
    /// CPY, DUP and CONT: element `k` of the source to element `k` of the destination.
    Copy,
    Norm,
    RmsNorm,
    SoftMax,
    Rope,
    GetRows,
    Im2col,
    MulMat,
    /// SET_ROWS: rows of F32 written into rows of the destination's type at I32/I64 indices (the
    /// 2026 KV cache stores).
    SetRows,
    /// GLU (SwiGLU, GeGLU, ...: which one is `op_params[0]`, halves swapped is `op_params[1]`).
    Glu,
    /// FLASH_ATTN_EXT: attention with an online softmax over K/V blocks.
    FlashAttnExt,
    /// Every other op id (and unary ops other than SILU / GELU): never computed here.
    Unsupported,
}

impl Op {
    /// The op's name as logs print it and `GGML_RS_FAULT_SIMD_ORDER` names a kind of node: the
    /// same words as `Debug`, which the phone builds compile to nothing (`-Zfmt-debug=none`,
    /// scripts/cross.sh).
    pub fn name(self) -> &'static str {
        match self {
            Op::None => "None",
            Op::View => "View",
            Op::Add => "Add",
            Op::Sub => "Sub",
            Op::Mul => "Mul",
            Op::Div => "Div",
            Op::Scale => "Scale",
            Op::Sqr => "Sqr",
            Op::Sqrt => "Sqrt",
            Op::Silu => "Silu",
            Op::Gelu => "Gelu",
            Op::Copy => "Copy",
            Op::Norm => "Norm",
            Op::RmsNorm => "RmsNorm",
            Op::SoftMax => "SoftMax",
            Op::Rope => "Rope",
            Op::GetRows => "GetRows",
            Op::Im2col => "Im2col",
            Op::MulMat => "MulMat",
            Op::SetRows => "SetRows",
            Op::Glu => "Glu",
            Op::FlashAttnExt => "FlashAttnExt",
            Op::Unsupported => "Unsupported",
        }
    }
}

/// One node as the ops read it: its op, its destination, up to five sources and its parameters,
/// with no revision type left.
#[derive(Clone, Copy, Debug)]
pub struct Node {
    pub op: Op,
    pub dst: Raw,
    /// ggml's `src[0..5]` (FLASH_ATTN_EXT reads five: q, k, v, mask, sinks).
    pub src: [Option<Raw>; 5],
    pub params: [i32; 16],
    /// The float order of the revision's ggml-cpu where revisions differ (`R::CPU_ORDER`): the
    /// kernels follow it to stay bit-identical to the ggml-cpu they run beside.
    pub order: CpuOrder,
    /// The host ggml-cpu's Q8_K quantizer, which the K-quant products quantize their
    /// activations with (see [`HostQ8K`]); `None` without ggml-cpu.
    pub q8k: Option<HostQ8K>,
    /// Set when a source lives in ggml-cpu's `CPU_REPACK` buffer type, whose bytes are not
    /// ggml's block rows: how (see [`Repack`]). `None` for plain sources.
    pub repack: Option<Repack>,
}

/// The layout of a source that ggml-cpu's repacking (`CPU_REPACK` buffers, repack.cpp) gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repack {
    /// `src[0]` of a MUL_MAT is Q4_K as ggml-cpu repacks it on an AVX2 host without AVX-512
    /// (`block_q4_Kx8`: 8 rows interleaved 8 bytes at a time, computed by
    /// `ggml_gemv/gemm_q4_K_8x8_q8_K`); every other source is plain.
    Q4Kx8,
    /// `src[0]` of a MUL_MAT is Q4_0 as ggml-cpu repacks it on such a host (`block_q4_0x8`: 8
    /// rows interleaved 8 bytes at a time, nibbles xor 0x88, computed by
    /// `ggml_gemv/gemm_q4_0_8x8_q8_0`); every other source is plain.
    Q4_0x8,
    /// `src[0]` of a MUL_MAT is IQ4_NL as ggml-cpu repacks it on such a host (`block_iq4_nlx8`:
    /// Q4_0's interleave without the xor, computed by `ggml_gemv/gemm_iq4_nl_8x8_q8_0`).
    IQ4NLx8,
    /// `src[0]` of a MUL_MAT is Q4_0 as ggml-cpu repacks it on aarch64 with the dot product
    /// extension and without i8mm (`block_q4_0x4`: 4 rows interleaved 4 bytes at a time, nibbles
    /// xor 0x88, computed by `ggml_gemv/gemm_q4_0_4x4_q8_0`).
    Q4_0_4x4,
    /// `src[0]` of a MUL_MAT is Q4_0 as ggml-cpu repacks it on aarch64 with i8mm (and dotprod):
    /// `block_q4_0x4` interleaved 8 bytes at a time (`ggml_gemv/gemm_q4_0_4x8_q8_0`).
    Q4_0_4x8,
    /// `src[0]` of a MUL_MAT is IQ4_NL as ggml-cpu repacks it on aarch64 with dotprod
    /// (`block_iq4_nlx4`: Q4_0's 4x4 interleave without the xor, `ggml_gemv/gemm_iq4_nl_4x4_q8_0`).
    IQ4NLx4,
    /// `src[0]` of a MUL_MAT is Q8_0 as ggml-cpu repacks it on aarch64 with dotprod and without
    /// i8mm (`block_q8_0x4`: 4 rows interleaved 4 bytes at a time, `ggml_gemv/gemm_q8_0_4x4_q8_0`).
    Q8_0_4x4,
    /// `src[0]` of a MUL_MAT is Q8_0 as ggml-cpu repacks it on aarch64 with i8mm (and dotprod):
    /// interleaved 8 bytes at a time (`ggml_gemv/gemm_q8_0_4x8_q8_0`).
    Q8_0_4x8,
    /// `src[0]` of a MUL_MAT is Q4_K as ggml-cpu repacks it on aarch64 with i8mm (and dotprod):
    /// `block_q4_Kx8` as on x86 (8 rows interleaved 8 bytes at a time), but computed by the NEON
    /// `ggml_gemv/gemm_q4_K_8x8_q8_K`, whose float steps are not x86's.
    Q4K8x8,
    /// `src[0]` of a MUL_MAT is Q4_K as ggml-cpu repacks it on aarch64 with dotprod and without
    /// i8mm: `block_q4_Kx8` interleaved 4 bytes at a time (`ggml_gemv/gemm_q4_K_8x4_q8_K`).
    Q4K8x4,
    /// A source in a layout the kernels do not read: the node is declined.
    Other,
}

impl Node {
    /// Source `i` (present: `supports` checked it before `compute` runs).
    pub fn src(&self, i: usize) -> Raw {
        self.src[i].expect("source checked by supports")
    }

    /// The f32 parameter stored in `params[i]`.
    pub fn param_f32(&self, i: usize) -> f32 {
        f32::from_bits(self.params[i] as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::Op;
    use crate::cpu_features::SimdLevel;

    /// `name` answers what `Debug` prints (the fault-injection names and the logs rely on it).
    #[test]
    fn names_match_debug() {
        let ops = [
            Op::None, Op::View, Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Scale, Op::Sqr, Op::Sqrt, Op::Silu, Op::Gelu,
            Op::Copy, Op::Norm, Op::RmsNorm, Op::SoftMax, Op::Rope, Op::GetRows, Op::Im2col, Op::MulMat, Op::SetRows, Op::Glu, Op::FlashAttnExt, Op::Unsupported,
        ];
        for op in ops {
            assert_eq!(op.name(), format!("{:?}", op));
        }
        for level in [SimdLevel::Portable, SimdLevel::Avx2, SimdLevel::Avx512, SimdLevel::Neon] {
            assert_eq!(level.name(), format!("{:?}", level));
        }
    }
}
