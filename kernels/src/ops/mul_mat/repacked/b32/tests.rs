use super::super::{compute, supports};
use super::*;
use crate::cpu_features::simd_level;
use crate::op::{Op, Repack};
use crate::pool::Pool;
use crate::quant::f16::{fp16_to_fp32, fp32_to_fp16};
use crate::quant::iq4_nl::KVALUES;
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

/// A plain block (`block_q4_0` and `block_iq4_nl` share the layout): its half scale and 16 bytes.
#[derive(Clone, Copy)]
struct Plain {
    d: u16,
    qs: [u8; 16],
}

/// The two formats: the layout, ggml's type, what a plain nibble stands for, and the xor
/// `make_block_*x8` applies.
#[derive(Clone, Copy, Debug)]
enum Fmt {
    Q4_0,
    IQ4NL,
}

impl Fmt {
    fn repack(self) -> Repack {
        match self {
            Fmt::Q4_0 => Repack::Q4_0x8,
            Fmt::IQ4NL => Repack::IQ4NLx8,
        }
    }
    fn ty(self) -> i32 {
        match self {
            Fmt::Q4_0 => type_id::Q4_0,
            Fmt::IQ4NL => type_id::IQ4_NL,
        }
    }
    /// ggml's `dequantize_row_q4_0` / `_iq4_nl` value of a plain nibble.
    fn value(self, nibble: u8) -> i32 {
        match self {
            Fmt::Q4_0 => nibble as i32 - 8,
            Fmt::IQ4NL => KVALUES[nibble as usize] as i32,
        }
    }
    fn values(self) -> &'static [i8; 16] {
        match self {
            Fmt::Q4_0 => &Q4_0_VALUES,
            Fmt::IQ4NL => &KVALUES,
        }
    }
    /// 0x88 for Q4_0 (`make_block_q4_0x8`'s `xor_mask`), none for IQ4_NL.
    fn xor(self) -> u8 {
        match self {
            Fmt::Q4_0 => 0x88,
            Fmt::IQ4NL => 0,
        }
    }
}

/// Random blocks: every nibble pattern, small half scales (some subnormal).
fn random_blocks(rng: &mut Rng, n: usize) -> Vec<Plain> {
    (0..n)
        .map(|i| Plain { d: fp32_to_fp16(rng.f().abs() * if i % 7 == 3 { 1e-6 } else { 0.01 } + 1e-7), qs: std::array::from_fn(|_| rng.next() as u8) })
        .collect()
}

/// ggml-cpu's `repack_q4_0_to_q4_0_8_bl` / `repack_iq4_nl_to_iq4_nl_8_bl` with
/// `make_block_q4_0x8` / `make_block_iq4_nlx8` (interleave 8): `w` is `m` rows of `nb` blocks.
fn repack_x8(fmt: Fmt, w: &[Plain], m: usize, nb: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(m * nb * BLOCK_BYTES);
    for g in 0..m / 8 {
        for x in 0..nb {
            let inb: [&Plain; 8] = std::array::from_fn(|i| &w[(8 * g + i) * nb + x]);
            let mut o = [0u8; X8_BYTES];
            for i in 0..8 {
                o[2 * i..2 * i + 2].copy_from_slice(&inb[i].d.to_le_bytes());
            }
            for i in 0..16 {
                let (src, off) = (i % 8, (i / 8) * 8);
                for t in 0..8 {
                    o[16 + 8 * i + t] = inb[src].qs[off + t] ^ fmt.xor();
                }
            }
            out.extend_from_slice(&o);
        }
    }
    out
}

/// ggml's repacked arithmetic from the plain blocks, for one weight row and one activation row:
/// per block the exact integer dot product, `acc = fma(I, d_w * d_a, acc)`.
fn reference(fmt: Fmt, w: &[Plain], a: &[BlockQ8_0]) -> f32 {
    let mut acc = 0f32;
    for (x, y) in w.iter().zip(a) {
        let dot: i32 = (0..32).map(|j| fmt.value(if j < 16 { x.qs[j] & 15 } else { x.qs[j - 16] >> 4 }) * y.qs[j] as i32).sum();
        acc = (dot as f32).mul_add(fp16_to_fp32(x.d) * fp16_to_fp32(y.d), acc);
    }
    acc
}

/// ggml's `dequantize_row_q4_0` / `_iq4_nl`.
fn dequantize(fmt: Fmt, w: &[Plain]) -> Vec<f32> {
    w.iter().flat_map(|x| (0..32).map(move |j| fp16_to_fp32(x.d) * fmt.value(if j < 16 { x.qs[j] & 15 } else { x.qs[j - 16] >> 4 }) as f32)).collect()
}

fn quantize(x: &[f32]) -> Vec<BlockQ8_0> {
    let mut q = vec![BlockQ8_0::default(); x.len() / QK];
    q8_0::quantize_row_at(SimdLevel::Avx2, x, &mut q);
    q
}

fn have_avx2() -> bool {
    matches!(simd_level(), SimdLevel::Avx2 | SimdLevel::Avx512)
}

/// The kernel reads the repacked bytes as ggml's arithmetic on the plain rows gives, bit for bit,
/// for both formats and tiles of 1 to 16 rows.
#[test]
fn kernel_matches_reference_bitwise() {
    if !have_avx2() {
        return;
    }
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    for fmt in [Fmt::Q4_0, Fmt::IQ4NL] {
        for nb in [1usize, 3, 20] {
            let w = random_blocks(&mut rng, 8 * nb);
            let packed = repack_x8(fmt, &w, 8, nb);
            for n in [1usize, 5, 16] {
                let acts: Vec<Vec<BlockQ8_0>> = (0..n).map(|_| quantize(&(0..nb * QK).map(|_| rng.f() * 3.0).collect::<Vec<_>>())).collect();
                let rows: Vec<&[BlockQ8_0]> = acts.iter().map(|a| &a[..]).collect();
                let mut out = [[0f32; 8]; TILE];
                group(&packed, fmt.values(), &rows, &mut out);
                for r in 0..n {
                    for c in 0..8 {
                        let want = reference(fmt, &w[c * nb..(c + 1) * nb], &acts[r]);
                        assert_eq!(out[r][c].to_bits(), want.to_bits(), "{fmt:?} nb {nb} n {n} row {r} col {c}");
                    }
                }
            }
        }
    }
}

/// ggml-cpu's AVX2 `ggml_quantize_mat_q8_0_4x8` for one of its four rows (they never mix), step
/// by step: per block the lanes' largest magnitudes (lane `p` over elements `8t + p`: `andnot`
/// of the sign, `max_ps` of the four vectors in order, then ggml's reduction), `d = max / 127`
/// stored as a half, `id = 127 / max`, `round(x * id)` half to even, `cvtps2dq` and the
/// saturating packs.
fn quantize_mat_4x8_row(x: &[f32]) -> Vec<BlockQ8_0> {
    let maxps = |a: f32, b: f32| if a > b { a } else { b };
    x.chunks_exact(32)
        .map(|b| {
            let lanes: [f32; 8] = std::array::from_fn(|p| {
                let a: [f32; 4] = std::array::from_fn(|t| b[8 * t + p].abs());
                maxps(maxps(maxps(a[0], a[1]), a[2]), a[3])
            });
            let m4: [f32; 4] = std::array::from_fn(|p| maxps(lanes[p + 4], lanes[p]));
            let m2 = [maxps(m4[0], m4[2]), maxps(m4[1], m4[3])];
            let max = maxps(m2[0], m2[1]);
            let id = if max != 0.0 { 127.0 / max } else { 0.0 };
            let qs = std::array::from_fn(|i| {
                let r = (b[i] * id).round_ties_even();
                let v = if (-2147483648.0..2147483648.0).contains(&r) { r as i32 } else { i32::MIN };
                v.clamp(-128, 127) as i8
            });
            BlockQ8_0 { d: fp32_to_fp16(max / 127.0), qs }
        })
        .collect()
}

/// `ggml_quantize_mat_q8_0_4x8` (the rows in groups of four) and the AVX2 `quantize_row_q8_0`
/// (the others) give the same blocks, so every row may be quantized by the latter.
#[test]
fn quantizer_4x8_is_q8_0() {
    if !have_avx2() {
        return;
    }
    let mut rng = Rng(0xabad_1dea_f00d_cafe);
    for case in 0..300 {
        let scale = [1.0f32, 1e-3, 37.0, 1e-30][case % 4];
        let mut x: Vec<f32> = (0..4 * QK).map(|_| rng.f() * scale).collect();
        if case % 5 == 1 {
            // a tie of magnitudes with opposite signs
            x[13] = 2.0 * scale;
            x[45] = -2.0 * scale;
        }
        if case == 2 {
            x[32..64].iter_mut().for_each(|v| *v = 0.0);
        }
        assert_eq!(quantize_mat_4x8_row(&x), quantize(&x), "case {case}");
    }
}

/// The node end to end, both formats: every row's bits those of ggml's steps (rows 1, 3, 4, 7,
/// 33, 100; two planes), 1 and 2 threads alike, and the products those of the plain weights
/// (dequantized f32 product, NMSE < 1e-4).
#[test]
fn node_matches_reference_and_plain_product() {
    if !have_avx2() {
        return;
    }
    let mut rng = Rng(0x0dd_ba11_5eed_f00d);
    for fmt in [Fmt::Q4_0, Fmt::IQ4NL] {
        for (k, m) in [(64usize, 16usize), (576, 40)] {
            let nb = k / QK;
            let w = random_blocks(&mut rng, m * nb);
            let mut packed = repack_x8(fmt, &w, m, nb);
            let plain = dequantize(fmt, &w);
            for (rows, planes) in [(1usize, 1usize), (3, 1), (4, 1), (7, 2), (33, 1), (100, 1)] {
                let mut x: Vec<f32> = (0..k * rows * planes).map(|_| rng.f()).collect();
                let a = Raw { data: packed.as_mut_ptr(), ne: [k, m, 1, 1], nb: [18, 18 * nb, 18 * nb * m, 18 * nb * m], ty: fmt.ty() };
                let b = Raw { data: x.as_mut_ptr() as *mut u8, ne: [k, rows, planes, 1], nb: [4, 4 * k, 4 * k * rows, 4 * k * rows * planes], ty: F32 };
                let mut results = Vec::new();
                for threads in [1, 2] {
                    let mut out = vec![f32::NAN; m * rows * planes];
                    let d = Raw { data: out.as_mut_ptr() as *mut u8, ne: [m, rows, planes, 1], nb: [4, 4 * m, 4 * m * rows, 4 * m * rows * planes], ty: F32 };
                    let node = Node { op: Op::MulMat, dst: d, src: [Some(a), Some(b), None, None, None], params: [0; 16], order: crate::CpuOrder::BEFORE_2026, q8k: None, repack: Some(fmt.repack()) };
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
                            let want = reference(fmt, &w[c * nb..(c + 1) * nb], &act);
                            assert_eq!(got.to_bits(), want.to_bits(), "{fmt:?} k {k} m {m} rows {rows} plane {p} row {j} col {c}");
                            let exact: f64 = plain[c * k..(c + 1) * k].iter().zip(xr).map(|(&w, &x)| w as f64 * x as f64).sum();
                            num += (got as f64 - exact).powi(2);
                            den += exact * exact;
                        }
                    }
                }
                assert!(num / den < 1e-4, "{fmt:?} k {k} m {m} rows {rows}: NMSE {}", num / den);
            }
        }
    }
}

/// Only the layout the node says, on shapes ggml-cpu repacks; no host Q8_K needed.
#[test]
fn declines_other_types_and_shapes() {
    let mut w = vec![0u8; 18 * 2 * 16];
    let mut x = vec![0f32; 64 * 2];
    let mut out = vec![0f32; 16 * 2];
    for fmt in [Fmt::Q4_0, Fmt::IQ4NL] {
        let a = Raw { data: w.as_mut_ptr(), ne: [64, 16, 1, 1], nb: [18, 36, 36 * 16, 36 * 16], ty: fmt.ty() };
        let b = Raw { data: x.as_mut_ptr() as *mut u8, ne: [64, 2, 1, 1], nb: [4, 256, 512, 512], ty: F32 };
        let d = Raw { data: out.as_mut_ptr() as *mut u8, ne: [16, 2, 1, 1], nb: [4, 64, 128, 128], ty: F32 };
        let node = Node { op: Op::MulMat, dst: d, src: [Some(a), Some(b), None, None, None], params: [0; 16], order: crate::CpuOrder::BEFORE_2026, q8k: None, repack: Some(fmt.repack()) };
        assert_eq!(supports(&node), have_avx2());
        assert!(!supports(&Node { repack: Some(Repack::Other), ..node }));
        let other = if matches!(fmt, Fmt::Q4_0) { Repack::IQ4NLx8 } else { Repack::Q4_0x8 };
        assert!(!supports(&Node { repack: Some(other), ..node }));
        assert!(!supports(&Node { repack: Some(Repack::Q4Kx8), ..node }));
        let rows12 = Raw { ne: [64, 12, 1, 1], ..a };
        assert!(!supports(&Node { src: [Some(rows12), Some(b), None, None, None], dst: Raw { ne: [12, 2, 1, 1], ..d }, ..node }));
        let three_d = Raw { ne: [64, 8, 2, 1], ..a };
        assert!(!supports(&Node { src: [Some(three_d), Some(b), None, None, None], dst: Raw { ne: [8, 2, 1, 1], ..d }, ..node }));
        let f16 = Raw { ty: crate::view::F16, nb: [2, 128, 256, 256], ..b };
        assert!(!supports(&Node { src: [Some(a), Some(f16), None, None, None], ..node }));
        assert!(crate::ops::mul_mat::streamed::Streamed::of(&node).is_none());
    }
}
