//! llama.rn 0.4.4 (`lm_`): ggml of December 2024.

use super::{CGraph, HashSet, Reg, Rev, Status, STATUS_SUCCESS};

/// Marker for the llama.rn 0.4.4 revision.
pub struct Lm;

impl Rev for Lm {
    const CASE_INSENSITIVE_NAMES: bool = false;
    const BACKEND_API_VERSION: i32 = 0;
    const TYPE_COUNT: i32 = 36;
    const REMOVED_TYPES: &'static [i32] = &[4, 5];
    const NBYTES_ZERO_FOR_EMPTY: bool = false;
    // `enum ggml_op` and `enum ggml_unary_op` of llama.rn 0.4.4's ggml.h
    const OP_NAMES: &'static [&'static str] = &[
        "NONE", "DUP", "ADD", "ADD1", "ACC", "SUB", "MUL", "DIV", "SQR", "SQRT", "LOG",
        "SIN", "COS", "SUM", "SUM_ROWS", "MEAN", "ARGMAX", "COUNT_EQUAL", "REPEAT",
        "REPEAT_BACK", "CONCAT", "SILU_BACK", "NORM", "RMS_NORM", "RMS_NORM_BACK",
        "GROUP_NORM", "MUL_MAT", "MUL_MAT_ID", "OUT_PROD", "SCALE", "SET", "CPY", "CONT",
        "RESHAPE", "VIEW", "PERMUTE", "TRANSPOSE", "GET_ROWS", "GET_ROWS_BACK", "DIAG",
        "DIAG_MASK_INF", "DIAG_MASK_ZERO", "SOFT_MAX", "SOFT_MAX_BACK", "ROPE", "ROPE_BACK",
        "CLAMP", "CONV_TRANSPOSE_1D", "IM2COL", "IM2COL_BACK", "CONV_TRANSPOSE_2D",
        "POOL_1D", "POOL_2D", "POOL_2D_BACK", "UPSCALE", "PAD", "ARANGE",
        "TIMESTEP_EMBEDDING", "ARGSORT", "LEAKY_RELU", "FLASH_ATTN_EXT", "FLASH_ATTN_BACK",
        "SSM_CONV", "SSM_SCAN", "WIN_PART", "WIN_UNPART", "GET_REL_POS", "ADD_REL_POS",
        "RWKV_WKV6", "UNARY", "MAP_UNARY", "MAP_BINARY", "MAP_CUSTOM1_F32",
        "MAP_CUSTOM2_F32", "MAP_CUSTOM3_F32", "MAP_CUSTOM1", "MAP_CUSTOM2", "MAP_CUSTOM3",
        "CROSS_ENTROPY_LOSS", "CROSS_ENTROPY_LOSS_BACK", "OPT_STEP_ADAMW"
    ];
    const UNARY_NAMES: &'static [&'static str] = &[
        "ABS", "SGN", "NEG", "STEP", "TANH", "ELU", "RELU", "SIGMOID", "GELU", "GELU_QUICK",
        "SILU", "HARDSWISH", "HARDSIGMOID", "EXP"
    ];
    const SCHED_PASS1_SKIPS_VIEWS: bool = true;
    const SCHED_OFFLOAD_NEEDS_HOST_BUFFER: bool = false;
    const SCHED_SYNC_RESETS_COPY: bool = false;
    const TRAITS_CPU_FROM_FLOAT_TO_MAT: bool = true;
    // SCALE, DIAG_MASK_ZERO, DIAG_MASK_INF, ADD, ADD1, SUB, MUL, DIV, SQR, SQRT, LOG, UNARY, ROPE, RMS_NORM, SOFT_MAX
    const INPLACE_OPS: &'static [i32] = &[29, 41, 40, 2, 3, 5, 6, 7, 8, 9, 10, 69, 44, 23, 42];

    super::layout_before_2026!();

    type InitRet = ();
    type RegHeader = ();
    type UseCounts = ();

    fn init_ret(_status: Status) {}
    fn graph_view(g: &CGraph<Self>, i0: usize, i1: usize) -> CGraph<Self> {
        let offset = |p: *mut *mut super::Tensor<Self>| if p.is_null() { p } else { p.wrapping_add(i0) };
        CGraph {
            size: 0,
            n_nodes: (i1 - i0) as i32,
            n_leafs: 0,
            nodes: g.nodes.wrapping_add(i0),
            grads: offset(g.grads),
            grad_accs: offset(g.grad_accs),
            leafs: std::ptr::null_mut(),
            use_counts: (),
            visited_hash_set: HashSet { size: 0, used: std::ptr::null_mut(), keys: std::ptr::null_mut() },
            order: g.order,
            uid: (),
        }
    }
    fn init_status(_ret: ()) -> Status {
        STATUS_SUCCESS
    }
    fn reg_header() {}
    fn reg_api_version(_reg: &Reg<Self>) -> Option<i32> {
        None
    }
}
