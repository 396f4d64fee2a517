//! MUL_MAT with weights that ggml-cpu repacked (`CPU_REPACK` buffers, ggml-cpu/repack.cpp), in
//! ggml-cpu's own arithmetic, so the 2026 hosts' Q4_K, Q4_0 and IQ4_NL weights need not stay on
//! ggml-cpu (every graph of such a model was split between the two backends around them).
//!
//! The layouts an AVX2 ggml-cpu without AVX-512 makes (`ggml_repack_get_optimal_repack_type`),
//! eight weight rows interleaved; all three go through `tensor_traits::forward_mul_mat`, which
//! quantizes each plane's activation rows in groups of four with `ggml_quantize_mat_t` (the
//! first `ne11 - ne11 % 4` rows, computed by the layout's `ggml_gemm_*`) and the rest with the
//! type's `from_float` (computed by its `ggml_gemv_*`). Which rows take which path depends only
//! on a row's index in its plane, not on the threads, so every output has one value whatever the
//! split.
//!
//! [`Repack::Q4Kx8`]: Q4_K as `block_q4_Kx8` (eight quant bytes at a time, their scales
//! regrouped per sub-block). The groups of four are quantized by `ggml_quantize_mat_q8_K_4x8`
//! (its own rule: `round(x * iscale)` with the sign taken from whether a positive value reaches
//! the maximum), the rest by ggml-cpu's `quantize_row_q8_K`; the first rows go through
//! `ggml_gemm_q4_K_8x8_q8_K`, the rest through `ggml_gemv_q4_K_8x8_q8_K`. Both form exact
//! integer sums (scale times quant dot per sub-block, minimum times activation sum), so only
//! their float steps need following:
//! - gemm: per super-block and pair of sub-blocks, `acc = fma(I, d_w * d_a, acc)` and
//!   `acc_min = fma(M, dmin_w * d_a, acc_min)` (four of each per super-block);
//! - gemv: the same once per super-block, over the eight sub-blocks' integers;
//! - the output is `acc - acc_min`.
//!
//! The x86 kernel (AVX2, and `vpdpbusd` on the AVX-512 level) is in `repacked/avx2.rs`. An
//! aarch64 ggml-cpu repacks Q4_K into the same struct (`q4_K_8x8` with i8mm, `q4_K_8x4` with
//! dotprod), quantizes the groups of four by another rule and takes other float steps:
//! [`Repack::Q4K8x8`] / [`Repack::Q4K8x4`] share this module's plumbing ([`compute_q4k`]) with
//! their own quantizer and kernels (`repacked/arm/q4k.rs`). [`Repack::Q4_0x8`] and [`Repack::IQ4NLx8`]
//! (32-value blocks with one scale, Q8_0 activations) are in `repacked/b32.rs`.

use crate::cpu_features::{simd_level, SimdLevel};
use crate::op::{Node, Repack};
use crate::pool::Session;
use crate::quant::q8_k::{BlockQ8K, QK_K};
use crate::quant::type_id;
use crate::view::F32;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

#[cfg(all(target_arch = "aarch64", feature = "arm-repack"))]
mod arm;
#[cfg(target_arch = "x86_64")]
mod avx2;
mod b32;

/// Bytes of one `block_q4_Kx8`: eight Q4_K super-blocks (8 x 144).
pub const Q4KX8_BYTES: usize = 8 * 144;
/// Activation rows one kernel call takes against a group of eight weight rows.
const TILE: usize = 16;

/// One activation row's super-block as the kernel reads it: the 256 quants, their scale and the
/// sums of each 32-value sub-block (ggml takes them from `bsums`, added in pairs).
#[derive(Clone, Copy)]
#[repr(C)]
pub(crate) struct ActBlock {
    pub qs: [i8; QK_K],
    pub d: f32,
    pub sums: [i16; 8],
}

impl ActBlock {
    const ZERO: ActBlock = ActBlock { qs: [0; QK_K], d: 0.0, sums: [0; 8] };

    /// A block of ggml-cpu's `quantize_row_q8_K` (its 16-value `bsums` added in pairs, as
    /// ggml's `_mm_hadd_epi16` does).
    fn from_q8k(b: &BlockQ8K) -> ActBlock {
        let sums = std::array::from_fn(|j| b.bsums[2 * j].wrapping_add(b.bsums[2 * j + 1]));
        ActBlock { qs: b.qs, d: f32::from_bits(b.d), sums }
    }
}

/// ggml's `_mm256_max_ps` / `_mm_max_ps` lane: the first operand when greater, else the second.
#[inline(always)]
fn maxps(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

/// One row of ggml-cpu's AVX2 `ggml_quantize_mat_q8_K_4x8` (its four rows never mix): per
/// super-block, the largest magnitude over eight lanes (lane `p` holds elements `8t + p` of every
/// 32) with ggml's `max` operand order and reduction; `iscale = -127 / max` when a positive value
/// reaches it (the lane flags ggml keeps), else `127 / max`; `d = 1 / iscale`; quants
/// `round_half_even(x * iscale)` (one rounded product, `_mm256_round_ps`), saturated as
/// `packs_epi32` / `packs_epi16` do. On x86 ggml's own instructions (`avx2::quantize_row_4x8`);
/// this scalar statement of the rule is what the tests hold them to.
pub(crate) fn quantize_row_4x8(x: &[f32], out: &mut [ActBlock]) {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu_features::is_x86(simd_level()) {
        // SAFETY: the AVX2 and AVX-512 levels have AVX2.
        return unsafe { avx2::quantize_row_4x8(x, out) };
    }
    quantize_row_4x8_portable(x, out)
}

/// [`quantize_row_4x8`] in scalar steps.
pub(crate) fn quantize_row_4x8_portable(x: &[f32], out: &mut [ActBlock]) {
    assert_eq!(x.len(), out.len() * QK_K, "quantize_row_4x8: length mismatch");
    for (xb, o) in x.chunks_exact(QK_K).zip(out.iter_mut()) {
        let mut max_abs = [0f32; 8];
        let mut positive = [false; 8];
        for sb in 0..8 {
            for p in 0..8 {
                let v: [f32; 4] = std::array::from_fn(|t| xb[32 * sb + 8 * t + p]);
                let a = v.map(|x| f32::from_bits(x.to_bits() & 0x7fff_ffff));
                let m = if sb == 0 {
                    maxps(maxps(maxps(a[0], a[1]), a[2]), a[3])
                } else {
                    maxps(maxps(maxps(maxps(max_abs[p], a[0]), a[1]), a[2]), a[3])
                };
                let kept = sb > 0 && positive[p] && max_abs[p] == m;
                positive[p] = kept || v.iter().any(|&x| m == x);
                max_abs[p] = m;
            }
        }
        let m4: [f32; 4] = std::array::from_fn(|p| maxps(max_abs[p + 4], max_abs[p]));
        let m2: [f32; 2] = std::array::from_fn(|p| maxps(m4[p], m4[p + 2]));
        let max = maxps(m2[0], m2[1]);
        let signed = (0..8).any(|p| positive[p] && max == max_abs[p]);
        let mut iscale = if max != 0.0 { 127.0 / max } else { 0.0 };
        if signed {
            iscale = if max != 0.0 { -127.0 / max } else { 0.0 };
        }
        o.d = if max != 0.0 { 1.0 / iscale } else { 0.0 };
        for (q, &v) in o.qs.iter_mut().zip(xb) {
            let r = (v * iscale).round_ties_even();
            // cvtps2dq: out of range or NaN gives i32::MIN
            let i = if r >= -2147483648.0 && r < 2147483648.0 { r as i32 } else { i32::MIN };
            *q = i.clamp(-128, 127) as i8;
        }
        for (s, g) in o.sums.iter_mut().zip(o.qs.chunks_exact(32)) {
            *s = g.iter().map(|&q| q as i16).sum();
        }
    }
}

/// Repacked products this module computes: a 2-D weight of whole groups of eight rows (rows a
/// multiple of 8, as ggml repacks only those) in one of the layouts above, against F32
/// activation rows, on an x86 CPU with the AVX2 kernels (and, for Q4_K, the host's Q8_K
/// quantizer for the rows outside groups of four). ggml-cpu's repacked MUL_MAT takes the same
/// shapes (3-D activations, no dim 3).
pub fn supports(n: &Node) -> bool {
    let (ty, qk, block_bytes) = match n.repack {
        Some(Repack::Q4Kx8) if n.q8k.is_some() => (type_id::Q4_K, QK_K, 144),
        Some(Repack::Q4_0x8) => (type_id::Q4_0, b32::QK, b32::BLOCK_BYTES),
        Some(Repack::IQ4NLx8) => (type_id::IQ4_NL, b32::QK, b32::BLOCK_BYTES),
        Some(Repack::Q4_0_4x4 | Repack::Q4_0_4x8) => return arm_supports(n, type_id::Q4_0, b32::QK, b32::BLOCK_BYTES, 4),
        Some(Repack::IQ4NLx4) => return arm_supports(n, type_id::IQ4_NL, b32::QK, b32::BLOCK_BYTES, 4),
        Some(Repack::Q8_0_4x4 | Repack::Q8_0_4x8) => return arm_supports(n, type_id::Q8_0, b32::QK, 34, 4),
        Some(Repack::Q4K8x8 | Repack::Q4K8x4) if n.q8k.is_some() => return arm_supports(n, type_id::Q4_K, QK_K, 144, 8),
        _ => return false,
    };
    cfg!(target_arch = "x86_64")
        && matches!(simd_level(), SimdLevel::Avx2 | SimdLevel::Avx512)
        && layout_fits(n, ty, qk, block_bytes, 8)
}

/// [`supports`] for the ARM layouts (Q4_0's, IQ4_NL's and Q8_0's `4x4` / `4x8`, groups of four
/// weight rows; Q4_K's `8x8`, groups of eight) of weights of type `ty` (plain blocks of `qk`
/// values in `block_bytes`), on an aarch64 CPU with `sdot`, in builds with the kernels'
/// `arm-repack` feature (the library's 2026 revisions: the default phone build drops the kernel).
fn arm_supports(n: &Node, ty: i32, qk: usize, block_bytes: usize, group_rows: usize) -> bool {
    cfg!(all(target_arch = "aarch64", feature = "arm-repack"))
        && simd_level() == SimdLevel::Neon
        && crate::cpu_features::has_dotprod()
        && layout_fits(n, ty, qk, block_bytes, group_rows)
}

/// The shapes every repacked layout takes: a 2-D weight of type `ty` in plain rows of blocks of
/// `qk` values and `block_bytes`, a whole number of groups of `group_rows` rows (ggml repacks only
/// those), against contiguous F32 activation rows (3-D, no dim 3), into F32.
fn layout_fits(n: &Node, ty: i32, qk: usize, block_bytes: usize, group_rows: usize) -> bool {
    let (d, Some(a), Some(b)) = (n.dst, n.src[0], n.src[1]) else { return false };
    a.ty == ty
        && a.ne[0] > 0
        && a.ne[0].is_multiple_of(qk)
        && a.ne[1] > 0
        && a.ne[1].is_multiple_of(group_rows)
        && a.ne[2] == 1
        && a.ne[3] == 1
        && a.nb[0] == block_bytes
        && a.nb[1] == block_bytes * (a.ne[0] / qk)
        && b.ty == F32
        && b.nb[0] == 4
        && b.nb[1].is_multiple_of(4)
        && b.nb[2].is_multiple_of(4)
        && b.ne[0] == a.ne[0]
        && b.ne[3] == 1
        && d.ty == F32
        && d.nb[0] == 4
        && d.nb[1].is_multiple_of(4)
        && d.nb[2].is_multiple_of(4)
        && d.ne == [a.ne[1], b.ne[1], b.ne[2], 1]
}

/// `dst = src0 . src1` for a node [`supports`] accepted. `false` when a worker panicked.
pub fn compute(s: &Session, n: &Node) -> bool {
    match n.repack {
        Some(Repack::Q4Kx8) => compute_q4k(s, n, quantize_row_4x8, group),
        #[cfg(all(target_arch = "aarch64", feature = "arm-repack"))]
        Some(r @ (Repack::Q4K8x8 | Repack::Q4K8x4)) => compute_q4k(s, n, arm::q4k::quantize_row_4x8, |w, rows, out| {
            // SAFETY: `supports` accepted the node only on a CPU with the dot product extension.
            unsafe { arm::q4k::group_of(r, w, rows, out) }
        }),
        Some(Repack::Q4_0x8) => b32::compute(s, n, &b32::Q4_0_VALUES),
        Some(Repack::IQ4NLx8) => b32::compute(s, n, &crate::quant::iq4_nl::KVALUES),
        #[cfg(all(target_arch = "aarch64", feature = "arm-repack"))]
        Some(Repack::Q4_0_4x4) => arm::compute(s, n, arm::Quants::Q4_0, arm::Interleave::Four),
        #[cfg(all(target_arch = "aarch64", feature = "arm-repack"))]
        Some(Repack::Q4_0_4x8) => arm::compute(s, n, arm::Quants::Q4_0, arm::Interleave::Eight),
        #[cfg(all(target_arch = "aarch64", feature = "arm-repack"))]
        Some(Repack::IQ4NLx4) => arm::compute(s, n, arm::Quants::IQ4NL, arm::Interleave::Four),
        #[cfg(all(target_arch = "aarch64", feature = "arm-repack"))]
        Some(Repack::Q8_0_4x4) => arm::compute(s, n, arm::Quants::Q8_0, arm::Interleave::Four),
        #[cfg(all(target_arch = "aarch64", feature = "arm-repack"))]
        Some(Repack::Q8_0_4x8) => arm::compute(s, n, arm::Quants::Q8_0, arm::Interleave::Eight),
        _ => false,
    }
}

/// Quantizes every activation row (`planes * rows` of them, `nb` blocks each) into `acts` with
/// `quantize(x, j, out)` (`j`: the row's index in its plane, which picks ggml's quantizer), in
/// parallel. `false` when a worker panicked.
fn quantize_rows<A: Send>(s: &Session, b: &crate::view::Raw, acts: &mut [A], nb: usize, quantize: impl Fn(&[f32], usize, &mut [A]) + Sync) -> bool {
    let (k, rows, planes) = (b.ne[0], b.ne[1], b.ne[2]);
    let slots: Vec<Mutex<&mut [A]>> = acts.chunks_exact_mut(nb).map(Mutex::new).collect();
    super::super::for_rows(s, planes * rows, planes * rows * k, |r| {
        let (p, j) = (r / rows, r % rows);
        quantize(b.f32_at(b.offset(0, j, p, 0), k), j, &mut slots[r].lock());
    })
}

/// The groups of `G` weight rows (8 on x86, 4 in the ARM layouts; each `group_bytes` long)
/// against every activation row, in chunks of whole groups per plane handed out to the threads:
/// `row(p, j)` is what the kernel takes of plane `p`'s row `j`, `group(w, tile, out)` computes
/// `out[r][c]` (weight row `c` of the group) for up to [`TILE`] rows. `false` when a worker
/// panicked.
fn for_groups<T: Sync, const G: usize>(s: &Session, n: &Node, group_bytes: usize, row: impl Fn(usize, usize) -> T + Sync, group: impl Fn(&[u8], &[T], &mut [[f32; G]]) + Sync) -> bool {
    let (d, a, b) = (n.dst, n.src(0), n.src(1));
    let (k, m, rows, planes) = (a.ne[0], a.ne[1], b.ne[1], b.ne[2]);
    let groups = m / G;
    let nth = s.n_threads();
    // chunks of whole groups, at least four per thread (ggml-cpu hands out chunks the same way)
    let per_chunk = groups.div_ceil(4 * nth).max(1);
    let chunks = groups.div_ceil(per_chunk);
    let next = AtomicUsize::new(0);
    let work = |_ith: usize, _nth: usize| loop {
        let c = next.fetch_add(1, Ordering::Relaxed);
        if c >= chunks * planes {
            break;
        }
        let (p, g0) = (c / chunks, (c % chunks) * per_chunk);
        let g1 = (g0 + per_chunk).min(groups);
        let mut out = [[0f32; G]; TILE];
        for t0 in (0..rows).step_by(TILE) {
            let t1 = (t0 + TILE).min(rows);
            let tile: Vec<T> = (t0..t1).map(|j| row(p, j)).collect();
            for g in g0..g1 {
                group(a.bytes_at(g * group_bytes, group_bytes), &tile, &mut out);
                for (j, o) in (t0..t1).zip(&out) {
                    d.f32_at_mut(d.offset(G * g, j, p, 0), G).copy_from_slice(o);
                }
            }
        }
    };
    if planes * m * rows * k < 64 * 1024 {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(0, 1))).is_ok()
    } else {
        s.run(&work)
    }
}

/// [`for_groups`] for one activation row per plane (decoding's products): each chunk's run of
/// groups goes to `run(p, w, out)` whole (`w`: the run's groups, `out`: their `G` outputs each),
/// so a kernel takes a whole run per call rather than a tile of rows per group, whose per-group
/// setup cost a one-row product more than its arithmetic. Same chunks as [`for_groups`]. `false`
/// when a worker panicked.
#[cfg(all(target_arch = "aarch64", feature = "arm-repack"))]
fn for_group_runs<const G: usize>(s: &Session, n: &Node, group_bytes: usize, run: impl Fn(usize, &[u8], &mut [f32]) + Sync) -> bool {
    let (d, a, b) = (n.dst, n.src(0), n.src(1));
    let (k, m, planes) = (a.ne[0], a.ne[1], b.ne[2]);
    debug_assert_eq!(b.ne[1], 1);
    let groups = m / G;
    let nth = s.n_threads();
    let per_chunk = groups.div_ceil(4 * nth).max(1);
    let chunks = groups.div_ceil(per_chunk);
    let next = AtomicUsize::new(0);
    let work = |_ith: usize, _nth: usize| loop {
        let c = next.fetch_add(1, Ordering::Relaxed);
        if c >= chunks * planes {
            break;
        }
        let (p, g0) = (c / chunks, (c % chunks) * per_chunk);
        let g1 = (g0 + per_chunk).min(groups);
        run(p, a.bytes_at(g0 * group_bytes, (g1 - g0) * group_bytes), d.f32_at_mut(d.offset(G * g0, 0, p, 0), G * (g1 - g0)));
    };
    if planes * m * k < 64 * 1024 {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(0, 1))).is_ok()
    } else {
        s.run(&work)
    }
}

/// [`compute`] for the Q4_K layouts ([`Repack::Q4Kx8`], [`Repack::Q4K8x8`]): `quantize4` is the
/// layout's quantizer of the rows in groups of four, `group` its kernel (see [`group`]).
fn compute_q4k(s: &Session, n: &Node, quantize4: fn(&[f32], &mut [ActBlock]), group: impl Fn(&[u8], &[(&[ActBlock], bool)], &mut [[f32; 8]]) + Sync) -> bool {
    let (a, b) = (n.src(0), n.src(1));
    let Some(q8k) = n.q8k else { return false };
    let (k, rows, planes) = (a.ne[0], b.ne[1], b.ne[2]);
    let nb = k / QK_K;
    if rows == 0 || planes == 0 {
        return true;
    }
    // ggml's `forward_mul_mat`: each plane's rows in groups of four by the 4x8 rule, the rest
    // by ggml-cpu's quantize_row_q8_K
    let gemm_rows = rows - rows % 4;
    let mut acts = vec![ActBlock::ZERO; planes * rows * nb];
    let ok = quantize_rows(s, &b, &mut acts, nb, |x, j, out| {
        if j < gemm_rows {
            quantize4(x, out);
        } else {
            let mut q = vec![BlockQ8K::default(); nb];
            q8k.quantize(x, &mut q);
            for (o, q) in out.iter_mut().zip(&q) {
                *o = ActBlock::from_q8k(q);
            }
        }
    });
    if !ok {
        return false;
    }
    let acts = &acts;
    #[cfg(all(target_arch = "aarch64", feature = "arm-repack"))]
    if let (Some(r @ (Repack::Q4K8x8 | Repack::Q4K8x4)), 1) = (n.repack, rows) {
        return for_group_runs::<8>(s, n, nb * Q4KX8_BYTES, |p, w, out| {
            // SAFETY: `supports` accepted the node only on a CPU with the dot product extension.
            unsafe { arm::q4k::gemv_of(r, w, &acts[p * nb..(p + 1) * nb], out) }
        });
    }
    for_groups(s, n, nb * Q4KX8_BYTES, |p, j| (&acts[(p * rows + j) * nb..(p * rows + j + 1) * nb], j < gemm_rows), |w, tile, out| group(w, tile, out))
}

/// One group of eight weight rows (`w`: its `block_q4_Kx8`s) against up to [`TILE`] activation
/// rows, each with its path (`true`: gemm's float steps); `out[r][c]` for weight row `c`.
fn group(w: &[u8], rows: &[(&[ActBlock], bool)], out: &mut [[f32; 8]]) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `supports` accepted the node only on the AVX2 / AVX-512 levels (AVX2, FMA and
        // F16C present); `w` holds `rows[i].0.len()` groups (checked by the kernel).
        unsafe { avx2::group(w, rows, out) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (w, rows, out);
        unreachable!("repacked products are declined off x86_64")
    }
}

#[cfg(test)]
mod tests;
