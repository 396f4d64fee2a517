//! The backend scheduler: assigns graph nodes to backends, splits the graph where the backend
//! changes, copies split inputs across backends, allocates the compute buffers (with our graph
//! allocator, `crate::alloc`, or with `GGML_RS_ALLOC=host` the host's `ggml-alloc`) and runs the
//! splits, with stock's semantics except where a decision is written.
//!
//! Where the work is: `assign` (passes 1-4: which backend runs each node), `split` (pass 5: splits,
//! input copies, the graph handed to the allocator), `compute` (running splits, copies, events,
//! the eval callback), `debug` (the `*GGML_SCHED_DEBUG` printout).

mod alloc_deps;
mod arena;
mod assign;
mod compute;
mod debug;
mod split;
pub mod tensor_map;

use crate::abi::vtable::Live;
use crate::abi::*;
use crate::error::Result;
use crate::{bail, ensure};
pub use alloc_deps::AllocDeps;
use arena::Arena;
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

/// The host's graph allocator (`ggml_gallocr`), one buffer per backend (`GGML_RS_ALLOC=host`).
struct Galloc<R: Rev> {
    handle: *mut c_void,
    core: &'static crate::host::CoreFns<R>,
}

impl<R: Rev> Galloc<R> {
    fn new(bufts: &mut [*mut BufferType<R>]) -> Result<Self> {
        let core = crate::host::host::<R>().core();
        let (Some(new_n), Some(_), Some(_), Some(_), Some(_)) =
            (core.gallocr_new_n, core.gallocr_free, core.gallocr_reserve_n, core.gallocr_alloc_graph, core.gallocr_get_buffer_size)
        else {
            bail!("the host does not link {}ggml-alloc (ggml_gallocr_*), which the scheduler allocates with", R::PREFIX);
        };
        // SAFETY: bufts holds n valid buffer types; gallocr copies the array.
        let handle = unsafe { new_n(bufts.as_mut_ptr(), bufts.len() as i32) };
        ensure!(!handle.is_null(), "failed to create the graph allocator");
        Ok(Galloc { handle, core })
    }
    fn reserve(&self, g: &mut CGraph<R>, node_ids: &[i32], leaf_ids: &[i32]) -> bool {
        // SAFETY: checked present in `new`; the id arrays cover g's nodes and leafs.
        unsafe { (self.core.gallocr_reserve_n.unwrap())(self.handle, g, node_ids.as_ptr(), leaf_ids.as_ptr()) }
    }
    fn alloc_graph(&self, g: &mut CGraph<R>) -> bool {
        // SAFETY: as above.
        unsafe { (self.core.gallocr_alloc_graph.unwrap())(self.handle, g) }
    }
    fn buffer_size(&self, id: usize) -> usize {
        // SAFETY: as above; id < number of buffer types.
        unsafe { (self.core.gallocr_get_buffer_size.unwrap())(self.handle, id as i32) }
    }
}

impl<R: Rev> Drop for Galloc<R> {
    fn drop(&mut self) {
        // SAFETY: created by gallocr_new_n, freed once.
        unsafe { (self.core.gallocr_free.unwrap())(self.handle) }
    }
}

/// `GGML_RS_ALLOC=host` hands the graphs to the host's ggml-alloc (what the library did before it
/// had its own allocator); anything else, or unset, uses ours. Read once per process.
fn use_host_alloc() -> bool {
    static HOST: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HOST.get_or_init(|| std::env::var("GGML_RS_ALLOC").is_ok_and(|v| v.trim().eq_ignore_ascii_case("host")))
}

enum Allocator<R: Rev> {
    Host(Galloc<R>),
    Ours(Box<crate::alloc::GraphAlloc<R>>),
}

impl<R: Rev> Allocator<R> {
    fn new(live: Live, bufts: &mut [*mut BufferType<R>]) -> Result<Self> {
        if use_host_alloc() {
            Ok(Allocator::Host(Galloc::new(bufts)?))
        } else {
            Ok(Allocator::Ours(Box::new(crate::alloc::GraphAlloc::new(live, bufts)?)))
        }
    }
    fn reserve(&mut self, g: &mut CGraph<R>, node_ids: &[i32], leaf_ids: &[i32]) -> bool {
        match self {
            Allocator::Host(h) => h.reserve(g, node_ids, leaf_ids),
            Allocator::Ours(a) => match a.reserve(g, node_ids, leaf_ids) {
                Ok(()) => true,
                Err(e) => {
                    crate::log_error!(R, "ggml_gallocr_reserve_n", "{}", e);
                    false
                }
            },
        }
    }
    fn alloc_graph(&mut self, g: &mut CGraph<R>) -> bool {
        match self {
            Allocator::Host(h) => h.alloc_graph(g),
            Allocator::Ours(a) => match a.alloc_graph(g) {
                Ok(fits) => fits,
                Err(e) => {
                    crate::log_error!(R, "ggml_gallocr_alloc_graph", "{}", e);
                    false
                }
            },
        }
    }
    fn is_host(&self) -> bool {
        matches!(self, Allocator::Host(_))
    }
    fn buffer_size(&self, id: usize) -> usize {
        match self {
            Allocator::Host(h) => h.buffer_size(id),
            Allocator::Ours(a) => a.buffer_size(id),
        }
    }
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
    pub(crate) live: Live,
    pub(crate) backends: Vec<*mut Backend<R>>,
    pub(crate) bufts: Vec<*mut BufferType<R>>,
    galloc: Allocator<R>,
    pub(crate) n_copies: usize,
    pub(crate) cur_copy: usize,
    /// The pipeline copy the current splits' nodes read their inputs from (`cur_copy` when the
    /// graph was split). Stock copies a recomputed graph's inputs into `cur_copy`, which has
    /// moved on, so the nodes read the previous run's copies; ours copies into the one they read.
    pub(crate) split_copy: usize,
    /// (node, j, original source) for every `src[j]` pass 5 pointed at an input copy
    redirects: Vec<(*mut Tensor<R>, usize, *mut Tensor<R>)>,
    /// b11118: tensors backends asked (in `graph_optimize`) to keep allocated until a later node
    alloc_deps: AllocDeps<R>,
    pub(crate) op_offload: bool,
    /// The index of the SIMD backend standing beside ggml-cpu (`GGML_RS_SIMD=1`: an ACCEL device
    /// ahead of the last, CPU backend), if this scheduler has one. The assignment passes treat
    /// the two as one CPU group, so that SIMD changes which of them computes a node and nothing
    /// else (assign.rs).
    pub(crate) simd_beside_cpu: Option<i32>,
    pub(crate) debug: i32,
    /// [backend][copy]; NULL where the device has no events
    pub(crate) events: Vec<[*mut Event<R>; MAX_COPIES]>,
    pub(crate) graph_size: usize,
    capacity: usize,

    pub(crate) ids: TensorMap<R>,
    /// tensors the last pass assigned without asking the backend (see `split_at_backend_change`)
    pub(crate) unchecked: crate::ptr_map::PtrMap<bool>,
    pub(crate) arena: Arena<R>,
    pub(crate) splits: Vec<Split<R>>,
    pub(crate) graph_inputs: Vec<*mut Tensor<R>>,

    /// the graph handed to the allocator: the user's nodes plus the split inputs' copies
    pub(crate) nodes: Vec<*mut Tensor<R>>,
    pub(crate) leafs: Vec<*mut Tensor<R>>,
    pub(crate) node_backend_ids: Vec<i32>,
    pub(crate) leaf_backend_ids: Vec<i32>,
    prev_node_backend_ids: Vec<i32>,
    prev_leaf_backend_ids: Vec<i32>,
    pub(crate) alloc_graph: CGraph<R>,
    /// Which nodes/leafs of the allocator's graph had their own data at the last reserve.
    /// ggml-alloc plans only the others; if that set changes it must plan again (stock does
    /// not check, and ggml-alloc then asserts or reads out of bounds).
    reserved_prealloc: Vec<u32>,
    /// the graph the current splits were made from (its address, node array and node count):
    /// computing another graph without allocating it first must not run stale splits
    split_of: (usize, usize, i32),

    pub(crate) callback: SchedEvalCallback<R>,
    pub(crate) callback_data: *mut c_void,

    pub(crate) is_reset: bool,
    is_alloc: bool,
    /// the caller's bytes of the graph inputs the allocator left at risk, saved before a compute
    input_stash: Vec<u8>,
    /// what the last compute left in those inputs (compared before the next one)
    input_after: Vec<u8>,
    input_scratch: Vec<u8>,
    /// `input_stash` belongs to the current allocation
    stash_valid: bool,
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
        let n = backends.len();
        ensure!(n > 0, "at least one backend is needed");
        ensure!(n <= MAX_BACKENDS, "{} backends, at most {} are supported", n, MAX_BACKENDS);
        for (i, &b) in backends.iter().enumerate() {
            ensure!(!b.is_null(), "backend {} is NULL", i);
        }
        // stock aborts unless the last backend is a CPU device: the fallback for every op
        let last = live.obj(backends[n - 1]).and_then(|b| live.obj(b.device));
        let last_type = match last {
            Some(d) => d.type_()?,
            None => bail!("the last backend has no device"),
        };
        ensure!(last_type == DEV_TYPE_CPU, "the last backend must be a CPU device (got device type {})", last_type);

        let mut bts = Vec::with_capacity(n);
        for (i, &b) in backends.iter().enumerate() {
            let be = live.obj(b).unwrap();
            let buft = match bufts {
                Some(list) => list[i],
                None => crate::abi::vtable::c_handle(crate::backend::default_buffer_type(be)?),
            };
            ensure!(!buft.is_null(), "buffer type {} is NULL", i);
            ensure!(crate::backend::supports_buft(be, buft)?, "backend {} does not support buffer type {}", i, crate::abi::vtable::cstr(live.obj(buft).map(|t| t.name()).transpose()?.unwrap_or(std::ptr::null())));
            bts.push(buft);
        }

        let n_copies = if parallel { MAX_COPIES } else { 1 };
        let mut events = vec![[std::ptr::null_mut(); MAX_COPIES]; n];
        if n_copies > 1 {
            for (b, ev) in events.iter_mut().enumerate() {
                let dev = live.obj(backends[b]).and_then(|be| live.obj(be.device));
                for e in ev.iter_mut().take(n_copies) {
                    *e = crate::event::event_new(dev);
                }
            }
        }
        let galloc = Allocator::new(live, &mut bts)?;
        let capacity = hash_capacity::<R>(graph_size);
        let mut s = Box::new(Sched {
            live,
            backends: backends.to_vec(),
            bufts: bts,
            galloc,
            n_copies,
            cur_copy: 0,
            split_copy: 0,
            redirects: Vec::new(),
            alloc_deps: AllocDeps::default(),
            op_offload,
            simd_beside_cpu: simd_beside_cpu(live, backends),
            debug: debug_level::<R>(),
            events,
            graph_size,
            capacity,
            ids: TensorMap::new(n, n_copies, capacity),
            unchecked: crate::ptr_map::PtrMap::default(),
            arena: Arena::new(),
            splits: Vec::new(),
            graph_inputs: Vec::new(),
            nodes: Vec::new(),
            leafs: Vec::new(),
            node_backend_ids: Vec::new(),
            leaf_backend_ids: Vec::new(),
            prev_node_backend_ids: Vec::new(),
            prev_leaf_backend_ids: Vec::new(),
            alloc_graph: CGraph::zeroed(),
            reserved_prealloc: Vec::new(),
            split_of: (0, 0, 0),
            callback: None,
            callback_data: std::ptr::null_mut(),
            is_reset: false,
            is_alloc: false,
            input_stash: Vec::new(),
            input_after: Vec::new(),
            input_scratch: Vec::new(),
            stash_valid: false,
        });
        s.reset();
        Ok(s)
    }

    pub fn backend_index(&self, backend: *mut Backend<R>) -> Option<usize> {
        self.backends.iter().position(|&b| b == backend)
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

    /// Per node (and its sources) and leaf of the allocator's graph: which carry data of their
    /// own. ggml-alloc's plan is positional, so a change anywhere here needs a new plan.
    fn prealloc_signature(&self) -> Vec<u32> {
        let own = |t: &Tensor<R>| !t.data.is_null() || !t.view_src.is_null();
        let node_sig = |&p: &*mut Tensor<R>| {
            let Some(t) = self.live.obj(p) else { return 0 };
            let mut sig = own(t) as u32;
            for (j, &sp) in t.src.iter().enumerate() {
                if let Some(st) = self.live.obj(sp) {
                    sig |= 1 << (1 + j) | (own(st) as u32) << (1 + MAX_SRC + j);
                }
            }
            sig
        };
        self.nodes.iter().map(node_sig).chain(self.leafs.iter().map(|&p| self.live.obj(p).is_some_and(own) as u32)).collect()
    }

    fn galloc_reserve(&mut self) -> bool {
        if self.galloc.is_host() {
            self.reserved_prealloc = self.prealloc_signature();
        }
        self.galloc.reserve(&mut self.alloc_graph, &self.node_backend_ids, &self.leaf_backend_ids)
    }

    pub fn reserve(&mut self, g: &mut CGraph<R>) -> Result<()> {
        // 2026: the backends are idle before the split (and their graph_optimize), as stock
        if R::SCHED_RESERVE_SYNCS_FIRST {
            self.synchronize();
        }
        self.is_alloc = false;
        self.stash_valid = false;
        self.check_size(g)?;
        self.split_graph(g)?;
        if !R::SCHED_RESERVE_SYNCS_FIRST {
            self.synchronize();
        }
        let reserved = self.galloc_reserve();
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
        let sizes = match &mut self.galloc {
            Allocator::Ours(a) => a.measure(&self.alloc_graph, &self.node_backend_ids, &self.leaf_backend_ids),
            Allocator::Host(_) => Err(crate::error::Error("sched_reserve_size needs the library's allocator (GGML_RS_ALLOC=host is set)".into())),
        };
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
        self.stash_valid = false;
        self.check_size(g)?;
        self.split_graph(g)?;
        if let Err(e) = self.alloc_splits() {
            self.undo_redirects();
            return Err(e);
        }
        self.is_alloc = true;
        self.split_of = (g as *const CGraph<R> as usize, g.nodes as usize, g.n_nodes);
        Ok(())
    }

    fn alloc_splits(&mut self) -> Result<()> {
        let changed = |ids: &[i32], prev: &[i32]| {
            ids.iter().zip(prev.iter().chain(std::iter::repeat(&0))).any(|(&a, &b)| {
                a != b && (a < 0 || b < 0 || self.bufts[a as usize] != self.bufts[b as usize])
            })
        };
        let backend_ids_changed = changed(&self.node_backend_ids, &self.prev_node_backend_ids)
            || changed(&self.leaf_backend_ids, &self.prev_leaf_backend_ids)
            // ours checks each tensor against its plan itself
            || (self.galloc.is_host() && self.prealloc_signature() != self.reserved_prealloc);
        if backend_ids_changed || !self.galloc.alloc_graph(&mut self.alloc_graph) {
            // a re-allocation may move split inputs: let the backends finish with them first
            // (without sched_synchronize, which could rewind cur_copy)
            for &b in &self.backends {
                if let Some(be) = self.live.obj(b) {
                    be.synchronize();
                }
            }
            ensure!(self.galloc_reserve(), "failed to reserve the compute buffers");
            ensure!(self.galloc.alloc_graph(&mut self.alloc_graph), "failed to allocate the graph");
        }
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
        self.save_inputs()?;
        let st = self.compute_splits();
        // written back however the compute ended: a cancelled one is the case that needs it
        let restored = self.restore_inputs();
        let st = st?;
        restored?;
        Ok(st)
    }

    /// The graph inputs whose memory later nodes reuse (the allocator keeps every input it can
    /// without growing a buffer past stock's; see `alloc::GraphAlloc::at_risk`).
    fn inputs_at_risk(&self) -> &[crate::alloc::AtRisk<R>] {
        match &self.galloc {
            Allocator::Ours(a) => a.at_risk(),
            Allocator::Host(_) => &[],
        }
    }

    /// Before a compute: makes each at-risk input hold the caller's data and saves that data.
    /// An input written back after the last compute (eager) holds the caller's data already (or
    /// newer data the caller wrote since). A lazy one still holds what the last compute left
    /// there: if its bytes are exactly that, the caller wrote nothing new and its saved data goes
    /// back; any other bytes are new data from the caller, saved instead. The stash is
    /// per allocation: after `alloc_graph` the inputs hold whatever the caller wrote.
    fn save_inputs(&mut self) -> Result<()> {
        let mut before = std::mem::take(&mut self.input_stash);
        let mut now = std::mem::take(&mut self.input_scratch);
        let fresh = !self.stash_valid;
        if fresh {
            before.clear();
        }
        let mut at = 0;
        let risky = self.inputs_at_risk();
        for r in risky {
            let Some(t) = self.live.obj(r.tensor) else { continue };
            let n = crate::tensor::nbytes(t)?;
            if fresh {
                before.resize(at + n, 0);
            }
            ensure!(at + n <= before.len(), "graph input '{}' changed size since it was saved", t.name());
            if fresh || r.eager {
                crate::buffer::tensor_get(t, before[at..].as_mut_ptr() as *mut c_void, 0, n)?;
            } else {
                now.clear();
                now.resize(n, 0);
                crate::buffer::tensor_get(t, now.as_mut_ptr() as *mut c_void, 0, n)?;
                if self.input_after.get(at..at + n) == Some(&now[..]) {
                    crate::buffer::tensor_set(t, before[at..].as_ptr() as *const c_void, 0, n)?;
                } else {
                    before[at..at + n].copy_from_slice(&now);
                }
            }
            at += n;
        }
        self.input_stash = before;
        self.input_scratch = now;
        self.stash_valid = true;
        Ok(())
    }

    /// After a compute (finished, failed or cancelled), once the backends holding them are done:
    /// writes the eager inputs back, so that reading them and computing again see what the caller
    /// wrote, and records what the compute left in the lazy ones (whose bytes an output now
    /// holds) for `save_inputs` to tell untouched from rewritten.
    fn restore_inputs(&mut self) -> Result<()> {
        let mut after = std::mem::take(&mut self.input_after);
        after.resize(self.input_stash.len(), 0);
        let mut at = 0;
        let mut r = Ok(());
        for ar in self.inputs_at_risk() {
            let Some(t) = self.live.obj(ar.tensor) else { continue };
            if let Some(be) = self.backends.get(ar.buffer_id).and_then(|&b| self.live.obj(b)) {
                be.synchronize();
            }
            let Ok(n) = crate::tensor::nbytes(t) else { continue };
            if at + n > self.input_stash.len() {
                break;
            }
            let done = if ar.eager {
                crate::buffer::tensor_set(t, self.input_stash[at..].as_ptr() as *const c_void, 0, n)
            } else {
                crate::buffer::tensor_get(t, after[at..].as_mut_ptr() as *mut c_void, 0, n)
            };
            if done.is_err() {
                r = done;
            }
            at += n;
        }
        self.input_after = after;
        r
    }

    pub fn synchronize(&mut self) {
        for &b in &self.backends {
            if let Some(be) = self.live.obj(b) {
                be.synchronize();
            }
        }
        if R::SCHED_SYNC_RESETS_COPY && !self.is_alloc {
            // the same copy during generation keeps the graphs of graph-capturing backends valid
            self.cur_copy = 0;
        }
    }

    pub fn buffer_size(&self, backend: *mut Backend<R>) -> Result<usize> {
        match self.backend_index(backend) {
            Some(i) => Ok(self.galloc.buffer_size(i)),
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
        if let Some(&last) = self.backends.last() {
            if b != last && self.live.obj(b).is_some_and(crate::simd::device::is_simd) {
                return last;
            }
        }
        b
    }

    pub fn tensor_backend(&self, node: *const Tensor<R>) -> *mut Backend<R> {
        match self.ids.backend(node) {
            -1 => std::ptr::null_mut(),
            i => self.backends[i as usize],
        }
    }

    pub(crate) fn supports_op(&self, b: usize, t: *const Tensor<R>) -> bool {
        self.live.obj(self.backends[b]).and_then(|be| self.live.obj(t).map(|t| crate::backend::supports_op(be, t).unwrap_or(false))).unwrap_or(false)
    }

    pub(crate) fn supports_buft(&self, b: usize, buft: *mut BufferType<R>) -> bool {
        self.live.obj(self.backends[b]).map(|be| crate::backend::supports_buft(be, buft).unwrap_or(false)).unwrap_or(false)
    }

    pub(crate) fn offload_op(&self, b: usize, t: *const Tensor<R>) -> bool {
        self.live.obj(self.backends[b]).and_then(|be| self.live.obj(t).map(|t| crate::backend::offload_op(be, t).unwrap_or(false))).unwrap_or(false)
    }
}

impl<R: Rev> Drop for Sched<R> {
    fn drop(&mut self) {
        for ev in &self.events {
            for &e in ev {
                let _ = crate::event::event_free(e);
            }
        }
    }
}
