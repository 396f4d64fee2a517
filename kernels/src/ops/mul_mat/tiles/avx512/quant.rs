//! AVX-512 (VNNI) tiles of quantized matrix products, bit-identical to ggml-cpu's AVX2 build.
//!
//! Every output keeps the arithmetic of `quant::tile` (ggml's AVX2 `vec_dot`): per block,
//! `acc = fma(dw * da, float(ints), acc)` on 8 lanes, Q4_1's `summs = fma(m, s, summs)`, then
//! `hsum(acc) (+ summs)`. What changes is how much of it one instruction does:
//!
//! * One 512-bit register holds the 8-lane accumulators of two outputs (two weight rows against
//!   one activation column), so the convert, scale multiply and FMA each serve two outputs.
//! * The integer sums come from one `vpdpbusd` (unsigned bytes times signed bytes, groups of 4
//!   summed into 32-bit lanes) instead of `pmaddubsw` + `pmaddwd` (+ the sign trick). The lane
//!   grouping is ggml's (bytes 4i..4i+4 of the block in lane i) and the sums are exact in both:
//!   ggml's `pmaddubsw` pairs stay below 2 * 128 * 127 < 32767, so it never saturates, and
//!   `vpdpbusd` adds exact products into 32 bits. The weights are made unsigned and the
//!   difference taken back through the accumulator's start value, `OFF * sum4(a)`:
//!   Q4_1's nibbles and Q5_1's 5-bit quants are unsigned already (`OFF = 0`); Q4_0 uses `q` in
//!   0..=15 with `OFF = -8` (`sum4((q - 8) a) = sum4(q a) - 8 sum4(a)`), Q5_0 `q` in 0..=31 with
//!   `OFF = -16`; Q8_0 uses `w + 128` (the byte with its top bit flipped) with `OFF = -128`. Activations are ggml's Q8 quants, in -127..=127.
//! * For batches a chunk's weights are unpacked once (bytes of two rows side by side, scales
//!   widened and broadcast) into a [`Panel`] and reused for every activation column.
//!
//! The scale `dw * da` is the same single IEEE multiply per lane as ggml's `_mm256_mul_ps` of two
//! broadcasts, and the horizontal sum of each 8-lane half is ggml's `hsum_float_8`.
//!
//! Everything here needs AVX-512 F/BW/VL/DQ/VNNI besides AVX2/FMA/F16C; callers dispatch through
//! `cpu_features::has_avx512`.

// Register tiles index accumulators, prepared rows and scales with the same row and column
// numbers; iterator chains would hide which output each FMA feeds.
#![allow(clippy::needless_range_loop)]

use super::super::avx2::quant::Avx2Tile;
use super::super::acts::ActRows;
use crate::quant::x86_util::{self, hsum_ps};
use crate::quant::{BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ5_1, BlockQ8_0, BlockQ8_1, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0};
use std::arch::x86_64::*;

/// What the 512-bit kernels need from a block format beyond [`Avx2Tile`].
///
/// # Safety
/// The methods use AVX2 (and, for `pair`, AVX-512F) instructions: call them only from code
/// running on a CPU that has them.
pub(crate) unsafe trait Avx512Tile: Avx2Tile {
    /// Multiplier of the activation's 4-byte sums that turns the unsigned weight bytes' dot
    /// product back into ggml's (see the module doc).
    const OFF: i32;
    /// The block's 32 weights as unsigned bytes in element order.
    unsafe fn bytes(w: &Self::W) -> __m256i;
    /// The block's scale and (Q4_1) minimum as f32.
    unsafe fn scale_min(w: &Self::W) -> (f32, f32);
    /// The activation block's quants.
    fn qs(a: &Self::A) -> &[i8; 32];
    /// Blocks of two rows as one register: row 0's bytes in the low half, row 1's in the high;
    /// with [`Self::HIGH_X16`] a row's high nibbles (elements 16..32) stay in bits 4..8.
    /// By default [`Self::bytes`] of both blocks side by side.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn pair(w0: &Self::W, w1: &Self::W) -> __m512i {
        // SAFETY: AVX2 by this function's contract.
        unsafe { join256(Self::bytes(w0), Self::bytes(w1)) }
    }
    /// Whether [`Self::pair`] leaves the high nibbles in place: 16 times their value, so the
    /// integer sums of lanes 4..8 of each half are 16 times ggml's (see [`matvec`]).
    const HIGH_X16: bool;
    /// Both rows' half-precision scales (and minima) as one word, lowest bits first:
    /// `[d0, m0, d1, m1]` for Q4_1, `[d0, d1, 0, 0]` else.
    fn pair_scale_bits(w0: &Self::W, w1: &Self::W) -> u64;
    /// Position of row 1's scale in [`Self::pair_scale_bits`] (row 0's is 0).
    const D1_LANE: i32;
}

/// `[q0, q0, q1, q1]`: each 4-bit block's 16 bytes twice, row 0 in the low half. Two
/// broadcasting loads, the second merged into the high half (one ALU instruction, where an
/// insert and a lane shuffle took two, both on the shuffle port).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
fn packed_pair(q0: &[u8; 16], q1: &[u8; 16]) -> __m512i {
    // SAFETY: q0 and q1 are 16 readable bytes each; loadu has no alignment requirement.
    let (x0, x1) = unsafe { (_mm_loadu_si128(q0.as_ptr() as *const __m128i), _mm_loadu_si128(q1.as_ptr() as *const __m128i)) };
    _mm512_mask_broadcast_i32x4(_mm512_broadcast_i32x4(x0), 0xFF00, x1)
}

/// `[q0 | q1]` nibbles of two 4-bit blocks, unpacked to bytes in element order per half.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
fn nibble_pair(q0: &[u8; 16], q1: &[u8; 16]) -> __m512i {
    // the second copy of each row shifted down a nibble (its high nibbles)
    let v = _mm512_srlv_epi64(packed_pair(q0, q1), _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0));
    _mm512_and_si512(v, _mm512_set1_epi8(0x0F))
}

/// [`nibble_pair`] without the shift: the high copies keep their nibbles in bits 4..8.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
fn nibble_pair_x16(q0: &[u8; 16], q1: &[u8; 16]) -> __m512i {
    // per 128-bit lane: low nibbles, high nibbles in place, and again for row 1
    let (lo, hi) = (0x0F0F_0F0F_0F0F_0F0Fu64 as i64, 0xF0F0_F0F0_F0F0_F0F0u64 as i64);
    _mm512_and_si512(packed_pair(q0, q1), _mm512_set_epi64(hi, hi, lo, lo, hi, hi, lo, lo))
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn halves2(a: u16, b: u16) -> __m128 {
    _mm_cvtph_ps(_mm_cvtsi32_si128((a as u32 | (b as u32) << 16) as i32))
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn nibbles(qs: &[u8; 16]) -> __m256i {
    x86_util::nibbles32(qs)
}

// SAFETY: AVX2 / AVX-512F bodies, see the trait.
unsafe impl Avx512Tile for Q4_1 {
    const OFF: i32 = 0;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn bytes(w: &BlockQ4_1) -> __m256i {
        nibbles(&w.qs)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn scale_min(w: &BlockQ4_1) -> (f32, f32) {
        let dm = halves2(w.d, w.m);
        (_mm_cvtss_f32(dm), _mm_cvtss_f32(_mm_movehdup_ps(dm)))
    }
    #[inline]
    fn qs(a: &BlockQ8_1) -> &[i8; 32] {
        &a.qs
    }
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn pair(w0: &BlockQ4_1, w1: &BlockQ4_1) -> __m512i {
        nibble_pair_x16(&w0.qs, &w1.qs)
    }
    const HIGH_X16: bool = true;
    #[inline]
    fn pair_scale_bits(w0: &BlockQ4_1, w1: &BlockQ4_1) -> u64 {
        let lo = w0.d as u64 | (w0.m as u64) << 16;
        let hi = w1.d as u64 | (w1.m as u64) << 16;
        lo | hi << 32
    }
    const D1_LANE: i32 = 2;
}

// SAFETY: AVX2 / AVX-512F bodies, see the trait.
unsafe impl Avx512Tile for Q4_0 {
    const OFF: i32 = -8;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn bytes(w: &BlockQ4_0) -> __m256i {
        nibbles(&w.qs)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn scale_min(w: &BlockQ4_0) -> (f32, f32) {
        (_mm_cvtss_f32(halves2(w.d, 0)), 0.0)
    }
    #[inline]
    fn qs(a: &BlockQ8_0) -> &[i8; 32] {
        &a.qs
    }
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn pair(w0: &BlockQ4_0, w1: &BlockQ4_0) -> __m512i {
        nibble_pair(&w0.qs, &w1.qs)
    }
    // its `vpdpbusd` start values (OFF times the activation's 4-byte sums) are shared with the
    // batch tiles, which take the nibbles shifted down
    const HIGH_X16: bool = false;
    #[inline]
    fn pair_scale_bits(w0: &BlockQ4_0, w1: &BlockQ4_0) -> u64 {
        w0.d as u64 | (w1.d as u64) << 16
    }
    const D1_LANE: i32 = 1;
}

// SAFETY: AVX2 / AVX-512F bodies, see the trait.
unsafe impl Avx512Tile for Q8_0 {
    const OFF: i32 = -128;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn bytes(w: &BlockQ8_0) -> __m256i {
        _mm256_xor_si256(x86_util::load_i8x32(&w.qs), _mm256_set1_epi8(-128))
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn scale_min(w: &BlockQ8_0) -> (f32, f32) {
        (_mm_cvtss_f32(halves2(w.d, 0)), 0.0)
    }
    #[inline]
    fn qs(a: &BlockQ8_0) -> &[i8; 32] {
        &a.qs
    }
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn pair(w0: &BlockQ8_0, w1: &BlockQ8_0) -> __m512i {
        let (a, b) = (x86_util::load_i8x32(&w0.qs), x86_util::load_i8x32(&w1.qs));
        let v = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(a), b);
        _mm512_xor_si512(v, _mm512_set1_epi8(-128))
    }
    const HIGH_X16: bool = false;
    #[inline]
    fn pair_scale_bits(w0: &BlockQ8_0, w1: &BlockQ8_0) -> u64 {
        w0.d as u64 | (w1.d as u64) << 16
    }
    const D1_LANE: i32 = 1;
}

/// Two rows' 32-byte blocks as one register, row 0 in the low half.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
fn join256(lo: __m256i, hi: __m256i) -> __m512i {
    _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi)
}

// SAFETY: AVX2 / AVX-512F bodies, see the trait.
unsafe impl Avx512Tile for Q5_0 {
    /// The 5-bit quants `q` in 0..=31 stand for `q - 16`.
    const OFF: i32 = -16;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn bytes(w: &BlockQ5_0) -> __m256i {
        x86_util::quants5_32(&w.qs, &w.qh)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn scale_min(w: &BlockQ5_0) -> (f32, f32) {
        (_mm_cvtss_f32(halves2(w.d, 0)), 0.0)
    }
    #[inline]
    fn qs(a: &BlockQ8_0) -> &[i8; 32] {
        &a.qs
    }
    const HIGH_X16: bool = false;
    #[inline]
    fn pair_scale_bits(w0: &BlockQ5_0, w1: &BlockQ5_0) -> u64 {
        w0.d as u64 | (w1.d as u64) << 16
    }
    const D1_LANE: i32 = 1;
}

// SAFETY: AVX2 / AVX-512F bodies, see the trait.
unsafe impl Avx512Tile for Q5_1 {
    const OFF: i32 = 0;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn bytes(w: &BlockQ5_1) -> __m256i {
        x86_util::quants5_32(&w.qs, &w.qh)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn scale_min(w: &BlockQ5_1) -> (f32, f32) {
        let dm = halves2(w.d, w.m);
        (_mm_cvtss_f32(dm), _mm_cvtss_f32(_mm_movehdup_ps(dm)))
    }
    #[inline]
    fn qs(a: &BlockQ8_1) -> &[i8; 32] {
        &a.qs
    }
    const HIGH_X16: bool = false;
    #[inline]
    fn pair_scale_bits(w0: &BlockQ5_1, w1: &BlockQ5_1) -> u64 {
        let lo = w0.d as u64 | (w0.m as u64) << 16;
        let hi = w1.d as u64 | (w1.m as u64) << 16;
        lo | hi << 32
    }
    const D1_LANE: i32 = 2;
}

/// Loads a block's 32 activation bytes (or 8 offsets) into both halves of a register.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
fn bcast256<T>(p: &T) -> __m512i {
    const { assert!(std::mem::size_of::<T>() == 32) };
    // SAFETY: `p` is 32 readable bytes (asserted by size); loadu has no alignment requirement.
    _mm512_broadcast_i64x4(unsafe { _mm256_loadu_si256(p as *const T as *const __m256i) })
}

/// `hsum_float_8` of both halves: the outputs of row 0 and row 1 of a pair.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
fn hsum_pair(acc: __m512) -> (f32, f32) {
    (hsum_ps(_mm512_castps512_ps256(acc)), hsum_ps(_mm512_extractf32x8_ps::<1>(acc)))
}

/// `hsum_float_8` of all sixteen 8-lane halves of `acc` at once: `out[2k + h]` is half `h` of
/// `acc[k]` reduced exactly as [`hsum_pair`] reduces it. Each step adds the same two values
/// ggml adds, for four to sixteen halves per instruction, and only the shuffles that line them
/// up differ: `x_i + x_(i+4)` for every half (whole 128-bit blocks), then `y_0 + y_2` and
/// `y_1 + y_3`, then their sum. About 22 instructions for the 16 sums of a 2 x 4 tile instead of
/// about 90 one half at a time, which were a tenth of a tile's work with SmolLM2's 18 blocks.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
fn hsum16(acc: [__m512; 8]) -> [f32; 16] {
    // [a0 + a1, a2 + a3, b0 + b1, b2 + b3] over 128-bit blocks: four halves' y_i = x_i + x_(i+4)
    let y = |a: __m512, b: __m512| _mm512_add_ps(_mm512_shuffle_f32x4::<0b10_00_10_00>(a, b), _mm512_shuffle_f32x4::<0b11_01_11_01>(a, b));
    // per 128-bit block: [y_0 + y_2, y_1 + y_3] of two halves
    let s = |a: __m512, b: __m512| _mm512_add_ps(_mm512_shuffle_ps::<0x44>(a, b), _mm512_shuffle_ps::<0xEE>(a, b));
    let (y0, y1, y2, y3) = (y(acc[0], acc[1]), y(acc[2], acc[3]), y(acc[4], acc[5]), y(acc[6], acc[7]));
    let (s0, s1) = (s(y0, y1), s(y2, y3));
    let v = _mm512_add_ps(_mm512_shuffle_ps::<0x88>(s0, s1), _mm512_shuffle_ps::<0xDD>(s0, s1));
    // lane 4L + i of v holds half L % 2 of acc[2i + L / 2]
    let order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    let mut out = [0f32; 16];
    // SAFETY: out is 16 writable f32.
    unsafe { _mm512_storeu_ps(out.as_mut_ptr(), _mm512_permutexvar_ps(order, v)) };
    out
}

/// A chunk's weight rows unpacked once for all activation columns: rows in pairs (an odd last
/// row paired with itself), per pair and block the two rows' unsigned bytes side by side and
/// their scales broadcast over the matching halves, plus Q4_1's minima and minimum sums.
pub(crate) struct Panel {
    /// `[p * nb + b]`: bytes of rows `2p` (low half) and `2p + 1` (high half), block `b`.
    wq: Vec<__m512i>,
    /// `[p * nb + b]`: the two rows' scales, each over its half.
    wd: Vec<__m512>,
    /// Q4_1: `[r * nb + b]`, the block minima.
    wm: Vec<f32>,
    /// Q4_1: `[r * n + c]`, every output's `summs` (fma chain of `m * s` over the blocks).
    sm: Vec<f32>,
    rows: usize,
    nb: usize,
    n: usize,
}

/// Most weight rows one [`Panel`] holds (the walk's `PANEL_ROWS`).
pub(crate) const MAX_ROWS: usize = 16;

impl Panel {
    pub(crate) const fn new() -> Self {
        Panel { wq: Vec::new(), wd: Vec::new(), wm: Vec::new(), sm: Vec::new(), rows: 0, nb: 0, n: 0 }
    }

    /// Row pairs in the panel.
    pub(crate) fn pairs(&self) -> usize {
        self.rows.div_ceil(2)
    }

    /// Unpacks `w` (the chunk's rows, each at least `a.nb` blocks) and computes Q4_1's summs
    /// against every column of `a`.
    ///
    /// # Safety
    /// AVX-512 F/BW/VL/DQ/VNNI, AVX2, FMA and F16C must be available.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    pub(crate) unsafe fn prepare<F: Avx512Tile>(&mut self, w: &[&[F::W]], a: &ActRows<'_, F::A>) {
        let (rows, nb, n) = (w.len(), a.nb, a.n);
        assert!(w.iter().all(|r| r.len() >= nb));
        (self.rows, self.nb, self.n) = (rows, nb, n);
        let pairs = rows.div_ceil(2);
        self.wq.clear();
        self.wd.clear();
        self.wm.clear();
        for p in 0..pairs {
            let (r0, r1) = (w[2 * p], w[(2 * p + 1).min(rows - 1)]);
            for b in 0..nb {
                // SAFETY: this function requires the CPU features of the Wide methods.
                let (q0, q1) = unsafe { (F::bytes(&r0[b]), F::bytes(&r1[b])) };
                let ((d0, _), (d1, _)) = unsafe { (F::scale_min(&r0[b]), F::scale_min(&r1[b])) };
                self.wq.push(_mm512_inserti64x4::<1>(_mm512_castsi256_si512(q0), q1));
                self.wd.push(_mm512_insertf32x8::<1>(_mm512_set1_ps(d0), _mm256_set1_ps(d1)));
            }
        }
        if !F::HAS_MIN {
            return;
        }
        for r in w {
            for b in 0..nb {
                // SAFETY: as above.
                self.wm.push(unsafe { F::scale_min(&r[b]) }.1);
            }
        }
        assert!(a.s.len() >= nb * n);
        self.sm.clear();
        self.sm.resize(rows * n, 0.0);
        assert!(rows <= MAX_ROWS, "a panel holds at most {MAX_ROWS} rows");
        if rows == MAX_ROWS {
            // SAFETY: features by this function's contract; rows 0..MAX_ROWS exist.
            unsafe { self.min_sums::<MAX_ROWS>(0, &a.s[..nb * n]) };
        } else {
            // a product's ragged last panel (rows % 16): its rows one chain at a time, so the
            // side-by-side chains stay a fixed count of registers
            for r in 0..rows {
                // SAFETY: as above, row r exists.
                unsafe { self.min_sums::<1>(r, &a.s[..nb * n]) };
            }
        }
    }

    /// Q4_1's `summs` of panel rows `r0..r0 + R` against every activation column: sixteen
    /// columns at a time, the `R` rows' FMA chains side by side, so one load of the columns'
    /// sums feeds `R` independent chains. One row's chain at a time was latency-bound: 60 % of
    /// `prepare` and a sixth of the Q4_1 prompt products.
    ///
    /// # Safety
    /// As [`Self::prepare`], which has filled `wm` for rows `r0..r0 + R` (`r0 + R <= rows`); `s`
    /// is the activations' block-major sums, `nb * n` long.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn min_sums<const R: usize>(&mut self, r0: usize, s: &[f32]) {
        let (nb, n) = (self.nb, self.n);
        assert!(r0 + R <= self.rows && s.len() == nb * n && self.wm.len() >= self.rows * nb && self.sm.len() >= self.rows * n);
        let mut c0 = 0;
        while c0 < n {
            let mask: __mmask16 = if n - c0 >= 16 { 0xFFFF } else { (1u16 << (n - c0)) - 1 };
            let mut v = [_mm512_setzero_ps(); R];
            for b in 0..nb {
                // SAFETY: lanes c0..c0 + popcount(mask) <= n of row b of s (nb * n long,
                // asserted); masked-off lanes are not read.
                let sv = unsafe { _mm512_maskz_loadu_ps(mask, s.as_ptr().add(b * n + c0)) };
                for r in 0..R {
                    // SAFETY: (r0 + r) * nb + b < rows * nb <= wm's length (asserted).
                    let m = unsafe { *self.wm.get_unchecked((r0 + r) * nb + b) };
                    v[r] = _mm512_fmadd_ps(_mm512_set1_ps(m), sv, v[r]);
                }
            }
            for r in 0..R {
                // SAFETY: as the loads, inside sm's rows * n elements (asserted).
                unsafe { _mm512_mask_storeu_ps(self.sm.as_mut_ptr().add((r0 + r) * n + c0), mask, v[r]) };
            }
            c0 += 16;
        }
    }

    /// Outputs of row pairs `p0..p0 + P` with activation columns `c0..c0 + C`: `out[p][h][c]` is
    /// row `2 (p0 + p) + h`, column `c0 + c` (a duplicated odd last row's value is meaningless).
    /// `off` holds `acts::offsets` of `a`'s blocks (row-major like them) for the signed formats.
    ///
    /// # Safety
    /// As [`Self::prepare`], which must have run for `a`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    pub(crate) unsafe fn tile<F: Avx512Tile, const P: usize, const C: usize>(&self, p0: usize, a: &ActRows<'_, F::A>, off: &[[i32; 8]], c0: usize) -> [[[f32; C]; 2]; P] {
        const { assert!(P * C <= 8, "a tile's accumulators are reduced eight at a time") };
        let (nb, n) = (self.nb, self.n);
        assert!(a.nb == nb && a.n == n && p0 + P <= self.pairs() && c0 + C <= n);
        assert!(a.blocks.len() >= n * nb && a.d.len() >= n * nb && (F::OFF == 0 || off.len() >= n * nb));
        assert!(self.wq.len() >= self.pairs() * nb && self.wd.len() == self.wq.len());
        let mut acc = [[_mm512_setzero_ps(); C]; P];
        for b in 0..nb {
            // SAFETY (unchecked reads in this loop): with b < nb, c0 + c < n and p0 + p < pairs
            // (asserted), (c0 + c) * nb + b and b * n + c0 + c are below n * nb <= the lengths of
            // blocks, d and off, and (p0 + p) * nb + b below the panel's lengths.
            let mut av = [_mm512_setzero_si512(); C];
            let mut da = [_mm512_setzero_ps(); C];
            for c in 0..C {
                av[c] = bcast256(F::qs(unsafe { a.blocks.get_unchecked((c0 + c) * nb + b) }));
                da[c] = _mm512_set1_ps(unsafe { *a.d.get_unchecked(b * n + c0 + c) });
            }
            for p in 0..P {
                let w = unsafe { *self.wq.get_unchecked((p0 + p) * nb + b) };
                let dw = unsafe { *self.wd.get_unchecked((p0 + p) * nb + b) };
                for c in 0..C {
                    let start = if F::OFF != 0 { bcast256(unsafe { off.get_unchecked((c0 + c) * nb + b) }) } else { _mm512_setzero_si512() };
                    let ints = _mm512_dpbusd_epi32(start, w, av[c]);
                    acc[p][c] = _mm512_fmadd_ps(_mm512_mul_ps(dw, da[c]), _mm512_cvtepi32_ps(ints), acc[p][c]);
                }
            }
        }
        let mut flat = [_mm512_setzero_ps(); 8];
        for p in 0..P {
            for c in 0..C {
                flat[p * C + c] = acc[p][c];
            }
        }
        let sums = hsum16(flat);
        let mut out = [[[0f32; C]; 2]; P];
        for p in 0..P {
            let r0 = 2 * (p0 + p);
            let r1 = (r0 + 1).min(self.rows - 1);
            for c in 0..C {
                let (h0, h1) = (sums[2 * (p * C + c)], sums[2 * (p * C + c) + 1]);
                if F::HAS_MIN {
                    out[p][0][c] = h0 + self.sm[r0 * n + c0 + c];
                    out[p][1][c] = h1 + self.sm[r1 * n + c0 + c];
                } else {
                    out[p][0][c] = h0;
                    out[p][1][c] = h1;
                }
            }
        }
        out
    }
}

/// How far ahead in memory [`matvec`] prefetches the weights, in bytes, into L2 (`T1`).
/// Decoding streams every weight from memory once per token; one core's demand misses plus the
/// hardware prefetcher left it latency-bound (7.3 GB/s on a Xeon core against 18 GB/s from L2).
/// With prefetches into L1 (`T0`, 4 KiB ahead) most of the product's samples sat on the
/// prefetch instruction itself, waiting for a free L1 miss buffer; prefetching into L2 twice as
/// far ahead made SmolLM2's generation 5.5 % faster on a Sapphire Rapids-class Xeon (16 KiB:
/// the same; 9 interleaved runs each). Every row fetches its own line ahead with every block
/// (a few times per line): spreading the lines of a pass's byte range over its blocks took two
/// divisions per block and was slower on Zen 4 (`bench_matvec`, one thread, 1536 x 576: Q4_1
/// hot 30.6 -> 29.0 us, cold 43-46 -> 35-38; Q8_0 cold 57-66 -> 50-52).
const PREFETCH_BYTES: usize = 8192;

/// Matrix-vector product (one activation column) of rows `w` into `out` (`out[r]` for `w[r]`),
/// two rows per register and `P` (at most 4) pairs per pass, weights unpacked as they stream in.
///
/// Per block, the pass's scales are widened together (`[d, m]` halves of 4 pairs in one
/// conversion), multiplied by the activation's scale and, for Q4_1, fed to the minima's FMA at
/// once; each pair's two scale products are then spread over its register halves by one
/// permute. A lane holds the same IEEE product `dw * da` as ggml's 8-lane multiply.
///
/// With [`Avx512Tile::HIGH_X16`] (Q4_1) the high nibbles are not shifted down, so lanes 4..8 of
/// each half sum 16 times ggml's integers; those lanes take `dw * (da / 16)` instead of
/// `dw * da`. Both factors are exact: `da / 16` is a power-of-two scaling of a normal float, and
/// `dw * (da / 16)` rounds to exactly `round(dw * da) / 16` because the product of two
/// half-precision-derived scales (at least 2^-48 when not zero) stays far above f32's subnormal
/// range; `float(16 * ints)` is `16 * float(ints)` for the same reason. The FMA therefore sees
/// the same real product and rounds it the same way, and the shift (a port-0 instruction per
/// pair and block) is gone.
///
/// # Safety
/// AVX-512 F/BW/VL/DQ/VNNI, AVX2, FMA and F16C must be available.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub(crate) unsafe fn matvec<F: Avx512Tile, const P: usize>(w: &[&[F::W]], a: &ActRows<'_, F::A>, off: &[[i32; 8]], out: &mut [f32]) {
    const { assert!(P >= 1 && P <= 4) };
    let (rows, nb) = (w.len(), a.nb);
    assert!(a.n >= 1 && out.len() >= rows && w.iter().all(|r| r.len() >= nb));
    assert!(a.blocks.len() >= nb && a.d.len() >= nb && (!F::HAS_MIN || a.s.len() >= nb) && (F::OFF == 0 || off.len() >= nb));
    // Pair p's scale products: lanes 0..8 from lane 4p (row 0), 8..16 from 4p + D1_LANE (row 1),
    // the high-nibble lanes from the second source (the products over 16) with HIGH_X16.
    let idx: [__m512i; P] = std::array::from_fn(|p| {
        let (r0, r1) = (4 * p as i32, 4 * p as i32 + F::D1_LANE);
        let h = if F::HIGH_X16 { 16 } else { 0 };
        _mm512_set_epi32(r1 + h, r1 + h, r1 + h, r1 + h, r1, r1, r1, r1, r0 + h, r0 + h, r0 + h, r0 + h, r0, r0, r0, r0)
    });
    let pairs = rows.div_ceil(2);
    let mut p0 = 0;
    while p0 < pairs {
        let np = (pairs - p0).min(P);
        let mut wr = [[w[0]; 2]; P];
        for p in 0..P {
            // passes past the last pair repeat it (computed, not stored)
            let r0 = 2 * (p0 + p.min(np - 1));
            wr[p] = [w[r0], w[(r0 + 1).min(rows - 1)]];
        }
        let mut acc = [_mm512_setzero_ps(); P];
        let mut summs = _mm512_setzero_ps();
        for b in 0..nb {
            for p in 0..P {
                for row in wr[p] {
                    // prefetching is a hint and never faults, wherever the address points
                    _mm_prefetch::<_MM_HINT_T1>((row.as_ptr() as *const i8).wrapping_add(b * std::mem::size_of::<F::W>() + PREFETCH_BYTES));
                }
            }
            // SAFETY (unchecked reads): b < nb <= every row's length and the activations'
            // blocks / d / s / off lengths (asserted).
            let av = bcast256(F::qs(unsafe { a.blocks.get_unchecked(b) }));
            let da = unsafe { *a.d.get_unchecked(b) };
            let x: [[&F::W; 2]; P] = std::array::from_fn(|p| unsafe { [wr[p][0].get_unchecked(b), wr[p][1].get_unchecked(b)] });
            let bits: [u64; 4] = std::array::from_fn(|p| if p < P { F::pair_scale_bits(x[p][0], x[p][1]) } else { 0 });
            let sc = _mm512_cvtph_ps(_mm256_set_epi64x(bits[3] as i64, bits[2] as i64, bits[1] as i64, bits[0] as i64));
            let dd = _mm512_mul_ps(sc, _mm512_set1_ps(da));
            let dd16 = if F::HIGH_X16 { _mm512_mul_ps(sc, _mm512_set1_ps(da * (1.0 / 16.0))) } else { dd };
            if F::HAS_MIN {
                // lanes 4p + 1 and 4p + 3 hold pair p's m0 * s and m1 * s chains (ggml's summs)
                summs = _mm512_fmadd_ps(sc, _mm512_set1_ps(unsafe { *a.s.get_unchecked(b) }), summs);
            }
            let start = if F::OFF != 0 { bcast256(unsafe { off.get_unchecked(b) }) } else { _mm512_setzero_si512() };
            for p in 0..P {
                // SAFETY: this function requires the Wide methods' CPU features.
                let q = unsafe { F::pair(x[p][0], x[p][1]) };
                let dw = if F::HIGH_X16 { _mm512_permutex2var_ps(dd, idx[p], dd16) } else { _mm512_permutexvar_ps(idx[p], dd) };
                let ints = _mm512_dpbusd_epi32(start, q, av);
                acc[p] = _mm512_fmadd_ps(dw, _mm512_cvtepi32_ps(ints), acc[p]);
            }
        }
        let mut sm = [0f32; 16];
        // SAFETY: sm is 16 writable f32.
        unsafe { _mm512_storeu_ps(sm.as_mut_ptr(), summs) };
        for p in 0..np {
            let r0 = 2 * (p0 + p);
            let (h0, h1) = hsum_pair(acc[p]);
            out[r0] = if F::HAS_MIN { h0 + sm[4 * p + 1] } else { h0 };
            if r0 + 1 < rows {
                out[r0 + 1] = if F::HAS_MIN { h1 + sm[4 * p + 3] } else { h1 };
            }
        }
        p0 += np;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu_features::{available_levels, SimdLevel};
    use crate::quant::test_util::Lcg;

    /// The sixteen reductions at once give each half's `hsum_float_8` bits, on sums whose
    /// order shows (large values that cancel, signed zeros, tiny values next to large ones).
    #[test]
    fn hsum16_equals_one_half_at_a_time() {
        if !available_levels().contains(&SimdLevel::Avx512) {
            return;
        }
        let mut rng = Lcg::new(0x9E37_79B9);
        let mut next = || {
            let x = rng.next_u32();
            match x % 7 {
                0 => 3.0e7,
                1 => -3.0e7,
                2 => if x.is_multiple_of(2) { 0.0 } else { -0.0 },
                3 => 1.0e-3 * (x % 1000) as f32,
                _ => (x % 20001) as f32 / 100.0 - 100.0,
            }
        };
        for _ in 0..200 {
            let vals: [[f32; 16]; 8] = std::array::from_fn(|_| std::array::from_fn(|_| next()));
            // SAFETY: AVX-512 checked above; each row is 16 readable f32.
            let acc = vals.map(|v| unsafe { _mm512_loadu_ps(v.as_ptr()) });
            // SAFETY: as above.
            let got = unsafe { hsum16(acc) };
            for k in 0..8 {
                // SAFETY: as above.
                let (h0, h1) = unsafe { hsum_pair(acc[k]) };
                assert_eq!((got[2 * k].to_bits(), got[2 * k + 1].to_bits()), (h0.to_bits(), h1.to_bits()), "accumulator {k}");
            }
        }
    }
}
