//! The ops of the SIMD backend: one function per op over `Raw` views, each splitting its output
//! rows across the thread pool. `supports` answers for exactly what is implemented here.

pub mod elementwise;
pub mod get_rows;
pub mod im2col;
pub mod mul_mat;
pub mod norm;
pub mod rope;
pub mod softmax;

use super::pool::{share, Session};
use super::tensor::Raw;

/// Below this many elements a node runs on the calling thread alone: waking the pool costs more
/// than the work (decode graphs are hundreds of such nodes).
pub const SERIAL_ELEMENTS: usize = 16 * 1024;

/// Runs `f(row)` for every row index in `0..n`, rows split evenly between the pool's threads;
/// `elements` (the node's size) decides whether the split is worth it.
pub fn for_rows(s: &Session, n: usize, elements: usize, f: impl Fn(usize) + Sync) -> bool {
    if elements < SERIAL_ELEMENTS || n < 2 {
        return std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (0..n).for_each(&f))).is_ok();
    }
    s.run(&|ith, nth| {
        let (a, b) = share(n, ith, nth);
        for r in a..b {
            f(r);
        }
    })
}

/// `ggml_can_repeat(b, a)`: b's shape tiles a's.
pub fn can_repeat(b: &Raw, a: &Raw) -> bool {
    (0..4).all(|i| b.ne[i] != 0 && a.ne[i].is_multiple_of(b.ne[i]))
}

pub fn same_shape(a: &Raw, b: &Raw) -> bool {
    a.ne == b.ne
}

/// An f32 parameter stored in `op_params[i]`.
pub fn param_f32(params: &[i32], i: usize) -> f32 {
    f32::from_bits(params[i] as u32)
}

#[cfg(test)]
mod in_place_tests;
