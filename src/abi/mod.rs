//! `#[repr(C)]` mirrors of the ggml structs this library reads or writes, for both ggml revisions.
//!
//! The two revisions (llama.rn 0.4.4 = `lm_`, whisper.rn 0.4.3 = `wsp_`) share almost every layout;
//! the few differences are the associated types and constants of [`Rev`], so every other module is
//! written once, generic over `R: Rev`. The layouts are checked against the hosts' own headers by
//! `tests_c/layout.c` + `tests/layout.rs`, not assumed.

pub mod lm;
pub mod rev2026;
pub mod types;
pub mod wsp;

use std::ffi::{c_char, c_void};

pub use lm::Lm;
pub use rev2026::{Ggml0253, Ggml26, GgmlB11118, Lm26, Wsp26};
pub use types::type_traits;
pub use wsp::Wsp;

/// How many revisions the crate knows (each has a distinct `Rev::SLOT` below this).
pub const REV_SLOTS: usize = 7;

pub const MAX_DIMS: usize = 4;
pub const MAX_SRC: usize = 10;
pub const MAX_OP_PARAMS: usize = 64;
pub const MAX_NAME: usize = 64;
/// ggml's `TENSOR_ALIGNMENT`: what the CPU buffer type reports as its alignment.
pub const TENSOR_ALIGNMENT: usize = 32;
/// ggml's `ggml_aligned_malloc` alignment: CPU buffer bases are aligned this much.
pub const BUFFER_BASE_ALIGNMENT: usize = 64;

/// `enum ggml_status` (same values in both revisions).
pub type Status = i32;
pub const STATUS_ALLOC_FAILED: Status = -2;
pub const STATUS_FAILED: Status = -1;
pub const STATUS_SUCCESS: Status = 0;
pub const STATUS_ABORTED: Status = 1;
/// `int` results whose "no" value is 0 (counts).
pub const ZERO_I32: i32 = 0;

/// `enum ggml_log_level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum LogLevel {
    None = 0,
    Debug = 1,
    Info = 2,
    Warn = 3,
    Error = 4,
    Cont = 5,
}

/// `enum ggml_backend_buffer_usage`.
pub type BufferUsage = i32;
pub const USAGE_ANY: BufferUsage = 0;
pub const USAGE_WEIGHTS: BufferUsage = 1;
pub const USAGE_COMPUTE: BufferUsage = 2;

/// `GGML_TENSOR_FLAG_INPUT` / `OUTPUT`.
pub const TENSOR_FLAG_INPUT: i32 = 1;
pub const TENSOR_FLAG_OUTPUT: i32 = 2;

/// `enum ggml_backend_dev_type`.
pub type DevType = i32;
pub const DEV_TYPE_CPU: DevType = 0;
pub const DEV_TYPE_GPU: DevType = 1;

/// ggml-cpu's float order where it differs between revisions: defined beside the kernels that
/// follow it; each revision's value is its `Rev::CPU_ORDER` below.
pub use ggml_rs_kernels::CpuOrder;

/// Ids of the `enum ggml_op` entries the library acts on, which the two revisions number differently.
#[derive(Clone, Copy, Debug)]
pub struct OpIds {
    pub none: i32,
    pub dup: i32,
    pub add: i32,
    pub sub: i32,
    pub mul: i32,
    pub div: i32,
    pub sqr: i32,
    pub sqrt: i32,
    pub norm: i32,
    pub rms_norm: i32,
    pub mul_mat: i32,
    pub mul_mat_id: i32,
    pub scale: i32,
    pub cpy: i32,
    pub cont: i32,
    pub reshape: i32,
    pub view: i32,
    pub permute: i32,
    pub transpose: i32,
    pub get_rows: i32,
    pub soft_max: i32,
    pub rope: i32,
    pub im2col: i32,
    pub unary: i32,
    /// -1 where the revision has no such op (the 2024 lm one has no SET_ROWS, no GLU).
    pub set_rows: i32,
    pub glu: i32,
    pub flash_attn_ext: i32,
}

/// `enum ggml_unary_op` (same in both revisions for the entries used).
pub const UNARY_GELU: i32 = 8;
pub const UNARY_SILU: i32 = 10;

/// What differs between the two ggml revisions. Implemented by the zero-sized markers [`Lm`] and [`Wsp`].
pub trait Rev: 'static + Sized + Send + Sync {
    /// This revision's index among the compiled ones: its slot in every `per_rev::PerRev`.
    const SLOT: usize;
    /// Symbol prefix, e.g. `"lm_"`.
    const PREFIX: &'static str;
    /// Macro prefix used for environment variables, e.g. `"LM_"`.
    const ENV_PREFIX: &'static str;
    /// Stock name lookups compare with `strcmp` in lm and case-insensitively in wsp.
    const CASE_INSENSITIVE_NAMES: bool;
    /// wsp checks `reg->api_version` of dynamically loaded backends.
    const BACKEND_API_VERSION: i32;
    /// Number of entries of `enum ggml_type` (`GGML_TYPE_COUNT`).
    const TYPE_COUNT: i32;
    /// Type ids below `TYPE_COUNT` whose support was removed (their slots stay empty).
    const REMOVED_TYPES: &'static [i32];
    /// `ggml_nbytes` returns 0 for a tensor with a dimension <= 0 in wsp, not in lm.
    const NBYTES_ZERO_FOR_EMPTY: bool;
    /// The op ids the library acts on (views for the scheduler, everything the SIMD backend computes).
    const OPS: OpIds;
    /// ggml-cpu's float order where it differs between revisions (the SIMD backend follows it).
    const CPU_ORDER: CpuOrder;
    /// Scheduler pass 1 leaves view ops unassigned in lm; wsp assigns them too.
    const SCHED_PASS1_SKIPS_VIEWS: bool;
    /// wsp offloads a weight's op to a higher-priority backend only with `op_offload` and a host
    /// buffer; lm always may.
    const SCHED_OFFLOAD_NEEDS_HOST_BUFFER: bool;
    /// wsp's `sched_synchronize` rewinds the pipeline copy index when no graph is allocated; lm keeps it.
    const SCHED_SYNC_RESETS_COPY: bool;
    /// `graph_copy` copies each tensor's flags (2026; before, the copies start with none).
    const GRAPH_COPY_KEEPS_FLAGS: bool;
    /// ggml-alloc splits a compute buffer into chunks no larger than the buffer type's max size
    /// (2026, for iOS Metal's buffer limit, llama.cpp #6861); before, it ignores the max size.
    const ALLOC_HONOURS_MAX_SIZE: bool;
    /// `GGML_BACKEND_DEVICE_TYPE_ACCEL` (2; 3 in 2026, after the new `IGPU`).
    const DEV_TYPE_ACCEL: DevType;
    const DEV_TYPE_IGPU: Option<DevType>;
    /// Stock starts a new split when the current one already has this many inputs to copy
    /// (`GGML_SCHED_MAX_SPLIT_INPUTS`: 10, in 2026 an initial capacity of 30; b11118 dropped the
    /// check, `usize::MAX`).
    const SPLIT_INPUTS_SOFT_LIMIT: usize;
    /// Ops whose result the graph allocator may write over a dying parent's memory
    /// (ggml-alloc's `op_can_inplace`; wsp adds the `*_BACK` ops).
    const INPLACE_OPS: &'static [i32];
    /// The ops whose buffer-type alloc size may exceed `ggml_nbytes` (b11118's
    /// `ggml_op_alloc_size_may_expand`, which its `buft_get_alloc_size` asserts on; `None`: the
    /// revision has neither the function nor the check).
    const ALLOC_SIZE_MAY_EXPAND_OPS: Option<&'static [i32]> = None;
    /// `buffer_set_usage` forwards to the host's `ggml_backend_meta_buffer_set_usage` for a meta
    /// buffer (b11118; before, only multi-buffers pass the usage on).
    const META_BUFFER_SET_USAGE: bool = false;
    /// `compute_splits` records the split backend's event after every split (b11118); before,
    /// only after a split that copied inputs.
    const SCHED_EVENT_EVERY_SPLIT: bool = false;
    /// Before a split without inputs on another backend than the previous split, the scheduler
    /// waits for the previous backend (its event, or a synchronize): b11118 (the allocator may
    /// reuse memory across splits).
    const SCHED_WAIT_PREV_BACKEND: bool = false;
    /// `sched_reserve` synchronizes the backends before it splits the graph (so before any
    /// backend's `graph_optimize`), 2026 on; before, after the split.
    const SCHED_RESERVE_SYNCS_FIRST: bool = false;
    /// `tensor_set_async` / `tensor_get_async` on a backend without the async slot synchronize
    /// that backend before the synchronous transfer (2026 on; before, the transfer alone).
    const ASYNC_IO_FALLBACK_SYNCS: bool = false;
    /// `compute_splits` copies a host-resident MoE weight (the first node of the split is a
    /// MUL_MAT_ID reading its copy) only for the experts the ids use, with `tensor_set_async`
    /// (2026 on; before, the whole tensor as any input).
    const SCHED_COPY_USED_EXPERTS: bool = false;
    /// With pipeline copies (`n_copies > 1`), which inputs get their copies and a place among the
    /// allocator's first leafs: every leaf flagged INPUT, used or not, in leaf order, after the
    /// splits (0.25.3's pass 6: a batch without embeddings no longer changes the graph); before,
    /// the INPUT-flagged sources of nodes, in node order, as the splits are made.
    const SCHED_COPIES_EVERY_INPUT_LEAF: bool = false;
    /// ggml-cpu's `struct ggml_type_traits_cpu` has `from_float_to_mat` after `from_float` (and
    /// `ncols` after `nrows`): llama.rn 0.4.4's only; the others hold from_float, vec_dot,
    /// vec_dot_type, nrows.
    const TRAITS_CPU_FROM_FLOAT_TO_MAT: bool = false;
    /// The backends `load_all` looks for, in stock's order (whisper.rn 0.4.3's list; 2026 dropped
    /// kompute and added zendnn, virtgpu, hexagon and openvino). The order is the device order.
    /// What `GGML_SCHED_DEBUG=2` prints of a node, as this revision's stock does.
    const SCHED_DEBUG_NODE: SchedDebugNode = SchedDebugNode { op_desc: false, use_count: false, compute_flag: false };
    const DL_BACKEND_NAMES: &'static [&'static str] =
        &["blas", "cann", "cuda", "hip", "kompute", "metal", "rpc", "sycl", "vulkan", "opencl", "musa", "cpu"];

    /// What `buffer_i.init_tensor` (and `buffer_init_tensor`, `tensor_alloc`, `view_init`) return:
    /// `void` in lm, `enum ggml_status` in wsp.
    type InitRet: Copy + 'static;
    /// Leading fields of `struct ggml_backend_reg`: nothing in lm, `int api_version` in wsp.
    type RegHeader: Copy + 'static;
    /// Extra field of `struct ggml_cgraph` after `leafs`: nothing in lm, `int32_t * use_counts` in wsp.
    type UseCounts: Copy + 'static;

    /// The 2-D transfer slots `ggml_backend_buffer_i` gains after `get_tensor` (2026; `()` before).
    type Buffer2d: Copy + 'static;
    const BUFFER_2D_NONE: Self::Buffer2d;
    /// The async 2-D slots `ggml_backend_i` gains after `get_tensor_async` (2026; `()` before).
    type Backend2d: Copy + 'static;
    const BACKEND_2D_NONE: Self::Backend2d;
    /// `ggml_backend_i.graph_optimize`, appended in 2026 (`()` before).
    type GraphOptimize: Copy + 'static;
    const GRAPH_OPTIMIZE_NONE: Self::GraphOptimize;
    /// `ggml_cgraph.uid` (2026; `()` before).
    type GraphUid: Copy + 'static;
    const GRAPH_UID_NONE: Self::GraphUid;
    /// `ggml_backend_dev_props.device_id` (2026; `()` before) and the caps' `mmap_support` (2026:
    /// written, never read, as llama.rn 0.12.9 lacks it and its byte is padding there).
    type DeviceId: Copy + 'static;
    type CapsExtra: Copy + 'static;
    const DEVICE_ID_NONE: Self::DeviceId;
    fn caps_extra(mmap_support: bool) -> Self::CapsExtra;

    fn buffer_2d(i: &BufferI<Self>) -> Option<&Buffer2d<Self>>;
    fn backend_2d(i: &BackendI<Self>) -> Option<&Backend2d<Self>>;
    /// The backend's `graph_optimize` slot in this revision's shape (none before 2026; with the
    /// allocation-dependency parameters from b11118 on).
    fn graph_optimize(i: &BackendI<Self>) -> Option<GraphOptimizer<Self>>;
    fn set_graph_uid(g: &mut CGraph<Self>, uid: u64);

    fn init_ret(status: Status) -> Self::InitRet;
    /// `ggml_graph_view`: lm offsets the gradients and drops the visited set; wsp keeps the
    /// visited set and use counts (ggml-cpu reads them) and drops the gradients.
    fn graph_view(g: &CGraph<Self>, i0: usize, i1: usize) -> CGraph<Self>;
    fn init_status(ret: Self::InitRet) -> Status;
    fn reg_header() -> Self::RegHeader;
    fn reg_api_version(reg: &Reg<Self>) -> Option<i32>;
    /// The graph's `use_counts` array (indexed like its `visited_hash_set`), NULL where the
    /// revision has none (lm).
    fn use_counts(_g: &CGraph<Self>) -> *const i32 {
        std::ptr::null()
    }
}

/// What stock's `print_assignments` (`GGML_SCHED_DEBUG=2`) prints of a node besides its name,
/// size and backend: llama.rn 0.4.4 `ggml_op_name`; whisper.rn 0.4.3 adds `use=N`; 2026 and later
/// print `ggml_op_desc` (a GLU / UNARY node by its kind, `SWIGLU`) and `use=N,c=F`.
#[derive(Clone, Copy)]
pub struct SchedDebugNode {
    pub op_desc: bool,
    /// `use=N`: the node's entry of the graph's `use_counts`
    pub use_count: bool,
    /// `,c=N`: whether the node carries `GGML_TENSOR_FLAG_COMPUTE` (16)
    pub compute_flag: bool,
}

#[repr(C)]
pub struct Tensor<R: Rev> {
    pub type_: i32,
    /// lm: the deprecated `enum ggml_backend_type backend`; wsp: padding before `buffer`.
    pub backend_or_pad: i32,
    pub buffer: *mut Buffer<R>,
    pub ne: [i64; MAX_DIMS],
    pub nb: [usize; MAX_DIMS],
    pub op: i32,
    pub op_params: [i32; MAX_OP_PARAMS / 4],
    pub flags: i32,
    pub src: [*mut Tensor<R>; MAX_SRC],
    pub view_src: *mut Tensor<R>,
    pub view_offs: usize,
    pub data: *mut c_void,
    pub name: [c_char; MAX_NAME],
    pub extra: *mut c_void,
    pub padding: [c_char; 8],
}

impl<R: Rev> Tensor<R> {
    /// A tensor with only a type and a layout (op NONE, no data, buffer, sources, view or name):
    /// what the scheduler's own copies and views start from.
    pub fn with_layout(type_: i32, ne: [i64; MAX_DIMS], nb: [usize; MAX_DIMS]) -> Self {
        Tensor {
            type_,
            backend_or_pad: 0,
            buffer: std::ptr::null_mut(),
            ne,
            nb,
            op: R::OPS.none,
            op_params: [0; MAX_OP_PARAMS / 4],
            flags: 0,
            src: [std::ptr::null_mut(); MAX_SRC],
            view_src: std::ptr::null_mut(),
            view_offs: 0,
            data: std::ptr::null_mut(),
            name: [0; MAX_NAME],
            extra: std::ptr::null_mut(),
            padding: [0; 8],
        }
    }
}

/// A bitwise copy (every field is plain data; pointers are copied, not followed): the scheduler
/// asks backends about stand-ins of nodes as they will look after their inputs are copied.
impl<R: Rev> Clone for Tensor<R> {
    fn clone(&self) -> Self {
        Tensor {
            type_: self.type_,
            backend_or_pad: self.backend_or_pad,
            buffer: self.buffer,
            ne: self.ne,
            nb: self.nb,
            op: self.op,
            op_params: self.op_params,
            flags: self.flags,
            src: self.src,
            view_src: self.view_src,
            view_offs: self.view_offs,
            data: self.data,
            name: self.name,
            extra: self.extra,
            padding: self.padding,
        }
    }
}

#[repr(C)]
pub struct HashSet<R: Rev> {
    pub size: usize,
    pub used: *mut u32,
    pub keys: *mut *mut Tensor<R>,
}

impl<R: Rev> HashSet<R> {
    /// ggml's `ggml_hash_find`: the slot of `key` (or the free slot where it would go), by the
    /// pointer's bits past 4 and linear probing; `None` for an empty or full set.
    pub fn find(&self, key: *const Tensor<R>) -> Option<usize> {
        if self.size == 0 || self.used.is_null() || self.keys.is_null() {
            return None;
        }
        let start = ((key as usize) >> 4) % self.size;
        let mut i = start;
        loop {
            // SAFETY: i < size; `used` holds size bits and `keys` size pointers (ggml's hash set,
            // owned by the graph the caller holds).
            let (used, k) = unsafe { ((*self.used.add(i >> 5) >> (i & 31)) & 1 == 1, *self.keys.add(i)) };
            if !used || k as *const Tensor<R> == key {
                return Some(i);
            }
            i = (i + 1) % self.size;
            if i == start {
                return None;
            }
        }
    }
}

#[repr(C)]
pub struct CGraph<R: Rev> {
    pub size: i32,
    pub n_nodes: i32,
    pub n_leafs: i32,
    pub nodes: *mut *mut Tensor<R>,
    pub grads: *mut *mut Tensor<R>,
    pub grad_accs: *mut *mut Tensor<R>,
    pub leafs: *mut *mut Tensor<R>,
    pub use_counts: R::UseCounts,
    pub visited_hash_set: HashSet<R>,
    pub order: i32,
    pub uid: R::GraphUid,
}

pub type GraphPlan = *mut c_void;

// ---------------------------------------------------------------- buffer type

#[repr(C)]
pub struct BufferTypeI<R: Rev> {
    pub get_name: Option<unsafe extern "C" fn(*mut BufferType<R>) -> *const c_char>,
    pub alloc_buffer: Option<unsafe extern "C" fn(*mut BufferType<R>, usize) -> *mut Buffer<R>>,
    pub get_alignment: Option<unsafe extern "C" fn(*mut BufferType<R>) -> usize>,
    pub get_max_size: Option<unsafe extern "C" fn(*mut BufferType<R>) -> usize>,
    pub get_alloc_size: Option<unsafe extern "C" fn(*mut BufferType<R>, *const Tensor<R>) -> usize>,
    pub is_host: Option<unsafe extern "C" fn(*mut BufferType<R>) -> bool>,
}

#[repr(C)]
pub struct BufferType<R: Rev> {
    pub iface: BufferTypeI<R>,
    pub device: *mut Device<R>,
    pub context: *mut c_void,
}

// ---------------------------------------------------------------- buffer

#[repr(C)]
pub struct BufferI<R: Rev> {
    pub free_buffer: Option<unsafe extern "C" fn(*mut Buffer<R>)>,
    pub get_base: Option<unsafe extern "C" fn(*mut Buffer<R>) -> *mut c_void>,
    pub init_tensor: Option<unsafe extern "C" fn(*mut Buffer<R>, *mut Tensor<R>) -> R::InitRet>,
    pub memset_tensor: Option<unsafe extern "C" fn(*mut Buffer<R>, *mut Tensor<R>, u8, usize, usize)>,
    pub set_tensor: Option<unsafe extern "C" fn(*mut Buffer<R>, *mut Tensor<R>, *const c_void, usize, usize)>,
    pub get_tensor: Option<unsafe extern "C" fn(*mut Buffer<R>, *const Tensor<R>, *mut c_void, usize, usize)>,
    pub tensor_2d: R::Buffer2d,
    pub cpy_tensor: Option<unsafe extern "C" fn(*mut Buffer<R>, *const Tensor<R>, *mut Tensor<R>) -> bool>,
    pub clear: Option<unsafe extern "C" fn(*mut Buffer<R>, u8)>,
    pub reset: Option<unsafe extern "C" fn(*mut Buffer<R>)>,
}

impl<R: Rev> BufferI<R> {
    pub const EMPTY: Self = BufferI {
        free_buffer: None,
        get_base: None,
        init_tensor: None,
        memset_tensor: None,
        set_tensor: None,
        get_tensor: None,
        tensor_2d: R::BUFFER_2D_NONE,
        cpy_tensor: None,
        clear: None,
        reset: None,
    };
}

#[repr(C)]
pub struct Buffer<R: Rev> {
    pub iface: BufferI<R>,
    pub buft: *mut BufferType<R>,
    pub context: *mut c_void,
    pub size: usize,
    pub usage: BufferUsage,
}

// ---------------------------------------------------------------- backend (stream)

#[repr(C)]
pub struct BackendI<R: Rev> {
    pub get_name: Option<unsafe extern "C" fn(*mut Backend<R>) -> *const c_char>,
    pub free: Option<unsafe extern "C" fn(*mut Backend<R>)>,
    pub set_tensor_async: Option<unsafe extern "C" fn(*mut Backend<R>, *mut Tensor<R>, *const c_void, usize, usize)>,
    pub get_tensor_async: Option<unsafe extern "C" fn(*mut Backend<R>, *const Tensor<R>, *mut c_void, usize, usize)>,
    pub tensor_2d_async: R::Backend2d,
    pub cpy_tensor_async: Option<unsafe extern "C" fn(*mut Backend<R>, *mut Backend<R>, *const Tensor<R>, *mut Tensor<R>) -> bool>,
    pub synchronize: Option<unsafe extern "C" fn(*mut Backend<R>)>,
    pub graph_plan_create: Option<unsafe extern "C" fn(*mut Backend<R>, *const CGraph<R>) -> GraphPlan>,
    pub graph_plan_free: Option<unsafe extern "C" fn(*mut Backend<R>, GraphPlan)>,
    pub graph_plan_update: Option<unsafe extern "C" fn(*mut Backend<R>, GraphPlan, *const CGraph<R>)>,
    pub graph_plan_compute: Option<unsafe extern "C" fn(*mut Backend<R>, GraphPlan) -> Status>,
    pub graph_compute: Option<unsafe extern "C" fn(*mut Backend<R>, *mut CGraph<R>) -> Status>,
    pub event_record: Option<unsafe extern "C" fn(*mut Backend<R>, *mut Event<R>)>,
    pub event_wait: Option<unsafe extern "C" fn(*mut Backend<R>, *mut Event<R>)>,
    pub graph_optimize: R::GraphOptimize,
}

/// `set_tensor_2d(buffer, tensor, data, offset, size, n_copies, stride_tensor, stride_data)`.
pub type Set2dFn<R> = unsafe extern "C" fn(*mut Buffer<R>, *mut Tensor<R>, *const c_void, usize, usize, usize, usize, usize);
pub type Get2dFn<R> = unsafe extern "C" fn(*mut Buffer<R>, *const Tensor<R>, *mut c_void, usize, usize, usize, usize, usize);
pub type Set2dAsyncFn<R> = unsafe extern "C" fn(*mut Backend<R>, *mut Tensor<R>, *const c_void, usize, usize, usize, usize, usize);
pub type Get2dAsyncFn<R> = unsafe extern "C" fn(*mut Backend<R>, *const Tensor<R>, *mut c_void, usize, usize, usize, usize, usize);
pub type GraphOptimizeFn<R> = unsafe extern "C" fn(*mut Backend<R>, *mut CGraph<R>);
/// b11118's `graph_optimize(backend, cgraph, params)`: the backend may ask, through `params`, to
/// keep tensors allocated until a later node (it runs parts of the graph out of order).
pub type GraphOptimizeParamsFn<R> = unsafe extern "C" fn(*mut Backend<R>, *mut CGraph<R>, *mut GraphOptimizeParams<R>);

/// `struct ggml_backend_graph_optimize_params` (b11118).
#[repr(C)]
pub struct GraphOptimizeParams<R: Rev> {
    /// `add_alloc_dep(user_data, tensor, until)`: keep `tensor` allocated until `until` (a node of
    /// the same graph) has been computed; the longest lifetime asked for applies.
    pub add_alloc_dep: Option<unsafe extern "C" fn(*mut c_void, *mut Tensor<R>, *mut Tensor<R>)>,
    pub user_data: *mut c_void,
}

/// A backend's `graph_optimize` as its revision declares it.
pub enum GraphOptimizer<R: Rev> {
    /// 2026 (ggml v0.20.0): `graph_optimize(backend, cgraph)`.
    Plain(GraphOptimizeFn<R>),
    /// b11118: `graph_optimize(backend, cgraph, params)`.
    WithParams(GraphOptimizeParamsFn<R>),
}

/// The allocation dependencies backends add while the scheduler optimizes its splits (b11118):
/// per `until` node, in the order first asked, the tensors to keep alive until it has run.
pub struct AllocDeps<R: Rev> {
    pub until: Vec<(*mut Tensor<R>, Vec<*mut Tensor<R>>)>,
    /// calls with a NULL tensor that were dropped
    pub rejected: usize,
    index: std::collections::HashMap<usize, usize>,
}

impl<R: Rev> Default for AllocDeps<R> {
    fn default() -> Self {
        AllocDeps { until: Vec::new(), rejected: 0, index: std::collections::HashMap::new() }
    }
}

impl<R: Rev> AllocDeps<R> {
    /// Stock's `add_alloc_dep`: `tensor` joins `until`'s list once.
    pub fn add(&mut self, tensor: *mut Tensor<R>, until: *mut Tensor<R>) {
        let next = self.until.len();
        let i = *self.index.entry(until as usize).or_insert(next);
        if i == next {
            self.until.push((until, Vec::new()));
        }
        let keep = &mut self.until[i].1;
        if !keep.contains(&tensor) {
            keep.push(tensor);
        }
    }
    pub fn clear(&mut self) {
        self.until.clear();
        self.rejected = 0;
        self.index.clear();
    }
    pub fn is_empty(&self) -> bool {
        self.until.is_empty()
    }
    /// The tensors to keep until node `node` has run.
    pub fn of(&self, node: *mut Tensor<R>) -> Option<&[*mut Tensor<R>]> {
        self.index.get(&(node as usize)).map(|&i| self.until[i].1.as_slice())
    }
    /// Dependency nodes stock adds to the allocator's graph: one per `MAX_SRC` kept tensors.
    pub fn n_nodes(&self) -> usize {
        self.until.iter().map(|(_, keep)| keep.len().div_ceil(MAX_SRC)).sum()
    }
}

/// The two slots the 2026 revision inserts into `ggml_backend_buffer_i` after `get_tensor`.
#[repr(C)]
pub struct Buffer2d<R: Rev> {
    pub set_tensor_2d: Option<Set2dFn<R>>,
    pub get_tensor_2d: Option<Get2dFn<R>>,
}

/// The two slots the 2026 revision inserts into `ggml_backend_i` after `get_tensor_async`.
#[repr(C)]
pub struct Backend2d<R: Rev> {
    pub set_tensor_2d_async: Option<Set2dAsyncFn<R>>,
    pub get_tensor_2d_async: Option<Get2dAsyncFn<R>>,
}

/// `ggml_guid`: 16 bytes; `ggml_guid_t` points at one.
pub type Guid = [u8; 16];

#[repr(C)]
pub struct Backend<R: Rev> {
    pub guid: *mut Guid,
    pub iface: BackendI<R>,
    pub device: *mut Device<R>,
    pub context: *mut c_void,
}

#[repr(C)]
pub struct Event<R: Rev> {
    pub device: *mut Device<R>,
    pub context: *mut c_void,
}

// ---------------------------------------------------------------- device

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct DevCaps {
    pub async_: bool,
    pub host_buffer: bool,
    pub buffer_from_host_ptr: bool,
    pub events: bool,
}

#[repr(C)]
pub struct DevProps<R: Rev> {
    pub name: *const c_char,
    pub description: *const c_char,
    pub memory_free: usize,
    pub memory_total: usize,
    pub type_: DevType,
    pub device_id: R::DeviceId,
    pub caps: DevCaps,
    pub caps_extra: R::CapsExtra,
}

#[repr(C)]
pub struct DeviceI<R: Rev> {
    pub get_name: Option<unsafe extern "C" fn(*mut Device<R>) -> *const c_char>,
    pub get_description: Option<unsafe extern "C" fn(*mut Device<R>) -> *const c_char>,
    pub get_memory: Option<unsafe extern "C" fn(*mut Device<R>, *mut usize, *mut usize)>,
    pub get_type: Option<unsafe extern "C" fn(*mut Device<R>) -> DevType>,
    pub get_props: Option<unsafe extern "C" fn(*mut Device<R>, *mut DevProps<R>)>,
    pub init_backend: Option<unsafe extern "C" fn(*mut Device<R>, *const c_char) -> *mut Backend<R>>,
    pub get_buffer_type: Option<unsafe extern "C" fn(*mut Device<R>) -> *mut BufferType<R>>,
    pub get_host_buffer_type: Option<unsafe extern "C" fn(*mut Device<R>) -> *mut BufferType<R>>,
    pub buffer_from_host_ptr: Option<unsafe extern "C" fn(*mut Device<R>, *mut c_void, usize, usize) -> *mut Buffer<R>>,
    pub supports_op: Option<unsafe extern "C" fn(*mut Device<R>, *const Tensor<R>) -> bool>,
    pub supports_buft: Option<unsafe extern "C" fn(*mut Device<R>, *mut BufferType<R>) -> bool>,
    pub offload_op: Option<unsafe extern "C" fn(*mut Device<R>, *const Tensor<R>) -> bool>,
    pub event_new: Option<unsafe extern "C" fn(*mut Device<R>) -> *mut Event<R>>,
    pub event_free: Option<unsafe extern "C" fn(*mut Device<R>, *mut Event<R>)>,
    pub event_synchronize: Option<unsafe extern "C" fn(*mut Device<R>, *mut Event<R>)>,
}

#[repr(C)]
pub struct Device<R: Rev> {
    pub iface: DeviceI<R>,
    pub reg: *mut Reg<R>,
    pub context: *mut c_void,
}

// ---------------------------------------------------------------- registry entry (reg)

#[repr(C)]
pub struct RegI<R: Rev> {
    pub get_name: Option<unsafe extern "C" fn(*mut Reg<R>) -> *const c_char>,
    pub get_device_count: Option<unsafe extern "C" fn(*mut Reg<R>) -> usize>,
    pub get_device: Option<unsafe extern "C" fn(*mut Reg<R>, usize) -> *mut Device<R>>,
    pub get_proc_address: Option<unsafe extern "C" fn(*mut Reg<R>, *const c_char) -> *mut c_void>,
}

#[repr(C)]
pub struct Reg<R: Rev> {
    pub header: R::RegHeader,
    pub iface: RegI<R>,
    pub context: *mut c_void,
}

/// `struct ggml_backend_graph_copy`, returned by value.
#[repr(C)]
pub struct GraphCopy<R: Rev> {
    pub buffer: *mut Buffer<R>,
    pub ctx_allocated: *mut c_void,
    pub ctx_unallocated: *mut c_void,
    pub graph: *mut CGraph<R>,
}

/// `ggml_backend_sched_eval_callback`.
pub type SchedEvalCallback<R> = Option<unsafe extern "C" fn(*mut Tensor<R>, bool, *mut c_void) -> bool>;
/// `ggml_backend_eval_callback` of `compare_graph_backend`.
pub type CompareCallback<R> = Option<unsafe extern "C" fn(i32, *mut Tensor<R>, *mut Tensor<R>, *mut c_void) -> bool>;
pub mod vtable;

/// The `Rev` items of the layouts before 2026, which have none of the 2026 slots and fields.
macro_rules! layout_before_2026 {
    () => {
        const SPLIT_INPUTS_SOFT_LIMIT: usize = 10;
        const DEV_TYPE_ACCEL: $crate::abi::DevType = 2;
        const GRAPH_COPY_KEEPS_FLAGS: bool = false;
        const ALLOC_HONOURS_MAX_SIZE: bool = false;
        const CPU_ORDER: $crate::abi::CpuOrder =
            $crate::abi::CpuOrder::BEFORE_2026;
        const DEV_TYPE_IGPU: Option<$crate::abi::DevType> = None;
        type Buffer2d = ();
        const BUFFER_2D_NONE: () = ();
        type Backend2d = ();
        const BACKEND_2D_NONE: () = ();
        type GraphOptimize = ();
        const GRAPH_OPTIMIZE_NONE: () = ();
        type GraphUid = ();
        const GRAPH_UID_NONE: () = ();
        type DeviceId = ();
        type CapsExtra = ();
        const DEVICE_ID_NONE: () = ();
        fn caps_extra(_mmap_support: bool) {}
        fn buffer_2d(_i: &$crate::abi::BufferI<Self>) -> Option<&$crate::abi::Buffer2d<Self>> {
            None
        }
        fn backend_2d(_i: &$crate::abi::BackendI<Self>) -> Option<&$crate::abi::Backend2d<Self>> {
            None
        }
        fn graph_optimize(_i: &$crate::abi::BackendI<Self>) -> Option<$crate::abi::GraphOptimizer<Self>> {
            None
        }
        fn set_graph_uid(_g: &mut $crate::abi::CGraph<Self>, _uid: u64) {}
    };
}
pub(crate) use layout_before_2026;

/// `derive(Clone, Copy)` would require `R: Copy`; these structs are plain pointers whatever `R` is.
macro_rules! impl_copy {
    ($($t:ident),*) => {$(
        impl<R: Rev> Clone for $t<R> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<R: Rev> Copy for $t<R> {}
    )*};
}
impl_copy!(HashSet, CGraph, BufferTypeI, BufferI, BackendI, DeviceI, RegI, Buffer2d, Backend2d, DevProps, GraphOptimizer);
