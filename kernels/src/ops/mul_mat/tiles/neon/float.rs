//! Tiles of F16 / F32 products in ggml-cpu's NEON float order (aarch64), following
//! `ggml_vec_dot_f16` / `ggml_vec_dot_f32`. Without FP16 vector
//! arithmetic ([`float_tile`]; F32 always): four 4-lane FMA accumulators over 16-element steps,
//! reduced as `vaddvq((acc0 + acc2) + (acc1 + acc3))`, leftovers in double (F16) or float
//! (F32: as clang compiles `sumf += x[i]*y[i]`, eight at a time rounded products added in order,
//! then FMAs; [`FloatElem::finish`] for f32). ggml built with `+fp16` (every llama.rn arm64 library but `rnllama_v8`, and
//! whisper.rn's) accumulates F16 products in *half precision* instead ([`f16_tile_hp`]); the
//! matrix product uses that wherever the CPU has FEAT_FP16, which is exactly when llama.rn /
//! whisper.rn load such a library. It is far less accurate (a lane's sum keeps 11 bits), but it
//! is stock's answer on those phones.

// Register tiles index several arrays (accumulators, prepared rows, scales) with the same row
// and column numbers; iterator chains over them would hide which output each FMA feeds.
#![allow(clippy::needless_range_loop)]

use crate::quant::f16::fp16_to_fp32;
use crate::quant::f16::neon::{hp, widen4};
use std::arch::aarch64::*;

/// One weight row element type of the float products (F16 or F32) with ggml's leftovers rule.
pub(crate) trait FloatElem: Copy {
    /// Elements `i..i + 4` as floats.
    fn load4(row: &[Self], i: usize) -> float32x4_t;
    fn finish(reduced: f32, w: &[Self], a: &[f32]) -> f32;
}

impl FloatElem for u16 {
    #[inline(always)]
    fn load4(row: &[u16], i: usize) -> float32x4_t {
        let h = &row[i..i + 4];
        // SAFETY: `h` is 4 readable u16.
        widen4(unsafe { vld1_u16(h.as_ptr()) })
    }
    #[inline]
    fn finish(reduced: f32, w: &[u16], a: &[f32]) -> f32 {
        // ggml's sumf is a double here
        let mut sum = reduced as f64;
        for (&x, &y) in w.iter().zip(a) {
            sum += (fp16_to_fp32(x) * y) as f64;
        }
        sum as f32
    }
}

impl FloatElem for f32 {
    #[inline(always)]
    fn load4(row: &[f32], i: usize) -> float32x4_t {
        let v = &row[i..i + 4];
        // SAFETY: `v` is 4 readable f32.
        unsafe { vld1q_f32(v.as_ptr()) }
    }
    /// ggml's F32 leftovers, `for (i = np; i < n; ++i) sumf += x[i]*y[i];`, as clang compiles
    /// it for aarch64 (the NDK, Xcode; clang 14 here, disassembled): 8 or more leftovers are
    /// vectorized as an in-order reduction, 8 at a time (two `fmul` of 4 lanes, each product
    /// rounded, then added to `sumf` one by one in element order), and the last `len % 8` stay
    /// scalar, contracted to one `fmadd` each. All-FMA leftovers differed from that build by ulps
    /// whenever `k % 16 >= 8`.
    #[inline]
    fn finish(reduced: f32, w: &[f32], a: &[f32]) -> f32 {
        let mut sum = reduced;
        let vectorized = w.len() & !7;
        for (&x, &y) in w[..vectorized].iter().zip(a) {
            sum += x * y;
        }
        for (&x, &y) in w[vectorized..].iter().zip(&a[vectorized..]) {
            sum = x.mul_add(y, sum);
        }
        sum
    }
}

/// Float outputs `(r, c)` of weight rows `w[r]` with activation rows `a[c]` (already rounded to
/// what ggml's dot sees: F16 values for F16 weights), each in ggml's NEON `vec_dot_f16/f32`
/// order (module docs): accumulator `j` takes elements `16i + 4j..+4`. The four accumulators
/// are independent chains, computed one after the other when `C > 1` to save registers.
#[inline(always)]
pub(crate) fn float_tile<E: FloatElem, const R: usize, const C: usize>(w: [&[E]; R], a: [&[f32]; C]) -> [[f32; C]; R] {
    // SAFETY: NEON intrinsics (aarch64 baseline); the loads are bounds-checked in `load4`.
    unsafe { float_tile_body(w, a) }
}

/// # Safety
/// None beyond NEON (always present); `unsafe` only so the intrinsics can be called.
#[inline(always)]
unsafe fn float_tile_body<E: FloatElem, const R: usize, const C: usize>(w: [&[E]; R], a: [&[f32]; C]) -> [[f32; C]; R] {
    let k = a[0].len();
    assert!(w.iter().all(|r| r.len() == k) && a.iter().all(|r| r.len() == k));
    let np = k & !15;
    let mut parts = [[[vdupq_n_f32(0.0); 4]; C]; R];
    let load_a = |c: usize, i: usize| f32::load4(a[c], i);
    if C == 1 {
        let mut i = 0;
        while i < np {
            for j in 0..4 {
                let av = load_a(0, i + 4 * j);
                for r in 0..R {
                    parts[r][0][j] = vfmaq_f32(parts[r][0][j], E::load4(w[r], i + 4 * j), av);
                }
            }
            i += 16;
        }
    }
    for j in 0..if C == 1 { 0 } else { 4 } {
        let mut acc = [[vdupq_n_f32(0.0); C]; R];
        let mut i = 4 * j;
        while i < np {
            let wv: [float32x4_t; R] = std::array::from_fn(|r| E::load4(w[r], i));
            for c in 0..C {
                let av = load_a(c, i);
                for r in 0..R {
                    acc[r][c] = vfmaq_f32(acc[r][c], wv[r], av);
                }
            }
            i += 16;
        }
        for r in 0..R {
            for c in 0..C {
                parts[r][c][j] = acc[r][c];
            }
        }
    }
    let mut out = [[0f32; C]; R];
    for r in 0..R {
        for c in 0..C {
            let p = &parts[r][c];
            let x = vaddq_f32(vaddq_f32(p[0], p[2]), vaddq_f32(p[1], p[3]));
            out[r][c] = E::finish(vaddvq_f32(x), &w[r][np..], &a[c][np..]);
        }
    }
    out
}


/// F16 weight rows times F16 activation rows (half bit patterns, as ggml's F16 partner format
/// holds them) as ggml's `ggml_vec_dot_f16` computes them when built with FP16 vector arithmetic
/// (`+fp16`: every llama.rn arm64 library but `rnllama_v8`, and whisper.rn's): four 8-lane
/// *half-precision* FMA accumulators over 32-element steps (accumulator `j` takes elements
/// `32i + 8j..+8`), reduced in half as `(acc0 + acc2) + (acc1 + acc3)`, widened, the two halves
/// added and `vaddvq_f32`, then the leftovers in double. Much less accurate than f32
/// accumulation (each lane rounds to 11 bits per step), but it is what stock computes on those
/// phones. The activations come as halves so a step loads each operand with one instruction
/// (narrowing widened activations again cost two loads and two conversions per 8 elements and
/// column: whisper's F16 products ran 2-2.6x ggml's instructions).
///
/// # Safety
/// The CPU must have FEAT_FP16 (`has_fp16`). (Shapes are checked.)
#[inline]
#[target_feature(enable = "fp16")]
pub(crate) unsafe fn f16_tile_hp<const R: usize, const C: usize>(w: [&[u16]; R], a: [&[u16]; C]) -> [[f32; C]; R] {
    let k = a[0].len();
    assert!(w.iter().all(|r| r.len() == k) && a.iter().all(|r| r.len() == k));
    let np = k & !31;
    let wp = w.map(|r| r.as_ptr());
    let ap = a.map(|r| r.as_ptr());
    // SAFETY (whole body): the loads read 8 elements at offsets i + 8 <= np <= k of rows of
    // length k (asserted); the hp functions need FEAT_FP16, which this function requires; the
    // rest is NEON.
    unsafe {
        let zero = vdupq_n_u16(0);
        let mut parts = [[[zero; 4]; C]; R];
        if C == 1 {
            // One activation row (decoding attention): all four accumulators in one pass, the
            // row's four vectors loaded once per step for every weight row.
            let mut i = 0;
            while i < np {
                let av: [uint16x8_t; 4] = std::array::from_fn(|j| vld1q_u16(ap[0].add(i + 8 * j)));
                for r in 0..R {
                    for j in 0..4 {
                        parts[r][0][j] = hp::fma(parts[r][0][j], vld1q_u16(wp[r].add(i + 8 * j)), av[j]);
                    }
                }
                i += 32;
            }
        }
        for j in 0..if C == 1 { 0 } else { 4 } {
            let mut acc = [[zero; C]; R];
            let mut i = 8 * j;
            while i < np {
                let wv: [uint16x8_t; R] = std::array::from_fn(|r| vld1q_u16(wp[r].add(i)));
                for c in 0..C {
                    let av = vld1q_u16(ap[c].add(i));
                    for r in 0..R {
                        acc[r][c] = hp::fma(acc[r][c], wv[r], av);
                    }
                }
                i += 32;
            }
            for r in 0..R {
                for c in 0..C {
                    parts[r][c][j] = acc[r][c];
                }
            }
        }
        let mut out = [[0f32; C]; R];
        for r in 0..R {
            for c in 0..C {
                let p = &parts[r][c];
                let x = hp::add(hp::add(p[0], p[2]), hp::add(p[1], p[3]));
                let (lo, hi) = hp::widen(x);
                out[r][c] = vaddvq_f32(vaddq_f32(lo, hi));
            }
        }
        if np == k {
            return out;
        }
        finish_halves(out, w.map(|r| &r[np..]), a.map(|r| &r[np..]))
    }
}

/// ggml's F16 leftovers (`k % 32`) for every output of a tile: `sumf += (double) (x * y)` with
/// `sumf` a double, each output in its own order. The halves are widened as vectors and the
/// outputs' sums interleaved (element-outer): one by one, the leftovers of whisper's KQV
/// (28 of 1500 elements) took more instructions than its vector part.
#[inline]
fn finish_halves<const R: usize, const C: usize>(reduced: [[f32; C]; R], w: [&[u16]; R], a: [&[u16]; C]) -> [[f32; C]; R] {
    let tail = a[0].len();
    let wf = w.map(widen_tail);
    let af = a.map(widen_tail);
    let mut sum = reduced.map(|row| row.map(|v| v as f64));
    for e in 0..tail.min(32) {
        for r in 0..R {
            let x = wf[r][e];
            for c in 0..C {
                sum[r][c] += (x * af[c][e]) as f64;
            }
        }
    }
    sum.map(|row| row.map(|v| v as f32))
}

/// Up to 32 halves as f32, four at a time through a zero-padded copy.
#[inline(always)]
fn widen_tail(h: &[u16]) -> [f32; 32] {
    let n = h.len().min(32);
    let mut bits = [0u16; 32];
    bits[..n].copy_from_slice(&h[..n]);
    let mut out = [0f32; 32];
    for q in 0..n.div_ceil(4) {
        // SAFETY: `bits` and `out` hold 32 elements and 4q + 4 <= 32.
        unsafe { vst1q_f32(out.as_mut_ptr().add(4 * q), widen4(vld1_u16(bits.as_ptr().add(4 * q)))) };
    }
    out
}
