//! whisper.rn 0.4.3 (`wsp_`): ggml of mid 2025.

use super::{CGraph, Reg, Rev, Status};

/// Marker for the whisper.rn 0.4.3 revision.
pub struct Wsp;

impl Rev for Wsp {
    const CASE_INSENSITIVE_NAMES: bool = true;
    const BACKEND_API_VERSION: i32 = 1;
    const TYPE_COUNT: i32 = 39;
    const REMOVED_TYPES: &'static [i32] = &[4, 5, 31, 32, 33, 36, 37, 38];
    const NBYTES_ZERO_FOR_EMPTY: bool = true;
    // `enum ggml_op` and `enum ggml_unary_op` of whisper.rn 0.4.3's ggml.h
    const OP_NAMES: &'static [&'static str] = &[
        "NONE", "DUP", "ADD", "ADD1", "ACC", "SUB", "MUL", "DIV", "SQR", "SQRT", "LOG",
        "SIN", "COS", "SUM", "SUM_ROWS", "MEAN", "ARGMAX", "COUNT_EQUAL", "REPEAT",
        "REPEAT_BACK", "CONCAT", "SILU_BACK", "NORM", "RMS_NORM", "RMS_NORM_BACK",
        "GROUP_NORM", "L2_NORM", "MUL_MAT", "MUL_MAT_ID", "OUT_PROD", "SCALE", "SET", "CPY",
        "CONT", "RESHAPE", "VIEW", "PERMUTE", "TRANSPOSE", "GET_ROWS", "GET_ROWS_BACK",
        "SET_ROWS", "DIAG", "DIAG_MASK_INF", "DIAG_MASK_ZERO", "SOFT_MAX", "SOFT_MAX_BACK",
        "ROPE", "ROPE_BACK", "CLAMP", "CONV_TRANSPOSE_1D", "IM2COL", "IM2COL_BACK",
        "CONV_2D", "CONV_2D_DW", "CONV_TRANSPOSE_2D", "POOL_1D", "POOL_2D", "POOL_2D_BACK",
        "UPSCALE", "PAD", "PAD_REFLECT_1D", "ROLL", "ARANGE", "TIMESTEP_EMBEDDING",
        "ARGSORT", "LEAKY_RELU", "FLASH_ATTN_EXT", "FLASH_ATTN_BACK", "SSM_CONV",
        "SSM_SCAN", "WIN_PART", "WIN_UNPART", "GET_REL_POS", "ADD_REL_POS", "RWKV_WKV6",
        "GATED_LINEAR_ATTN", "RWKV_WKV7", "UNARY", "MAP_CUSTOM1", "MAP_CUSTOM2",
        "MAP_CUSTOM3", "CUSTOM", "CROSS_ENTROPY_LOSS", "CROSS_ENTROPY_LOSS_BACK",
        "OPT_STEP_ADAMW", "GLU"
    ];
    const UNARY_NAMES: &'static [&'static str] = &[
        "ABS", "SGN", "NEG", "STEP", "TANH", "ELU", "RELU", "SIGMOID", "GELU", "GELU_QUICK",
        "SILU", "HARDSWISH", "HARDSIGMOID", "EXP", "GELU_ERF"
    ];
    const SCHED_PASS1_SKIPS_VIEWS: bool = false;
    const SCHED_OFFLOAD_NEEDS_HOST_BUFFER: bool = true;
    const SCHED_SYNC_RESETS_COPY: bool = true;
    // SCALE, DIAG_MASK_ZERO, DIAG_MASK_INF, ADD, ADD1, SUB, MUL, DIV, SQR, SQRT, LOG, UNARY, ROPE, RMS_NORM, SOFT_MAX, ROPE_BACK, SILU_BACK, RMS_NORM_BACK, SOFT_MAX_BACK
    const INPLACE_OPS: &'static [i32] = &[30, 43, 42, 2, 3, 5, 6, 7, 8, 9, 10, 77, 46, 23, 44, 47, 21, 24, 45];
    const SCHED_DEBUG_NODE: super::SchedDebugNode = super::SchedDebugNode { op_desc: false, use_count: true, compute_flag: false };

    super::layout_before_2026!();

    type InitRet = Status;
    type RegHeader = i32;
    type UseCounts = *mut i32;

    fn init_ret(status: Status) -> Status {
        status
    }
    fn graph_view(g: &CGraph<Self>, i0: usize, i1: usize) -> CGraph<Self> {
        g.view_sharing_visited(i0, i1, ())
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
