//! The 2026 layout: what every revision from 2026 on shares (the slots and fields ggml added in
//! 2026, the op ids, the scheduler's and registry's 2026 behaviour), stamped into each marker's
//! `impl Rev` by `rev_2026!`. The revisions of this layout differ only in a few items, each
//! revision's facts' file naming them (rev2026.rs: the 2026 packages and v0.20.0's facts; ggml26.rs,
//! b11118.rs, g0253.rs). Checked against the packages' own headers by `tests_c/layout.c
//! -DLAYOUT_REV2026` + `tests/layout.rs`.

use super::OpIds;

/// `enum ggml_op` ids of the 2026 revision (102 entries; MUL_MAT is 29).
pub const OPS_2026: OpIds = OpIds {
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

/// `impl Rev` for a marker of the 2026 layout, with the items where its revision differs from the
/// others of that layout (`$facts`: a macro of those items, e.g. `facts_v0_20_0`).
macro_rules! rev_2026 {
    ($marker:ident, $facts:ident) => {
        impl $crate::abi::Rev for $marker {
            // ggml-backend-reg.cpp compares names case-insensitively in all three packages
            const CASE_INSENSITIVE_NAMES: bool = true;
            const BACKEND_API_VERSION: i32 = 2;
            const TYPE_COUNT: i32 = 43;
            const REMOVED_TYPES: &'static [i32] = &[4, 5, 31, 32, 33, 36, 37, 38];
            const NBYTES_ZERO_FOR_EMPTY: bool = true;
            const OPS: $crate::abi::OpIds = $crate::abi::layout2026::OPS_2026;
            const SCHED_PASS1_SKIPS_VIEWS: bool = false;
            const SCHED_OFFLOAD_NEEDS_HOST_BUFFER: bool = true;
            const SCHED_SYNC_RESETS_COPY: bool = true;
            const SCHED_RESERVE_SYNCS_FIRST: bool = true;
            const ASYNC_IO_FALLBACK_SYNCS: bool = true;
            const SCHED_COPY_USED_EXPERTS: bool = true;
            const DEV_TYPE_ACCEL: $crate::abi::DevType = 3;
            const GRAPH_COPY_KEEPS_FLAGS: bool = true;
            const ALLOC_HONOURS_MAX_SIZE: bool = true;
            // ggml-cpu/ops.cpp: norm_f32 calls ggml_vec_sum_f32 + ggml_vec_cvar_f32, and ROPE's
            // normal mode goes through rotate_pairs<float>, vectorized in place too
            const CPU_ORDER: $crate::abi::CpuOrder = $crate::abi::CpuOrder { norm_vec_sums: true, rope_rotate_pairs: true, q6k_offset_per_subblock: true };
            const DEV_TYPE_IGPU: Option<$crate::abi::DevType> = Some(2);
            const SCHED_DEBUG_NODE: $crate::abi::SchedDebugNode = $crate::abi::SchedDebugNode { op_desc: true, use_count: true, compute_flag: true };
            const DL_BACKEND_NAMES: &'static [&'static str] = &[
                "blas", "zendnn", "cann", "cuda", "hip", "metal", "rpc", "sycl", "vulkan", "virtgpu", "opencl", "hexagon",
                "musa", "openvino", "cpu",
            ];

            $facts!();

            type InitRet = $crate::abi::Status;
            type RegHeader = i32;
            type UseCounts = *mut i32;
            type Buffer2d = $crate::abi::Buffer2d<Self>;
            const BUFFER_2D_NONE: $crate::abi::Buffer2d<Self> = $crate::abi::Buffer2d { set_tensor_2d: None, get_tensor_2d: None };
            type Backend2d = $crate::abi::Backend2d<Self>;
            const BACKEND_2D_NONE: $crate::abi::Backend2d<Self> = $crate::abi::Backend2d { set_tensor_2d_async: None, get_tensor_2d_async: None };
            type GraphUid = u64;
            const GRAPH_UID_NONE: u64 = 0;
            type DeviceId = *const std::ffi::c_char;
            type CapsExtra = bool;
            const DEVICE_ID_NONE: *const std::ffi::c_char = std::ptr::null();
            fn caps_extra(mmap_support: bool) -> bool {
                mmap_support
            }
            fn buffer_2d(i: &$crate::abi::BufferI<Self>) -> Option<&$crate::abi::Buffer2d<Self>> {
                Some(&i.tensor_2d)
            }
            fn backend_2d(i: &$crate::abi::BackendI<Self>) -> Option<&$crate::abi::Backend2d<Self>> {
                Some(&i.tensor_2d_async)
            }
            fn set_graph_uid(g: &mut $crate::abi::CGraph<Self>, uid: u64) {
                g.uid = uid;
            }

            fn init_ret(status: $crate::abi::Status) -> $crate::abi::Status {
                status
            }
            /// `ggml_graph_view`: the parent's use counts and visited set, no gradients, uid 0.
            fn graph_view(g: &$crate::abi::CGraph<Self>, i0: usize, i1: usize) -> $crate::abi::CGraph<Self> {
                g.view_sharing_visited(i0, i1, 0)
            }
            fn init_status(ret: $crate::abi::Status) -> $crate::abi::Status {
                ret
            }
            fn use_counts(g: &$crate::abi::CGraph<Self>) -> *const i32 {
                g.use_counts
            }
            fn reg_header() -> i32 {
                Self::BACKEND_API_VERSION
            }
            fn reg_api_version(reg: &$crate::abi::Reg<Self>) -> Option<i32> {
                Some(reg.header)
            }
        }
    };
}
pub(crate) use rev_2026;
