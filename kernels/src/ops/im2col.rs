//! IM2COL (1-D and 2-D), which ggml's conv_1d / conv_2d lower to before a MUL_MAT.

use super::{for_rows, is_float, Raw, Session};
use crate::op::Node;

pub fn supports(n: &Node) -> bool {
    n.src[0].is_some() && n.src[1].is_some_and(|i| is_float(i.ty)) && is_float(n.dst.ty)
}

pub fn compute(s: &Session, n: &Node) -> bool {
    im2col(s, n.dst, n.src(0), n.src(1), &Im2colParams::from_op_params(&n.params))
}

pub struct Im2colParams {
    pub s0: usize,
    pub s1: usize,
    pub p0: i64,
    pub p1: i64,
    pub d0: usize,
    pub d1: usize,
    pub is_2d: bool,
}

impl Im2colParams {
    pub fn from_op_params(p: &[i32]) -> Im2colParams {
        Im2colParams {
            s0: p[0].max(0) as usize,
            s1: p[1].max(0) as usize,
            p0: p[2] as i64,
            p1: p[3] as i64,
            d0: p[4].max(0) as usize,
            d1: p[5].max(0) as usize,
            is_2d: p[6] == 1,
        }
    }
}

/// `kernel` gives the kernel's shape; `input` is [IW, IH, IC, N] (2-D) or [IW, IC, N] (1-D);
/// `dst` is [IC*KH*KW, OW, OH, N], F16 or F32.
pub fn im2col(s: &Session, dst: Raw, kernel: Raw, input: Raw, p: &Im2colParams) -> bool {
    let (kw, kh) = (kernel.ne[0], if p.is_2d { kernel.ne[1] } else { 1 });
    let (iw, ih) = (input.ne[0], if p.is_2d { input.ne[1] } else { 1 });
    let ic = if p.is_2d { input.ne[2] } else { input.ne[1] };
    let (ow, oh) = (dst.ne[1], if p.is_2d { dst.ne[2] } else { 1 });
    // one task per output position row: (n, oh, ow)
    for_rows(s, dst.nrows(), dst.nelements(), |r| {
        let (iow, i2, i3) = dst.row_index(r);
        let (ioh, n) = if p.is_2d { (i2, i3) } else { (0, i2) };
        let _ = oh;
        let _ = ow;
        for iic in 0..ic {
            for ikh in 0..kh {
                for ikw in 0..kw {
                    let iiw = (iow * p.s0 + ikw * p.d0) as i64 - p.p0;
                    let iih = (ioh * p.s1 + ikh * p.d1) as i64 - p.p1;
                    let v = if iih < 0 || iih >= ih as i64 || iiw < 0 || iiw >= iw as i64 {
                        0.0
                    } else if p.is_2d {
                        input.read_f32(iiw as usize, iih as usize, iic, n)
                    } else {
                        input.read_f32(iiw as usize, iic, n, 0)
                    };
                    dst.write_f32(iic * kh * kw + ikh * kw + ikw, iow, i2, i3, v);
                }
            }
        }
    })
}
