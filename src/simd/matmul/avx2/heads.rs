//! Float products whose rows are exactly one attention head long (`k` = 64: whisper's and
//! SmolLM2's KQ), with the vector lanes across eight weight rows instead of along the row.
//!
//! ggml's order gives each output four accumulators of two multiply-adds each, then a fold and a
//! horizontal sum: with lanes along the row (the [`super::float`] tiles) the sum is a lane
//! shuffle per output and the tile's 32 accumulators do not fit the 16 registers, so whisper's
//! KQ ran at a quarter of the FMA rate. Here lane `r` of a vector is weight row `8g + r`: the
//! same multiply-adds, folds and sums of the same operands happen lane by lane, with no shuffle,
//! and a finished vector is eight neighbouring outputs of one activation row, stored at once.
//! The weights are widened into a transposed f32 panel once per chunk (element `e` of the eight
//! rows side by side); each activation value is broadcast from memory.

use super::float::FloatElem;
use crate::simd::matmul::DstView;
use std::arch::x86_64::*;
use std::cell::RefCell;

/// The row length this kernel multiplies.
pub(super) const K: usize = 64;

thread_local! {
    /// Each worker's transposed weight panel, reused across chunks and products.
    static PANEL: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// Every output of `dst`, whose weight rows `w(i)` and activation rows `a(j)` are all [`K`]
/// long, in exactly ggml-cpu's `vec_dot_f16/f32` arithmetic (see the module doc).
///
/// # Safety
/// AVX2, FMA and F16C must be available.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn rows<'w, 'a, E: FloatElem + 'w + 'a>(w: impl Fn(usize) -> &'w [E], a: impl Fn(usize) -> &'a [E], dst: &mut DstView<'_>) {
    let rows = dst.weight_rows();
    let (m, r0) = (rows.len(), rows.start);
    if m == 0 {
        return;
    }
    let groups = m.div_ceil(8);
    PANEL.with(|panel| {
        let mut panel = panel.borrow_mut();
        panel.clear();
        panel.resize(groups * K * 8, 0.0);
        for g in 0..groups {
            // lanes past the last row repeat it (computed, not stored)
            let rows: [&[E]; 8] = std::array::from_fn(|lane| w(r0 + (8 * g + lane).min(m - 1)));
            assert!(rows.iter().all(|r| r.len() == K), "row of the wrong length");
            for e0 in (0..K).step_by(8) {
                // SAFETY: every row holds K elements (asserted) and e0 + 8 <= K; the panel holds
                // groups * K * 8 floats and (g * K + e0 + 7) * 8 + 8 <= that; AVX2/F16C by this
                // function's contract.
                unsafe {
                    let t = transpose8(rows.map(|r| E::load8(r.as_ptr().add(e0))));
                    for (i, v) in t.into_iter().enumerate() {
                        _mm256_storeu_ps(panel.as_mut_ptr().add((g * K + e0 + i) * 8), v);
                    }
                }
            }
        }
        // Blocks of BLOCK activation rows, all groups of the chunk for each block: a group's 2 KiB
        // of panel stays in L1 while the block's rows pass over it (pair by pair, the whole
        // panel streamed from L2 for every pair, at L2's bandwidth). Outputs land in a block
        // buffer and are copied to dst once per row.
        const BLOCK: usize = 8;
        let mut out = vec![0f32; BLOCK * groups * 8];
        let acts = dst.act_rows();
        let mut j0 = acts.start;
        while j0 < acts.end {
            let nb = (acts.end - j0).min(BLOCK);
            // the block's activation rows as f32 (F16 activations arrive as half bits)
            // SAFETY: AVX2/F16C by this function's contract.
            let ar: [[f32; K]; BLOCK] = std::array::from_fn(|c| unsafe { widen(a(j0 + c.min(nb - 1))) });
            for g in 0..groups {
                let mut c = 0;
                while c < nb {
                    // rows past the block's last repeat it (computed, not copied out)
                    let c1 = (c + 1).min(nb - 1);
                    // SAFETY: group g's K x 8 floats are inside the panel (resized above) and
                    // out[(c' * groups + g) * 8..+8] inside out (BLOCK * groups * 8 long, c' <
                    // BLOCK); the activation rows hold K floats (asserted); AVX2/FMA by this
                    // function's contract.
                    unsafe {
                        let v = group(panel.as_ptr().add(g * K * 8), [ar[c].as_ptr(), ar[c1].as_ptr()]);
                        _mm256_storeu_ps(out.as_mut_ptr().add((c * groups + g) * 8), v[0]);
                        _mm256_storeu_ps(out.as_mut_ptr().add((c1 * groups + g) * 8), v[1]);
                    }
                    c += 2;
                }
            }
            for c in 0..nb {
                dst.row_mut(j0 + c).copy_from_slice(&out[c * groups * 8..c * groups * 8 + m]);
            }
            j0 += nb;
        }
    });
}

/// Eight rows of eight floats turned into eight columns: `out[e]` lane `r` is `rows[r]` lane
/// `e` (the panel's layout, built eight elements of eight rows at a time instead of by 64 scalar
/// stores per row).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn transpose8(rows: [__m256; 8]) -> [__m256; 8] {
    let [r0, r1, r2, r3, r4, r5, r6, r7] = rows;
    // pairs interleaved: [a0 b0 a1 b1 | a4 b4 a5 b5] and [a2 b2 a3 b3 | a6 b6 a7 b7]
    let (t0, t1) = (_mm256_unpacklo_ps(r0, r1), _mm256_unpackhi_ps(r0, r1));
    let (t2, t3) = (_mm256_unpacklo_ps(r2, r3), _mm256_unpackhi_ps(r2, r3));
    let (t4, t5) = (_mm256_unpacklo_ps(r4, r5), _mm256_unpackhi_ps(r4, r5));
    let (t6, t7) = (_mm256_unpacklo_ps(r6, r7), _mm256_unpackhi_ps(r6, r7));
    // fours: [a0 b0 c0 d0 | a4 b4 c4 d4], ...
    let (u0, u1) = (_mm256_shuffle_ps::<0x44>(t0, t2), _mm256_shuffle_ps::<0xEE>(t0, t2));
    let (u2, u3) = (_mm256_shuffle_ps::<0x44>(t1, t3), _mm256_shuffle_ps::<0xEE>(t1, t3));
    let (u4, u5) = (_mm256_shuffle_ps::<0x44>(t4, t6), _mm256_shuffle_ps::<0xEE>(t4, t6));
    let (u6, u7) = (_mm256_shuffle_ps::<0x44>(t5, t7), _mm256_shuffle_ps::<0xEE>(t5, t7));
    // halves joined: element e of all eight rows
    [
        _mm256_permute2f128_ps::<0x20>(u0, u4),
        _mm256_permute2f128_ps::<0x20>(u1, u5),
        _mm256_permute2f128_ps::<0x20>(u2, u6),
        _mm256_permute2f128_ps::<0x20>(u3, u7),
        _mm256_permute2f128_ps::<0x31>(u0, u4),
        _mm256_permute2f128_ps::<0x31>(u1, u5),
        _mm256_permute2f128_ps::<0x31>(u2, u6),
        _mm256_permute2f128_ps::<0x31>(u3, u7),
    ]
}

/// A row of [`K`] elements as f32 (checked length).
///
/// # Safety
/// AVX2 and F16C must be available.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn widen<E: FloatElem>(row: &[E]) -> [f32; K] {
    assert_eq!(row.len(), K, "row of the wrong length");
    let mut wide = [0f32; K];
    for (q, out) in wide.chunks_exact_mut(8).enumerate() {
        // SAFETY: the row holds K elements (asserted) and 8q + 8 <= K; out is 8 writable
        // floats; AVX2/F16C by this function's contract.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr(), E::load8(row.as_ptr().add(8 * q))) };
    }
    wide
}

/// Eight outputs (lanes: the group's weight rows) for each of `C` activation rows. Output
/// `(r, c)` in ggml's order: accumulator `j` over lanes `l` is
/// `p_j[l] = fma(w[32 + 8j + l], a[32 + 8j + l], fma(w[8j + l], a[8j + l], 0))`, folded as
/// `x[l] = (p_0 + p_2) + (p_1 + p_3)`, then summed as `t_i = x_i + x_{i+4}`,
/// `(t_0 + t_1) + (t_2 + t_3)`.
///
/// # Safety
/// AVX2 and FMA must be available; `p` points at [`K`] x 8 floats (`p[8e + r]`: element `e` of
/// weight row `r`) and every `a[c]` at [`K`] floats.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn group<const C: usize>(p: *const f32, a: [*const f32; C]) -> [__m256; C] {
    let zero = _mm256_setzero_ps();
    // SAFETY (loads): e < K, inside both operands by the contract.
    let w = |e: usize| unsafe { _mm256_loadu_ps(p.add(8 * e)) };
    let x_of = |l: usize| -> [__m256; C] {
        let acc = |j: usize| -> [__m256; C] {
            let (e0, e1) = (8 * j + l, 32 + 8 * j + l);
            let (w0, w1) = (w(e0), w(e1));
            // SAFETY: as above.
            std::array::from_fn(|c| unsafe {
                let first = _mm256_fmadd_ps(w0, _mm256_broadcast_ss(&*a[c].add(e0)), zero);
                _mm256_fmadd_ps(w1, _mm256_broadcast_ss(&*a[c].add(e1)), first)
            })
        };
        let (p0, p2) = (acc(0), acc(2));
        let h: [__m256; C] = std::array::from_fn(|c| _mm256_add_ps(p0[c], p2[c]));
        let (p1, p3) = (acc(1), acc(3));
        std::array::from_fn(|c| _mm256_add_ps(h[c], _mm256_add_ps(p1[c], p3[c])))
    };
    let t_of = |i: usize| -> [__m256; C] {
        let (lo, hi) = (x_of(i), x_of(i + 4));
        std::array::from_fn(|c| _mm256_add_ps(lo[c], hi[c]))
    };
    let (t0, t1) = (t_of(0), t_of(1));
    let u0: [__m256; C] = std::array::from_fn(|c| _mm256_add_ps(t0[c], t1[c]));
    let (t2, t3) = (t_of(2), t_of(3));
    std::array::from_fn(|c| _mm256_add_ps(u0[c], _mm256_add_ps(t2[c], t3[c])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose8_moves_every_element() {
        if !crate::simd::cpu_features::available_levels().contains(&crate::simd::cpu_features::SimdLevel::Avx2) {
            return;
        }
        let m: [[f32; 8]; 8] = std::array::from_fn(|r| std::array::from_fn(|e| (10 * r + e) as f32));
        // SAFETY: AVX2 checked above; the arrays hold 8 floats each.
        let t = unsafe { transpose8(m.map(|row| _mm256_loadu_ps(row.as_ptr()))) };
        for (e, v) in t.iter().enumerate() {
            let mut out = [0f32; 8];
            // SAFETY: out holds 8 floats.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr(), *v) };
            assert_eq!(out, std::array::from_fn(|r| (10 * r + e) as f32), "column {e}");
        }
    }
}
