//! GET_ROWS: gathers rows of `a` (any [`WType`]) by I32 indices into F32 rows.

use super::{f32_rows, for_rows, Raw, Session};
use crate::cpu_features::simd_level;
use crate::op::Node;
use crate::quant::WType;
use crate::view::I32;

/// Rows of a weight type packed along dim 0, whole blocks, I32 indices, F32 rows out.
pub fn supports(n: &Node) -> bool {
    let (d, Some(a), Some(i)) = (n.dst, n.src[0], n.src[1]) else { return false };
    let Some(w) = WType::from_ggml(a.ty) else { return false };
    a.nb[0] == w.block_bytes() && a.ne[0].is_multiple_of(w.block_len()) && w.rows_aligned(a.data, &a.nb) && f32_rows(&d) && i.ty == I32
}

pub fn compute(s: &Session, n: &Node) -> bool {
    get_rows(s, n.dst, n.src(0), n.src(1))
}

pub fn get_rows(s: &Session, dst: Raw, a: Raw, idx: Raw) -> bool {
    let w = WType::from_ggml(a.ty).expect("checked by supports");
    let len = w.row_bytes(a.ne[0]);
    let level = simd_level();
    for_rows(s, dst.nrows(), dst.nelements(), |r| {
        let (i10, i11, i12) = dst.row_index(r);
        let row = idx.read_i32(i10, i11, i12, 0).max(0) as usize;
        let src = a.row_bytes(row.min(a.ne[1].saturating_sub(1)), i11 % a.ne[2], i12 % a.ne[3], len);
        w.to_f32_at(level, src, dst.row_f32_mut(i10, i11, i12));
    })
}
