//! Tiles of K-quant products (Q4_K, Q5_K, Q6_K weights against Q8_K activations) in exactly
//! ggml-cpu's AVX2 float order.
//!
//! ggml's AVX2 `vec_dot_q{4,5,6}_K_q8_K` sum each 256-value super-block into
//! eight i32 lanes (lane `m` holds the products of elements `4m..4m + 4` of every 32-value
//! group, each times its sub-block scale). Q6_K's quants stand for `q - 32`; from 2026 ggml takes
//! the offset out once per super-block, `32 * scale * bsum` with lane `m` taking sub-blocks `2m`
//! and `2m + 1`, and before 2026 per byte pair (`maddubs(q, q8) - maddubs(32, q8)`) ahead of
//! the scale, so each lane's integer depends on the revision ([`Q6KOrder`]). ggml converts them to float and adds them into one
//! 8-lane accumulator with `fma(y.d * x.d, lanes, acc)`. Q4_K's minimums go to a 4-lane
//! accumulator, `fma(-y.d * x.dmin, mins . bsum pairs, acc_m)`; Q5_K's (the same lanes with a
//! fifth bit per quant) to one scalar, `summs += -y.d * x.dmin * total` (fused: ggml-cpu is
//! built with FMA on this level) ([`Mins`]). The result is
//! `hsum_float_8(acc) (+ (m0 + m2) + (m1 + m3) | + summs)`. Every revision has these formulas
//! but for Q6_K's split. The integer lane sums are exact, so only
//! their grouping must match; the float operations are ggml's, one for one. As in `quant`, an
//! `R x C` tile of outputs is computed together: each weight super-block is unpacked once for
//! the tile's `C` activation rows.
//!
//! The AVX-512 level runs these kernels too (ggml-cpu has no AVX-512 K-quant code).
//! Everything here needs AVX2, FMA and F16C; callers dispatch through `cpu_features`.

// Register tiles index accumulators and unpacked blocks with the same row and column numbers.
#![allow(clippy::needless_range_loop)]

use super::super::acts::ActRows;
use crate::quant::f16::fp16_to_fp32;
use crate::quant::q8_k::BlockQ8K;
use crate::quant::x86_util::{hsum_ps, load_i8x32, load_u8x32};
use crate::quant::{BlockQ4K, BlockQ5K, BlockQ6K, QuantBlock, Q4K, Q5K};
use std::arch::x86_64::*;

/// A K-quant format as ggml-cpu's AVX2 `vec_dot` sees it.
///
/// # Safety
/// The methods use AVX2 instructions: call them only on a CPU that has AVX2, FMA and F16C.
pub unsafe trait Avx2KTile: 'static {
    /// The weight block.
    type W: QuantBlock;
    /// A super-block unpacked once for every activation column of a tile.
    type Prep: Copy;
    /// Where the sub-block minimums go.
    const MINS: Mins;
    unsafe fn prep(w: &Self::W) -> Self::Prep;
    /// The super-scales as f32: `d` and (Q4_K) `dmin`.
    fn scales(w: &Self::W) -> (f32, f32);
    /// The super-block's eight exact i32 lanes (see the module doc).
    unsafe fn ints(p: &Self::Prep, a: &BlockQ8K) -> __m256i;
    /// Q4_K, Q5_K: the four i32 lanes of `mins . bsum pairs`.
    unsafe fn min_ints(p: &Self::Prep, a: &BlockQ8K) -> __m128i;
}

/// How ggml's AVX2 `vec_dot` adds a format's sub-block minimums (`dmin * m * bsum`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mins {
    /// No minimums (Q6_K).
    None,
    /// Q4_K: four float lanes, `acc_m = fma(-y.d * x.dmin, float(lanes), acc_m)`, summed at the
    /// end.
    Lanes,
    /// Q5_K: one float, `summs = fma(-y.d * x.dmin, float(total), summs)`.
    Scalar,
}

/// 32-value group `g` of a super-block's bytes.
#[inline(always)]
fn group<T>(v: &[T], g: usize) -> &[T; 32] {
    &v.as_chunks::<32>().0[g]
}

/// `bsums` as 16 i16.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn bsums(a: &BlockQ8K) -> __m256i {
    // SAFETY: bsums is 16 i16 = 32 readable bytes.
    unsafe { _mm256_loadu_si256(a.bsums.as_ptr() as *const __m256i) }
}

/// Q4_K or Q5_K unpacked: the eight 32-value groups' quants as bytes, each group's scale
/// broadcast as i16, and the eight minimums as i16.
#[derive(Clone, Copy)]
pub struct ScaleMinPrep {
    q: [__m256i; 8],
    sc: [__m256i; 8],
    mins: __m128i,
}

/// The eight 6-bit scales (low 128 bits) and minimums (high 128 bits) as i16, unpacked from their
/// 12 bytes with ggml's `kmask` word operations (the per-sub-block scalar unpacking and eight
/// broadcasts from general registers were a third of a one-column product's instructions).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn scales_mins_i16(scales: &[u8; 12]) -> __m256i {
    const K1: u32 = 0x3f3f_3f3f;
    const K2: u32 = 0x0f0f_0f0f;
    const K3: u32 = 0x0303_0303;
    let (u0, u1, u2) = (scales.as_chunks::<4>().0[0], scales.as_chunks::<4>().0[1], scales.as_chunks::<4>().0[2]);
    let (u0, u1, u2) = (u32::from_le_bytes(u0), u32::from_le_bytes(u1), u32::from_le_bytes(u2));
    // scales 0..4 (low 6 bits of bytes 0..4) and 4..8 (nibbles of bytes 8..12, top bits of 0..4);
    // minimums 0..4 (low 6 bits of bytes 4..8) and 4..8 (high nibbles of 8..12, top bits of 4..8)
    let sc_lo = u0 & K1;
    let sc_hi = (u2 & K2) | (((u0 >> 6) & K3) << 4);
    let m_lo = u1 & K1;
    let m_hi = ((u2 >> 4) & K2) | (((u1 >> 6) & K3) << 4);
    _mm256_cvtepu8_epi16(_mm_set_epi32(m_hi as i32, m_lo as i32, sc_hi as i32, sc_lo as i32))
}

/// The nibbles and the packed scales and minimums (all of Q4_K, Q5_K but its fifth bits).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn scale_min_prep(qs: &[u8; 128], scales: &[u8; 12]) -> ScaleMinPrep {
    let m4 = _mm256_set1_epi8(0x0F);
    let mut q = [_mm256_setzero_si256(); 8];
    for j in 0..4 {
        let bits = load_u8x32(group(qs, j));
        q[2 * j] = _mm256_and_si256(bits, m4);
        q[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16::<4>(bits), m4);
    }
    let sm = scales_mins_i16(scales);
    // scale s broadcast to all 16 i16 lanes: its two bytes picked in both 128-bit lanes
    let sc128 = _mm256_permute2x128_si256::<0x00>(sm, sm);
    let sc = std::array::from_fn(|s| _mm256_shuffle_epi8(sc128, _mm256_set1_epi16((((2 * s + 1) << 8) | (2 * s)) as i16)));
    ScaleMinPrep { q, sc, mins: _mm256_extracti128_si256::<1>(sm) }
}

/// The eight scaled lanes of a Q4_K / Q5_K super-block.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn scale_min_ints(p: &ScaleMinPrep, a: &BlockQ8K) -> __m256i {
    let mut sumi = _mm256_setzero_si256();
    for g in 0..8 {
        // a 5-bit quant times a quant fits i16 pairwise (31 * 128 * 2), then times the 6-bit
        // scale
        let p16 = _mm256_maddubs_epi16(p.q[g], load_i8x32(group(&a.qs, g)));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p.sc[g], p16));
    }
    sumi
}

/// `mins . bsum pairs` in four lanes, lane `m` taking sub-blocks `2m` and `2m + 1` (as ggml
/// pairs them).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn scale_min_mins(p: &ScaleMinPrep, a: &BlockQ8K) -> __m128i {
    let s = bsums(a);
    // pairs of 16-value sums: the eight 32-value groups' sums, as ggml's `hadd`
    let q8s = _mm_hadd_epi16(_mm256_castsi256_si128(s), _mm256_extracti128_si256::<1>(s));
    _mm_madd_epi16(p.mins, q8s)
}

// SAFETY: AVX2-only bodies, see the trait.
unsafe impl Avx2KTile for Q4K {
    type W = BlockQ4K;
    type Prep = ScaleMinPrep;
    const MINS: Mins = Mins::Lanes;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn prep(w: &BlockQ4K) -> ScaleMinPrep {
        scale_min_prep(&w.qs, &w.scales)
    }
    #[inline]
    fn scales(w: &BlockQ4K) -> (f32, f32) {
        (fp16_to_fp32(w.d), fp16_to_fp32(w.dmin))
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn ints(p: &ScaleMinPrep, a: &BlockQ8K) -> __m256i {
        scale_min_ints(p, a)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn min_ints(p: &ScaleMinPrep, a: &BlockQ8K) -> __m128i {
        scale_min_mins(p, a)
    }
}

// SAFETY: AVX2-only bodies, see the trait.
unsafe impl Avx2KTile for Q5K {
    type W = BlockQ5K;
    type Prep = ScaleMinPrep;
    const MINS: Mins = Mins::Scalar;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn prep(w: &BlockQ5K) -> ScaleMinPrep {
        let mut p = scale_min_prep(&w.qs, &w.scales);
        // group g's fifth bits are bit g of the 32 `qh` bytes: 16 where set
        let hbits = load_u8x32(&w.qh);
        for g in 0..8 {
            let m = _mm256_set1_epi8((1u8 << g) as i8);
            let set = _mm256_cmpeq_epi8(_mm256_and_si256(hbits, m), m);
            p.q[g] = _mm256_or_si256(p.q[g], _mm256_and_si256(set, _mm256_set1_epi8(16)));
        }
        p
    }
    #[inline]
    fn scales(w: &BlockQ5K) -> (f32, f32) {
        (fp16_to_fp32(w.d), fp16_to_fp32(w.dmin))
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn ints(p: &ScaleMinPrep, a: &BlockQ8K) -> __m256i {
        scale_min_ints(p, a)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn min_ints(p: &ScaleMinPrep, a: &BlockQ8K) -> __m128i {
        scale_min_mins(p, a)
    }
}

/// Q6_K unpacked: the eight 32-value groups' 6-bit quants as bytes, each group's two sub-block
/// scales as i16 (lanes 0..8 and 8..16), and all sixteen scales as i16 (for the `32 * bsum`
/// correction).
#[derive(Clone, Copy)]
pub struct Q6KPrep {
    q: [__m256i; 8],
    sc: [__m256i; 8],
    sc16: __m256i,
}

/// Q6_K in one revision's lane split of the offset (`CpuOrder::q6k_offset_per_subblock`):
/// [`Q6KPerSubblock`] is the 2026 one, [`Q6KPerPair`] the one before.
pub struct Q6KOrder<const PER_SUBBLOCK: bool>;
/// Q6_K as ggml-cpu computes it before 2026.
pub type Q6KPerPair = Q6KOrder<false>;
/// Q6_K as ggml-cpu computes it from 2026 on.
pub type Q6KPerSubblock = Q6KOrder<true>;

// SAFETY: AVX2-only bodies, see the trait.
unsafe impl<const PER_SUBBLOCK: bool> Avx2KTile for Q6KOrder<PER_SUBBLOCK> {
    type W = BlockQ6K;
    type Prep = Q6KPrep;
    const MINS: Mins = Mins::None;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn prep(w: &BlockQ6K) -> Q6KPrep {
        let (m3, m15) = (_mm256_set1_epi8(3), _mm256_set1_epi8(15));
        let mut q = [_mm256_setzero_si256(); 8];
        let mut sc = [_mm256_setzero_si256(); 8];
        for j in 0..2 {
            let (b1, b2) = (load_u8x32(group(&w.ql, 2 * j)), load_u8x32(group(&w.ql, 2 * j + 1)));
            let bh = load_u8x32(group(&w.qh, j));
            let h0 = _mm256_slli_epi16::<4>(_mm256_and_si256(bh, m3));
            let h1 = _mm256_slli_epi16::<2>(_mm256_and_si256(bh, _mm256_set1_epi8(12)));
            let h2 = _mm256_and_si256(bh, _mm256_set1_epi8(48));
            let h3 = _mm256_srli_epi16::<2>(_mm256_and_si256(bh, _mm256_set1_epi8(-64)));
            q[4 * j] = _mm256_or_si256(_mm256_and_si256(b1, m15), h0);
            q[4 * j + 1] = _mm256_or_si256(_mm256_and_si256(b2, m15), h1);
            q[4 * j + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16::<4>(b1), m15), h2);
            q[4 * j + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16::<4>(b2), m15), h3);
        }
        for g in 0..8 {
            let (lo, hi) = (w.scales[2 * g] as i16, w.scales[2 * g + 1] as i16);
            sc[g] = _mm256_setr_epi16(lo, lo, lo, lo, lo, lo, lo, lo, hi, hi, hi, hi, hi, hi, hi, hi);
        }
        // SAFETY: scales is 16 readable bytes.
        let sc16 = _mm256_cvtepi8_epi16(unsafe { _mm_loadu_si128(w.scales.as_ptr() as *const __m128i) });
        Q6KPrep { q, sc, sc16 }
    }
    #[inline]
    fn scales(w: &BlockQ6K) -> (f32, f32) {
        (fp16_to_fp32(w.d), 0.0)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn ints(p: &Q6KPrep, a: &BlockQ8K) -> __m256i {
        let mut sumi = _mm256_setzero_si256();
        for g in 0..8 {
            let q8 = load_i8x32(group(&a.qs, g));
            // 6-bit quant times quant fits i16 pairwise (63 * 128 * 2)
            let mut p16 = _mm256_maddubs_epi16(p.q[g], q8);
            if !PER_SUBBLOCK {
                // before 2026: the offset per byte pair, 32 * (q8 + q8'), before the scale
                p16 = _mm256_sub_epi16(p16, _mm256_maddubs_epi16(_mm256_set1_epi8(32), q8));
            }
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p.sc[g], p16));
        }
        if PER_SUBBLOCK {
            // 2026: the quants stand for q - 32, so subtract 32 * scale * bsum, sub-block pairs
            // per lane
            sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32::<5>(_mm256_madd_epi16(bsums(a), p.sc16)));
        }
        sumi
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn min_ints(_p: &Q6KPrep, _a: &BlockQ8K) -> __m128i {
        _mm_setzero_si128()
    }
}

/// Outputs `(r, c)` of rows `w[r]` with activation rows `c0 + c`, each in ggml's AVX2 order
/// (module doc).
///
/// # Safety
/// AVX2, FMA and F16C must be available. (Shapes are checked.)
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn k_tile<F: Avx2KTile, const R: usize, const C: usize>(w: [&[F::W]; R], a: &ActRows<'_, BlockQ8K>, c0: usize) -> [[f32; C]; R] {
    let nb = a.nb;
    assert!(c0 + C <= a.n && w.iter().all(|r| r.len() >= nb) && a.blocks.len() >= a.n * nb);
    let mut acc = [[_mm256_setzero_ps(); C]; R];
    let mut acc_m = [[_mm_setzero_ps(); C]; R];
    // ggml: acc = fma(y.d * x.d, float(ints), acc); acc_m = fma(-y.d * x.dmin, float(mins), acc_m)
    // (Q4_K) or summs = fma(-y.d * x.dmin, float(total of mins), summs) (Q5_K: acc_m lane 0)
    let step = |acc: &mut __m256, acc_m: &mut __m128, p: &F::Prep, (dw, mw): (f32, f32), ab: &BlockQ8K| {
        let da = ab.scale();
        // SAFETY (ints, min_ints): AVX2 by this function's contract.
        *acc = _mm256_fmadd_ps(_mm256_set1_ps(da * dw), _mm256_cvtepi32_ps(unsafe { F::ints(p, ab) }), *acc);
        match F::MINS {
            Mins::None => {}
            Mins::Lanes => *acc_m = _mm_fmadd_ps(_mm_set1_ps(-da * mw), _mm_cvtepi32_ps(unsafe { F::min_ints(p, ab) }), *acc_m),
            Mins::Scalar => {
                // the four lanes' integer total is exact (below 2^24), so any order of the sum
                // SAFETY: AVX2 by this function's contract.
                let m = unsafe { F::min_ints(p, ab) };
                let m = _mm_add_epi32(m, _mm_unpackhi_epi64(m, m));
                let m = _mm_add_epi32(m, _mm_shuffle_epi32::<0b01>(m));
                *acc_m = _mm_fmadd_ss(_mm_set_ss(-da * mw), _mm_cvtepi32_ps(m), *acc_m);
            }
        }
    };
    for b in 0..nb {
        if C == 1 {
            // one column (decoding): each super-block unpacked and used at once, in registers
            let ab = &a.blocks[c0 * nb + b];
            for r in 0..R {
                // SAFETY: AVX2 by this function's contract.
                let p = unsafe { F::prep(&w[r][b]) };
                step(&mut acc[r][0], &mut acc_m[r][0], &p, F::scales(&w[r][b]), ab);
            }
            continue;
        }
        // SAFETY (prep, ints, min_ints): AVX2 by this function's contract.
        let prep: [F::Prep; R] = std::array::from_fn(|r| unsafe { F::prep(&w[r][b]) });
        let sc: [(f32, f32); R] = std::array::from_fn(|r| F::scales(&w[r][b]));
        for c in 0..C {
            let ab = &a.blocks[(c0 + c) * nb + b];
            for r in 0..R {
                step(&mut acc[r][c], &mut acc_m[r][c], &prep[r], sc[r], ab);
            }
        }
    }
    let mut out = [[0f32; C]; R];
    for r in 0..R {
        for c in 0..C {
            out[r][c] = hsum_ps(acc[r][c]);
            let m = acc_m[r][c];
            match F::MINS {
                Mins::None => {}
                Mins::Lanes => {
                    let m = _mm_add_ps(m, _mm_movehl_ps(m, m));
                    let m = _mm_add_ss(m, _mm_movehdup_ps(m));
                    out[r][c] += _mm_cvtss_f32(m);
                }
                Mins::Scalar => out[r][c] += _mm_cvtss_f32(m),
            }
        }
    }
    out
}

/// ggml's `vec_dot` for one K-quant row pair (`R = C = 1`): the reference the tests hold the
/// tiles to.
#[cfg(test)]
///
/// # Safety
/// AVX2, FMA and F16C must be available.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn k_dot<F: Avx2KTile>(w: &[F::W], a: &[BlockQ8K]) -> f32 {
    let rows = ActRows { blocks: a, d: &[], s: &[], nb: a.len(), n: 1 };
    // SAFETY: same requirements as this function.
    unsafe { k_tile::<F, 1, 1>([w], &rows, 0)[0][0] }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu_features::{available_levels, SimdLevel};
    use crate::quant::test_util::Lcg;
    use crate::quant::{q4_k, q5_k, q6_k, q8_k};

    /// ggml's AVX2 `vec_dot` written out in scalar code from each super-block's exact lane
    /// integers (computed by each test from the format's definition):
    /// `acc[m] = fma(y.d * x.d, lane[m], acc[m])`, Q4_K's four minimum lanes likewise (or
    /// Q5_K's one scalar, `summs = fma(-y.d * x.dmin, total, summs)`, when `scalar_mins`), then
    /// ggml's horizontal sums.
    fn model(lanes: &[([i32; 8], [i32; 4], f32, f32)], scalar_mins: bool) -> f32 {
        let mut acc = [0f32; 8];
        let mut acc_m = [0f32; 4];
        let mut summs = 0f32;
        for &(ints, mins, d, dmin) in lanes {
            for m in 0..8 {
                acc[m] = d.mul_add(ints[m] as f32, acc[m]);
            }
            if scalar_mins {
                summs = dmin.mul_add(mins.iter().sum::<i32>() as f32, summs);
            } else {
                for m in 0..4 {
                    acc_m[m] = dmin.mul_add(mins[m] as f32, acc_m[m]);
                }
            }
        }
        let s4: [f32; 4] = std::array::from_fn(|i| acc[i + 4] + acc[i]);
        let hs = (s4[0] + s4[2]) + (s4[1] + s4[3]);
        if scalar_mins {
            hs + summs
        } else {
            hs + ((acc_m[0] + acc_m[2]) + (acc_m[1] + acc_m[3]))
        }
    }

    fn acts(rng: &mut Lcg, nb: usize) -> Vec<BlockQ8K> {
        let x: Vec<f32> = (0..nb * q8_k::QK_K).map(|i| if i % 97 == 0 { 30.0 } else { rng.next_gauss() }).collect();
        let mut a = vec![BlockQ8K::default(); nb];
        q8_k::quantize_row(&x, &mut a);
        a
    }

    /// Before 2026 the offset is taken out per byte pair, so lane `m` holds exactly the products
    /// `scale * (q - 32) * q8` of its elements.
    #[test]
    fn q6_k_per_pair_matches_ggml_avx2_model() {
        if !available_levels().contains(&SimdLevel::Avx2) {
            return;
        }
        let mut rng = Lcg::new(60);
        for nb in [1usize, 2, 3, 8] {
            let w = q6_k::random_blocks(&mut rng, nb, 1.0);
            let a = acts(&mut rng, nb);
            let lanes: Vec<_> = w
                .iter()
                .zip(&a)
                .map(|(x, y)| {
                    let q = q6_k::quants(x);
                    let mut ints = [0i32; 8];
                    for e in 0..256 {
                        ints[(e % 32) / 4] += x.scales[e / 16] as i32 * (q[e] as i32 - 32) * y.qs[e] as i32;
                    }
                    (ints, [0; 4], y.scale() * fp16_to_fp32(x.d), 0.0)
                })
                .collect();
            // SAFETY: AVX2 was detected.
            let got = unsafe { k_dot::<Q6KPerPair>(&w, &a) };
            assert_eq!(got.to_bits(), model(&lanes, false).to_bits(), "nb={nb}");
        }
    }

    #[test]
    fn q6_k_matches_ggml_avx2_model() {
        if !available_levels().contains(&SimdLevel::Avx2) {
            return;
        }
        let mut rng = Lcg::new(61);
        for nb in [1usize, 2, 3, 8] {
            let w = q6_k::random_blocks(&mut rng, nb, 1.0);
            let a = acts(&mut rng, nb);
            let lanes: Vec<_> = w
                .iter()
                .zip(&a)
                .map(|(x, y)| {
                    let q = q6_k::quants(x);
                    // the unsigned quants' products per lane, less 32 * scale * bsum of the
                    // sub-blocks 2m and 2m + 1 (how ggml splits the offset over the lanes)
                    let mut ints = [0i32; 8];
                    for e in 0..256 {
                        ints[(e % 32) / 4] += x.scales[e / 16] as i32 * q[e] as i32 * y.qs[e] as i32;
                    }
                    for m in 0..8 {
                        ints[m] -= 32 * (0..2).map(|h| x.scales[2 * m + h] as i32 * y.bsums[2 * m + h] as i32).sum::<i32>();
                    }
                    (ints, [0; 4], y.scale() * fp16_to_fp32(x.d), 0.0)
                })
                .collect();
            // SAFETY: AVX2 was detected.
            let got = unsafe { k_dot::<Q6KPerSubblock>(&w, &a) };
            assert_eq!(got.to_bits(), model(&lanes, false).to_bits(), "nb={nb}");
        }
    }

    /// Q4_K / Q5_K lanes from the format's definition: the scaled quant products per lane and
    /// the minimums times the pairs of 16-value sums, lane `m` taking sub-blocks `2m`, `2m + 1`.
    fn scale_min_lanes<B: q4_k::ScaleMinBlock>(x: &B, y: &BlockQ8K) -> ([i32; 8], [i32; 4], f32, f32) {
        let q = x.quants();
        let mut ints = [0i32; 8];
        for e in 0..256 {
            ints[(e % 32) / 4] += q4_k::scale_min(e / 32, x.scales()).0 as i32 * q[e] as i32 * y.qs[e] as i32;
        }
        let mins: [i32; 4] = std::array::from_fn(|m| {
            (0..2)
                .map(|h| {
                    let s = 2 * m + h;
                    q4_k::scale_min(s, x.scales()).1 as i32 * (y.bsums[2 * s] as i32 + y.bsums[2 * s + 1] as i32)
                })
                .sum()
        });
        (ints, mins, y.scale() * fp16_to_fp32(x.d()), -y.scale() * fp16_to_fp32(x.dmin()))
    }

    /// A Q4_K-framed format against the model: `scalar_mins` is Q5_K's fold (the minimums into one
    /// fused scalar) where Q4_K keeps them in four lanes.
    fn check_scale_min<F>(seed: u64, random: fn(&mut Lcg, usize, f32) -> Vec<F::W>, scalar_mins: bool)
    where
        F: Avx2KTile,
        F::W: q4_k::ScaleMinBlock,
    {
        if !available_levels().contains(&SimdLevel::Avx2) {
            return;
        }
        let mut rng = Lcg::new(seed);
        for nb in [1usize, 2, 3, 8] {
            let w = random(&mut rng, nb, 1.0);
            let a = acts(&mut rng, nb);
            let lanes: Vec<_> = w.iter().zip(&a).map(|(x, y)| scale_min_lanes(x, y)).collect();
            // SAFETY: AVX2 was detected.
            let got = unsafe { k_dot::<F>(&w, &a) };
            assert_eq!(got.to_bits(), model(&lanes, scalar_mins).to_bits(), "nb={nb}");
        }
    }

    #[test]
    fn q4_k_matches_ggml_avx2_model() {
        check_scale_min::<Q4K>(62, q4_k::random_blocks, false);
    }

    /// Q5_K: Q4_K's lanes over 5-bit quants, the minimums to one fused scalar.
    #[test]
    fn q5_k_matches_ggml_avx2_model() {
        check_scale_min::<Q5K>(63, q5_k::random_blocks, true);
    }
}
