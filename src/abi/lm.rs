//! llama.rn 0.4.4 (`lm_`): ggml of December 2024.

use super::{OpIds, CGraph, HashSet, Reg, Rev, Status, STATUS_SUCCESS};

/// Marker for the llama.rn 0.4.4 revision.
pub struct Lm;

impl Rev for Lm {
    const CASE_INSENSITIVE_NAMES: bool = false;
    const BACKEND_API_VERSION: i32 = 0;
    const TYPE_COUNT: i32 = 36;
    const REMOVED_TYPES: &'static [i32] = &[4, 5];
    const NBYTES_ZERO_FOR_EMPTY: bool = false;
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
        mul_mat: 26,
        mul_mat_id: 27,
        scale: 29,
        cpy: 31,
        cont: 32,
        reshape: 33,
        view: 34,
        permute: 35,
        transpose: 36,
        get_rows: 37,
        soft_max: 42,
        rope: 44,
        im2col: 48,
        unary: 69,
        set_rows: -1,
        glu: -1,
        flash_attn_ext: 60,
    };
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
