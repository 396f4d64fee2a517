//! The AVX-512 tile family ([`SimdLevel::Avx512`](crate::cpu_features::SimdLevel)):
//! `quant` (the block formats' [`Avx512Tile`]s: unpacked weight panels, `vpdpbusd`), `float`
//! (F16 / F32 rows), and here their entry points. Same values as the AVX2 family, lane by lane.
//!
//! Built on the AVX2 family by design, and the one family that imports another: the AVX-512
//! level runs only where AVX2, FMA and F16C are there too and gives ggml-cpu's AVX2 answers, so it
//! takes from `avx2` what would otherwise be written twice: each block format's
//! [`Avx2Tile`](super::avx2::quant::Avx2Tile) (its block types and scales), which [`Avx512Tile`]
//! extends; ggml's fused / unfused split of F32 leftovers (`avx2::float::f32_tail_unfused`); and
//! the 8 x 8 transpose of the head-row kernel (`avx2::heads::transpose8`). `avx2` imports nothing
//! of this family. What the activations need for `vpdpbusd` is prepared in `acts` (its
//! `offsets`), below both.

pub(super) mod float;
mod heads;
pub(super) mod quant;

use super::acts::{ActRows, QuantizedActs};
use super::operands::{Acts, DstView, Weights};
use crate::quant::blocks_from_bytes;
use crate::quant::{WType, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0};
use quant::Avx512Tile;

/// Every output of `dst` with the AVX-512 kernels.
///
/// # Safety
/// The CPU has AVX-512 F/BW/VL/DQ/VNNI (`SimdLevel::Avx512`) and AVX2/FMA/F16C.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub(super) unsafe fn mul_mat_tiles(w: &Weights<'_>, acts: &Acts<'_>, q: &QuantizedActs, dst: &mut DstView<'_>) {
    // SAFETY (all arms): features by this function's contract.
    unsafe {
        match w.wtype {
            WType::Q4_0 => wide_rows::<Q4_0>(w, &q.tile_rows(&q.q8_0), &q.off, dst),
            WType::Q4_1 => wide_rows::<Q4_1>(w, &q.tile_rows(&q.q8_1), &[], dst),
            WType::Q5_0 => wide_rows::<Q5_0>(w, &q.tile_rows(&q.q8_0), &q.off, dst),
            WType::Q5_1 => wide_rows::<Q5_1>(w, &q.tile_rows(&q.q8_1), &[], dst),
            // ggml-cpu has no AVX-512 K-quant code: its AVX2 order, by the AVX2 kernels
            WType::Q4K | WType::Q5K | WType::Q6K => super::avx2::k_products(w, q, dst),
            // nor AVX-512 IQ4_NL code
            WType::IQ4NL => super::avx2::iq4nl_products(w, q, dst),
            WType::Q8_0 => wide_rows::<Q8_0>(w, &q.tile_rows(&q.q8_0), &q.off, dst),
            WType::F16 if q.halves => float_rows_avx512(|i| w.row_f16(i), |j| &q.hb_row(j)[..w.k()], dst),
            WType::F16 => float_rows_avx512(|i| w.row_f16(i), |j| &q.h_row(j)[..w.k()], dst),
            WType::F32 => float_rows_avx512(|i| w.row_f32(i), |j| acts.row(j), dst),
        }
    }
}

/// F16 / F32 outputs of `dst` with the AVX-512 kernels (same values as AVX2's, see
/// `float::float_rows`).
///
/// # Safety
/// The CPU has AVX-512 F/BW/VL/DQ (`has_avx512`).
#[inline(never)] // as quant_rows
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
unsafe fn float_rows_avx512<'w, 'a, E: float::Elem512 + 'w, A: float::Elem512 + 'a>(w: impl Fn(usize) -> &'w [E], a: impl Fn(usize) -> &'a [A], dst: &mut DstView<'_>) {
    // (up to four activation rows, decoding with grouped query heads, are left to `float_rows`'
    // few-row tiles, which load each weight vector once for all of them)
    // SAFETY: features by this function's contract.
    if unsafe { heads::rows(&w, &a, dst) } {
        return;
    }
    let rows = dst.weight_rows();
    let wr: Vec<&[E]> = rows.clone().map(w).collect();
    let j0 = dst.act_rows().start;
    let ar: Vec<&[A]> = dst.act_rows().map(a).collect();
    // SAFETY: features by this function's contract.
    unsafe { float::float_rows(&wr, &ar, |j, r, v| {
        // fixed-size copies for the usual lengths: a variable-length copy of 2 values went
        // through memcpy, 13% of whisper's KQ
        let row = &mut dst.row_mut(j0 + j)[r..r + v.len()];
        match (<&mut [f32; 2]>::try_from(&mut *row), <&[f32; 2]>::try_from(v)) {
            (Ok(d), Ok(s)) => *d = *s,
            _ => match (<&mut [f32; 8]>::try_from(&mut *row), <&[f32; 8]>::try_from(v)) {
                (Ok(d), Ok(s)) => *d = *s,
                _ => row.copy_from_slice(v),
            },
        }
    }) }
}

/// Weight rows per [`quant::Panel`]: 16 rows of up to 48 blocks unpack to 48 KiB.
const PANEL_ROWS: usize = quant::MAX_ROWS;
/// Row pairs x activation columns of one 512-bit register tile.
const WIDE_P: usize = 2;
const WIDE_C: usize = 4;

thread_local! {
    /// Each worker's unpacked weight panel, reused across chunks and products.
    static PANEL: std::cell::RefCell<quant::Panel> = const { std::cell::RefCell::new(quant::Panel::new()) };
}

/// The rows of `dst` with the AVX-512 kernels: one activation column streams the weights
/// through [`quant::matvec`]; batches unpack [`PANEL_ROWS`] rows at a time into a panel
/// and walk it in tiles of [`WIDE_P`] row pairs x [`WIDE_C`] columns. `off` is the prepared
/// activations' `vpdpbusd` start values (empty for Q4_1 and Q5_1).
///
/// # Safety
/// AVX-512 F/BW/VL/DQ/VNNI must be available (AVX2/FMA/F16C too).
#[inline(never)] // one call per chunk; keeps each format's kernel visible to profilers
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn wide_rows<F: Avx512Tile>(w: &Weights<'_>, a: &ActRows<'_, F::A>, off: &[[i32; 8]], dst: &mut DstView<'_>) {
    let rows = dst.weight_rows();
    let cols = dst.act_rows();
    if rows.is_empty() || cols.is_empty() {
        return;
    }
    let r0 = rows.start;
    let mut wr: [&[F::W]; PANEL_ROWS] = [&[]; PANEL_ROWS];
    if dst.is_single_act() {
        let out = dst.row_mut(0);
        let mut i = rows.start;
        while i < rows.end {
            let m = (rows.end - i).min(PANEL_ROWS);
            for (r, slot) in wr[..m].iter_mut().enumerate() {
                *slot = blocks_from_bytes::<F::W>(w.row(i + r));
            }
            // SAFETY: CPU features by this function's contract; shapes are checked inside.
            unsafe { quant::matvec::<F, 4>(&wr[..m], a, off, &mut out[i - r0..i - r0 + m]) };
            i += m;
        }
        return;
    }
    PANEL.with(|panel| {
        let mut panel = panel.borrow_mut();
        let mut i = rows.start;
        while i < rows.end {
            let m = (rows.end - i).min(PANEL_ROWS);
            for (r, slot) in wr[..m].iter_mut().enumerate() {
                *slot = blocks_from_bytes::<F::W>(w.row(i + r));
            }
            // SAFETY (prepare, tiles): CPU features by this function's contract; shapes are
            // checked inside.
            unsafe { panel.prepare::<F>(&wr[..m], a) };
            let pairs = panel.pairs();
            let mut j = cols.start;
            while j + WIDE_C <= cols.end {
                unsafe { wide_cols::<F, WIDE_C>(&panel, a, off, pairs, i, j, m, dst) };
                j += WIDE_C;
            }
            match cols.end - j {
                3 => unsafe { wide_cols::<F, 3>(&panel, a, off, pairs, i, j, m, dst) },
                2 => unsafe { wide_cols::<F, 2>(&panel, a, off, pairs, i, j, m, dst) },
                1 => unsafe { wide_cols::<F, 1>(&panel, a, off, pairs, i, j, m, dst) },
                _ => {}
            }
            i += m;
        }
    });
}

/// Columns `j..j + C` of every row pair of `panel` (rows `i..i + m` of `dst`).
///
/// # Safety
/// As [`wide_rows`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn wide_cols<F: Avx512Tile, const C: usize>(
    panel: &quant::Panel,
    a: &ActRows<'_, F::A>,
    off: &[[i32; 8]],
    pairs: usize,
    i: usize,
    j: usize,
    m: usize,
    dst: &mut DstView<'_>,
) {
    let mut p = 0;
    // SAFETY (tile calls): passed on from this function's contract.
    while p + WIDE_P <= pairs {
        let t = unsafe { panel.tile::<F, WIDE_P, C>(p, a, off, j) };
        put_pairs(dst, i, j, m, p, &t);
        p += WIDE_P;
    }
    while p < pairs {
        let t = unsafe { panel.tile::<F, 1, C>(p, a, off, j) };
        put_pairs(dst, i, j, m, p, &t);
        p += 1;
    }
}

/// Stores a panel tile: `t[p][h][c]` is weight row `i + 2 (p0 + p) + h` (when below `m`
/// rows of the panel), activation `j + c`.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // c, p, h name the output as in the kernel
fn put_pairs<const P: usize, const C: usize>(dst: &mut DstView<'_>, i: usize, j: usize, m: usize, p0: usize, t: &[[[f32; C]; 2]; P]) {
    let base = i - dst.rows.start;
    for c in 0..C {
        let row = dst.row_mut(j + c);
        for p in 0..P {
            for h in 0..2 {
                let r = 2 * (p0 + p) + h;
                if r < m {
                    row[base + r] = t[p][h][c];
                }
            }
        }
    }
}

