//! ggml's `vec_dot` of one weight row and one activation row on an explicit level: the
//! `R = C = 1` tile of that level's kernels, which is what MUL_MAT computes for every output.
//! (`quant::Format::vec_dot_portable` is the portable reference.)

use crate::cpu_features::{clamp_level, SimdLevel};
#[allow(unused_imports)] // the portable-only build reads Format
use crate::quant::Format;

/// A block format with a tile kernel on this machine's SIMD levels.
#[cfg(target_arch = "x86_64")]
pub trait TileFormat: super::avx2::quant::Avx2Tile {}
#[cfg(target_arch = "x86_64")]
impl<F: super::avx2::quant::Avx2Tile> TileFormat for F {}
/// A block format with a tile kernel on this machine's SIMD levels.
#[cfg(target_arch = "aarch64")]
pub trait TileFormat: super::neon::quant::NeonTile {}
#[cfg(target_arch = "aarch64")]
impl<F: super::neon::quant::NeonTile> TileFormat for F {}
/// A block format with a tile kernel on this machine's SIMD levels.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub trait TileFormat: Format {}
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
impl<F: Format> TileFormat for F {}

/// Dot product of weight blocks `x` with partner-format activation blocks `y` (equal counts)
/// with `level`'s kernel (clamped to what the CPU supports).
pub fn vec_dot_at<F: TileFormat>(level: SimdLevel, x: &[F::W], y: &[F::A]) -> f32 {
    assert_eq!(x.len(), y.len(), "vec_dot: block count mismatch");
    match clamp_level(level) {
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx2 | SimdLevel::Avx512 => {
            let (d, s): (Vec<f32>, Vec<f32>) = y.iter().map(F::act_scale_sum).unzip();
            // SAFETY: clamp_level only returns these levels where AVX2/FMA/F16C were detected.
            unsafe { avx2_dot::<F>(x, y, &d, &s) }
        }
        #[cfg(target_arch = "aarch64")]
        SimdLevel::Neon => {
            let (d, s): (Vec<f32>, Vec<f32>) = y.iter().map(F::act_scale_sum).unzip();
            super::neon::quant::quant_dot::<F>(x, y, &d, &s)
        }
        _ => F::vec_dot_portable(x, y),
    }
}

/// # Safety
/// The CPU has AVX2, FMA and F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn avx2_dot<F: TileFormat>(x: &[F::W], y: &[F::A], d: &[f32], s: &[f32]) -> f32 {
    // SAFETY: features by this function's contract; quant_dot checks the lengths.
    unsafe { super::avx2::quant::quant_dot::<F>(x, y, d, s) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu_features::available_levels;
    use crate::quant::f16::{fp16_to_fp32, fp32_to_fp16};
    use crate::quant::test_util::Lcg;
    use crate::quant::{q4_0, q4_1, q8_0, q8_1, BlockQ4_0, BlockQ4_1, BlockQ8_0, BlockQ8_1, Q4_0, Q4_1, Q8_0};

    #[test]
    fn q4_0_dot_simd_vs_portable() {
        let mut rng = Lcg::new(5);
        for &nb in &[1usize, 2, 3, 18, 48, 1536] {
            let w: Vec<f32> = (0..nb * 32).map(|_| rng.next_gauss()).collect();
            let a: Vec<f32> = (0..nb * 32).map(|_| rng.next_gauss()).collect();
            let mut bw = vec![BlockQ4_0::default(); nb];
            let mut ba = vec![BlockQ8_0::default(); nb];
            q4_0::quantize_row(&w, &mut bw);
            q8_0::quantize_row(&a, &mut ba);
            // Exact value of what both kernels approximate, from the exact dequantized products.
            let mut wd = vec![0f32; nb * 32];
            let mut ad = vec![0f32; nb * 32];
            q4_0::dequantize_row(&bw, &mut wd);
            q8_0::dequantize_row(&ba, &mut ad);
            let exact: f64 = wd.iter().zip(&ad).map(|(&p, &q)| p as f64 * q as f64).sum();
            let p = vec_dot_at::<Q4_0>(SimdLevel::Portable, &bw, &ba);
            for level in available_levels() {
                let s = vec_dot_at::<Q4_0>(level, &bw, &ba);
                let mag: f64 = wd.iter().zip(&ad).map(|(&p, &q)| (p as f64 * q as f64).abs()).sum();
                // Only float summation order differs: bounded by a few ulps of the magnitude sum.
                assert!((s as f64 - exact).abs() <= mag * 1e-6 + 1e-6, "{level:?} nb={nb}");
                assert!((s as f64 - p as f64).abs() <= mag * 2e-6 + 1e-6, "{level:?} nb={nb}");
            }
        }
    }

    /// With unit scales every float operation is on small integers, hence exact: all levels must
    /// return the identical value, which pins the integer part of the SIMD kernels exactly.
    #[test]
    fn q4_0_dot_exact_with_unit_scales() {
        let mut rng = Lcg::new(9);
        for &nb in &[1usize, 5, 64] {
            let x: Vec<BlockQ4_0> = (0..nb)
                .map(|_| BlockQ4_0 { d: 0x3C00, qs: std::array::from_fn(|_| rng.next_u32() as u8) })
                .collect();
            let y: Vec<BlockQ8_0> = (0..nb)
                .map(|_| BlockQ8_0 {
                    d: 0x3C00,
                    qs: std::array::from_fn(|_| ((rng.next_u32() % 255) as i32 - 127) as i8),
                })
                .collect();
            let mut want = 0i64;
            for (bx, by) in x.iter().zip(&y) {
                for j in 0..16 {
                    want += ((bx.qs[j] & 15) as i64 - 8) * by.qs[j] as i64;
                    want += ((bx.qs[j] >> 4) as i64 - 8) * by.qs[j + 16] as i64;
                }
            }
            for level in available_levels() {
                assert_eq!(vec_dot_at::<Q4_0>(level, &x, &y), want as f32, "{level:?}");
            }
        }
    }

    #[test]
    fn q4_1_dot_simd_vs_portable() {
        let mut rng = Lcg::new(6);
        for &nb in &[1usize, 2, 3, 18, 48, 1536] {
            let w: Vec<f32> = (0..nb * 32).map(|_| rng.next_gauss() + 0.3).collect();
            let a: Vec<f32> = (0..nb * 32).map(|_| rng.next_gauss()).collect();
            let mut bw = vec![BlockQ4_1::default(); nb];
            let mut ba = vec![BlockQ8_1::default(); nb];
            q4_1::quantize_row(&w, &mut bw);
            q8_1::quantize_row(&a, &mut ba);
            let p = vec_dot_at::<Q4_1>(SimdLevel::Portable, &bw, &ba) as f64;
            // Scale for the tolerance: magnitude of the terms both kernels add up.
            let mag: f64 = bw
                .iter()
                .zip(&ba)
                .map(|(x, y)| {
                    let dd = (fp16_to_fp32(x.d) * fp16_to_fp32(y.d)).abs() as f64;
                    let ms = (fp16_to_fp32(x.m) * fp16_to_fp32(y.s)).abs() as f64;
                    dd * 15.0 * 127.0 * 32.0 + ms
                })
                .sum();
            for level in available_levels() {
                let s = vec_dot_at::<Q4_1>(level, &bw, &ba) as f64;
                assert!((s - p).abs() <= mag * 1e-6, "{level:?} nb={nb}: {s} vs {p}");
            }
        }
    }

    /// Unit scales and small integer minimum/sums: every float op exact, so all levels agree.
    #[test]
    fn q4_1_dot_exact_with_unit_scales() {
        let mut rng = Lcg::new(10);
        for &nb in &[1usize, 5, 64] {
            let x: Vec<BlockQ4_1> = (0..nb)
                .map(|_| BlockQ4_1 {
                    d: 0x3C00,
                    m: fp32_to_fp16(-2.0),
                    qs: std::array::from_fn(|_| rng.next_u32() as u8),
                })
                .collect();
            let y: Vec<BlockQ8_1> = (0..nb)
                .map(|_| {
                    let qs: [i8; 32] = std::array::from_fn(|_| ((rng.next_u32() % 255) as i32 - 127) as i8);
                    let s: i32 = qs.iter().map(|&q| q as i32).sum();
                    BlockQ8_1 { d: 0x3C00, s: fp32_to_fp16(s as f32), qs }
                })
                .collect();
            let mut want = 0i64;
            for (bx, by) in x.iter().zip(&y) {
                for j in 0..16 {
                    want += (bx.qs[j] & 15) as i64 * by.qs[j] as i64;
                    want += (bx.qs[j] >> 4) as i64 * by.qs[j + 16] as i64;
                }
                want += -2 * fp16_to_fp32(by.s) as i64;
            }
            for level in available_levels() {
                assert_eq!(vec_dot_at::<Q4_1>(level, &x, &y), want as f32, "{level:?}");
            }
        }
    }

    #[test]
    fn q8_0_dot_simd_vs_portable() {
        let mut rng = Lcg::new(12);
        for &nb in &[1usize, 2, 3, 18, 48, 1536] {
            let w: Vec<f32> = (0..nb * 32).map(|_| rng.next_gauss()).collect();
            let a: Vec<f32> = (0..nb * 32).map(|_| rng.next_gauss()).collect();
            let mut bw = vec![BlockQ8_0::default(); nb];
            let mut ba = vec![BlockQ8_0::default(); nb];
            q8_0::quantize_row(&w, &mut bw);
            q8_0::quantize_row(&a, &mut ba);
            let mut wd = vec![0f32; nb * 32];
            let mut ad = vec![0f32; nb * 32];
            q8_0::dequantize_row(&bw, &mut wd);
            q8_0::dequantize_row(&ba, &mut ad);
            let exact: f64 = wd.iter().zip(&ad).map(|(&p, &q)| p as f64 * q as f64).sum();
            let mag: f64 = wd.iter().zip(&ad).map(|(&p, &q)| (p as f64 * q as f64).abs()).sum();
            for level in available_levels() {
                let s = vec_dot_at::<Q8_0>(level, &bw, &ba) as f64;
                assert!((s - exact).abs() <= mag * 1e-6 + 1e-6, "{level:?} nb={nb}: {s} vs {exact}");
            }
        }
    }

    /// Unit scales: all float ops exact, so every level returns the same value. Weights include
    /// -128 (legal in a weight block).
    #[test]
    fn q8_0_dot_exact_with_unit_scales() {
        let mut rng = Lcg::new(13);
        for &nb in &[1usize, 5, 64] {
            let x: Vec<BlockQ8_0> = (0..nb)
                .map(|_| BlockQ8_0 { d: 0x3C00, qs: std::array::from_fn(|_| rng.next_u32() as i8) })
                .collect();
            let y: Vec<BlockQ8_0> = (0..nb)
                .map(|_| BlockQ8_0 {
                    d: 0x3C00,
                    qs: std::array::from_fn(|_| ((rng.next_u32() % 255) as i32 - 127) as i8),
                })
                .collect();
            let want: i64 = x
                .iter()
                .zip(&y)
                .flat_map(|(a, b)| a.qs.iter().zip(&b.qs).map(|(&p, &q)| p as i64 * q as i64))
                .sum();
            for level in available_levels() {
                assert_eq!(vec_dot_at::<Q8_0>(level, &x, &y), want as f32, "{level:?}");
            }
        }
    }
}
