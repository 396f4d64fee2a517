//! FLASH_ATTN_EXT against a plain f64 softmax-attention reference at a tolerance (F16 V sums in
//! one_chunk round after every key, so ~1e-3 relative; on NEON with FP16 arithmetic the K·Q dot
//! products accumulate in half too, well inside it); bit-identity to ggml-cpu is
//! tests_c/simd_ops_attn.inc's job. Every path (one_chunk, tiled, split-KV), GQA, masks with
//! -inf runs, key counts off the 64-key tiles, several thread counts. On aarch64 the NEON helpers
//! are also checked bit for bit against scalar models of ggml's NEON order (both F16 flavours
//! where the CPU has FEAT_FP16).

use super::{compute, level_computes, row_chunks, supports};
use crate::op::{Node, Op};
use crate::pool::Pool;
use crate::quant::f16::{fp16_to_fp32, fp32_to_fp16};
use crate::view::{Raw, F16, F32};
use crate::CpuOrder;

const ORDER_2026: CpuOrder = CpuOrder { norm_vec_sums: true, rope_rotate_pairs: true, q6k_offset_per_subblock: true };

fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut x = seed.wrapping_mul(2654435761).wrapping_add(12345);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            2.0 * (x as f32 / u32::MAX as f32) - 1.0
        })
        .collect()
}

fn raw(data: *mut u8, ty: i32, es: usize, ne: [usize; 4]) -> Raw {
    let nb0 = es;
    let nb1 = nb0 * ne[0];
    let nb2 = nb1 * ne[1];
    Raw { data, ne, nb: [nb0, nb1, nb2, nb2 * ne[2]], ty }
}

struct Case {
    dk: usize,
    dv: usize,
    nq: usize,
    nh: usize,
    nkh: usize,
    nkv: usize,
    /// causal mask with `mask_pad` extra -inf keys at the end (None: no mask)
    mask: Option<usize>,
    scale: f32,
}

/// A case's operands: Q, K, V (halves) and the mask (halves, all 0 without one).
struct Operands {
    q: Vec<f32>,
    k: Vec<u16>,
    v: Vec<u16>,
    mask: Vec<u16>,
}

impl Operands {
    fn new(c: &Case) -> Operands {
        let q = values(c.dk * c.nq * c.nh, 1);
        let k: Vec<u16> = values(c.dk * c.nkv * c.nkh, 2).iter().map(|&x| fp32_to_fp16(x)).collect();
        let v: Vec<u16> = values(c.dv * c.nkv * c.nkh, 3).iter().map(|&x| fp32_to_fp16(x)).collect();
        let mut mask: Vec<u16> = vec![0; c.nkv * c.nq];
        if let Some(pad) = c.mask {
            // query i sees keys up to nkv - pad - nq + i
            for i in 0..c.nq {
                for j in 0..c.nkv {
                    let visible = j + pad + c.nq <= c.nkv + i;
                    mask[i * c.nkv + j] = if visible { fp32_to_fp16((j % 3) as f32 * -0.25) } else { 0xfc00 };
                }
            }
        }
        Operands { q, k, v, mask }
    }

    /// The node over these operands writing `out` (`dv * nh * nq` floats).
    fn node(&mut self, c: &Case, out: &mut [f32]) -> Node {
        let mut params = [0i32; 16];
        params[0] = c.scale.to_bits() as i32;
        Node {
            op: Op::FlashAttnExt,
            dst: raw(out.as_mut_ptr() as *mut u8, F32, 4, [c.dv, c.nh, c.nq, 1]),
            src: [
                Some(raw(self.q.as_mut_ptr() as *mut u8, F32, 4, [c.dk, c.nq, c.nh, 1])),
                Some(raw(self.k.as_mut_ptr() as *mut u8, F16, 2, [c.dk, c.nkv, c.nkh, 1])),
                Some(raw(self.v.as_mut_ptr() as *mut u8, F16, 2, [c.dv, c.nkv, c.nkh, 1])),
                c.mask.map(|_| raw(self.mask.as_mut_ptr() as *mut u8, F16, 2, [c.nkv, c.nq, 1, 1])),
                None,
            ],
            params,
            order: ORDER_2026,
            q8k: None,
            repack: None,
        }
    }
}

fn run(c: &Case, threads: usize) {
    let mut ops = Operands::new(c);
    let mut out = vec![0f32; c.dv * c.nh * c.nq];
    let node = ops.node(c, &mut out);
    let Operands { q, k, v, mask } = &ops;
    assert!(supports(&node));
    let pool = Pool::new(threads);
    assert!(compute(&pool.session(), &node));
    // reference: f64 softmax over the unmasked keys
    let g = c.nh / c.nkh;
    let mut worst = 0f64;
    for h in 0..c.nh {
        let kh = h / g;
        for i in 0..c.nq {
            let qr = &q[(h * c.nq + i) * c.dk..][..c.dk];
            let mut w = vec![f64::NEG_INFINITY; c.nkv];
            for j in 0..c.nkv {
                let m = if c.mask.is_some() { fp16_to_fp32(mask[i * c.nkv + j]) as f64 } else { 0.0 };
                if m == f64::NEG_INFINITY {
                    continue;
                }
                let kr = &k[(kh * c.nkv + j) * c.dk..][..c.dk];
                let dot: f64 = qr.iter().zip(kr).map(|(&a, &b)| a as f64 * fp16_to_fp32(b) as f64).sum();
                w[j] = dot * c.scale as f64 + m;
            }
            let max = w.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = w.iter().map(|&x| if x == f64::NEG_INFINITY { 0.0 } else { (x - max).exp() }).collect();
            let s: f64 = e.iter().sum();
            for d in 0..c.dv {
                let r: f64 = (0..c.nkv).map(|j| e[j] * fp16_to_fp32(v[(kh * c.nkv + j) * c.dv + d]) as f64).sum::<f64>() / s;
                let got = out[(i * c.nh + h) * c.dv + d] as f64;
                worst = worst.max((got - r).abs());
            }
        }
    }
    assert!(worst < 4e-3, "dk {} nq {} nh {} nkh {} nkv {} mask {:?} threads {threads}: max error {worst}", c.dk, c.nq, c.nh, c.nkh, c.nkv, c.mask);
}

#[test]
fn matches_reference_on_every_path() {
    if !level_computes() {
        return;
    }
    let cases = [
        // decode, one_chunk (SmolLM2 GQA 9/3, head 64), with and without mask
        Case { dk: 64, dv: 64, nq: 1, nh: 9, nkh: 3, nkv: 100, mask: Some(3), scale: 0.125 },
        Case { dk: 64, dv: 64, nq: 1, nh: 9, nkh: 3, nkv: 37, mask: None, scale: 0.125 },
        // decode, split-KV (Gemma 3 270M: 4/1, head 256)
        Case { dk: 256, dv: 256, nq: 1, nh: 4, nkh: 1, nkv: 700, mask: Some(5), scale: 0.0625 },
        Case { dk: 64, dv: 64, nq: 1, nh: 6, nkh: 6, nkv: 1500, mask: None, scale: 0.125 },
        // decode, split-KV, SmolLM2's groups of 3 heads, keys off the 8-key steps
        Case { dk: 64, dv: 64, nq: 1, nh: 9, nkh: 3, nkv: 777, mask: Some(190), scale: 0.125 },
        // prompt, one_chunk
        Case { dk: 64, dv: 64, nq: 7, nh: 9, nkh: 3, nkv: 40, mask: Some(0), scale: 0.125 },
        Case { dk: 72, dv: 40, nq: 32, nh: 2, nkh: 1, nkv: 77, mask: Some(2), scale: 0.1 },
        // prompt, tiled
        Case { dk: 64, dv: 64, nq: 100, nh: 9, nkh: 3, nkv: 130, mask: Some(30), scale: 0.125 },
        Case { dk: 256, dv: 256, nq: 70, nh: 4, nkh: 1, nkv: 70, mask: Some(0), scale: 0.0625 },
        Case { dk: 64, dv: 64, nq: 150, nh: 2, nkh: 2, nkv: 150, mask: None, scale: 0.125 },
        // DV % 4 == 0 but not % 8: tiled on NEON, one_chunk on x86; DK with dot leftovers
        Case { dk: 40, dv: 36, nq: 80, nh: 2, nkh: 1, nkv: 90, mask: Some(1), scale: 0.15 },
    ];
    for c in &cases {
        for threads in [1, 2, 3] {
            run(c, threads);
        }
    }
}

#[test]
fn chunks_follow_ggml() {
    // nr = 576 rows on 2 threads: chunks of ceil(576 / 8) = 72 rows, 8 chunks
    assert_eq!(row_chunks(576, 2), (8, 72));
    // fewer chunks than threads: one per thread
    assert_eq!(row_chunks(3, 4), (4, 1));
    assert_eq!(row_chunks(100, 1), (1, 100));
}

#[test]
fn declines_what_it_does_not_reproduce() {
    let mut b = [0u8; 64];
    let p = b.as_mut_ptr();
    let q = raw(p, F32, 4, [64, 1, 2, 1]);
    let k = raw(p, F16, 2, [64, 8, 1, 1]);
    let base = Node { op: Op::FlashAttnExt, dst: raw(p, F32, 4, [64, 2, 1, 1]), src: [Some(q), Some(k), Some(k), None, None], params: [0; 16], order: ORDER_2026, q8k: None, repack: None };
    assert_eq!(supports(&base), level_computes());
    let mut n = base;
    n.order = CpuOrder::BEFORE_2026;
    assert!(!supports(&n));
    let mut n = base;
    n.params[1] = 1f32.to_bits() as i32; // ALiBi
    assert!(!supports(&n));
    let mut n = base;
    n.params[2] = 30f32.to_bits() as i32; // softcap
    assert!(!supports(&n));
    let mut n = base;
    n.src[4] = Some(raw(p, F32, 4, [2, 1, 1, 1])); // sinks
    assert!(!supports(&n));
    let mut n = base;
    n.src[1] = Some(raw(p, F32, 4, [64, 8, 1, 1])); // F32 K
    assert!(!supports(&n));
}

/// The NEON helpers against scalar models of ggml's NEON order, bit for bit: `ggml_vec_dot_f16`,
/// `ggml_vec_mad_f16`, `ggml_vec_scale_f16` in f32 and, where the CPU has FEAT_FP16, in half
/// precision, at lengths around their 16/32-element steps.
#[cfg(target_arch = "aarch64")]
#[test]
fn neon_helpers_follow_ggml_order() {
    use super::neon::{helpers, model};
    let flavours: &[bool] = if crate::cpu_features::has_fp16() { &[false, true] } else { &[false] };
    for &hp in flavours {
        for (t, n) in [1usize, 3, 4, 15, 16, 17, 31, 32, 33, 40, 64, 72, 100, 256].into_iter().enumerate() {
            let seed = 10 + 4 * t as u32;
            let h = |s: u32, amp: f32| -> Vec<u16> { values(n, s).iter().map(|&x| fp32_to_fp16(x * amp)).collect() };
            let (k, q) = (h(seed, 1.0), h(seed + 1, 1.0));
            assert_eq!(helpers::dot(hp, &k, &q).to_bits(), model::dot(&k, &q, hp).to_bits(), "dot n {n} hp {hp}");
            for v in [0.75f32, 0.3337, 1.0e-3, 6.1e-5] {
                let (y0, x) = (h(seed + 2, 8.0), h(seed + 3, 1.0));
                let (mut y, mut ym) = (y0.clone(), y0.clone());
                helpers::mad(hp, &mut y, &x, v);
                model::mad(&mut ym, &x, v, hp);
                assert_eq!(y, ym, "mad n {n} v {v} hp {hp}");
                let (mut y, mut ym) = (y0.clone(), y0);
                helpers::scale(hp, &mut y, v);
                model::scale(&mut ym, v, hp);
                assert_eq!(y, ym, "scale n {n} v {v} hp {hp}");
            }
        }
    }
}

/// The tiled path's matrix product against a scalar model of `simd_gemm`'s chains
/// (`c = fma(b, a, c)` per element, k in order, from C's value), bit for bit, on shapes that take
/// every row and column block.
#[cfg(target_arch = "x86_64")]
#[test]
fn tile_gemm_keeps_each_element_chain() {
    use super::avx2::{gemm, Mat};
    if !level_computes() {
        return;
    }
    for (m, k, n) in [(64, 256, 64), (64, 64, 256), (13, 40, 24), (5, 7, 8), (1, 3, 16), (11, 64, 72)] {
        let (a, b, c0) = (values(m * k, 7), values(k * n, 8), values(m * n, 9));
        let mut c = c0.clone();
        // SAFETY: c is m x n, a m x k, b k x n, row-major; the level has AVX2/FMA/F16C.
        unsafe { gemm(Mat::of_mut(&mut c, n), Mat::of(&a, k), Mat::of(&b, n), m, k, n) };
        for i in 0..m {
            for j in 0..n {
                let want = (0..k).fold(c0[i * n + j], |acc, kk| b[kk * n + j].mul_add(a[i * k + kk], acc));
                assert_eq!(c[i * n + j].to_bits(), want.to_bits(), "m {m} k {k} n {n} at ({i}, {j})");
            }
        }
    }
}

/// The K tile's transposed widening puts every key's every dimension where ggml's scalar loop
/// does, for key counts and head sizes off the 8-wide blocks.
#[cfg(target_arch = "x86_64")]
#[test]
fn k_tile_is_the_transpose() {
    use super::avx2::pack_k;
    use super::{Attn, KV_TILE};
    if !level_computes() {
        return;
    }
    for (dk, nkv, ic, kv) in [(256, 512, 64, 64), (64, 150, 128, 22), (40, 90, 64, 26), (20, 9, 0, 9)] {
        let c = Case { dk, dv: dk, nq: 1, nh: 2, nkh: 2, nkv, mask: None, scale: 1.0 };
        let mut ops = Operands::new(&c);
        let mut out = vec![0f32; c.dv * c.nh];
        let a = Attn::new(&ops.node(&c, &mut out));
        let mut kt = vec![f32::NAN; dk * KV_TILE];
        // SAFETY: the level has AVX2/FMA/F16C.
        unsafe { pack_k(&a, ic, kv, (1, 0), &mut kt) };
        for d in 0..dk {
            for tk in 0..KV_TILE {
                let got = kt[d * KV_TILE + tk];
                if tk < kv {
                    assert_eq!(got.to_bits(), fp16_to_fp32(ops.k[(nkv + ic + tk) * dk + d]).to_bits(), "dk {dk} d {d} key {tk}");
                } else {
                    assert!(got.is_nan(), "dk {dk}: key {tk} past the tile written");
                }
            }
        }
    }
}

/// The tiled path's time on Gemma 3 270M's prompt shape (pp512: 4 query heads on one K/V head of
/// 256, causal mask), min of 7, one and two threads:
/// `cargo test --release -p ggml-rs-kernels flash_attn_tiled_timing -- --ignored --nocapture`.
#[test]
#[ignore]
fn flash_attn_tiled_timing() {
    if !level_computes() {
        return;
    }
    let cases = [
        ("gemma pp512", Case { dk: 256, dv: 256, nq: 512, nh: 4, nkh: 1, nkv: 512, mask: Some(0), scale: 0.0625 }),
        ("smollm2 pp512", Case { dk: 64, dv: 64, nq: 512, nh: 9, nkh: 3, nkv: 512, mask: Some(0), scale: 0.125 }),
        ("gemma tg @ d576", Case { dk: 256, dv: 256, nq: 1, nh: 4, nkh: 1, nkv: 768, mask: Some(192), scale: 0.0625 }),
        ("smollm2 tg @ d576", Case { dk: 64, dv: 64, nq: 1, nh: 9, nkh: 3, nkv: 768, mask: Some(192), scale: 0.125 }),
    ];
    for (name, c) in &cases {
        let mut ops = Operands::new(c);
        let mut out = vec![0f32; c.dv * c.nh * c.nq];
        let node = ops.node(c, &mut out);
        for threads in [1, 2] {
            let pool = Pool::new(threads);
            let reps = if c.nq == 1 { 200 } else { 1 };
            let best = (0..7)
                .map(|_| {
                    let t = std::time::Instant::now();
                    for _ in 0..reps {
                        assert!(compute(&pool.session(), &node));
                    }
                    t.elapsed().as_secs_f64() * 1e6 / reps as f64
                })
                .fold(f64::INFINITY, f64::min);
            println!("{name}: {threads} thread(s) {best:.1} us (min of 7)");
        }
    }
}
