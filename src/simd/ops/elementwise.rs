//! Element-wise f32 ops: binary ops with broadcasting (ADD, SUB, MUL, DIV), SCALE, SQR, SQRT, and
//! the unary SILU and GELU, whose kernels (`vexp`, `gelu`) reproduce ggml-cpu's results.

use super::{for_rows, Raw, Session};
use crate::simd::quant::f16::{f16_to_f32_slice, f32_to_f16_slice};
use crate::simd::tensor::F16;
use crate::simd::{gelu, vexp};

#[derive(Clone, Copy)]
pub enum Binary {
    Add,
    Sub,
    Mul,
    Div,
}

pub fn binary(s: &Session, op: Binary, dst: Raw, a: Raw, b: Raw) -> bool {
    for_rows(s, dst.nrows(), dst.nelements(), |r| {
        let (i1, i2, i3) = dst.row_index(r);
        let x = a.row_f32(i1, i2, i3);
        let y = b.row_f32(i1 % b.ne[1], i2 % b.ne[2], i3 % b.ne[3]);
        let d = dst.row_f32_mut(i1, i2, i3);
        let n = d.len();
        if y.len() == n {
            match op {
                Binary::Add => (0..n).for_each(|i| d[i] = x[i] + y[i]),
                Binary::Sub => (0..n).for_each(|i| d[i] = x[i] - y[i]),
                Binary::Mul => (0..n).for_each(|i| d[i] = x[i] * y[i]),
                Binary::Div => (0..n).for_each(|i| d[i] = x[i] / y[i]),
            }
        } else {
            let m = y.len();
            for i in 0..n {
                let v = y[i % m];
                d[i] = match op {
                    Binary::Add => x[i] + v,
                    Binary::Sub => x[i] - v,
                    Binary::Mul => x[i] * v,
                    Binary::Div => x[i] / v,
                };
            }
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
    for_rows(s, dst.nrows(), dst.nelements(), |r| {
        let (i1, i2, i3) = dst.row_index(r);
        let x = a.row_f32(i1, i2, i3);
        let d = dst.row_f32_mut(i1, i2, i3);
        match op {
            Unary::Scale(v) => d.iter_mut().zip(x).for_each(|(d, &x)| *d = x * v),
            Unary::Sqr => d.iter_mut().zip(x).for_each(|(d, &x)| *d = x * x),
            Unary::Sqrt => d.iter_mut().zip(x).for_each(|(d, &x)| *d = x.sqrt()),
            // ggml-cpu runs these row by row, so rows (not the whole tensor) are where its vector
            // loops leave their scalar tails
            Unary::Silu => vexp::silu(x, d),
            Unary::Gelu => gelu::gelu(x, d),
        }
    })
}

/// CPY / DUP / CONT between F32 and F16 tensors of the same element count. Shapes may differ
/// (ggml copies element `k` of `src` to element `k` of `dst`, both in row-major order).
pub fn copy(s: &Session, dst: Raw, src: Raw) -> bool {
    if dst.is_contiguous() && src.is_contiguous() && dst.ptr(0, 0, 0, 0) != src.ptr(0, 0, 0, 0) {
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
        let mut k = ((i3 * dst.ne[2] + i2) * dst.ne[1] + i1) * n0;
        for i0 in 0..n0 {
            let j0 = k % src.ne[0];
            let j1 = (k / src.ne[0]) % src.ne[1];
            let j2 = (k / (src.ne[0] * src.ne[1])) % src.ne[2];
            let j3 = k / (src.ne[0] * src.ne[1] * src.ne[2]);
            dst.write_f32(i0, i1, i2, i3, src.read_f32(j0, j1, j2, j3));
            k += 1;
        }
    })
}
