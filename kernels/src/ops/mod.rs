//! The ops of the SIMD backend, one module per kind of op over `Raw` views, each splitting its
//! output rows across the thread pool. Every module has the same two entry points, which the
//! executor's table (`exec::kernel`) lists against the [`Op`](super::op::Op)s they serve:
//!
//! * `supports(&Node) -> bool`: true exactly for the types and layouts the kernel implements;
//! * `compute(&Session, &Node) -> bool`: computes a supported node (false when a worker panicked).

pub mod binary;
pub mod copy;
pub mod flash_attn;
pub mod get_rows;
pub mod glu;
pub mod im2col;
pub mod mul_mat;
pub mod norm;
pub mod rope;
pub mod set_rows;
pub mod softmax;
pub mod unary;

use super::pool::{share, Session};
use super::view::{Raw, F16, F32};

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

pub fn is_float(ty: i32) -> bool {
    ty == F32 || ty == F16
}

/// F32 with packed rows (what the row kernels slice).
pub fn f32_rows(t: &Raw) -> bool {
    t.ty == F32 && t.nb[0] == 4
}

/// `d[i] = f(i, x[i])` over a row, where `x` is a separate source row or, in place (`None`), `d`
/// itself: one mutable view of the row, never a shared one beside it.
#[inline(always)]
pub fn map_row(d: &mut [f32], x: Option<&[f32]>, mut f: impl FnMut(usize, f32) -> f32) {
    match x {
        Some(x) => d.iter_mut().zip(x).enumerate().for_each(|(i, (d, &x))| *d = f(i, x)),
        None => d.iter_mut().enumerate().for_each(|(i, d)| *d = f(i, *d)),
    }
}

#[cfg(test)]
mod in_place_tests;
