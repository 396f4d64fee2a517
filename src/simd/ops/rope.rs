//! ROPE (normal and NeoX modes) with YaRN scaling, as ggml computes it: a per-position table of
//! cos/sin, then rotation of dimension pairs; dimensions past `n_dims` are copied.

use super::{f32_rows, for_rows, param_f32, Raw, Session};
use crate::simd::cpu_features::simd_level;
use crate::simd::op::Node;
use crate::simd::view::{alias, with_row, Alias, Detached, F32, I32};

/// Normal and NeoX modes over F32 rows of an even `n_dims`, I32 positions, optional F32 frequency
/// factors.
pub fn supports(n: &Node) -> bool {
    let (d, Some(a)) = (n.dst, n.src[0]) else { return false };
    let (n_dims, mode) = (n.params[1], n.params[2]);
    f32_rows(&a) && f32_rows(&d) && (mode == 0 || mode == MODE_NEOX)
        && n_dims > 0 && n_dims as usize <= a.ne[0] && n_dims % 2 == 0 && a.ne[3] == 1
        && n.src[1].is_some_and(|p| p.ty == I32 && p.ne[0] >= a.ne[2])
        && n.src[2].is_none_or(|f| f.ty == F32)
        && !(n.order.rope_rotate_pairs && mode == 0 && !rotate_pairs_all_fused(n_dims as usize / 2))
}

/// 2026's normal-mode `rotate_pairs` as GCC vectorizes it for AVX2 fuses every pair of a row of
/// an even number of pairs, at least [`ROTATE_PAIRS_MIN`]; an odd last pair and short rows take
/// rounded products (seen in the disassembly, not reproduced here): those ROPEs are declined.
fn rotate_pairs_all_fused(pairs: usize) -> bool {
    pairs.is_multiple_of(2) && pairs >= ROTATE_PAIRS_MIN
}
const ROTATE_PAIRS_MIN: usize = 8;

pub fn compute(s: &Session, n: &Node) -> bool {
    let mut p = RopeParams::from_op_params(&n.params);
    p.fused_in_place = n.order.rope_rotate_pairs;
    rope(s, n.dst, n.src(0), n.src(1), n.src[2], &p)
}

pub const MODE_NEOX: i32 = 2;

pub struct RopeParams {
    pub n_dims: usize,
    pub mode: i32,
    pub n_ctx_orig: i32,
    pub freq_base: f32,
    pub freq_scale: f32,
    pub ext_factor: f32,
    pub attn_factor: f32,
    pub beta_fast: f32,
    pub beta_slow: f32,
    /// The normal mode fuses in place too (2026's `rotate_pairs`, `CpuOrder::rope_rotate_pairs`).
    pub fused_in_place: bool,
}

impl RopeParams {
    pub fn from_op_params(p: &[i32]) -> RopeParams {
        RopeParams {
            n_dims: p[1].max(0) as usize,
            mode: p[2],
            n_ctx_orig: p[4],
            freq_base: param_f32(p, 5),
            freq_scale: param_f32(p, 6),
            ext_factor: param_f32(p, 7),
            attn_factor: param_f32(p, 8),
            beta_fast: param_f32(p, 9),
            beta_slow: param_f32(p, 10),
            fused_in_place: false,
        }
    }
}

fn corr_dim(n_dims: usize, n_ctx_orig: i32, n_rot: f32, base: f32) -> f32 {
    n_dims as f32 * (n_ctx_orig as f32 / (n_rot * 2.0 * std::f32::consts::PI)).ln() / (2.0 * base.ln())
}

fn corr_dims(p: &RopeParams) -> [f32; 2] {
    let start = corr_dim(p.n_dims, p.n_ctx_orig, p.beta_fast, p.freq_base).floor();
    let end = corr_dim(p.n_dims, p.n_ctx_orig, p.beta_slow, p.freq_base).ceil();
    [start.max(0.0), end.min(p.n_dims as f32 - 1.0)]
}

fn yarn(theta_extrap: f32, p: &RopeParams, corr: &[f32; 2], i0: usize) -> (f32, f32) {
    let theta_interp = p.freq_scale * theta_extrap;
    let mut theta = theta_interp;
    let mut mscale = p.attn_factor;
    if p.ext_factor != 0.0 {
        let y = ((i0 / 2) as f32 - corr[0]) / (corr[1] - corr[0]).max(0.001);
        let ramp = (1.0 - y.clamp(0.0, 1.0)) * p.ext_factor;
        theta = theta_interp * (1.0 - ramp) + theta_extrap * ramp;
        mscale *= 1.0 + 0.1 * (1.0 / p.freq_scale).ln();
    }
    (theta.cos() * mscale, theta.sin() * mscale)
}

/// Rotates the first `n_dims` values of one row by the position's table and copies the rest.
/// `contract`: the products are fused as a C compiler contracts them; without it each product is
/// rounded (ggml-cpu's normal-mode loop when dst is src, see [`rope`]).
#[inline(always)]
fn rotate(x: &[f32], d: &mut [f32], cache: &[f32], n_dims: usize, neox: bool, contract: bool) {
    rotate_from(x, d, cache, n_dims, neox, contract, 0)
}

/// [`rotate`] from pair index `i0` on (the vector kernels leave the last pairs to this loop).
#[inline(always)]
fn rotate_from(x: &[f32], d: &mut [f32], cache: &[f32], n_dims: usize, neox: bool, contract: bool, mut i0: usize) {
    while i0 < n_dims {
        let (c, sn) = (cache[i0], cache[i0 + 1]);
        let (j0, j1) = if neox { (i0 / 2, i0 / 2 + n_dims / 2) } else { (i0, i0 + 1) };
        let (x0, x1) = (x[j0], x[j1]);
        if contract {
            // the fused forms a C compiler contracts ggml's `x0*c - x1*s` / `x0*s + x1*c` to
            // when FMA is available (GCC and clang do by default): same bits as ggml-cpu
            d[j0] = x0.mul_add(c, -(x1 * sn));
            d[j1] = x0.mul_add(sn, x1 * c);
        } else {
            d[j0] = x0 * c - x1 * sn;
            d[j1] = x0 * sn + x1 * c;
        }
        i0 += 2;
    }
    d[n_dims..].copy_from_slice(&x[n_dims..]);
}

/// [`rotate`] compiled with FMA, so `mul_add` is one instruction instead of a call to libm's
/// `fmaf` (same result, several times faster).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn rotate_fma(x: &[f32], d: &mut [f32], cache: &[f32], n_dims: usize, neox: bool, contract: bool) {
    rotate(x, d, cache, n_dims, neox, contract)
}

/// [`rotate`] four pairs at a time with NEON: the same products, fused or not, per element (the
/// scalar loop ran 1.6x ggml-cpu's instructions for SmolLM2's ROPE under qemu, clang vectorizing
/// ggml's). `vld2q` splits interleaved pairs (normal mode and the cos/sin table) into two vectors.
#[cfg(target_arch = "aarch64")]
fn rotate_neon(x: &[f32], d: &mut [f32], cache: &[f32], n_dims: usize, neox: bool, contract: bool) {
    use std::arch::aarch64::*;
    let (x, d) = (&x[..d.len()], &mut *d);
    assert!(n_dims <= x.len() && n_dims <= cache.len() && n_dims.is_multiple_of(2));
    let half = n_dims / 2;
    let mut i0 = 0;
    // SAFETY (loads and stores): i0 + 8 <= n_dims, so the 8 values of the table and (normal
    // mode) of x / d at i0, and (NeoX) the 4 values at i0 / 2 and i0 / 2 + half (< n_dims) are in
    // bounds of slices holding at least n_dims (asserted). NEON is baseline.
    unsafe {
        let rot = |x0: float32x4_t, x1: float32x4_t, c: float32x4_t, sn: float32x4_t| {
            if contract {
                (vfmaq_f32(vnegq_f32(vmulq_f32(x1, sn)), x0, c), vfmaq_f32(vmulq_f32(x1, c), x0, sn))
            } else {
                (vsubq_f32(vmulq_f32(x0, c), vmulq_f32(x1, sn)), vaddq_f32(vmulq_f32(x0, sn), vmulq_f32(x1, c)))
            }
        };
        while i0 + 8 <= n_dims {
            let cs = vld2q_f32(cache.as_ptr().add(i0));
            if neox {
                let (j0, j1) = (i0 / 2, i0 / 2 + half);
                let (d0, d1) = rot(vld1q_f32(x.as_ptr().add(j0)), vld1q_f32(x.as_ptr().add(j1)), cs.0, cs.1);
                vst1q_f32(d.as_mut_ptr().add(j0), d0);
                vst1q_f32(d.as_mut_ptr().add(j1), d1);
            } else {
                let xv = vld2q_f32(x.as_ptr().add(i0));
                let (d0, d1) = rot(xv.0, xv.1, cs.0, cs.1);
                vst2q_f32(d.as_mut_ptr().add(i0), float32x4x2_t(d0, d1));
            }
            i0 += 8;
        }
    }
    rotate_from(x, d, cache, n_dims, neox, contract, i0)
}

/// `dst` and `a` are [head_dim, n_head, n_tokens, 1]; `pos` holds one I32 position per token.
pub fn rope(s: &Session, dst: Raw, a: Raw, pos: Raw, freq_factors: Option<Raw>, p: &RopeParams) -> bool {
    let corr = corr_dims(p);
    let theta_scale = p.freq_base.powf(-2.0 / p.n_dims as f32);
    let ne0 = a.ne[0];
    let neox = p.mode & MODE_NEOX != 0;
    // one task per (token, batch): the cos/sin table depends only on the position
    let n_tasks = a.ne[2] * a.ne[3];
    let (_a_copy, a) = Detached::unless_apart(&dst, a);
    let in_place = alias(&dst, &a) == Alias::Same;
    // ggml-cpu's x86 build (GCC) vectorizes the normal-mode pair loop with fused multiply-adds,
    // guarded by a runtime check that dst and src do not overlap; in place it runs the fallback
    // loop, which GCC compiles with rounded products (mul, mul, addsub). NeoX mode is fused both
    // ways. Matching that keeps in-place ROPE bit-identical to the host too.
    // The 2026 revision's rotate_pairs is vectorized in place as well (`fused_in_place`).
    let contract = !(in_place && !neox && !p.fused_in_place && cfg!(target_arch = "x86_64"));
    for_rows(s, n_tasks, dst.nelements(), |t| {
        let (i2, i3) = (t % a.ne[2], t / a.ne[2]);
        let position = pos.read_i32(i2, 0, 0, 0) as f32;
        let mut cache = vec![0f32; ne0 + 1];
        let mut theta = position;
        let mut i0 = 0;
        while i0 < ne0 {
            let ff = freq_factors.as_ref().map(|f| f.read_f32(i0 / 2, 0, 0, 0)).unwrap_or(1.0);
            let (c, sn) = yarn(theta / ff, p, &corr, i0);
            cache[i0] = c;
            cache[i0 + 1] = sn;
            theta *= theta_scale;
            i0 += 2;
        }
        let fused = crate::simd::cpu_features::is_x86(simd_level());
        for i1 in 0..a.ne[1] {
            with_row(&dst, &a, in_place, (i1, i2, i3), |x, d| {
                #[cfg(target_arch = "x86_64")]
                if fused {
                    // SAFETY: the Avx2 level is only reported when FMA was detected at runtime.
                    unsafe { rotate_fma(x, d, &cache, p.n_dims, neox, contract) };
                    return;
                }
                let _ = fused;
                #[cfg(target_arch = "aarch64")]
                if simd_level() == crate::simd::cpu_features::SimdLevel::Neon {
                    rotate_neon(x, d, &cache, p.n_dims, neox, contract);
                    return;
                }
                rotate(x, d, &cache, p.n_dims, neox, contract);
            });
        }
    })
}
