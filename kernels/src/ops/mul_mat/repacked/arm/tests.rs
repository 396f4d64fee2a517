use super::super::{compute, supports};
use super::*;
use crate::cpu_features::has_dotprod;
use crate::op::{Op, Repack};
use crate::pool::Pool;
use crate::quant::f16::fp32_to_fp16;
use crate::quant::type_id;
use crate::view::{Raw, F32};

/// xorshift values in [-1, 1)
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn f(&mut self) -> f32 {
        (self.next() >> 11) as f32 / (1u64 << 53) as f32 * 2.0 - 1.0
    }
}

/// A plain `block_q4_0` / `block_iq4_nl` (16 bytes of quants) or `block_q8_0` (32): its half
/// scale and quant bytes.
#[derive(Clone, Copy)]
struct Plain {
    d: u16,
    qs: [u8; 32],
}

/// Random blocks: every nibble / byte pattern, small half scales (some subnormal).
fn random_blocks(rng: &mut Rng, n: usize) -> Vec<Plain> {
    (0..n)
        .map(|i| Plain { d: fp32_to_fp16(rng.f().abs() * if i % 7 == 3 { 1e-6 } else { 0.01 } + 1e-7), qs: std::array::from_fn(|_| rng.next() as u8) })
        .collect()
}

fn quant_bytes(q: Quants) -> usize {
    if q == Quants::Q8_0 { 32 } else { 16 }
}

fn plain_bytes(q: Quants) -> usize {
    2 + quant_bytes(q)
}

fn ty(q: Quants) -> i32 {
    match q {
        Quants::Q4_0 => type_id::Q4_0,
        Quants::IQ4NL => type_id::IQ4_NL,
        Quants::Q8_0 => type_id::Q8_0,
    }
}

/// Element `j` of a plain block, as ggml's dequantizers read it.
fn value(q: Quants, x: &Plain, j: usize) -> i32 {
    let nib = |j: usize| if j < 16 { x.qs[j] & 15 } else { x.qs[j - 16] >> 4 };
    match q {
        Quants::Q4_0 => nib(j) as i32 - 8,
        Quants::IQ4NL => crate::quant::iq4_nl::KVALUES[nib(j) as usize] as i32,
        Quants::Q8_0 => x.qs[j] as i8 as i32,
    }
}

fn bytes(il: Interleave) -> usize {
    match il {
        Interleave::Four => 4,
        Interleave::Eight => 8,
    }
}

/// ggml-cpu's `repack_q4_0_to_q4_0_4_bl` / `_iq4_nl_to_iq4_nl_4_bl` / `_q8_0_to_q8_0_4_bl` with
/// `make_block_q4_0x4` (nibbles xor 8) / `_iq4_nlx4` / `_q8_0x4` (interleave 4 or 8): `w` is `m`
/// rows of `nb` blocks.
fn repack_x4(q: Quants, il: Interleave, w: &[Plain], m: usize, nb: usize) -> Vec<u8> {
    let bl = bytes(il);
    let qb = quant_bytes(q);
    let xor = if q == Quants::Q4_0 { 0x88 } else { 0 };
    let mut out = Vec::with_capacity(m * nb * plain_bytes(q));
    for g in 0..m / 4 {
        for x in 0..nb {
            let inb: [&Plain; 4] = std::array::from_fn(|i| &w[(4 * g + i) * nb + x]);
            let mut o = vec![0u8; q.x4_bytes()];
            for i in 0..4 {
                o[2 * i..2 * i + 2].copy_from_slice(&inb[i].d.to_le_bytes());
            }
            for i in 0..4 * qb / bl {
                let (src, off) = (i % 4, (i / 4) * bl);
                for t in 0..bl {
                    o[8 + bl * i + t] = inb[src].qs[off + t] ^ xor;
                }
            }
            out.extend_from_slice(&o);
        }
    }
    out
}

/// ggml's repacked arithmetic from the plain blocks, for one weight row and one activation row:
/// per block the exact integer dot product, `acc = fma(I, d_w * d_a, acc)`.
fn reference(q: Quants, w: &[Plain], a: &[BlockQ8_0]) -> f32 {
    let mut acc = 0f32;
    for (x, y) in w.iter().zip(a) {
        let dot: i32 = (0..32).map(|j| value(q, x, j) * y.qs[j] as i32).sum();
        acc = (dot as f32).mul_add(fp16_to_fp32(x.d) * fp16_to_fp32(y.d), acc);
    }
    acc
}

/// ggml's `dequantize_row_*`.
fn dequantize(q: Quants, w: &[Plain]) -> Vec<f32> {
    w.iter().flat_map(|x| (0..32).map(move |j| fp16_to_fp32(x.d) * value(q, x, j) as f32)).collect()
}

fn quantize(x: &[f32]) -> Vec<BlockQ8_0> {
    let mut q = vec![BlockQ8_0::default(); x.len() / QK];
    q8_0::quantize_row_at(SimdLevel::Neon, x, &mut q);
    q
}

/// Every layout: the library's marker, its quants, its interleave.
const LAYOUTS: [(Repack, Quants, Interleave); 5] = [
    (Repack::Q4_0_4x4, Quants::Q4_0, Interleave::Four),
    (Repack::Q4_0_4x8, Quants::Q4_0, Interleave::Eight),
    (Repack::IQ4NLx4, Quants::IQ4NL, Interleave::Four),
    (Repack::Q8_0_4x4, Quants::Q8_0, Interleave::Four),
    (Repack::Q8_0_4x8, Quants::Q8_0, Interleave::Eight),
];

/// The kernel reads every layout's bytes as ggml's arithmetic on the plain rows gives, bit for
/// bit, for tiles of 1 to 16 rows; a planted slip (one block's product rounded before the add)
/// is caught by the same comparison.
#[test]
fn kernel_matches_reference_bitwise() {
    if !has_dotprod() {
        return;
    }
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let mut planted_caught = false;
    for (q, il) in LAYOUTS.map(|l| (l.1, l.2)) {
        for nb in [1usize, 3, 20] {
            let w = random_blocks(&mut rng, 4 * nb);
            let packed = repack_x4(q, il, &w, 4, nb);
            for n in [1usize, 5, 16] {
                let acts: Vec<Vec<BlockQ8_0>> = (0..n).map(|_| quantize(&(0..nb * QK).map(|_| rng.f() * 3.0).collect::<Vec<_>>())).collect();
                let rows: Vec<&[BlockQ8_0]> = acts.iter().map(|a| &a[..]).collect();
                let mut out = [[0f32; 4]; TILE];
                // SAFETY: has_dotprod() checked above.
                unsafe { group(&packed, q, il, &rows, &mut out) };
                for r in 0..n {
                    for c in 0..4 {
                        let want = reference(q, &w[c * nb..(c + 1) * nb], &acts[r]);
                        assert_eq!(out[r][c].to_bits(), want.to_bits(), "{q:?} {il:?} nb {nb} n {n} row {r} col {c}");
                        // unfused: what a kernel rounding the block's product first would give
                        let unfused = w[c * nb..(c + 1) * nb].iter().zip(&acts[r]).fold(0f32, |acc, (x, y)| {
                            let dot: i32 = (0..32).map(|j| value(q, x, j) * y.qs[j] as i32).sum();
                            acc + dot as f32 * (fp16_to_fp32(x.d) * fp16_to_fp32(y.d))
                        });
                        planted_caught |= unfused.to_bits() != out[r][c].to_bits();
                    }
                }
            }
        }
    }
    assert!(planted_caught, "the unfused sum never differed: the comparison would not see a slip");
}

/// The node end to end, every layout: every row's bits those of ggml's steps (rows 1, 3, 4, 7,
/// 33, 100; two planes; one row in three planes; weight rows a multiple of 4 but not of 8), 1 and 2 threads alike, and the
/// products those of the plain weights (dequantized f32 product, NMSE < 1e-4).
#[test]
fn node_matches_reference_and_plain_product() {
    if !has_dotprod() {
        return;
    }
    let mut rng = Rng(0x0dd_ba11_5eed_f00d);
    for (repack, q, il) in LAYOUTS {
        let pb = plain_bytes(q);
        for (k, m) in [(64usize, 12usize), (576, 40)] {
            let nb = k / QK;
            let w = random_blocks(&mut rng, m * nb);
            let mut packed = repack_x4(q, il, &w, m, nb);
            let plain = dequantize(q, &w);
            for (rows, planes) in [(1usize, 1usize), (3, 1), (4, 1), (7, 2), (33, 1), (100, 1), (1, 3)] {
                let mut x: Vec<f32> = (0..k * rows * planes).map(|_| rng.f()).collect();
                let a = Raw { data: packed.as_mut_ptr(), ne: [k, m, 1, 1], nb: [pb, pb * nb, pb * nb * m, pb * nb * m], ty: ty(q) };
                let b = Raw { data: x.as_mut_ptr() as *mut u8, ne: [k, rows, planes, 1], nb: [4, 4 * k, 4 * k * rows, 4 * k * rows * planes], ty: F32 };
                let mut results = Vec::new();
                for threads in [1, 2] {
                    let mut out = vec![f32::NAN; m * rows * planes];
                    let d = Raw { data: out.as_mut_ptr() as *mut u8, ne: [m, rows, planes, 1], nb: [4, 4 * m, 4 * m * rows, 4 * m * rows * planes], ty: F32 };
                    let node = Node { op: Op::MulMat, dst: d, src: [Some(a), Some(b), None, None, None], params: [0; 16], order: crate::CpuOrder::BEFORE_2026, q8k: None, repack: Some(repack) };
                    assert!(supports(&node));
                    let pool = Pool::new(threads);
                    assert!(compute(&pool.session(), &node));
                    results.push(out);
                }
                assert_eq!(results[0].iter().map(|v| v.to_bits()).collect::<Vec<_>>(), results[1].iter().map(|v| v.to_bits()).collect::<Vec<_>>());
                let out = &results[0];
                let (mut num, mut den) = (0f64, 0f64);
                for p in 0..planes {
                    for j in 0..rows {
                        let xr = &x[(p * rows + j) * k..(p * rows + j + 1) * k];
                        let act = quantize(xr);
                        for c in 0..m {
                            let got = out[(p * rows + j) * m + c];
                            let want = reference(q, &w[c * nb..(c + 1) * nb], &act);
                            assert_eq!(got.to_bits(), want.to_bits(), "{q:?} {il:?} k {k} m {m} rows {rows} plane {p} row {j} col {c}");
                            let exact: f64 = plain[c * k..(c + 1) * k].iter().zip(xr).map(|(&w, &x)| w as f64 * x as f64).sum();
                            num += (got as f64 - exact).powi(2);
                            den += exact * exact;
                        }
                    }
                }
                assert!(num / den < 1e-4, "{q:?} {il:?} k {k} m {m} rows {rows}: NMSE {}", num / den);
            }
        }
    }
}

/// Weight rows not a multiple of 4 are declined (ggml does not repack them).
#[test]
fn rows_not_multiple_of_four_declined() {
    let mut w = vec![0u8; 18 * 2 * 6];
    let mut x = vec![0f32; 64];
    let mut out = vec![0f32; 6];
    let a = Raw { data: w.as_mut_ptr(), ne: [64, 6, 1, 1], nb: [18, 36, 216, 216], ty: type_id::Q4_0 };
    let b = Raw { data: x.as_mut_ptr() as *mut u8, ne: [64, 1, 1, 1], nb: [4, 256, 256, 256], ty: F32 };
    let d = Raw { data: out.as_mut_ptr() as *mut u8, ne: [6, 1, 1, 1], nb: [4, 24, 24, 24], ty: F32 };
    let node = Node { op: Op::MulMat, dst: d, src: [Some(a), Some(b), None, None, None], params: [0; 16], order: crate::CpuOrder::BEFORE_2026, q8k: None, repack: Some(Repack::Q4_0_4x4) };
    assert!(!supports(&node));
    // a layout of another type than the weight's
    let a = Raw { ne: [64, 8, 1, 1], nb: [18, 36, 288, 288], ..a };
    let d = Raw { ne: [8, 1, 1, 1], nb: [4, 32, 32, 32], ..d };
    let mut out8 = vec![0f32; 8];
    let d = Raw { data: out8.as_mut_ptr() as *mut u8, ..d };
    let node = Node { dst: d, src: [Some(a), Some(b), None, None, None], repack: Some(Repack::Q4_0_4x4), ..node };
    assert_eq!(supports(&node), has_dotprod());
    let node = Node { repack: Some(Repack::Q8_0_4x4), ..node };
    assert!(!supports(&node));
}

/// The one-row path ([`gemv`], a run of groups per call) gives every layout's outputs bit for
/// bit as [`group`] and ggml's steps on the plain rows do.
#[test]
fn gemv_matches_group_and_reference() {
    if !has_dotprod() {
        return;
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for (q, il) in LAYOUTS.map(|l| (l.1, l.2)) {
        for (nb, m) in [(1usize, 4usize), (3, 12), (20, 8)] {
            let w = random_blocks(&mut rng, m * nb);
            let packed = repack_x4(q, il, &w, m, nb);
            let act = quantize(&(0..nb * QK).map(|_| rng.f() * 3.0).collect::<Vec<_>>());
            let mut out = vec![f32::NAN; m];
            // SAFETY: has_dotprod() checked above.
            unsafe { gemv(&packed, q, il, &act, &mut out) };
            for g in 0..m / 4 {
                let mut by_group = [[0f32; 4]; TILE];
                // SAFETY: as above.
                unsafe { group(&packed[g * nb * q.x4_bytes()..], q, il, &[&act[..]], &mut by_group) };
                for c in 0..4 {
                    let want = reference(q, &w[(4 * g + c) * nb..(4 * g + c + 1) * nb], &act);
                    assert_eq!(out[4 * g + c].to_bits(), want.to_bits(), "{q:?} {il:?} nb {nb} group {g} col {c}");
                    assert_eq!(by_group[0][c].to_bits(), want.to_bits(), "{q:?} {il:?} nb {nb} group {g} col {c}");
                }
            }
        }
    }
}

/// Not a check: the one-row work of a 4096 x 640 `q8_0_4x8` product (1024 groups of 20 blocks),
/// `GGML_RS_COUNT_PATH=group` through [`group`] per group as before the one-row path, else
/// [`gemv`], `GGML_RS_COUNT_REPEATS` times (default 1), for counting under qemu with
/// tools/qemu-count's plugin: (count at 3 - count at 1) / 2 / 20480 is one block's instructions.
#[test]
#[ignore]
fn count_one_row() {
    if !has_dotprod() {
        return;
    }
    let (q, il) = match std::env::var("GGML_RS_COUNT_LAYOUT").as_deref() {
        Ok("q4_0_4x8") => (Quants::Q4_0, Interleave::Eight),
        Ok("q4_0_4x4") => (Quants::Q4_0, Interleave::Four),
        Ok("q8_0_4x4") => (Quants::Q8_0, Interleave::Four),
        _ => (Quants::Q8_0, Interleave::Eight),
    };
    let repeats: usize = std::env::var("GGML_RS_COUNT_REPEATS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let by_group = std::env::var("GGML_RS_COUNT_PATH").as_deref() == Ok("group");
    let (m, nb) = (4096usize, 20usize);
    let mut rng = Rng(7);
    let w = random_blocks(&mut rng, m * nb);
    let packed = repack_x4(q, il, &w, m, nb);
    let act = quantize(&(0..nb * QK).map(|_| rng.f()).collect::<Vec<_>>());
    let mut out = vec![0f32; m];
    let gb = nb * q.x4_bytes();
    for _ in 0..repeats {
        if by_group {
            let mut o = [[0f32; 4]; TILE];
            for g in 0..m / 4 {
                // SAFETY: has_dotprod() checked above.
                unsafe { group(&packed[g * gb..(g + 1) * gb], q, il, &[&act[..]], &mut o) };
                out[4 * g..4 * g + 4].copy_from_slice(&o[0]);
            }
        } else {
            // SAFETY: as above.
            unsafe { gemv(&packed, q, il, &act, &mut out) };
        }
    }
    println!("count_one_row {q:?} {il:?} group={by_group} x{repeats}: {}", out.iter().sum::<f32>());
}
