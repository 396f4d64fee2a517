//! ADD, SUB, MUL, DIV over f32 rows, `b` broadcast over `a` (ggml's `can_repeat`).

use super::{can_repeat, f32_rows, for_rows, map_row, same_shape, Raw, Session};
use crate::op::{Node, Op};
use crate::view::{alias, Alias, Detached};

pub fn supports(n: &Node) -> bool {
    let (d, Some(a), Some(b)) = (n.dst, n.src[0], n.src[1]) else { return false };
    f32_rows(&a) && f32_rows(&b) && f32_rows(&d) && can_repeat(&b, &a) && same_shape(&a, &d)
}

pub fn compute(s: &Session, n: &Node) -> bool {
    let op = match n.op {
        Op::Add => Binary::Add,
        Op::Sub => Binary::Sub,
        Op::Mul => Binary::Mul,
        _ => Binary::Div,
    };
    run(s, op, n.dst, n.src(0), n.src(1))
}

#[derive(Clone, Copy)]
pub enum Binary {
    Add,
    Sub,
    Mul,
    Div,
}

pub fn run(s: &Session, op: Binary, dst: Raw, a: Raw, b: Raw) -> bool {
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

