//! Whether the host's ggml-cpu computes each kind of node in the float order the SIMD kernels
//! follow, found out once per revision by computing small graphs both ways, so that SIMD declines
//! a kind rather than give other answers than stock.
//!
//! The kernels follow ggml-cpu as the packages compile it with the default floating-point model.
//! A host build may order its float operations otherwise, and no symbol says so: clang's
//! `-ffp-model=fast` (the 2026 packages' arm64 flags) reassociates and contracts ggml-cpu's C
//! (RMS_NORM's products, the activations' quantization, the products' sums), and an i8mm ggml-cpu
//! multiplies some formats two rows at a time (`nrows = 2` in its type traits, read directly).
//! So the first time SIMD is asked what it supports, every kind below runs on a small graph, built
//! by the host's own op constructors, on the host's ggml-cpu and on SIMD's kernels; a kind whose
//! outputs differ in one bit stays with ggml-cpu for the life of the process, and one log line
//! says which. A node of a kind no graph here covers (other types) is declined when a covered
//! kind of the same op differed. A difference only rare inputs show (a double sum rounding to
//! float across a boundary) can escape the check.
//!
//! `GGML_RS_SIMD_EXACT=0` skips it (SIMD takes every node it implements, even where this host's
//! float order differs), and so does `GGML_RS_SIMD_SGEMM=1`, which already trades stock's exact
//! answers for speed; `GGML_RS_FAULT_SIMD_ORDER=<names>` makes the named kinds differ (tests).

use super::{exec, node};
use super::op::{Node, Op};
use super::pool::Pool;
use crate::abi::vtable::obj;
use crate::abi::{LogLevel, Rev, Tensor};
use crate::host_graph::{Build, HostCpu, HostGraph, Id};

const F32: i32 = 0;
const F16: i32 = 1;
const I32: i32 = 26;
/// The weight formats the SIMD products and GET_ROWS take (type ids are the same in every revision).
const WEIGHTS: [(i32, &str); 11] =
    [(0, "f32"), (1, "f16"), (2, "q4_0"), (3, "q4_1"), (6, "q5_0"), (7, "q5_1"), (8, "q8_0"), (12, "q4_K"), (13, "q5_K"), (14, "q6_K"), (20, "iq4_nl")];

/// What a node is, for this check: its op, its sources' and destination's types, and (MUL) whether
/// a source is an RMS_NORM (ggml-cpu fuses the pair from 2026 on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind {
    op: Op,
    types: [i32; 3],
    /// ROPE: the mode; 0 otherwise
    mode: i32,
    after_rms_norm: bool,
}

impl Kind {
    fn of<R: Rev>(t: &Tensor<R>, n: &Node) -> Kind {
        let ty = |i: usize| n.src[i].map_or(-1, |s| s.ty);
        let after_rms_norm = n.op == Op::Mul && t.src[..2].iter().any(|&s| obj(s).is_some_and(|s| s.op == R::OPS.rms_norm));
        Kind { op: n.op, types: [ty(0), ty(1), n.dst.ty], mode: if n.op == Op::Rope { n.params[2] } else { 0 }, after_rms_norm }
    }

    fn name(&self) -> String {
        let ty = |t: i32| match t {
            I32 => "i32",
            -1 => "-",
            _ => WEIGHTS.iter().find(|w| w.0 == t).map_or("?", |w| w.1),
        };
        let op = if self.after_rms_norm { "MUL after RMS_NORM" } else { self.op.name() };
        let mode = if self.op == Op::Rope { format!(" mode {}", self.mode) } else { String::new() };
        format!("{}({},{}->{}){}", op, ty(self.types[0]), ty(self.types[1]), ty(self.types[2]), mode)
    }
}

/// The outcome of the check for one revision.
#[derive(Default)]
struct Verdicts {
    checked: Vec<Kind>,
    differ: Vec<Kind>,
}

impl Verdicts {
    fn declines(&self, k: &Kind) -> bool {
        let differs = |k: &Kind| self.differ.contains(k);
        if differs(k) {
            return true;
        }
        // a fused RMS_NORM + MUL that differs keeps both nodes on ggml-cpu, where it fuses them
        if k.op == Op::RmsNorm && self.differ.iter().any(|d| d.after_rms_norm) {
            return true;
        }
        !self.checked.contains(k) && self.differ.iter().any(|d| d.op == k.op && d.after_rms_norm == k.after_rms_norm)
    }
}

static VERDICTS: crate::per_rev::PerRev = crate::per_rev::PerRev::new();

static ENABLED: once_cell::sync::Lazy<bool> =
    once_cell::sync::Lazy::new(|| std::env::var("GGML_RS_SIMD_EXACT").map_or(true, |v| v != "0") && !super::matmul::sgemm_forced());

/// Whether SIMD leaves node `t` (read as `n`) to ggml-cpu because this host's ggml-cpu computes
/// its kind in another float order. Runs the check on first use.
pub fn declines<R: Rev>(t: &Tensor<R>, n: &Node) -> bool {
    *ENABLED && VERDICTS.get::<R, _>(check::<R>).declines(&Kind::of(t, n))
}

/// Runs every graph of [`cases`] both ways and logs the outcome.
fn check<R: Rev>() -> Verdicts {
    let mut v = Verdicts::default();
    let Some(cpu) = HostCpu::<R>::new() else {
        // no ggml-cpu: SIMD is the host's CPU backend, nothing to be identical to
        return v;
    };
    let pool = Pool::new(1);
    let session = pool.session();
    let faults: Vec<String> = std::env::var("GGML_RS_FAULT_SIMD_ORDER").map(|s| s.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect()).unwrap_or_default();
    let mut reasons = Vec::new();
    for case in cases() {
        let Some(g) = build::<R>(&case) else { continue };
        // the kind is the last node's (an output, made last)
        let Some(kind) = g.nodes().last().and_then(|&t| obj(t)).map(|t| Kind::of(t, &node::node(t))) else { continue };
        let two_rows = matches!(case, Case::MulMat(..)) && crate::host::traits_cpu::<R>(case.weight()).is_some_and(|t| t.nrows > 1);
        let same = if two_rows {
            Some(false)
        } else {
            compare(&g, &cpu, &session, faults.iter().any(|f| kind.name().contains(f.as_str())))
        };
        let Some(same) = same else { continue };
        v.checked.push(kind);
        if !same {
            v.differ.push(kind);
            reasons.push(format!("{}{}", kind.name(), if two_rows { " (two rows at a time)" } else { "" }));
        }
    }
    let msg = if reasons.is_empty() {
        format!("SIMD: {} kinds of node computed on small graphs by SIMD and by this host's ggml-cpu: all bit-identical", v.checked.len())
    } else {
        format!(
            "SIMD: this host's ggml-cpu computes {} of {} kinds of node in another float order (its compiler flags); they stay with ggml-cpu: {}",
            reasons.len(),
            v.checked.len(),
            reasons.join(", ")
        )
    };
    crate::host::log::<R>(LogLevel::Info, &msg);
    v
}

/// Computes `g`'s nodes with SIMD's kernels, then the graph on ggml-cpu; whether the outputs are
/// bit-identical (`None`: a node SIMD would not take, or ggml-cpu failed; nothing learnt).
fn compare<R: Rev>(g: &HostGraph<R>, cpu: &HostCpu<R>, s: &super::pool::Session, fault: bool) -> Option<bool> {
    for &t in g.nodes() {
        if !exec::compute_unchecked(s, obj(t)?)? {
            return None;
        }
    }
    let mut ours = g.output_bytes();
    if fault {
        if let Some(b) = ours.first_mut().and_then(|o| o.first_mut()) {
            *b ^= 1;
        }
    }
    cpu.compute(g).then(|| ours == g.output_bytes())
}

/// One small graph: which op, over which types.
#[derive(Clone, Copy, Debug)]
enum Case {
    /// weights of the type × activations of the type; 1, 2 and 16 activation rows
    MulMat(i32, i32),
    GetRows(i32),
    Norm,
    RmsNorm,
    RmsNormMul,
    Binary(&'static str),
    Unary(Build),
    SoftMax { mask: Option<i32> },
    Rope(i32),
    Copy(i32, i32),
    Im2col,
}

impl Case {
    fn weight(&self) -> i32 {
        match self {
            Case::MulMat(w, _) | Case::GetRows(w) => *w,
            _ => F32,
        }
    }
}

fn cases() -> Vec<Case> {
    let mut c: Vec<Case> = WEIGHTS.iter().map(|&(w, _)| Case::MulMat(w, F32)).collect();
    c.push(Case::MulMat(F16, F16));
    c.extend(WEIGHTS.iter().map(|&(w, _)| Case::GetRows(w)));
    c.extend([Case::Norm, Case::RmsNorm, Case::RmsNormMul]);
    c.extend(["add", "sub", "mul", "div"].map(Case::Binary));
    c.extend([Build::WithF32("scale", 0.125), Build::Unary("sqr"), Build::Unary("sqrt"), Build::Unary("silu"), Build::Unary("gelu")].map(Case::Unary));
    c.extend([Case::SoftMax { mask: None }, Case::SoftMax { mask: Some(F16) }, Case::SoftMax { mask: Some(F32) }, Case::Rope(0), Case::Rope(2)]);
    c.extend([Case::Copy(F32, F16), Case::Copy(F16, F32), Case::Im2col]);
    c
}

/// Inputs: a fixed pseudo-random sequence in [-2, 2) (xorshift), so every run checks the same values.
fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut x = seed.wrapping_mul(2654435761).max(1);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 8) as f32 / (1u32 << 22) as f32 - 2.0
        })
        .collect()
}

/// A block of 32 activations that the Q8_0 / Q8_1 activation quantizer (`d = amax / 127`,
/// `id = 1 / d`, each value rounded from `x * id`) puts a value on the other side of a rounding
/// boundary when a compiler rewrites `id` as `127 / amax` or `d` as `amax * (1 / 127)` (fast-math's
/// reciprocal and reassociation rewrites): such a rewrite changes `id` in its last bit, which moves
/// a quantized value only for values within an ulp of a half-integer, which random inputs almost
/// never are (Gemma 3's products quantize millions of values and hit them; the uniform values
/// above did not). The block holds its amax and, for each rewrite, a value found at its edge.
fn quant_edge_block(seed: u32) -> [f32; 32] {
    let mut b = [0f32; 32];
    b.copy_from_slice(&values(32, seed ^ 0x5a5a));
    let exact = |amax: f32| 1.0f32 / (amax / 127.0);
    let rewrites = [|amax: f32| 127.0f32 / amax, |amax: f32| 1.0f32 / (amax * (1.0 / 127.0))];
    // an amax above the random values' bound (2.0) where both rewrites move `id`
    for i in 0..100_000u32 {
        let amax = f32::from_bits(2.5f32.to_bits() + i.wrapping_mul(7919) % (1 << 22));
        let id = exact(amax);
        let edges: Vec<f32> = rewrites.iter().filter_map(|r| quant_edge(amax, id, r(amax))).collect();
        if edges.len() == rewrites.len() {
            b[0] = amax;
            b[1..1 + edges.len()].copy_from_slice(&edges);
            break;
        }
    }
    b
}

/// A value below `amax` that `x * id` and `x * id2` round to different integers, if one is near.
fn quant_edge(amax: f32, id: f32, id2: f32) -> Option<f32> {
    if id == id2 {
        return None;
    }
    (1..126).rev().find_map(|k| {
        let x0 = (k as f32 + 0.5) / id;
        (-8i32..=8).map(|dx| f32::from_bits((x0.to_bits() as i32 + dx) as u32)).find(|&x| x < amax && (x * id).round_ties_even() != (x * id2).round_ties_even())
    })
}

/// The graph of `case`, its inputs filled; `None` when the host lacks a constructor.
fn build<R: Rev>(case: &Case) -> Option<HostGraph<R>> {
    let mut g = HostGraph::<R>::new(4 << 20)?;
    let input = |g: &mut HostGraph<R>, ty: i32, ne: [i64; 4], seed: u32| {
        let n = ne.iter().product::<i64>() as usize;
        g.input(ty, ne, &values(n, seed))
    };
    // rows of 640 (Gemma 3 270M's width) for the F32 ops: not a power of two, a multiple of the
    // 32-wide blocks (the products keep 512, which K-quants' 256-wide super-blocks also divide)
    let x = |g: &mut HostGraph<R>| input(g, F32, [640, 5, 1, 1], 1);
    let out: Id = match *case {
        Case::MulMat(w, a) => {
            let wt = input(&mut g, w, [512, 6, 1, 1], 2)?;
            for (rows, seed) in [(1, 3), (2, 4), (16, 5)] {
                let mut v = values(512 * rows as usize, seed);
                if a == F32 {
                    // every row's first block at a rounding edge of the activations' quantization
                    for row in v.chunks_mut(512) {
                        row[..32].copy_from_slice(&quant_edge_block(seed));
                    }
                }
                let act = g.input(a, [512, rows, 1, 1], &v)?;
                let p = g.op(Build::Binary("mul_mat"), &[wt, act])?;
                g.output(p)?;
            }
            // the kind is read from the last output; all three share it
            return Some(g);
        }
        Case::GetRows(w) => {
            let wt = input(&mut g, w, [512, 6, 1, 1], 2)?;
            let idx = g.input(I32, [4, 1, 1, 1], &[5.0, 0.0, 3.0, 3.0])?;
            g.op(Build::Binary("get_rows"), &[wt, idx])?
        }
        Case::Norm => {
            let a = x(&mut g)?;
            g.op(Build::WithF32("norm", 1e-5), &[a])?
        }
        Case::RmsNorm => {
            let a = x(&mut g)?;
            g.op(Build::WithF32("rms_norm", 1e-6), &[a])?
        }
        Case::RmsNormMul => {
            let a = x(&mut g)?;
            let w = input(&mut g, F32, [640, 1, 1, 1], 6)?;
            let r = g.op(Build::WithF32("rms_norm", 1e-6), &[a])?;
            g.op(Build::Binary("mul"), &[r, w])?
        }
        Case::Binary(name) => {
            let a = x(&mut g)?;
            let b = input(&mut g, F32, [640, 1, 1, 1], 7)?;
            g.op(Build::Binary(name), &[a, b])?
        }
        Case::Unary(b) => {
            let a = input(&mut g, F32, [640, 5, 1, 1], 8)?;
            let a = if matches!(b, Build::Unary("sqrt")) { g.op(Build::Unary("sqr"), &[a])? } else { a };
            g.op(b, &[a])?
        }
        Case::SoftMax { mask } => {
            let a = input(&mut g, F32, [64, 8, 2, 1], 9)?;
            let m = match mask {
                Some(ty) => vec![a, input(&mut g, ty, [64, 8, 1, 1], 10)?],
                None => vec![a],
            };
            g.op(Build::SoftMax { scale: 0.125, max_bias: 0.0 }, &m)?
        }
        Case::Rope(mode) => {
            let a = input(&mut g, F32, [64, 4, 3, 1], 11)?;
            let pos = g.input(I32, [3, 1, 1, 1], &[0.0, 7.0, 300.0])?;
            g.op(Build::Rope { n_dims: 64, mode }, &[a, pos])?
        }
        Case::Copy(from, to) => {
            let a = input(&mut g, from, [64, 5, 1, 1], 12)?;
            let b = input(&mut g, to, [64, 5, 1, 1], 13)?;
            g.op(Build::Binary("cpy"), &[a, b])?
        }
        Case::Im2col => {
            // whisper's first convolution, small: kernel 3 × 8 channels × 4, data 32 × 8
            let k = input(&mut g, F16, [3, 8, 4, 1], 14)?;
            let d = input(&mut g, F32, [32, 8, 1, 1], 15)?;
            g.op(Build::Im2col1d { s0: 1, p0: 1, d0: 1, dst_type: F16 }, &[k, d])?
        }
    };
    g.output(out)?;
    Some(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(op: Op, types: [i32; 3], after_rms_norm: bool) -> Kind {
        Kind { op, types, mode: 0, after_rms_norm }
    }

    /// A kind that differed is declined, its unchecked relatives of the same op too, and a fused
    /// RMS_NORM + MUL that differed takes every RMS_NORM along; checked kinds that matched stay.
    #[test]
    fn declines_what_differed() {
        let q5 = kind(Op::MulMat, [6, F32, F32], false);
        let q4 = kind(Op::MulMat, [2, F32, F32], false);
        let v = Verdicts { checked: vec![q5, q4], differ: vec![q5] };
        assert!(v.declines(&q5));
        assert!(!v.declines(&q4));
        assert!(v.declines(&kind(Op::MulMat, [6, F16, F32], false)), "unchecked types of an op that differed");
        assert!(!v.declines(&kind(Op::Add, [F32, F32, F32], false)));

        let fused = kind(Op::Mul, [F32, F32, F32], true);
        let rms = kind(Op::RmsNorm, [F32, -1, F32], false);
        let mul = kind(Op::Mul, [F32, F32, F32], false);
        let v = Verdicts { checked: vec![fused, rms, mul], differ: vec![fused] };
        assert!(v.declines(&fused) && v.declines(&rms));
        assert!(!v.declines(&mul), "a MUL of other sources is not the fused pair");
        assert!(!Verdicts::default().declines(&q5));
    }

    /// The edge block has an amax past every other value and, for each rewrite of the quantizer's
    /// `id`, a value that the rewrite rounds to another integer.
    #[test]
    fn quant_edge_block_sits_on_edges() {
        let b = quant_edge_block(5);
        let amax = b[0];
        assert!(b[1..].iter().all(|x| x.abs() < amax));
        let id = 1.0f32 / (amax / 127.0);
        let q = |x: f32, id: f32| (x * id).round_ties_even();
        assert_ne!(q(b[1], id), q(b[1], 127.0f32 / amax));
        assert_ne!(q(b[2], id), q(b[2], 1.0f32 / (amax * (1.0 / 127.0))));
    }

    #[test]
    fn inputs_are_fixed_and_bounded() {
        let a = values(1000, 3);
        assert_eq!(a, values(1000, 3));
        assert_ne!(a, values(1000, 4));
        assert!(a.iter().all(|v| (-2.0..2.0).contains(v)));
    }
}
