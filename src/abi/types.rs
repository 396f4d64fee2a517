//! `enum ggml_type` traits: block size and bytes per block, the two numbers `ggml_nbytes` needs.
//!
//! Kept here rather than asked of the host so that the library computes tensor sizes with no host
//! linked (Rust tests, a C program using only the CPU buffer type). `tests_c/layout.c` prints the
//! host's `ggml_blck_size`/`ggml_type_size` for every type and `tests/layout.rs` compares.

use super::Rev;

/// `(blck_size, type_size)` by type id, for ids that exist in both revisions; `None` for removed ids.
const TRAITS: [Option<(usize, usize)>; 39] = [
    Some((1, 4)),    // F32
    Some((1, 2)),    // F16
    Some((32, 18)),  // Q4_0
    Some((32, 20)),  // Q4_1
    None,            // Q4_2 (removed)
    None,            // Q4_3 (removed)
    Some((32, 22)),  // Q5_0
    Some((32, 24)),  // Q5_1
    Some((32, 34)),  // Q8_0
    Some((32, 36)),  // Q8_1
    Some((256, 84)), // Q2_K
    Some((256, 110)), // Q3_K
    Some((256, 144)), // Q4_K
    Some((256, 176)), // Q5_K
    Some((256, 210)), // Q6_K
    Some((256, 292)), // Q8_K
    Some((256, 66)), // IQ2_XXS
    Some((256, 74)), // IQ2_XS
    Some((256, 98)), // IQ3_XXS
    Some((256, 50)), // IQ1_S
    Some((32, 18)),  // IQ4_NL
    Some((256, 110)), // IQ3_S
    Some((256, 82)), // IQ2_S
    Some((256, 136)), // IQ4_XS
    Some((1, 1)),    // I8
    Some((1, 2)),    // I16
    Some((1, 4)),    // I32
    Some((1, 8)),    // I64
    Some((1, 8)),    // F64
    Some((256, 56)), // IQ1_M
    Some((1, 2)),    // BF16
    Some((32, 18)),  // Q4_0_4_4 (lm only)
    Some((32, 18)),  // Q4_0_4_8 (lm only)
    Some((32, 18)),  // Q4_0_8_8 (lm only)
    Some((256, 54)), // TQ1_0
    Some((256, 66)), // TQ2_0
    None,            // IQ4_NL_4_4 (removed in wsp)
    None,            // IQ4_NL_4_8
    None,            // IQ4_NL_8_8
];

/// `(blck_size, type_size)` of a type id in revision `R`, `None` if the id is not a usable type there.
pub fn type_traits<R: Rev>(type_: i32) -> Option<(usize, usize)> {
    if type_ < 0 || type_ >= R::TYPE_COUNT {
        return None;
    }
    if R::REMOVED_TYPES.contains(&type_) {
        return None;
    }
    TRAITS[type_ as usize]
}
