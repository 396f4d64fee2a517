//! Upstream ggml v0.20.0 (unprefixed): the 2026 packages' revision without their prefix.

use super::layout2026::rev_2026;
use super::rev2026::facts_v0_20_0;

/// Upstream ggml v0.20.0 (llama.cpp as vendored by llama-cpp-python 0.3.35): cui-llama.rn 1.12.2's
/// backend ABI without the prefix (cargo feature `ggml-2026`, headers include/ggml-2026). Its
/// `ggml-backend.cpp`, `-reg.cpp`, `-impl.h` and `ggml-backend.h` equal cui-llama.rn's once
/// `lm_` / `LM_` is removed, so it is stamped from the same facts; only the prefix differs.
pub struct Ggml26;

rev_2026!(Ggml26, facts_v0_20_0);
