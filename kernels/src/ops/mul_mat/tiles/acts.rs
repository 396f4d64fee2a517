//! Activations in the partner format of the weights (ggml's `vec_dot_type`), prepared once per
//! product and read by every thread.
//!
//! One preparation serves whichever SIMD level runs the product, so the few facts about a level
//! that decide what is prepared live here, below the ISA families that read the result: which
//! levels read F16 activations as half bits ([`halves`]) and AVX-512's `vpdpbusd` start values
//! (`offsets`). The families import this file and it imports none of them.

use super::operands::Acts;
use crate::cpu_features::{simd_level, SimdLevel};
use crate::quant::HostQ8K;
use crate::quant::{self, q8_0, q8_1, q8_k, BlockQ8K, BlockQ8_0, BlockQ8_1, QuantBlock, WType, QK};

/// Activation rows in a partner format: `n` rows of `nb` blocks (row-major), and the blocks'
/// scales (and Q8_1 sums) as f32 stored block-major (`[b * n + j]`), so a tile reads the scales
/// of its columns from one place instead of converting a half per block and output.
#[derive(Clone, Copy)]
#[allow(dead_code)] // read by the SIMD tile kernels only
pub struct ActRows<'a, A> {
    pub blocks: &'a [A],
    pub d: &'a [f32],
    pub s: &'a [f32],
    pub nb: usize,
    pub n: usize,
}

impl<A> ActRows<'_, A> {
    /// Bytes of one activation row's blocks (what a tile walk's cache block holds per row).
    pub fn row_bytes(&self) -> usize {
        self.nb * std::mem::size_of::<A>()
    }
}

/// Q4_1's `m * s` sums of every output of a quantized panel (weight rows of a chunk × its
/// activation rows `a0..a0 + na`), computed before the tiles run by each level's
/// `Panel::with_min_sums`; the bookkeeping both levels share.
#[derive(Default)]
pub(crate) struct MinSums {
    values: Vec<f32>,
    a0: usize,
    na: usize,
}

impl MinSums {
    /// Zeros for `rows` weight rows against the activation rows `acts`.
    pub(crate) fn new(rows: usize, acts: std::ops::Range<usize>) -> Self {
        MinSums { values: vec![0f32; rows * acts.len()], a0: acts.start, na: acts.len() }
    }

    /// Index of output (weight row `r`, activation row `j`) in [`Self::values_mut`].
    pub(crate) fn at(&self, r: usize, j: usize) -> usize {
        debug_assert!(j >= self.a0 && j < self.a0 + self.na);
        r * self.na + (j - self.a0)
    }

    pub(crate) fn values_mut(&mut self) -> &mut [f32] {
        &mut self.values
    }

    /// Weight row `r`'s sums (empty when none were computed).
    pub(crate) fn row(&self, r: usize) -> MinSumsRow<'_> {
        MinSumsRow { values: &self.values[r * self.na..(r + 1) * self.na], a0: self.a0 }
    }
}

/// One weight row of [`MinSums`].
#[derive(Clone, Copy)]
pub(crate) struct MinSumsRow<'a> {
    values: &'a [f32],
    a0: usize,
}

impl MinSumsRow<'_> {
    /// The sums of activation rows `c0..c0 + C` (checked: a tile outside the panel's activation
    /// rows, or a panel built without its sums, panics instead of adding nothing).
    #[inline(always)]
    pub(crate) fn cols<const C: usize>(&self, c0: usize) -> [f32; C] {
        assert!(c0 >= self.a0 && c0 + C <= self.a0 + self.values.len(), "panel without the tile's m * s sums");
        let v = &self.values[c0 - self.a0..][..C];
        std::array::from_fn(|c| v[c])
    }
}

/// How a caller runs `f(j)` for every row `j < n` (possibly in parallel, see
/// [`QuantizedActs::prepare_par`]).
pub type ParRows<'a> = &'a dyn Fn(usize, &(dyn Fn(usize) + Sync));

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum QKind {
    None,
    F16,
    Q8_0,
    Q8_1,
    Q8K,
}

/// Whether F16 products at `level` with rows of `k` elements read their activations as half
/// bits ([`QuantizedActs::hb`]) rather than as a widened f32 copy: the AVX2 tiles (which widen
/// them with `vcvtph2ps` as they load them, at the rate of plain loads), NEON with FP16
/// arithmetic (which multiplies them as halves), and the AVX-512 tiles when a tile's four
/// activation rows of f32 would take more than half of L1 ([`AVX512_HALVES_MIN_K`]).
pub(super) fn halves(level: SimdLevel, k: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    return match crate::cpu_features::clamp_level(level) {
        SimdLevel::Avx2 => true,
        SimdLevel::Avx512 => k >= AVX512_HALVES_MIN_K,
        _ => false,
    };
    #[cfg(target_arch = "aarch64")]
    return {
        let _ = k;
        half_products(level)
    };
    #[allow(unreachable_code)]
    {
        let _ = (level, k);
        false
    }
}

/// Shortest rows for which the AVX-512 F16 tiles read half-bit activations, widening them as they
/// load them: the 2 x 4 tile keeps four activation rows in L1 while the chunk's weight rows
/// stream past, and four f32 rows of 1024 elements are already half of a 32 KiB L1. With longer
/// f32 rows both streams came from L2 (whisper base's KQV, k = 1500, and FFN down, k = 2048, ran
/// at 60-65 % of the projections' multiply-add rate); as halves those products took 0.81x and
/// 0.76x the time (`bench_ops_lm 2 7 "x 1500"`, 5 interleaved runs). Shorter rows stay f32: the
/// conversions cost more than they save there (k = 512: 1.07-1.10x as halves, k = 576: 1.10-1.16x).
#[cfg(target_arch = "x86_64")]
const AVX512_HALVES_MIN_K: usize = 1024;

/// Whether F16 products at `level` accumulate in half precision: NEON on a CPU with FEAT_FP16,
/// as ggml-cpu built with `+fp16` (see `neon::float::f16_tile_hp`); their activations are then
/// prepared as half bits too.
#[cfg(target_arch = "aarch64")]
fn half_products(level: SimdLevel) -> bool {
    crate::cpu_features::clamp_level(level) == crate::cpu_features::SimdLevel::Neon && crate::cpu_features::has_fp16()
}

/// The activation blocks' 4-byte sums times `off`, as the `vpdpbusd` start values of the
/// formats with signed weights (see `avx512::quant`'s module doc):
/// `out[i][l] = off * sum(qs[4l..4l + 4])`.
#[cfg(target_arch = "x86_64")]
fn offsets(blocks: impl Iterator<Item = [i8; 32]>, off: i32, out: &mut Vec<[i32; 8]>) {
    out.clear();
    out.extend(blocks.map(|qs| std::array::from_fn(|l| off * qs[4 * l..4 * l + 4].iter().map(|&q| q as i32).sum::<i32>())));
}

/// Activation rows converted to the partner format of a quantized weight type (Q8_0 for Q4_0 and
/// Q8_0 weights, Q8_1 for Q4_1), computed once per MUL_MAT and then read by every thread.
/// Keeps its buffers between calls so steady-state inference does not allocate.
#[derive(Debug)]
pub struct QuantizedActs {
    pub(super) q8_0: Vec<BlockQ8_0>,
    pub(super) q8_1: Vec<BlockQ8_1>,
    /// Q8_K blocks for the K-quant weights, row-major (`[j * nb + b]`).
    pub(super) q8k: Vec<BlockQ8K>,
    /// The host's Q8_K quantizer, used for `q8k` when set (see [`HostQ8K`]). Set it from the
    /// node (`Node::q8k`) before each prepare: without it the Rust quantizer rounds as clang
    /// builds do, not as GCC `-mfma` hosts do.
    pub host_q8k: Option<HostQ8K>,
    /// Block scales (and Q8_1 sums) as f32, block-major (`[b * n + j]`) for the tile kernels.
    pub(super) d: Vec<f32>,
    pub(super) s: Vec<f32>,
    /// For F16 weights where the kernels read f32 (AVX-512, NEON without FP16 arithmetic, the
    /// portable level): the activations rounded to half precision (ggml's F16 partner format),
    /// kept widened as f32; `n` rows of `k`.
    pub(super) h: Vec<f32>,
    /// For F16 weights elsewhere ([`halves`]): the same rows as half bit patterns (row `j` at
    /// `j * h_stride`), as ggml's F16 work buffer holds them: half the bytes of `h`.
    pub(super) hb: Vec<u16>,
    /// Whether the F16 activations were prepared as `hb` (else as `h`).
    pub(super) halves: bool,
    /// x86 with AVX-512: Q8_0 blocks' 4-byte sums times -8 (Q4_0 weights), -16 (Q5_0) or -128 (Q8_0), the
    /// start values of `vpdpbusd` over unsigned weight bytes (see `avx512::quant`).
    #[cfg(target_arch = "x86_64")]
    pub(super) off: Vec<[i32; 8]>,
    /// Row `j` of `h` starts at `h_off + j * h_stride` (64-byte aligned rows).
    pub(super) h_off: usize,
    pub(super) h_stride: usize,
    pub(super) kind: QKind,
    pub(super) k: usize,
    pub(super) n: usize,
}

impl Default for QuantizedActs {
    fn default() -> Self {
        Self::new()
    }
}

/// Converts row `j` of `acts` into `out`'s `j`-th chunk of `width` items, rows in parallel.
fn rows<T: Send>(out: &mut [T], width: usize, n: usize, par: ParRows<'_>, f: impl Fn(usize, &mut [T]) + Sync) {
    let slots: Vec<parking_lot::Mutex<&mut [T]>> = out.chunks_exact_mut(width.max(1)).take(n).map(parking_lot::Mutex::new).collect();
    par(slots.len(), &|j| f(j, &mut slots[j].lock()));
}

/// Buffers only grow (the rows written are the only ones read): whisper's products alternate
/// between the F16 partner's two forms, and clearing the other one (or shrinking it) made the
/// next product zero-fill it again, 36 MB per layer for KQV's halves.
fn grow<T: Clone>(v: &mut Vec<T>, len: usize, fill: T) {
    if v.len() < len {
        v.resize(len, fill);
    }
}

impl QuantizedActs {
    pub fn new() -> Self {
        QuantizedActs {
            q8_0: Vec::new(),
            q8_1: Vec::new(),
            q8k: Vec::new(),
            host_q8k: None,
            d: Vec::new(),
            s: Vec::new(),
            h: Vec::new(),
            hb: Vec::new(),
            halves: false,
            #[cfg(target_arch = "x86_64")]
            off: Vec::new(),
            h_off: 0,
            h_stride: 0,
            kind: QKind::None,
            k: 0,
            n: 0,
        }
    }

    /// Converts `acts` to `wtype`'s partner format: Q8_0 / Q8_1 blocks for quantized weights,
    /// half-rounded values for F16 weights; F32 weights read the activations as they are.
    pub fn prepare(&mut self, wtype: WType, acts: &Acts<'_>) {
        self.prepare_at(simd_level(), wtype, acts)
    }

    /// [`Self::prepare`] on an explicit kernel level (each level converts as ggml-cpu does on
    /// that kind of CPU).
    pub fn prepare_at(&mut self, level: SimdLevel, wtype: WType, acts: &Acts<'_>) {
        self.prepare_par(level, wtype, acts, &|n, f| (0..n).for_each(f));
    }

    /// [`Self::prepare_at`] with the rows converted through `par(n, f)`, which must call `f(j)`
    /// once for every `j < n`, in any order and on any threads (a prompt's activations are as
    /// much work as a small matrix product, so the caller spreads them over its thread pool).
    pub fn prepare_par(&mut self, level: SimdLevel, wtype: WType, acts: &Acts<'_>, par: ParRows<'_>) {
        self.k = acts.k;
        self.n = acts.n;
        match wtype {
            WType::F32 => self.kind = QKind::None,
            WType::F16 => self.prepare_f16(level, acts, par),
            WType::Q4_0 | WType::Q5_0 | WType::Q8_0 | WType::IQ4NL => self.prepare_q8_0(level, wtype, acts, par),
            WType::Q4K | WType::Q5K | WType::Q6K => self.prepare_q8k(acts, par),
            WType::Q4_1 | WType::Q5_1 => self.prepare_q8_1(level, acts, par),
        }
    }

    /// F16 weights' partner: the activations rounded to halves, as half bits or as f32.
    fn prepare_f16(&mut self, level: SimdLevel, acts: &Acts<'_>, par: ParRows<'_>) {
        let (k, n) = (acts.k, acts.n);
        self.kind = QKind::F16;
        // rows start on 64-byte boundaries (stride rounded up to 16 floats): the AVX-512
        // tiles load whole cache lines, and split-line loads slowed whisper's attention
        let hs = k.next_multiple_of(16);
        self.h_stride = hs;
        // the kernels that read half bits get no f32 copy (it was twice the bytes of
        // ggml's F16 work buffer: 72 MB during whisper base's KQV)
        self.halves = halves(level, k);
        if self.halves {
            grow(&mut self.hb, n * hs, 0);
            rows(&mut self.hb, hs, n, par, |j, out| quant::f16::f32_to_f16_slice_at(level, acts.row(j), &mut out[..k]));
            return;
        }
        grow(&mut self.h, n * hs + 15, 0.0);
        self.h_off = (16 - (self.h.as_ptr() as usize / 4) % 16) % 16;
        let off = self.h_off;
        rows(&mut self.h[off..], hs, n, par, |j, out| quant::f16::round_f16_slice_at(level, acts.row(j), &mut out[..k]));
    }

    /// Q8_0 blocks (Q4_0, Q5_0, Q8_0, IQ4_NL weights), their scales block-major, and on
    /// AVX-512 the `vpdpbusd` offsets.
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
    fn prepare_q8_0(&mut self, level: SimdLevel, wtype: WType, acts: &Acts<'_>, par: ParRows<'_>) {
        let (k, n) = (acts.k, acts.n);
        assert!(k.is_multiple_of(QK), "k = {k} is not a multiple of {QK}");
        self.kind = QKind::Q8_0;
        let nb = k / QK;
        self.q8_0.resize(nb * n, BlockQ8_0::default());
        rows(&mut self.q8_0, nb, n, par, |j, out| q8_0::quantize_row_at(level, acts.row(j), out));
        self.d.resize(nb * n, 0.0);
        // block-major: d[b * n + j] is block b of row j (nested loops: the index
        // divisions per block were most of a decode step's activation preparation)
        for (j, row) in self.q8_0.chunks_exact(nb).enumerate() {
            for (b, blk) in row.iter().enumerate() {
                self.d[b * n + j] = quant::f16::fp16_to_fp32(blk.d);
            }
        }
        // (IQ4_NL runs the AVX2 kernels on AVX-512 too, which read no offsets)
        #[cfg(target_arch = "x86_64")]
        if crate::cpu_features::clamp_level(level) == SimdLevel::Avx512 && wtype != WType::IQ4NL {
            let off = match wtype {
                WType::Q4_0 => -8,
                WType::Q5_0 => -16,
                _ => -128,
            };
            offsets(self.q8_0.iter().map(|b| b.qs), off, &mut self.off);
        }
    }

    /// Q8_K blocks (the K-quants), by the host's quantizer when it has one.
    fn prepare_q8k(&mut self, acts: &Acts<'_>, par: ParRows<'_>) {
        let (k, n) = (acts.k, acts.n);
        assert!(k.is_multiple_of(q8_k::QK_K), "k = {k} is not a multiple of {}", q8_k::QK_K);
        self.kind = QKind::Q8K;
        let nb = k / q8_k::QK_K;
        self.q8k.resize(nb * n, BlockQ8K::default());
        // (an all-zero row block keeps the bsums of an earlier product under the host's
        // quantizer, which leaves them unwritten as ggml's wdata does: every kernel
        // multiplies them by that block's zero scale)
        let host = self.host_q8k;
        rows(&mut self.q8k, nb, n, par, |j, out| match host {
            Some(h) => h.quantize(acts.row(j), out),
            None => q8_k::quantize_row(acts.row(j), out),
        });
    }

    /// Q8_1 blocks (Q4_1, Q5_1 weights), their scales and sums block-major.
    fn prepare_q8_1(&mut self, level: SimdLevel, acts: &Acts<'_>, par: ParRows<'_>) {
        let (k, n) = (acts.k, acts.n);
        assert!(k.is_multiple_of(QK), "k = {k} is not a multiple of {QK}");
        self.kind = QKind::Q8_1;
        let nb = k / QK;
        self.q8_1.resize(nb * n, BlockQ8_1::default());
        rows(&mut self.q8_1, nb, n, par, |j, out| q8_1::quantize_row_at(level, acts.row(j), out));
        self.d.resize(nb * n, 0.0);
        self.s.resize(nb * n, 0.0);
        // block-major, as for Q8_0
        for (j, row) in self.q8_1.chunks_exact(nb).enumerate() {
            for (b, blk) in row.iter().enumerate() {
                self.d[b * n + j] = quant::f16::fp16_to_fp32(blk.d);
                self.s[b * n + j] = quant::f16::fp16_to_fp32(blk.s);
            }
        }
    }

    /// Bytes this holds on the heap (capacity, not length).
    pub fn heap_bytes(&self) -> usize {
        fn bytes<T>(v: &Vec<T>) -> usize {
            v.capacity() * std::mem::size_of::<T>()
        }
        let n = bytes(&self.q8_0) + bytes(&self.q8_1) + bytes(&self.q8k) + bytes(&self.d) + bytes(&self.s) + bytes(&self.h);
        let n = n + bytes(&self.hb);
        #[cfg(target_arch = "x86_64")]
        let n = n + bytes(&self.off);
        n
    }

    /// F16 rows may be read as prefixes of the prepared ones (`acts.k` up to the prepared `k`:
    /// see `ops::mul_mat::causal::trim_keys`); the kernels take the weights' `k` elements.
    pub(super) fn check(&self, kind: QKind, acts: &Acts<'_>) {
        let k_ok = self.k == acts.k || (kind == QKind::F16 && acts.k <= self.k);
        assert!(self.kind == kind && k_ok && self.n == acts.n, "QuantizedActs not prepared for this weight type / activation shape");
    }

    pub(super) fn q8_0_row(&self, j: usize) -> &[BlockQ8_0] {
        let nb = self.k / QK;
        &self.q8_0[j * nb..(j + 1) * nb]
    }

    pub(super) fn q8_1_row(&self, j: usize) -> &[BlockQ8_1] {
        let nb = self.k / QK;
        &self.q8_1[j * nb..(j + 1) * nb]
    }

    pub(super) fn q8k_row(&self, j: usize) -> &[BlockQ8K] {
        let nb = self.k / q8_k::QK_K;
        &self.q8k[j * nb..(j + 1) * nb]
    }

    /// The Q8_K rows as the K-quant tiles read them (scales are in the blocks).
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub(super) fn k_rows(&self) -> ActRows<'_, BlockQ8K> {
        ActRows { blocks: &self.q8k, d: &[], s: &[], nb: self.k / q8_k::QK_K, n: self.n }
    }

    pub(super) fn h_row(&self, j: usize) -> &[f32] {
        let start = self.h_off + j * self.h_stride;
        &self.h[start..start + self.k]
    }

    /// Row `j` of the activations as half bits (prepared where [`halves`]).
    pub(super) fn hb_row(&self, j: usize) -> &[u16] {
        &self.hb[j * self.h_stride..j * self.h_stride + self.k]
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub(super) fn tile_rows<'q, A: QuantBlock>(&'q self, blocks: &'q [A]) -> ActRows<'q, A> {
        ActRows { blocks, d: &self.d, s: &self.s, nb: self.k / QK, n: self.n }
    }
}

