//! The 2026 ggml revision: cui-llama.rn 1.12.2 and llama.rn 0.12.9 (`lm_`, llama.cpp b10375 /
//! b10256) and whisper.rn 0.7.4 (`wsp_`, whisper.cpp 1.9.3). The three packages share one
//! `ggml-backend-impl.h` and, but for `mmap_support`, one `ggml-backend.h`; their facts differ only
//! in the prefix, so both markers are stamped from one list. Checked against the packages' own
//! headers by `tests_c/layout.c -DLAYOUT_REV2026` + `tests/layout.rs`.
//!
//! llama.rn 0.12.9's `ggml_backend_dev_caps` has no `mmap_support`: it sits in what is padding
//! there (`dev_props` is 56 bytes in all three), so one layout serves both lm packages, as long as
//! the library writes that byte (for its own devices) and never reads it.

use super::{Backend2d, BackendI, Buffer2d, BufferI, CGraph, CpuOrder, GraphOptimizeFn, OpIds, Reg, Rev, Status};
use std::ffi::c_char;

/// llama.rn 0.12.9 / cui-llama.rn 1.12.2 (`lm_`, cargo feature `lm-2026`).
pub struct Lm26;
/// whisper.rn 0.7.4 (`wsp_`, cargo feature `wsp-2026`).
pub struct Wsp26;
/// Upstream ggml v0.20.0 (llama.cpp as vendored by llama-cpp-python 0.3.35): cui-llama.rn 1.12.2's
/// backend ABI without the prefix (cargo feature `ggml-2026`, headers include/ggml-2026). Its
/// `ggml-backend.cpp`, `-reg.cpp`, `-impl.h` and `ggml-backend.h` equal cui-llama.rn's once
/// `lm_` / `LM_` is removed, so it is stamped from the same facts; only the prefix differs.
pub struct Ggml26;

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
};

macro_rules! rev_2026 {
    ($marker:ident, $slot:expr, $prefix:expr, $env:expr) => {
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
            const SPLIT_INPUTS_SOFT_LIMIT: usize = 30;
            const DEV_TYPE_ACCEL: super::DevType = 3;
            const GRAPH_COPY_KEEPS_FLAGS: bool = true;
            const ALLOC_HONOURS_MAX_SIZE: bool = true;
            // ggml-cpu/ops.cpp: norm_f32 calls ggml_vec_sum_f32 + ggml_vec_cvar_f32, and ROPE's
            // normal mode goes through rotate_pairs<float>, vectorized in place too
            const CPU_ORDER: CpuOrder = CpuOrder { norm_vec_sums: true, rope_rotate_pairs: true, q6k_offset_per_subblock: true };
            const DEV_TYPE_IGPU: Option<super::DevType> = Some(2);
            // ggml_op_can_inplace: FILL, SCALE, DIAG_MASK_ZERO, DIAG_MASK_INF, ADD, ADD_ID, ADD1, SUB,
            // MUL, DIV, SQR, SQRT, LOG, UNARY, ROPE, ROPE_BACK, SILU_BACK, RMS_NORM, RMS_NORM_BACK,
            // SOFT_MAX, SOFT_MAX_BACK
            const INPLACE_OPS: &'static [i32] = &[73, 32, 45, 44, 2, 3, 4, 6, 7, 8, 9, 10, 11, 91, 48, 49, 23, 25, 26, 46, 47];

            type InitRet = Status;
            type RegHeader = i32;
            type UseCounts = *mut i32;
            type Buffer2d = Buffer2d<Self>;
            const BUFFER_2D_NONE: Buffer2d<Self> = Buffer2d { set_tensor_2d: None, get_tensor_2d: None };
            type Backend2d = Backend2d<Self>;
            const BACKEND_2D_NONE: Backend2d<Self> = Backend2d { set_tensor_2d_async: None, get_tensor_2d_async: None };
            type GraphOptimize = Option<GraphOptimizeFn<Self>>;
            const GRAPH_OPTIMIZE_NONE: Option<GraphOptimizeFn<Self>> = None;
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
            fn graph_optimize(i: &BackendI<Self>) -> Option<GraphOptimizeFn<Self>> {
                i.graph_optimize
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
            fn reg_header() -> i32 {
                Self::BACKEND_API_VERSION
            }
            fn reg_api_version(reg: &Reg<Self>) -> Option<i32> {
                Some(reg.header)
            }
        }
    };
}

rev_2026!(Lm26, 2, "lm_", "LM_");
rev_2026!(Wsp26, 3, "wsp_", "WSP_");
rev_2026!(Ggml26, 4, "", "");
