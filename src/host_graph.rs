//! Small graphs built by the host's own ggml (its op constructors in ggml.c, into a host context)
//! and computed by the host's ggml-cpu backend: what the SIMD backend's fidelity check
//! (`simd::fidelity`) holds its kernels against. Every call into the host for it is here.

use crate::abi::vtable::obj;
use crate::abi::{Backend, CGraph, Rev, Tensor, STATUS_SUCCESS};
use crate::host::{host, traits_cpu, InitParams};
use std::ffi::c_void;

/// A tensor of a [`HostGraph`], by its position.
#[derive(Clone, Copy, Debug)]
pub struct Id(usize);

/// Which of the host's op constructors makes a node, by its shape of call.
#[derive(Clone, Copy, Debug)]
pub enum Build {
    /// `ggml_<name>(ctx, a)`: sqr, sqrt, silu, gelu
    Unary(&'static str),
    /// `ggml_<name>(ctx, a, b)`: add, sub, mul, div, mul_mat, cpy, get_rows
    Binary(&'static str),
    /// `ggml_<name>(ctx, a, f)`: norm, rms_norm, scale
    WithF32(&'static str, f32),
    /// `ggml_soft_max_ext(ctx, a, mask, scale, max_bias)`; the mask is the second source, if any
    SoftMax { scale: f32, max_bias: f32 },
    /// `ggml_rope_ext(ctx, a, positions, NULL, n_dims, mode, 0, 10000, 1, 0, 1, 32, 1)`
    Rope { n_dims: i32, mode: i32 },
    /// `ggml_im2col(ctx, kernel, data, s0, 0, p0, 0, d0, 0, false, dst_type)`: 1-D, as whisper's
    Im2col1d { s0: i32, p0: i32, d0: i32, dst_type: i32 },
    /// `ggml_glu_split(ctx, a, b, op)` (2026: SwiGLU 2, GeGLU 1)
    GluSplit { op: i32 },
    /// `ggml_set_rows(ctx, a, b, c)`: rows of b into a at indices c
    SetRows,
    /// `ggml_flash_attn_ext(ctx, q, k, v, mask, scale, 0, 0)`; the mask is the fourth source, if any
    FlashAttnExt { scale: f32 },
}

type T<R> = *mut Tensor<R>;
type Ctx = *mut c_void;

/// A host context holding one small graph and its data.
pub struct HostGraph<R: Rev> {
    ctx: Ctx,
    free: unsafe extern "C" fn(Ctx),
    graph: *mut CGraph<R>,
    tensors: Vec<T<R>>,
    outputs: Vec<T<R>>,
}

/// `<p>ggml_<name>` of the host as a function of type `F`; `None` when the host lacks it.
///
/// # Safety
/// `F` must be the function's exact C signature.
unsafe fn host_fn<R: Rev, F: Copy>(name: &str) -> Option<F> {
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>(), "host_fn: F is a function pointer");
    let p = host::<R>().core_fn(&format!("ggml_{}", name))?;
    // SAFETY: the caller names the signature; the pointer is the host function's address.
    Some(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
}

impl<R: Rev> HostGraph<R> {
    /// A context of `mem` bytes (data and tensor headers) with an empty graph; `None` when the
    /// host lacks ggml's core or the constructors.
    pub fn new(mem: usize) -> Option<Self> {
        let core = host::<R>().core();
        let (init, free, new_graph) = (core.init?, core.free?, core.new_graph_custom?);
        // SAFETY: the host's ggml_init with a size and memory it allocates itself.
        let ctx = unsafe { init(InitParams { mem_size: mem, mem_buffer: std::ptr::null_mut(), no_alloc: false }) };
        if ctx.is_null() {
            return None;
        }
        // SAFETY: a fresh context with room for the graph (mem includes it).
        let graph = unsafe { new_graph(ctx, 64, false) };
        let g = HostGraph { ctx, free, graph, tensors: Vec::new(), outputs: Vec::new() };
        (!graph.is_null()).then_some(g)
    }

    fn add(&mut self, t: T<R>) -> Option<Id> {
        (!t.is_null()).then(|| {
            self.tensors.push(t);
            Id(self.tensors.len() - 1)
        })
    }

    pub fn tensor(&self, id: Id) -> &Tensor<R> {
        // SAFETY: a tensor of this graph's own context, which lives as long as `self`.
        unsafe { obj(self.tensors[id.0]) }.expect("HostGraph keeps only non-NULL tensors")
    }

    /// A leaf of type `ty` (F32, F16, I32 or a type ggml-cpu quantizes to) and shape `ne`, holding
    /// `values` (one per element, row-major; quantized with the host's own quantizer).
    pub fn input(&mut self, ty: i32, ne: [i64; 4], values: &[f32]) -> Option<Id> {
        // SAFETY: ggml_new_tensor(ctx, type, n_dims, const int64_t * ne)
        let new_tensor: unsafe extern "C" fn(Ctx, i32, i32, *const i64) -> T<R> = unsafe { host_fn::<R, _>("new_tensor")? };
        let n: i64 = ne.iter().product();
        if values.len() as i64 != n {
            return None;
        }
        // SAFETY: a live context of this graph, a 4-entry shape.
        let id = self.add(unsafe { new_tensor(self.ctx, ty, 4, ne.as_ptr()) })?;
        let t = self.tensor(id);
        let bytes = crate::tensor::nbytes::<R>(t).ok()?;
        let data = t.data as *mut u8;
        if data.is_null() {
            return None;
        }
        // SAFETY: the context allocated `bytes` bytes of data for this fresh, contiguous tensor.
        let dst = unsafe { std::slice::from_raw_parts_mut(data, bytes) };
        match ty {
            0 => dst.chunks_exact_mut(4).zip(values).for_each(|(d, v)| d.copy_from_slice(&v.to_le_bytes())),
            1 => dst.chunks_exact_mut(2).zip(values).for_each(|(d, v)| d.copy_from_slice(&crate::simd::quant::f16::fp32_to_fp16(*v).to_le_bytes())),
            26 => dst.chunks_exact_mut(4).zip(values).for_each(|(d, v)| d.copy_from_slice(&(*v as i32).to_le_bytes())),
            27 => dst.chunks_exact_mut(8).zip(values).for_each(|(d, v)| d.copy_from_slice(&(*v as i64).to_le_bytes())),
            _ => {
                let q = traits_cpu::<R>(ty)?.from_float?;
                // SAFETY: the host's quantizer of `ty` reads `n` floats and writes the tensor's
                // `bytes` bytes (ne[0] a multiple of the block; the caller's shapes are).
                unsafe { q(values.as_ptr(), data as *mut c_void, n) };
            }
        }
        Some(id)
    }

    /// A node made by the host's constructor `b` over `srcs`.
    pub fn op(&mut self, b: Build, srcs: &[Id]) -> Option<Id> {
        let s = |i: usize| srcs.get(i).map_or(std::ptr::null_mut(), |id| self.tensors[id.0]);
        let ctx = self.ctx;
        // SAFETY (each call): the host constructor of that name has the signature given, and gets
        // this graph's context and tensors of it (or NULL where the constructor allows it).
        let t = unsafe {
            match b {
                Build::Unary(name) => host_fn::<R, unsafe extern "C" fn(Ctx, T<R>) -> T<R>>(name)?(ctx, s(0)),
                Build::Binary(name) => host_fn::<R, unsafe extern "C" fn(Ctx, T<R>, T<R>) -> T<R>>(name)?(ctx, s(0), s(1)),
                Build::WithF32(name, f) => host_fn::<R, unsafe extern "C" fn(Ctx, T<R>, f32) -> T<R>>(name)?(ctx, s(0), f),
                Build::SoftMax { scale, max_bias } => {
                    host_fn::<R, unsafe extern "C" fn(Ctx, T<R>, T<R>, f32, f32) -> T<R>>("soft_max_ext")?(ctx, s(0), s(1), scale, max_bias)
                }
                Build::Rope { n_dims, mode } => {
                    type RopeExt<R> = unsafe extern "C" fn(Ctx, T<R>, T<R>, T<R>, i32, i32, i32, f32, f32, f32, f32, f32, f32) -> T<R>;
                    host_fn::<R, RopeExt<R>>("rope_ext")?(ctx, s(0), s(1), std::ptr::null_mut(), n_dims, mode, 0, 10000.0, 1.0, 0.0, 1.0, 32.0, 1.0)
                }
                Build::Im2col1d { s0, p0, d0, dst_type } => {
                    type Im2col<R> = unsafe extern "C" fn(Ctx, T<R>, T<R>, i32, i32, i32, i32, i32, i32, bool, i32) -> T<R>;
                    host_fn::<R, Im2col<R>>("im2col")?(ctx, s(0), s(1), s0, 0, p0, 0, d0, 0, false, dst_type)
                }
                Build::GluSplit { op } => host_fn::<R, unsafe extern "C" fn(Ctx, T<R>, T<R>, i32) -> T<R>>("glu_split")?(ctx, s(0), s(1), op),
                Build::SetRows => host_fn::<R, unsafe extern "C" fn(Ctx, T<R>, T<R>, T<R>) -> T<R>>("set_rows")?(ctx, s(0), s(1), s(2)),
                Build::FlashAttnExt { scale } => {
                    type Fa<R> = unsafe extern "C" fn(Ctx, T<R>, T<R>, T<R>, T<R>, f32, f32, f32) -> T<R>;
                    host_fn::<R, Fa<R>>("flash_attn_ext")?(ctx, s(0), s(1), s(2), s(3), scale, 0.0, 0.0)
                }
            }
        };
        self.add(t)
    }

    /// Makes `id` an output: the graph computes it and everything it depends on.
    pub fn output(&mut self, id: Id) -> Option<()> {
        // SAFETY: ggml_build_forward_expand(struct ggml_cgraph *, struct ggml_tensor *)
        let expand: unsafe extern "C" fn(*mut CGraph<R>, T<R>) = unsafe { host_fn::<R, _>("build_forward_expand")? };
        let t = self.tensors[id.0];
        // SAFETY: this context's graph (64 nodes, more than any fidelity graph holds) and tensor.
        unsafe { expand(self.graph, t) };
        self.outputs.push(t);
        Some(())
    }

    pub fn nodes(&self) -> &[*mut Tensor<R>] {
        // SAFETY: the graph of this context, which lives as long as `self`.
        unsafe { obj(self.graph) }.map_or(&[], |g| g.nodes())
    }

    /// The nodes, borrowed for as long as the graph is (`None` for NULL).
    pub fn node_refs(&self) -> impl Iterator<Item = Option<&Tensor<R>>> {
        // SAFETY: tensors of this graph's own context, which lives as long as `self`.
        self.nodes().iter().map(|&t| unsafe { obj(t) })
    }

    /// The outputs' types, in the order of [`output_bytes`](Self::output_bytes).
    pub fn output_types(&self) -> Vec<i32> {
        // SAFETY: tensors of this graph's own context, which lives as long as `self`.
        self.outputs.iter().map(|&t| unsafe { obj(t) }.map_or(-1, |t| t.type_)).collect()
    }

    /// The bytes of every output, in the order they were made outputs.

    pub fn output_bytes(&self) -> Vec<Vec<u8>> {
        self.outputs
            .iter()
            // SAFETY: as above.
            .filter_map(|&t| unsafe { obj(t) })
            .map(|t| {
                let n = crate::tensor::nbytes::<R>(t).unwrap_or(0);
                // SAFETY: the context allocated the output's data, `n` bytes, contiguous.
                (!t.data.is_null()).then(|| unsafe { std::slice::from_raw_parts(t.data as *const u8, n) }.to_vec()).unwrap_or_default()
            })
            .collect()
    }
}

impl<R: Rev> Drop for HostGraph<R> {
    fn drop(&mut self) {
        // SAFETY: the context made by `new`, freed once.
        unsafe { (self.free)(self.ctx) }
    }
}

/// The host's ggml-cpu backend, one thread.
pub struct HostCpu<R: Rev>(*mut Backend<R>);

impl<R: Rev> HostCpu<R> {
    /// `None` when the host has no ggml-cpu.
    pub fn new() -> Option<Self> {
        // SAFETY: ggml_backend_cpu_init(void) and ggml_backend_cpu_set_n_threads(backend, int)
        let (init, set_threads): (unsafe extern "C" fn() -> *mut Backend<R>, unsafe extern "C" fn(*mut Backend<R>, i32)) =
            unsafe { (host_fn::<R, _>("backend_cpu_init")?, host_fn::<R, _>("backend_cpu_set_n_threads")?) };
        // SAFETY: the host's own constructor.
        let b = unsafe { init() };
        if b.is_null() {
            return None;
        }
        // SAFETY: a live CPU backend of the host.
        unsafe { set_threads(b, 1) };
        Some(HostCpu(b))
    }

    /// Computes `g` on ggml-cpu; false when it fails.
    pub fn compute(&self, g: &HostGraph<R>) -> bool {
        // SAFETY: the backend made by `new`, freed only on drop.
        let Some(compute) = unsafe { obj(self.0) }.and_then(|b| b.iface.graph_compute) else { return false };
        // SAFETY: the backend's own graph_compute with a graph of the host's making.
        unsafe { compute(self.0, g.graph) == STATUS_SUCCESS }
    }
}

impl<R: Rev> Drop for HostCpu<R> {
    fn drop(&mut self) {
        // SAFETY: as in `compute`.
        if let Some(free) = unsafe { obj(self.0) }.and_then(|b| b.iface.free) {
            // SAFETY: the backend made by `new`, freed once by its own free.
            unsafe { free(self.0) }
        }
    }
}
