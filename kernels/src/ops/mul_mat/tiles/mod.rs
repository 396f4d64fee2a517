//! The two MUL_MAT kernels of the CPU backend, over plain row-major memory: the bottom of
//! `ops::mul_mat`, whose products (`product`, `streamed`) cut a node into these views. Nothing
//! here reads a node or a ggml tensor.
//!
//! Shapes follow ggml: weights are `rows` rows of `k` values (`src0`), activations are `n` rows
//! of `k` f32 (`src1`), and the result has `n` rows of `rows` values (`dst[j][i] = w_i . a_j`).
//! Work is split across threads in blocks of weight rows x activation rows: every entry point
//! computes exactly the outputs covered by its [`DstView`], and [`DstView::split_even`] /
//! [`DstView::split_acts_even`] hand out disjoint blocks of one output buffer without unsafe code
//! on the caller's side.
//!
//! * [`mul_mat_vec`] (small `n`): activations are quantized once to the weights' partner format
//!   ([`QuantizedActs`], shared read-only by all threads) and each output is one SIMD dot product,
//!   like ggml-cpu's `vec_dot` path. Memory-bound; the right choice for decoding.
//! * [`mul_mat_gemm`] (large `n`): weight rows are dequantized tile by tile into an f32 panel
//!   and multiplied with `matrixmultiply::sgemm`, which is compute-bound and amortizes the
//!   dequantization over all `n` activations. Activations stay f32, so this path is slightly
//!   more accurate than the quantized one.
//!
//! Files, from the ground up; each imports only files listed before it, so no import runs back
//! up and nothing below this file imports it:
//!
//! * `operands`: the operand views ([`Weights`], [`Acts`], [`DstView`]), which every other file
//!   reads.
//! * Shared helpers of the SIMD levels, on the operands only: `acts` the activations in the
//!   weights' partner format, prepared once per product for whichever level runs it (so it also
//!   holds what a level wants prepared: half bits or f32 for F16, AVX-512's `vpdpbusd` offsets);
//!   `walk` the register-tile walk; `heads` the head-row kernel of the x86 levels. `gemm`, the
//!   sgemm path, stands beside them.
//! * `avx2`, `neon`: one folder per ISA tile family, each implementing its tile trait for the
//!   block formats of `quant` ([`crate::quant::Format`]), one file per kind of tile (`quant`:
//!   the 32-value formats, `kquant`, `iq4nl`, `float`: F16 / F32, `matvec`: decoding; NEON's
//!   `panel` and `lanes` hold the unpacked weight rows and the integer lane sums, which AVX2
//!   keeps in `quant`). `avx512` is built on `avx2` by design (its module doc says how), and is
//!   the one family that imports another.
//! * `dot`: one `vec_dot` on an explicit level, over the families' tile traits.
//! * This file: the dispatch (level, vec or gemm). `tests` compares every level with the
//!   portable one.

mod acts;
mod dot;
mod gemm;
mod operands;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod walk;
#[cfg(target_arch = "x86_64")]
mod heads;
#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "aarch64")]
mod neon;
#[cfg(test)]
mod tests;

pub use acts::{ActRows, ParRows, QuantizedActs};
pub use dot::{vec_dot_at, TileFormat};
pub use gemm::{gemm_tile_rows, mul_mat_gemm, mul_mat_gemm_at};
pub use operands::{Acts, DstView, RowBits, Weights};

use acts::QKind;
use operands::check_shapes;

use crate::cpu_features::{clamp_level, simd_level, SimdLevel};
use crate::quant::{self, blocks_from_bytes, q4_0, q4_1, q4_k, q5_0, q5_1, q5_k, q6_k, q8_0};
use crate::quant::{BlockQ4K, BlockQ4_0, BlockQ4_1, BlockQ5K, BlockQ5_0, BlockQ5_1, BlockQ6K, BlockQ8_0};

pub use crate::quant::WType;

impl WType {
    /// Smallest activation count for which [`mul_mat`] picks the sgemm path. Below it the
    /// dequantize + pack overhead of sgemm is not repaid (and matrixmultiply's 8x8 register
    /// tile wastes work on ragged batches); F32 needs no dequantization so it switches earlier.
    /// Crossovers measured with the ignored `bench_mul_mat` test on an AVX2 EPYC core.
    pub const fn gemm_min_batch(self) -> usize {
        match self {
            WType::F32 => 8,
            WType::F16 | WType::Q4_0 | WType::Q4_1 | WType::Q5_0 | WType::Q5_1 | WType::Q8_0 | WType::Q4K | WType::Q5K | WType::Q6K | WType::IQ4NL => 16,
        }
    }
}


/// f32 dot product (8-lane portable / AVX2+FMA with 4 accumulators).
pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    dot_f32_at(simd_level(), a, b)
}

/// [`dot_f32`] on an explicit kernel level (clamped to what the CPU supports).
pub fn dot_f32_at(level: SimdLevel, a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "dot_f32: length mismatch");
    match clamp_level(level) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: clamp_level only returns Avx2 when AVX2, FMA and F16C were detected at runtime.
        SimdLevel::Avx2 | SimdLevel::Avx512 => unsafe { avx2::dot_f32(a, b) },
        _ => dot_f32_portable(a, b),
    }
}

fn dot_f32_portable(a: &[f32], b: &[f32]) -> f32 {
    quant::f16::dot_lanes(a.len().min(b.len()), |i| a[i] * b[i])
}

/// Picks the kernel for `acts.n` activations: on the SIMD levels always ggml's dot products
/// (tiled, see `avx2`, `avx512`, `neon`), so results equal ggml-cpu's bit for bit; on the
/// portable level dot products
/// below [`WType::gemm_min_batch`] and sgemm above. `q` is read unless
/// [`needs_quantized_acts`] says it need not be prepared.
pub fn mul_mat(w: &Weights<'_>, acts: &Acts<'_>, q: &QuantizedActs, dst: DstView<'_>, scratch: &mut Vec<f32>) {
    if use_gemm(w.wtype, acts.n) {
        mul_mat_gemm(w, acts, dst, scratch)
    } else {
        mul_mat_vec(w, acts, q, dst)
    }
}

/// Whether [`mul_mat`] takes the sgemm path for `n` activations.
pub fn use_gemm(wtype: WType, n: usize) -> bool {
    use_gemm_at(simd_level(), wtype, n)
}

/// [`use_gemm`] on an explicit kernel level.
pub fn use_gemm_at(level: SimdLevel, wtype: WType, n: usize) -> bool {
    (clamp_level(level) == SimdLevel::Portable || *SGEMM) && n >= wtype.gemm_min_batch()
}

/// `GGML_RS_SIMD_SGEMM=1`: batches through sgemm on every level, for apps that prefer speed to
/// stock's exact answers. A little faster for F16 weights (whisper base encode 1.85x ggml-cpu
/// against the exact tiles' 1.75x), but activations keep f32 sums in sgemm's order, so results
/// are close to ggml-cpu's (NMSE ~1e-3 at the logits), not identical. Read once.
static SGEMM: once_cell::sync::Lazy<bool> = once_cell::sync::Lazy::new(|| std::env::var("GGML_RS_SIMD_SGEMM").is_ok_and(|v| v == "1"));

/// Whether the app asked for [`SGEMM`] (then SIMD does not promise stock's exact answers).
pub fn sgemm_forced() -> bool {
    *SGEMM
}

/// Whether [`mul_mat`] reads a prepared [`QuantizedActs`] for this type and batch.
pub fn needs_quantized_acts(wtype: WType, n: usize) -> bool {
    needs_quantized_acts_at(simd_level(), wtype, n)
}

/// [`needs_quantized_acts`] on an explicit kernel level.
pub fn needs_quantized_acts_at(level: SimdLevel, wtype: WType, n: usize) -> bool {
    match clamp_level(level) {
        _ if use_gemm_at(level, wtype, n) => false,
        SimdLevel::Portable => wtype.block_len() > 1,
        _ => wtype != WType::F32,
    }
}

/// Dot-product kernel for the weight rows of `dst`. `q` must have been prepared from `acts` for
/// `w.wtype()` (checked) when the weights are quantized.
pub fn mul_mat_vec(w: &Weights<'_>, acts: &Acts<'_>, q: &QuantizedActs, dst: DstView<'_>) {
    mul_mat_vec_at(simd_level(), w, acts, q, dst)
}

/// [`mul_mat_vec`] on an explicit kernel level.
pub fn mul_mat_vec_at(level: SimdLevel, w: &Weights<'_>, acts: &Acts<'_>, q: &QuantizedActs, mut dst: DstView<'_>) {
    check_shapes(w, acts, &dst);
    let level = clamp_level(level);
    match w.wtype {
        WType::F32 => {}
        // the portable F16 kernel reads the f32 activations directly
        WType::F16 if level == SimdLevel::Portable => {}
        WType::F16 => q.check(QKind::F16, acts),
        WType::Q4_0 | WType::Q5_0 | WType::Q8_0 | WType::IQ4NL => q.check(QKind::Q8_0, acts),
        WType::Q4_1 | WType::Q5_1 => q.check(QKind::Q8_1, acts),
        WType::Q4K | WType::Q5K | WType::Q6K => q.check(QKind::Q8K, acts),
    }
    // Dispatch once per call, not per dot product: the whole loop is compiled with the level's
    // target features so the dot kernels inline into it.
    match level {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: clamp_level only returns Avx2 when AVX2, FMA and F16C were detected at runtime.
        SimdLevel::Avx2 => unsafe { avx2::mul_mat_tiles(w, acts, q, &mut dst) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: clamp_level only returns Avx512 when its AVX-512 subset was detected too.
        SimdLevel::Avx512 => unsafe { avx512::mul_mat_tiles(w, acts, q, &mut dst) },
        #[cfg(target_arch = "aarch64")]
        SimdLevel::Neon => neon::mul_mat_tiles(w, acts, q, &mut dst),
        _ => mul_mat_vec_portable(w, acts, q, &mut dst),
    }
}

/// Shared loop of the dot-product kernel: weight row outer, activations inner, so each weight
/// row is streamed from memory once and stays in L1 while it meets every activation row.
#[inline(always)]
fn for_each_output<R>(dst: &mut DstView<'_>, row: impl Fn(usize) -> R, dot: impl Fn(&R, usize) -> f32) {
    let rows = dst.weight_rows();
    let r0 = rows.start;
    for i in rows {
        let wr = row(i);
        for j in dst.act_rows() {
            let v = dot(&wr, j);
            dst.row_mut(j)[i - r0] = v;
        }
    }
}

/// The portable dot-product kernel (ggml's scalar `vec_dot`s); the SIMD levels use tiles.
fn mul_mat_vec_portable(w: &Weights<'_>, acts: &Acts<'_>, q: &QuantizedActs, dst: &mut DstView<'_>) {
    match w.wtype {
        WType::F32 => for_each_output(dst, |i| w.row_f32(i), |wr, j| dot_f32_portable(wr, acts.row(j))),
        WType::F16 => for_each_output(dst, |i| w.row_f16(i), |wr, j| quant::f16::dot_f16_f32_portable(wr, acts.row(j))),
        WType::Q4_0 => for_each_output(dst, |i| blocks_from_bytes::<BlockQ4_0>(w.row(i)), |wr, j| q4_0::vec_dot_portable(wr, q.q8_0_row(j))),
        WType::Q4_1 => for_each_output(dst, |i| blocks_from_bytes::<BlockQ4_1>(w.row(i)), |wr, j| q4_1::vec_dot_portable(wr, q.q8_1_row(j))),
        WType::Q5_0 => for_each_output(dst, |i| blocks_from_bytes::<BlockQ5_0>(w.row(i)), |wr, j| q5_0::vec_dot_portable(wr, q.q8_0_row(j))),
        WType::Q5_1 => for_each_output(dst, |i| blocks_from_bytes::<BlockQ5_1>(w.row(i)), |wr, j| q5_1::vec_dot_portable(wr, q.q8_1_row(j))),
        WType::Q8_0 => for_each_output(dst, |i| blocks_from_bytes::<BlockQ8_0>(w.row(i)), |wr, j| q8_0::vec_dot_portable(wr, q.q8_0_row(j))),
        WType::Q4K => for_each_output(dst, |i| blocks_from_bytes::<BlockQ4K>(w.row(i)), |wr, j| q4_k::vec_dot_portable(wr, q.q8k_row(j))),
        WType::Q5K => for_each_output(dst, |i| blocks_from_bytes::<BlockQ5K>(w.row(i)), |wr, j| q5_k::vec_dot_portable(wr, q.q8k_row(j))),
        WType::Q6K => for_each_output(dst, |i| blocks_from_bytes::<BlockQ6K>(w.row(i)), |wr, j| q6_k::vec_dot_portable(wr, q.q8k_row(j))),
        WType::IQ4NL => for_each_output(dst, |i| blocks_from_bytes::<quant::BlockIQ4NL>(w.row(i)), |wr, j| quant::iq4_nl::vec_dot_portable(wr, q.q8_0_row(j))),
    }
}
