//! The AVX2 arithmetic of FLASH_ATTN_EXT, operation for operation as GCC compiles ggml-cpu's
//! `ops.cpp` / `vec.h` / `simd-gemm.h` with `-mavx2 -mfma -mf16c` in GNU mode (which contracts
//! `a*b + c` into FMAs where the source writes them in one expression: read from the build's
//! disassembly, noted at each place below).
//!
//! Everything here needs AVX2, FMA and F16C; the callers in `super` run only on those levels.

// Tiles index rows and columns with the same numbers as ggml's loops.
#![allow(clippy::needless_range_loop)]

use super::{Attn, KV_TILE, Q_TILE};
use crate::vexp::x86::v_expf;
use std::arch::x86_64::*;
use std::ops::Range;

/// Per-thread buffers of the one-row online softmax: Q rounded to F16 (ggml's `Q_q`) and the V
/// sum in F16 (`VKQ16`).
pub(super) struct RowBuf {
    qq: Vec<u16>,
    vkq: Vec<u16>,
}

impl RowBuf {
    pub(super) fn new(a: &Attn) -> RowBuf {
        RowBuf { qq: vec![0; a.dk], vkq: vec![0; a.dv] }
    }

    /// The V sum widened to f32 (ggml's `VKQ32[d] = FP16_TO_FP32(VKQ16[d])`, exact).
    pub(super) fn vkq32(&self) -> impl Iterator<Item = f32> + '_ {
        self.vkq.iter().map(|&h| f16_to_f32(h))
    }
}

#[inline]
fn f16_to_f32(h: u16) -> f32 {
    crate::quant::f16::fp16_to_fp32(h)
}

/// `_cvtss_sh(x, 0)`: round to nearest even, as ggml-cpu's `GGML_CPU_FP32_TO_FP16` on F16C.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn f32_to_f16(x: f32) -> u16 {
    _mm_extract_epi16::<0>(_mm_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm_set_ss(x))) as u16
}

/// Eight halves from `p`, widened.
///
/// # Safety
/// `p` points at 8 readable halves; AVX2/F16C.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn load8h(p: *const u16) -> __m256 {
    // SAFETY: 16 readable bytes by the contract; loadu has no alignment requirement.
    _mm256_cvtph_ps(unsafe { _mm_loadu_si128(p as *const __m128i) })
}

/// Eight floats rounded to halves (nearest even) and stored at `p`.
///
/// # Safety
/// `p` points at 8 writable halves; AVX2/F16C.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn store8h(p: *mut u16, x: __m256) {
    // SAFETY: 16 writable bytes by the contract; storeu has no alignment requirement.
    unsafe { _mm_storeu_si128(p as *mut __m128i, _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x)) }
}

/// `q_to_vec_dot` for F16 K: the query row rounded to halves.
#[target_feature(enable = "avx2,fma,f16c")]
fn round_row(q: &[f32], out: &mut [u16]) {
    let n = q.len().min(out.len());
    let full = n / 8 * 8;
    for i in (0..full).step_by(8) {
        // SAFETY: i + 8 <= n bounds both rows.
        unsafe { store8h(out.as_mut_ptr().add(i), _mm256_loadu_ps(q.as_ptr().add(i))) };
    }
    for i in full..n {
        out[i] = f32_to_f16(q[i]);
    }
}

/// ggml's `vec_dot_f16` of each of `R` K rows with the F16 query row `q` (AVX2: four 8-lane
/// accumulators over 32-element steps, reduced `((a0 + a2) + (a1 + a3))`, halves added, two
/// `hadd`s; the `n % 32` leftovers added in f64 one by one, then rounded to f32).
///
/// # Safety
/// AVX2/FMA/F16C; every `k[r]` holds `q.len()` halves.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dot_f16<const R: usize>(k: [&[u16]; R], q: &[u16]) -> [f32; R] {
    let n = q.len();
    debug_assert!(k.iter().all(|r| r.len() >= n));
    let np = n & !31;
    let mut acc = [[_mm256_setzero_ps(); R]; 4];
    let mut i = 0;
    while i < np {
        for j in 0..4 {
            // SAFETY: i + 8j + 8 <= np <= n, inside q and every k row.
            let qv = unsafe { load8h(q.as_ptr().add(i + 8 * j)) };
            for r in 0..R {
                // SAFETY: as above, inside k row r (at least n long, asserted).
                let kv = unsafe { load8h(k[r].as_ptr().add(i + 8 * j)) };
                acc[j][r] = _mm256_fmadd_ps(kv, qv, acc[j][r]);
            }
        }
        i += 32;
    }
    let mut out = [0f32; R];
    for r in 0..R {
        let x = _mm256_add_ps(_mm256_add_ps(acc[0][r], acc[2][r]), _mm256_add_ps(acc[1][r], acc[3][r]));
        let t0 = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps::<1>(x));
        let t1 = _mm_hadd_ps(t0, t0);
        let mut sum = _mm_cvtss_f32(_mm_hadd_ps(t1, t1)) as f64;
        for e in np..n {
            sum += (f16_to_f32(k[r][e]) * f16_to_f32(q[e])) as f64;
        }
        out[r] = sum as f32;
    }
    out
}

/// `ggml_vec_scale_f16`: `y = f16(f32(y) * v)` element by element (vector and scalar parts alike).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn scale_f16(y: &mut [u16], v: f32) {
    let n = y.len();
    let full = n / 8 * 8;
    let vv = _mm256_set1_ps(v);
    for i in (0..full).step_by(8) {
        // SAFETY: i + 8 <= n.
        unsafe {
            let p = y.as_mut_ptr().add(i);
            store8h(p, _mm256_mul_ps(load8h(p), vv));
        }
    }
    for i in full..n {
        y[i] = f32_to_f16(f16_to_f32(y[i]) * v);
    }
}

/// `ggml_vec_mad_f16`: `y = f16(fma(x, v, y))` element by element (the scalar leftovers
/// `y + x*v` are contracted to the same FMA by GCC).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn mad_f16(y: &mut [u16], x: &[u16], v: f32) {
    let n = y.len().min(x.len());
    let full = n / 8 * 8;
    let vv = _mm256_set1_ps(v);
    for i in (0..full).step_by(8) {
        // SAFETY: i + 8 <= n bounds both rows.
        unsafe {
            let p = y.as_mut_ptr().add(i);
            store8h(p, _mm256_fmadd_ps(load8h(x.as_ptr().add(i)), vv, load8h(p)));
        }
    }
    for i in full..n {
        y[i] = f32_to_f16(f16_to_f32(x[i]).mul_add(v, f16_to_f32(y[i])));
    }
}

/// `ggml_vec_scale_f32`: `y *= v` element by element.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn scale_f32(y: &mut [f32], v: f32) {
    let n = y.len();
    let full = n / 8 * 8;
    let vv = _mm256_set1_ps(v);
    for i in (0..full).step_by(8) {
        // SAFETY: i + 8 <= n.
        unsafe {
            let p = y.as_mut_ptr().add(i);
            _mm256_storeu_ps(p, _mm256_mul_ps(_mm256_loadu_ps(p), vv));
        }
    }
    for x in &mut y[full..] {
        *x *= v;
    }
}

/// `lm_ggml_compute_forward_flash_attn_ext_f16_one_chunk` for query row `idx` over keys `ic`
/// (F16 V): leaves the F16 V sum in `buf` and returns `(M, S)`.
///
/// Per unmasked key: `s = dot * scale`, `s += mv` (two roundings: the mask value is a
/// separate variable), then on a new maximum `M = s`, `ms = expf(Mold - M)` and `VKQ16 *= ms`,
/// else `vs = expf(s - M)`; `VKQ16 += v * vs`; `S = fma(S, ms, vs)` (GCC fuses `S*ms + vs`).
/// `expf` is libm's, which `f32::exp` calls too (the same function in the same process).
///
/// # Safety
/// AVX2/FMA/F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn one_row(a: &Attn, idx: (usize, usize, usize), ic: Range<usize>, buf: &mut RowBuf) -> (f32, f32) {
    round_row(a.q_row(idx), &mut buf.qq);
    buf.vkq.fill(0);
    let mask = a.mask_row(idx);
    let head = (idx.1, idx.2);
    let (k_head, v_head) = (a.k_head(head), a.v_head(head));
    let (mut m, mut sum) = (f32::NEG_INFINITY, 0f32);
    let qq = &buf.qq[..];
    let vkq = &mut buf.vkq[..];
    let mut c = ic.start;
    while c < ic.end {
        let nb = 8.min(ic.end - c);
        let mut mv = [0f32; 8];
        if let Some(mp) = mask {
            for j in 0..nb {
                mv[j] = f16_to_f32(mp[c + j]);
            }
            if mv[..nb].iter().all(|&x| x == f32::NEG_INFINITY) {
                c += nb;
                continue;
            }
        }
        let mut dots = [0f32; 8];
        if nb == 8 {
            let rows = std::array::from_fn(|j| k_head.row(c + j));
            // SAFETY: AVX2 by this function's contract; K rows hold dk = qq.len() halves.
            dots = unsafe { dot_f16::<8>(rows, qq) };
        } else {
            for j in 0..nb {
                if mv[j] != f32::NEG_INFINITY {
                    // SAFETY: as above.
                    dots[j] = unsafe { dot_f16::<1>([k_head.row(c + j)], qq) }[0];
                }
            }
        }
        for j in 0..nb {
            if mv[j] == f32::NEG_INFINITY {
                continue;
            }
            let mut s = dots[j] * a.scale;
            s += mv[j];
            let mold = m;
            let (mut ms, mut vs) = (1f32, 1f32);
            if s > m {
                m = s;
                ms = (mold - m).exp();
                scale_f16(vkq, ms);
            } else {
                vs = (s - m).exp();
            }
            mad_f16(vkq, v_head.row(c + j), vs);
            sum = sum.mul_add(ms, vs);
        }
        c += nb;
    }
    (m, sum)
}

/// The end of one_chunk's row: `VKQ32 = f32(VKQ16)`, times `S == 0 ? 0 : 1/S`, into `out`.
///
/// # Safety
/// AVX2/FMA/F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn finish_row(buf: &RowBuf, sum: f32, out: &mut [f32]) {
    let inv = if sum == 0.0 { 0.0 } else { 1.0 / sum };
    for (o, x) in out.iter_mut().zip(buf.vkq32()) {
        *o = x;
    }
    scale_f32(out, inv);
}

/// Per-thread buffers of the tiled path (ggml's per-thread scratch: `Q_q`, `KQ`, `mask32`,
/// `VKQ32`, `V32`, `K_f32`), plus the tile's running maxima and sums.
pub(super) struct TileBuf {
    q: Vec<f32>,
    kq: Vec<f32>,
    mask: Vec<f32>,
    vkq: Vec<f32>,
    v32: Vec<f32>,
    kt: Vec<f32>,
    m: [f32; Q_TILE],
    s: [f32; Q_TILE],
    skip: [bool; Q_TILE],
}

impl TileBuf {
    pub(super) fn new(a: &Attn) -> TileBuf {
        TileBuf {
            q: vec![0.0; Q_TILE * a.dk],
            kq: vec![0.0; Q_TILE * KV_TILE],
            mask: vec![0.0; Q_TILE * KV_TILE],
            vkq: vec![0.0; Q_TILE * a.dv],
            v32: vec![0.0; KV_TILE * a.dv],
            kt: vec![0.0; a.dk * KV_TILE],
            m: [f32::NEG_INFINITY; Q_TILE],
            s: [0.0; Q_TILE],
            skip: [false; Q_TILE],
        }
    }
}

/// A row-major f32 matrix: its first element and row stride.
#[derive(Clone, Copy)]
pub(super) struct Mat {
    p: *mut f32,
    ld: usize,
}

impl Mat {
    /// A matrix only read.
    pub(super) fn of(s: &[f32], ld: usize) -> Mat {
        Mat { p: s.as_ptr() as *mut f32, ld }
    }

    /// A matrix written (C).
    pub(super) fn of_mut(s: &mut [f32], ld: usize) -> Mat {
        Mat { p: s.as_mut_ptr(), ld }
    }

    /// The block from row `i`, column `j`.
    ///
    /// # Safety
    /// (i, j) lies inside the matrix.
    unsafe fn at(self, i: usize, j: usize) -> Mat {
        // SAFETY: in bounds by the contract.
        Mat { p: unsafe { self.p.add(i * self.ld + j) }, ld: self.ld }
    }
}

/// `C[m x n] += A[m x k] * B[k x n]` as `simd_gemm` computes each element:
/// `c = fma(b[kk][j], a[i][kk], c)` for kk in order, from C's value. Blocked 6 rows x 16
/// columns as ggml's AVX2 kernel (4 and 1 for the leftover rows), walked column block by column
/// block so a block's `k x 16` of B (16 KiB for a 256-long K row) stays in L1 for every row
/// block (row blocks outside read the whole of B from L2 once per six rows); every element keeps
/// its own chain, so neither the blocking nor the walk changes a bit. `n` is a multiple of 8.
///
/// # Safety
/// AVX2/FMA; the three matrices hold the elements their dimensions and strides address; C is
/// written (made by [`Mat::of_mut`]), A and B only read.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn gemm(c: Mat, a: Mat, b: Mat, m: usize, k: usize, n: usize) {
    debug_assert!(n.is_multiple_of(8));
    let mut j = 0;
    while j < n {
        let cols = if n - j >= 16 { 16 } else { 8 };
        let mut i = 0;
        while i < m {
            let rows = match m - i {
                6.. => 6,
                4 | 5 => 4,
                _ => 1,
            };
            // SAFETY: rows i..i + rows <= m, columns j..j + cols <= n, as the contract allows.
            unsafe {
                let (cb, ab, bb) = (c.at(i, j), a.at(i, 0), b.at(0, j));
                match (rows, cols) {
                    (6, 16) => ukernel::<6, 2>(cb, ab, bb, k),
                    (6, _) => ukernel::<6, 1>(cb, ab, bb, k),
                    (4, 16) => ukernel::<4, 2>(cb, ab, bb, k),
                    (4, _) => ukernel::<4, 1>(cb, ab, bb, k),
                    (_, 16) => ukernel::<1, 2>(cb, ab, bb, k),
                    _ => ukernel::<1, 1>(cb, ab, bb, k),
                }
            }
            i += rows;
        }
        j += cols;
    }
}

/// # Safety
/// As [`gemm`], for an `RM x 8RN` block.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn ukernel<const RM: usize, const RN: usize>(c: Mat, a: Mat, b: Mat, k: usize) {
    // SAFETY (every access): inside the block the caller vouches for.
    unsafe {
        let mut acc = [[_mm256_setzero_ps(); RN]; RM];
        for i in 0..RM {
            for r in 0..RN {
                acc[i][r] = _mm256_loadu_ps(c.p.add(i * c.ld + 8 * r));
            }
        }
        for kk in 0..k {
            let mut bv = [_mm256_setzero_ps(); RN];
            for r in 0..RN {
                bv[r] = _mm256_loadu_ps(b.p.add(kk * b.ld + 8 * r));
            }
            for i in 0..RM {
                let p = _mm256_set1_ps(*a.p.add(i * a.ld + kk));
                for r in 0..RN {
                    acc[i][r] = _mm256_fmadd_ps(bv[r], p, acc[i][r]);
                }
            }
        }
        for i in 0..RM {
            for r in 0..RN {
                _mm256_storeu_ps(c.p.add(i * c.ld + 8 * r), acc[i][r]);
            }
        }
    }
}

/// `ggml_vec_soft_max_f32` over one 64-key row: `y = expf(x - max)` through ggml's vectorized
/// expf, each group of 8 summed in f32 (halves, `movehl`, `movehdup`) and added to an f64 total.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn soft_max_row(row: &mut [f32], max: f32) -> f64 {
    let vmax = _mm256_set1_ps(max);
    let mut sum = 0f64;
    for i in (0..row.len() / 8 * 8).step_by(8) {
        // SAFETY: i + 8 <= row.len().
        unsafe {
            let p = row.as_mut_ptr().add(i);
            let val = v_expf(_mm256_sub_ps(_mm256_loadu_ps(p), vmax));
            _mm256_storeu_ps(p, val);
            let v2 = _mm_add_ps(_mm256_extractf128_ps::<1>(val), _mm256_castps256_ps128(val));
            let v2 = _mm_add_ps(v2, _mm_movehl_ps(v2, v2));
            let v2 = _mm_add_ss(v2, _mm_movehdup_ps(v2));
            sum += _mm_cvtss_f32(v2) as f64;
        }
    }
    debug_assert!(row.len().is_multiple_of(8), "KV_TILE is a multiple of 8");
    sum
}

/// `ggml_vec_max_f32` of a row (order-free without NaNs, up to a zero's sign, which no later
/// `x - max` or comparison tells apart).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn row_max(row: &[f32]) -> f32 {
    row.iter().fold(f32::NEG_INFINITY, |m, &v| if m > v { m } else { v })
}

/// Keys `ic..ic + kv` of the K head `head` widened into the K tile, transposed: `kt[d * 64 + tk]`
/// (ggml's `K_f32[dk][kv]`). Eight keys by eight dimensions at a time through an 8x8 register
/// transpose: the widening is exact, so only where each value lands matters, and the 64-key rows
/// are written with whole vectors instead of one float per key and dimension.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn pack_k(a: &Attn, ic: usize, kv: usize, head: (usize, usize), kt: &mut [f32]) {
    let dk = a.dk;
    assert!(kv <= KV_TILE && kt.len() >= dk * KV_TILE);
    let (full_k, full_d) = (kv / 8 * 8, dk / 8 * 8);
    let k_head = a.k_head(head);
    for tk in (0..full_k).step_by(8) {
        let rows: [&[u16]; 8] = std::array::from_fn(|r| k_head.row(ic + tk + r));
        for d in (0..full_d).step_by(8) {
            // SAFETY: d + 8 <= dk halves of every K row (a K head's rows hold dk of them).
            let v = std::array::from_fn(|r| unsafe { load8h(rows[r].as_ptr().add(d)) });
            for (e, x) in transpose8(v).into_iter().enumerate() {
                // SAFETY: (d + e) * 64 + tk + 8 <= (dk - 1) * 64 + kv <= dk * 64 <= kt.len().
                unsafe { _mm256_storeu_ps(kt.as_mut_ptr().add((d + e) * KV_TILE + tk), x) };
            }
        }
        for d in full_d..dk {
            for (r, k) in rows.iter().enumerate() {
                kt[d * KV_TILE + tk + r] = f16_to_f32(k[d]);
            }
        }
    }
    for tk in full_k..kv {
        let k = k_head.row(ic + tk);
        for d in 0..dk {
            kt[d * KV_TILE + tk] = f16_to_f32(k[d]);
        }
    }
}

/// Eight rows of eight floats turned into eight columns (`out[e][r] = v[r][e]`).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn transpose8(v: [__m256; 8]) -> [__m256; 8] {
    // pairs of rows interleaved: t0 = v0[0] v1[0] v0[1] v1[1] | v0[4] v1[4] v0[5] v1[5], ...
    let t0 = _mm256_unpacklo_ps(v[0], v[1]);
    let t1 = _mm256_unpackhi_ps(v[0], v[1]);
    let t2 = _mm256_unpacklo_ps(v[2], v[3]);
    let t3 = _mm256_unpackhi_ps(v[2], v[3]);
    let t4 = _mm256_unpacklo_ps(v[4], v[5]);
    let t5 = _mm256_unpackhi_ps(v[4], v[5]);
    let t6 = _mm256_unpacklo_ps(v[6], v[7]);
    let t7 = _mm256_unpackhi_ps(v[6], v[7]);
    // four rows' element e | e + 4
    let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let s1 = _mm256_shuffle_ps::<0xee>(t0, t2);
    let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let s3 = _mm256_shuffle_ps::<0xee>(t1, t3);
    let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let s5 = _mm256_shuffle_ps::<0xee>(t4, t6);
    let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let s7 = _mm256_shuffle_ps::<0xee>(t5, t7);
    [
        _mm256_permute2f128_ps::<0x20>(s0, s4),
        _mm256_permute2f128_ps::<0x20>(s1, s5),
        _mm256_permute2f128_ps::<0x20>(s2, s6),
        _mm256_permute2f128_ps::<0x20>(s3, s7),
        _mm256_permute2f128_ps::<0x31>(s0, s4),
        _mm256_permute2f128_ps::<0x31>(s1, s5),
        _mm256_permute2f128_ps::<0x31>(s2, s6),
        _mm256_permute2f128_ps::<0x31>(s3, s7),
    ]
}

/// A mask row's halves widened into `out` (exact); whether every one is -inf.
#[target_feature(enable = "avx2,fma,f16c")]
fn widen_mask(mp: &[u16], out: &mut [f32]) -> bool {
    let n = mp.len().min(out.len());
    let full = n / 8 * 8;
    let ninf = _mm256_set1_ps(f32::NEG_INFINITY);
    let mut all = true;
    for i in (0..full).step_by(8) {
        // SAFETY: i + 8 <= n bounds both rows.
        unsafe {
            let x = load8h(mp.as_ptr().add(i));
            _mm256_storeu_ps(out.as_mut_ptr().add(i), x);
            all &= _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_EQ_OQ>(x, ninf)) == 0xff;
        }
    }
    for i in full..n {
        out[i] = f16_to_f32(mp[i]);
        all &= out[i] == f32::NEG_INFINITY;
    }
    all
}

/// `lm_ggml_compute_forward_flash_attn_ext_tiled` for one tile: `rows` query rows from flat
/// row `ir` (one head), every key in tiles of 64.
///
/// # Safety
/// AVX2/FMA/F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn tile(a: &Attn, ir: usize, rows: usize, t: &mut TileBuf) {
    let (i1, i2, i3) = a.row_index(ir);
    let head = (i2, i3);
    let v_head = a.v_head(head);
    let (dk, dv) = (a.dk, a.dv);
    t.m = [f32::NEG_INFINITY; Q_TILE];
    t.s = [0.0; Q_TILE];
    t.vkq.fill(0.0);
    for tq in 0..rows {
        t.q[tq * dk..(tq + 1) * dk].copy_from_slice(a.q_row((i1 + tq, i2, i3)));
    }
    // ggml clears K_f32 and V32 once per query tile: the last key tile's unused V rows keep the
    // previous tile's values (times probabilities of 0), as here
    t.kt.fill(0.0);
    t.v32.fill(0.0);
    let mut ic = 0;
    while ic < a.nkv {
        let kv = KV_TILE.min(a.nkv - ic);
        if a.mask.is_some() {
            let mut can_skip = true;
            for tq in 0..rows {
                let mp = a.mask_row((i1 + tq, i2, i3)).expect("mask present");
                let mrow = &mut t.mask[tq * KV_TILE..(tq + 1) * KV_TILE];
                // slope * mask with slope 1 (no ALiBi): the mask value itself, widened 8 at a time
                can_skip &= widen_mask(&mp[ic..ic + kv], &mut mrow[..kv]);
                mrow[kv..].fill(f32::NEG_INFINITY);
            }
            if can_skip {
                ic += KV_TILE;
                continue;
            }
        }
        pack_k(a, ic, kv, head, &mut t.kt);
        let kq = &mut t.kq[..rows * KV_TILE];
        kq.fill(0.0);
        // SAFETY: kq is rows x 64 (held mutably here), q rows x dk, kt dk x 64; AVX2 by this
        // function's contract.
        unsafe { gemm(Mat::of_mut(kq, KV_TILE), Mat::of(&t.q, dk), Mat::of(&t.kt, KV_TILE), rows, dk, KV_TILE) };
        scale_f32(kq, a.scale);
        if kv < KV_TILE {
            for tq in 0..rows {
                kq[tq * KV_TILE + kv..(tq + 1) * KV_TILE].fill(f32::NEG_INFINITY);
            }
        }
        if a.mask.is_some() {
            // ggml_vec_add_f32
            for (x, &mv) in kq.iter_mut().zip(&t.mask[..rows * KV_TILE]) {
                *x += mv;
            }
        }
        for tq in 0..rows {
            let row = &mut kq[tq * KV_TILE..(tq + 1) * KV_TILE];
            let tile_max = row_max(row);
            t.skip[tq] = tile_max == f32::NEG_INFINITY;
            if t.skip[tq] {
                continue;
            }
            let mold = t.m[tq];
            let mnew = mold.max(tile_max);
            if mnew > mold {
                let ms = (mold - mnew).exp();
                scale_f32(&mut t.vkq[tq * dv..(tq + 1) * dv], ms);
                t.s[tq] *= ms;
            }
            t.m[tq] = mnew;
            // `S += ggml_vec_soft_max_f32(...)`: a float plus a double, rounded back to float
            t.s[tq] = (t.s[tq] as f64 + soft_max_row(row, mnew)) as f32;
        }
        for tk in 0..kv {
            let v = v_head.row(ic + tk);
            let out = &mut t.v32[tk * dv..(tk + 1) * dv];
            let mut d = 0;
            while d + 8 <= dv {
                // SAFETY: d + 8 <= dv elements of both rows.
                unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(d), load8h(v.as_ptr().add(d))) };
                d += 8;
            }
            for d in d..dv {
                out[d] = f16_to_f32(v[d]);
            }
        }
        for tq in 0..rows {
            if t.skip[tq] {
                kq[tq * KV_TILE..(tq + 1) * KV_TILE].fill(0.0);
            }
        }
        // SAFETY: vkq is rows x dv (held mutably: t is &mut), kq rows x 64, v32 64 x dv; AVX2 by
        // the contract.
        unsafe { gemm(Mat::of_mut(&mut t.vkq, dv), Mat::of(kq, KV_TILE), Mat::of(&t.v32, dv), rows, KV_TILE, dv) };
        ic += KV_TILE;
    }
    for tq in 0..rows {
        let s = t.s[tq];
        let inv = if s == 0.0 { 0.0 } else { 1.0 / s };
        let row = &mut t.vkq[tq * dv..(tq + 1) * dv];
        scale_f32(row, inv);
        a.dst_row((i1 + tq, i2, i3)).copy_from_slice(row);
    }
}
