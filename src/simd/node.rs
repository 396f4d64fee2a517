//! A ggml node of revision `R` as the kernels read it ([`Node`], [`Op`], [`Raw`]): the one place
//! where the SIMD backend reads op ids, which ggml revisions number differently (`R::OPS`), and
//! picks the revision's float order and host quantizer; past this module nothing is typed by
//! the revision.

use super::op::{Node, Op, Repack};
use super::view::Raw;
use crate::abi::{Rev, Tensor};

/// The op of node `t` under revision `R`'s numbering: its id (and for UNARY `op_params[0]`, the
/// unary op) read through the revision's names ([`Rev::OP_TABLE`], built at compile time).
pub fn op<R: Rev>(t: &Tensor<R>) -> Op {
    R::OP_TABLE.op(t.op, t.op_params[0])
}

/// Tensor `t`'s data, shape and strides.
pub fn raw<R: Rev>(t: &Tensor<R>) -> Raw {
    Raw { data: t.data as *mut u8, ne: t.ne.map(|n| n.max(0) as usize), nb: t.nb, ty: t.type_ }
}

/// Node `t` with its sources, parameters, the revision's float order and (for products, the only
/// nodes that read it) the host's Q8_K quantizer.
pub fn node<R: Rev>(t: &Tensor<R>) -> Node {
    let mut params = [0; 16];
    let n = params.len().min(t.op_params.len());
    params[..n].copy_from_slice(&t.op_params[..n]);
    let op = op(t);
    let q8k = if op == Op::MulMat { crate::host::host_q8k::<R>() } else { None };
    let repack = repack(t, op);
    Node { op, dst: raw(t), src: [0, 1, 2, 3, 4].map(|i| t.src_ref(i).map(raw)), params, order: R::CPU_ORDER, q8k, repack }
}

/// Where tensor `s`'s bytes are: `None` in host memory laid out as ggml's rows (or no buffer),
/// `Some(true)` in ggml-cpu's `CPU_REPACK` buffer type, `Some(false)` in another buffer that is
/// not host memory (nothing the kernels can read).
fn foreign_buffer<R: Rev>(s: &Tensor<R>) -> Option<bool> {
    let buft = s.data_buffer_ref()?.buft_ref()?;
    if std::ptr::eq(buft, crate::buffer::cpu_buffer_type::<R>()) || buft.is_host() {
        return None;
    }
    let name = buft.name().ok().map(crate::abi::vtable::cstr);
    Some(name.as_deref() == Some("CPU_REPACK"))
}

/// How node `t`'s sources are laid out when one of them is not in host memory as ggml's rows
/// (see [`Repack`]): for a MUL_MAT whose weights alone ggml-cpu repacked (not a view, the host's
/// ggml-cpu an AVX2 build without AVX-512), by their type: [`Repack::Q4Kx8`] (Q4_K,
/// `block_q4_Kx8`), [`Repack::Q4_0x8`] (Q4_0, `block_q4_0x8`), [`Repack::IQ4NLx8`] (IQ4_NL,
/// `block_iq4_nlx8`): `ggml_repack_get_optimal_repack_type` picks these three on x86 on the same
/// condition, `ggml_cpu_has_avx2()`. On aarch64, Q4_0, IQ4_NL and Q8_0 in their `4x4` / `4x8`
/// layouts ([`Repack::Q4_0_4x4`], ...) and Q4_K in `8x4` / `8x8` ([`Repack::Q4K8x4`],
/// [`Repack::Q4K8x8`]), as that function picks from the host's NEON flags
/// (`host::arm_repack_layout`). [`Repack::Other`] for every other node reading such a source
/// (declined: GET_ROWS of a repacked table, say, which ggml-cpu's repack buffer does not support
/// either).
fn repack<R: Rev>(t: &Tensor<R>, op: Op) -> Option<Repack> {
    // `GGML_TYPE_Q4_0`, `GGML_TYPE_Q4_K`, `GGML_TYPE_IQ4_NL`, numbered alike in every revision
    const Q4_0: i32 = 2;
    const Q4_K: i32 = 12;
    const IQ4_NL: i32 = 20;
    let mut any = false;
    let mut only_src0 = true;
    for (i, s) in (0..t.src.len()).filter_map(|i| Some((i, t.src_ref(i)?))) {
        let f = foreign_buffer(s);
        any |= f.is_some();
        only_src0 &= if i == 0 { f == Some(true) } else { f.is_none() };
    }
    if !any {
        return None;
    }
    let w = t.src_ref(0).filter(|w| op == Op::MulMat && only_src0 && w.view_src.is_null());
    let layout = match w.map(|w| w.type_) {
        Some(Q4_K) => Repack::Q4Kx8,
        Some(Q4_0) => Repack::Q4_0x8,
        Some(IQ4_NL) => Repack::IQ4NLx8,
        _ => Repack::Other,
    };
    // the x86 AVX2 layouts above, read only where ggml-cpu makes them
    if layout != Repack::Other && crate::host::cpu_repacks_q4k_x8::<R>() {
        return Some(layout);
    }
    // on aarch64, Q4_0, IQ4_NL, Q8_0 and Q4_K in the NEON layout this host's ggml-cpu picks
    // (4x4 / 4x8, Q4_K's 8x4 / 8x8), only in the builds that serve a 2026 revision (the only ones whose hosts repack: the
    // default phone build drops the kernel)
    if super::SERVES_2026 {
        if let Some(arm) = w.and_then(|w| crate::host::arm_repack_layout::<R>(w.type_)) {
            return Some(arm);
        }
    }
    Some(Repack::Other)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{Lm, Wsp};

    /// Every revision's names translate to the same ops (lm and wsp number them differently),
    /// and ids they do not name (a newer revision's ops) are declined rather than misread.
    #[test]
    fn translation_is_revision_free() {
        fn check<R: Rev>() {
            let (o, t) = (R::OPS, R::OP_TABLE);
            let unary = |name| ggml_rs_kernels::op::id_of(R::UNARY_NAMES, name);
            assert_eq!(t.op(o.mul_mat, 0), Op::MulMat);
            assert_eq!(t.op(o.cont, 0), Op::Copy);
            assert_eq!(t.op(o.transpose, 0), Op::View);
            assert_eq!(t.op(o.unary, unary("SILU")), Op::Silu);
            assert_eq!(t.op(o.unary, unary("GELU")), Op::Gelu);
            assert_eq!(t.op(o.unary, 0), Op::Unsupported);
            assert_eq!(t.op(o.mul_mat_id, 0), Op::Unsupported);
            assert_eq!(t.op(R::OP_NAMES.len() as i32, 0), Op::Unsupported);
            assert_eq!(t.op(-1, 0), Op::Unsupported);
        }
        check::<Lm>();
        check::<Wsp>();
        assert_ne!(Lm::OPS.rope, Wsp::OPS.rope);
        assert_eq!(Lm::OP_TABLE.op(Lm::OPS.rope, 0), Wsp::OP_TABLE.op(Wsp::OPS.rope, 0));
        // ids as the packages' headers number them (tests/layout.rs checks all against the headers)
        assert_eq!((Lm::OPS.mul_mat, Lm::OPS.unary, Lm::OPS.flash_attn_ext, Lm::OPS.set_rows), (26, 69, 60, -1));
        assert_eq!((Wsp::OPS.mul_mat, Wsp::OPS.unary, Wsp::OPS.glu), (27, 77, 85));
    }
}
