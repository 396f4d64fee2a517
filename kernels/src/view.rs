//! Raw views of tensor data for the kernels: shape, strides and rows as slices.
//!
//! The executor validates every node before computing it (`supports_op`: types, contiguous rows
//! where a kernel needs them, an allocated `data`), and splits each node's output rows between
//! threads so that no two threads write the same row. Under those two rules, handing out row
//! slices from raw pointers is sound; this module is where that is done.
//!
//! A third rule covers in-place ops (`ggml_add_inplace`, `ggml_soft_max_inplace`, a CPY onto
//! itself...), whose destination is a view of a source: a shared slice and a mutable slice over
//! the same bytes must never exist at once. Each op asks [`alias`] how its destination relates to
//! each source; `Same` rows are computed through the one mutable row ([`with_row`] hands kernels
//! that need a separate source a per-thread copy of it), and a source that merely `Overlap`s the
//! destination is [`Detached`] (copied whole) before any thread starts.

pub use super::quant::type_id::{F16, F32, I32, Q4_0, Q4_1, Q8_0};
use super::quant::WType;

#[derive(Clone, Copy, Debug)]
pub struct Raw {
    pub data: *mut u8,
    pub ne: [usize; 4],
    pub nb: [usize; 4],
    pub ty: i32,
}

// SAFETY: a Raw is an address plus a shape; the executor's row split (see the module doc) keeps
// concurrent writers apart.
unsafe impl Send for Raw {}
// SAFETY: as above.
unsafe impl Sync for Raw {}

impl Raw {
    pub fn nrows(&self) -> usize {
        self.ne[1] * self.ne[2] * self.ne[3]
    }

    pub fn nelements(&self) -> usize {
        self.ne.iter().product()
    }

    /// (i1, i2, i3) of row `r` in row-major order.
    pub fn row_index(&self, r: usize) -> (usize, usize, usize) {
        let i1 = r % self.ne[1];
        let i2 = (r / self.ne[1]) % self.ne[2];
        let i3 = r / (self.ne[1] * self.ne[2]);
        (i1, i2, i3)
    }

    pub fn offset(&self, i0: usize, i1: usize, i2: usize, i3: usize) -> usize {
        i0 * self.nb[0] + i1 * self.nb[1] + i2 * self.nb[2] + i3 * self.nb[3]
    }

    pub fn ptr(&self, i0: usize, i1: usize, i2: usize, i3: usize) -> *mut u8 {
        self.data.wrapping_add(self.offset(i0, i1, i2, i3))
    }

    /// Row (i1, i2, i3) of an F32 tensor with contiguous rows.
    pub fn row_f32<'a>(&self, i1: usize, i2: usize, i3: usize) -> &'a [f32] {
        debug_assert!(self.ty == F32 && self.nb[0] == 4);
        // SAFETY: see the module doc: validated, allocated, in bounds (indices < ne).
        unsafe { std::slice::from_raw_parts(self.ptr(0, i1, i2, i3) as *const f32, self.ne[0]) }
    }

    /// Mutable row of an F32 tensor with contiguous rows; the caller owns this row in the split.
    #[allow(clippy::mut_from_ref)]
    pub fn row_f32_mut<'a>(&self, i1: usize, i2: usize, i3: usize) -> &'a mut [f32] {
        debug_assert!(self.ty == F32 && self.nb[0] == 4);
        // SAFETY: see the module doc; rows are written by exactly one thread.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(0, i1, i2, i3) as *mut f32, self.ne[0]) }
    }

    /// The bytes of row (i1, i2, i3) of a tensor whose rows are contiguous (any type).
    pub fn row_bytes<'a>(&self, i1: usize, i2: usize, i3: usize, len: usize) -> &'a [u8] {
        // SAFETY: see the module doc; `len` is the row's byte size.
        unsafe { std::slice::from_raw_parts(self.ptr(0, i1, i2, i3) as *const u8, len) }
    }

    pub fn read_f32(&self, i0: usize, i1: usize, i2: usize, i3: usize) -> f32 {
        let p = self.ptr(i0, i1, i2, i3);
        // SAFETY: see the module doc; F32 / F16 element in bounds.
        unsafe {
            match self.ty {
                F16 => crate::quant::f16::fp16_to_fp32((p as *const u16).read_unaligned()),
                _ => (p as *const f32).read_unaligned(),
            }
        }
    }

    pub fn write_f32(&self, i0: usize, i1: usize, i2: usize, i3: usize, v: f32) {
        let p = self.ptr(i0, i1, i2, i3);
        // SAFETY: see the module doc; this element belongs to the calling thread's rows.
        unsafe {
            match self.ty {
                F16 => (p as *mut u16).write_unaligned(crate::quant::f16::fp32_to_fp16(v)),
                _ => (p as *mut f32).write_unaligned(v),
            }
        }
    }

    pub fn read_i32(&self, i0: usize, i1: usize, i2: usize, i3: usize) -> i32 {
        // SAFETY: see the module doc; I32 element in bounds.
        unsafe { (self.ptr(i0, i1, i2, i3) as *const i32).read_unaligned() }
    }

    pub fn rows_contiguous(&self, type_size: usize) -> bool {
        self.nb[0] == type_size
    }

    /// Whether the elements are densely packed in row-major order (F32 or F16).
    pub fn is_contiguous(&self) -> bool {
        let ts = if self.ty == F16 { 2 } else { 4 };
        self.nb[0] == ts && self.nb[1] == ts * self.ne[0] && self.nb[2] == self.nb[1] * self.ne[1] && self.nb[3] == self.nb[2] * self.ne[2]
    }

    /// Elements `start..start + len` of a contiguous F32 tensor.
    pub fn flat_f32<'a>(&self, start: usize, len: usize) -> &'a [f32] {
        debug_assert!(self.ty == F32 && self.is_contiguous() && start + len <= self.nelements());
        // SAFETY: see the module doc; a contiguous tensor's elements are `nelements` packed f32.
        unsafe { std::slice::from_raw_parts((self.data as *const f32).add(start), len) }
    }

    /// Elements `start..start + len` of a contiguous F16 tensor, as half bits.
    pub fn flat_f16<'a>(&self, start: usize, len: usize) -> &'a [u16] {
        debug_assert!(self.ty == F16 && self.is_contiguous() && start + len <= self.nelements());
        // SAFETY: as above, packed u16.
        unsafe { std::slice::from_raw_parts((self.data as *const u16).add(start), len) }
    }

    /// Mutable [`Self::flat_f32`]; the caller owns this range in the split.
    #[allow(clippy::mut_from_ref)]
    pub fn flat_f32_mut<'a>(&self, start: usize, len: usize) -> &'a mut [f32] {
        debug_assert!(self.ty == F32 && self.is_contiguous() && start + len <= self.nelements());
        // SAFETY: as above; ranges are written by exactly one thread.
        unsafe { std::slice::from_raw_parts_mut((self.data as *mut f32).add(start), len) }
    }

    /// Mutable [`Self::flat_f16`]; the caller owns this range in the split.
    #[allow(clippy::mut_from_ref)]
    pub fn flat_f16_mut<'a>(&self, start: usize, len: usize) -> &'a mut [u16] {
        debug_assert!(self.ty == F16 && self.is_contiguous() && start + len <= self.nelements());
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts_mut((self.data as *mut u16).add(start), len) }
    }
}

impl Raw {
    /// `len` bytes starting `offset` bytes into the data.
    pub fn bytes_at<'a>(&self, offset: usize, len: usize) -> &'a [u8] {
        // SAFETY: see the module doc; callers pass ranges inside the tensor's `nbytes`.
        unsafe { std::slice::from_raw_parts(self.data.add(offset) as *const u8, len) }
    }

    /// `len` f32 starting `offset` bytes into the data (4-byte aligned, as ggml lays out F32).
    pub fn f32_at<'a>(&self, offset: usize, len: usize) -> &'a [f32] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(self.data.add(offset) as *const f32, len) }
    }

    /// Mutable `len` f32 at `offset`; the caller is the only one to hand out views into this
    /// range (MUL_MAT splits it into disjoint column views before any thread starts).
    #[allow(clippy::mut_from_ref)]
    pub fn f32_at_mut<'a>(&self, offset: usize, len: usize) -> &'a mut [f32] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts_mut(self.data.add(offset) as *mut f32, len) }
    }
}

/// How an op's destination lies relative to one of its sources.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Alias {
    /// disjoint bytes
    Apart,
    /// the same tensor: same address, shape and strides (an in-place op)
    Same,
    /// any other sharing of bytes
    Overlap,
}

impl Raw {
    /// Bytes from `data` to one past the last element (strides are non-negative in ggml). Rows
    /// of a block format (`nb[0]` is a block's bytes, `ne[0]` counts values) end after their last
    /// whole block.
    fn extent(&self) -> usize {
        if self.nelements() == 0 {
            return 0;
        }
        let row = match WType::from_ggml(self.ty) {
            Some(w) if w.block_len() > 1 => w.row_bytes(self.ne[0]),
            _ => (self.ne[0] - 1) * self.nb[0] + self.nb[0].max(if self.ty == F16 { 2 } else { 4 }),
        };
        (1..4).map(|i| (self.ne[i] - 1) * self.nb[i]).sum::<usize>() + row
    }
}

/// How `dst` and `src` share memory (see the module doc).
pub fn alias(dst: &Raw, src: &Raw) -> Alias {
    let (d, s) = (dst.data as usize, src.data as usize);
    let (de, se) = (dst.extent(), src.extent());
    if de == 0 || se == 0 || d + de <= s || s + se <= d {
        Alias::Apart
    } else if d == s && dst.ne == src.ne && dst.nb == src.nb && dst.ty == src.ty {
        Alias::Same
    } else {
        Alias::Overlap
    }
}

/// A private copy of a source's bytes, for an op whose destination overlaps that source without
/// being it; `raw` views the copy with the source's shape and strides, and lives as long as this.
pub struct Detached {
    _buf: Vec<f32>,
    pub raw: Raw,
}

impl Detached {
    pub fn of(src: &Raw) -> Detached {
        let len = src.extent();
        // f32 storage, so rows of the copy keep the 4-byte alignment `row_f32` relies on
        let mut buf = vec![0f32; len.div_ceil(4)];
        // SAFETY: `src` is valid for `len` bytes (its extent); `buf` is a fresh allocation of at
        // least `len` bytes, so the ranges cannot overlap; no thread writes `src` while the op has
        // not started.
        unsafe { std::ptr::copy_nonoverlapping(src.data as *const u8, buf.as_mut_ptr() as *mut u8, len) };
        let raw = Raw { data: buf.as_mut_ptr() as *mut u8, ..*src };
        Detached { _buf: buf, raw }
    }

    /// `src` itself when it does not overlap `dst` (or is it), else a detached copy.
    pub fn unless_apart(dst: &Raw, src: Raw) -> (Option<Detached>, Raw) {
        if alias(dst, &src) == Alias::Overlap {
            let d = Detached::of(&src);
            let raw = d.raw;
            (Some(d), raw)
        } else {
            (None, src)
        }
    }
}

thread_local! {
    /// a copy of the row being computed in place, for kernels that take a separate source
    static ROW_COPY: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `f(source row, destination row)` for row (i1, i2, i3) of a row-local op on F32 rows. With
/// `in_place` (`alias` said `Same`) the destination row is the only view made of those bytes and
/// the source handed to `f` is a copy of it.
pub fn with_row(dst: &Raw, src: &Raw, in_place: bool, (i1, i2, i3): (usize, usize, usize), f: impl FnOnce(&[f32], &mut [f32])) {
    let d = dst.row_f32_mut(i1, i2, i3);
    if !in_place {
        return f(src.row_f32(i1, i2, i3), d);
    }
    ROW_COPY.with(|c| {
        let mut c = c.borrow_mut();
        c.clear();
        c.extend_from_slice(d);
        f(&c, d)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tensor at a fake address (never read: `alias` compares addresses only).
    fn at(addr: usize, ty: i32, ne: [usize; 4], nb: [usize; 4]) -> Raw {
        Raw { data: addr as *mut u8, ne, nb, ty }
    }

    /// A block format's rows end after their last whole block (`nb[0]` is a block's bytes,
    /// `ne[0]` counts values): 2 rows of 64 Q8_0 values are 2 x 68 bytes, not `63 * 34` more.
    #[test]
    fn block_rows_end_after_their_last_block() {
        let w = at(0x1000, Q8_0, [64, 2, 1, 1], [34, 68, 136, 136]);
        let f32_at = |addr: usize| at(addr, F32, [4, 1, 1, 1], [4, 16, 16, 16]);
        assert_eq!(alias(&f32_at(0x1000 + 136), &w), Alias::Apart);
        assert_eq!(alias(&f32_at(0x1000 + 132), &w), Alias::Overlap);
        assert_eq!(alias(&w, &f32_at(0x1000 - 16)), Alias::Apart);
        // float rows: the last element's end, as before
        let h = at(0x1000, F16, [8, 2, 1, 1], [2, 16, 32, 32]);
        assert_eq!(alias(&f32_at(0x1000 + 32), &h), Alias::Apart);
        assert_eq!(alias(&f32_at(0x1000 + 28), &h), Alias::Overlap);
    }
}
