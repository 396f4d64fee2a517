//! SCALE, SQR, SQRT and the unary SILU and GELU over f32 rows, whose kernels (`vexp`, `gelu`)
//! reproduce ggml-cpu's results.

use super::{f32_rows, for_rows, map_row, same_shape, Raw, Session};
use crate::op::{Node, Op};
use crate::view::{alias, with_row, Alias, Detached};
use crate::{gelu, vexp};

pub fn supports(n: &Node) -> bool {
    let (d, Some(a)) = (n.dst, n.src[0]) else { return false };
    // 2026's SCALE carries a bias in op_params[1] (`ggml_scale_bias`), which the kernel does not add
    let no_bias = n.op != Op::Scale || n.params[1] == 0;
    f32_rows(&a) && f32_rows(&d) && same_shape(&a, &d) && no_bias
}

pub fn compute(s: &Session, n: &Node) -> bool {
    let op = match n.op {
        Op::Scale => Unary::Scale(n.param_f32(0)),
        Op::Sqr => Unary::Sqr,
        Op::Sqrt => Unary::Sqrt,
        Op::Silu => Unary::Silu,
        _ => Unary::Gelu,
    };
    run(s, op, n.dst, n.src(0))
}

#[derive(Clone, Copy)]
pub enum Unary {
    Scale(f32),
    Sqr,
    Sqrt,
    Silu,
    Gelu,
}

pub fn run(s: &Session, op: Unary, dst: Raw, a: Raw) -> bool {
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
