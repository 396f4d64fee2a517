//! Graph utilities: views of a node range, `graph_copy`, `compare_graph_backend`.

use crate::abi::*;

/// `ggml_graph_view` of the revision: nodes `[i0, i1)` of `g`, without leafs.
pub fn graph_view<R: Rev>(g: &CGraph<R>, i0: usize, i1: usize) -> CGraph<R> {
    R::graph_view(g, i0, i1)
}

use crate::abi::vtable::{call_compare_callback, obj, obj_mut};
use crate::error::Result;
use crate::host::{CoreFns, InitParams};
use crate::ptr_map::PtrMap;
use crate::tensor::{is_view_op, same_layout};
use crate::{bail, ensure};
use std::ffi::{c_void, CString};

struct Copier<'a, R: Rev> {
    core: &'a CoreFns<R>,
    ctx_allocated: *mut c_void,
    ctx_unallocated: *mut c_void,
    /// original address -> copy address
    copies: PtrMap<usize>,
    init: PtrMap<bool>,
}

fn require<T: Copy>(f: Option<T>, name: &str, prefix: &str) -> Result<T> {
    match f {
        Some(f) => Ok(f),
        None => bail!("the host does not link {}ggml_{}, which graph_copy needs", prefix, name),
    }
}

/// Distinct tensors reachable from the graph's nodes (through sources and view sources).
fn count_tensors<R: Rev>(g: &CGraph<R>) -> usize {
    let mut seen: PtrMap<bool> = PtrMap::default();
    let mut stack: Vec<*mut Tensor<R>> = g.nodes().to_vec();
    while let Some(t) = stack.pop() {
        // SAFETY: a tensor reachable from a live graph is live (trust contract).
        let Some(tr) = (unsafe { obj(t) }) else { continue };
        if seen.insert(t as usize, true).is_some() {
            continue;
        }
        stack.extend(tr.src.iter().copied().filter(|p| !p.is_null()));
        if !tr.view_src.is_null() {
            stack.push(tr.view_src);
        }
    }
    seen.len()
}

impl<R: Rev> Copier<'_, R> {
    /// Duplicates `src` (and what it reads) into the copy's contexts: tensors with data of their
    /// own go to the context that gets allocated on the target backend, views to the other.
    fn dup(&mut self, src: *mut Tensor<R>) -> Result<*mut Tensor<R>> {
        if let Some(c) = self.copies.get(src as usize) {
            return Ok(c as *mut Tensor<R>);
        }
        // SAFETY: a tensor reachable from the graph being copied (as in count_tensors).
        let s = unsafe { obj(src) }.unwrap();
        let ctx = if !s.data.is_null() && s.view_src.is_null() { self.ctx_allocated } else { self.ctx_unallocated };
        // SAFETY: ctx is a live context with room for every reachable tensor (see count_tensors).
        let dst = unsafe { (self.core.dup_tensor.unwrap())(ctx, s) };
        ensure!(!dst.is_null(), "out of context memory while copying the graph");
        self.copies.insert(src as usize, dst as usize);
        let view_src = if s.view_src.is_null() { std::ptr::null_mut() } else { self.dup(s.view_src)? };
        let name = CString::new(s.name()).unwrap_or_default();
        // SAFETY: dst is a live tensor; name a C string (ggml truncates it to GGML_MAX_NAME).
        unsafe { (self.core.set_name.unwrap())(dst, name.as_ptr()) };
        let mut srcs = [std::ptr::null_mut(); MAX_SRC];
        for (i, &p) in s.src.iter().enumerate() {
            if !p.is_null() {
                srcs[i] = self.dup(p)?;
            }
        }
        // SAFETY: the copy dup_tensor just made in our own context; nothing else borrows it.
        let d = unsafe { obj_mut(dst) }.unwrap();
        d.nb = s.nb;
        d.view_src = view_src;
        d.view_offs = if view_src.is_null() { 0 } else { s.view_offs };
        d.op = s.op;
        d.op_params = s.op_params;
        // 2026: ggml-cpu computes only nodes flagged COMPUTE, so the copy keeps the flags
        if R::GRAPH_COPY_KEEPS_FLAGS {
            d.flags = s.flags;
        }
        d.src = srcs;
        Ok(dst)
    }

    /// Gives each copy its data: views are re-pointed, the rest copied from the original.
    fn init(&mut self, src: *mut Tensor<R>) -> Result<()> {
        if self.init.insert(src as usize, true).is_some() {
            return Ok(());
        }
        // SAFETY: as in `dup`.
        let s = unsafe { obj(src) }.unwrap();
        let dst = self.copies.get(src as usize).unwrap_or(0) as *mut Tensor<R>;
        ensure!(!dst.is_null(), "tensor '{}' was not copied", s.name());
        // SAFETY: a copy `dup` made (non-NULL, checked above), in our own context.
        let d = unsafe { obj(dst) }.unwrap();
        if !d.view_src.is_null() {
            self.init(s.view_src)?;
            let st = crate::buffer::view_init(dst)?;
            ensure!(st == STATUS_SUCCESS, "view_init failed with status {}", st);
        } else {
            crate::buffer::tensor_copy(s, d)?;
        }
        for &p in s.src.iter() {
            if !p.is_null() {
                self.init(p)?;
            }
        }
        Ok(())
    }
}

/// `graph_copy`: the graph and everything it reads, duplicated onto `backend` with the data.
pub fn graph_copy<R: Rev>(backend: &Backend<R>, g: &CGraph<R>) -> Result<GraphCopy<R>> {
    let core = crate::host::host::<R>().core();
    let p = R::PREFIX;
    let init = require(core.init, "init", p)?;
    let free = require(core.free, "free", p)?;
    require(core.dup_tensor, "dup_tensor", p)?;
    require(core.set_name, "set_name", p)?;
    let new_graph = require(core.new_graph_custom, "new_graph_custom", p)?;
    let overhead = require(core.tensor_overhead, "tensor_overhead", p)?;
    let graph_overhead = require(core.graph_overhead_custom, "graph_overhead_custom", p)?;
    let alloc = require(core.alloc_ctx_tensors, "backend_alloc_ctx_tensors", p)?;

    let n = count_tensors(g);
    let size = g.size.max(g.n_nodes).max(1) as usize;
    // SAFETY: pure size computations of the host's ggml.
    let mem_size = unsafe { overhead() * n + graph_overhead(size, false) };
    let params = InitParams { mem_size, mem_buffer: std::ptr::null_mut(), no_alloc: true };
    // SAFETY: ggml_init with no_alloc only allocates the context's own metadata.
    let (ca, cu) = unsafe { (init(params), init(params)) };
    let fail = |msg: String| -> Result<GraphCopy<R>> {
        // SAFETY: each context is NULL or live, and freed once.
        unsafe {
            for c in [ca, cu] {
                if !c.is_null() {
                    free(c);
                }
            }
        }
        Err(crate::error::Error(msg))
    };
    if ca.is_null() || cu.is_null() {
        return fail("failed to allocate context for graph copy".into());
    }
    let mut cp = Copier { core, ctx_allocated: ca, ctx_unallocated: cu, copies: PtrMap::default(), init: PtrMap::default() };
    for &node in g.nodes() {
        if let Err(e) = cp.dup(node) {
            return fail(e.0);
        }
    }
    // SAFETY: ca is live; ggml-alloc places every tensor of ca in one new buffer of the backend.
    let buffer = unsafe { alloc(ca, backend.me()) };
    if buffer.is_null() {
        return fail("failed to allocate buffer for graph copy".into());
    }
    for &node in g.nodes() {
        if let Err(e) = cp.init(node) {
            crate::buffer::buffer_free(buffer);
            return fail(e.0);
        }
    }
    // SAFETY: ca is live and was sized with the graph's overhead.
    let gc = unsafe { new_graph(ca, size, false) };
    // SAFETY: NULL or the graph ggml just made in our context.
    let Some(gcr) = (unsafe { obj_mut(gc) }) else {
        crate::buffer::buffer_free(buffer);
        return fail("failed to allocate the copied graph".into());
    };
    for (i, &node) in g.nodes().iter().enumerate() {
        gcr.set_node(i, cp.copies.get(node as usize).unwrap_or(0) as *mut Tensor<R>);
    }
    gcr.n_nodes = g.n_nodes;
    Ok(GraphCopy { buffer, ctx_allocated: ca, ctx_unallocated: cu, graph: gc })
}

pub fn graph_copy_free<R: Rev>(copy: GraphCopy<R>) -> Result<()> {
    crate::buffer::buffer_free(copy.buffer);
    let free = crate::host::host::<R>().core().free;
    for c in [copy.ctx_allocated, copy.ctx_unallocated] {
        if let (false, Some(f)) = (c.is_null(), free) {
            // SAFETY: the contexts come from graph_copy and are freed once, here.
            unsafe { f(c) };
        }
    }
    Ok(())
}

/// Computes the graph node by node on `b1` and on a copy on `b2`, handing each pair of results to
/// the callback (which returns false to stop). With `test_node` (whisper.rn 0.4.3's sixth
/// argument, an index into the graph's nodes) both graphs are computed whole and only that node
/// is handed over, once, whatever the callback returns.
pub fn compare_graph_backend<R: Rev>(
    b1: &Backend<R>,
    b2: &Backend<R>,
    g: &mut CGraph<R>,
    callback: unsafe extern "C" fn(i32, *mut Tensor<R>, *mut Tensor<R>, *mut c_void) -> bool,
    user_data: *mut c_void,
    test_nodes: &[usize],
) -> Result<bool> {
    let copy = graph_copy(b2, g)?;
    let result = (|| -> Result<bool> {
        // SAFETY: the graph graph_copy made, freed only below.
        let g2 = unsafe { obj_mut(copy.graph) }.unwrap();
        ensure!(g.n_nodes == g2.n_nodes, "copied graph has {} nodes, original {}", g2.n_nodes, g.n_nodes);
        // the nodes asked for: the whole graph on both backends, then those nodes (the result of
        // the callback does not stop anything, as stock)
        if !test_nodes.is_empty() {
            crate::backend::graph_compute(b1, g)?;
            crate::backend::graph_compute(b2, g2)?;
            for &i in test_nodes {
                call_compare_callback(callback, i as i32, g.nodes()[i], g2.nodes()[i], user_data);
            }
            return Ok(true);
        }
        for i in 0..g.n_nodes.max(0) as usize {
            let (t1, t2) = (g.nodes()[i], g2.nodes()[i]);
            // SAFETY: nodes of two live graphs (trust contract; the copy's are ours).
            let (r1, r2) = unsafe { (obj(t1).unwrap(), obj(t2).unwrap()) };
            ensure!(r1.op == r2.op && same_layout(r1, r2), "node {} differs between the graph and its copy", i);
            let mut v1 = graph_view(g, i, i + 1);
            let mut v2 = graph_view(g2, i, i + 1);
            crate::backend::graph_compute(b1, &mut v1)?;
            crate::backend::graph_compute(b2, &mut v2)?;
            if is_view_op::<R>(r1.op) {
                continue;
            }
            if !call_compare_callback(callback, i as i32, t1, t2, user_data) {
                break;
            }
        }
        Ok(true)
    })();
    graph_copy_free(copy)?;
    result
}
