//! SOFT_MAX with ggml's extensions: a scale, an optional mask (F32 or F16, broadcast over rows),
//! and ALiBi slopes when `max_bias > 0`. The row arithmetic is `softmax_row`'s.

use super::{f32_rows, for_rows, is_float, Raw, Session};
use crate::simd::op::Node;
use crate::simd::softmax_row::{soft_max_row, Mask};
use crate::simd::view::{alias, with_row, Alias, Detached, F16, F32};

/// F32 rows, an optional F32/F16 mask as wide as a row, no ALiBi sinks (`src[2]`).
pub fn supports(n: &Node) -> bool {
    let (d, Some(a)) = (n.dst, n.src[0]) else { return false };
    let mask_ok = n.src[1].is_none_or(|m| is_float(m.ty) && m.ne[0] == a.ne[0]);
    f32_rows(&a) && f32_rows(&d) && mask_ok && n.src[2].is_none()
}

/// Scale and max_bias in `op_params[0..2]`.
pub fn compute(s: &Session, n: &Node) -> bool {
    soft_max(s, n.dst, n.src(0), n.src[1], n.param_f32(0), n.param_f32(1))
}

pub fn soft_max(s: &Session, dst: Raw, a: Raw, mask: Option<Raw>, scale: f32, max_bias: f32) -> bool {
    let n_head = a.ne[2] as u32;
    let n_head_log2 = if n_head == 0 { 0 } else { 1u32 << (31 - n_head.leading_zeros()) };
    let m0 = 2f32.powf(-max_bias / n_head_log2.max(1) as f32);
    let m1 = 2f32.powf(-(max_bias / 2.0) / n_head_log2.max(1) as f32);
    let (_a_copy, a) = Detached::unless_apart(&dst, a);
    let in_place = alias(&dst, &a) == Alias::Same;
    // mask rows are broadcast, so any sharing with dst gets a private copy
    let mask_copy = mask.filter(|m| alias(&dst, m) != Alias::Apart).map(|m| Detached::of(&m));
    let mask = mask_copy.as_ref().map(|c| c.raw).or(mask);
    for_rows(s, dst.nrows(), dst.nelements(), |r| {
        let (i1, i2, i3) = dst.row_index(r);
        let h = i2 as u32;
        // powf, not powi: ggml calls powf, and repeated multiplication rounds differently
        let slope = if max_bias > 0.0 {
            if h < n_head_log2 {
                m0.powf((h + 1) as f32)
            } else {
                m1.powf((2 * (h - n_head_log2) + 1) as f32)
            }
        } else {
            1.0
        };
        let n = a.ne[0];
        let gathered: Vec<f32>;
        let mask = match &mask {
            None => Mask::None,
            Some(m) => {
                let (j1, j2, j3) = (i1 % m.ne[1], i2 % m.ne[2], i3 % m.ne[3]);
                if m.ty == F32 && m.nb[0] == 4 {
                    Mask::F32(&m.row_f32(j1, j2, j3)[..n.min(m.ne[0])])
                } else if m.ty == F16 && m.nb[0] == 2 {
                    Mask::F16(m.row_bytes(j1, j2, j3, 2 * n.min(m.ne[0])))
                } else {
                    // strided mask rows: widen once (exact for F16) and take the F32 path
                    gathered = (0..n.min(m.ne[0])).map(|i| m.read_f32(i, j1, j2, j3)).collect();
                    Mask::F32(&gathered)
                }
            }
        };
        with_row(&dst, &a, in_place, (i1, i2, i3), |x, d| soft_max_row(x, d, mask, scale, slope));
    })
}
