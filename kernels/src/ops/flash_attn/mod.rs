//! FLASH_ATTN_EXT in ggml-cpu's float order (the 2026 revisions: `ggml_compute_forward_flash_attn_ext_f16`
//! in ggml-cpu/ops.cpp, the same code and helpers in cui-llama.rn 1.12.2, llama.rn 0.12.9 and
//! 0.13.0-rc.5 and whisper.rn 0.7.4).
//!
//! ggml-cpu picks one of three paths by shape, and so does this module, with the same tiling:
//!
//! * **split-KV** (one query row, `ne3 == 1`, F16 K/V, at least 512 keys): the keys are cut into
//!   `nth` chunks of `ceil(n_kv / nth)`, one per ggml thread; each (chunk, head) runs the
//!   one-row online softmax into a partial `(M, S, VKQ)`, and the partials are merged per head in
//!   chunk order. The result depends on `nth`: ggml's `nth` is taken to be the SIMD pool's thread
//!   count, which the hosts set with the same `set_n_threads` call as ggml-cpu's (llama.cpp and
//!   whisper.cpp set every backend's), and the chunks are then computed by whichever threads.
//! * **one_chunk** (fewer than 64 query rows, or `DV % GGML_F32_EPR != 0`): per query row, Q
//!   rounded to F16, each unmasked key's `vec_dot_f16`, then the online softmax with libm `expf`
//!   and the V sum kept in **F16** (`ggml_vec_mad_f16` / `ggml_vec_scale_f16` round after every
//!   key). Rows are independent, so any thread split gives the same bits.
//! * **tiled** (64+ query rows, `DV % GGML_F32_EPR == 0`): tiles of 64 query rows x 64 keys in
//!   f32: `Q K^T` and `P V` as `simd_gemm`'s per-element FMA chains, the tile's softmax through
//!   ggml's vectorized expf with f32 partial sums added in f64. A tile whose rows are all masked is
//!   skipped, so the tiles' composition (ggml's chunks of rows, which depend on `nth`) can touch a
//!   zero's sign; the chunks are cut as ggml cuts them for the pool's thread count.
//!
//! Taken: F32 Q, F16 K and V (same type), an optional F16 mask, any scale, K/V heads broadcast
//! over Q heads (both dims 2 and 3), no ALiBi (`max_bias == 0`), no logit softcap, no sinks, on
//! the x86 AVX2 / AVX-512 levels (AVX2 arithmetic on both: ggml-cpu is built for AVX2, `avx2.rs`)
//! and on NEON (`neon.rs`: ggml's NEON helpers, in half precision where the CPU has FEAT_FP16 as
//! ggml built with `+fp16`, in f32 elsewhere; the tiled path needs `DV % 4 == 0` there, ggml's
//! `GGML_F32_EPR`). Declined: the 2024 revisions, the portable level (ggml's scalar order is not
//! reproduced), F32 or quantized K/V, ALiBi, softcap, sinks.

// Only x86 and aarch64 compute these nodes; elsewhere `supports` declines them and the machinery
// sits idle.
#![cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]

use super::Session;
use crate::cpu_features::{is_x86, simd_level, SimdLevel};
use crate::op::Node;
use crate::view::{Raw, F16, F32};
use crate::CpuOrder;
use std::sync::atomic::{AtomicUsize, Ordering};

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
use avx2 as arch;
#[cfg(target_arch = "aarch64")]
mod neon;
#[cfg(target_arch = "aarch64")]
use neon as arch;

/// ggml-cpu's tiles (`GGML_FA_TILE_Q`, `GGML_FA_TILE_KV` in ggml-cpu/common.h).
const Q_TILE: usize = 64;
const KV_TILE: usize = 64;
/// Keys from which one query row takes the split-KV path.
const SPLIT_KV_MIN: usize = 512;
/// ggml's `GGML_F32_EPR` as built for this architecture (AVX2: 8, NEON: 4): the tiled path needs
/// `DV` to be a multiple of it.
const F32_EPR: usize = if cfg!(target_arch = "aarch64") { 4 } else { 8 };

/// Whether this process's kernel level computes these nodes: AVX2 / AVX-512 on x86, NEON on
/// aarch64 (each level is only ever detected on its own architecture).
fn level_computes() -> bool {
    let level = simd_level();
    (cfg!(target_arch = "x86_64") && is_x86(level)) || (cfg!(target_arch = "aarch64") && level == SimdLevel::Neon)
}

pub fn supports(n: &Node) -> bool {
    if n.order == CpuOrder::BEFORE_2026 || !level_computes() {
        return false;
    }
    let (Some(q), Some(k), Some(v)) = (n.src[0], n.src[1], n.src[2]) else { return false };
    let d = n.dst;
    let (dk, dv, nq, nh, n3, nkv) = (k.ne[0], v.ne[0], q.ne[1], q.ne[2], q.ne[3], k.ne[1]);
    let types = q.ty == F32 && q.nb[0] == 4 && k.ty == F16 && v.ty == F16 && k.nb[0] == 2 && v.nb[0] == 2;
    // F16 rows read as u16 slices: even strides (the data pointers are checked when computing)
    let aligned = k.nb.iter().chain(&v.nb).all(|b| b % 2 == 0) && q.nb.iter().all(|b| b % 4 == 0);
    let shapes = dk > 0 && dv > 0 && q.ne[0] == dk && v.ne[1] == nkv
        && k.ne[2] > 0 && v.ne[2] > 0 && k.ne[3] > 0 && v.ne[3] > 0
        && nh % k.ne[2] == 0 && nh % v.ne[2] == 0 && n3 % k.ne[3] == 0 && n3 % v.ne[3] == 0;
    // dst: F32 [DV, heads, rows, ne3], contiguous (ggml writes rows at computed offsets)
    let dst_ok = d.ty == F32 && d.ne == [dv, nh, nq, n3] && d.nb[0] == 4 && d.nb[1] == 4 * dv
        && d.nb[2] == d.nb[1] * nh && d.nb[3] == d.nb[2] * nq;
    let mask_ok = n.src[3].is_none_or(|m| {
        m.ty == F16 && m.nb[0] == 2 && m.ne[0] >= nkv && m.ne[1] >= nq && m.ne[2] > 0 && m.ne[3] > 0
            && nh % m.ne[2] == 0 && n3 % m.ne[3] == 0 && m.nb.iter().all(|b| b % 2 == 0)
    });
    // op_params: scale, max_bias, logit_softcap, precision (DEFAULT 0 or F32 10; ggml-cpu aborts on others)
    let params = n.param_f32(1) == 0.0 && n.param_f32(2) == 0.0 && matches!(n.params[3], 0 | 10);
    types && aligned && shapes && dst_ok && mask_ok && params && n.src[4].is_none()
}

pub fn compute(s: &Session, n: &Node) -> bool {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        let a = Attn::new(n);
        let aligned = |r: &Raw, b: usize| (r.data as usize).is_multiple_of(b);
        if !(aligned(&a.q, 4) && aligned(&a.k, 2) && aligned(&a.v, 2) && a.mask.is_none_or(|m| aligned(&m, 2))) {
            return false;
        }
        let nth = s.n_threads().max(1);
        if a.split_kv() {
            split_kv(s, &a, nth)
        } else if a.tiled() {
            tiled(s, &a, nth)
        } else {
            one_chunk(s, &a)
        }
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = (s, n);
        false
    }
}

/// One node's operands and parameters, as ggml-cpu's functions read them.
#[derive(Clone, Copy)]
pub(crate) struct Attn {
    q: Raw,
    k: Raw,
    v: Raw,
    mask: Option<Raw>,
    dst: Raw,
    dk: usize,
    dv: usize,
    /// query rows per head (`neq1`), heads (`neq2`), `neq3`
    nq: usize,
    nh: usize,
    n3: usize,
    /// keys (`nek1`)
    nkv: usize,
    scale: f32,
}

impl Attn {
    fn new(n: &Node) -> Attn {
        let (q, k, v) = (n.src(0), n.src(1), n.src(2));
        Attn {
            q,
            k,
            v,
            mask: n.src[3],
            dst: n.dst,
            dk: k.ne[0],
            dv: v.ne[0],
            nq: q.ne[1],
            nh: q.ne[2],
            n3: q.ne[3],
            nkv: k.ne[1],
            scale: n.param_f32(0),
        }
    }

    /// ggml's `use_split_kv_path` (for the types `supports` takes).
    fn split_kv(&self) -> bool {
        self.nq == 1 && self.n3 == 1 && self.nkv >= SPLIT_KV_MIN
    }

    /// ggml's `use_tiled` (`DV % GGML_F32_EPR == 0`: 8 lanes on AVX2, 4 on NEON).
    fn tiled(&self) -> bool {
        self.nq >= Q_TILE && self.dv.is_multiple_of(F32_EPR)
    }

    fn rows(&self) -> usize {
        self.nq * self.nh * self.n3
    }

    /// (iq1, iq2, iq3) of flat query row `ir` (ggml's order: query rows fastest, then heads).
    fn row_index(&self, ir: usize) -> (usize, usize, usize) {
        (ir % self.nq, (ir / self.nq) % self.nh, ir / (self.nq * self.nh))
    }

    /// Query row (iq1, iq2, iq3), `dk` floats.
    fn q_row(&self, (i1, i2, i3): (usize, usize, usize)) -> &[f32] {
        let p = self.q.ptr(0, i1, i2, i3) as *const f32;
        // SAFETY: indices < ne (row_index of a row < rows()); contiguous F32 rows of dk elements,
        // 4-byte aligned (supports + compute checked strides and data), only read.
        unsafe { std::slice::from_raw_parts(p, self.dk) }
    }

    /// Key `ic` of the K head serving query head (i2, i3), `dk` halves (neon.rs; the AVX2 loops
    /// take a head's rows once).
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    fn k_row(&self, ic: usize, head: (usize, usize)) -> &[u16] {
        self.k_head(head).row(ic)
    }

    /// Value `ic` of the V head serving query head (i2, i3), `dv` halves.
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    fn v_row(&self, ic: usize, head: (usize, usize)) -> &[u16] {
        self.v_head(head).row(ic)
    }

    /// The K rows serving query head (i2, i3): the head's broadcast found once (two divisions),
    /// not once per key.
    fn k_head(&self, (i2, i3): (usize, usize)) -> HeadRows<'_> {
        let (k2, k3) = (i2 / (self.nh / self.k.ne[2]), i3 / (self.n3 / self.k.ne[3]));
        assert!(k2 < self.k.ne[2] && k3 < self.k.ne[3]);
        HeadRows { base: self.k.ptr(0, 0, k2, k3) as *const u16, nb1: self.k.nb[1], len: self.dk, n: self.nkv, _attn: self }
    }

    /// The V rows serving query head (i2, i3), as [`Attn::k_head`].
    fn v_head(&self, (i2, i3): (usize, usize)) -> HeadRows<'_> {
        let (v2, v3) = (i2 / (self.nh / self.v.ne[2]), i3 / (self.n3 / self.v.ne[3]));
        assert!(v2 < self.v.ne[2] && v3 < self.v.ne[3]);
        // v.ne[1] == nkv checked by supports
        HeadRows { base: self.v.ptr(0, 0, v2, v3) as *const u16, nb1: self.v.nb[1], len: self.dv, n: self.nkv, _attn: self }
    }

    /// The mask row of query row (iq1, iq2, iq3): its first `nkv` halves.
    fn mask_row(&self, (i1, i2, i3): (usize, usize, usize)) -> Option<&[u16]> {
        self.mask.map(|m| {
            let p = m.ptr(0, i1, i2 % m.ne[2], i3 % m.ne[3]) as *const u16;
            // SAFETY: i1 < nq <= m.ne[1], m.ne[0] >= nkv (supports); 2-byte aligned.
            unsafe { std::slice::from_raw_parts(p, self.nkv) }
        })
    }

    /// The destination row of query row (iq1, iq2, iq3) (`permute(0, 2, 1, 3)`), `dv` floats.
    #[allow(clippy::mut_from_ref)]
    fn dst_row(&self, (i1, i2, i3): (usize, usize, usize)) -> &mut [f32] {
        let p = self.dst.ptr(0, i2, i1, i3) as *mut f32;
        // SAFETY: contiguous F32 dst of [dv, nh, nq, n3] (supports); each query row is written
        // by exactly one thread (the paths below hand out disjoint rows).
        unsafe { std::slice::from_raw_parts_mut(p, self.dv) }
    }
}

/// One K or V head's rows (F16, contiguous within a row), borrowed from the node's operands.
#[derive(Clone, Copy)]
pub(crate) struct HeadRows<'a> {
    base: *const u16,
    /// bytes from one key's row to the next
    nb1: usize,
    /// halves per row
    len: usize,
    /// rows (keys)
    n: usize,
    _attn: &'a Attn,
}

impl<'a> HeadRows<'a> {
    /// Row `ic`.
    #[inline]
    fn row(&self, ic: usize) -> &'a [u16] {
        assert!(ic < self.n);
        // SAFETY: the head's indices were checked against ne (k_head / v_head) and ic < nkv:
        // a row of `len` contiguous 2-byte aligned halves inside the tensor (supports and compute
        // checked strides and data), only read while the node computes.
        unsafe { std::slice::from_raw_parts(self.base.cast::<u8>().add(ic * self.nb1).cast::<u16>(), self.len) }
    }
}

/// Work below this many multiply-adds runs on the calling thread (decode attention of a short
/// cache: waking the pool costs more).
const SERIAL_WORK: usize = 1 << 16;

/// Runs `f(buffers, item)` for items `0..n`, handed out one at a time to the pool's threads (or
/// all on the calling thread when `work` is small); each thread makes its buffers with `init`
/// once, at its first item.
fn for_items<B>(s: &Session, n: usize, work: usize, init: impl Fn() -> B + Sync, f: impl Fn(&mut B, usize) + Sync) -> bool {
    if work < SERIAL_WORK || n < 2 || s.n_threads() < 2 {
        return std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut b = init();
            (0..n).for_each(|i| f(&mut b, i))
        }))
        .is_ok();
    }
    let next = AtomicUsize::new(0);
    s.run(&|_, _| {
        let mut b: Option<B> = None;
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
            f(b.get_or_insert_with(&init), i);
        }
    })
}

/// The one_chunk path over all rows (fewer than 64 query rows per head, or `DV % F32_EPR != 0`).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn one_chunk(s: &Session, a: &Attn) -> bool {
    let work = a.rows() * a.nkv * (a.dk + a.dv);
    for_items(s, a.rows(), work, || arch::RowBuf::new(a), |buf, ir| {
        let idx = a.row_index(ir);
        // SAFETY: compute runs only where supports saw the level: AVX2 / AVX-512 on x86 (AVX2,
        // FMA, F16C), NEON on aarch64 (the baseline; FEAT_FP16 only where RowBuf detected it).
        let (_, sum) = unsafe { arch::one_row(a, idx, 0..a.nkv, buf) };
        // SAFETY: as above.
        unsafe { arch::finish_row(buf, sum, a.dst_row(idx)) };
    })
}

/// The split-KV path: `nth` chunks of keys per head, then the merge of each head's partials.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn split_kv(s: &Session, a: &Attn, nth: usize) -> bool {
    let chunk = a.nkv.div_ceil(nth);
    // partials[(h * nth + c) * (2 + dv)..]: M, S, VKQ of head h over chunk c
    let stride = 2 + a.dv;
    let partials: Vec<AtomicF32Cell> = (0..a.nh * nth * stride).map(|_| AtomicF32Cell::default()).collect();
    let work = a.nh * a.nkv * (a.dk + a.dv);
    let ok = for_items(s, a.nh * nth, work, || arch::RowBuf::new(a), |buf, item| {
        let (h, c) = (item / nth, item % nth);
        let (lo, hi) = ((c * chunk).min(a.nkv), ((c + 1) * chunk).min(a.nkv));
        let p = &partials[item * stride..(item + 1) * stride];
        if lo >= hi {
            p[0].set(f32::NEG_INFINITY);
            p[1].set(0.0);
            return;
        }
        // SAFETY: the level's instructions, as in one_chunk.
        let (m, sum) = unsafe { arch::one_row(a, (0, h, 0), lo..hi, buf) };
        p[0].set(m);
        p[1].set(sum);
        for (d, x) in p[2..].iter().zip(buf.vkq32()) {
            d.set(x);
        }
    });
    if !ok {
        return false;
    }
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut vkq = vec![0f32; a.dv];
        for h in 0..a.nh {
            let (mut m_final, mut s_final) = (f32::NEG_INFINITY, 0f32);
            vkq.fill(0.0);
            for c in 0..nth {
                if c * chunk >= a.nkv {
                    continue;
                }
                let p = &partials[(h * nth + c) * stride..(h * nth + c + 1) * stride];
                let (m_c, s_c) = (p[0].get(), p[1].get());
                if s_c == 0.0 {
                    continue;
                }
                let m_new = m_final.max(m_c);
                let (scale_old, scale_new) = ((m_final - m_new).exp(), (m_c - m_new).exp());
                // GCC contracts `VKQ_final[d]*scale_old + VKQ_chunk[d]*scale_new` into
                // fma(final, old, round(chunk * new)) (read from the AVX2 build), and S likewise;
                // clang (the aarch64 builds) fuses the left product first too
                for (f, x) in vkq.iter_mut().zip(&p[2..]) {
                    *f = f.mul_add(scale_old, x.get() * scale_new);
                }
                s_final = s_final.mul_add(scale_old, s_c * scale_new);
                m_final = m_new;
            }
            if s_final != 0.0 {
                let inv = 1.0 / s_final;
                vkq.iter_mut().for_each(|x| *x *= inv);
            }
            a.dst_row((0, h, 0)).copy_from_slice(&vkq);
        }
    }))
    .is_ok()
}

/// An f32 slot the split-KV items write from their threads (each slot by one item).
#[derive(Default)]
struct AtomicF32Cell(std::sync::atomic::AtomicU32);

impl AtomicF32Cell {
    fn set(&self, x: f32) {
        self.0.store(x.to_bits(), Ordering::Relaxed);
    }
    fn get(&self) -> f32 {
        f32::from_bits(self.0.load(Ordering::Relaxed))
    }
}

/// ggml's chunks of query rows for `nth` threads (`lm_ggml_compute_forward_flash_attn_ext_f16`,
/// NUMA off): `[ir0, ir1)` of chunk `c`.
fn row_chunks(nr: usize, nth: usize) -> (usize, usize) {
    let nth_scaled = nth * 4;
    let chunk_size = nr.div_ceil(nth_scaled).max(1);
    let mut nchunk = nr.div_ceil(chunk_size);
    if nth == 1 || nchunk < nth {
        nchunk = nth;
    }
    (nchunk, nr.div_ceil(nchunk))
}

/// The tiled path: ggml's chunks of rows, each walked in tiles of up to 64 query rows of one head.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn tiled(s: &Session, a: &Attn, nth: usize) -> bool {
    let nr = a.rows();
    let (nchunk, dr) = row_chunks(nr, nth);
    let work = nr * a.nkv * (a.dk + a.dv);
    for_items(s, nchunk, work, || arch::TileBuf::new(a), |t, c| {
        let (ir0, ir1) = ((dr * c).min(nr), (dr * c + dr).min(nr));
        if ir0 >= ir1 {
            return;
        }
        let mut ir = ir0;
        while ir < ir1 {
            let (i1, _, _) = a.row_index(ir);
            let rows = Q_TILE.min(ir1 - ir).min(a.nq - i1);
            // SAFETY: the level's instructions, as in one_chunk.
            unsafe { arch::tile(a, ir, rows, t) };
            ir += rows;
        }
    })
}

#[cfg(test)]
mod tests;
