//! SET_ROWS: rows of an F32 (or F16) source written into rows of an F32 / F16 destination at I64
//! (or I32) indices — the 2026 KV cache stores (`llama_kv_cache::cpy_k` / `cpy_v`).
//!
//! Follows `ggml_compute_forward_set_rows_impl` (ops.cpp; the same in cui-llama.rn 1.12.2,
//! whisper.rn 0.7.4, llama.rn 0.12.9 and 0.13.0-rc.5; whisper.rn 0.4.3's
//! `ggml_compute_forward_set_rows_f32` is the F32-rows, I64-indices case of it): source row
//! `(i, i02, i03)` goes to destination row `(idx[i, i02 % ne11, i03 % ne12], i02, i03)`, through
//! the destination type's `from_float` (`ggml_cpu_fp32_to_fp32`: a copy; `ggml_cpu_fp32_to_fp16`:
//! round to nearest even, which `f32_to_f16_slice` does bit for bit except for NaN payloads, as
//! CPY). F16 rows are copied (F16 destination) or widened exactly (F32).
//!
//! The destination is a view of the cache (`dst->data` is the cache's bytes, `src[2]` the cache
//! itself in 2026): only the indexed rows are written, everything else keeps its bytes.
//!
//! Threads: two source rows may carry the same index (ggml's threads then race; one thread writes
//! them in source order, the last one winning). Here each destination row belongs to one thread,
//! chosen from the row's address, and every thread walks the source rows in ggml's order, writing
//! only its own: no two threads write one row, and repeated indices end as ggml's single thread
//! leaves them.

use super::{Raw, Session, SERIAL_ELEMENTS};
use crate::op::Node;
use crate::quant::f16::{f16_to_f32_slice, f32_to_f16_slice, fp32_to_fp16};
use crate::view::{alias, Alias, Detached, F16, F32, I32};
use crate::CpuOrder;
use std::sync::atomic::{AtomicBool, Ordering};

/// `GGML_TYPE_I64` (27 in every revision's ggml.h).
pub const I64: i32 = 27;

/// Bytes of one element of a float type the op moves.
fn float_size(ty: i32) -> Option<usize> {
    match ty {
        F32 => Some(4),
        F16 => Some(2),
        _ => None,
    }
}

/// F32 / F16 rows into an F32 / F16 destination with packed, non-overlapping rows, I64 / I32
/// indices, and `ggml_set_rows`'s shape rules; 2026 revisions only. (whisper.rn 0.4.3's ggml-cpu
/// has the F32-rows, I64-indices case of the same loop, but its whisper.cpp never builds the op
/// and no C case runs it there: declined.)
pub fn supports(n: &Node) -> bool {
    let (d, Some(a), Some(i)) = (n.dst, n.src[0], n.src[1]) else { return false };
    let (Some(ds), Some(asz)) = (float_size(d.ty), float_size(a.ty)) else { return false };
    let index_ok = i.ty == I64 || i.ty == I32;
    let shapes = a.ne[0] == d.ne[0] && a.ne[2] == d.ne[2] && a.ne[3] == d.ne[3] && i.ne[0] == a.ne[1];
    let broadcast = i.ne[1] > 0 && i.ne[2] > 0 && i.ne[3] == 1 && a.ne[2].is_multiple_of(i.ne[1]) && a.ne[3].is_multiple_of(i.ne[2]);
    n.order != CpuOrder::BEFORE_2026 && index_ok && shapes && broadcast && d.nb[0] == ds && a.nb[0] == asz && rows_apart(&d, ds)
}

/// Every destination row has bytes of its own (ggml's natural order of strides): the threads'
/// split by destination row relies on it.
fn rows_apart(d: &Raw, ts: usize) -> bool {
    d.nb[1] >= d.ne[0] * ts && d.nb[2] >= d.ne[1] * d.nb[1] && d.nb[3] >= d.ne[2] * d.nb[2]
}

pub fn compute(s: &Session, n: &Node) -> bool {
    set_rows(s, n.dst, n.src(0), n.src(1))
}

/// A private copy of `src` unless it lies apart from `dst` (the destination is written while the
/// sources are read, so even the same tensor must not be read in place).
fn apart(dst: &Raw, src: Raw) -> (Option<Detached>, Raw) {
    if alias(dst, &src) == Alias::Apart {
        (None, src)
    } else {
        let d = Detached::of(&src);
        let raw = d.raw;
        (Some(d), raw)
    }
}

/// Writes the rows of `src` into `dst` at the indices `idx` (see the module doc). False when an
/// index lies outside the destination (ggml-cpu aborts there) or a worker panicked; rows with
/// valid indices are written in either case.
pub fn set_rows(s: &Session, dst: Raw, src: Raw, idx: Raw) -> bool {
    let (_src_copy, src) = apart(&dst, src);
    let (_idx_copy, idx) = apart(&dst, idx);
    let rows = src.nrows();
    let bad = AtomicBool::new(false);
    // the destination row of source row r, in bytes from dst.data (None: index out of range)
    let target = |r: usize| {
        let (i, i02, i03) = src.row_index(r);
        let i1 = read_index(&idx, i, i02 % idx.ne[1], i03 % idx.ne[2]);
        let i1 = usize::try_from(i1).ok().filter(|&i1| i1 < dst.ne[1]);
        (i1.map(|i1| dst.offset(0, i1, i02, i03)), (i, i02, i03))
    };
    let ok = if src.nelements() < SERIAL_ELEMENTS || rows < 2 || s.n_threads() < 2 {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for r in 0..rows {
                match target(r) {
                    (Some(to), from) => put_row(&dst, to, &src, from),
                    (None, _) => bad.store(true, Ordering::Relaxed),
                }
            }
        }))
        .is_ok()
    } else {
        s.run(&|ith, nth| {
            for r in 0..rows {
                match target(r) {
                    (Some(to), from) if owner(to, nth) == ith => put_row(&dst, to, &src, from),
                    (None, _) if ith == 0 => bad.store(true, Ordering::Relaxed),
                    _ => {}
                }
            }
        })
    };
    ok && !bad.load(Ordering::Relaxed)
}

/// The thread that writes the destination row starting `offset` bytes into the destination: by
/// the row's first cache line, so rows of one element sharing a line (the transposed V cache)
/// stay with one thread; hashed, so that regular strides (every K row two lines long, every V
/// element `kv_size` halves apart) still spread over the threads.
fn owner(offset: usize, nth: usize) -> usize {
    let line = (offset / 64) as u64;
    ((line.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % nth as u64) as usize
}

fn read_index(idx: &Raw, i10: usize, i11: usize, i12: usize) -> i64 {
    let p = idx.ptr(i10, i11, i12, 0);
    // SAFETY: (i10, i11, i12) < idx.ne (i10 < ne01 = ne10 by `supports`, the others taken modulo
    // ne11 / ne12), so the element lies inside the index tensor; I64 or I32 as `supports` checked.
    unsafe {
        if idx.ty == I64 {
            (p as *const i64).read_unaligned()
        } else {
            (p as *const i32).read_unaligned() as i64
        }
    }
}

/// Source row `(i, i02, i03)` of `src` converted into the destination row at byte `to` of `dst`.
fn put_row(dst: &Raw, to: usize, src: &Raw, (i, i02, i03): (usize, usize, usize)) {
    let n = dst.ne[0];
    let from = src.ptr(0, i, i02, i03) as *const u8;
    let to = dst.data.wrapping_add(to);
    // SAFETY: the source row lies inside `src` (indices < ne; its rows are packed, `supports`) and
    // apart from `dst` (`apart`); the destination row lies inside `dst` (index checked < ne1,
    // packed, rows apart) and is written by this thread only (`owner`, or the serial loop); both
    // are aligned to their element type as ggml lays tensors out.
    unsafe {
        match (src.ty, dst.ty) {
            (F32, F32) => std::ptr::copy_nonoverlapping(from, to, 4 * n),
            (F16, F16) => std::ptr::copy_nonoverlapping(from, to, 2 * n),
            // one element (the transposed V cache): the slice conversion's set-up costs more
            (F32, _) if n == 1 => (to as *mut u16).write(fp32_to_fp16((from as *const f32).read())),
            (F32, _) => f32_to_f16_slice(std::slice::from_raw_parts(from as *const f32, n), std::slice::from_raw_parts_mut(to as *mut u16, n)),
            _ => f16_to_f32_slice(std::slice::from_raw_parts(from as *const u16, n), std::slice::from_raw_parts_mut(to as *mut f32, n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::Pool;
    use crate::quant::f16::fp16_to_fp32;

    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ((x >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
            })
            .collect()
    }

    fn packed(data: *mut u8, ty: i32, ne: [usize; 4]) -> Raw {
        let ts = match ty {
            F16 => 2,
            I64 => 8,
            _ => 4,
        };
        let nb = [ts, ts * ne[0], ts * ne[0] * ne[1], ts * ne[0] * ne[1] * ne[2]];
        Raw { data, ne, nb, ty }
    }

    /// ggml's loop, one thread: source row (i, i02, i03) to row idx[i, i02 % ne11, i03 % ne12].
    fn reference(cache: &mut [f32], ne_c: [usize; 4], src: &[f32], ne_s: [usize; 4], idx: &[i64], ne_i: [usize; 3]) {
        for i03 in 0..ne_s[3] {
            for i02 in 0..ne_s[2] {
                for i in 0..ne_s[1] {
                    let i1 = idx[i + ne_i[0] * ((i02 % ne_i[1]) + ne_i[1] * (i03 % ne_i[2]))] as usize;
                    let to = ((i03 * ne_c[2] + i02) * ne_c[1] + i1) * ne_c[0];
                    let from = ((i03 * ne_s[2] + i02) * ne_s[1] + i) * ne_s[0];
                    cache[to..to + ne_c[0]].copy_from_slice(&src[from..from + ne_s[0]]);
                }
            }
        }
    }

    /// A [64, kv, 6 heads, 2] cache written by [64, n, 6, 2] rows with indices broadcast over
    /// heads (one index row per 3 heads, GQA-like) and dim 3; serial and threaded sizes, F32 and
    /// F16 caches, I64 and I32 indices; rows not indexed keep their bytes.
    #[test]
    fn rows_land_where_ggml_puts_them() {
        let pool = Pool::new(2);
        let s = pool.session();
        for (n, kv) in [(5usize, 16usize), (37, 64)] {
            let ne_c = [64, kv, 6, 2];
            let ne_s = [64, n, 6, 2];
            let ne_i = [n, 2, 2];
            let x = values(ne_s.iter().product(), n as u64);
            let idx: Vec<i64> = (0..n * 4).map(|k| ((k * 7 + k / n) % kv) as i64).collect();
            let before = values(ne_c.iter().product(), 99);
            let mut want = before.clone();
            reference(&mut want, ne_c, &x, ne_s, &idx, ne_i);
            let idx32: Vec<i32> = idx.iter().map(|&v| v as i32).collect();
            for (ity, iptr) in [(I64, idx.as_ptr() as *mut u8), (I32, idx32.as_ptr() as *mut u8)] {
                let mut ir = packed(iptr, ity, [n, 2, 2, 1]);
                if ity == I32 {
                    ir.nb = [4, 4 * n, 8 * n, 16 * n];
                }
                let src = packed(x.as_ptr() as *mut u8, F32, ne_s);
                let mut c32 = before.clone();
                assert!(set_rows(&s, packed(c32.as_mut_ptr() as *mut u8, F32, ne_c), src, ir));
                assert!(c32.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "f32 cache n={n} idx type {ity}");
                let mut c16: Vec<u16> = before.iter().map(|&v| fp32_to_fp16(v)).collect();
                assert!(set_rows(&s, packed(c16.as_mut_ptr() as *mut u8, F16, ne_c), src, ir));
                let want16: Vec<u16> = want.iter().map(|&v| fp32_to_fp16(v)).collect();
                assert_eq!(c16, want16, "f16 cache n={n} idx type {ity}");
                // F16 rows: copied into an F16 cache, widened into an F32 one
                let h: Vec<u16> = x.iter().map(|&v| fp32_to_fp16(v)).collect();
                let hsrc = packed(h.as_ptr() as *mut u8, F16, ne_s);
                let mut c16b: Vec<u16> = before.iter().map(|&v| fp32_to_fp16(v)).collect();
                assert!(set_rows(&s, packed(c16b.as_mut_ptr() as *mut u8, F16, ne_c), hsrc, ir));
                assert_eq!(c16b, want16);
                let mut c32b: Vec<f32> = before.iter().map(|&v| fp16_to_fp32(fp32_to_fp16(v))).collect();
                assert!(set_rows(&s, packed(c32b.as_mut_ptr() as *mut u8, F32, ne_c), hsrc, ir));
                assert!(c32b.iter().zip(&want16).all(|(a, &b)| a.to_bits() == fp16_to_fp32(b).to_bits()));
            }
        }
    }

    /// The transposed V cache: rows of one element, indices `j * kv + slot`, many per thread.
    /// Repeated indices end with the last source row's value, as ggml's single thread leaves them.
    #[test]
    fn single_elements_and_repeated_indices() {
        let pool = Pool::new(2);
        let s = pool.session();
        let (embd, kv, n) = (48usize, 512usize, 400usize);
        let x = values(embd * n, 3);
        let idx: Vec<i64> = (0..n).flat_map(|t| (0..embd).map(move |j| (j * kv + 100 + t) as i64)).collect();
        let mut cache = vec![0u16; embd * kv];
        let src = packed(x.as_ptr() as *mut u8, F32, [1, embd * n, 1, 1]);
        let ir = packed(idx.as_ptr() as *mut u8, I64, [embd * n, 1, 1, 1]);
        assert!(set_rows(&s, packed(cache.as_mut_ptr() as *mut u8, F16, [1, embd * kv, 1, 1]), src, ir));
        for t in 0..n {
            for j in 0..embd {
                assert_eq!(cache[j * kv + 100 + t], fp32_to_fp16(x[t * embd + j]));
            }
        }
        assert_eq!(cache.iter().filter(|&&h| h != 0).count(), x.iter().filter(|&&v| fp32_to_fp16(v) != 0).count());

        // 4000 rows of 8 onto 3 rows: the last row with each index wins, whatever the split
        let rows = 4000;
        let x = values(8 * rows, 5);
        let idx: Vec<i64> = (0..rows).map(|k| (k % 3) as i64).collect();
        let mut out = vec![0f32; 8 * 3];
        let src = packed(x.as_ptr() as *mut u8, F32, [8, rows, 1, 1]);
        let ir = packed(idx.as_ptr() as *mut u8, I64, [rows, 1, 1, 1]);
        assert!(set_rows(&s, packed(out.as_mut_ptr() as *mut u8, F32, [8, 3, 1, 1]), src, ir));
        for k in 0..3 {
            let last = rows - 3 + ((k + 3 - rows % 3) % 3);
            assert_eq!(idx[last] as usize, k);
            assert_eq!(&out[8 * k..8 * k + 8], &x[8 * last..8 * last + 8], "row {k}");
        }
    }

    fn node(dst: Raw, src: Raw, idx: Raw, order: CpuOrder) -> Node {
        Node { op: crate::op::Op::SetRows, dst, src: [Some(src), Some(idx), Some(dst), None, None], params: [0; 16], order, q8k: None, repack: None }
    }

    /// What `supports` takes: ggml_set_rows's shapes on 2026 revisions, nothing before.
    #[test]
    fn supports_follows_ggml_set_rows() {
        let p = std::ptr::null_mut();
        let rev2026 = CpuOrder { norm_vec_sums: true, ..CpuOrder::BEFORE_2026 };
        let cache = packed(p, F16, [64, 96, 6, 1]);
        let cur = packed(p, F32, [64, 37, 6, 1]);
        let idx = packed(p, I64, [37, 2, 1, 1]);
        assert!(supports(&node(cache, cur, idx, rev2026)));
        assert!(supports(&node(cache, cur, Raw { ty: I32, ..packed(p, I32, [37, 3, 1, 1]) }, rev2026)));
        assert!(supports(&node(packed(p, F32, [64, 96, 6, 1]), packed(p, F16, [64, 37, 6, 1]), idx, rev2026)));
        assert!(!supports(&node(cache, cur, idx, CpuOrder::BEFORE_2026)), "2024: declined");
        assert!(!supports(&node(cache, cur, packed(p, I64, [37, 4, 1, 1]), rev2026)), "6 heads over 4 index rows");
        assert!(!supports(&node(cache, cur, packed(p, I64, [36, 1, 1, 1]), rev2026)), "an index per row");
        assert!(!supports(&node(cache, cur, packed(p, F32, [37, 1, 1, 1]), rev2026)), "index type");
        assert!(!supports(&node(Raw { ty: crate::view::Q8_0, ..cache }, cur, idx, rev2026)), "quantized cache");
        let overlapping = Raw { nb: [2, 64, 96 * 128, 6 * 96 * 128], ..cache };
        assert!(!supports(&node(overlapping, cur, idx, rev2026)), "rows sharing bytes");
    }

    /// An index outside the destination fails the node (ggml-cpu aborts) and writes nothing there.
    #[test]
    fn out_of_range_index_fails() {
        let pool = Pool::new(2);
        let s = pool.session();
        let x = values(16, 1);
        let mut out = vec![0f32; 16 * 2];
        for bad in [2i64, -1] {
            let idx = [1i64, bad];
            let src = packed(x.as_ptr() as *mut u8, F32, [8, 2, 1, 1]);
            let ir = packed(idx.as_ptr() as *mut u8, I64, [2, 1, 1, 1]);
            assert!(!set_rows(&s, packed(out.as_mut_ptr() as *mut u8, F32, [16, 2, 1, 1]), src, ir));
        }
    }

    /// A source that is the destination itself is read from a copy (rows shuffled in place).
    #[test]
    fn source_overlapping_the_destination_is_read_before_writing() {
        let pool = Pool::new(2);
        let s = pool.session();
        let rows = 600;
        let x = values(64 * rows, 11);
        let mut buf = x.clone();
        let idx: Vec<i64> = (0..rows).map(|k| ((k + 1) % rows) as i64).collect();
        let t = packed(buf.as_mut_ptr() as *mut u8, F32, [64, rows, 1, 1]);
        assert!(set_rows(&s, t, t, packed(idx.as_ptr() as *mut u8, I64, [rows, 1, 1, 1])));
        for k in 0..rows {
            let to = (k + 1) % rows;
            assert_eq!(&buf[64 * to..64 * to + 64], &x[64 * k..64 * k + 64]);
        }
    }
}
