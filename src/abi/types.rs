//! `enum ggml_type` traits: block size and bytes per block, the two numbers `ggml_nbytes` needs,
//! from the one table of ggml types (`ggml_rs_kernels::ggml_types`), filtered by the revision's ids.
//!
//! Kept in the library rather than asked of the host so that the library computes tensor sizes with no host
//! linked (Rust tests, a C program using only the CPU buffer type). `tests_c/layout.c` prints the
//! host's `ggml_blck_size`/`ggml_type_size` for every type and `tests/layout.rs` compares.

use super::Rev;

/// `(blck_size, type_size)` of a type id in revision `R`, `None` if the id is not a usable type there.
pub fn type_traits<R: Rev>(type_: i32) -> Option<(usize, usize)> {
    if type_ < 0 || type_ >= R::TYPE_COUNT {
        return None;
    }
    if R::REMOVED_TYPES.contains(&type_) {
        return None;
    }
    // a revision newer than the table (an id past it) is unknown, not a panic
    ggml_rs_kernels::ggml_types::ggml_type(type_).map(|t| (t.block, t.bytes))
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
