//! Element-wise f32 ops: binary ops with broadcasting (ADD, SUB, MUL, DIV), SCALE, SQR, SQRT, and
//! the unary SILU and GELU, whose kernels (`vexp`, `gelu`) reproduce ggml-cpu's results.

use super::{for_rows, Raw, Session};
use crate::simd::quant::f16::{f16_to_f32_slice, f32_to_f16_slice};
use crate::simd::tensor::{alias, with_row, Alias, Detached, F16};
use crate::simd::{gelu, vexp};

#[derive(Clone, Copy)]
pub enum Binary {
    Add,
    Sub,
    Mul,
    Div,
}

/// `d[i] = f(i, x[i])` over a row, where `x` is a separate source row or, in place (`None`), `d`
/// itself: one mutable view of the row, never a shared one beside it.
#[inline(always)]
pub(super) fn map_row(d: &mut [f32], x: Option<&[f32]>, mut f: impl FnMut(usize, f32) -> f32) {
    match x {
        Some(x) => d.iter_mut().zip(x).enumerate().for_each(|(i, (d, &x))| *d = f(i, x)),
        None => d.iter_mut().enumerate().for_each(|(i, d)| *d = f(i, *d)),
    }
}

pub fn binary(s: &Session, op: Binary, dst: Raw, a: Raw, b: Raw) -> bool {
    let (_a_copy, a) = Detached::unless_apart(&dst, a);
    let in_place = alias(&dst, &a) == Alias::Same;
    // b is read at broadcast rows, which may be rows another thread writes: any sharing with dst
    // gets a private copy (`ggml_add(x, x)` in place is the only case seen, and it is rare)
    let b_copy = (alias(&dst, &b) != Alias::Apart).then(|| Detached::of(&b));
    let b = b_copy.as_ref().map_or(b, |c| c.raw);
    for_rows(s, dst.nrows(), dst.nelements(), |r| {
        let (i1, i2, i3) = dst.row_index(r);
        let x = (!in_place).then(|| a.row_f32(i1, i2, i3));
        let y = b.row_f32(i1 % b.ne[1], i2 % b.ne[2], i3 % b.ne[3]);
        let d = dst.row_f32_mut(i1, i2, i3);
        if y.len() == d.len() {
            match op {
                Binary::Add => map_row(d, x, |i, x| x + y[i]),
                Binary::Sub => map_row(d, x, |i, x| x - y[i]),
                Binary::Mul => map_row(d, x, |i, x| x * y[i]),
                Binary::Div => map_row(d, x, |i, x| x / y[i]),
            }
        } else {
            let m = y.len();
            map_row(d, x, |i, x| {
                let v = y[i % m];
                match op {
                    Binary::Add => x + v,
                    Binary::Sub => x - v,
                    Binary::Mul => x * v,
                    Binary::Div => x / v,
                }
            });
        }
    })
}

#[derive(Clone, Copy)]
pub enum Unary {
    Scale(f32),
    Sqr,
    Sqrt,
    Silu,
    Gelu,
}

pub fn unary(s: &Session, op: Unary, dst: Raw, a: Raw) -> bool {
    if let Unary::Gelu = op {
        gelu::prepare();
    }
    let (_a_copy, a) = Detached::unless_apart(&dst, a);
    let in_place = alias(&dst, &a) == Alias::Same;
    for_rows(s, dst.nrows(), dst.nelements(), |r| {
        let (i1, i2, i3) = dst.row_index(r);
        // in place there is no separate source row: `map_row` reads the destination
        let x = || (!in_place).then(|| a.row_f32(i1, i2, i3));
        match op {
            Unary::Scale(v) => map_row(dst.row_f32_mut(i1, i2, i3), x(), |_, x| x * v),
            Unary::Sqr => map_row(dst.row_f32_mut(i1, i2, i3), x(), |_, x| x * x),
            Unary::Sqrt => map_row(dst.row_f32_mut(i1, i2, i3), x(), |_, x| x.sqrt()),
            // ggml-cpu runs these row by row, so rows (not the whole tensor) are where its vector
            // loops leave their scalar tails
            Unary::Silu => with_row(&dst, &a, in_place, (i1, i2, i3), vexp::silu),
            Unary::Gelu => with_row(&dst, &a, in_place, (i1, i2, i3), gelu::gelu),
        }
    })
}

/// CPY / DUP / CONT between F32 and F16 tensors of the same element count. Shapes may differ
/// (ggml copies element `k` of `src` to element `k` of `dst`, both in row-major order).
pub fn copy(s: &Session, dst: Raw, src: Raw) -> bool {
    match alias(&dst, &src) {
        // a CPY onto itself: every element is already where it goes
        Alias::Same => return true,
        Alias::Overlap => {
            let private = Detached::of(&src);
            return copy(s, dst, private.raw);
        }
        Alias::Apart => {}
    }
    if dst.is_contiguous() && src.is_contiguous() {
        // element k to element k whatever the shapes (the KV-cache writes): one flat conversion
        const CHUNK: usize = 4096;
        let n = dst.nelements();
        return for_rows(s, n.div_ceil(CHUNK), n, |c| {
            let (a, len) = (c * CHUNK, CHUNK.min(n - c * CHUNK));
            match (src.ty, dst.ty) {
                (F16, F16) => dst.flat_f16_mut(a, len).copy_from_slice(src.flat_f16(a, len)),
                (F16, _) => f16_to_f32_slice(src.flat_f16(a, len), dst.flat_f32_mut(a, len)),
                (_, F16) => f32_to_f16_slice(src.flat_f32(a, len), dst.flat_f16_mut(a, len)),
                _ => dst.flat_f32_mut(a, len).copy_from_slice(src.flat_f32(a, len)),
            }
        });
    }
    if dst.ne == src.ne {
        return for_rows(s, dst.nrows(), dst.nelements(), |r| {
            let (i1, i2, i3) = dst.row_index(r);
            if dst.ty == src.ty && dst.nb[0] == src.nb[0] && src.nb[0] == if src.ty == super::super::tensor::F16 { 2 } else { 4 } {
                let len = dst.ne[0] * dst.nb[0];
                crate::abi::vtable::copy_bytes(dst.ptr(0, i1, i2, i3) as *mut _, src.ptr(0, i1, i2, i3) as *const _, len);
            } else {
                for i0 in 0..dst.ne[0] {
                    dst.write_f32(i0, i1, i2, i3, src.read_f32(i0, i1, i2, i3));
                }
            }
        });
    }
    // shapes differ: walk both in row-major element order; split by destination rows
    let n0 = dst.ne[0];
    for_rows(s, dst.nrows(), dst.nelements(), |r| {
        let (i1, i2, i3) = dst.row_index(r);
        let first = ((i3 * dst.ne[2] + i2) * dst.ne[1] + i1) * n0;
        for (i0, k) in (first..first + n0).enumerate() {
            let j0 = k % src.ne[0];
            let j1 = (k / src.ne[0]) % src.ne[1];
            let j2 = (k / (src.ne[0] * src.ne[1])) % src.ne[2];
            let j3 = k / (src.ne[0] * src.ne[1] * src.ne[2]);
            dst.write_f32(i0, i1, i2, i3, src.read_f32(j0, j1, j2, j3));
        }
    })
}
