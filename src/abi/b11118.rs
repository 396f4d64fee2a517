//! llama.rn 0.13.0-rc.5 (llama.cpp b11118, unprefixed): the 2026 layout with v0.20.0's facts but for
//! the items of `facts_b11118!`.

use super::layout2026::rev_2026;

/// llama.rn 0.13.0-rc.5 (llama.cpp b11118, unprefixed, cargo feature `ggml-b11118`, headers
/// include/ggml-b11118): v0.20.0's ABI and facts but for the items of `facts_b11118!` below.
/// `GGML_BACKEND_API_VERSION` is still 2; `ggml-backend.h`, `ggml-alloc.h`, the op and type enums
/// and every struct layout are v0.20.0's (checked with diff against the package's headers).
pub struct GgmlB11118;

/// b11118 against v0.20.0 (diff of ggml-backend-impl.h, ggml-backend.cpp, ggml-backend-reg.cpp,
/// ggml-alloc.c; ggml-backend.h and ggml-alloc.h are unchanged):
/// - `ggml_backend_i.graph_optimize` takes a third parameter, `ggml_backend_graph_optimize_params *`,
///   through which a backend adds allocation dependencies; the scheduler optimizes every split
///   first, then adds one dependency node per `GGML_MAX_SRC` kept tensors after the `until` node in
///   the allocator's graph (`sched::AllocDeps`);
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
        type GraphOptimize = Option<$crate::abi::GraphOptimizeParamsFn<Self>>;
        const GRAPH_OPTIMIZE_NONE: Option<$crate::abi::GraphOptimizeParamsFn<Self>> = None;
        fn graph_optimize(i: &$crate::abi::BackendI<Self>) -> Option<$crate::abi::GraphOptimizer<Self>> {
            i.graph_optimize.map($crate::abi::GraphOptimizer::WithParams)
        }
        // FLASH_ATTN_EXT, MUL_MAT, MUL_MAT_ID, CUMSUM, ARGSORT, TOP_K
        const ALLOC_SIZE_MAY_EXPAND_OPS: Option<&'static [i32]> = Some(&[74, 29, 30, 16, 69, 70]);
        const META_BUFFER_SET_USAGE: bool = true;
        const SCHED_EVENT_EVERY_SPLIT: bool = true;
        const SCHED_WAIT_PREV_BACKEND: bool = true;
    };
}
pub(crate) use facts_b11118;

rev_2026!(GgmlB11118, facts_b11118);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{Ggml26, Lm26, Rev, Wsp26};

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
}
