use super::*;
use crate::cpu_features::available_levels;
use crate::quant::f16::{fp16_to_fp32, fp32_to_fp16};
use crate::quant::test_util::{bits, nmse, Lcg};
use crate::quant::{blocks_as_bytes, QuantBlock, QK};

const TYPES: [WType; 7] = [WType::F32, WType::F16, WType::Q4_0, WType::Q4_1, WType::Q5_0, WType::Q5_1, WType::Q8_0];

/// Weight bytes in a u32-backed buffer (so 4-byte aligned), rows padded by `pad` bytes.
struct TestWeights {
    buf: Vec<u32>,
    wtype: WType,
    k: usize,
    rows: usize,
    stride: usize,
    /// The exact f32 values the weights represent (portable dequantization).
    deq: Vec<f32>,
}

impl TestWeights {
    fn new(wtype: WType, k: usize, rows: usize, rng: &mut Lcg) -> Self {
        Self::with_odd_rows_scaled(wtype, k, rows, rng, 1.0)
    }

    /// As `new`, the odd rows' values times `scale` (tiny scales reach half precision's
    /// subnormals in the block scales).
    fn with_odd_rows_scaled(wtype: WType, k: usize, rows: usize, rng: &mut Lcg, scale: f32) -> Self {
        let rb = wtype.row_bytes(k);
        let stride = (rb + 4).div_ceil(4) * 4; // padded, keeps 4-byte alignment for F32
        let mut bytes = vec![0xAAu8; stride * rows];
        let mut deq = vec![0f32; k * rows];
        for i in 0..rows {
            let f = if i % 2 == 1 { scale } else { 1.0 };
            let src: Vec<f32> = (0..k).map(|_| f * (rng.next_gauss() + if i % 3 == 0 { 0.2 } else { 0.0 })).collect();
            let row = &mut bytes[i * stride..i * stride + rb];
            let out = &mut deq[i * k..(i + 1) * k];
            fn put<B: QuantBlock>(row: &mut [u8], b: &[B]) {
                row.copy_from_slice(blocks_as_bytes(b));
            }
            match wtype {
                WType::F32 => {
                    for (c, v) in src.iter().enumerate() {
                        row[c * 4..c * 4 + 4].copy_from_slice(&v.to_le_bytes());
                    }
                    out.copy_from_slice(&src);
                }
                WType::F16 => {
                    for (c, v) in src.iter().enumerate() {
                        let h = fp32_to_fp16(*v);
                        row[c * 2..c * 2 + 2].copy_from_slice(&h.to_le_bytes());
                        out[c] = fp16_to_fp32(h);
                    }
                }
                WType::Q4_0 => {
                    let mut b = vec![BlockQ4_0::default(); k / QK];
                    q4_0::quantize_row(&src, &mut b);
                    q4_0::dequantize_row_at(SimdLevel::Portable, &b, out);
                    put(row, &b);
                }
                WType::Q4_1 => {
                    let mut b = vec![BlockQ4_1::default(); k / QK];
                    q4_1::quantize_row(&src, &mut b);
                    q4_1::dequantize_row_at(SimdLevel::Portable, &b, out);
                    put(row, &b);
                }
                WType::Q5_0 => {
                    let mut b = vec![BlockQ5_0::default(); k / QK];
                    q5_0::quantize_row(&src, &mut b);
                    q5_0::dequantize_row_at(SimdLevel::Portable, &b, out);
                    put(row, &b);
                }
                WType::Q5_1 => {
                    let mut b = vec![BlockQ5_1::default(); k / QK];
                    q5_1::quantize_row(&src, &mut b);
                    q5_1::dequantize_row_at(SimdLevel::Portable, &b, out);
                    put(row, &b);
                }
                // random super-blocks (ggml's K quantizers are not ported; the kernels read any)
                WType::Q4K => {
                    let b = crate::quant::q4_k::random_blocks(rng, k / 256, f);
                    crate::quant::q4_k::dequantize_row_at(SimdLevel::Portable, &b, out);
                    put(row, &b);
                }
                WType::IQ4NL => {
                    let b = crate::quant::iq4_nl::random_blocks(rng, k / QK, f);
                    crate::quant::iq4_nl::dequantize_row_at(SimdLevel::Portable, &b, out);
                    put(row, &b);
                }
                WType::Q5K => {
                    let b = crate::quant::q5_k::random_blocks(rng, k / 256, f);
                    crate::quant::q5_k::dequantize_row_at(SimdLevel::Portable, &b, out);
                    put(row, &b);
                }
                WType::Q6K => {
                    let b = crate::quant::q6_k::random_blocks(rng, k / 256, f);
                    crate::quant::q6_k::dequantize_row_at(SimdLevel::Portable, &b, out);
                    put(row, &b);
                }
                WType::Q8_0 => {
                    let mut b = vec![BlockQ8_0::default(); k / QK];
                    q8_0::quantize_row_at(SimdLevel::Portable, &src, &mut b);
                    q8_0::dequantize_row_at(SimdLevel::Portable, &b, out);
                    put(row, &b);
                }
            }
        }
        let mut buf = vec![0u32; bytes.len().div_ceil(4)];
        // SAFETY: test-only byte view of an initialized u32 buffer of at least bytes.len() bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.as_mut_ptr() as *mut u8, bytes.len()) };
        TestWeights { buf, wtype, k, rows, stride, deq }
    }

    fn weights(&self) -> Weights<'_> {
        // SAFETY: test-only byte view of the initialized u32 buffer.
        let bytes = unsafe { std::slice::from_raw_parts(self.buf.as_ptr() as *const u8, self.buf.len() * 4) };
        Weights::new(bytes, self.wtype, self.k, self.stride, self.rows)
    }

    /// dst[j][i] = deq_i . a_j in f64.
    fn reference(&self, acts: &[f32], astride: usize, n: usize) -> Vec<f32> {
        let mut out = vec![0f32; n * self.rows];
        for j in 0..n {
            let a = &acts[j * astride..j * astride + self.k];
            for i in 0..self.rows {
                let w = &self.deq[i * self.k..(i + 1) * self.k];
                out[j * self.rows + i] = w.iter().zip(a).map(|(&x, &y)| x as f64 * y as f64).sum::<f64>() as f32;
            }
        }
        out
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Path {
    Vec(SimdLevel),
    Gemm(SimdLevel),
}

/// Runs one path into a padded dst (stride rows + 3, sentinel-filled), checks the padding is
/// untouched and returns the dense n x rows result.
fn run(path: Path, tw: &TestWeights, acts: &[f32], astride: usize, n: usize, threads: usize) -> Vec<f32> {
    run_blocks(path, tw, acts, astride, n, threads, 1)
}

/// [`run`] with the output cut into `act_parts` activation-row blocks (boundaries at any row,
/// so single-row blocks past row 0 occur) times `threads` weight-row blocks, one thread each.
fn run_blocks(path: Path, tw: &TestWeights, acts: &[f32], astride: usize, n: usize, threads: usize, act_parts: usize) -> Vec<f32> {
    let w = tw.weights();
    let a = Acts::new(acts, tw.k, n, astride);
    let dstride = tw.rows + 3;
    let mut dst = vec![f32::from_bits(0x7FC0_1234); n * dstride];
    let mut q = QuantizedActs::new();
    if let Path::Vec(level) = path {
        q.prepare_at(level, tw.wtype, &a);
    }
    let views: Vec<DstView<'_>> = DstView::new(&mut dst, n, tw.rows, dstride)
        .split_acts_even(act_parts, 1)
        .into_iter()
        .flat_map(|v| v.split_even(threads, gemm_tile_rows(tw.k)))
        .collect();
    std::thread::scope(|s| {
        for view in views {
            let (w, a, q) = (&w, &a, &q);
            s.spawn(move || {
                let mut scratch = Vec::new();
                match path {
                    Path::Vec(level) => mul_mat_vec_at(level, w, a, q, view),
                    Path::Gemm(level) => mul_mat_gemm_at(level, w, a, view, &mut scratch),
                }
            });
        }
    });
    let mut dense = Vec::with_capacity(n * tw.rows);
    for j in 0..n {
        dense.extend_from_slice(&dst[j * dstride..j * dstride + tw.rows]);
        for p in tw.rows..dstride {
            assert_eq!(dst[j * dstride + p].to_bits(), 0x7FC0_1234, "padding overwritten");
        }
    }
    dense
}

/// What the dot-product path computes exactly, in f64: the weight blocks against the
/// activations as quantized by the partner format (including Q8_1's half-rounded `s`), plus
/// the magnitude sum used to bound float rounding. Per output `(value, magnitude)`.
/// What the dot-product path computes on `level` (whose activation quantizer and F16
/// rounding follow ggml-cpu's on that level), in f64.
fn quantized_reference(level: SimdLevel, tw: &TestWeights, acts: &[f32], astride: usize, n: usize) -> Vec<(f64, f64)> {
    let w = tw.weights();
    let a = Acts::new(acts, tw.k, n, astride);
    let mut q = QuantizedActs::new();
    q.prepare_at(level, tw.wtype, &a);
    let f16_acts = tw.wtype == WType::F16 && clamp_level(level) != SimdLevel::Portable;
    // the activations as ggml's F16 dot sees them (rounded to half on that level)
    let rounded: Vec<Vec<f32>> = (0..n)
        .map(|j| {
            let mut r = vec![0f32; tw.k];
            crate::quant::f16::round_f16_slice_at(level, a.row(j), &mut r);
            r
        })
        .collect();
    let h = |x: u16| fp16_to_fp32(x) as f64;
    let mut out = Vec::with_capacity(n * tw.rows);
    for (j, rounded) in rounded.iter().enumerate() {
        for i in 0..tw.rows {
            let (mut v, mut m) = (0f64, 0f64);
            match tw.wtype {
                WType::F32 | WType::F16 => {
                    let wr = &tw.deq[i * tw.k..(i + 1) * tw.k];
                    let ar = if f16_acts { &rounded[..] } else { a.row(j) };
                    for (&x, &y) in wr.iter().zip(ar) {
                        v += x as f64 * y as f64;
                        m += (x as f64 * y as f64).abs();
                    }
                }
                WType::Q4_0 => {
                    let wr: &[BlockQ4_0] = blocks_from_bytes(w.row(i));
                    for (bx, by) in wr.iter().zip(q.q8_0_row(j)) {
                        let (mut si, mut sa) = (0i64, 0i64);
                        for c in 0..32 {
                            let qx = ((bx.qs[c % 16] >> (4 * (c / 16))) & 15) as i64 - 8;
                            si += qx * by.qs[c] as i64;
                            sa += (qx * by.qs[c] as i64).abs();
                        }
                        v += h(bx.d) * h(by.d) * si as f64;
                        m += (h(bx.d) * h(by.d)).abs() * sa as f64;
                    }
                }
                WType::Q4_1 => {
                    let wr: &[BlockQ4_1] = blocks_from_bytes(w.row(i));
                    for (bx, by) in wr.iter().zip(q.q8_1_row(j)) {
                        let (mut si, mut sa) = (0i64, 0i64);
                        for c in 0..32 {
                            let qx = ((bx.qs[c % 16] >> (4 * (c / 16))) & 15) as i64;
                            si += qx * by.qs[c] as i64;
                            sa += (qx * by.qs[c] as i64).abs();
                        }
                        v += h(bx.d) * h(by.d) * si as f64 + h(bx.m) * h(by.s);
                        m += (h(bx.d) * h(by.d)).abs() * sa as f64 + (h(bx.m) * h(by.s)).abs();
                    }
                }
                WType::Q5_0 => {
                    let wr: &[BlockQ5_0] = blocks_from_bytes(w.row(i));
                    for (bx, by) in wr.iter().zip(q.q8_0_row(j)) {
                        let (mut si, mut sa) = (0i64, 0i64);
                        for (c, &q5) in q5_0::quants5(&bx.qs, &bx.qh).iter().enumerate() {
                            let qx = q5 as i64 - 16;
                            si += qx * by.qs[c] as i64;
                            sa += (qx * by.qs[c] as i64).abs();
                        }
                        v += h(bx.d) * h(by.d) * si as f64;
                        m += (h(bx.d) * h(by.d)).abs() * sa as f64;
                    }
                }
                WType::Q5_1 => {
                    let wr: &[BlockQ5_1] = blocks_from_bytes(w.row(i));
                    for (bx, by) in wr.iter().zip(q.q8_1_row(j)) {
                        let (mut si, mut sa) = (0i64, 0i64);
                        for (c, &q5) in q5_0::quants5(&bx.qs, &bx.qh).iter().enumerate() {
                            si += q5 as i64 * by.qs[c] as i64;
                            sa += (q5 as i64 * by.qs[c] as i64).abs();
                        }
                        v += h(bx.d) * h(by.d) * si as f64 + h(bx.m) * h(by.s);
                        m += (h(bx.d) * h(by.d)).abs() * sa as f64 + (h(bx.m) * h(by.s)).abs();
                    }
                }
                WType::Q4K => {
                    let (sv, sm) = scale_min_ref::<crate::quant::BlockQ4K>(w.row(i), q.q8k_row(j));
                    v += sv;
                    m += sm;
                }
                WType::Q5K => {
                    let (sv, sm) = scale_min_ref::<crate::quant::BlockQ5K>(w.row(i), q.q8k_row(j));
                    v += sv;
                    m += sm;
                }
                WType::Q6K => {
                    use crate::quant::{q6_k, BlockQ6K};
                    let wr: &[BlockQ6K] = blocks_from_bytes(w.row(i));
                    for (bx, by) in wr.iter().zip(q.q8k_row(j)) {
                        let qv = q6_k::quants(bx);
                        for e in 0..256 {
                            let t = h(bx.d) * bx.scales[e / 16] as f64 * (qv[e] as f64 - 32.0) * by.scale() as f64 * by.qs[e] as f64;
                            v += t;
                            m += t.abs();
                        }
                    }
                }
                WType::IQ4NL => {
                    use crate::quant::{iq4_nl, BlockIQ4NL};
                    let wr: &[BlockIQ4NL] = blocks_from_bytes(w.row(i));
                    for (bx, by) in wr.iter().zip(q.q8_0_row(j)) {
                        let (mut si, mut sa) = (0i64, 0i64);
                        for (c, &x) in iq4_nl::values(bx).iter().enumerate() {
                            si += x as i64 * by.qs[c] as i64;
                            sa += (x as i64 * by.qs[c] as i64).abs();
                        }
                        v += h(bx.d) * h(by.d) * si as f64;
                        m += (h(bx.d) * h(by.d)).abs() * sa as f64;
                    }
                }
                WType::Q8_0 => {
                    let wr: &[BlockQ8_0] = blocks_from_bytes(w.row(i));
                    for (bx, by) in wr.iter().zip(q.q8_0_row(j)) {
                        let (mut si, mut sa) = (0i64, 0i64);
                        for c in 0..32 {
                            si += bx.qs[c] as i64 * by.qs[c] as i64;
                            sa += (bx.qs[c] as i64 * by.qs[c] as i64).abs();
                        }
                        v += h(bx.d) * h(by.d) * si as f64;
                        m += (h(bx.d) * h(by.d)).abs() * sa as f64;
                    }
                }
            }
            out.push((v, m));
        }
    }
    out
}

/// Whether `level` accumulates F16 products in half precision (NEON with FEAT_FP16, as
/// ggml-cpu built with `+fp16`).
fn half_accumulation(level: SimdLevel, wtype: WType) -> bool {
    wtype == WType::F16 && clamp_level(level) == SimdLevel::Neon && crate::cpu_features::has_fp16()
}

/// For each weight type and k: every path and level, every (rows, n) shape.
///
/// Per output, the result must equal what the path is defined to compute up to f32
/// rounding (dot path: weights x quantized activations; sgemm path: dequantized weights x f32
/// activations), bounded by 2e-5 of the magnitude sum. Then the NMSE against the naive f32
/// reference (dequantized weights x f32 activations) is taken over all outputs of the
/// (type, k) group: a single output can be arbitrarily close to zero, which makes a
/// per-output NMSE meaningless for rows = n = 1.
fn check_all(ks: &[usize], rows_list: &[usize], ns: &[usize]) {
    check_types(&TYPES, ks, rows_list, ns)
}

/// [`check_all`] for the weight types `types`.
fn check_types(types: &[WType], ks: &[usize], rows_list: &[usize], ns: &[usize]) {
    let mut rng = Lcg::new(99);
    for &wtype in types {
        let quantized = !matches!(wtype, WType::F32 | WType::F16);
        for &k in ks {
            let levels = available_levels();
            let paths: Vec<Path> = levels.iter().flat_map(|&l| [Path::Vec(l), Path::Gemm(l)]).collect();
            let mut all_got: Vec<Vec<f32>> = vec![Vec::new(); paths.len()];
            let mut all_want = Vec::new();
            for &rows in rows_list {
                let tw = TestWeights::new(wtype, k, rows, &mut rng);
                for &n in ns {
                    let astride = k + 5;
                    let acts: Vec<f32> = (0..n * astride).map(|_| rng.next_gauss()).collect();
                    let want = tw.reference(&acts, astride, n);
                    let want_q: Vec<Vec<(f64, f64)>> = levels.iter().map(|&l| quantized_reference(l, &tw, &acts, astride, n)).collect();
                    let mag_f: Vec<f64> = (0..n)
                        .flat_map(|j| (0..rows).map(move |i| (i, j)))
                        .map(|(i, j)| {
                            let wr = &tw.deq[i * k..(i + 1) * k];
                            let ar = &acts[j * astride..j * astride + k];
                            wr.iter().zip(ar).map(|(&x, &y)| (x as f64 * y as f64).abs()).sum()
                        })
                        .collect();
                    for (p, &path) in paths.iter().enumerate() {
                        let got = run(path, &tw, &acts, astride, n, 1);
                        for (o, &g) in got.iter().enumerate() {
                            let (exact, mag) = match path {
                                Path::Vec(l) => want_q[levels.iter().position(|&x| x == l).unwrap()][o],
                                Path::Gemm(_) => (want[o] as f64, mag_f[o]),
                            };
                            // half-precision accumulators: every one of a lane's k/32 FMAs
                            // rounds to 11 bits of a partial sum bounded by the magnitude sum
                            let rel = match path {
                                Path::Vec(l) if half_accumulation(l, wtype) => (k / 32 + 4) as f64 * 2f64.powi(-11),
                                _ => 2e-5,
                            };
                            assert!(
                                (g as f64 - exact).abs() <= rel * mag + 1e-30,
                                "{wtype:?} k={k} rows={rows} n={n} {path:?} out {o}: {g} vs {exact}"
                            );
                        }
                        all_got[p].extend_from_slice(&got);
                    }
                    all_want.extend_from_slice(&want);
                }
            }
            for (p, &path) in paths.iter().enumerate() {
                let e = nmse(&all_got[p], &all_want);
                let limit = match path {
                    Path::Vec(_) if quantized => 5e-4,
                    Path::Vec(l) if half_accumulation(l, wtype) => 5e-4,
                    _ => 1e-7,
                };
                assert!(e < limit, "{wtype:?} k={k} {path:?}: nmse {e:e} >= {limit:e}");
            }
        }
    }
}

/// A Q4_K / Q5_K row's product with a Q8_K row in f64, and the sum of its terms' magnitudes.
fn scale_min_ref<B: crate::quant::q4_k::ScaleMinBlock + crate::quant::QuantBlock>(row: &[u8], a: &[crate::quant::BlockQ8K]) -> (f64, f64) {
    use crate::quant::q4_k;
    let h = |x: u16| crate::quant::f16::fp16_to_fp32(x) as f64;
    let (mut v, mut m) = (0f64, 0f64);
    for (bx, by) in blocks_from_bytes::<B>(row).iter().zip(a) {
        let (d, dmin, da) = (h(bx.d()), h(bx.dmin()), by.scale() as f64);
        for (e, (&q, &a)) in bx.quants().iter().zip(&by.qs).enumerate() {
            let (sc, mn) = q4_k::scale_min(e / 32, bx.scales());
            let t = (d * sc as f64 * q as f64 - dmin * mn as f64) * da * a as f64;
            v += t;
            m += t.abs();
        }
    }
    (v, m)
}

#[test]
fn mul_mat_matches_reference_small() {
    check_all(&[64, 576], &[1, 7, 33], &[1, 3, 17]);
}

/// The K-quants (rows of whole 256-value super-blocks) on every level and path.
#[test]
fn k_quants_match_reference() {
    check_types(&[WType::Q4K, WType::Q5K, WType::Q6K], &[256, 768], &[1, 7, 33], &[1, 3, 17]);
}

/// IQ4_NL (odd and even block counts: ggml's SIMD kernels pair blocks and leave a scalar tail)
/// on every level and path.
#[test]
fn iq4_nl_matches_reference() {
    check_types(&[WType::IQ4NL], &[32, 96, 576], &[1, 7, 33], &[1, 3, 17]);
}

#[test]
fn mul_mat_matches_reference_large_k() {
    check_all(&[1536], &[1, 7, 33], &[1, 3, 17]);
    check_all(&[49152], &[1, 7], &[1, 3, 17]);
}

/// Splitting the output across threads gives bit-identical results on the dot path (every
/// element is computed by the same code) and near-identical ones on the sgemm path.
#[test]
fn threaded_split_matches_single() {
    let mut rng = Lcg::new(5);
    for &wtype in &TYPES {
        let (k, rows, n) = (576, 67, 17);
        let tw = TestWeights::new(wtype, k, rows, &mut rng);
        let acts: Vec<f32> = (0..n * k).map(|_| rng.next_gauss()).collect();
        for level in available_levels() {
            let one = run(Path::Vec(level), &tw, &acts, k, n, 1);
            for threads in [2, 3, 8] {
                assert_eq!(run(Path::Vec(level), &tw, &acts, k, n, threads), one, "{wtype:?}");
            }
            let g1 = run(Path::Gemm(level), &tw, &acts, k, n, 1);
            let g3 = run(Path::Gemm(level), &tw, &acts, k, n, 3);
            assert!(nmse(&g3, &g1) < 1e-12, "{wtype:?}");
        }
    }
}

/// Blocks of activation rows (the chunks of batched products) give the whole product's bits on
/// the dot path, including blocks of one row past row 0 (not a matrix-vector product) and
/// rows long enough for the walk's smaller cache block; sgemm stays near-identical.
#[test]
fn activation_blocks_match_whole() {
    let mut rng = Lcg::new(9);
    for &wtype in &TYPES {
        for (k, rows, n) in [(576, 67, 17), (1536, 9, 13)] {
            let tw = TestWeights::new(wtype, k, rows, &mut rng);
            let acts: Vec<f32> = (0..n * k).map(|_| rng.next_gauss()).collect();
            for level in available_levels() {
                let one = run(Path::Vec(level), &tw, &acts, k, n, 1);
                // 17 rows in 9 parts: blocks of 1 and 2 rows; 13 in 5: 2 and 3
                for (act_parts, threads) in [(2, 1), (9, 2), (5, 3), (n, 1)] {
                    let got = run_blocks(Path::Vec(level), &tw, &acts, k, n, threads, act_parts);
                    assert_eq!(got, one, "{wtype:?} {level:?} k={k} act_parts={act_parts}");
                }
                let g1 = run(Path::Gemm(level), &tw, &acts, k, n, 1);
                let g = run_blocks(Path::Gemm(level), &tw, &acts, k, n, 2, 3);
                assert!(nmse(&g, &g1) < 1e-12, "{wtype:?}");
            }
        }
    }
}

/// The x86 kernels for short rows (lanes across weight rows, `heads`: eight lanes on AVX2,
/// sixteen on AVX-512; rows of 64 to 256, and 96, which the tiles take) give the bits of the
/// row-lane tile (ggml's order) for every output: F16 and F32 weights, row counts around both lane
/// groups, activation counts on both sides of the few-row tiles and of the four-row steps, signed
/// zeros and sums that cancel.
#[cfg(target_arch = "x86_64")]
#[test]
fn head_rows_match_row_lane_tiles() {
    if !available_levels().contains(&SimdLevel::Avx2) {
        return;
    }
    let levels: Vec<SimdLevel> = [SimdLevel::Avx2, SimdLevel::Avx512].into_iter().filter(|l| available_levels().contains(l)).collect();
    let mut rng = Lcg::new(64);
    for (k, wtype) in [64usize, 128, 192, 256, 96].into_iter().flat_map(|k| [(k, WType::F16), (k, WType::F32)]) {
        for &rows in &[1usize, 7, 8, 9, 15, 16, 17, 33] {
            let tw = TestWeights::new(wtype, k, rows, &mut rng);
            let w = tw.weights();
            for &n in &[2usize, 3, 5, 6, 9, 17] {
                // every 5th activation a zero of either sign, every 7th a large value that
                // cancels against its neighbour, so the folding order shows in the low bits
                let acts: Vec<f32> = (0..n * k)
                    .map(|i| match (i % 5, i % 7) {
                        (0, _) => if i % 2 == 0 { 0.0 } else { -0.0 },
                        (_, 0) => 3.0e4,
                        (_, 1) => -3.0e4,
                        _ => rng.next_gauss(),
                    })
                    .collect();
                let a = Acts::new(&acts, k, n, k);
                let mut q = QuantizedActs::new();
                q.prepare_at(SimdLevel::Avx2, wtype, &a);
                for &level in &levels {
                    let mut lq = QuantizedActs::new();
                    lq.prepare_at(level, wtype, &a);
                    let mut got = vec![f32::NAN; n * rows];
                    mul_mat_vec_at(level, &w, &a, &lq, DstView::new(&mut got, n, rows, rows));
                    for j in 0..n {
                        for i in 0..rows {
                            // SAFETY: AVX2/FMA/F16C checked above; the rows are k long.
                            let want = unsafe {
                                if wtype == WType::F16 {
                                    avx2::float::float_tile::<u16, 1, 1>([w.row_f16(i)], [q.hb_row(j)])[0][0]
                                } else {
                                    avx2::float::float_tile::<f32, 1, 1>([w.row_f32(i)], [a.row(j)])[0][0]
                                }
                            };
                            assert_eq!(got[j * rows + i].to_bits(), want.to_bits(), "{level:?} {wtype:?} k={k} rows={rows} n={n} ({j}, {i})");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn split_acts_even_partitions() {
    let mut buf = vec![0f32; 20 * 10];
    let parts = DstView::new(&mut buf, 20, 10, 10).split_acts_even(3, 8);
    let ranges: Vec<_> = parts.iter().map(|p| p.act_rows()).collect();
    assert_eq!(ranges, vec![0..8, 8..16, 16..20]);
    assert!(parts.iter().all(|p| p.weight_rows() == (0..10)));
    let parts: Vec<_> = parts.into_iter().flat_map(|p| p.split_acts_even(2, 1)).collect();
    assert_eq!(parts.iter().map(|p| p.act_rows().len()).sum::<usize>(), 20);
    assert!(!parts[0].is_single_act());
    // a one-row block of a batch is not a matrix-vector product (its scales are laid out for n)
    let mut buf = vec![0f32; 3];
    let parts = DstView::new(&mut buf, 3, 1, 1).split_acts_even(3, 1);
    assert_eq!(parts.iter().map(|p| (p.act_rows(), p.is_single_act())).collect::<Vec<_>>(), vec![(0..1, false), (1..2, false), (2..3, false)]);
    let mut buf = vec![0f32; 4];
    assert!(DstView::new(&mut buf, 1, 4, 4).is_single_act());
}

/// The AVX-512 level gives the AVX2 level's bits (ggml's AVX2 order) on every shape edge:
/// odd row counts and chunk remainders, column tails (of the panel tiles too: n = 9, 10, 11), n = 1
/// (matrix-vector), extreme quants; F16 and F32 rows with and without leftovers, on both sides of
/// the length where the AVX-512 F16 tiles read half-bit activations (`acts::halves`).
#[test]
fn avx512_level_matches_avx2_bitwise() {
    if !available_levels().contains(&SimdLevel::Avx512) {
        return;
    }
    let mut rng = Lcg::new(77);
    for &wtype in &[WType::Q4_0, WType::Q4_1, WType::Q5_0, WType::Q5_1, WType::Q8_0, WType::F16, WType::F32] {
        let ks: &[usize] = if matches!(wtype, WType::F16 | WType::F32) { &[64, 100, 1024, 1500] } else { &[32, 96, 576] };
        for &k in ks {
            for &rows in &[1usize, 2, 5, 16, 17, 35] {
                let tw = TestWeights::new(wtype, k, rows, &mut rng);
                let w = tw.weights();
                for &n in &[1usize, 2, 3, 4, 5, 7, 9, 10, 11, 17] {
                    // a few saturated values per row so quants reach -127 / 127
                    let acts: Vec<f32> = (0..n * k).map(|i| if i % 37 == 0 { 50.0 } else if i % 41 == 0 { -50.0 } else { rng.next_gauss() }).collect();
                    let a = Acts::new(&acts, k, n, k);
                    let mut want = vec![0f32; n * rows];
                    let mut got = vec![f32::NAN; n * rows];
                    for (buf, level) in [(&mut want, SimdLevel::Avx2), (&mut got, SimdLevel::Avx512)] {
                        let mut q = QuantizedActs::new();
                        q.prepare_at(level, wtype, &a);
                        // both halves of a split, so views that start mid-matrix are covered
                        let (l, r) = DstView::new(buf, n, rows, rows).split_at(rows / 3);
                        for v in [l, r] {
                            mul_mat_vec_at(level, &w, &a, &q, v);
                        }
                    }
                    assert_eq!(bits(&got), bits(&want), "{wtype:?} k={k} rows={rows} n={n}");
                }
            }
        }
    }
}

/// The AVX2 matrix-vector product (four rows per pass, their scales widened together) gives every
/// row the bits of ggml's one-row `vec_dot` (`quant::quant_dot`, the 1 x 1 tile): row counts
/// around the passes of four, views that start mid-matrix, rows up to the FFN's 1536, extreme
/// quants, and block scales down to half precision's subnormals.
#[test]
fn avx2_matvec_matches_vec_dot_bitwise() {
    if !available_levels().contains(&SimdLevel::Avx2) {
        return;
    }
    fn check<F: TileFormat>(tw: &TestWeights, q: &QuantizedActs, a: &Acts<'_>, acts: &[F::A], what: &str) {
        let w = tw.weights();
        let mut got = vec![f32::NAN; tw.rows];
        let cut = tw.rows / 3;
        let (l, r) = DstView::new(&mut got, 1, tw.rows, tw.rows).split_at(cut);
        for v in [l, r] {
            mul_mat_vec_at(SimdLevel::Avx2, &w, a, q, v);
        }
        for (i, g) in got.iter().enumerate() {
            let want = vec_dot_at::<F>(SimdLevel::Avx2, blocks_from_bytes::<F::W>(w.row(i)), acts);
            assert_eq!(g.to_bits(), want.to_bits(), "{what}: row {i} of {} (view cut at {cut})", tw.rows);
        }
    }
    let mut rng = Lcg::new(1234);
    for wtype in [WType::Q4_0, WType::Q4_1, WType::Q5_0, WType::Q5_1, WType::Q8_0] {
        for k in [32usize, 96, 576, 1536] {
            for rows in [1usize, 2, 3, 4, 5, 7, 8, 9, 17] {
                for scale in [1.0f32, 1e-6] {
                    let tw = TestWeights::with_odd_rows_scaled(wtype, k, rows, &mut rng, scale);
                    // a few saturated values so quants reach -127 / 127
                    let acts: Vec<f32> = (0..k).map(|i| if i % 37 == 0 { 50.0 } else if i % 41 == 0 { -50.0 } else { rng.next_gauss() }).collect();
                    let a = Acts::new(&acts, k, 1, k);
                    let mut q = QuantizedActs::new();
                    q.prepare_at(SimdLevel::Avx2, wtype, &a);
                    let what = format!("{wtype:?} k={k} rows={rows} odd rows x{scale}");
                    match wtype {
                        WType::Q4_0 => check::<quant::Q4_0>(&tw, &q, &a, q.q8_0_row(0), &what),
                        WType::Q4_1 => check::<quant::Q4_1>(&tw, &q, &a, q.q8_1_row(0), &what),
                        WType::Q5_0 => check::<quant::Q5_0>(&tw, &q, &a, q.q8_0_row(0), &what),
                        WType::Q5_1 => check::<quant::Q5_1>(&tw, &q, &a, q.q8_1_row(0), &what),
                        _ => check::<quant::Q8_0>(&tw, &q, &a, q.q8_0_row(0), &what),
                    }
                }
            }
        }
    }
}

/// The AVX-512 matrix-vector product scales Q4_1's high-nibble lanes by 1/16 on the activation
/// side (see `avx512::quant::matvec`); that is exact only while the scale products stay clear of
/// f32's subnormals. Weight scales down to half precision's smallest subnormals, against
/// activations of ordinary and tiny size, give AVX2's (ggml's) bits.
#[test]
fn matvec_tiny_scales_match_avx2_bitwise() {
    if !available_levels().contains(&SimdLevel::Avx512) {
        return;
    }
    let mut rng = Lcg::new(5);
    let k = 96;
    for &wtype in &[WType::Q4_0, WType::Q4_1, WType::Q5_0, WType::Q5_1, WType::Q8_0] {
        for &ws in &[1e-3f32, 1e-5, 1e-6, 1e-7, 1e-9] {
            let tw = TestWeights::with_odd_rows_scaled(wtype, k, 9, &mut rng, ws);
            let w = tw.weights();
            for &asc in &[1.0f32, 1e-6, 1e-9] {
                let acts: Vec<f32> = (0..k).map(|_| asc * rng.next_gauss()).collect();
                let a = Acts::new(&acts, k, 1, k);
                let mut want = vec![0f32; tw.rows];
                let mut got = vec![f32::NAN; tw.rows];
                for (buf, level) in [(&mut want, SimdLevel::Avx2), (&mut got, SimdLevel::Avx512)] {
                    let mut q = QuantizedActs::new();
                    q.prepare_at(level, wtype, &a);
                    mul_mat_vec_at(level, &w, &a, &q, DstView::new(buf, 1, tw.rows, tw.rows));
                }
                assert_eq!(bits(&got), bits(&want), "{wtype:?} weights x{ws} acts x{asc}");
                // down to here the scaled rows' block scales are (subnormal) halves, not zero
                if asc == 1.0 && ws >= if wtype == WType::Q8_0 { 1e-5 } else { 1e-6 } {
                    assert!(want.iter().skip(1).step_by(2).any(|&x| x != 0.0), "{wtype:?} x{ws}: the scaled rows vanished");
                }
            }
        }
    }
}

/// Decode-shaped matrix-vector throughput with hot (one matrix) and cold (many matrices, more
/// than the caches) weights, per SIMD level, on one thread. Not a test:
/// `cargo test --release -p ggml-rs-kernels --lib bench_matvec -- --ignored --nocapture` (`BENCH_MATVEC_ROWS=576`:
/// another row count than the FFN's 1536)
#[test]
#[ignore = "timing printout"]
fn bench_matvec() {
    use std::time::Instant;
    let mut rng = Lcg::new(1);
    let rows = std::env::var("BENCH_MATVEC_ROWS").ok().and_then(|v| v.parse().ok()).unwrap_or(1536);
    let k = 576;
    for wtype in [WType::Q4_1, WType::Q4_0, WType::Q8_0] {
        let tw = TestWeights::new(wtype, k, rows, &mut rng);
        let bytes: Vec<u8> = {
            let w = tw.weights();
            w.data.to_vec()
        };
        let copies = 220_000_000 / bytes.len(); // ~220 MB
        let big: Vec<u8> = (0..copies).flat_map(|_| bytes.iter().copied()).collect();
        let acts: Vec<f32> = (0..k).map(|_| rng.next_gauss()).collect();
        let a = Acts::new(&acts, k, 1, k);
        let mut out = vec![0f32; rows];
        for level in available_levels() {
            let mut q = QuantizedActs::new();
            q.prepare_at(level, wtype, &a);
            for cold in [false, true] {
                let t = Instant::now();
                let iters = 2000;
                for it in 0..iters {
                    let c = if cold { it % copies } else { 0 };
                    let w = Weights::new(&big[c * bytes.len()..(c + 1) * bytes.len()], wtype, k, tw.stride, rows);
                    mul_mat_vec_at(level, &w, &a, &q, DstView::new(&mut out, 1, rows, rows));
                }
                let dt = t.elapsed().as_secs_f64() / iters as f64;
                println!("{wtype:?} {level:?} cold={cold}: {:.1} us  {:.1} GB/s", dt * 1e6, bytes.len() as f64 / dt / 1e9);
            }
        }
    }
}

#[test]
fn split_even_partitions() {
    let mut buf = vec![0f32; 4 * 100];
    let v = DstView::new(&mut buf, 4, 100, 100);
    let parts = v.split_even(3, 8);
    let ranges: Vec<_> = parts.iter().map(|p| p.weight_rows()).collect();
    assert_eq!(ranges, vec![0..32, 32..64, 64..100]);
    let mut buf = vec![0f32; 10];
    let parts = DstView::for_rows(&mut buf, 1, 20..30, 10).split_even(4, 1);
    let ranges: Vec<_> = parts.iter().map(|p| p.weight_rows()).collect();
    assert_eq!(ranges, vec![20..22, 22..25, 25..27, 27..30]);
    let mut buf = vec![0f32; 5];
    let parts = DstView::new(&mut buf, 1, 5, 5).split_even(8, 4);
    assert_eq!(parts.iter().map(|p| p.weight_rows().len()).sum::<usize>(), 5);
}

/// A worker can own just its slice of the output via `for_rows`.
#[test]
fn for_rows_view() {
    let mut rng = Lcg::new(17);
    let tw = TestWeights::new(WType::Q8_0, 64, 10, &mut rng);
    let acts: Vec<f32> = (0..2 * 64).map(|_| rng.next_gauss()).collect();
    let a = Acts::new(&acts, 64, 2, 64);
    let mut q = QuantizedActs::new();
    q.prepare(WType::Q8_0, &a);
    let mut full = vec![0f32; 20];
    mul_mat(&tw.weights(), &a, &q, DstView::new(&mut full, 2, 10, 10), &mut Vec::new());
    let mut part = vec![0f32; 2 * 4];
    mul_mat(&tw.weights(), &a, &q, DstView::for_rows(&mut part, 2, 3..7, 4), &mut Vec::new());
    assert_eq!(&part[0..4], &full[3..7]);
    assert_eq!(&part[4..8], &full[13..17]);
}

#[test]
#[should_panic(expected = "not prepared")]
fn unprepared_acts_panic() {
    let mut rng = Lcg::new(1);
    let tw = TestWeights::new(WType::Q4_1, 64, 2, &mut rng);
    let acts = vec![1.0f32; 64];
    let a = Acts::new(&acts, 64, 1, 64);
    let mut q = QuantizedActs::new();
    q.prepare(WType::Q4_0, &a); // wrong partner format (Q8_0 instead of Q8_1)
    let mut out = vec![0f32; 2];
    mul_mat_vec(&tw.weights(), &a, &q, DstView::new(&mut out, 1, 2, 2));
}

#[test]
fn dot_f32_levels() {
    let mut rng = Lcg::new(3);
    for n in [0usize, 1, 7, 8, 33, 1000] {
        let a: Vec<f32> = (0..n).map(|_| rng.next_f32()).collect();
        let b: Vec<f32> = (0..n).map(|_| rng.next_f32()).collect();
        let exact: f64 = a.iter().zip(&b).map(|(&x, &y)| x as f64 * y as f64).sum();
        for level in available_levels() {
            let d = dot_f32_at(level, &a, &b) as f64;
            assert!((d - exact).abs() <= n as f64 * 1.2e-7 + 1e-7, "{level:?} n={n}");
        }
    }
}

/// Rough single-thread throughput; not a test. `cargo test --release -p ggml-rs-kernels --lib bench_ -- --ignored --nocapture`
#[test]
#[ignore = "timing printout"]
fn bench_mul_mat() {
    use std::time::Instant;
    let mut rng = Lcg::new(1);
    let (k, rows) = (576, 1536);
    for &wtype in &TYPES {
        let tw = TestWeights::new(wtype, k, rows, &mut rng);
        let w = tw.weights();
        for &n in &[1usize, 4, 8, 12, 16, 64] {
            let acts: Vec<f32> = (0..n * k).map(|_| rng.next_gauss()).collect();
            let a = Acts::new(&acts, k, n, k);
            let mut q = QuantizedActs::new();
            let mut out = vec![0f32; n * rows];
            let mut scratch = Vec::new();
            for gemm in [false, true] {
                // Best of several short runs: the build machine is shared.
                let iters = (100 / n).max(3);
                let mut dt = f64::INFINITY;
                for _ in 0..7 {
                    let t = Instant::now();
                    for _ in 0..iters {
                        let dst = DstView::new(&mut out, n, rows, rows);
                        if gemm {
                            mul_mat_gemm(&w, &a, dst, &mut scratch);
                        } else {
                            q.prepare(wtype, &a);
                            mul_mat_vec(&w, &a, &q, dst);
                        }
                    }
                    dt = dt.min(t.elapsed().as_secs_f64() / iters as f64);
                }
                let gflops = 2.0 * (k * rows * n) as f64 / dt / 1e9;
                println!(
                    "{wtype:?} {k}x{rows} n={n:3} {}: {:8.1} us  {gflops:6.2} GFLOP/s",
                    if gemm { "gemm" } else { "vec " },
                    dt * 1e6
                );
            }
        }
    }
}

/// Single-thread time of the tile kernels on the hosts' hot shapes (whisper's attention
/// products, SmolLM2's prompt products); not a test. Best of 5 runs:
/// `cargo test --release -p ggml-rs-kernels --lib bench_tiles -- --ignored --nocapture` (`BENCH_TILES_ONLY=name`).
/// The operands are hot in cache here: three quant-tile variants that won 15-25 % in this bench
/// lost 5-28 % inside the llama host, where weights stream from memory. Confirm a kernel change
/// in the host (`GGML_RS_SIMD_PROFILE=1`, interleaved runs against the previous build).
#[test]
#[ignore = "timing printout"]
fn bench_tiles() {
    use std::time::Instant;
    let mut rng = Lcg::new(1);
    let only = std::env::var("BENCH_TILES_ONLY").unwrap_or_default();
    let shapes: [(&str, WType, usize, usize, usize); 17] = [
        ("decode KQ", WType::F16, 64, 288, 1),
        ("decode KQ big", WType::F16, 64, 2880, 1),
        ("decode KQV", WType::F16, 300, 64, 1),
        ("decode q4_1", WType::Q4_1, 576, 1536, 1),
        ("decode q8_0", WType::Q8_0, 576, 1536, 1),
        ("whisper KQ", WType::F16, 64, 1500, 750),
        ("whisper KQV", WType::F16, 1500, 64, 750),
        ("whisper ffn up", WType::F16, 512, 256, 1500),
        ("whisper ffn down", WType::F16, 2048, 64, 1500),
        ("llama KQ", WType::F16, 64, 256, 256),
        ("llama KQV", WType::F16, 256, 64, 256),
        ("llama ffn up", WType::Q4_1, 576, 768, 256),
        ("llama ffn down", WType::Q4_1, 1536, 288, 256),
        ("llama q8_0", WType::Q8_0, 576, 768, 256),
        ("llama q4_0", WType::Q4_0, 576, 768, 256),
        // one host chunk of SmolLM2's prompt products (16 weight rows, all 256 activation rows)
        ("llama chunk up", WType::Q4_1, 576, 16, 256),
        ("llama chunk down", WType::Q4_1, 1536, 16, 256),
    ];
    for (name, wtype, k, rows, n) in shapes {
        if !name.contains(only.as_str()) {
            continue;
        }
        let tw = TestWeights::new(wtype, k, rows, &mut rng);
        let w = tw.weights();
        let acts: Vec<f32> = (0..n * k).map(|_| rng.next_gauss()).collect();
        let a = Acts::new(&acts, k, n, k);
        let mut out = vec![0f32; n * rows];
        for level in available_levels() {
            if level == SimdLevel::Portable && std::env::var("BENCH_TILES_PORTABLE").is_err() {
                continue;
            }
            let mut q = QuantizedActs::new();
            q.prepare_at(level, wtype, &a);
            // best of 5 timings, each of enough calls to last ~10 ms
            let reps = (5_000_000 / (k * rows * n / 32)).max(1);
            let mut dt = f64::INFINITY;
            for _ in 0..5 {
                let t = Instant::now();
                for _ in 0..reps {
                    mul_mat_vec_at(level, &w, &a, &q, DstView::new(&mut out, n, rows, rows));
                }
                dt = dt.min(t.elapsed().as_secs_f64() / reps as f64);
            }
            let gflops = 2.0 * (k * rows * n) as f64 / dt / 1e9;
            let ns = dt * 1e9 / (rows * n) as f64;
            let per_block = if wtype == WType::F16 || wtype == WType::F32 { String::new() } else { format!(" {:5.3} ns/output-block", ns * 32.0 / k as f64) };
            println!("{name:15} {wtype:?} k={k:5} rows={rows:5} n={n:5} {level:?}: {:9.1} us {gflops:6.1} GFLOP/s {ns:6.2} ns/output{per_block}", dt * 1e6);
        }
    }
}
