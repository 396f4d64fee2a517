//! NORM (layer norm) and RMS_NORM over rows, with ggml's double-precision sums.

use super::{f32_rows, for_rows, map_row, same_shape, Raw, Session};
use crate::simd::op::{Node, Op};
use crate::simd::view::{alias, Alias, Detached};

pub fn supports(n: &Node) -> bool {
    let (d, Some(a)) = (n.dst, n.src[0]) else { return false };
    f32_rows(&a) && f32_rows(&d) && same_shape(&a, &d)
}

/// NORM or RMS_NORM, `eps` in `op_params[0]`.
pub fn compute(s: &Session, n: &Node) -> bool {
    match n.op {
        Op::Norm => norm(s, n.dst, n.src(0), n.param_f32(0)),
        _ => rms_norm(s, n.dst, n.src(0), n.param_f32(0)),
    }
}

pub fn norm(s: &Session, dst: Raw, a: Raw, eps: f32) -> bool {
    let (_a_copy, a) = Detached::unless_apart(&dst, a);
    let in_place = alias(&dst, &a) == Alias::Same;
    for_rows(s, dst.nrows(), dst.nelements(), |r| {
        let (i1, i2, i3) = dst.row_index(r);
        // in place, the sums read the destination row before anything is written to it
        let x = (!in_place).then(|| a.row_f32(i1, i2, i3));
        let d = dst.row_f32_mut(i1, i2, i3);
        let n = d.len();
        let sum: f64 = x.unwrap_or(&*d).iter().map(|&v| v as f64).sum();
        let mean = (sum / n as f64) as f32;
        let mut sum2 = 0f64;
        map_row(d, x, |_, x| {
            let v = x - mean;
            sum2 += (v * v) as f64;
            v
        });
        let variance = (sum2 / n as f64) as f32;
        let scale = 1.0 / (variance + eps).sqrt();
        d.iter_mut().for_each(|v| *v *= scale);
    })
}

pub fn rms_norm(s: &Session, dst: Raw, a: Raw, eps: f32) -> bool {
    let (_a_copy, a) = Detached::unless_apart(&dst, a);
    let in_place = alias(&dst, &a) == Alias::Same;
    for_rows(s, dst.nrows(), dst.nelements(), |r| {
        let (i1, i2, i3) = dst.row_index(r);
        let x = (!in_place).then(|| a.row_f32(i1, i2, i3));
        let d = dst.row_f32_mut(i1, i2, i3);
        let sum: f64 = x.unwrap_or(&*d).iter().map(|&v| (v * v) as f64).sum();
        let mean = (sum / d.len() as f64) as f32;
        let scale = 1.0 / (mean + eps).sqrt();
        map_row(d, x, |_, v| v * scale);
    })
}
