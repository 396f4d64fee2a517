//! whisper.rn 0.4.3 (`wsp_`): ggml of mid 2025.

use super::{OpIds, CGraph, Reg, Rev, Status};

/// Marker for the whisper.rn 0.4.3 revision.
pub struct Wsp;

impl Rev for Wsp {
    const CASE_INSENSITIVE_NAMES: bool = true;
    const BACKEND_API_VERSION: i32 = 1;
    const TYPE_COUNT: i32 = 39;
    const REMOVED_TYPES: &'static [i32] = &[4, 5, 31, 32, 33, 36, 37, 38];
    const NBYTES_ZERO_FOR_EMPTY: bool = true;
    const OPS: OpIds = OpIds {
        none: 0,
        dup: 1,
        add: 2,
        sub: 5,
        mul: 6,
        div: 7,
        sqr: 8,
        sqrt: 9,
        norm: 22,
        rms_norm: 23,
        mul_mat: 27,
        mul_mat_id: 28,
        scale: 30,
        cpy: 32,
        cont: 33,
        reshape: 34,
        view: 35,
        permute: 36,
        transpose: 37,
        get_rows: 38,
        soft_max: 44,
        rope: 46,
        im2col: 50,
        unary: 77,
        set_rows: 40,
        glu: 85,
        flash_attn_ext: 66,
    };
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
