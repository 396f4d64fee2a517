//! Upstream ggml 0.25.3 (unprefixed): b11118's headers and facts plus one scheduler pass.

use super::layout2026::rev_2026;

/// Upstream ggml 0.25.3 (llama.cpp 0c1e57098 as vendored by llama-cpp-python 0.3.36; cargo
/// feature `ggml-0253`, headers include/ggml-0.25.3). Against b11118, `ggml-backend.h`,
/// `ggml-backend-impl.h`, `ggml-backend-reg.cpp`, `ggml-alloc.{h,c}`, `ggml.h` and `ggml-rpc.h`
/// (protocol 7.0.0) are the same files; `ggml-backend.cpp` differs in one scheduler pass
/// (`facts_0_25_3!`). Its other changes are in the host's files (ggml.c checks a new tensor's
/// element count and that `ggml_set_param` gets a leaf; ggml-backend-meta.cpp).
pub struct Ggml0253;

/// 0.25.3 against b11118 (diff of ggml-backend.cpp): with pipeline copies, the scheduler no longer
/// collects the INPUT-flagged sources of nodes while it splits the graph, but, in a new last pass,
/// every INPUT-flagged leaf of the graph, whether a node uses it or not.
macro_rules! facts_0_25_3 {
    () => {
        $crate::abi::b11118::facts_b11118!();
        const SCHED_COPIES_EVERY_INPUT_LEAF: bool = true;
    };
}

rev_2026!(Ggml0253, facts_0_25_3);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{GgmlB11118, Listed, Rev};

    #[test]
    fn v0_25_3_is_b11118_but_for_its_input_pass() {
        const { assert!(Ggml0253::SCHED_COPIES_EVERY_INPUT_LEAF && !GgmlB11118::SCHED_COPIES_EVERY_INPUT_LEAF) };
        assert_eq!(Ggml0253::INPLACE_OPS, GgmlB11118::INPLACE_OPS);
        assert_eq!(Ggml0253::SPLIT_INPUTS_SOFT_LIMIT, GgmlB11118::SPLIT_INPUTS_SOFT_LIMIT);
        assert_eq!(Ggml0253::ALLOC_SIZE_MAY_EXPAND_OPS, GgmlB11118::ALLOC_SIZE_MAY_EXPAND_OPS);
        const { assert!(Ggml0253::META_BUFFER_SET_USAGE && Ggml0253::SCHED_EVENT_EVERY_SPLIT && Ggml0253::SCHED_WAIT_PREV_BACKEND) };
        assert_ne!(Ggml0253::SLOT, GgmlB11118::SLOT);
    }
}
