//! SOFT_MAX with ggml's extensions: a scale, an optional mask (F32 or F16, broadcast over rows),
//! and ALiBi slopes when `max_bias > 0`. The row arithmetic is `softmax_row`'s.

use super::{f32_rows, for_rows, is_float, Raw, Session};
use crate::op::Node;
use crate::softmax_row::{soft_max_row, Mask};
use crate::view::{alias, with_row, Alias, Detached, F16, F32};

/// Keys a row computes and reads are rounded up to this: whole tiles for the product's walk, and
/// whole groups of the softmax's 8-lane passes, so each group it sums is one stock sums too (the
/// groups after it are all -inf, which stock's softmax adds as 0).
const ROW_MULTIPLE: usize = 8;

/// Elements of a row of `n` that a query with limit `limit` (`mul_mat::causal::limits`) needs computed and read.
pub fn needed(limit: usize, n: usize) -> usize {
    limit.next_multiple_of(ROW_MULTIPLE).min(n)
}

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
    let (_a_copy, a) = Detached::unless_apart(&dst, a);
    // mask rows are broadcast, so any sharing with dst gets a private copy
    let mask_copy = mask.filter(|m| alias(&dst, m) != Alias::Apart).map(|m| Detached::of(&m));
    let mask = mask_copy.as_ref().map(|c| c.raw).or(mask);
    let rows = Rows::new(dst, a, mask, scale, max_bias);
    for_rows(s, dst.nrows(), dst.nelements(), |r| rows.row(r, None))
}

/// A SOFT_MAX node's rows, computed one at a time by whoever holds its input row: the executor
/// runs them right after the product that writes them (`ops::mul_mat::mul_mat_softmax`).
pub struct Rows {
    dst: Raw,
    a: Raw,
    mask: Option<Raw>,
    scale: f32,
    max_bias: f32,
    in_place: bool,
    n_head_log2: u32,
    m0: f32,
    m1: f32,
}

impl Rows {
    /// `a` and `mask` must each be `dst` itself or apart from it ([`Self::of`] checks).
    fn new(dst: Raw, a: Raw, mask: Option<Raw>, scale: f32, max_bias: f32) -> Rows {
        let n_head = a.ne[2] as u32;
        let n_head_log2 = if n_head == 0 { 0 } else { 1u32 << (31 - n_head.leading_zeros()) };
        let m0 = 2f32.powf(-max_bias / n_head_log2.max(1) as f32);
        let m1 = 2f32.powf(-(max_bias / 2.0) / n_head_log2.max(1) as f32);
        let in_place = alias(&dst, &a) == Alias::Same;
        Rows { dst, a, mask, scale, max_bias, in_place, n_head_log2, m0, m1 }
    }

    /// The rows of softmax node `n` (checked by [`supports`]), if its input is its output or
    /// apart from it and its mask is apart from its output: then a row can be computed as soon
    /// as its input row is written, without the private copies [`soft_max`] makes.
    pub fn of(n: &Node) -> Option<Rows> {
        let (d, a) = (n.dst, n.src(0));
        let a_ok = matches!(alias(&d, &a), Alias::Same | Alias::Apart);
        let mask_ok = n.src[1].is_none_or(|m| alias(&d, &m) == Alias::Apart);
        (a_ok && mask_ok).then(|| Rows::new(d, a, n.src[1], n.param_f32(0), n.param_f32(1)))
    }

    /// Whether the row's keys past a -inf mask leave its values alone: no ALiBi (the mask is
    /// added with slope 1) and a finite scale (`ops::mul_mat::causal`).
    pub fn masks_by_adding(&self) -> bool {
        self.max_bias == 0.0 && self.scale.is_finite()
    }

    pub fn mask(&self) -> Option<&Raw> {
        self.mask.as_ref()
    }

    /// Row `r` (flat, as [`Raw::row_index`] counts). With `Some(limit)`, only the first
    /// `limit` elements are read (rounded up by [`needed`]), the rest of the row being
    /// masked with -inf: they are written as the 0 that `exp(-inf)` gives, and the sum gains
    /// the same nothing (see `ops::mul_mat::causal`).
    pub fn row(&self, r: usize, limit: Option<usize>) {
        let (dst, a) = (&self.dst, &self.a);
        let (i1, i2, i3) = dst.row_index(r);
        let h = i2 as u32;
        // powf, not powi: ggml calls powf, and repeated multiplication rounds differently
        let slope = if self.max_bias > 0.0 {
            if h < self.n_head_log2 {
                self.m0.powf((h + 1) as f32)
            } else {
                self.m1.powf((2 * (h - self.n_head_log2) + 1) as f32)
            }
        } else {
            1.0
        };
        let n = a.ne[0];
        let gathered: Vec<f32>;
        let mask = match &self.mask {
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
        let (scale, read) = (self.scale, limit.map_or(n, |l| needed(l, n)));
        with_row(dst, a, self.in_place, (i1, i2, i3), |x, d| {
            let read = read.min(x.len()).min(d.len());
            let (head, masked) = d.split_at_mut(read);
            soft_max_row(&x[..read], head, mask, scale, slope);
            masked.fill(0.0);
        });
    }
}
