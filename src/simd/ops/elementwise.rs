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
    // Element k of dst takes element k of src in row-major order, whatever the two shapes: each
    // dst row is a few runs of consecutive src elements (one when the shapes are equal), and a
    // run is copied as a slice when both sides are packed along dim 0. The per-element index
    // divisions this replaces were most of CONT's time on the permuted attention outputs.
    let n0 = dst.ne[0];
    if n0 * dst.nb[0] <= 64 && dst.ne[2] == 1 && dst.ne[3] == 1 {
        // One short row per cache line (the transposed V-cache write of a decode step, 192 rows
        // each in its own line of a cache the weights streamed out since the last token): ask for
        // every line first so the misses overlap instead of queuing behind one another.
        for r in 0..dst.ne[1] {
            prefetch_write(dst.data.wrapping_add(r * dst.nb[1]));
        }
    }
    let n0 = dst.ne[0];
    for_rows(s, dst.nrows(), dst.nelements(), |r| {
        let (i1, i2, i3) = dst.row_index(r);
        let first = ((i3 * dst.ne[2] + i2) * dst.ne[1] + i1) * n0;
        let mut j = [0usize; 4];
        let mut rest = first;
        for (d, j) in j.iter_mut().enumerate() {
            let below: usize = src.ne[..d].iter().product();
            *j = if d == 3 { rest / below } else { (rest / below) % src.ne[d] };
        }
        rest = 0;
        while rest < n0 {
            let run = (src.ne[0] - j[0]).min(n0 - rest);
            copy_run(&dst, [rest, i1, i2, i3], &src, j, run);
            rest += run;
            j[0] += run;
            let mut d = 0;
            while d < 3 && j[d] == src.ne[d] {
                j[d] = 0;
                j[d + 1] += 1;
                d += 1;
            }
        }
    })
}

/// Copies `len` elements along dim 0 from `src` at `j` to `dst` at `i`, converting F32/F16.
fn copy_run(dst: &Raw, i: [usize; 4], src: &Raw, j: [usize; 4], len: usize) {
    let ts = |t: &Raw| if t.ty == F16 { 2 } else { 4 };
    if dst.nb[0] == ts(dst) && src.nb[0] == ts(src) {
        let (dp, sp) = (dst.ptr(i[0], i[1], i[2], i[3]), src.ptr(j[0], j[1], j[2], j[3]) as *const u8);
        // SAFETY: both runs lie inside their tensors (indices < ne along every dim, `len` along dim
        // 0 within the row), are packed along dim 0 and aligned to their element type as ggml
        // lays them out; `copy` has detached overlapping sources, and this dst row belongs to the
        // calling thread.
        unsafe {
            match (src.ty, dst.ty) {
                (F16, F16) => std::ptr::copy_nonoverlapping(sp, dp, 2 * len),
                (F16, _) => f16_to_f32_slice(std::slice::from_raw_parts(sp as *const u16, len), std::slice::from_raw_parts_mut(dp as *mut f32, len)),
                (_, F16) => f32_to_f16_slice(std::slice::from_raw_parts(sp as *const f32, len), std::slice::from_raw_parts_mut(dp as *mut u16, len)),
                _ => std::ptr::copy_nonoverlapping(sp, dp, 4 * len),
            }
        }
    } else {
        for k in 0..len {
            dst.write_f32(i[0] + k, i[1], i[2], i[3], src.read_f32(j[0] + k, j[1], j[2], j[3]));
        }
    }
}

/// Hints that the line holding `p` will be written soon. Never faults, whatever `p` is.
#[inline(always)]
fn prefetch_write(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults or changes memory, for any address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(target_arch = "aarch64")]
    // SAFETY: as above (`prfm` never faults).
    unsafe {
        std::arch::asm!("prfm pstl1keep, [{0}]", in(reg) p, options(nostack, readonly, preserves_flags))
    };
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = p;
}
