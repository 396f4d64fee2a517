//! The 2026 ggml revision: cui-llama.rn 1.12.2 and llama.rn 0.12.9 (`lm_`, llama.cpp b10375 /
//! b10256) and whisper.rn 0.7.4 (`wsp_`, whisper.cpp 1.9.3). The three packages share one
//! `ggml-backend-impl.h` and, but for `mmap_support`, one `ggml-backend.h`; their facts differ only
//! in the prefix, so both markers are stamped from one list. Checked against the packages' own
//! headers by `tests_c/layout.c -DLAYOUT_REV2026` + `tests/layout.rs`.
//!
//! llama.rn 0.12.9's `ggml_backend_dev_caps` has no `mmap_support`: it sits in what is padding
//! there (`dev_props` is 56 bytes in all three), so one layout serves both lm packages, as long as
//! the library writes that byte (for its own devices) and never reads it.

use super::layout2026::rev_2026;

/// llama.rn 0.12.9 / cui-llama.rn 1.12.2 (`lm_`, cargo feature `lm-2026`).
pub struct Lm26;
/// whisper.rn 0.7.4 (`wsp_`, cargo feature `wsp-2026`).
pub struct Wsp26;

/// The items where ggml v0.20.0 (cui-llama.rn 1.12.2, llama.rn 0.12.9, whisper.rn 0.7.4,
/// llama-cpp-python 0.3.35) and llama.cpp b11118 (llama.rn 0.13.0-rc.5) differ.
macro_rules! facts_v0_20_0 {
    () => {
        const SPLIT_INPUTS_SOFT_LIMIT: usize = 30;
        // ggml_op_can_inplace: FILL, SCALE, DIAG_MASK_ZERO, DIAG_MASK_INF, ADD, ADD_ID, ADD1, SUB,
        // MUL, DIV, SQR, SQRT, LOG, UNARY, ROPE, ROPE_BACK, SILU_BACK, RMS_NORM, RMS_NORM_BACK,
        // SOFT_MAX, SOFT_MAX_BACK
        const INPLACE_OPS: &'static [i32] = &[73, 32, 45, 44, 2, 3, 4, 6, 7, 8, 9, 10, 11, 91, 48, 49, 23, 25, 26, 46, 47];
        type GraphOptimize = Option<$crate::abi::GraphOptimizeFn<Self>>;
        const GRAPH_OPTIMIZE_NONE: Option<$crate::abi::GraphOptimizeFn<Self>> = None;
        fn graph_optimize(i: &$crate::abi::BackendI<Self>) -> Option<$crate::abi::GraphOptimizer<Self>> {
            i.graph_optimize.map($crate::abi::GraphOptimizer::Plain)
        }
    };
}
pub(crate) use facts_v0_20_0;

rev_2026!(Lm26, facts_v0_20_0);
rev_2026!(Wsp26, facts_v0_20_0);
