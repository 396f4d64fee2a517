use super::*;
use crate::op::Op;
use crate::pool::Pool;
use crate::quant::f16::{fp16_to_fp32, fp32_to_fp16};
use crate::quant::q4_k::{quants, scale_min, BlockQ4K};
use crate::quant::{q8_k, HostQ8K};
use crate::view::Raw;

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

/// Random Q4_K blocks: every quant and 6-bit scale byte pattern, small half scales.
fn random_q4k(rng: &mut Rng, n: usize) -> Vec<BlockQ4K> {
    (0..n)
        .map(|_| BlockQ4K {
            d: fp32_to_fp16(rng.f().abs() * 0.01 + 1e-4),
            dmin: fp32_to_fp16(rng.f().abs() * 0.01),
            scales: std::array::from_fn(|_| rng.next() as u8),
            qs: std::array::from_fn(|_| rng.next() as u8),
        })
        .collect()
}

/// ggml-cpu's `repack_q4_K_to_q4_K_8_bl` with `make_block_q4_Kx8` (interleave 8): `w` is `m` rows
/// of `nb` blocks.
fn repack_x8(w: &[BlockQ4K], m: usize, nb: usize) -> Vec<u8> {
    repack_q4k(w, m, nb, 8)
}

/// [`repack_x8`] with the quant bytes interleaved `il` (4 or 8) at a time.
fn repack_q4k(w: &[BlockQ4K], m: usize, nb: usize, il: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(m * nb * 144);
    for g in 0..m / 8 {
        for x in 0..nb {
            let inb: [&BlockQ4K; 8] = std::array::from_fn(|i| &w[(8 * g + i) * nb + x]);
            let mut o = [0u8; Q4KX8_BYTES];
            for i in 0..8 {
                o[2 * i..2 * i + 2].copy_from_slice(&inb[i].d.to_le_bytes());
                o[16 + 2 * i..18 + 2 * i].copy_from_slice(&inb[i].dmin.to_le_bytes());
            }
            for i in 0..1024 / il {
                let (src, off) = (i % 8, (i / 8) * il);
                o[128 + il * i..128 + il * (i + 1)].copy_from_slice(&inb[src].qs[off..off + il]);
            }
            let sc = &mut o[32..128];
            for half in 0..2 {
                for i in 0..4 {
                    let (s, m): ([u8; 8], [u8; 8]) = if half == 0 {
                        (std::array::from_fn(|j| inb[j].scales[i] & 63), std::array::from_fn(|j| inb[j].scales[i + 4] & 63))
                    } else {
                        (
                            std::array::from_fn(|j| ((inb[j].scales[i] & 192) >> 2) | (inb[j].scales[i + 8] & 15)),
                            std::array::from_fn(|j| ((inb[j].scales[i + 4] & 192) >> 2) | ((inb[j].scales[i + 8] & 240) >> 4)),
                        )
                    };
                    let base = 48 * half + 12 * i;
                    for c in 0..4 {
                        sc[base + c] = (s[c] & 63) + ((s[c + 4] & 48) << 2);
                        sc[base + 4 + c] = (m[c] & 63) + ((m[c + 4] & 48) << 2);
                        sc[base + 8 + c] = (s[c + 4] & 15) + ((m[c + 4] & 15) << 4);
                    }
                }
            }
            out.extend_from_slice(&o);
        }
    }
    out
}

/// ggml's repacked arithmetic written from the plain blocks (their own scale decoding), for one
/// weight row and one activation row.
fn reference(w: &[BlockQ4K], a: &[ActBlock], gemm: bool) -> f32 {
    let (mut acc, mut acc_min) = (0f32, 0f32);
    for (x, y) in w.iter().zip(a) {
        let q = quants(x);
        let (ds, dms) = (fp16_to_fp32(x.d) * y.d, fp16_to_fp32(x.dmin) * y.d);
        let (mut ib, mut mb) = (0i32, 0i32);
        for sb in 0..4 {
            let (mut i, mut m) = (0i32, 0i32);
            for j in 2 * sb..2 * sb + 2 {
                let (sc, mn) = scale_min(j, &x.scales);
                let dot: i32 = (0..32).map(|l| q[32 * j + l] as i32 * y.qs[32 * j + l] as i32).sum();
                let sum: i32 = (0..32).map(|l| y.qs[32 * j + l] as i32).sum();
                assert_eq!(sum, y.sums[j] as i32);
                i += sc as i32 * dot;
                m += mn as i32 * sum;
            }
            if gemm {
                acc = (i as f32).mul_add(ds, acc);
                acc_min = (m as f32).mul_add(dms, acc_min);
            } else {
                ib += i;
                mb += m;
            }
        }
        if !gemm {
            acc = (ib as f32).mul_add(ds, acc);
            acc_min = (mb as f32).mul_add(dms, acc_min);
        }
    }
    acc - acc_min
}

fn have_avx2() -> bool {
    matches!(simd_level(), SimdLevel::Avx2 | SimdLevel::Avx512)
}

/// The kernel reads the repacked bytes as ggml's arithmetic on the plain rows gives, bit for bit,
/// on both paths (gemm's and gemv's float steps), for tiles of 1 to 16 rows, with both integer
/// cores.
#[test]
#[cfg(target_arch = "x86_64")]
fn kernel_matches_reference_bitwise() {
    if !have_avx2() {
        return;
    }
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for nb in [1usize, 3, 8] {
        let w = random_q4k(&mut rng, 8 * nb);
        let packed = repack_x8(&w, 8, nb);
        for n in [1usize, 5, 16] {
            let acts: Vec<Vec<ActBlock>> = (0..n)
                .map(|_| {
                    let x: Vec<f32> = (0..nb * QK_K).map(|_| rng.f() * 3.0).collect();
                    let mut a = vec![ActBlock::ZERO; nb];
                    quantize_row_4x8(&x, &mut a);
                    a
                })
                .collect();
            for gemm in [false, true] {
                let rows: Vec<(&[ActBlock], bool)> = acts.iter().map(|a| (&a[..], gemm)).collect();
                // both integer cores: pmaddubsw's and (AVX-512 level) vpdpbusd's
                for vnni in [false, true] {
                    if vnni && crate::cpu_features::hardware_level() != SimdLevel::Avx512 {
                        continue;
                    }
                    let mut out = [[0f32; 8]; TILE];
                    // SAFETY: AVX2 checked above, VNNI with the AVX-512 level; `packed` holds nb groups.
                    unsafe { avx2::group_at(vnni, &packed, &rows, &mut out) };
                    for r in 0..n {
                        for c in 0..8 {
                            let want = reference(&w[c * nb..(c + 1) * nb], &acts[r], gemm);
                            assert_eq!(out[r][c].to_bits(), want.to_bits(), "nb {nb} n {n} gemm {gemm} vnni {vnni} row {r} col {c}");
                        }
                    }
                }
            }
        }
    }
}

/// The 4x8 rule gives ggml's reference Q8_K quants and scales when no value ties the maximum
/// magnitude with the opposite sign (then the reference takes the first, the 4x8 rule the
/// positive one), and the sub-block sums of its quants.
#[test]
fn quantizer_4x8_matches_q8k_rule() {
    let mut rng = Rng(0xfeed_beef_0bad_cafe);
    for case in 0..200 {
        let scale = [1.0f32, 1e-3, 37.0][case % 3];
        let mut x: Vec<f32> = (0..2 * QK_K).map(|_| rng.f() * scale).collect();
        if case % 4 == 1 {
            // the largest magnitude positive, in a lane other than the first
            x[77] = 2.0 * scale;
        }
        if case % 4 == 2 {
            x[300] = -2.0 * scale;
        }
        if case == 3 {
            x[..QK_K].iter_mut().for_each(|v| *v = 0.0);
        }
        let mut a = vec![ActBlock::ZERO; 2];
        quantize_row_4x8(&x, &mut a);
        let mut r = vec![BlockQ8K::default(); 2];
        q8_k::quantize_row(&x, &mut r);
        for (a, r) in a.iter().zip(&r) {
            assert_eq!(a.qs, r.qs, "case {case}");
            assert_eq!(a.d.to_bits(), f32::from_bits(r.d).to_bits(), "case {case}");
            assert_eq!(ActBlock::from_q8k(r).sums, a.sums);
        }
    }
    // a tie: +m and -m both present; the 4x8 rule takes the positive one (iscale < 0)
    let mut x = vec![0.25f32; QK_K];
    x[3] = -1.0;
    x[200] = 1.0;
    let mut a = vec![ActBlock::ZERO; 1];
    quantize_row_4x8(&x, &mut a);
    assert!(a[0].d < 0.0 && a[0].qs[200] == -127 && a[0].qs[3] == 127);
}

/// The x86 quantizer (ggml's instructions) gives the scalar rule's bits on every row, the edge
/// cases included: ties of +m and -m in one lane or across lanes, all-zero blocks, values whose
/// scaled product saturates the conversions (infinities, NaN: `vcvtps2dq`'s i32::MIN, then the
/// saturating packs), subnormals, and halves that round to even.
#[test]
fn quantizer_4x8_x86_matches_scalar_rule() {
    if !have_avx2() {
        return;
    }
    let mut rng = Rng(0x7e57_04a8);
    for case in 0..400 {
        let scale = [1.0f32, 1e-3, 37.0, 1e-40, 3e38][case % 5];
        let mut x: Vec<f32> = (0..3 * QK_K).map(|_| rng.f() * scale).collect();
        match case % 8 {
            1 => x[77] = 2.0 * scale.min(1e30),
            2 => {
                x[300] = -2.0;
                x[301] = 2.0;
            }
            3 => x[..QK_K].iter_mut().for_each(|v| *v = 0.0),
            4 => x[5] = f32::INFINITY,
            5 => x[9 + (case % 3) * 256] = f32::NAN,
            6 => {
                // halves: x * iscale lands on k + 0.5
                x[QK_K..2 * QK_K].iter_mut().enumerate().for_each(|(i, v)| *v = (i as f32 - 128.0) * 0.5);
                x[QK_K] = -127.0;
            }
            7 => {
                x[3] = -1.0;
                x[11] = 1.0;
                x[200] = -1.0;
            }
            _ => {}
        }
        let mut got = vec![ActBlock::ZERO; 3];
        quantize_row_4x8(&x, &mut got);
        let mut want = vec![ActBlock::ZERO; 3];
        quantize_row_4x8_portable(&x, &mut want);
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.qs, w.qs, "case {case}");
            assert_eq!(g.d.to_bits(), w.d.to_bits(), "case {case}");
            assert_eq!(g.sums, w.sums, "case {case}");
        }
    }
}

unsafe extern "C" fn rust_q8k(x: *const f32, y: *mut std::ffi::c_void, k: i64) {
    // SAFETY: HostQ8K's contract: `k` floats in, `k / 256` blocks out.
    let (x, y) = unsafe { (std::slice::from_raw_parts(x, k as usize), std::slice::from_raw_parts_mut(y as *mut BlockQ8K, k as usize / QK_K)) };
    q8_k::quantize_row(x, y);
}

/// The node end to end: rows of each plane in groups of four on gemm's path with the 4x8
/// quantizer, the rest on gemv's with the host's; 1 and 2 threads give the same bits; and the
/// products are those of the plain weights (dequantized f32 product, NMSE < 1e-4).
#[test]
fn node_matches_reference_and_plain_product() {
    if !have_avx2() {
        return;
    }
    let mut rng = Rng(0x0dd_ba11_cafe_f00d);
    // SAFETY: rust_q8k quantizes as quantize_row_q8_K does.
    let host = unsafe { HostQ8K::new(rust_q8k) };
    for (k, m) in [(256usize, 16usize), (512, 40)] {
        let nb = k / QK_K;
        let w = random_q4k(&mut rng, m * nb);
        let mut packed = repack_x8(&w, m, nb);
        let mut plain = vec![0f32; m * k];
        crate::quant::q4_k::dequantize_row_at(SimdLevel::Portable, &w, &mut plain);
        for (rows, planes) in [(1usize, 1usize), (3, 1), (4, 1), (7, 2), (33, 1), (100, 1)] {
            let mut x: Vec<f32> = (0..k * rows * planes).map(|_| rng.f()).collect();
            let a = Raw { data: packed.as_mut_ptr(), ne: [k, m, 1, 1], nb: [144, 144 * nb, 144 * nb * m, 144 * nb * m], ty: type_id::Q4_K };
            let b = Raw { data: x.as_mut_ptr() as *mut u8, ne: [k, rows, planes, 1], nb: [4, 4 * k, 4 * k * rows, 4 * k * rows * planes], ty: F32 };
            let mut results = Vec::new();
            for threads in [1, 2] {
                let mut out = vec![f32::NAN; m * rows * planes];
                let d = Raw { data: out.as_mut_ptr() as *mut u8, ne: [m, rows, planes, 1], nb: [4, 4 * m, 4 * m * rows, 4 * m * rows * planes], ty: F32 };
                let node = Node { op: Op::MulMat, dst: d, src: [Some(a), Some(b), None, None, None], params: [0; 16], order: crate::CpuOrder::BEFORE_2026, q8k: Some(host), repack: Some(Repack::Q4Kx8) };
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
                    let gemm = j < rows - rows % 4;
                    let mut act = vec![ActBlock::ZERO; nb];
                    if gemm {
                        quantize_row_4x8(xr, &mut act);
                    } else {
                        let mut q = vec![BlockQ8K::default(); nb];
                        q8_k::quantize_row(xr, &mut q);
                        act.iter_mut().zip(&q).for_each(|(o, q)| *o = ActBlock::from_q8k(q));
                    }
                    for c in 0..m {
                        let got = out[(p * rows + j) * m + c];
                        let want = reference(&w[c * nb..(c + 1) * nb], &act, gemm);
                        assert_eq!(got.to_bits(), want.to_bits(), "k {k} m {m} rows {rows} plane {p} row {j} col {c}");
                        let exact: f64 = plain[c * k..(c + 1) * k].iter().zip(xr).map(|(&w, &x)| w as f64 * x as f64).sum();
                        num += (got as f64 - exact).powi(2);
                        den += exact * exact;
                    }
                }
            }
            assert!(num / den < 1e-4, "k {k} m {m} rows {rows}: NMSE {}", num / den);
        }
    }
}

/// Only the repacked layout it knows, on shapes ggml-cpu repacks.
#[test]
fn declines_other_layouts_and_shapes() {
    let mut w = vec![0u8; 144 * 16];
    let mut x = vec![0f32; 256 * 2];
    let mut out = vec![0f32; 16 * 2];
    let a = Raw { data: w.as_mut_ptr(), ne: [256, 16, 1, 1], nb: [144, 144, 144 * 16, 144 * 16], ty: type_id::Q4_K };
    let b = Raw { data: x.as_mut_ptr() as *mut u8, ne: [256, 2, 1, 1], nb: [4, 1024, 2048, 2048], ty: F32 };
    let d = Raw { data: out.as_mut_ptr() as *mut u8, ne: [16, 2, 1, 1], nb: [4, 64, 128, 128], ty: F32 };
    // SAFETY: as above.
    let host = unsafe { HostQ8K::new(rust_q8k) };
    let node = Node { op: Op::MulMat, dst: d, src: [Some(a), Some(b), None, None, None], params: [0; 16], order: crate::CpuOrder::BEFORE_2026, q8k: Some(host), repack: Some(Repack::Q4Kx8) };
    assert_eq!(supports(&node), have_avx2());
    assert!(!supports(&Node { repack: Some(Repack::Other), ..node }));
    assert!(!crate::ops::mul_mat::supports(&Node { repack: Some(Repack::Other), ..node }));
    assert!(!supports(&Node { q8k: None, ..node }));
    let rows12 = Raw { ne: [256, 12, 1, 1], ..a };
    assert!(!supports(&Node { src: [Some(rows12), Some(b), None, None, None], dst: Raw { ne: [12, 2, 1, 1], ..d }, ..node }));
    let q4_0 = Raw { ty: type_id::Q4_0, ..a };
    assert!(!supports(&Node { src: [Some(q4_0), Some(b), None, None, None], ..node }));
    let f16 = Raw { ty: crate::view::F16, nb: [2, 512, 1024, 1024], ..b };
    assert!(!supports(&Node { src: [Some(a), Some(f16), None, None, None], ..node }));
    assert!(crate::ops::mul_mat::streamed::Streamed::of(&node).is_none());
}

/// Timing of Gemma 3 270M's ffn_down shape (2048 -> 640, a 512-token prompt) on one thread, and
/// of the 4x8 quantizer alone: `cargo test --release -p ggml-rs-kernels repacked_q4k_timing --
/// --ignored --nocapture` (min of 9, CPU time).
#[test]
#[ignore]
fn repacked_q4k_timing() {
    if !have_avx2() {
        return;
    }
    let (k, m, rows) = (2048usize, 640usize, 512usize);
    let nb = k / QK_K;
    let mut rng = Rng(0x5eed);
    let w = random_q4k(&mut rng, m * nb);
    let mut packed = repack_x8(&w, m, nb);
    let mut x: Vec<f32> = (0..k * rows).map(|_| rng.f()).collect();
    let mut out = vec![0f32; m * rows];
    // SAFETY: rust_q8k quantizes as quantize_row_q8_K does.
    let host = unsafe { HostQ8K::new(rust_q8k) };
    let a = Raw { data: packed.as_mut_ptr(), ne: [k, m, 1, 1], nb: [144, 144 * nb, 144 * nb * m, 144 * nb * m], ty: type_id::Q4_K };
    let b = Raw { data: x.as_mut_ptr() as *mut u8, ne: [k, rows, 1, 1], nb: [4, 4 * k, 4 * k * rows, 4 * k * rows], ty: F32 };
    let d = Raw { data: out.as_mut_ptr() as *mut u8, ne: [m, rows, 1, 1], nb: [4, 4 * m, 4 * m * rows, 4 * m * rows], ty: F32 };
    let node = Node { op: Op::MulMat, dst: d, src: [Some(a), Some(b), None, None, None], params: [0; 16], order: crate::CpuOrder::BEFORE_2026, q8k: Some(host), repack: Some(Repack::Q4Kx8) };
    let pool = Pool::new(1);
    let mut best = f64::MAX;
    let mut best_q = f64::MAX;
    let mut acts = vec![ActBlock::ZERO; nb * rows];
    // the process's CPU time, not the wall clock: a busy machine's waits are not counted
    let cpu = || {
        let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: a valid timespec out-pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
        t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
    };
    for _ in 0..9 {
        let t = cpu();
        assert!(compute(&pool.session(), &node));
        best = best.min(cpu() - t);
        let t = cpu();
        for (xr, o) in x.chunks_exact(k).zip(acts.chunks_exact_mut(nb)) {
            quantize_row_4x8(xr, o);
        }
        best_q = best_q.min(cpu() - t);
    }
    let sum: f64 = out.iter().map(|&v| v as f64).sum();
    println!("q4k 2048x640 x 512 rows, 1 thread: {:.2} ms (quantizer alone {:.2} ms), checksum {sum}", best * 1e3, best_q * 1e3);
}

/// ggml's NEON `q4_K_8x8` / `q4_K_8x4` arithmetic (aarch64) written from the plain blocks, for
/// one weight row and one activation row: 8x8's gemv a fused step per sub-block, its gemm one per
/// super-block after the minimums' (`fmls`), which come last on the other paths; 8x4's gemm and
/// gemv one per pair of sub-blocks.
#[cfg(all(target_arch = "aarch64", feature = "arm-repack"))]
fn reference_arm(w: &[BlockQ4K], a: &[ActBlock], gemm: bool, layout: Repack) -> f32 {
    let mut acc = 0f32;
    for (x, y) in w.iter().zip(a) {
        let q = quants(x);
        let (s, m) = (fp16_to_fp32(x.d) * y.d, fp16_to_fp32(x.dmin) * y.d);
        let (mut isum, mut bias, mut pair) = (0i32, 0i32, 0i32);
        for j in 0..8 {
            let (sc, mn) = scale_min(j, &x.scales);
            let dot: i32 = (0..32).map(|l| q[32 * j + l] as i32 * y.qs[32 * j + l] as i32).sum();
            let sum: i32 = (0..32).map(|l| y.qs[32 * j + l] as i32).sum();
            assert_eq!(sum, y.sums[j] as i32);
            bias += mn as i32 * sum;
            if layout == Repack::Q4K8x4 {
                // one step per pair of sub-blocks, on both paths
                pair += sc as i32 * dot;
                if j % 2 == 1 {
                    acc = (pair as f32).mul_add(s, acc);
                    pair = 0;
                }
            } else if gemm {
                isum += sc as i32 * dot;
            } else {
                acc = ((sc as i32 * dot) as f32).mul_add(s, acc);
            }
        }
        acc = (-(bias as f32)).mul_add(m, acc);
        if gemm && layout == Repack::Q4K8x8 {
            acc = (isum as f32).mul_add(s, acc);
        }
    }
    acc
}

/// The NEON Q4_K kernels read the repacked bytes (8x8 and 8x4) as ggml's NEON arithmetic on the
/// plain rows gives, bit for bit, on both paths, for tiles of 1 to 16 rows.
#[cfg(all(target_arch = "aarch64", feature = "arm-repack"))]
#[test]
fn arm_q4k_kernel_matches_reference_bitwise() {
    if !crate::cpu_features::has_dotprod() {
        return;
    }
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for (nb, layout) in [1usize, 3, 8].into_iter().flat_map(|nb| [(nb, Repack::Q4K8x8), (nb, Repack::Q4K8x4)]) {
        let w = random_q4k(&mut rng, 8 * nb);
        let packed = repack_q4k(&w, 8, nb, if layout == Repack::Q4K8x4 { 4 } else { 8 });
        for n in [1usize, 5, 16] {
            let acts: Vec<Vec<ActBlock>> = (0..n)
                .map(|_| {
                    let x: Vec<f32> = (0..nb * QK_K).map(|_| rng.f() * 3.0).collect();
                    let mut a = vec![ActBlock::ZERO; nb];
                    arm::q4k::quantize_row_4x8(&x, &mut a);
                    a
                })
                .collect();
            for gemm in [false, true] {
                let rows: Vec<(&[ActBlock], bool)> = acts.iter().map(|a| (&a[..], gemm)).collect();
                let mut out = [[0f32; 8]; TILE];
                // SAFETY: dotprod checked above.
                unsafe { arm::q4k::group_of(layout, &packed, &rows, &mut out) };
                for r in 0..n {
                    for c in 0..8 {
                        let want = reference_arm(&w[c * nb..(c + 1) * nb], &acts[r], gemm, layout);
                        assert_eq!(out[r][c].to_bits(), want.to_bits(), "{layout:?} nb {nb} n {n} gemm {gemm} row {r} col {c}");
                    }
                }
            }
        }
    }
}

/// The one-row path (`gemv_of`: a run of groups per call, both layouts) gives the gemv's bits
/// of ggml's arithmetic on the plain rows, over several groups.
#[cfg(all(target_arch = "aarch64", feature = "arm-repack"))]
#[test]
fn arm_q4k_gemv_matches_reference_bitwise() {
    if !crate::cpu_features::has_dotprod() {
        return;
    }
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for (nb, layout) in [1usize, 3].into_iter().flat_map(|nb| [(nb, Repack::Q4K8x8), (nb, Repack::Q4K8x4)]) {
        let m = 24;
        let w = random_q4k(&mut rng, m * nb);
        let packed = repack_q4k(&w, m, nb, if layout == Repack::Q4K8x4 { 4 } else { 8 });
        let x: Vec<f32> = (0..nb * QK_K).map(|_| rng.f() * 3.0).collect();
        let mut q = vec![BlockQ8K::default(); nb];
        q8_k::quantize_row(&x, &mut q);
        let act: Vec<ActBlock> = q.iter().map(ActBlock::from_q8k).collect();
        let mut out = vec![f32::NAN; m];
        // SAFETY: dotprod checked above.
        unsafe { arm::q4k::gemv_of(layout, &packed, &act, &mut out) };
        for c in 0..m {
            let want = reference_arm(&w[c * nb..(c + 1) * nb], &act, false, layout);
            assert_eq!(out[c].to_bits(), want.to_bits(), "{layout:?} nb {nb} col {c}");
        }
    }
}

/// ggml's generic 4x8 rule is the reference Q8_K rule (first largest magnitude, `-127 / max`)
/// without its clamp at 127, which no value reaches; the sub-block sums are the quants'.
#[cfg(all(target_arch = "aarch64", feature = "arm-repack"))]
#[test]
fn arm_quantizer_4x8_matches_q8k_rule() {
    let mut rng = Rng(0xfeed_beef_0bad_cafe);
    for case in 0..200 {
        let scale = [1.0f32, 1e-3, 37.0][case % 3];
        let mut x: Vec<f32> = (0..2 * QK_K).map(|_| rng.f() * scale).collect();
        if case % 4 == 1 {
            x[77] = 2.0 * scale;
            x[78] = -2.0 * scale;
        }
        if case == 3 {
            x[..QK_K].iter_mut().for_each(|v| *v = 0.0);
        }
        let mut a = vec![ActBlock::ZERO; 2];
        arm::q4k::quantize_row_4x8(&x, &mut a);
        let mut r = vec![BlockQ8K::default(); 2];
        q8_k::quantize_row(&x, &mut r);
        for (a, r) in a.iter().zip(&r) {
            assert_eq!(a.qs, r.qs, "case {case}");
            assert_eq!(a.d.to_bits(), f32::from_bits(r.d).to_bits(), "case {case}");
            assert_eq!(ActBlock::from_q8k(r).sums, a.sums);
        }
    }
}

/// The ARM node end to end: groups of four on the gemm's path with ggml's generic 4x8 quantizer,
/// the rest on the gemv's with the host's; 1 and 2 threads give the same bits.
#[cfg(all(target_arch = "aarch64", feature = "arm-repack"))]
#[test]
fn arm_q4k_node_matches_reference() {
    if !crate::cpu_features::has_dotprod() || simd_level() != SimdLevel::Neon {
        return;
    }
    let mut rng = Rng(0x0dd_ba11_cafe_f00d);
    // SAFETY: rust_q8k quantizes as quantize_row_q8_K does.
    let host = unsafe { HostQ8K::new(rust_q8k) };
    for (k, m, layout) in [(256usize, 16usize, Repack::Q4K8x8), (512, 40, Repack::Q4K8x8), (256, 16, Repack::Q4K8x4), (512, 40, Repack::Q4K8x4)] {
        let nb = k / QK_K;
        let w = random_q4k(&mut rng, m * nb);
        let mut packed = repack_q4k(&w, m, nb, if layout == Repack::Q4K8x4 { 4 } else { 8 });
        for (rows, planes) in [(1usize, 1usize), (3, 1), (4, 1), (7, 2), (33, 1), (1, 2)] {
            let mut x: Vec<f32> = (0..k * rows * planes).map(|_| rng.f()).collect();
            let a = Raw { data: packed.as_mut_ptr(), ne: [k, m, 1, 1], nb: [144, 144 * nb, 144 * nb * m, 144 * nb * m], ty: type_id::Q4_K };
            let b = Raw { data: x.as_mut_ptr() as *mut u8, ne: [k, rows, planes, 1], nb: [4, 4 * k, 4 * k * rows, 4 * k * rows * planes], ty: F32 };
            let mut results = Vec::new();
            for threads in [1, 2] {
                let mut out = vec![f32::NAN; m * rows * planes];
                let d = Raw { data: out.as_mut_ptr() as *mut u8, ne: [m, rows, planes, 1], nb: [4, 4 * m, 4 * m * rows, 4 * m * rows * planes], ty: F32 };
                let node = Node { op: Op::MulMat, dst: d, src: [Some(a), Some(b), None, None, None], params: [0; 16], order: crate::CpuOrder::BEFORE_2026, q8k: Some(host), repack: Some(layout) };
                assert!(supports(&node));
                let pool = Pool::new(threads);
                assert!(compute(&pool.session(), &node));
                results.push(out);
            }
            assert_eq!(results[0].iter().map(|v| v.to_bits()).collect::<Vec<_>>(), results[1].iter().map(|v| v.to_bits()).collect::<Vec<_>>());
            for p in 0..planes {
                for j in 0..rows {
                    let xr = &x[(p * rows + j) * k..(p * rows + j + 1) * k];
                    let gemm = j < rows - rows % 4;
                    let mut act = vec![ActBlock::ZERO; nb];
                    if gemm {
                        arm::q4k::quantize_row_4x8(xr, &mut act);
                    } else {
                        let mut q = vec![BlockQ8K::default(); nb];
                        q8_k::quantize_row(xr, &mut q);
                        act.iter_mut().zip(&q).for_each(|(o, q)| *o = ActBlock::from_q8k(q));
                    }
                    for c in 0..m {
                        let want = reference_arm(&w[c * nb..(c + 1) * nb], &act, gemm, layout);
                        assert_eq!(results[0][(p * rows + j) * m + c].to_bits(), want.to_bits(), "{layout:?} k {k} m {m} rows {rows} plane {p} row {j} col {c}");
                    }
                }
            }
        }
    }
}

/// Not a check: the one-row work of a 1024 x 1024 (4 super-blocks a row) Q4_K product in
/// `GGML_RS_COUNT_LAYOUT` (`q4_K_8x4`, else `q4_K_8x8`), `GGML_RS_COUNT_PATH=group` through
/// `group_of` per group as before the one-row path, else `gemv_of`, `GGML_RS_COUNT_REPEATS`
/// times, for tools/qemu-count's plugin: (count at 3 - count at 1) / 2 / 512 is one
/// super-block's (8 rows x 256) instructions.
#[cfg(all(target_arch = "aarch64", feature = "arm-repack"))]
#[test]
#[ignore]
fn count_q4k_one_row() {
    if !crate::cpu_features::has_dotprod() {
        return;
    }
    let layout = if std::env::var("GGML_RS_COUNT_LAYOUT").as_deref() == Ok("q4_K_8x4") { Repack::Q4K8x4 } else { Repack::Q4K8x8 };
    let repeats: usize = std::env::var("GGML_RS_COUNT_REPEATS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let by_group = std::env::var("GGML_RS_COUNT_PATH").as_deref() == Ok("group");
    let (m, nb) = (1024usize, 4usize);
    let mut rng = Rng(7);
    let w = random_q4k(&mut rng, m * nb);
    let packed = repack_q4k(&w, m, nb, if layout == Repack::Q4K8x4 { 4 } else { 8 });
    let x: Vec<f32> = (0..nb * QK_K).map(|_| rng.f()).collect();
    let mut q = vec![BlockQ8K::default(); nb];
    q8_k::quantize_row(&x, &mut q);
    let act: Vec<ActBlock> = q.iter().map(ActBlock::from_q8k).collect();
    let mut out = vec![0f32; m];
    let gb = nb * Q4KX8_BYTES;
    for _ in 0..repeats {
        if by_group {
            let mut o = [[0f32; 8]; TILE];
            for g in 0..m / 8 {
                // SAFETY: dotprod checked above.
                unsafe { arm::q4k::group_of(layout, &packed[g * gb..(g + 1) * gb], &[(&act[..], false)], &mut o) };
                out[8 * g..8 * g + 8].copy_from_slice(&o[0]);
            }
        } else {
            // SAFETY: as above.
            unsafe { arm::q4k::gemv_of(layout, &packed, &act, &mut out) };
        }
    }
    println!("count_q4k_one_row {layout:?} group={by_group} x{repeats}: {}", out.iter().sum::<f32>());
}
