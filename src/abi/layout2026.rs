//! The 2026 layout: what every revision from 2026 on shares (the slots and fields ggml added in
//! 2026, the op ids, the scheduler's and registry's 2026 behaviour), stamped into each marker's
//! `impl Rev` by `rev_2026!`. The revisions of this layout differ only in a few items, each
//! revision's facts' file naming them (rev2026.rs: the 2026 packages and v0.20.0's facts; ggml26.rs,
//! b11118.rs, g0253.rs). Checked against the packages' own headers by `tests_c/layout.c
//! -DLAYOUT_REV2026` + `tests/layout.rs`.

/// `enum ggml_op` of the 2026 revisions (102 entries; the same in every package and upstream
/// release of this layout, from cui-llama.rn 1.12.2 to ggml 0.25.3).
pub const OP_NAMES_2026: &[&str] = &[
    "NONE", "DUP", "ADD", "ADD_ID", "ADD1", "ACC", "SUB", "MUL", "DIV", "SQR", "SQRT",
    "LOG", "SIN", "COS", "SUM", "SUM_ROWS", "CUMSUM", "MEAN", "ARGMAX", "COUNT_EQUAL",
    "REPEAT", "REPEAT_BACK", "CONCAT", "SILU_BACK", "NORM", "RMS_NORM", "RMS_NORM_BACK",
    "GROUP_NORM", "L2_NORM", "MUL_MAT", "MUL_MAT_ID", "OUT_PROD", "SCALE", "SET", "CPY",
    "CONT", "RESHAPE", "VIEW", "PERMUTE", "TRANSPOSE", "GET_ROWS", "GET_ROWS_BACK",
    "SET_ROWS", "DIAG", "DIAG_MASK_INF", "DIAG_MASK_ZERO", "SOFT_MAX", "SOFT_MAX_BACK",
    "ROPE", "ROPE_BACK", "CLAMP", "CONV_TRANSPOSE_1D", "IM2COL", "IM2COL_BACK",
    "IM2COL_3D", "COL2IM_1D", "CONV_2D", "CONV_3D", "CONV_2D_DW", "CONV_TRANSPOSE_2D",
    "POOL_1D", "POOL_2D", "POOL_2D_BACK", "UPSCALE", "PAD", "PAD_REFLECT_1D", "ROLL",
    "ARANGE", "TIMESTEP_EMBEDDING", "ARGSORT", "TOP_K", "LEAKY_RELU", "TRI", "FILL",
    "FLASH_ATTN_EXT", "FLASH_ATTN_BACK", "SSM_CONV", "SSM_SCAN", "WIN_PART",
    "WIN_UNPART", "GET_REL_POS", "ADD_REL_POS", "RWKV_WKV6", "GATED_LINEAR_ATTN",
    "RWKV_WKV7", "SOLVE_TRI", "GATED_DELTA_NET", "LIGHTNING_INDEXER", "DSV4_HC_COMB",
    "DSV4_HC_PRE", "DSV4_HC_POST", "UNARY", "MAP_CUSTOM1", "MAP_CUSTOM2", "MAP_CUSTOM3",
    "CUSTOM", "CROSS_ENTROPY_LOSS", "CROSS_ENTROPY_LOSS_BACK", "OPT_STEP_ADAMW",
    "OPT_STEP_SGD", "GLU"
];
/// `enum ggml_unary_op` of the 2026 revisions.
pub const UNARY_NAMES_2026: &[&str] = &[
    "ABS", "SGN", "NEG", "STEP", "TANH", "ELU", "RELU", "SIGMOID", "GELU", "GELU_QUICK",
    "SILU", "HARDSWISH", "HARDSIGMOID", "EXP", "EXPM1", "SOFTPLUS", "GELU_ERF", "XIELU",
    "FLOOR", "CEIL", "ROUND", "TRUNC"
];

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
            const OP_NAMES: &'static [&'static str] = $crate::abi::layout2026::OP_NAMES_2026;
            const UNARY_NAMES: &'static [&'static str] = $crate::abi::layout2026::UNARY_NAMES_2026;
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
