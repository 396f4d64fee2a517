//! The path the library (`src/simd`) reads MUL_MAT's sgemm setting by; MUL_MAT itself, its
//! products and their kernels are all in [`crate::ops::mul_mat`].

pub use crate::ops::mul_mat::tiles::sgemm_forced;
