//! The SIMD backend's graph executor: what it supports, and running a graph node by node, each
//! node's rows split across the thread pool.

use super::op::{Kernel, Node, Op};
use super::{node, ops};
use super::ops::mul_mat::streamed::{siblings, Ahead, Later, Streamed, LOOKAHEAD};
use super::pool::Session;
use super::view::Raw;
use crate::abi::*;
use crate::error::Result;
use crate::{bail, ensure};

/// Ops to leave to other backends, by ggml op name (`GGML_RS_SIMD_SKIP=MUL_MAT,SOFT_MAX`): for
/// narrowing down a numerical difference to one op in a real host.
static SKIP: once_cell::sync::Lazy<Vec<String>> = once_cell::sync::Lazy::new(|| {
    std::env::var("GGML_RS_SIMD_SKIP").map(|v| v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()).unwrap_or_default()
});

/// Which module computes `op`: the op table's (`op::Op::kernel`), the 2026 graphs' ops only in the
/// builds that serve a 2026 revision ([`super::SERVES_2026`]). `None` for the ops with nothing to
/// compute (leaves, views) and for [`Op::Unsupported`].
fn kernel(op: Op) -> Option<Kernel> {
    // (a constant: the default build's code never names the 2026 ops' kernels, so the link drops them)
    op.kernel::<{ super::SERVES_2026 }>()
}

/// Ops with nothing to compute (always supported).
fn is_trivial(op: Op) -> bool {
    matches!(op, Op::None | Op::View)
}

/// True exactly for the (op, types, layout) combinations the kernels implement.
pub fn supports<R: Rev>(t: &Tensor<R>) -> bool {
    supported(t, &node::node(t))
}

/// [`supports`] of `t`, whose node `n` is already read.
fn supported<R: Rev>(t: &Tensor<R>, n: &Node) -> bool {
    if !SKIP.is_empty() && SKIP.iter().any(|s| *s == crate::host::op_name::<R>(t.op)) {
        return false;
    }
    supports_node(n)
}

fn supports_node(n: &Node) -> bool {
    // (a source in a buffer the kernels cannot read as ggml's rows: only MUL_MAT reads one,
    // ops::mul_mat::repacked)
    is_trivial(n.op) || ((n.repack.is_none() || n.op == Op::MulMat) && kernel(n.op).is_some_and(|k| (k.supports)(n)))
}

/// Computes node `t` with its kernel, without the executor's other checks (the fidelity check's
/// own graphs run through here). `None` when no kernel takes the node, else `Some(false)` when a
/// worker panicked.
pub fn compute_unchecked<R: Rev>(s: &Session, t: &Tensor<R>) -> Option<bool> {
    let n = node::node(t);
    if is_trivial(n.op) {
        return Some(true);
    }
    let k = kernel(n.op).filter(|k| (k.supports)(&n) && !t.data.is_null())?;
    Some((k.compute)(s, &n))
}

/// Computes one node `t`, read as `n`. `Ok(false)` when a worker panicked.
fn compute_node<R: Rev>(s: &Session, t: &Tensor<R>, n: &Node) -> Result<bool> {
    if is_trivial(n.op) {
        return Ok(true);
    }
    ensure!(supported(t, n), "op {} of '{}' is not supported by SIMD", crate::host::op_name::<R>(t.op), t.name());
    ensure!(!t.data.is_null(), "'{}' is not allocated", t.name());
    let Some(k) = kernel(n.op) else { bail!("op {} has no kernel", crate::host::op_name::<R>(t.op)) };
    Ok((k.compute)(s, n))
}

/// Runs every node of `g`; `abort` is polled between nodes (wsp's abort callback).
pub fn compute_graph<R: Rev>(s: &Session, g: &CGraph<R>, abort: &dyn Fn() -> bool) -> Result<Status> {
    let status = compute_nodes(s, g, abort);
    super::ops::mul_mat::trim_thread_buffers();
    super::ops::rope::forget_tables();
    status
}

fn compute_nodes<R: Rev>(s: &Session, g: &CGraph<R>, abort: &dyn Fn() -> bool) -> Result<Status> {
    let mut ahead = Ahead::default();
    for i in 0..g.nodes().len() {
        if abort() {
            return Ok(STATUS_ABORTED);
        }
        if ahead.fused == Some(i) {
            // computed with the product before it
            continue;
        }
        let Some(t) = g.node(i) else { bail!("graph has a NULL node") };
        let ok = if super::profile::enabled() {
            let t0 = std::time::Instant::now();
            let ok = compute_with_siblings(s, g, i, t, &mut ahead)?;
            super::profile::record(node_key(t), t0.elapsed());
            ok
        } else {
            compute_with_siblings(s, g, i, t, &mut ahead)?
        };
        if !ok {
            bail!("a worker thread panicked computing '{}'", t.name());
        }
    }
    Ok(STATUS_SUCCESS)
}

/// Computes node `i` (`t`) of `nodes`: its outputs if an earlier product computed them ahead,
/// else the node, together with the streamed products after it that share its activation row
/// (`ops::mul_mat::streamed`).
fn compute_with_siblings<R: Rev>(s: &Session, g: &CGraph<R>, i: usize, t: &Tensor<R>, ahead: &mut Ahead) -> Result<bool> {
    if ahead.store(i, &node::raw(t)) {
        return Ok(true);
    }
    // the node read once (its op, tensors and parameters) for the checks and the kernel
    let n = node::node(t);
    if let Some(first) = streamed_product(t, &n) {
        let later: Vec<Later> = (i + 1..g.nodes().len())
            .take(LOOKAHEAD)
            .enumerate()
            .filter_map(|(o, k)| {
                let t = g.node(k)?;
                let op = node::op(t);
                // (views write nothing)
                let product = if op == Op::MulMat { streamed_product(t, &node::node(t)) } else { None };
                (!is_trivial(op)).then(|| Later { index: i + 1 + o, dst: node::raw(t), product })
            })
            .collect();
        let picked = siblings(&first, &later);
        if !picked.is_empty() {
            return Ok(ahead.compute(s, first, &later, &picked));
        }
    }
    if let Some((at, then)) = fused_softmax(g, i, t, &n) {
        ahead.fused = Some(at);
        return Ok(ops::mul_mat::mul_mat_softmax(s, &n, &then));
    }
    compute_node(s, t, &n)
}

/// The SOFT_MAX (its node index and rows) that can run right after product `t` (node `i`, read
/// as `n`), chunk by chunk (`ops::mul_mat::mul_mat_softmax`): it is the product's only reader in
/// `nodes`, its only other input is its mask, and every node between the two is a view, so
/// computing it early changes no order. `t` must not be a graph output either: scores its mask
/// throws away are then never computed.
fn fused_softmax<R: Rev>(g: &CGraph<R>, i: usize, t: &Tensor<R>, n: &Node) -> Option<(usize, ops::softmax::Rows)> {
    // (decoding's products of a row or a few gain nothing, and the scan for other readers below
    // would run after every one of them)
    if n.op != Op::MulMat || n.dst.ne[1] < ops::mul_mat::causal::MIN_QUERIES || t.flags & TENSOR_FLAG_OUTPUT != 0 || t.data.is_null() {
        return None;
    }
    let me = |p: *mut Tensor<R>| std::ptr::eq(p, t);
    // the first node after the views is the softmax, with the product as its input
    let o = (i + 1..g.nodes().len()).position(|k| g.node(k).is_none_or(|v| !is_trivial(node::op(v))))?;
    let reader = g.node(i + 1 + o)?;
    if node::op(reader) != Op::SoftMax || !me(reader.src[0]) || me(reader.view_src) || reader.src[1..].iter().any(|&p| me(p)) || reader.data.is_null() {
        return None;
    }
    // and no other node reads it (the views between included)
    let reads = |r: &Tensor<R>| me(r.view_src) || r.src.iter().any(|&p| me(p));
    if (i + 1..g.nodes().len()).enumerate().any(|(k, j)| k != o && g.node(j).is_some_and(reads)) {
        return None;
    }
    let sm = node::node(reader);
    if !supported(t, n) || !supported(reader, &sm) {
        return None;
    }
    Some((i + 1 + o, ops::softmax::Rows::of(&sm)?))
}

/// `t` (read as `n`) as a streamed product this backend computes, if it is one.
fn streamed_product<R: Rev>(t: &Tensor<R>, n: &Node) -> Option<Streamed> {
    if n.op != Op::MulMat || t.data.is_null() || !supported(t, n) {
        return None;
    }
    Streamed::of(n)
}

/// The profile row of a node: op, then each present tensor's type and shape (dst first).
fn node_key<R: Rev>(t: &Tensor<R>) -> String {
    let mut key = crate::host::op_name::<R>(t.op).to_string();
    let op = node::op(t);
    // (UNARY's op by its constructor's name, e.g. "(silu)": no name table or case mapping in the
    // phone library, whose size budget is tight)
    if let (true, Some((name, _))) = (op.is_unary(), op.probe()) {
        key.push_str(&format!("({})", name));
    }
    let d = node::raw(t);
    let mut shape = |r: &Raw| key.push_str(&format!(" t{}[{}x{}x{}x{}]", r.ty, r.ne[0], r.ne[1], r.ne[2], r.ne[3]));
    shape(&d);
    for i in 0..2 {
        if let Some(r) = t.src_ref(i).map(node::raw) {
            shape(&r);
        }
    }
    key
}
