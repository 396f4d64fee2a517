//! GLU over F32 rows: REGLU, GEGLU (Gemma 3's FFN: `build_ffn` with `LLM_FFN_GELU, LLM_FFN_PAR`
//! is `ggml_geglu_split`) and SWIGLU (SmolLM2 / llama's FFN: `ggml_swiglu_split`), in both forms:
//! one source whose rows hold the two halves (`op_params[1]` = swapped: the gate is the second
//! half), or the split form with the gate values in `src1` (where ggml ignores `swapped`).
//!
//! Row by row as ggml-cpu's `ggml_compute_forward_{reglu,geglu,swiglu}_f32` (ops.cpp), each row
//! through its vector function, which the kernels reproduce bit for bit on the AVX2 and NEON
//! levels (the same code in every revision here: cui-llama.rn 1.12.2, whisper.rn 0.7.4, llama.rn
//! 0.12.9, 0.13.0-rc.5 and whisper.rn 0.4.3; llama.rn 0.4.4 has no GLU):
//! * `ggml_vec_swiglu_f32`: `ggml_v_silu(x) * g` eight (AVX2) or four (NEON) lanes at a time,
//!   `ggml_silu_f32(x) * g` over the row's last `n % 8` (`n % 4`) values: SILU's own split
//!   (`vexp::silu`), then one rounded product per value — the same two roundings;
//! * `ggml_vec_geglu_f32` under `GGML_GELU_FP16` (vec.h defines it unconditionally): `+0` at or
//!   below -10, `x * g` at or above 10, else the fp16 table's GELU of `x` times `g`: GELU's own
//!   kernel (`gelu::gelu`, the same table and thresholds) times `g`, with the `+0` put back where
//!   ggml does not multiply (`0 * g` would be -0 for a negative gate);
//! * `ggml_vec_reglu_f32`: `x > 0 ? x * g : 0`.
//!
//! The other GLU ops (SWIGLU_OAI, GEGLU_ERF, GEGLU_QUICK, 0.13's SWIGLU_CLAMP) and F16 rows are
//! declined, and so is every GLU before 2026: whisper.rn 0.4.3's functions are the same, but its
//! whisper.cpp never builds the op and no C case runs it there.

use super::{f32_rows, for_rows, Raw, Session};
use crate::cpu_features::{simd_level, SimdLevel};
use crate::op::Node;
use crate::view::{alias, Alias, Detached};
use crate::{gelu, vexp, CpuOrder};

/// `enum ggml_glu_op` (the same values in every revision that has GLU).
pub const REGLU: i32 = 0;
pub const GEGLU: i32 = 1;
pub const SWIGLU: i32 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Glu {
    Reglu,
    Geglu,
    Swiglu,
}

impl Glu {
    pub fn from_param(op: i32) -> Option<Glu> {
        match op {
            REGLU => Some(Glu::Reglu),
            GEGLU => Some(Glu::Geglu),
            SWIGLU => Some(Glu::Swiglu),
            _ => None,
        }
    }
}

/// `ggml_is_contiguous_1` for F32: packed rows, dims 2 and 3 packed over dim 1's stride (dim 1
/// itself may be strided: a row view of a wider tensor). ggml-cpu indexes rows as `i1 * nb[1]`
/// over all rows, which is the (i1, i2, i3) addressing exactly under this rule.
fn contiguous_1(t: &Raw) -> bool {
    if t.ne[0] != 1 && t.nb[0] != 4 {
        return false;
    }
    let mut next = 4 * t.ne[0];
    for i in 1..4 {
        if t.ne[i] == 1 {
            continue;
        }
        if i > 1 {
            if t.nb[i] != next {
                return false;
            }
            next *= t.ne[i];
        } else {
            next = t.ne[i] * t.nb[i];
        }
    }
    true
}

pub fn supports(n: &Node) -> bool {
    let (d, Some(a)) = (n.dst, n.src[0]) else { return false };
    let rows = f32_rows(&d) && f32_rows(&a) && contiguous_1(&d) && contiguous_1(&a) && d.ne[1..] == a.ne[1..];
    let width = match n.src[1] {
        Some(b) => f32_rows(&b) && contiguous_1(&b) && b.ne == a.ne && d.ne[0] == a.ne[0],
        None => d.ne[0] == a.ne[0] / 2,
    };
    n.order != CpuOrder::BEFORE_2026 && Glu::from_param(n.params[0]).is_some() && rows && width
}

pub fn compute(s: &Session, n: &Node) -> bool {
    let Some(op) = Glu::from_param(n.params[0]) else { return false };
    run(s, op, n.params[1] != 0, n.dst, n.src(0), n.src[1])
}

/// A private copy of a source unless it lies apart from `dst` (GLU is never in place in ggml's
/// allocator; a destination sharing bytes with a source is read from a copy).
fn apart(dst: &Raw, src: Raw) -> (Option<Detached>, Raw) {
    if alias(dst, &src) == Alias::Apart {
        (None, src)
    } else {
        let d = Detached::of(&src);
        let raw = d.raw;
        (Some(d), raw)
    }
}

/// GLU `op` of `a` (with the gate in `b`, or in `a`'s other half: the second, or the first when
/// `swapped`) into `dst`.
pub fn run(s: &Session, op: Glu, swapped: bool, dst: Raw, a: Raw, b: Option<Raw>) -> bool {
    if op == Glu::Geglu {
        gelu::prepare();
    }
    let (_a_copy, a) = apart(&dst, a);
    let (_b_copy, b) = match b.map(|b| apart(&dst, b)) {
        Some((c, b)) => (c, Some(b)),
        None => (None, None),
    };
    let nc = dst.ne[0];
    let level = simd_level();
    for_rows(s, dst.nrows(), dst.nelements(), |r| {
        let (i1, i2, i3) = dst.row_index(r);
        let y = dst.row_f32_mut(i1, i2, i3);
        let (x, g) = match b {
            Some(b) => (a.row_f32(i1, i2, i3), b.row_f32(i1, i2, i3)),
            None => {
                let row = a.row_f32(i1, i2, i3);
                let (lo, hi) = (&row[..nc], &row[nc..2 * nc]);
                if swapped { (hi, lo) } else { (lo, hi) }
            }
        };
        glu_row_at(level, op, x, g, y);
    })
}

/// One row of GLU `op` on an explicit kernel level: `y = f(x) * g` as ggml-cpu's vector
/// functions (see the module doc). Equal lengths.
pub fn glu_row_at(level: SimdLevel, op: Glu, x: &[f32], g: &[f32], y: &mut [f32]) {
    let n = x.len().min(g.len()).min(y.len());
    let (x, g, y) = (&x[..n], &g[..n], &mut y[..n]);
    match op {
        Glu::Reglu => y.iter_mut().zip(x.iter().zip(g)).for_each(|(y, (&x, &g))| *y = if x > 0.0 { x * g } else { 0.0 }),
        Glu::Swiglu => {
            vexp::silu_at(level, x, y);
            y.iter_mut().zip(g).for_each(|(y, &g)| *y *= g);
        }
        Glu::Geglu => {
            gelu::gelu_at(level, x, y);
            y.iter_mut().zip(x.iter().zip(g)).for_each(|(y, (&x, &g))| *y = if x <= -10.0 { 0.0 } else { *y * g });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu_features::available_levels;
    use crate::pool::Pool;
    use crate::quant::f16::{fp16_to_fp32, fp32_to_fp16};
    use crate::view::F32;

    fn values(n: usize, seed: u64, scale: f32) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0) * scale
            })
            .collect()
    }

    /// ggml_gelu_f32 as the hosts compile it (the FMA of `1 + a*x*x`), for the scalar model.
    fn gelu_formula(x: f32) -> f32 {
        0.5 * x * (1.0 + (0.797_884_6 * x * (0.044715 * x).mul_add(x, 1.0)).tanh())
    }

    /// ggml-cpu's scalar GEGLU (`GGML_GELU_FP16`), element by element.
    fn geglu_ref(x: f32, g: f32) -> f32 {
        if x <= -10.0 {
            0.0
        } else if x >= 10.0 {
            x * g
        } else {
            let h = fp32_to_fp16(x);
            fp16_to_fp32(fp32_to_fp16(gelu_formula(fp16_to_fp32(h)))) * g
        }
    }

    /// GEGLU is exactly ggml's scalar loop on every level (a table lookup times the gate, +0 at
    /// or below -10 even for negative gates); REGLU too. SWIGLU is SILU's value times the gate on
    /// every level (bit-identity of SILU to ggml's vector expf is vexp's test) and close to the
    /// formula.
    #[test]
    fn rows_match_ggmls_scalar_rules() {
        // 203: 25 vectors of 8 and a tail of 3 (50 of 4 and 3 on NEON)
        let mut x = values(203, 1, 14.0);
        x[..6].copy_from_slice(&[-10.0, 10.0, -12.0, 0.0, -0.0, 9.999]);
        let g = values(203, 2, 3.0);
        for level in available_levels() {
            let mut y = vec![0.0; x.len()];
            glu_row_at(level, Glu::Geglu, &x, &g, &mut y);
            for i in 0..x.len() {
                assert_eq!(y[i].to_bits(), geglu_ref(x[i], g[i]).to_bits(), "{level:?} geglu({}, {})", x[i], g[i]);
            }
            glu_row_at(level, Glu::Reglu, &x, &g, &mut y);
            for i in 0..x.len() {
                let want = if x[i] > 0.0 { x[i] * g[i] } else { 0.0 };
                assert_eq!(y[i].to_bits(), want.to_bits(), "{level:?} reglu");
            }
            glu_row_at(level, Glu::Swiglu, &x, &g, &mut y);
            let mut s = vec![0.0; x.len()];
            vexp::silu_at(level, &x, &mut s);
            for i in 0..x.len() {
                assert_eq!(y[i].to_bits(), (s[i] * g[i]).to_bits(), "{level:?} swiglu");
                let want = x[i] / (1.0 + (-x[i]).exp()) * g[i];
                assert!((y[i] - want).abs() <= 1e-5 * want.abs().max(1e-3), "{level:?} swiglu({}) = {} vs {want}", x[i], y[i]);
            }
        }
        // the table path really runs: a negative gate below -10 gives +0, not -0
        let mut y = [1.0f32];
        glu_row_at(simd_level(), Glu::Geglu, &[-11.0], &[-2.0], &mut y);
        assert_eq!(y[0].to_bits(), 0);
    }

    fn packed(buf: &mut [f32], ne: [usize; 4]) -> Raw {
        Raw { data: buf.as_mut_ptr() as *mut u8, ne, nb: [4, 4 * ne[0], 4 * ne[0] * ne[1], 4 * ne[0] * ne[1] * ne[2]], ty: F32 }
    }

    /// Both forms give the same rows: halves (plain and swapped) and split sources, a strided
    /// split source (row views of a wider tensor), threaded and serial sizes; a destination that
    /// is the split form's first source is computed from a copy.
    #[test]
    fn forms_agree() {
        let pool = Pool::new(2);
        let s = pool.session();
        for (nc, rows) in [(13usize, 3usize), (1536, 9), (2048, 5)] {
            let mut xs = values(nc * rows, 3, 6.0);
            let mut gs = values(nc * rows, 4, 2.0);
            for op in [Glu::Reglu, Glu::Geglu, Glu::Swiglu] {
                let mut want = vec![0f32; nc * rows];
                for r in 0..rows {
                    glu_row_at(simd_level(), op, &xs[r * nc..][..nc], &gs[r * nc..][..nc], &mut want[r * nc..][..nc]);
                }
                let ne = [nc, rows, 1, 1];
                let mut out = vec![0f32; nc * rows];
                assert!(run(&s, op, false, packed(&mut out, ne), packed(&mut xs, ne), Some(packed(&mut gs, ne))));
                assert_eq!(out, want, "{op:?} split");
                // halves: [x | g] and swapped [g | x]; a split view of the same rows (nb1 = 2 nc)
                let mut whole: Vec<f32> = (0..rows).flat_map(|r| xs[r * nc..][..nc].iter().chain(&gs[r * nc..][..nc]).copied().collect::<Vec<_>>()).collect();
                let mut swapped: Vec<f32> = (0..rows).flat_map(|r| gs[r * nc..][..nc].iter().chain(&xs[r * nc..][..nc]).copied().collect::<Vec<_>>()).collect();
                let mut out = vec![0f32; nc * rows];
                assert!(run(&s, op, false, packed(&mut out, ne), packed(&mut whole, [2 * nc, rows, 1, 1]), None));
                assert_eq!(out, want, "{op:?} halves");
                let mut out = vec![0f32; nc * rows];
                assert!(run(&s, op, true, packed(&mut out, ne), packed(&mut swapped, [2 * nc, rows, 1, 1]), None));
                assert_eq!(out, want, "{op:?} swapped");
                let base = whole.as_mut_ptr() as *mut u8;
                let xv = Raw { data: base, ne, nb: [4, 8 * nc, 8 * nc * rows, 8 * nc * rows], ty: F32 };
                let gv = Raw { data: base.wrapping_add(4 * nc), ..xv };
                assert!(contiguous_1(&xv));
                let mut out = vec![0f32; nc * rows];
                assert!(run(&s, op, false, packed(&mut out, ne), xv, Some(gv)));
                assert_eq!(out, want, "{op:?} strided split");
                // the destination is the first source
                let mut buf = xs.clone();
                let t = packed(&mut buf, ne);
                assert!(run(&s, op, false, t, t, Some(packed(&mut gs, ne))));
                assert_eq!(buf, want, "{op:?} over its first source");
            }
        }
    }

    /// REGLU / GEGLU / SWIGLU on F32 in both forms on 2026 revisions; other GLU ops, F16 rows,
    /// mismatched shapes and 2024 revisions declined.
    #[test]
    fn supports_what_is_bit_identical() {
        let p = std::ptr::null_mut();
        let t = |ty: i32, ne: [usize; 4]| {
            let ts = if ty == F32 { 4 } else { 2 };
            Raw { data: p, ne, nb: [ts, ts * ne[0], ts * ne[0] * ne[1], ts * ne[0] * ne[1] * ne[2]], ty }
        };
        let rev2026 = CpuOrder { norm_vec_sums: true, ..CpuOrder::BEFORE_2026 };
        let node = |op: i32, dst: Raw, a: Raw, b: Option<Raw>, order: CpuOrder| {
            let mut params = [0; 16];
            params[0] = op;
            Node { op: crate::op::Op::Glu, dst, src: [Some(a), b, None, None, None], params, order, q8k: None, repack: None }
        };
        let (d, a) = (t(F32, [1536, 7, 1, 1]), t(F32, [3072, 7, 1, 1]));
        for op in [REGLU, GEGLU, SWIGLU] {
            assert!(supports(&node(op, d, a, None, rev2026)));
            assert!(supports(&node(op, d, d, Some(d), rev2026)));
            assert!(!supports(&node(op, d, a, None, CpuOrder::BEFORE_2026)));
        }
        for op in [3, 4, 5, 6] {
            assert!(!supports(&node(op, d, a, None, rev2026)), "glu op {op}");
        }
        let h = crate::view::F16;
        assert!(!supports(&node(SWIGLU, t(h, [1536, 7, 1, 1]), t(h, [3072, 7, 1, 1]), None, rev2026)));
        assert!(!supports(&node(SWIGLU, d, d, Some(t(F32, [1536, 6, 1, 1])), rev2026)));
        assert!(!supports(&node(SWIGLU, d, t(F32, [3072, 6, 1, 1]), None, rev2026)));
    }

    #[test]
    fn contiguous_1_is_ggmls() {
        let t = |ne: [usize; 4], nb: [usize; 4]| Raw { data: std::ptr::null_mut(), ne, nb, ty: F32 };
        assert!(contiguous_1(&t([8, 3, 2, 1], [4, 32, 96, 192])));
        assert!(contiguous_1(&t([8, 3, 2, 1], [4, 64, 192, 384]))); // strided rows, planes packed over them
        assert!(!contiguous_1(&t([8, 3, 2, 1], [4, 64, 128, 256]))); // planes not over the row stride
        assert!(!contiguous_1(&t([8, 3, 1, 1], [8, 64, 192, 192]))); // strided elements
        assert!(contiguous_1(&t([8, 1, 2, 1], [4, 999, 32, 64]))); // a dim of 1 has any stride
    }
}
