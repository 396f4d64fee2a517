//! The backend scheduler: assigns graph nodes to backends, splits the graph where the backend
//! changes, copies split inputs across backends, allocates the compute buffers (with our graph
//! allocator, `crate::alloc`, or with `GGML_RS_ALLOC=host` the host's `ggml-alloc`) and runs the
//! splits, with stock's semantics except where a decision is written.
//!
//! Where the work is: `assign` (passes 1-4: which backend runs each node), `split` (pass 5: splits,
//! input copies), `alloc_graph` (the graph handed to the allocator, and the allocator),
//! `compute` (running splits, copies, events, the eval callback), `input_guard` (inputs whose
//! memory the allocator reuses), `debug` (the `*GGML_SCHED_DEBUG` printout). `members` holds what
//! `sched_new` fixed: the backends, their buffer types and events.

mod alloc_deps;
mod alloc_graph;
mod arena;
mod assign;
mod compute;
mod debug;
mod input_guard;
mod members;
mod split;
pub mod tensor_map;

use crate::abi::vtable::Live;
use crate::abi::*;
use crate::error::Result;
use crate::{bail, ensure};
pub use alloc_deps::AllocDeps;
use alloc_graph::AllocGraph;
use arena::Arena;
use input_guard::InputGuard;
use members::{Copies, Members};
use std::ffi::c_void;
use tensor_map::TensorMap;

/// Stock's limits: backends per scheduler and pipeline copies when `parallel` is set.
pub const MAX_BACKENDS: usize = 16;
pub const MAX_COPIES: usize = 4;

pub struct Split<R: Rev> {
    pub backend_id: usize,
    pub i_start: usize,
    pub i_end: usize,
    pub inputs: Vec<*mut Tensor<R>>,
    pub graph: CGraph<R>,
}

/// `ggml_hash_size`: the scheduler accepts graphs of up to this many nodes + leafs, as stock.
fn hash_capacity<R: Rev>(graph_size: usize) -> usize {
    if let Some(f) = crate::host::host::<R>().core().hash_size {
        // SAFETY: pure function of its argument.
        return unsafe { f(graph_size) };
    }
    // ggml's table: the first prime after each power of two
    let is_prime = |n: usize| n >= 2 && (2..).take_while(|d| d * d <= n).all(|d| !n.is_multiple_of(d));
    let mut k = 1usize;
    loop {
        let mut p = k;
        while !is_prime(p) {
            p += 1;
        }
        if p >= graph_size || k > usize::MAX / 4 {
            return p.max(graph_size);
        }
        k *= 2;
    }
}

pub struct Sched<R: Rev> {
    /// follows the backends and the graphs' tensors (the promise made at `sched_new`)
    live: Live,
    /// the backends, their buffer types and events
    members: Members<R>,
    copies: Copies,
    /// (node, j, original source) for every `src[j]` pass 5 pointed at an input copy
    redirects: Vec<(*mut Tensor<R>, usize, *mut Tensor<R>)>,
    /// b11118: tensors backends asked (in `graph_optimize`) to keep allocated until a later node
    alloc_deps: AllocDeps<R>,
    op_offload: bool,
    /// The index of the SIMD backend standing beside ggml-cpu (`GGML_RS_SIMD=1`: an ACCEL device
    /// ahead of the last, CPU backend), if this scheduler has one. The assignment passes treat
    /// the two as one CPU group, so that SIMD changes which of them computes a node and nothing
    /// else (assign.rs).
    simd_beside_cpu: Option<i32>,
    debug: i32,
    graph_size: usize,
    capacity: usize,

    ids: TensorMap<R>,
    /// tensors the last pass assigned without asking the backend (see `split_at_backend_change`)
    unchecked: crate::ptr_map::PtrMap<bool>,
    arena: Arena<R>,
    splits: Vec<Split<R>>,
    graph_inputs: Vec<*mut Tensor<R>>,

    /// the graph handed to the allocator and the allocator
    plan: AllocGraph<R>,
    /// the graph the current splits were made from (its address, node array and node count):
    /// computing another graph without allocating it first must not run stale splits
    split_of: (usize, usize, i32),

    callback: SchedEvalCallback<R>,
    callback_data: *mut c_void,

    is_reset: bool,
    is_alloc: bool,
    /// the caller's bytes of the graph inputs the allocator left at risk
    inputs: InputGuard,
}

/// Where the SIMD backend stands among `backends` when it is not the last one (the last is the
/// CPU fallback, which stock requires).
fn simd_beside_cpu<R: Rev>(live: Live, backends: &[*mut Backend<R>]) -> Option<i32> {
    #[cfg(feature = "simd")]
    {
        let last = backends.len().checked_sub(1)?;
        backends[..last].iter().position(|&b| live.obj(b).is_some_and(crate::simd::device::is_simd)).map(|i| i as i32)
    }
    #[cfg(not(feature = "simd"))]
    {
        let _ = (live, backends);
        None
    }
}

fn debug_level<R: Rev>() -> i32 {
    [format!("{}GGML_SCHED_DEBUG", R::ENV_PREFIX), "GGML_SCHED_DEBUG".to_string()]
        .iter()
        .find_map(|k| std::env::var(k).ok())
        .map(|v| v.trim().parse().unwrap_or(0))
        .unwrap_or(0)
}

impl<R: Rev> Sched<R> {
    pub fn new(
        live: Live,
        backends: &[*mut Backend<R>],
        bufts: Option<&[*mut BufferType<R>]>,
        graph_size: usize,
        parallel: bool,
        op_offload: bool,
    ) -> Result<Box<Self>> {
        let copies = Copies::new(parallel);
        let n_copies = copies.n();
        let mut members = Members::new(live, backends, bufts, n_copies)?;
        let n = members.len();
        let plan = AllocGraph::new(live, members.bufts_mut())?;
        let capacity = hash_capacity::<R>(graph_size);
        let mut s = Box::new(Sched {
            live,
            members,
            copies,
            plan,
            redirects: Vec::new(),
            alloc_deps: AllocDeps::default(),
            op_offload,
            simd_beside_cpu: simd_beside_cpu(live, backends),
            debug: debug_level::<R>(),
            graph_size,
            capacity,
            ids: TensorMap::new(n, n_copies, capacity),
            unchecked: crate::ptr_map::PtrMap::default(),
            arena: Arena::new(),
            splits: Vec::new(),
            graph_inputs: Vec::new(),
            split_of: (0, 0, 0),
            callback: None,
            callback_data: std::ptr::null_mut(),
            is_reset: false,
            is_alloc: false,
            inputs: InputGuard::new(),
        });
        s.reset();
        Ok(s)
    }

    pub fn n_backends(&self) -> usize {
        self.members.len()
    }

    /// Backend `i` (`sched_get_backend`), if there is one.
    pub fn backend(&self, i: i32) -> Result<*mut Backend<R>> {
        ensure!(i >= 0 && (i as usize) < self.members.len(), "backend index {} out of range ({} backends)", i, self.members.len());
        Ok(self.members.backend(i as usize))
    }

    pub fn n_splits(&self) -> usize {
        self.splits.len()
    }

    pub fn n_copies(&self) -> usize {
        self.copies.n()
    }

    /// The buffer type `backend`'s compute buffer comes from.
    pub fn buffer_type(&self, backend: *mut Backend<R>) -> Result<*mut BufferType<R>> {
        match self.backend_index(backend) {
            Some(i) => Ok(self.members.buft(i)),
            None => bail!("backend is not part of this scheduler"),
        }
    }

    /// `sched_set_eval_callback`: called around every node from the next compute on.
    pub fn set_eval_callback(&mut self, callback: SchedEvalCallback<R>, data: *mut c_void) {
        self.callback = callback;
        self.callback_data = data;
    }

    pub fn backend_index(&self, backend: *mut Backend<R>) -> Option<usize> {
        self.members.index_of(backend)
    }

    pub fn reset(&mut self) {
        if !self.is_reset {
            self.ids.clear();
            self.is_reset = true;
        }
        self.is_alloc = false;
    }

    fn check_size(&self, g: &CGraph<R>) -> Result<()> {
        let n = g.n_nodes.max(0) as usize + g.n_leafs.max(0) as usize;
        ensure!(
            n <= self.capacity,
            "graph has {} nodes + {} leafs, more than the scheduler was created for (graph_size {}, capacity {})",
            g.n_nodes,
            g.n_leafs,
            self.graph_size,
            self.capacity
        );
        Ok(())
    }

    pub fn reserve(&mut self, g: &mut CGraph<R>) -> Result<()> {
        // 2026: the backends are idle before the split (and their graph_optimize), as stock
        if R::SCHED_RESERVE_SYNCS_FIRST {
            self.synchronize();
        }
        self.is_alloc = false;
        self.inputs.forget();
        self.check_size(g)?;
        self.split_graph(g)?;
        if !R::SCHED_RESERVE_SYNCS_FIRST {
            self.synchronize();
        }
        let reserved = self.plan.reserve(self.live);
        // a reserved graph is only measured, never computed: it stays the caller's
        self.undo_redirects();
        self.reset();
        ensure!(reserved, "failed to reserve the compute buffers");
        Ok(())
    }

    /// 2026 `sched_reserve_size`: the compute buffer bytes per backend `g` needs, nothing allocated.
    pub fn reserve_size(&mut self, g: &mut CGraph<R>) -> Result<Vec<usize>> {
        self.reset();
        self.synchronize();
        self.check_size(g)?;
        self.split_graph(g)?;
        let sizes = self.plan.measure();
        self.undo_redirects();
        sizes
    }

    /// 2026 `sched_split_graph`: assigns and splits `g` (a probe: `get_tensor_backend` and
    /// `get_n_splits` answer for it) without allocating; the graph stays the caller's.
    pub fn split_graph_public(&mut self, g: &mut CGraph<R>) -> Result<()> {
        self.is_alloc = false;
        self.check_size(g)?;
        self.split_graph(g)?;
        self.undo_redirects();
        Ok(())
    }

    pub fn alloc_graph(&mut self, g: &mut CGraph<R>) -> Result<()> {
        // a failed allocation must not leave the previous graph's splits marked computable
        self.is_alloc = false;
        // the inputs now hold whatever the caller writes next: nothing saved applies
        self.inputs.forget();
        self.check_size(g)?;
        self.split_graph(g)?;
        if let Err(e) = self.plan.alloc(self.live, &self.members) {
            self.undo_redirects();
            return Err(e);
        }
        self.is_alloc = true;
        self.split_of = (g as *const CGraph<R> as usize, g.nodes as usize, g.n_nodes);
        Ok(())
    }

    pub fn graph_compute_async(&mut self, g: &mut CGraph<R>) -> Result<Status> {
        if self.is_alloc && self.split_of != (g as *const CGraph<R> as usize, g.nodes as usize, g.n_nodes) {
            // stock would run the splits of the graph allocated before, whatever `g` is (and that
            // graph may be freed by now): allocate the one asked for instead
            self.is_alloc = false;
        }
        if !self.is_reset && !self.is_alloc {
            self.reset();
        }
        if !self.is_alloc {
            // Allocating here gives the graph's inputs fresh memory the caller never wrote (stock
            // computes on it; GET_ROWS then asserts on garbage ids): refuse rather than compute
            // on data that is not the caller's.
            let unset = g.nodes().iter().chain(g.leafs().iter()).filter_map(|&t| self.live.obj(t)).find(|t| {
                t.flags & TENSOR_FLAG_INPUT != 0 && t.data.is_null() && t.view_src.is_null()
            });
            if let Some(t) = unset {
                crate::log_error!(
                    R,
                    "ggml_backend_sched_graph_compute",
                    "graph input '{}' has no memory, so it cannot hold the caller's data: call sched_alloc_graph and set the inputs before computing",
                    t.name()
                );
                return Ok(STATUS_ALLOC_FAILED);
            }
            if let Err(e) = self.alloc_graph(g) {
                crate::log_error!(R, "ggml_backend_sched_graph_compute", "{}", e);
                return Ok(STATUS_ALLOC_FAILED);
            }
        }
        let live = self.live;
        self.inputs.save(live, self.plan.inputs_at_risk())?;
        let st = self.compute_splits();
        // written back however the compute ended: a cancelled one is the case that needs it
        let restored = self.inputs.restore(live, self.plan.inputs_at_risk(), |b| {
            if let Some(be) = self.members.get(b) {
                be.synchronize();
            }
        });
        let st = st?;
        restored?;
        Ok(st)
    }

    pub fn synchronize(&mut self) {
        self.members.synchronize_all();
        if R::SCHED_SYNC_RESETS_COPY && !self.is_alloc {
            // the same copy during generation keeps the graphs of graph-capturing backends valid
            self.copies.rewind();
        }
    }

    pub fn buffer_size(&self, backend: *mut Backend<R>) -> Result<usize> {
        match self.backend_index(backend) {
            Some(i) => Ok(self.plan.buffer_size(i)),
            None => bail!("backend is not part of this scheduler"),
        }
    }

    /// Unlike stock, the assignment is checked: a backend that cannot run the op is refused here
    /// rather than failing later inside compute. It is asked about the node as it will compute
    /// it, with the inputs pass 5 copies into its buffer (stock honours such assignments: e.g. a
    /// weight in an accelerator's buffer under a node forced to the CPU, which wsp's CPU device
    /// refuses while the weight is still in the non-host buffer).
    pub fn set_tensor_backend(&mut self, node: &Tensor<R>, backend: *mut Backend<R>) -> Result<()> {
        let Some(i) = self.backend_index(backend) else { bail!("backend is not part of this scheduler") };
        let be = self.live.obj(backend).unwrap();
        ensure!(
            self.supports_op_with_copies(i, node),
            "backend {} does not support op {} of tensor '{}'",
            crate::abi::vtable::cstr(be.name()?),
            crate::host::op_name::<R>(node.op),
            node.name()
        );
        self.ids.set_backend(node, i as i32);
        self.is_reset = false;
        Ok(())
    }

    /// What `sched_get_tensor_backend` answers: the node's backend, except that a node on the
    /// SIMD backend standing in beside ggml-cpu (`GGML_RS_SIMD=1`: an ACCEL device, never the
    /// last backend) is reported on the CPU backend (the last one). SIMD computes the CPU layers
    /// on the CPU device's memory; llama.cpp compares this answer with the layer's device to
    /// decide whether flash attention is supported (auto, its default) and turned it off for
    /// every SIMD run, putting a copy of the V cache into every layer (docs/simd.md). Everything
    /// else a caller does with the answer (reading an output with `tensor_get_async`, syncing)
    /// works the same on the CPU backend: both are synchronous on host memory.
    pub fn reported_backend(&self, node: *const Tensor<R>) -> *mut Backend<R> {
        let b = self.tensor_backend(node);
        #[cfg(feature = "simd")]
        {
            let last = self.members.last();
            if b != last && self.live.obj(b).is_some_and(crate::simd::device::is_simd) {
                return last;
            }
        }
        b
    }

    pub fn tensor_backend(&self, node: *const Tensor<R>) -> *mut Backend<R> {
        match self.ids.backend(node) {
            -1 => std::ptr::null_mut(),
            i => self.members.backend(i as usize),
        }
    }

    pub(crate) fn supports_op(&self, b: usize, t: *const Tensor<R>) -> bool {
        self.members.supports_op(b, t)
    }

    pub(crate) fn supports_buft(&self, b: usize, buft: *mut BufferType<R>) -> bool {
        self.members.supports_buft(b, buft)
    }

    pub(crate) fn offload_op(&self, b: usize, t: *const Tensor<R>) -> bool {
        self.members.offload_op(b, t)
    }
}
