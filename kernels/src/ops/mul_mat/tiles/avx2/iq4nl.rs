//! Tiles of IQ4_NL products (against Q8_0 activations) in exactly ggml-cpu's AVX2 float order.
//!
//! ggml's AVX2 `vec_dot_iq4_nl_q8_0` looks the nibbles up in the value table (`pshufb`), takes
//! signed-by-signed byte products (`maddubs(|x|, sign(y, x))`, exact: each pair is at most
//! 2 * 127 * 127) into eight i32 lanes (lane `m` holds elements `4m..4m + 4`), and adds blocks in
//! pairs into two accumulators, `acc1 = fma(y.d * x.d, lanes, acc1)` for the even block and
//! `acc2` likewise for the odd one. The result is `hsum_float_8(acc1 + acc2)`, then an odd last
//! block in its scalar tail, `sumf += d * isum` (fused: ggml-cpu is built with FMA on this
//! level). The same code in every revision; ggml-cpu has no AVX-512 version, so the AVX-512
//! level runs these kernels too.
//!
//! Everything here needs AVX2, FMA and F16C; callers dispatch through `cpu_features`.

// Register tiles index accumulators and unpacked blocks with the same row and column numbers.
#![allow(clippy::needless_range_loop)]

use super::super::acts::ActRows;
use crate::quant::iq4_nl::{BlockIQ4NL, KVALUES};
use crate::quant::q8_0::BlockQ8_0;
use crate::quant::x86_util::{hsum_i32_8, hsum_ps, load_i8x32, nibbles32};
use std::arch::x86_64::*;

/// A weight block unpacked once for a tile's columns: the 32 values' magnitudes and the values
/// (whose signs go onto the activations).
#[derive(Clone, Copy)]
struct Prep {
    ax: __m256i,
    x: __m256i,
    d: f32,
}

/// The value table in both 128-bit lanes (`pshufb` looks up within a lane).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn table() -> __m256i {
    // SAFETY: KVALUES is 16 readable bytes.
    _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(KVALUES.as_ptr() as *const __m128i) })
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn prep(table: __m256i, w: &BlockIQ4NL) -> Prep {
    let x = _mm256_shuffle_epi8(table, nibbles32(&w.qs));
    // the scale by F16C (exact, as every conversion of a half)
    let d = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(w.d as i32)));
    Prep { ax: _mm256_sign_epi8(x, x), x, d }
}

/// The block's eight exact i32 lanes against activation block `a`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn ints(p: &Prep, a: &BlockQ8_0) -> __m256i {
    let sy = _mm256_sign_epi8(load_i8x32(&a.qs), p.x);
    _mm256_madd_epi16(_mm256_maddubs_epi16(p.ax, sy), _mm256_set1_epi16(1))
}

/// Outputs `(r, c)` of rows `w[r]` with activation rows `c0 + c`, each in ggml's AVX2 order
/// (module doc).
///
/// # Safety
/// AVX2, FMA and F16C must be available. (Shapes are checked.)
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn iq4nl_tile<const R: usize, const C: usize>(w: [&[BlockIQ4NL]; R], a: &ActRows<'_, BlockQ8_0>, c0: usize) -> [[f32; C]; R] {
    let nb = a.nb;
    assert!(c0 + C <= a.n && w.iter().all(|r| r.len() >= nb) && a.blocks.len() >= a.n * nb && a.d.len() >= a.n * nb);
    // acc[r][c][0] takes the even blocks, [1] the odd ones
    let mut acc = [[[_mm256_setzero_ps(); 2]; C]; R];
    let table = table();
    // (the activation blocks' scales as f32: `a.d`, block-major)
    for pair in 0..nb / 2 {
        // blocks 2 * pair and 2 * pair + 1 into accumulators 0 and 1 (constant indices: the
        // accumulators stay in registers)
        for (h, b) in [(0, 2 * pair), (1, 2 * pair + 1)] {
            let p: [Prep; R] = std::array::from_fn(|r| prep(table, &w[r][b]));
            for c in 0..C {
                let ab = &a.blocks[(c0 + c) * nb + b];
                let da = a.d[b * a.n + c0 + c];
                for r in 0..R {
                    let acc = &mut acc[r][c][h];
                    *acc = _mm256_fmadd_ps(_mm256_set1_ps(da * p[r].d), _mm256_cvtepi32_ps(ints(&p[r], ab)), *acc);
                }
            }
        }
    }
    let mut out = [[0f32; C]; R];
    for r in 0..R {
        for c in 0..C {
            out[r][c] = hsum_ps(_mm256_add_ps(acc[r][c][0], acc[r][c][1]));
        }
    }
    if nb % 2 == 1 {
        // ggml's scalar tail: sumf += (y.d * x.d) * (sumi1 + sumi2), one fused operation
        let b = nb - 1;
        for r in 0..R {
            let p = prep(table, &w[r][b]);
            for c in 0..C {
                let ab = &a.blocks[(c0 + c) * nb + b];
                let isum = hsum_i32_8(ints(&p, ab));
                out[r][c] = (a.d[b * a.n + c0 + c] * p.d).mul_add(isum as f32, out[r][c]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu_features::{available_levels, SimdLevel};
    use crate::quant::f16::fp16_to_fp32;
    use crate::quant::test_util::Lcg;
    use crate::quant::{iq4_nl, q8_0};

    /// ggml's AVX2 `vec_dot_iq4_nl_q8_0` written out in scalar code from the format's
    /// definition, against the tile for every block count parity.
    #[test]
    fn iq4_nl_matches_ggml_avx2_model() {
        if !available_levels().contains(&SimdLevel::Avx2) {
            return;
        }
        let mut rng = Lcg::new(64);
        for nb in [1usize, 2, 3, 8, 17] {
            let w = iq4_nl::random_blocks(&mut rng, nb, 1.0);
            let x: Vec<f32> = (0..nb * 32).map(|_| rng.next_gauss()).collect();
            let mut a = vec![BlockQ8_0::default(); nb];
            q8_0::quantize_row_at(SimdLevel::Portable, &x, &mut a);
            let mut acc = [[0f32; 8]; 2];
            let mut tail = None;
            for (b, (bx, by)) in w.iter().zip(&a).enumerate() {
                let v = iq4_nl::values(bx);
                let lanes: [i32; 8] = std::array::from_fn(|m| (4 * m..4 * m + 4).map(|e| v[e] as i32 * by.qs[e] as i32).sum());
                let d = fp16_to_fp32(by.d) * fp16_to_fp32(bx.d);
                if b + 1 == nb && nb % 2 == 1 {
                    tail = Some((d, lanes.iter().sum::<i32>()));
                } else {
                    for m in 0..8 {
                        acc[b % 2][m] = d.mul_add(lanes[m] as f32, acc[b % 2][m]);
                    }
                }
            }
            let s: [f32; 8] = std::array::from_fn(|m| acc[0][m] + acc[1][m]);
            let s4: [f32; 4] = std::array::from_fn(|i| s[i + 4] + s[i]);
            let mut want = (s4[0] + s4[2]) + (s4[1] + s4[3]);
            if let Some((d, isum)) = tail {
                want = d.mul_add(isum as f32, want);
            }
            let d: Vec<f32> = a.iter().map(|b| fp16_to_fp32(b.d)).collect();
            let rows = ActRows { blocks: &a, d: &d, s: &[], nb, n: 1 };
            // SAFETY: AVX2 was detected.
            let got = unsafe { iq4nl_tile::<1, 1>([&w], &rows, 0)[0][0] };
            assert_eq!(got.to_bits(), want.to_bits(), "nb={nb}");
        }
    }
}
