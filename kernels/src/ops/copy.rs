//! CPY, DUP and CONT between F32 and F16 tensors.

use super::{for_rows, is_float, Raw, Session};
use crate::op::Node;
use crate::quant::f16::{f16_to_f32_slice, f32_to_f16_slice};
use crate::view::{alias, Alias, Detached, F16};

pub fn supports(n: &Node) -> bool {
    let (d, Some(a)) = (n.dst, n.src[0]) else { return false };
    is_float(a.ty) && is_float(d.ty) && a.nelements() == d.nelements()
}

/// CPY writes into its second source (the destination view); dst aliases it.
pub fn compute(s: &Session, n: &Node) -> bool {
    run(s, n.dst, n.src(0))
}

/// CPY / DUP / CONT between F32 and F16 tensors of the same element count. Shapes may differ
/// (ggml copies element `k` of `src` to element `k` of `dst`, both in row-major order).
pub fn run(s: &Session, dst: Raw, src: Raw) -> bool {
    match alias(&dst, &src) {
        // a CPY onto itself: every element is already where it goes
        Alias::Same => return true,
        Alias::Overlap => {
            let private = Detached::of(&src);
            return run(s, dst, private.raw);
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
    if dst.ne[0] * dst.nb[0] <= 64 && dst.ne[2] == 1 && dst.ne[3] == 1 {
        // One short row per cache line (the transposed V-cache write of a decode step, 192 rows
        // each in its own line of a cache the weights streamed out since the last token): ask for
        // every line first so the misses overlap instead of queuing behind one another.
        for r in 0..dst.ne[1] {
            prefetch_write(dst.data.wrapping_add(r * dst.nb[1]));
        }
    }
    let n0 = dst.ne[0];
    if dst.ne == src.ne {
        // equal shapes: element (i0, i1, i2, i3) goes to the same indices, no runs to find
        return for_rows(s, dst.nrows(), dst.nelements(), |r| {
            let (i1, i2, i3) = dst.row_index(r);
            copy_run(&dst, [0, i1, i2, i3], &src, [0, i1, i2, i3], n0);
        });
    }
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
    if len == 1 && src.ty != dst.ty {
        // one element (the transposed V-cache write of a decode step, 192 rows of one): the
        // slice conversions' set-up cost more than the element
        return dst.write_f32(i[0], i[1], i[2], i[3], src.read_f32(j[0], j[1], j[2], j[3]));
    }
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

/// Hints that the line holding `p` will be written soon. Never faults, whatever `p` is. On x86
/// into L2 (`T1`): an L2 prefetch frees its L1 miss buffer at once, so more of the V-cache copy's
/// 192 lines are in flight together (SmolLM2 decode, `GGML_RS_SIMD_PROFILE=1`, 3 runs each:
/// 5.2-5.7 -> 3.9-4.1 us per copy; `T0` held them to the L1's miss buffers).
/// (`prefetchw` needs the `prfchw` target feature, unstable in Rust.)
#[inline(always)]
fn prefetch_write(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults or changes memory, for any address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(p as *const i8)
    };
    #[cfg(target_arch = "aarch64")]
    // SAFETY: as above (`prfm` never faults).
    unsafe {
        std::arch::asm!("prfm pstl1keep, [{0}]", in(reg) p, options(nostack, readonly, preserves_flags))
    };
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::run;
    use crate::pool::Pool;
    use crate::quant::f16::fp32_to_fp16;
    use crate::view::{Raw, F16, F32};

    /// The decode step's transposed V-cache write (a [1, 192] transposed view of an F32 row into
    /// one half per 2 KiB cache row) and a permuted F32 -> F32 copy of equal shapes put element
    /// (i0, i1, i2, i3) at the same indices; shapes that differ keep row-major order.
    #[test]
    fn strided_copies_put_each_element_where_ggml_does() {
        let pool = Pool::new(2);
        let s = pool.session();
        let v: Vec<f32> = (0..192).map(|i| i as f32 * 0.37 - 20.0).collect();
        let mut cache = vec![0u16; 192 * 1024];
        let col = 5;
        let src = Raw { data: v.as_ptr() as *mut u8, ne: [1, 192, 1, 1], nb: [4 * 192, 4, 4 * 192, 4 * 192], ty: F32 };
        let dst = Raw { data: cache.as_mut_ptr().wrapping_add(col) as *mut u8, ne: [1, 192, 1, 1], nb: [2, 2 * 1024, 2 * 192 * 1024, 2 * 192 * 1024], ty: F16 };
        assert!(run(&s, dst, src));
        for (r, x) in v.iter().enumerate() {
            assert_eq!(cache[r * 1024 + col], fp32_to_fp16(*x), "V row {r}");
        }
        assert_eq!(cache.iter().filter(|&&h| h != 0).count(), v.iter().filter(|&&x| x != 0.0).count(), "only column {col} written");

        // [4, 3, 2] read through a permutation (dims 0 and 1 swapped) into a contiguous tensor
        let a: Vec<f32> = (0..24).map(|i| i as f32).collect();
        let mut out = vec![0f32; 24];
        let src = Raw { data: a.as_ptr() as *mut u8, ne: [4, 3, 2, 1], nb: [12, 4, 48, 96], ty: F32 };
        let dst = Raw { data: out.as_mut_ptr() as *mut u8, ne: [4, 3, 2, 1], nb: [4, 16, 48, 96], ty: F32 };
        assert!(run(&s, dst, src));
        for (i2, i1, i0) in (0..2).flat_map(|i2| (0..3).flat_map(move |i1| (0..4).map(move |i0| (i2, i1, i0)))) {
            assert_eq!(out[i2 * 12 + i1 * 4 + i0], a[i2 * 12 + i0 * 3 + i1], "({i0}, {i1}, {i2})");
        }
        // the same source into [6, 4]: element k of the permuted order goes to element k
        let mut flat = vec![0f32; 24];
        let dst = Raw { data: flat.as_mut_ptr() as *mut u8, ne: [6, 4, 1, 1], nb: [4, 24, 96, 96], ty: F32 };
        assert!(run(&s, dst, src));
        assert_eq!(flat, out);
    }
}
