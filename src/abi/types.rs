//! `enum ggml_type` traits: block size and bytes per block, the two numbers `ggml_nbytes` needs.
//!
//! Kept here rather than asked of the host so that the library computes tensor sizes with no host
//! linked (Rust tests, a C program using only the CPU buffer type). `tests_c/layout.c` prints the
//! host's `ggml_blck_size`/`ggml_type_size` for every type and `tests/layout.rs` compares.

use super::Rev;

/// `(blck_size, type_size)` by type id over every revision's ids; `None` for removed ids (a
/// revision's `TYPE_COUNT` and `REMOVED_TYPES` say which ids it has).
const TRAITS: [Option<(usize, usize)>; 43] = [
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
    // 2026 (ggml-common.h of cui-llama.rn 1.12.2 / whisper.rn 0.7.4 / ggml v0.20.0)
    Some((32, 17)),  // MXFP4: u8 e + 16 nibble bytes
    Some((64, 36)),  // NVFP4: 4 UE4M3 scales + 32 nibble bytes
    Some((128, 18)), // Q1_0: f16 d + 16 bit bytes
    Some((64, 18)),  // Q2_0: f16 d + 16 bytes of 2-bit quants
];

/// `(blck_size, type_size)` of a type id in revision `R`, `None` if the id is not a usable type there.
pub fn type_traits<R: Rev>(type_: i32) -> Option<(usize, usize)> {
    if type_ < 0 || type_ >= R::TYPE_COUNT {
        return None;
    }
    if R::REMOVED_TYPES.contains(&type_) {
        return None;
    }
    // a revision newer than this table (an id past it) is unknown, not a panic
    TRAITS.get(type_ as usize).copied().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{Ggml26, Lm, Lm26, Wsp, Wsp26};

    fn every_id<R: Rev>() -> Vec<Option<(usize, usize)>> {
        (-1..R::TYPE_COUNT + 2).map(type_traits::<R>).collect()
    }

    /// test-backend-ops (ggml v0.20.0) sizes Q1_0 / Q2_0 / MXFP4 / NVFP4 tensors: every id below
    /// TYPE_COUNT must be answered (it indexed past the table and panicked before).
    #[test]
    fn every_type_id_of_every_revision_is_answered() {
        for ids in [every_id::<Lm>(), every_id::<Wsp>(), every_id::<Lm26>(), every_id::<Wsp26>(), every_id::<Ggml26>()] {
            assert_eq!(ids.first(), Some(&None));
            assert_eq!(ids.last(), Some(&None));
        }
        assert_eq!(type_traits::<Lm26>(39), Some((32, 17)));
        assert_eq!(type_traits::<Ggml26>(40), Some((64, 36)));
        assert_eq!(type_traits::<Ggml26>(41), Some((128, 18)));
        assert_eq!(type_traits::<Wsp26>(42), Some((64, 18)));
        assert_eq!(type_traits::<Wsp>(39), None);
    }
}
