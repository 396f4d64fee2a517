//! ROPE (normal and NeoX modes) with YaRN scaling, as ggml computes it: a per-position table of
//! cos/sin, then rotation of dimension pairs; dimensions past `n_dims` are copied.

use super::{f32_rows, for_rows, param_f32, Raw, Session};
use std::sync::Arc;
use crate::cpu_features::simd_level;
use crate::op::Node;
use crate::view::{alias, with_row, Alias, Detached, F32, I32};

/// Normal and NeoX modes over F32 rows of an even `n_dims`, I32 positions, optional F32 frequency
/// factors.
pub fn supports(n: &Node) -> bool {
    let (d, Some(a)) = (n.dst, n.src[0]) else { return false };
    let (n_dims, mode) = (n.params[1], n.params[2]);
    f32_rows(&a) && f32_rows(&d) && (mode == 0 || mode == MODE_NEOX)
        && n_dims > 0 && n_dims as usize <= a.ne[0] && n_dims % 2 == 0 && a.ne[3] == 1
        && n.src[1].is_some_and(|p| p.ty == I32 && p.ne[0] >= a.ne[2])
        && n.src[2].is_none_or(|f| f.ty == F32 && f.ne[0] >= n_dims.max(0) as usize / 2)
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

/// [`rotate`] eight values at a time with AVX2 and FMA: the same products, fused or not, per
/// element (the scalar loop, bounds-checked pair by pair, was ROPE's time once the table was
/// kept). Normal mode: `fmaddsub` of the row by the interleaved table, even lanes
/// `x0 * c - x1 * s` and odd lanes `x0 * s + x1 * c`, with `x1 * s` / `x1 * c` rounded first as
/// in the scalar fused forms; unfused, `addsub` of the two rounded products. NeoX: the table
/// split into cos and sin vectors by two shuffles.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn rotate_avx2(x: &[f32], d: &mut [f32], cache: &[f32], n_dims: usize, neox: bool, contract: bool) {
    use std::arch::x86_64::*;
    let (x, d) = (&x[..d.len()], &mut *d);
    assert!(n_dims <= x.len() && n_dims <= cache.len() && n_dims.is_multiple_of(2));
    let half = n_dims / 2;
    let mut i0 = 0;
    // SAFETY (loads and stores): normal mode reads and writes 8 values at i0 with i0 + 8 <=
    // n_dims; NeoX reads 16 table values at i0 (i0 + 16 <= n_dims) and 8 values at i0 / 2 and
    // i0 / 2 + half, both + 8 <= n_dims; all slices hold at least n_dims (asserted). AVX2/FMA by
    // this function's target features, enabled only after detection.
    unsafe {
        if neox {
            while i0 + 16 <= n_dims {
                let (lo, hi) = (_mm256_loadu_ps(cache.as_ptr().add(i0)), _mm256_loadu_ps(cache.as_ptr().add(i0 + 8)));
                // [c0 c1 c4 c5 | c2 c3 c6 c7] -> c0..c7 (and sin alike)
                let c = _mm256_castpd_ps(_mm256_permute4x64_pd::<0xD8>(_mm256_castps_pd(_mm256_shuffle_ps::<0x88>(lo, hi))));
                let sn = _mm256_castpd_ps(_mm256_permute4x64_pd::<0xD8>(_mm256_castps_pd(_mm256_shuffle_ps::<0xDD>(lo, hi))));
                let (j0, j1) = (i0 / 2, i0 / 2 + half);
                let (x0, x1) = (_mm256_loadu_ps(x.as_ptr().add(j0)), _mm256_loadu_ps(x.as_ptr().add(j1)));
                let (d0, d1) = if contract {
                    (_mm256_fmsub_ps(x0, c, _mm256_mul_ps(x1, sn)), _mm256_fmadd_ps(x0, sn, _mm256_mul_ps(x1, c)))
                } else {
                    (_mm256_sub_ps(_mm256_mul_ps(x0, c), _mm256_mul_ps(x1, sn)), _mm256_add_ps(_mm256_mul_ps(x0, sn), _mm256_mul_ps(x1, c)))
                };
                _mm256_storeu_ps(d.as_mut_ptr().add(j0), d0);
                _mm256_storeu_ps(d.as_mut_ptr().add(j1), d1);
                i0 += 16;
            }
        } else {
            while i0 + 8 <= n_dims {
                let xv = _mm256_loadu_ps(x.as_ptr().add(i0));
                let cs = _mm256_loadu_ps(cache.as_ptr().add(i0));
                let (x0, x1) = (_mm256_moveldup_ps(xv), _mm256_movehdup_ps(xv));
                // x1 * s in even lanes, x1 * c in odd lanes
                let t = _mm256_mul_ps(x1, _mm256_permute_ps::<0xB1>(cs));
                let out = if contract { _mm256_fmaddsub_ps(x0, cs, t) } else { _mm256_addsub_ps(_mm256_mul_ps(x0, cs), t) };
                _mm256_storeu_ps(d.as_mut_ptr().add(i0), out);
                i0 += 8;
            }
        }
    }
    rotate_from(x, d, cache, n_dims, neox, contract, i0)
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
    let contract = !in_place || neox || p.fused_in_place || !cfg!(target_arch = "x86_64");
    let Some(table) = table(s, p, ne0, &pos, freq_factors.as_ref(), a.ne[2]) else { return false };
    for_rows(s, n_tasks, dst.nelements(), |t| {
        let (i2, i3) = (t % a.ne[2], t / a.ne[2]);
        let cache = table.row(i2);
        let fused = crate::cpu_features::is_x86(simd_level());
        for i1 in 0..a.ne[1] {
            with_row(&dst, &a, in_place, (i1, i2, i3), |x, d| {
                #[cfg(target_arch = "x86_64")]
                if fused {
                    // SAFETY: the Avx2 level is only reported when FMA was detected at runtime.
                    unsafe { rotate_avx2(x, d, cache, p.n_dims, neox, contract) };
                    return;
                }
                let _ = fused;
                #[cfg(target_arch = "aarch64")]
                if simd_level() == crate::cpu_features::SimdLevel::Neon {
                    rotate_neon(x, d, cache, p.n_dims, neox, contract);
                    return;
                }
                rotate(x, d, cache, p.n_dims, neox, contract);
            });
        }
    })
}

/// The cos/sin values of every position of a ROPE node: `cache[i0]`, `cache[i0 + 1]` for each
/// rotated pair `i0 < n_dims` of a row, one row of `ne0` values per position, as ggml's `rope_cache_init` makes
/// them (libm's cos and sin of the YaRN angle, times its scale).
struct Table {
    key: TableKey,
    values: Vec<f32>,
}

impl Table {
    fn row(&self, i: usize) -> &[f32] {
        let ne0 = self.key.ne0;
        &self.values[i * ne0..(i + 1) * ne0]
    }
}

/// Everything a [`Table`] depends on: the parameters that set the angles and the scale (not
/// the mode, which only picks the rotated pairs), the row length, and the positions and
/// frequency factors themselves (a graph's position tensor keeps its address from one compute
/// to the next while its values change).
#[derive(PartialEq)]
struct TableKey {
    params: [u32; 8],
    ne0: usize,
    positions: Vec<i32>,
    freq_factors: Option<Vec<u32>>,
}

/// Tables of recent ROPE nodes. A model ropes Q and K of every layer with the same positions
/// and parameters (60 nodes per SmolLM2 graph), and each table is 32 libm cos and sin per
/// position: computed per node they were most of ROPE's time (ggml-cpu computes them per row).
/// A few entries, so that two models computing in one process do not evict each other; emptied
/// when a graph ends ([`forget_tables`]): the next graph's positions differ (the next token,
/// the next ubatch), and an app should not keep a long prompt's table after it.
static TABLES: parking_lot::Mutex<Vec<Arc<Table>>> = parking_lot::const_mutex(Vec::new());
const TABLES_KEPT: usize = 4;
/// Larger tables (contexts of hundreds of thousands of positions) are computed per node.
const TABLE_KEEP_BYTES: usize = 64 << 20;

/// Drops the kept tables (at the end of every graph; a graph computing at the same time on
/// another backend recomputes its table at its next ROPE node, with the same values).
pub fn forget_tables() {
    TABLES.lock().clear();
}

/// The table of `n_pos` positions read from `pos`, from [`TABLES`] when an earlier node made the
/// same one; `None` if computing it failed (a worker panicked).
fn table(s: &Session, p: &RopeParams, ne0: usize, pos: &Raw, freq_factors: Option<&Raw>, n_pos: usize) -> Option<Arc<Table>> {
    let key = TableKey {
        params: [p.n_dims as u32, p.n_ctx_orig as u32, p.freq_base.to_bits(), p.freq_scale.to_bits(), p.ext_factor.to_bits(), p.attn_factor.to_bits(), p.beta_fast.to_bits(), p.beta_slow.to_bits()],
        ne0,
        positions: (0..n_pos).map(|i2| pos.read_i32(i2, 0, 0, 0)).collect(),
        freq_factors: freq_factors.map(|f| (0..p.n_dims / 2).map(|i| f.read_f32(i, 0, 0, 0).to_bits()).collect()),
    };
    if let Some(t) = TABLES.lock().iter().find(|t| t.key == key) {
        return Some(t.clone());
    }
    let corr = corr_dims(p);
    let theta_scale = p.freq_base.powf(-2.0 / p.n_dims as f32);
    let mut values = vec![0f32; n_pos * ne0];
    let rows: Vec<parking_lot::Mutex<&mut [f32]>> = values.chunks_exact_mut(ne0.max(1)).map(parking_lot::Mutex::new).collect();
    let ok = for_rows(s, n_pos, n_pos * ne0 * 16, |i2| {
        let mut cache = rows[i2].lock();
        let mut theta = key.positions[i2] as f32;
        let mut i0 = 0;
        // only the rotated pairs: the rest of a row is copied
        while i0 < p.n_dims {
            let ff = key.freq_factors.as_ref().map_or(1.0, |f| f32::from_bits(f[i0 / 2]));
            let (c, sn) = yarn(theta / ff, p, &corr, i0);
            cache[i0] = c;
            cache[i0 + 1] = sn;
            theta *= theta_scale;
            i0 += 2;
        }
    });
    drop(rows);
    if !ok {
        return None;
    }
    let table = Arc::new(Table { key, values });
    if table.values.len() * 4 <= TABLE_KEEP_BYTES {
        let mut kept = TABLES.lock();
        if kept.len() >= TABLES_KEPT {
            kept.remove(0);
        }
        kept.push(table.clone());
    }
    Some(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::Pool;
    use crate::quant::test_util::bits;

    fn raw_f32(buf: &mut [f32], ne: [usize; 3]) -> Raw {
        Raw { data: buf.as_mut_ptr() as *mut u8, ne: [ne[0], ne[1], ne[2], 1], nb: [4, 4 * ne[0], 4 * ne[0] * ne[1], 4 * buf.len()], ty: F32 }
    }

    /// The vector rotations give the scalar loop's bits (which simd_ops.c and the hosts compare
    /// with ggml-cpu), for both modes, fused and unfused, with and without a scalar tail.
    #[test]
    fn vector_rotations_equal_the_scalar_loop() {
        for n_dims in [2, 6, 8, 10, 16, 18, 48, 64, 128] {
            let ne0 = n_dims + 3;
            let x: Vec<f32> = (0..ne0).map(|i| ((i * 53 % 97) as f32 - 48.0) / 7.0).collect();
            let cache: Vec<f32> = (0..n_dims).map(|i| ((i * 29 % 61) as f32 - 30.0) / 31.0).collect();
            for neox in [false, true] {
                for contract in [false, true] {
                    let mut want = vec![0f32; ne0];
                    rotate(&x, &mut want, &cache, n_dims, neox, contract);
                    let mut got = vec![0f32; ne0];
                    #[cfg(target_arch = "x86_64")]
                    if crate::cpu_features::is_x86(simd_level()) {
                        // SAFETY: the x86 SIMD levels are reported only with AVX2 and FMA.
                        unsafe { rotate_avx2(&x, &mut got, &cache, n_dims, neox, contract) };
                    } else {
                        rotate(&x, &mut got, &cache, n_dims, neox, contract);
                    }
                    #[cfg(target_arch = "aarch64")]
                    rotate_neon(&x, &mut got, &cache, n_dims, neox, contract);
                    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
                    rotate(&x, &mut got, &cache, n_dims, neox, contract);
                    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&got), bits(&want), "n_dims {n_dims} neox {neox} contract {contract}");
                }
            }
        }
    }

    /// A kept table is reused only for the same positions, parameters and frequency factors:
    /// the same position buffer with new values (the next ubatch), other parameters or other
    /// factors give what a fresh table gives, and the first inputs give their first output.
    #[test]
    fn kept_tables_follow_positions_parameters_and_factors() {
        let pool = Pool::new(2);
        let s = pool.session();
        let ne = [64, 3, 40];
        let x: Vec<f32> = (0..ne.iter().product::<usize>()).map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0).collect();
        let mut pos: Vec<i32> = (0..ne[2] as i32).collect();
        let mut ff: Vec<f32> = (0..32).map(|i| 1.0 + i as f32 / 8.0).collect();
        let params = |freq_base: f32| RopeParams { n_dims: 64, mode: MODE_NEOX, n_ctx_orig: 8192, freq_base, freq_scale: 1.0, ext_factor: 0.0, attn_factor: 1.0, beta_fast: 32.0, beta_slow: 1.0, fused_in_place: false };
        let run = |pos: &mut [i32], ff: Option<&mut [f32]>, p: &RopeParams, fresh: bool| -> Vec<u32> {
            if fresh {
                TABLES.lock().clear();
            }
            let mut a = x.clone();
            let mut d = vec![0f32; x.len()];
            let pr = Raw { data: pos.as_mut_ptr() as *mut u8, ne: [pos.len(), 1, 1, 1], nb: [4, 4 * pos.len(), 4 * pos.len(), 4 * pos.len()], ty: I32 };
            let fr = ff.map(|f| Raw { data: f.as_mut_ptr() as *mut u8, ne: [f.len(), 1, 1, 1], nb: [4, 4 * f.len(), 4 * f.len(), 4 * f.len()], ty: F32 });
            assert!(rope(&s, raw_f32(&mut d, ne), raw_f32(&mut a, ne), pr, fr, p));
            bits(&d)
        };
        let first = run(&mut pos, None, &params(10000.0), true);
        assert_eq!(run(&mut pos, None, &params(10000.0), false), first);
        for p in pos.iter_mut() {
            *p += 40;
        }
        let moved = run(&mut pos, None, &params(10000.0), false);
        assert_ne!(moved, first, "new positions must change the output");
        assert_eq!(moved, run(&mut pos, None, &params(10000.0), true));
        let based = run(&mut pos, None, &params(500000.0), false);
        assert_ne!(based, moved);
        assert_eq!(based, run(&mut pos, None, &params(500000.0), true));
        let factored = run(&mut pos, Some(&mut ff), &params(10000.0), false);
        assert_ne!(factored, moved);
        ff[5] = 3.0;
        let refactored = run(&mut pos, Some(&mut ff), &params(10000.0), false);
        assert_ne!(refactored, factored);
        assert_eq!(refactored, run(&mut pos, Some(&mut ff), &params(10000.0), true));
        for p in pos.iter_mut() {
            *p -= 40;
        }
        assert_eq!(run(&mut pos, None, &params(10000.0), false), first);
    }
}
