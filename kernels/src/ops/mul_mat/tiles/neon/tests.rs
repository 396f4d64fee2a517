//! The NEON tiles against ggml-cpu's NEON `vec_dot`s written out lane by lane in scalar Rust
//! (the models), bit for bit.

// The models index accumulators and lanes with the same numbers as the kernels they check.
#![allow(clippy::needless_range_loop)]

use super::super::acts::ActRows;
use super::float::*;
use super::lanes::*;
use super::quant::*;
use crate::cpu_features::has_dotprod;
use crate::quant::f16::{fp16_to_fp32, fp32_to_fp16};
use crate::quant::test_util::Lcg;
use crate::quant::{q4_0, q4_1, q8_0, q8_1};
use crate::quant::{BlockQ4_0, BlockQ4_1, BlockQ8_0, BlockQ8_1, Q4_0, Q4_1, Q8_0};
use std::arch::aarch64::*;

/// Which formula ggml's scalar tail uses.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Q4_0,
    Q4_1,
    Q8_0,
}

/// ggml-cpu's NEON `vec_dot` (dotprod build) written out lane by lane in scalar Rust: the
/// model the kernels must equal bit for bit. `w`/`a`: per block the 32 integer quants, the
/// scales, and (Q4_1) the weight minimum / activation sum.
fn model(kind: Kind, w: &[([i32; 32], f32, f32)], a: &[([i32; 32], f32, f32)]) -> f32 {
    let nb = w.len();
    let mut acc = [[0f32; 4]; 2];
    let mut summs = 0f32;
    let lanes = |b: usize| -> [i32; 4] {
        std::array::from_fn(|i| (4 * i..4 * i + 4).map(|j| w[b].0[j] * a[b].0[j] + w[b].0[16 + j] * a[b].0[16 + j]).sum())
    };
    let mut b = 0;
    while b + 1 < nb {
        if kind == Kind::Q4_1 {
            summs += w[b].2.mul_add(a[b].2, w[b + 1].2 * a[b + 1].2);
        }
        for h in 0..2 {
            let l = lanes(b + h);
            let s = w[b + h].1 * a[b + h].1;
            for i in 0..4 {
                acc[h][i] = if FUSED_MLA { (l[i] as f32).mul_add(s, acc[h][i]) } else { acc[h][i] + l[i] as f32 * s };
            }
        }
        b += 2;
    }
    let hsum = |v: [f32; 4]| (v[0] + v[1]) + (v[2] + v[3]);
    let mut sumf = hsum(acc[0]) + hsum(acc[1]);
    if kind == Kind::Q4_1 {
        sumf += summs;
    }
    if nb % 2 == 1 {
        let b = nb - 1;
        let sumi: i32 = lanes(b).iter().sum();
        let (dw, da, mw, sa) = (w[b].1, a[b].1, w[b].2, a[b].2);
        sumf = match kind {
            Kind::Q4_0 => (sumi as f32 * dw).mul_add(da, sumf),
            Kind::Q8_0 => (sumi as f32).mul_add(dw * da, sumf),
            Kind::Q4_1 => sumf + (dw * da).mul_add(sumi as f32, mw * sa),
        };
    }
    sumf
}

fn nib(qs: &[u8; 16], j: usize) -> i32 {
    ((qs[j % 16] >> (4 * (j / 16))) & 15) as i32
}

/// Random weight rows and activation rows of one format, quantized as the NEON level does,
/// with their model view.
struct Case<W, A> {
    w: Vec<Vec<W>>,
    a: Vec<A>,
    d: Vec<f32>,
    s: Vec<f32>,
    wm: Vec<Vec<([i32; 32], f32, f32)>>,
    am: Vec<Vec<([i32; 32], f32, f32)>>,
    nb: usize,
    n: usize,
}

fn acts_f32(rng: &mut Lcg, nb: usize, n: usize) -> Vec<f32> {
    (0..nb * 32 * n).map(|i| rng.next_gauss() * if i % 97 == 0 { 9.0 } else { 1.0 }).collect()
}

fn case_q8_0_acts<W: Copy>(rng: &mut Lcg, w: Vec<Vec<W>>, wm: Vec<Vec<([i32; 32], f32, f32)>>, nb: usize, n: usize) -> Case<W, BlockQ8_0> {
    let x = acts_f32(rng, nb, n);
    let mut a = vec![BlockQ8_0::default(); nb * n];
    q8_0::quantize_row_at(crate::cpu_features::SimdLevel::Neon, &x, &mut a);
    let mut d = vec![0f32; nb * n];
    let mut am = vec![Vec::new(); n];
    for (i, blk) in a.iter().enumerate() {
        d[(i % nb) * n + i / nb] = fp16_to_fp32(blk.d);
        am[i / nb].push((blk.qs.map(|q| q as i32), fp16_to_fp32(blk.d), 0.0));
    }
    Case { w, a, d, s: Vec::new(), wm, am, nb, n }
}

fn case_q4_0(rng: &mut Lcg, rows: usize, nb: usize, n: usize) -> Case<BlockQ4_0, BlockQ8_0> {
    let mut w = Vec::new();
    let mut wm = Vec::new();
    for _ in 0..rows {
        let x: Vec<f32> = (0..nb * 32).map(|_| rng.next_gauss()).collect();
        let mut b = vec![BlockQ4_0::default(); nb];
        q4_0::quantize_row(&x, &mut b);
        wm.push(b.iter().map(|b| (std::array::from_fn(|j| nib(&b.qs, j) - 8), fp16_to_fp32(b.d), 0.0)).collect());
        w.push(b);
    }
    case_q8_0_acts(rng, w, wm, nb, n)
}

fn case_q8_0(rng: &mut Lcg, rows: usize, nb: usize, n: usize) -> Case<BlockQ8_0, BlockQ8_0> {
    let mut w = Vec::new();
    let mut wm = Vec::new();
    for r in 0..rows {
        // any byte is a legal weight quant, -128 included
        let b: Vec<BlockQ8_0> = (0..nb)
            .map(|_| BlockQ8_0 { d: fp32_to_fp16(0.01 + r as f32 * 0.003), qs: std::array::from_fn(|_| rng.next_u32() as i8) })
            .collect();
        wm.push(b.iter().map(|b| (b.qs.map(|q| q as i32), fp16_to_fp32(b.d), 0.0)).collect());
        w.push(b);
    }
    case_q8_0_acts(rng, w, wm, nb, n)
}

fn case_q4_1(rng: &mut Lcg, rows: usize, nb: usize, n: usize) -> Case<BlockQ4_1, BlockQ8_1> {
    let mut w = Vec::new();
    let mut wm = Vec::new();
    for _ in 0..rows {
        let x: Vec<f32> = (0..nb * 32).map(|_| rng.next_gauss() + 0.4).collect();
        let mut b = vec![BlockQ4_1::default(); nb];
        q4_1::quantize_row(&x, &mut b);
        wm.push(b.iter().map(|b| (std::array::from_fn(|j| nib(&b.qs, j)), fp16_to_fp32(b.d), fp16_to_fp32(b.m))).collect());
        w.push(b);
    }
    let x = acts_f32(rng, nb, n);
    let mut a = vec![BlockQ8_1::default(); nb * n];
    q8_1::quantize_row_at(crate::cpu_features::SimdLevel::Neon, &x, &mut a);
    let mut d = vec![0f32; nb * n];
    let mut s = vec![0f32; nb * n];
    let mut am = vec![Vec::new(); n];
    for (i, blk) in a.iter().enumerate() {
        d[(i % nb) * n + i / nb] = fp16_to_fp32(blk.d);
        s[(i % nb) * n + i / nb] = fp16_to_fp32(blk.s);
        am[i / nb].push((blk.qs.map(|q| q as i32), fp16_to_fp32(blk.d), fp16_to_fp32(blk.s)));
    }
    Case { w, a, d, s, wm, am, nb, n }
}

/// Every 2 x C tile (C = 1..4, every column offset) equals the model, with and without
/// `sdot`; so does the single-row entry point.
fn check_tiles<F: NeonTile>(kind: Kind, c: &Case<F::W, F::A>) {
    let rows = ActRows { blocks: &c.a, d: &c.d, s: &c.s, nb: c.nb, n: c.n };
    let want = |r: usize, j: usize| model(kind, &c.wm[r], &c.am[j]);
    macro_rules! tile {
        ($dot:expr, $cols:expr, $c0:expr) => {{
            // SAFETY: DOT only when dotprod was detected.
            let got = unsafe { quant_tile::<F, $dot, 2, $cols, _>([&c.w[0][..], &c.w[1][..]], &rows, $c0) };
            for r in 0..2 {
                for k in 0..$cols {
                    let w = want(r, $c0 + k);
                    assert_eq!(got[r][k].to_bits(), w.to_bits(), "nb={} dot={} C={} r={r} col={}: {} vs {w}", c.nb, $dot, $cols, $c0 + k, got[r][k]);
                }
            }
        }};
    }
    for c0 in 0..c.n {
        if c0 + 4 <= c.n {
            tile!(false, 4, c0);
        }
        if c0 + 3 <= c.n {
            tile!(false, 3, c0);
        }
        tile!(false, 1, c0);
        if has_dotprod() {
            if c0 + 4 <= c.n {
                tile!(true, 4, c0);
            }
            tile!(true, 1, c0);
        }
    }
    // one row pair through the public entry (dispatching on dotprod itself)
    let nb = c.nb;
    let a0 = &c.a[..nb];
    let d0: Vec<f32> = (0..nb).map(|b| c.d[b * c.n]).collect();
    let s0: Vec<f32> = if c.s.is_empty() { Vec::new() } else { (0..nb).map(|b| c.s[b * c.n]).collect() };
    assert_eq!(quant_dot::<F>(&c.w[1], a0, &d0, &s0).to_bits(), want(1, 0).to_bits());
}

#[test]
fn quant_tiles_match_ggml_neon_model() {
    let mut rng = Lcg::new(77);
    for nb in [1usize, 2, 3, 4, 5, 8, 17, 36] {
        check_tiles::<Q4_0>(Kind::Q4_0, &case_q4_0(&mut rng, 2, nb, 5));
        check_tiles::<Q4_1>(Kind::Q4_1, &case_q4_1(&mut rng, 2, nb, 5));
        check_tiles::<Q8_0>(Kind::Q8_0, &case_q8_0(&mut rng, 2, nb, 5));
    }
}

/// The matrix-vector kernel (decoding, and small batches one activation row at a time)
/// gives the model's bits for every row of a 4-row group and of the 1-row remainder, with
/// and without `sdot`, on odd and even block counts, for every activation row of the batch.
fn check_matvec<F: NeonTile>(kind: Kind, c: &Case<F::W, F::A>) {
    use super::matvec::{activation_pairs, rows_dot};
    let rows = ActRows { blocks: &c.a, d: &c.d, s: &c.s, nb: c.nb, n: c.n };
    let w: [&[F::W]; 4] = std::array::from_fn(|r| &c.w[r][..]);
    for j in 0..c.n {
        let pairs = activation_pairs::<F>(&rows, j);
        let mut got = Vec::new();
        // SAFETY: DOT only when dotprod was detected.
        got.push(unsafe { rows_dot::<F, false, 4>(w, &rows, j, &pairs) });
        if has_dotprod() {
            got.push(unsafe { rows_dot::<F, true, 4>(w, &rows, j, &pairs) });
        }
        for r in 0..4 {
            let want = model(kind, &c.wm[r], &c.am[j]);
            for g in &got {
                assert_eq!(g[r].to_bits(), want.to_bits(), "nb={} j={j} r={r}: {} vs {want}", c.nb, g[r]);
            }
            let one = unsafe { rows_dot::<F, false, 1>([w[r]], &rows, j, &pairs) }[0];
            assert_eq!(one.to_bits(), want.to_bits(), "nb={} j={j} r={r} (one row)", c.nb);
        }
    }
}

#[test]
fn quant_matvec_matches_ggml_neon_model() {
    let mut rng = Lcg::new(78);
    for nb in [1usize, 2, 3, 4, 5, 18, 35, 48] {
        for n in [1, 3] {
            check_matvec::<Q4_0>(Kind::Q4_0, &case_q4_0(&mut rng, 4, nb, n));
            check_matvec::<Q4_1>(Kind::Q4_1, &case_q4_1(&mut rng, 4, nb, n));
            check_matvec::<Q8_0>(Kind::Q8_0, &case_q8_0(&mut rng, 4, nb, n));
        }
    }
}

/// The two integer paths agree on every lane, including the extreme byte products.
#[test]
fn sdot_and_base_lanes_agree() {
    let mut rng = Lcg::new(5);
    let mut cases: Vec<([i8; 16], [i8; 16])> = vec![([-128; 16], [-128; 16]), ([127; 16], [-128; 16]), ([-128; 16], [127; 16])];
    for _ in 0..200 {
        cases.push((std::array::from_fn(|_| rng.next_u32() as i8), std::array::from_fn(|_| rng.next_u32() as i8)));
    }
    for (a, b) in cases {
        // SAFETY: 16-byte arrays; vst1q into a 4-lane array; NEON is baseline.
        let (va, vb) = unsafe { (vld1q_s8(a.as_ptr()), vld1q_s8(b.as_ptr())) };
        let mut base = [0i32; 4];
        unsafe { vst1q_s32(base.as_mut_ptr(), dot4_base(va, vb)) };
        let want: [i32; 4] = std::array::from_fn(|i| (4 * i..4 * i + 4).map(|j| a[j] as i32 * b[j] as i32).sum());
        assert_eq!(base, want);
        if has_dotprod() {
            let mut dot = [0i32; 4];
            // SAFETY: dotprod detected.
            unsafe { vst1q_s32(dot.as_mut_ptr(), sdot(vdupq_n_s32(0), va, vb)) };
            assert_eq!(dot, want);
        }
    }
}

/// ggml's NEON `vec_dot_f16` / `vec_dot_f32` (no FP16 arithmetic) in scalar Rust.
fn float_model<E: FloatElem>(w: &[E], a: &[f32], to_f32: fn(E) -> f32) -> f32 {
    let k = a.len();
    let np = k & !15;
    let mut acc = [[0f32; 4]; 4];
    let mut i = 0;
    while i < np {
        for j in 0..4 {
            for l in 0..4 {
                let e = i + 4 * j + l;
                acc[j][l] = to_f32(w[e]).mul_add(a[e], acc[j][l]);
            }
        }
        i += 16;
    }
    let x: [f32; 4] = std::array::from_fn(|l| (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]));
    E::finish((x[0] + x[1]) + (x[2] + x[3]), &w[np..], &a[np..])
}

#[test]
fn float_tiles_match_ggml_neon_model() {
    let mut rng = Lcg::new(8);
    for k in [1usize, 4, 15, 16, 17, 33, 64, 100, 576] {
        let w16: Vec<Vec<u16>> = (0..2).map(|_| (0..k).map(|_| fp32_to_fp16(rng.next_gauss())).collect()).collect();
        let w32: Vec<Vec<f32>> = (0..2).map(|_| (0..k).map(|_| rng.next_gauss()).collect()).collect();
        // activations as ggml's F16 dot sees them: rounded to half
        let a: Vec<Vec<f32>> = (0..4).map(|_| (0..k).map(|_| fp16_to_fp32(fp32_to_fp16(rng.next_gauss()))).collect()).collect();
        let t16_4 = float_tile::<u16, 2, 4>([&w16[0], &w16[1]], [&a[0], &a[1], &a[2], &a[3]]);
        let t16_1 = float_tile::<u16, 2, 1>([&w16[0], &w16[1]], [&a[2]]);
        let t32_3 = float_tile::<f32, 1, 3>([&w32[1]], [&a[0], &a[1], &a[3]]);
        let t32_1 = float_tile::<f32, 2, 1>([&w32[0], &w32[1]], [&a[1]]);
        for r in 0..2 {
            for c in 0..4 {
                assert_eq!(t16_4[r][c].to_bits(), float_model(&w16[r], &a[c], fp16_to_fp32).to_bits(), "k={k}");
            }
            assert_eq!(t16_1[r][0].to_bits(), float_model(&w16[r], &a[2], fp16_to_fp32).to_bits(), "k={k}");
            assert_eq!(t32_1[r][0].to_bits(), float_model(&w32[r], &a[1], |x| x).to_bits(), "k={k}");
        }
        for (c, j) in [0usize, 1, 3].into_iter().enumerate() {
            assert_eq!(t32_3[0][c].to_bits(), float_model(&w32[1], &a[j], |x| x).to_bits(), "k={k}");
        }
    }
}

/// Nearest half (ties to even) of a double, by checking the neighbours of the f32 route.
fn f64_to_f16(v: f64) -> u16 {
    let h = fp32_to_fp16(v as f32);
    let mut best = h;
    for c in [h.wrapping_sub(1), h.wrapping_add(1)] {
        let (fc, fb) = (fp16_to_fp32(c) as f64, fp16_to_fp32(best) as f64);
        if c & 0x7C00 == 0x7C00 || (fc < 0.0) != (fb < 0.0) && fc != 0.0 {
            continue;
        }
        let (dc, db) = ((fc - v).abs(), (fb - v).abs());
        if dc < db || (dc == db && c & 1 == 0) {
            best = c;
        }
    }
    best
}

/// ggml's `vec_dot_f16` with FP16 arithmetic in scalar Rust: each half FMA computed exactly
/// in f64 (products of halves are exact, and the test values keep the sums within 53 bits)
/// and rounded once to half.
fn f16_hp_model(w: &[u16], a: &[f32]) -> f32 {
    let k = a.len();
    let np = k & !31;
    let h = |x: u16| fp16_to_fp32(x) as f64;
    let mut acc = [[0u16; 8]; 4];
    let mut i = 0;
    while i < np {
        for j in 0..4 {
            for l in 0..8 {
                let e = i + 8 * j + l;
                acc[j][l] = f64_to_f16(h(acc[j][l]) + h(w[e]) * a[e] as f64);
            }
        }
        i += 32;
    }
    let add = |x: [u16; 8], y: [u16; 8]| -> [u16; 8] { std::array::from_fn(|l| f64_to_f16(h(x[l]) + h(y[l]))) };
    let x = add(add(acc[0], acc[2]), add(acc[1], acc[3]));
    let t: [f32; 4] = std::array::from_fn(|l| fp16_to_fp32(x[l]) + fp16_to_fp32(x[l + 4]));
    <u16 as FloatElem>::finish((t[0] + t[1]) + (t[2] + t[3]), &w[np..], &a[np..])
}

#[test]
fn f16_half_precision_tiles_match_model() {
    if !crate::cpu_features::has_fp16() {
        return;
    }
    let mut rng = Lcg::new(12);
    for k in [1usize, 31, 32, 33, 64, 100, 576, 1536] {
        let w: Vec<Vec<u16>> = (0..2).map(|_| (0..k).map(|_| fp32_to_fp16(rng.next_gauss())).collect()).collect();
        let a: Vec<Vec<f32>> = (0..4).map(|_| (0..k).map(|_| fp16_to_fp32(fp32_to_fp16(rng.next_gauss()))).collect()).collect();
        let ah: Vec<Vec<u16>> = a.iter().map(|r| r.iter().map(|&x| fp32_to_fp16(x)).collect()).collect();
        // SAFETY: FEAT_FP16 checked above.
        let t22 = unsafe { f16_tile_hp::<2, 2>([&w[0], &w[1]], [&ah[0], &ah[2]]) };
        let t11 = unsafe { f16_tile_hp::<1, 1>([&w[1]], [&ah[1]]) };
        let t24 = unsafe { f16_tile_hp::<2, 4>([&w[0], &w[1]], [&ah[0], &ah[1], &ah[2], &ah[3]]) };
        let t41 = unsafe { f16_tile_hp::<4, 1>([&w[0], &w[1], &w[1], &w[0]], [&ah[3]]) };
        for (r, wr) in [0usize, 1, 1, 0].into_iter().enumerate() {
            assert_eq!(t41[r][0].to_bits(), f16_hp_model(&w[wr], &a[3]).to_bits(), "k={k} r={r} (4x1)");
        }
        for r in 0..2 {
            for c in 0..4 {
                assert_eq!(t24[r][c].to_bits(), f16_hp_model(&w[r], &a[c]).to_bits(), "k={k} r={r} c={c} (2x4)");
            }
        }
        for r in 0..2 {
            for (c, j) in [0usize, 2].into_iter().enumerate() {
                assert_eq!(t22[r][c].to_bits(), f16_hp_model(&w[r], &a[j]).to_bits(), "k={k} r={r} c={c}");
            }
        }
        assert_eq!(t11[0][0].to_bits(), f16_hp_model(&w[1], &a[1]).to_bits(), "k={k}");
    }
    // Hand-computed: lane 0 of accumulator 0 sees elements 0 and 32: 2048*1 then + 1*1 =
    // 2049, which half precision rounds to 2048 (ties to even); f32 would keep 2049.
    let mut w = vec![0u16; 64];
    let mut a = vec![0f32; 64];
    w[0] = fp32_to_fp16(2048.0);
    a[0] = 1.0;
    w[32] = fp32_to_fp16(1.0);
    a[32] = 1.0;
    let ah: Vec<u16> = a.iter().map(|&x| fp32_to_fp16(x)).collect();
    // SAFETY: FEAT_FP16 checked above.
    assert_eq!(unsafe { f16_tile_hp::<1, 1>([&w], [&ah]) }[0][0], 2048.0);
    assert_eq!(float_tile::<u16, 1, 1>([&w], [&a])[0][0], 2049.0);
}

/// Hand-computed: one block pair plus an odd tail block with unit scales gives the exact
/// integer dot product, and a known half scale multiplies it exactly.
#[test]
fn quant_tile_hand_computed() {
    let mut w = vec![BlockQ8_0 { d: 0x3C00, qs: [0; 32] }; 3];
    let mut a = vec![BlockQ8_0 { d: 0x3C00, qs: [0; 32] }; 3];
    w[0].qs[0] = 3;
    a[0].qs[0] = -5; // -15
    w[1].qs[31] = -128;
    a[1].qs[31] = 127; // -16256
    w[2].qs[17] = 7;
    a[2].qs[17] = 2; // 14 (tail block)
    w[2].d = 0x3800; // 0.5 -> 7
    let d = [1.0f32; 3];
    assert_eq!(quant_dot::<Q8_0>(&w, &a, &d, &[]), -15.0 - 16256.0 + 7.0);
}
