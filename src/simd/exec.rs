//! The SIMD backend's graph executor: what it supports, and running a graph node by node, each
//! node's rows split across the thread pool.

use super::ops::{self, elementwise as ew, param_f32};
use super::pool::Session;
use super::tensor::{Raw, F16, F32, I32, Q4_0, Q4_1, Q8_0};
use crate::abi::vtable::obj;
use crate::abi::*;
use crate::error::Result;
use crate::{bail, ensure};

fn raw<R: Rev>(t: *mut Tensor<R>) -> Option<Raw> {
    obj(t).map(Raw::of)
}

fn is_float(ty: i32) -> bool {
    ty == F32 || ty == F16
}

fn is_weight_type(ty: i32) -> bool {
    matches!(ty, F32 | F16 | Q4_0 | Q4_1 | Q8_0)
}

fn type_size(ty: i32) -> usize {
    match ty {
        F16 => 2,
        Q4_0 => 18,
        Q4_1 => 20,
        Q8_0 => 34,
        _ => 4,
    }
}

fn f32_rows(t: &Raw) -> bool {
    t.ty == F32 && t.nb[0] == 4
}

/// Ops to leave to other backends, by ggml op name (`GGML_RS_SIMD_SKIP=MUL_MAT,SOFT_MAX`): for
/// narrowing down a numerical difference to one op in a real host.
static SKIP: once_cell::sync::Lazy<Vec<String>> = once_cell::sync::Lazy::new(|| {
    std::env::var("GGML_RS_SIMD_SKIP").map(|v| v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()).unwrap_or_default()
});

/// True exactly for the (op, types, layout) combinations the kernels implement.
pub fn supports<R: Rev>(t: &Tensor<R>) -> bool {
    if !SKIP.is_empty() && SKIP.iter().any(|s| *s == crate::host::op_name::<R>(t.op)) {
        return false;
    }
    supports_kernel(t)
}

fn supports_kernel<R: Rev>(t: &Tensor<R>) -> bool {
    let o = &R::OPS;
    let op = t.op;
    let d = Raw::of(t);
    let a = raw(t.src[0]);
    let b = raw(t.src[1]);
    if op == o.none || crate::tensor::is_view_op::<R>(op) {
        return true;
    }
    let Some(a) = a else { return false };
    if op == o.add || op == o.sub || op == o.mul || op == o.div {
        return b.is_some_and(|b| f32_rows(&a) && f32_rows(&b) && f32_rows(&d) && ops::can_repeat(&b, &a) && ops::same_shape(&a, &d));
    }
    if op == o.scale || op == o.sqr || op == o.sqrt || op == o.norm || op == o.rms_norm {
        return f32_rows(&a) && f32_rows(&d) && ops::same_shape(&a, &d);
    }
    if op == o.unary {
        let u = t.op_params[0];
        return (u == UNARY_SILU || u == UNARY_GELU) && f32_rows(&a) && f32_rows(&d) && ops::same_shape(&a, &d);
    }
    if op == o.cpy || op == o.dup || op == o.cont {
        return is_float(a.ty) && is_float(d.ty) && a.nelements() == d.nelements();
    }
    if op == o.soft_max {
        let mask_ok = match raw(t.src[1]) {
            None => true,
            Some(m) => is_float(m.ty) && m.ne[0] == a.ne[0],
        };
        return f32_rows(&a) && f32_rows(&d) && mask_ok && t.src[2].is_null();
    }
    if op == o.rope {
        let mode = t.op_params[2];
        let n_dims = t.op_params[1];
        return f32_rows(&a) && f32_rows(&d) && (mode == 0 || mode == ops::rope::MODE_NEOX)
            && n_dims > 0 && n_dims as usize <= a.ne[0] && n_dims % 2 == 0 && a.ne[3] == 1
            && b.is_some_and(|p| p.ty == I32 && p.ne[0] >= a.ne[2])
            && raw(t.src[2]).is_none_or(|f| f.ty == F32);
    }
    if op == o.get_rows {
        return is_weight_type(a.ty) && a.nb[0] == type_size(a.ty) && f32_rows(&d) && b.is_some_and(|i| i.ty == I32)
            && a.ne[0] % if a.ty == F32 || a.ty == F16 { 1 } else { 32 } == 0;
    }
    if op == o.im2col {
        return b.is_some_and(|i| is_float(i.ty)) && is_float(d.ty);
    }
    if op == o.mul_mat {
        return ops::mul_mat::supports(&d, &a, b.as_ref());
    }
    false
}

/// Computes one node. `Ok(false)` when a worker panicked.
fn compute_node<R: Rev>(s: &Session, t: &Tensor<R>) -> Result<bool> {
    let o = &R::OPS;
    let op = t.op;
    if op == o.none || crate::tensor::is_view_op::<R>(op) {
        return Ok(true);
    }
    ensure!(supports(t), "op {} of '{}' is not supported by SIMD", crate::host::op_name::<R>(op), t.name());
    ensure!(!t.data.is_null(), "'{}' is not allocated", t.name());
    let d = Raw::of(t);
    let a = raw(t.src[0]).unwrap();
    let b = raw(t.src[1]);
    let p = &t.op_params;
    let ok = if op == o.add {
        ew::binary(s, ew::Binary::Add, d, a, b.unwrap())
    } else if op == o.sub {
        ew::binary(s, ew::Binary::Sub, d, a, b.unwrap())
    } else if op == o.mul {
        ew::binary(s, ew::Binary::Mul, d, a, b.unwrap())
    } else if op == o.div {
        ew::binary(s, ew::Binary::Div, d, a, b.unwrap())
    } else if op == o.scale {
        ew::unary(s, ew::Unary::Scale(param_f32(p, 0)), d, a)
    } else if op == o.sqr {
        ew::unary(s, ew::Unary::Sqr, d, a)
    } else if op == o.sqrt {
        ew::unary(s, ew::Unary::Sqrt, d, a)
    } else if op == o.unary {
        ew::unary(s, if p[0] == UNARY_SILU { ew::Unary::Silu } else { ew::Unary::Gelu }, d, a)
    } else if op == o.cpy || op == o.dup || op == o.cont {
        // CPY writes into its second source (the destination view); dst aliases it
        ew::copy(s, d, a)
    } else if op == o.norm {
        ops::norm::norm(s, d, a, param_f32(p, 0))
    } else if op == o.rms_norm {
        ops::norm::rms_norm(s, d, a, param_f32(p, 0))
    } else if op == o.soft_max {
        ops::softmax::soft_max(s, d, a, b, param_f32(p, 0), param_f32(p, 1))
    } else if op == o.rope {
        let rp = ops::rope::RopeParams::from_op_params(p);
        ops::rope::rope(s, d, a, b.unwrap(), raw(t.src[2]), &rp)
    } else if op == o.get_rows {
        ops::get_rows::get_rows(s, d, a, b.unwrap())
    } else if op == o.im2col {
        ops::im2col::im2col(s, d, a, b.unwrap(), &ops::im2col::Im2colParams::from_op_params(p))
    } else if op == o.mul_mat {
        ops::mul_mat::mul_mat(s, d, a, b.unwrap())
    } else {
        bail!("op {} has no kernel", crate::host::op_name::<R>(op));
    };
    Ok(ok)
}

/// Runs every node of `g`; `abort` is polled between nodes (wsp's abort callback).
pub fn compute_graph<R: Rev>(s: &Session, g: &CGraph<R>, abort: &dyn Fn() -> bool) -> Result<Status> {
    for &node in g.nodes() {
        if abort() {
            return Ok(STATUS_ABORTED);
        }
        let Some(t) = obj(node) else { bail!("graph has a NULL node") };
        let ok = if super::profile::enabled() {
            let t0 = std::time::Instant::now();
            let ok = compute_node(s, t)?;
            super::profile::record(node_key(t), t0.elapsed());
            ok
        } else {
            compute_node(s, t)?
        };
        if !ok {
            bail!("a worker thread panicked computing '{}'", t.name());
        }
    }
    Ok(STATUS_SUCCESS)
}

/// The profile row of a node: op, then each present tensor's type and shape (dst first).
fn node_key<R: Rev>(t: &Tensor<R>) -> String {
    let mut key = crate::host::op_name::<R>(t.op).to_string();
    if t.op == R::OPS.unary {
        key.push_str(if t.op_params[0] == UNARY_SILU { "(silu)" } else { "(gelu)" });
    }
    let d = Raw::of(t);
    let mut shape = |r: &Raw| key.push_str(&format!(" t{}[{}x{}x{}x{}]", r.ty, r.ne[0], r.ne[1], r.ne[2], r.ne[3]));
    shape(&d);
    for &s in t.src.iter().take(2) {
        if let Some(r) = raw(s) {
            shape(&r);
        }
    }
    key
}
