//! The 2026 ggml revision: cui-llama.rn 1.12.2 and llama.rn 0.12.9 (`lm_`, llama.cpp b10375 /
//! b10256) and whisper.rn 0.7.4 (`wsp_`, whisper.cpp 1.9.3). The three packages share one
//! `ggml-backend-impl.h` and, but for `mmap_support`, one `ggml-backend.h`; their facts differ only
//! in the prefix, so both markers are stamped from one list. Checked against the packages' own
//! headers by `tests_c/layout.c -DLAYOUT_REV2026` + `tests/layout.rs`.
//!
//! llama.rn 0.12.9's `ggml_backend_dev_caps` has no `mmap_support`: it sits in what is padding
//! there (`dev_props` is 56 bytes in all three), so one layout serves both lm packages, as long as
//! the library writes that byte (for its own devices) and never reads it.

use super::{Backend2d, BackendI, Buffer2d, BufferI, CGraph, CpuOrder, GraphOptimizeFn, GraphOptimizeParamsFn, GraphOptimizer, OpIds, Reg, Rev, Status};
use std::ffi::c_char;

/// llama.rn 0.12.9 / cui-llama.rn 1.12.2 (`lm_`, cargo feature `lm-2026`).
pub struct Lm26;
/// whisper.rn 0.7.4 (`wsp_`, cargo feature `wsp-2026`).
pub struct Wsp26;
/// llama.rn 0.13.0-rc.5 (llama.cpp b11118, unprefixed, cargo feature `ggml-b11118`, headers
/// include/ggml-b11118): v0.20.0's ABI and facts but for the items of `facts_b11118!` below.
/// `GGML_BACKEND_API_VERSION` is still 2; `ggml-backend.h`, `ggml-alloc.h`, the op and type enums
/// and every struct layout are v0.20.0's (checked with diff against the package's headers).
pub struct GgmlB11118;
/// Upstream ggml v0.20.0 (llama.cpp as vendored by llama-cpp-python 0.3.35): cui-llama.rn 1.12.2's
/// backend ABI without the prefix (cargo feature `ggml-2026`, headers include/ggml-2026). Its
/// `ggml-backend.cpp`, `-reg.cpp`, `-impl.h` and `ggml-backend.h` equal cui-llama.rn's once
/// `lm_` / `LM_` is removed, so it is stamped from the same facts; only the prefix differs.
pub struct Ggml26;
/// Upstream ggml 0.25.3 (llama.cpp 0c1e57098 as vendored by llama-cpp-python 0.3.36; cargo
/// feature `ggml-0253`, headers include/ggml-0.25.3). Against b11118, `ggml-backend.h`,
/// `ggml-backend-impl.h`, `ggml-backend-reg.cpp`, `ggml-alloc.{h,c}`, `ggml.h` and `ggml-rpc.h`
/// (protocol 7.0.0) are the same files; `ggml-backend.cpp` differs in one scheduler pass
/// (`facts_0_25_3!`). Its other changes are in the host's files (ggml.c checks a new tensor's
/// element count and that `ggml_set_param` gets a leaf; ggml-backend-meta.cpp).
pub struct Ggml0253;

/// `enum ggml_op` ids of the 2026 revision (102 entries; MUL_MAT is 29).
const OPS_2026: OpIds = OpIds {
    none: 0,
    dup: 1,
    add: 2,
    sub: 6,
    mul: 7,
    div: 8,
    sqr: 9,
    sqrt: 10,
    norm: 24,
    rms_norm: 25,
    mul_mat: 29,
    mul_mat_id: 30,
    scale: 32,
    cpy: 34,
    cont: 35,
    reshape: 36,
    view: 37,
    permute: 38,
    transpose: 39,
    get_rows: 40,
    soft_max: 46,
    rope: 48,
    im2col: 52,
    unary: 91,
    set_rows: 42,
    glu: 100,
    flash_attn_ext: 74,
};

/// The items where ggml v0.20.0 (cui-llama.rn 1.12.2, llama.rn 0.12.9, whisper.rn 0.7.4,
/// llama-cpp-python 0.3.35) and llama.cpp b11118 (llama.rn 0.13.0-rc.5) differ.
macro_rules! facts_v0_20_0 {
    () => {
        const SPLIT_INPUTS_SOFT_LIMIT: usize = 30;
        // ggml_op_can_inplace: FILL, SCALE, DIAG_MASK_ZERO, DIAG_MASK_INF, ADD, ADD_ID, ADD1, SUB,
        // MUL, DIV, SQR, SQRT, LOG, UNARY, ROPE, ROPE_BACK, SILU_BACK, RMS_NORM, RMS_NORM_BACK,
        // SOFT_MAX, SOFT_MAX_BACK
        const INPLACE_OPS: &'static [i32] = &[73, 32, 45, 44, 2, 3, 4, 6, 7, 8, 9, 10, 11, 91, 48, 49, 23, 25, 26, 46, 47];
        type GraphOptimize = Option<GraphOptimizeFn<Self>>;
        const GRAPH_OPTIMIZE_NONE: Option<GraphOptimizeFn<Self>> = None;
        fn graph_optimize(i: &BackendI<Self>) -> Option<GraphOptimizer<Self>> {
            i.graph_optimize.map(GraphOptimizer::Plain)
        }
    };
}

/// b11118 against v0.20.0 (diff of ggml-backend-impl.h, ggml-backend.cpp, ggml-backend-reg.cpp,
/// ggml-alloc.c; ggml-backend.h and ggml-alloc.h are unchanged):
/// - `ggml_backend_i.graph_optimize` takes a third parameter, `ggml_backend_graph_optimize_params *`,
///   through which a backend adds allocation dependencies; the scheduler optimizes every split
///   first, then adds one dependency node per `GGML_MAX_SRC` kept tensors after the `until` node in
///   the allocator's graph (`AllocDeps`);
/// - no new split when a split's inputs reach the input list's capacity (`SPLIT_INPUTS_SOFT_LIMIT`);
/// - ggml-alloc may compute CLAMP (50) in place;
/// - `ggml_op_alloc_size_may_expand` (FLASH_ATTN_EXT, MUL_MAT, MUL_MAT_ID, CUMSUM, ARGSORT, TOP_K)
///   is defined by ggml-backend.cpp, and `buft_get_alloc_size` asserts on a larger size for other
///   ops of unquantized, non-empty tensors;
/// - `buffer_set_usage` passes the usage on to a meta buffer's parts (host's
///   `ggml_backend_meta_buffer_set_usage`);
/// - `compute_splits` waits for the previous backend before a split without inputs on another
///   backend, and records each split's event whether or not it had inputs.
///
/// Not facts of the layer's ABI: the capacity-growth messages went from WARN to DEBUG (ours logs
/// none), `sched_alloc_graph` returns false when the reserve fails (ours always did), the
/// MUL_MAT_ID expert copy skips an empty ids tensor (ours does in every 2026 revision), and `load_best`
/// skips an unreadable directory / current path (ours always did).
macro_rules! facts_b11118 {
    () => {
        const SPLIT_INPUTS_SOFT_LIMIT: usize = usize::MAX;
        // v0.20.0's list with CLAMP (50) after RMS_NORM_BACK, in switch order
        const INPLACE_OPS: &'static [i32] =
            &[73, 32, 45, 44, 2, 3, 4, 6, 7, 8, 9, 10, 11, 91, 48, 49, 23, 25, 26, 50, 46, 47];
        type GraphOptimize = Option<GraphOptimizeParamsFn<Self>>;
        const GRAPH_OPTIMIZE_NONE: Option<GraphOptimizeParamsFn<Self>> = None;
        fn graph_optimize(i: &BackendI<Self>) -> Option<GraphOptimizer<Self>> {
            i.graph_optimize.map(GraphOptimizer::WithParams)
        }
        // FLASH_ATTN_EXT, MUL_MAT, MUL_MAT_ID, CUMSUM, ARGSORT, TOP_K
        const ALLOC_SIZE_MAY_EXPAND_OPS: Option<&'static [i32]> = Some(&[74, 29, 30, 16, 69, 70]);
        const META_BUFFER_SET_USAGE: bool = true;
        const SCHED_EVENT_EVERY_SPLIT: bool = true;
        const SCHED_WAIT_PREV_BACKEND: bool = true;
    };
}

/// 0.25.3 against b11118 (diff of ggml-backend.cpp): with pipeline copies, the scheduler no longer
/// collects the INPUT-flagged sources of nodes while it splits the graph, but, in a new last pass,
/// every INPUT-flagged leaf of the graph, whether a node uses it or not.
macro_rules! facts_0_25_3 {
    () => {
        facts_b11118!();
        const SCHED_COPIES_EVERY_INPUT_LEAF: bool = true;
    };
}

macro_rules! rev_2026 {
    ($marker:ident, $slot:expr, $prefix:expr, $env:expr, $facts:ident) => {
        impl Rev for $marker {
            const SLOT: usize = $slot;
            const PREFIX: &'static str = $prefix;
            const ENV_PREFIX: &'static str = $env;
            // ggml-backend-reg.cpp compares names case-insensitively in all three packages
            const CASE_INSENSITIVE_NAMES: bool = true;
            const BACKEND_API_VERSION: i32 = 2;
            const TYPE_COUNT: i32 = 43;
            const REMOVED_TYPES: &'static [i32] = &[4, 5, 31, 32, 33, 36, 37, 38];
            const NBYTES_ZERO_FOR_EMPTY: bool = true;
            const OPS: OpIds = OPS_2026;
            const SCHED_PASS1_SKIPS_VIEWS: bool = false;
            const SCHED_OFFLOAD_NEEDS_HOST_BUFFER: bool = true;
            const SCHED_SYNC_RESETS_COPY: bool = true;
            const SCHED_RESERVE_SYNCS_FIRST: bool = true;
            const ASYNC_IO_FALLBACK_SYNCS: bool = true;
            const SCHED_COPY_USED_EXPERTS: bool = true;
            const DEV_TYPE_ACCEL: super::DevType = 3;
            const GRAPH_COPY_KEEPS_FLAGS: bool = true;
            const ALLOC_HONOURS_MAX_SIZE: bool = true;
            // ggml-cpu/ops.cpp: norm_f32 calls ggml_vec_sum_f32 + ggml_vec_cvar_f32, and ROPE's
            // normal mode goes through rotate_pairs<float>, vectorized in place too
            const CPU_ORDER: CpuOrder = CpuOrder { norm_vec_sums: true, rope_rotate_pairs: true, q6k_offset_per_subblock: true };
            const DEV_TYPE_IGPU: Option<super::DevType> = Some(2);
            const SCHED_DEBUG_NODE: super::SchedDebugNode = super::SchedDebugNode { op_desc: true, use_count: true, compute_flag: true };
            const DL_BACKEND_NAMES: &'static [&'static str] = &[
                "blas", "zendnn", "cann", "cuda", "hip", "metal", "rpc", "sycl", "vulkan", "virtgpu", "opencl", "hexagon",
                "musa", "openvino", "cpu",
            ];

            $facts!();

            type InitRet = Status;
            type RegHeader = i32;
            type UseCounts = *mut i32;
            type Buffer2d = Buffer2d<Self>;
            const BUFFER_2D_NONE: Buffer2d<Self> = Buffer2d { set_tensor_2d: None, get_tensor_2d: None };
            type Backend2d = Backend2d<Self>;
            const BACKEND_2D_NONE: Backend2d<Self> = Backend2d { set_tensor_2d_async: None, get_tensor_2d_async: None };
            type GraphUid = u64;
            const GRAPH_UID_NONE: u64 = 0;
            type DeviceId = *const c_char;
            type CapsExtra = bool;
            const DEVICE_ID_NONE: *const c_char = std::ptr::null();
            fn caps_extra(mmap_support: bool) -> bool {
                mmap_support
            }
            fn buffer_2d(i: &BufferI<Self>) -> Option<&Buffer2d<Self>> {
                Some(&i.tensor_2d)
            }
            fn backend_2d(i: &BackendI<Self>) -> Option<&Backend2d<Self>> {
                Some(&i.tensor_2d_async)
            }
            fn set_graph_uid(g: &mut CGraph<Self>, uid: u64) {
                g.uid = uid;
            }

            fn init_ret(status: Status) -> Status {
                status
            }
            /// `ggml_graph_view`: the parent's use counts and visited set, no gradients, uid 0.
            fn graph_view(g: &CGraph<Self>, i0: usize, i1: usize) -> CGraph<Self> {
                CGraph {
                    size: 0,
                    n_nodes: (i1 - i0) as i32,
                    n_leafs: 0,
                    nodes: g.nodes.wrapping_add(i0),
                    grads: std::ptr::null_mut(),
                    grad_accs: std::ptr::null_mut(),
                    leafs: std::ptr::null_mut(),
                    use_counts: g.use_counts,
                    visited_hash_set: g.visited_hash_set,
                    order: g.order,
                    uid: 0,
                }
            }
            fn init_status(ret: Status) -> Status {
                ret
            }
            fn use_counts(g: &CGraph<Self>) -> *const i32 {
                g.use_counts
            }
            fn reg_header() -> i32 {
                Self::BACKEND_API_VERSION
            }
            fn reg_api_version(reg: &Reg<Self>) -> Option<i32> {
                Some(reg.header)
            }
        }
    };
}

rev_2026!(Lm26, 2, "lm_", "LM_", facts_v0_20_0);
rev_2026!(Wsp26, 3, "wsp_", "WSP_", facts_v0_20_0);
rev_2026!(Ggml26, 4, "", "", facts_v0_20_0);
rev_2026!(GgmlB11118, 5, "", "", facts_b11118);
rev_2026!(Ggml0253, 6, "", "", facts_0_25_3);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{AllocDeps, Tensor, MAX_SRC};

    #[test]
    fn b11118_differs_from_v0_20_0_only_in_its_facts() {
        assert_eq!(Ggml26::SPLIT_INPUTS_SOFT_LIMIT, 30);
        assert_eq!(GgmlB11118::SPLIT_INPUTS_SOFT_LIMIT, usize::MAX);
        assert!(!Ggml26::INPLACE_OPS.contains(&50) && GgmlB11118::INPLACE_OPS.contains(&50));
        let without_clamp: Vec<i32> = GgmlB11118::INPLACE_OPS.iter().copied().filter(|&op| op != 50).collect();
        assert_eq!(without_clamp, Ggml26::INPLACE_OPS);
        assert_eq!(Ggml26::ALLOC_SIZE_MAY_EXPAND_OPS, None);
        assert_eq!(GgmlB11118::ALLOC_SIZE_MAY_EXPAND_OPS.map(<[i32]>::len), Some(6));
        const { assert!(GgmlB11118::META_BUFFER_SET_USAGE && GgmlB11118::SCHED_EVENT_EVERY_SPLIT && GgmlB11118::SCHED_WAIT_PREV_BACKEND) };
        const { assert!(!Lm26::META_BUFFER_SET_USAGE && !Wsp26::SCHED_EVENT_EVERY_SPLIT && !Ggml26::SCHED_WAIT_PREV_BACKEND) };
        assert_eq!((GgmlB11118::BACKEND_API_VERSION, GgmlB11118::TYPE_COUNT), (Ggml26::BACKEND_API_VERSION, Ggml26::TYPE_COUNT));
    }

    #[test]
    fn v0_25_3_is_b11118_but_for_its_input_pass() {
        const { assert!(Ggml0253::SCHED_COPIES_EVERY_INPUT_LEAF && !GgmlB11118::SCHED_COPIES_EVERY_INPUT_LEAF) };
        assert_eq!(Ggml0253::INPLACE_OPS, GgmlB11118::INPLACE_OPS);
        assert_eq!(Ggml0253::SPLIT_INPUTS_SOFT_LIMIT, GgmlB11118::SPLIT_INPUTS_SOFT_LIMIT);
        assert_eq!(Ggml0253::ALLOC_SIZE_MAY_EXPAND_OPS, GgmlB11118::ALLOC_SIZE_MAY_EXPAND_OPS);
        const { assert!(Ggml0253::META_BUFFER_SET_USAGE && Ggml0253::SCHED_EVENT_EVERY_SPLIT && Ggml0253::SCHED_WAIT_PREV_BACKEND) };
        assert_ne!(Ggml0253::SLOT, GgmlB11118::SLOT);
    }

    #[test]
    fn alloc_deps_keep_each_tensor_once_per_until_node() {
        let mut ts: Vec<Tensor<GgmlB11118>> = (0..14).map(|_| Tensor::with_layout(0, [1; 4], [4; 4])).collect();
        let p: Vec<*mut Tensor<GgmlB11118>> = ts.iter_mut().map(|t| t as *mut _).collect();
        let mut deps = AllocDeps::<GgmlB11118>::default();
        assert!(deps.is_empty() && deps.n_nodes() == 0);
        for &t in &p[1..13] {
            deps.add(t, p[0]);
        }
        deps.add(p[1], p[0]); // again: kept once
        deps.add(p[2], p[13]);
        assert_eq!(deps.of(p[0]).map(<[_]>::len), Some(12));
        assert_eq!(deps.of(p[13]), Some(&[p[2]][..]));
        assert_eq!(deps.of(p[5]), None);
        // 12 kept tensors: ceil(12 / MAX_SRC) nodes, + 1 for p[13]
        assert_eq!(deps.n_nodes(), 12usize.div_ceil(MAX_SRC) + 1);
        deps.clear();
        assert!(deps.is_empty() && deps.of(p[0]).is_none());
    }
}
