//! Which promise the SIMD backend keeps on this host (its contract), and the check behind it:
//! whether the host's ggml-cpu computes each kind of node in the float order the SIMD kernels
//! follow, found out once per revision by computing small graphs both ways.
//!
//! The kernels follow ggml-cpu as the packages compile it with the default floating-point model.
//! A host build may order its float operations otherwise: clang's `-ffp-model=fast` (the 2026
//! packages' arm64 flags) and `-ffast-math` (cui-llama.rn's x86 flags) reassociate and contract
//! ggml-cpu's C (RMS_NORM's products, the activations' quantization, the products' sums), and an
//! i8mm ggml-cpu multiplies some formats two rows at a time (`nrows = 2` in its type traits, read
//! directly). Random probes cannot prove that such a build orders every float as ours (a
//! fast-math product drifted from stock's after 41 generated tokens while every probe matched),
//! so the contract follows from how the host was compiled, which our header reports
//! deterministically (`host::float_model`: a marker in every file compiled with a fast-math macro,
//! a reassociation probe in every file):
//!
//! * **exact** (a host compiled without fast math, or `GGML_RS_SIMD_EXACT=1`): bit-identical to
//!   ggml-cpu; a kind whose outputs differ in one bit stays with ggml-cpu for the life of the
//!   process (decline rather than differ);
//! * **bounded** (a host compiled with fast math): bit-identity cannot be known, so SIMD promises
//!   what ggml promises between any two backends: each kind within `test-backend-ops`' error bound
//!   of ggml-cpu (NMSE; [`bound`]); a kind beyond it stays with ggml-cpu;
//! * **unchecked** (`GGML_RS_SIMD_EXACT=0`, or `GGML_RS_SIMD_SGEMM=1`, which already trades exact
//!   answers for speed): SIMD takes every node it implements.
//!
//! One Info log line says which contract is in force and what the check found. A node of a kind
//! no graph here covers (other types) is declined when a covered kind of the same op was. A
//! difference only rare inputs show (a double sum rounding to float across a boundary) can escape
//! the check. `GGML_RS_FAULT_SIMD_ORDER=<names>` makes the named kinds differ (tests).

use super::{exec, node};
use super::op::{Node, Op};
use crate::abi::CpuOrder;
use super::pool::Pool;
use crate::abi::{LogLevel, Rev, Tensor};
use crate::host_graph::{Build, HostCpu, HostGraph, Id};

const F32: i32 = 0;
const F16: i32 = 1;
const I32: i32 = 26;
const I64: i32 = 27;
/// The weight formats the SIMD products and GET_ROWS take (type ids are the same in every
/// revision): the kernels' `WType`, named by the one table of ggml types.
fn weights() -> impl Iterator<Item = i32> {
    ggml_rs_kernels::quant::WType::ALL.into_iter().map(|w| w.ggml_id())
}

/// What a node is, for this check: its op, its sources' and destination's types, and (MUL) whether
/// a source is an RMS_NORM (ggml-cpu fuses the pair from 2026 on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind {
    op: Op,
    types: [i32; 3],
    /// ROPE: the mode; GLU: which one (`op_params[0]`); FLASH_ATTN_EXT: 1 with a mask; 0 otherwise
    mode: i32,
    after_rms_norm: bool,
}

impl Kind {
    fn of<R: Rev>(t: &Tensor<R>, n: &Node) -> Kind {
        let ty = |i: usize| n.src[i].map_or(-1, |s| s.ty);
        let after_rms_norm = n.op == Op::Mul && (0..2).filter_map(|i| t.src_ref(i)).any(|s| s.op == R::OPS.rms_norm);
        Kind { op: n.op, types: [ty(0), ty(1), n.dst.ty], mode: match n.op {
            Op::Rope => n.params[2],
            Op::Glu => n.params[0],
            Op::FlashAttnExt => n.src[3].is_some() as i32,
            _ => 0,
        }, after_rms_norm }
    }

    fn name(&self) -> String {
        let ty = |t: i32| if t == -1 { "-" } else { ggml_rs_kernels::ggml_types::name(t) };
        let op = if self.after_rms_norm { "MUL after RMS_NORM" } else { self.op.name() };
        let mode = match self.op {
            Op::Rope => format!(" mode {}", self.mode),
            Op::Glu => format!(" op {}", self.mode),
            Op::FlashAttnExt if self.mode == 1 => " masked".to_string(),
            _ => String::new(),
        };
        format!("{}({},{}->{}){}", op, ty(self.types[0]), ty(self.types[1]), ty(self.types[2]), mode)
    }
}

/// The promise SIMD keeps on a host (see the module's doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Contract {
    /// bit-identical to the host's ggml-cpu, kind by kind
    #[default]
    Exact,
    /// each kind within `test-backend-ops`' error bound of the host's ggml-cpu (fast-math hosts)
    Bounded,
    /// no check
    Unchecked,
}

/// What `GGML_RS_SIMD_EXACT` asks for: unset picks the contract from the host's float model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Asked {
    Auto,
    Exact,
    Off,
}

static ASKED: once_cell::sync::Lazy<Asked> = once_cell::sync::Lazy::new(|| {
    if super::ops::mul_mat::tiles::sgemm_forced() {
        return Asked::Off;
    }
    match std::env::var("GGML_RS_SIMD_EXACT").as_deref() {
        Ok("0") => Asked::Off,
        Ok("1") => Asked::Exact,
        _ => Asked::Auto,
    }
});

/// The contract for a host with float model `m`, as asked.
fn contract_for(asked: Asked, m: &crate::host::FloatModel) -> Contract {
    match asked {
        Asked::Off => Contract::Unchecked,
        Asked::Exact => Contract::Exact,
        Asked::Auto if m.fast_math() => Contract::Bounded,
        Asked::Auto => Contract::Exact,
    }
}

/// `test-backend-ops`' error bound (NMSE against the CPU backend) for a kind of op: what ggml
/// accepts between any two of its backends (tests/test-backend-ops.cpp of ggml 0.20: `max_nmse_err`).
fn bound(op: Op) -> f64 {
    match op {
        Op::MulMat | Op::FlashAttnExt => 5e-4,
        Op::SoftMax => 1e-6,
        _ => 1e-7,
    }
}

/// How SIMD's outputs compare with ggml-cpu's for one kind.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Outcome {
    Identical,
    /// differ, by this NMSE
    Differ(f64),
}

/// The outcome of the check for one revision.
#[derive(Default)]
struct Verdicts {
    contract: Contract,
    /// the exact contract asked for on a fast-math host: the long reductions (products,
    /// attention) stay with ggml-cpu whatever the probes say, since a reordered sum shows only on
    /// some inputs (a fast-math SmolLM2 passed every probe and drifted after 41 tokens)
    exact_on_fast_host: bool,
    checked: Vec<Kind>,
    /// kinds left to ggml-cpu
    differ: Vec<Kind>,
    /// those of them left only because an i8mm ggml-cpu multiplies two rows at a time (its
    /// `vec_dot` with `nrc == 2`): ggml's repacked products of the same types have kernels of
    /// their own, which SIMD reproduces (`ops::mul_mat::repacked`)
    two_rows: Vec<Kind>,
}

impl Verdicts {
    /// `repacked`: the node's weights are in one of ggml-cpu's repacked layouts that SIMD reads.
    fn declines(&self, k: &Kind, repacked: bool) -> bool {
        if self.exact_on_fast_host && matches!(k.op, Op::MulMat | Op::FlashAttnExt) {
            return true;
        }
        let differs = |k: &Kind| self.differ.contains(k) && !(repacked && self.two_rows.contains(k));
        if differs(k) {
            return true;
        }
        // a fused RMS_NORM + MUL that differs keeps both nodes on ggml-cpu, where it fuses them
        if k.op == Op::RmsNorm && self.differ.iter().any(|d| d.after_rms_norm) {
            return true;
        }
        // GEGLU looks GELU up in the same table (ggml-cpu's fp16 GELU table, which ggml_cpu_init
        // fills with the host's compiled tanh formula): a GELU that differs means some entries
        // differ, which a GEGLU probe can miss (cui-llama.rn's fast-math flags, arm64 under qemu
        // and x86: GELU's probe differed, GEGLU's matched, some of the C suite's GEGLU cases did not)
        if k.op == Op::Glu && k.mode == super::ops::glu::GEGLU && self.differ.iter().any(|d| d.op == Op::Gelu) {
            return true;
        }
        !self.checked.contains(k) && self.differ.iter().any(|d| d.op == k.op && d.after_rms_norm == k.after_rms_norm)
    }
}

static VERDICTS: crate::per_rev::PerRev = crate::per_rev::PerRev::new();

/// Whether SIMD leaves node `t` (read as `n`) to ggml-cpu because this host's ggml-cpu computes
/// its kind otherwise than the contract allows. Runs the check on first use.
pub fn declines<R: Rev>(t: &Tensor<R>, n: &Node) -> bool {
    let repacked = n.repack.is_some_and(|r| r != super::op::Repack::Other);
    *ASKED != Asked::Off && VERDICTS.get::<R, _>(check::<R>).declines(&Kind::of(t, n), repacked)
}

/// The contract in force for revision `R`'s host (runs the check on first use).
pub fn contract<R: Rev>() -> Contract {
    if *ASKED == Asked::Off {
        return Contract::Unchecked;
    }
    VERDICTS.get::<R, _>(check::<R>).contract
}

/// Runs every graph of [`cases`] both ways and logs the outcome.
fn check<R: Rev>() -> Verdicts {
    let model = crate::host::float_model::<R>();
    let contract = contract_for(*ASKED, &model);
    let mut v = Verdicts { contract, exact_on_fast_host: contract == Contract::Exact && model.fast_math(), ..Verdicts::default() };
    let Some(cpu) = HostCpu::<R>::new() else {
        // no ggml-cpu: SIMD is the host's CPU backend, nothing to be identical to
        return v;
    };
    let pool = Pool::new(1);
    let session = pool.session();
    let faults: Vec<String> = std::env::var("GGML_RS_FAULT_SIMD_ORDER").map(|s| s.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect()).unwrap_or_default();
    let mut declined = Vec::new();
    let mut within = Vec::new();
    for case in cases(R::CPU_ORDER) {
        let Some(g) = build::<R>(&case) else { continue };
        // the kind is the last node's (an output, made last)
        let Some(kind) = g.node_refs().last().flatten().map(|t| Kind::of(t, &node::node(t))) else { continue };
        // an i8mm ggml-cpu multiplies two rows at a time: another order, known without computing
        let two_rows = matches!(case, Case::MulMat(..)) && crate::host::traits_cpu::<R>(case.weight()).is_some_and(|t| t.nrows > 1);
        let outcome = if two_rows && v.contract == Contract::Exact {
            Some(Outcome::Differ(f64::NAN))
        } else {
            compare(&g, &cpu, &session, faults.iter().any(|f| kind.name().contains(f.as_str())))
        };
        let Some(outcome) = outcome else { continue };
        v.checked.push(kind);
        let why = if two_rows { " (two rows at a time)" } else { "" };
        match outcome {
            Outcome::Identical => {}
            Outcome::Differ(e) if v.contract == Contract::Bounded && e <= bound(kind.op) => within.push(format!("{}{} {}", kind.name(), why, nmse_text(e))),
            Outcome::Differ(e) => {
                if two_rows && e.is_nan() {
                    v.two_rows.push(kind);
                }
                v.differ.push(kind);
                let e = if v.contract == Contract::Bounded { format!(" {} > {}", nmse_text(e), sci(bound(kind.op))) } else { String::new() };
                declined.push(format!("{}{}{}", kind.name(), why, e));
            }
        }
    }
    crate::host::log::<R>(LogLevel::Info, &summary(v.contract, &model, v.checked.len(), &within, &declined));
    v
}

/// The check's one log line: the contract in force and why, then what the graphs found.
fn summary(contract: Contract, model: &crate::host::FloatModel, checked: usize, within: &[String], declined: &[String]) -> String {
    let fast = match (model.fast_math_macro, model.reassociates) {
        (true, true) => "compiled with fast math (a fast-math macro, and its compiler reassociates floats)",
        (true, false) => "compiled with fast math (a fast-math macro in a host file)",
        (false, true) => "compiled with fast math (its compiler reassociates floats)",
        (false, false) => "compiled without fast math",
    };
    let found = if declined.is_empty() && within.is_empty() {
        format!("{} kinds of node computed on small graphs by SIMD and by this host's ggml-cpu: all bit-identical", checked)
    } else if contract == Contract::Bounded {
        format!(
            "{} kinds of node computed on small graphs by SIMD and by this host's ggml-cpu: {} bit-identical, {} within bounds{}{}; {} stay with ggml-cpu{}{}",
            checked,
            checked - within.len() - declined.len(),
            within.len(),
            if within.is_empty() { "" } else { ": " },
            within.join(", "),
            declined.len(),
            if declined.is_empty() { "" } else { ": " },
            declined.join(", ")
        )
    } else {
        format!(
            "this host's ggml-cpu computes {} of {} kinds of node in another float order (its compiler flags); they stay with ggml-cpu: {}",
            declined.len(),
            checked,
            declined.join(", ")
        )
    };
    let contract = match contract {
        Contract::Bounded => format!(
            "within ggml's error bounds of ggml-cpu (host {}: bit-identity cannot be known; GGML_RS_SIMD_EXACT=1 keeps it)",
            fast
        ),
        _ if model.fast_math() => {
            format!("bit-identical to ggml-cpu (GGML_RS_SIMD_EXACT=1; host {}: the products and attention stay with ggml-cpu)", fast)
        }
        _ if !model.probed => "bit-identical to ggml-cpu (host compiled with its own headers: float model unknown)".to_string(),
        _ => format!("bit-identical to ggml-cpu (host {})", fast),
    };
    format!("SIMD: contract: {}. {}", contract, found)
}

fn nmse_text(e: f64) -> String {
    format!("NMSE {}", sci(e))
}

/// `e` as `d.dde±x` with integer formatting only: float formatting would bring core's float
/// printer into the phone builds (about 9 KiB, docs/size.md).
fn sci(e: f64) -> String {
    if e.is_nan() {
        return "nan".into();
    }
    if e.is_infinite() {
        return "inf".into();
    }
    if e <= 0.0 {
        return "0".into();
    }
    let mut exp = e.log10().floor() as i32;
    let mut m = (e / 10f64.powi(exp) * 100.0).round() as i64;
    if m >= 1000 {
        m /= 10;
        exp += 1;
    }
    format!("{}.{:02}e{}", m / 100, m % 100, exp)
}

/// Computes `g`'s nodes with SIMD's kernels, then the graph on ggml-cpu; how the outputs compare
/// (`None`: a node SIMD would not take, or ggml-cpu failed; nothing learnt).
fn compare<R: Rev>(g: &HostGraph<R>, cpu: &HostCpu<R>, s: &super::pool::Session, fault: bool) -> Option<Outcome> {
    for t in g.node_refs() {
        if !exec::compute_unchecked(s, t?)? {
            return None;
        }
    }
    let mut ours = g.output_bytes();
    if fault {
        if let Some(b) = ours.first_mut().and_then(|o| o.first_mut()) {
            *b ^= 1;
        }
    }
    if !cpu.compute(g) {
        return None;
    }
    let theirs = g.output_bytes();
    if ours == theirs {
        return Some(Outcome::Identical);
    }
    Some(Outcome::Differ(nmse(&g.output_types(), &theirs, &ours)))
}

/// `test-backend-ops`' NMSE of `b` against the reference `a` over every output (F32 or F16);
/// infinite for outputs of another type, which have no bound.
fn nmse(types: &[i32], a: &[Vec<u8>], b: &[Vec<u8>]) -> f64 {
    let (mut err, mut norm) = (0f64, 0f64);
    for ((&ty, a), b) in types.iter().zip(a).zip(b) {
        let (fa, fb) = match ty {
            F32 => (floats(a, 4, |c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])), floats(b, 4, |c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))),
            F16 => {
                let h = |c: &[u8]| ggml_rs_kernels::quant::f16::fp16_to_fp32(u16::from_le_bytes([c[0], c[1]]));
                (floats(a, 2, h), floats(b, 2, h))
            }
            _ => return f64::INFINITY,
        };
        for (x, y) in fa.into_iter().zip(fb) {
            err += (x as f64 - y as f64).powi(2);
            norm += (x as f64).powi(2);
        }
    }
    // NaN (a NaN output, or 0 / 0) fails every bound
    if norm == 0.0 && err == 0.0 {
        0.0
    } else {
        err / norm
    }
}

fn floats(bytes: &[u8], size: usize, f: impl Fn(&[u8]) -> f32) -> Vec<f32> {
    bytes.chunks_exact(size).map(f).collect()
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
    /// GLU of the split form, by its `ggml_glu_op` (2026 numbering: GeGLU 1, SwiGLU 2)
    Glu(i32),
    SetRows,
    FlashAttn { mask: bool },
}

impl Case {
    fn weight(&self) -> i32 {
        match self {
            Case::MulMat(w, _) | Case::GetRows(w) => *w,
            _ => F32,
        }
    }
}

fn cases(order: CpuOrder) -> Vec<Case> {
    let mut c: Vec<Case> = weights().map(|w| Case::MulMat(w, F32)).collect();
    c.push(Case::MulMat(F16, F16));
    c.extend(weights().map(|w| Case::GetRows(w)));
    c.extend([Case::Norm, Case::RmsNorm, Case::RmsNormMul]);
    // the element-wise ops, from the op table (`Op::probe`)
    c.extend(Op::ALL.iter().filter_map(|op| op.probe()).map(|(name, two)| match (name, two) {
        (name, true) => Case::Binary(name),
        ("scale", _) => Case::Unary(Build::WithF32("scale", 0.125)),
        (name, false) => Case::Unary(Build::Unary(name)),
    }));
    c.extend([Case::SoftMax { mask: None }, Case::SoftMax { mask: Some(F16) }, Case::SoftMax { mask: Some(F32) }, Case::Rope(0), Case::Rope(2)]);
    c.extend([Case::Copy(F32, F16), Case::Copy(F16, F32), Case::Im2col]);
    // the 2026 graphs' ops, which SIMD computes on the 2026 revisions only: the older hosts'
    // constructors differ (and assert on what 2026 accepts: an unpadded flash-attention mask)
    if order != CpuOrder::BEFORE_2026 && super::SERVES_2026 {
        c.extend([Case::Glu(1), Case::Glu(2), Case::SetRows, Case::FlashAttn { mask: false }, Case::FlashAttn { mask: true }]);
    }
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
            if w == F32 || w == F16 {
                // float rows of 45 = 32 + 13: the leftovers past ggml's last vector step are
                // summed in another order than the steps (F32's as the host's compiler makes the
                // tail loop: clang vectorizes it on aarch64, 8 rounded products at a time); short
                // rows (small sums) and 128 outputs, so a product rounded otherwise shows
                let wt = input(&mut g, w, [45, 16, 1, 1], 12)?;
                let act = input(&mut g, a, [45, 8, 1, 1], 13)?;
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
        Case::Glu(op) => {
            // 643 wide: ggml's vector loop and its leftover scalar loop
            let a = input(&mut g, F32, [643, 5, 1, 1], 16)?;
            let b = input(&mut g, F32, [643, 5, 1, 1], 17)?;
            g.op(Build::GluSplit { op }, &[a, b])?
        }
        Case::SetRows => {
            // rows into an F16 cache at I64 indices, as the 2026 KV cache stores
            let cache = input(&mut g, F16, [64, 8, 1, 1], 18)?;
            let rows = input(&mut g, F32, [64, 3, 1, 1], 19)?;
            let idx = g.input(I64, [3, 1, 1, 1], &[5.0, 0.0, 2.0])?;
            g.op(Build::SetRows, &[cache, rows, idx])?
        }
        Case::FlashAttn { mask } => {
            // 7 queries of 4 heads on 2 K/V heads (grouped), 40 keys, head size 64, F16 K/V
            let q = input(&mut g, F32, [64, 7, 4, 1], 20)?;
            let k = input(&mut g, F16, [64, 40, 2, 1], 21)?;
            let v = input(&mut g, F16, [64, 40, 2, 1], 22)?;
            let mut s = vec![q, k, v];
            if mask {
                // rows padded to 64 (GGML_KQ_MASK_PAD, which some revisions assert on)
                s.push(input(&mut g, F16, [40, 64, 1, 1], 23)?);
            }
            g.op(Build::FlashAttnExt { scale: 0.125 }, &s)?
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
        let v = Verdicts { checked: vec![q5, q4], differ: vec![q5], ..Verdicts::default() };
        assert!(v.declines(&q5, false));
        assert!(!v.declines(&q4, false));
        assert!(v.declines(&kind(Op::MulMat, [6, F16, F32], false), false), "unchecked types of an op that differed");
        assert!(!v.declines(&kind(Op::Add, [F32, F32, F32], false), false));

        let fused = kind(Op::Mul, [F32, F32, F32], true);
        let rms = kind(Op::RmsNorm, [F32, -1, F32], false);
        let mul = kind(Op::Mul, [F32, F32, F32], false);
        let v = Verdicts { checked: vec![fused, rms, mul], differ: vec![fused], ..Verdicts::default() };
        assert!(v.declines(&fused, false) && v.declines(&rms, false));
        assert!(!v.declines(&mul, false), "a MUL of other sources is not the fused pair");
        assert!(!Verdicts::default().declines(&q5, false));

        // GEGLU reads GELU's table: declined with a GELU that differed, even when its own probe matched
        let gelu = kind(Op::Gelu, [F32, -1, F32], false);
        let glu = |mode| Kind { op: Op::Glu, types: [F32, F32, F32], mode, after_rms_norm: false };
        let (geglu, swiglu) = (glu(crate::simd::ops::glu::GEGLU), glu(crate::simd::ops::glu::SWIGLU));
        let v = Verdicts { checked: vec![gelu, geglu, swiglu], differ: vec![gelu], ..Verdicts::default() };
        assert!(v.declines(&geglu, false));
        assert!(!v.declines(&swiglu, false), "SWIGLU does not read the GELU table");
        let v = Verdicts { checked: vec![gelu, geglu, swiglu], differ: vec![], ..Verdicts::default() };
        assert!(!v.declines(&geglu, false));

        // an i8mm host's Q4_0 vec_dot (two rows at a time) keeps the plain products on ggml-cpu,
        // not the repacked ones (ggml's repack kernels); a repacked kind that differed otherwise
        // stays declined
        let v = Verdicts { checked: vec![q4, q5], differ: vec![q4, q5], two_rows: vec![q4], ..Verdicts::default() };
        assert!(v.declines(&q4, false) && !v.declines(&q4, true));
        assert!(v.declines(&q5, true));
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

    /// The contract follows the host's float model unless GGML_RS_SIMD_EXACT says otherwise.
    #[test]
    fn contract_follows_the_float_model() {
        use crate::host::FloatModel;
        let plain = FloatModel { probed: true, ..FloatModel::default() };
        let gcc_fast = FloatModel { fast_math_macro: true, reassociates: false, probed: true };
        let clang_fast = FloatModel { fast_math_macro: false, reassociates: true, probed: true };
        assert_eq!(contract_for(Asked::Auto, &plain), Contract::Exact);
        assert_eq!(contract_for(Asked::Auto, &FloatModel::default()), Contract::Exact, "own headers: unknown, exact");
        assert_eq!(contract_for(Asked::Auto, &gcc_fast), Contract::Bounded);
        assert_eq!(contract_for(Asked::Auto, &clang_fast), Contract::Bounded);
        assert_eq!(contract_for(Asked::Exact, &gcc_fast), Contract::Exact);
        assert_eq!(contract_for(Asked::Off, &plain), Contract::Unchecked);
        let line = summary(Contract::Bounded, &gcc_fast, 43, &[format!("MulMat(q4_1,f32->f32) {}", nmse_text(1e-12))], &[]);
        assert!(line.starts_with("SIMD: contract: within ggml's error bounds"), "{line}");
        assert!(line.contains("42 bit-identical, 1 within bounds: MulMat(q4_1,f32->f32)"), "{line}");
        let v = Verdicts { exact_on_fast_host: true, ..Verdicts::default() };
        assert!(v.declines(&kind(Op::MulMat, [3, F32, F32], false), false) && !v.declines(&kind(Op::Add, [F32, F32, F32], false), false));
        let line = summary(Contract::Exact, &plain, 43, &[], &[]);
        assert!(line.contains("contract: bit-identical to ggml-cpu (host compiled without fast math)"), "{line}");
        assert!(line.contains("43 kinds of node computed on small graphs by SIMD and by this host's ggml-cpu: all bit-identical"), "{line}");
    }

    #[test]
    fn sci_formats_without_floats() {
        assert_eq!(sci(3.76e-15), "3.76e-15");
        assert_eq!(sci(5e-4), "5.00e-4");
        assert_eq!(sci(9.999e-8), "1.00e-7");
        assert_eq!(sci(0.0), "0");
        assert_eq!(sci(f64::NAN), "nan");
    }

    /// test-backend-ops' NMSE over F32 and F16 outputs; other types have no bound.
    #[test]
    fn nmse_as_test_backend_ops() {
        let f = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let a = f(&[1.0, 2.0, -2.0]);
        assert_eq!(nmse(&[F32], &[a.clone()], &[a.clone()]), 0.0);
        let b = f(&[1.0, 2.0, -2.5]);
        assert!((nmse(&[F32], &[a.clone()], &[b]) - 0.25 / 9.0).abs() < 1e-12);
        let h = |v: &[u16]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        // 1.0 and 1.0009765625 (one f16 ulp)
        let e = nmse(&[F16], &[h(&[0x3c00])], &[h(&[0x3c01])]);
        assert!((e - 2f64.powi(-20)).abs() < 1e-15, "{e}");
        assert!(nmse(&[I32], &[vec![0; 4]], &[vec![1, 0, 0, 0]]).is_infinite());
        assert!(nmse(&[F32], &[f(&[f32::NAN])], &[f(&[1.0])]).is_nan());
    }

    /// The 2026 ops are probed on the 2026 revisions only: the older hosts' constructors assert on
    /// the 2026 shapes (an unpadded flash-attention mask aborted every 2024 host at start-up).
    #[test]
    fn the_2026_ops_are_probed_on_2026_hosts_only() {
        let new_ops = |c: &Case| matches!(c, Case::Glu(_) | Case::SetRows | Case::FlashAttn { .. });
        assert!(!cases(CpuOrder::BEFORE_2026).iter().any(new_ops));
        let y2026 = CpuOrder { norm_vec_sums: true, rope_rotate_pairs: true, q6k_offset_per_subblock: true };
        // (probed only in a build serving a 2026 revision)
        assert_eq!(cases(y2026).iter().filter(|c| new_ops(c)).count(), if crate::simd::SERVES_2026 { 5 } else { 0 });
    }

    #[test]
    fn inputs_are_fixed_and_bounded() {
        let a = values(1000, 3);
        assert_eq!(a, values(1000, 3));
        assert_ne!(a, values(1000, 4));
        assert!(a.iter().all(|v| (-2.0..2.0).contains(v)));
    }
}
