//! The graph the scheduler hands to the graph allocator (the user's nodes plus the split inputs'
//! copies, each with the backend whose buffer holds it) and the allocator itself: ours
//! (`crate::alloc`) or, with `GGML_RS_ALLOC=host`, the host's `ggml-alloc`. Pass 5 (split.rs)
//! builds the graph; reserving, allocating and measuring it happen here.

use super::members::Members;
use crate::abi::vtable::Live;
use crate::abi::*;
use crate::error::Result;
use crate::{bail, ensure};
use std::ffi::c_void;

pub(super) struct AllocGraph<R: Rev> {
    galloc: Allocator<R>,
    nodes: Vec<*mut Tensor<R>>,
    leafs: Vec<*mut Tensor<R>>,
    node_backend_ids: Vec<i32>,
    leaf_backend_ids: Vec<i32>,
    prev_node_backend_ids: Vec<i32>,
    prev_leaf_backend_ids: Vec<i32>,
    graph: CGraph<R>,
    /// Which nodes/leafs of the allocator's graph had their own data at the last reserve.
    /// ggml-alloc plans only the others; if that set changes it must plan again (stock does
    /// not check, and ggml-alloc then asserts or reads out of bounds).
    reserved_prealloc: Vec<u32>,
}

impl<R: Rev> AllocGraph<R> {
    pub(super) fn new(live: Live, bufts: &mut [*mut BufferType<R>]) -> Result<Self> {
        Ok(AllocGraph {
            galloc: Allocator::new(live, bufts)?,
            nodes: Vec::new(),
            leafs: Vec::new(),
            node_backend_ids: Vec::new(),
            leaf_backend_ids: Vec::new(),
            prev_node_backend_ids: Vec::new(),
            prev_leaf_backend_ids: Vec::new(),
            graph: CGraph::zeroed(),
            reserved_prealloc: Vec::new(),
        })
    }

    /// Starts a new graph; the last one's backend ids are kept to tell whether a new plan is needed.
    pub(super) fn begin(&mut self) {
        std::mem::swap(&mut self.node_backend_ids, &mut self.prev_node_backend_ids);
        std::mem::swap(&mut self.leaf_backend_ids, &mut self.prev_leaf_backend_ids);
        self.nodes.clear();
        self.leafs.clear();
        self.node_backend_ids.clear();
        self.leaf_backend_ids.clear();
    }

    pub(super) fn push_node(&mut self, t: *mut Tensor<R>, backend_id: i32) {
        self.nodes.push(t);
        self.node_backend_ids.push(backend_id);
    }

    pub(super) fn push_leaf(&mut self, t: *mut Tensor<R>, backend_id: i32) {
        self.leafs.push(t);
        self.leaf_backend_ids.push(backend_id);
    }

    /// The graph over the nodes and leafs pushed since `begin`.
    pub(super) fn finish(&mut self) {
        let mut ag = CGraph::zeroed();
        ag.size = self.nodes.len().max(self.leafs.len()) as i32;
        ag.n_nodes = self.nodes.len() as i32;
        ag.n_leafs = self.leafs.len() as i32;
        ag.nodes = self.nodes.as_mut_ptr();
        ag.leafs = self.leafs.as_mut_ptr();
        self.graph = ag;
    }

    /// Per node (and its sources) and leaf of the allocator's graph: which carry data of their
    /// own. ggml-alloc's plan is positional, so a change anywhere here needs a new plan.
    fn prealloc_signature(&self, live: Live) -> Vec<u32> {
        let own = |t: &Tensor<R>| !t.data.is_null() || !t.view_src.is_null();
        let node_sig = |&p: &*mut Tensor<R>| {
            let Some(t) = live.obj(p) else { return 0 };
            let mut sig = own(t) as u32;
            for (j, &sp) in t.src.iter().enumerate() {
                if let Some(st) = live.obj(sp) {
                    sig |= 1 << (1 + j) | (own(st) as u32) << (1 + MAX_SRC + j);
                }
            }
            sig
        };
        self.nodes.iter().map(node_sig).chain(self.leafs.iter().map(|&p| live.obj(p).is_some_and(own) as u32)).collect()
    }

    /// Plans the compute buffers for the graph (growing them if needed).
    pub(super) fn reserve(&mut self, live: Live) -> bool {
        if self.galloc.is_host() {
            self.reserved_prealloc = self.prealloc_signature(live);
        }
        self.galloc.reserve(&mut self.graph, &self.node_backend_ids, &self.leaf_backend_ids)
    }

    /// Places the graph's tensors, planning again when a node changed backend (buffer type) or,
    /// for the host's allocator, which tensors have data of their own.
    pub(super) fn alloc(&mut self, live: Live, members: &Members<R>) -> Result<()> {
        let changed = |ids: &[i32], prev: &[i32]| {
            ids.iter().zip(prev.iter().chain(std::iter::repeat(&0))).any(|(&a, &b)| {
                a != b && (a < 0 || b < 0 || members.buft(a as usize) != members.buft(b as usize))
            })
        };
        let backend_ids_changed = changed(&self.node_backend_ids, &self.prev_node_backend_ids)
            || changed(&self.leaf_backend_ids, &self.prev_leaf_backend_ids)
            // ours checks each tensor against its plan itself
            || (self.galloc.is_host() && self.prealloc_signature(live) != self.reserved_prealloc);
        if backend_ids_changed || !self.galloc.alloc_graph(&mut self.graph) {
            // a re-allocation may move split inputs: let the backends finish with them first
            // (without sched_synchronize, which could rewind the copy)
            members.synchronize_all();
            ensure!(self.reserve(live), "failed to reserve the compute buffers");
            ensure!(self.galloc.alloc_graph(&mut self.graph), "failed to allocate the graph");
        }
        Ok(())
    }

    /// 2026 `sched_reserve_size`: the bytes per backend the graph needs, nothing allocated.
    pub(super) fn measure(&mut self) -> Result<Vec<usize>> {
        match &mut self.galloc {
            Allocator::Ours(a) => a.measure(&self.graph, &self.node_backend_ids, &self.leaf_backend_ids),
            Allocator::Host(_) => Err(crate::error::Error("sched_reserve_size needs the library's allocator (GGML_RS_ALLOC=host is set)".into())),
        }
    }

    pub(super) fn buffer_size(&self, id: usize) -> usize {
        self.galloc.buffer_size(id)
    }

    pub(super) fn inputs_at_risk(&self) -> &[crate::alloc::AtRisk<R>] {
        self.galloc.inputs_at_risk()
    }
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
    /// The graph inputs whose memory later nodes reuse (ours keeps every input it can without
    /// growing a buffer past stock's; the host's ggml-alloc reuses none).
    fn inputs_at_risk(&self) -> &[crate::alloc::AtRisk<R>] {
        match self {
            Allocator::Ours(a) => a.at_risk(),
            Allocator::Host(_) => &[],
        }
    }
    fn buffer_size(&self, id: usize) -> usize {
        match self {
            Allocator::Host(h) => h.buffer_size(id),
            Allocator::Ours(a) => a.buffer_size(id),
        }
    }
}

