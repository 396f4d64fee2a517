//! The ops the SIMD backend knows, free of any ggml revision's numbering.
//!
//! ggml revisions number `enum ggml_op` differently (and later ones add ops), so a node's op id
//! is translated exactly once, here, from the revision's table (`R::OPS`); everything past this
//! module (the executor's table, the ops) matches on [`Op`]. An id the table does not name
//! becomes [`Op::Unsupported`], which `supports` declines, so a newer revision's ops (SET_ROWS,
//! GLU, FLASH_ATTN_EXT, ...) fall to ggml-cpu instead of being misread as one of ours.

use super::view::Raw;
use crate::abi::{vtable::obj, CpuOrder, Rev, Tensor, UNARY_GELU, UNARY_SILU};
use crate::host::HostQ8K;

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
    /// Every other op id (and unary ops other than SILU / GELU): never computed here.
    Unsupported,
}

impl Op {
    /// The op of node `t` under revision `R`'s numbering: the only place op ids are read.
    pub fn of<R: Rev>(t: &Tensor<R>) -> Op {
        Self::from_ids(&R::OPS, t.op, t.op_params[0])
    }

    /// [`Op::of`] over a revision's id table; `unary` is `op_params[0]` (read for UNARY only).
    pub fn from_ids(o: &crate::abi::OpIds, id: i32, unary: i32) -> Op {
        let table = [
            (o.none, Op::None),
            (o.view, Op::View),
            (o.reshape, Op::View),
            (o.permute, Op::View),
            (o.transpose, Op::View),
            (o.add, Op::Add),
            (o.sub, Op::Sub),
            (o.mul, Op::Mul),
            (o.div, Op::Div),
            (o.scale, Op::Scale),
            (o.sqr, Op::Sqr),
            (o.sqrt, Op::Sqrt),
            (o.cpy, Op::Copy),
            (o.dup, Op::Copy),
            (o.cont, Op::Copy),
            (o.norm, Op::Norm),
            (o.rms_norm, Op::RmsNorm),
            (o.soft_max, Op::SoftMax),
            (o.rope, Op::Rope),
            (o.get_rows, Op::GetRows),
            (o.im2col, Op::Im2col),
            (o.mul_mat, Op::MulMat),
        ];
        if id == o.unary {
            return match unary {
                UNARY_SILU => Op::Silu,
                UNARY_GELU => Op::Gelu,
                _ => Op::Unsupported,
            };
        }
        table.iter().find(|(i, _)| *i == id).map_or(Op::Unsupported, |&(_, op)| op)
    }
}

/// One node as the ops read it: its op, its destination, up to three sources and its parameters,
/// with no revision type left.
#[derive(Clone, Copy, Debug)]
pub struct Node {
    pub op: Op,
    pub dst: Raw,
    pub src: [Option<Raw>; 3],
    pub params: [i32; 16],
    /// The float order of the revision's ggml-cpu where revisions differ (`R::CPU_ORDER`): the
    /// kernels follow it to stay bit-identical to the ggml-cpu they run beside.
    pub order: CpuOrder,
    /// The host ggml-cpu's Q8_K quantizer, which the K-quant products quantize their
    /// activations with (see [`HostQ8K`]); `None` without ggml-cpu.
    pub q8k: Option<HostQ8K>,
}

impl Node {
    pub fn of<R: Rev>(t: &Tensor<R>) -> Node {
        let mut params = [0; 16];
        let n = params.len().min(t.op_params.len());
        params[..n].copy_from_slice(&t.op_params[..n]);
        Node { op: Op::of(t), dst: Raw::of(t), src: [0, 1, 2].map(|i| obj(t.src[i]).map(Raw::of)), params, order: R::CPU_ORDER, q8k: None }.with_host_q8k::<R>()
    }

    /// The host's Q8_K quantizer, for the products (the only nodes that read it).
    fn with_host_q8k<R: Rev>(mut self) -> Node {
        if self.op == Op::MulMat {
            self.q8k = crate::host::host_q8k::<R>();
        }
        self
    }

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
    use super::*;
    use crate::abi::{Lm, Wsp};

    /// Both revisions' tables translate to the same ops, and ids they do not name (a newer
    /// revision's ops) are declined rather than misread.
    #[test]
    fn translation_is_revision_free() {
        for o in [&Lm::OPS, &Wsp::OPS] {
            assert_eq!(Op::from_ids(o, o.mul_mat, 0), Op::MulMat);
            assert_eq!(Op::from_ids(o, o.cont, 0), Op::Copy);
            assert_eq!(Op::from_ids(o, o.transpose, 0), Op::View);
            assert_eq!(Op::from_ids(o, o.unary, UNARY_SILU), Op::Silu);
            assert_eq!(Op::from_ids(o, o.unary, UNARY_GELU), Op::Gelu);
            assert_eq!(Op::from_ids(o, o.unary, 0), Op::Unsupported);
            assert_eq!(Op::from_ids(o, 101, 0), Op::Unsupported);
            assert_eq!(Op::from_ids(o, -1, 0), Op::Unsupported);
        }
        // the two revisions number ops differently; the translation hides it
        assert_ne!(Lm::OPS.rope, Wsp::OPS.rope);
        assert_eq!(Op::from_ids(&Lm::OPS, Lm::OPS.rope, 0), Op::from_ids(&Wsp::OPS, Wsp::OPS.rope, 0));
    }
}
