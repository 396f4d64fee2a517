//! Attention scores the mask throws away, left uncomputed.
//!
//! A prompt's KQ product (keys x queries) is read only by a SOFT_MAX whose mask is -inf for every
//! key after the query's own position (the causal mask; also the unused cells of a padded KV
//! cache). There the softmax computes `x * scale + (-inf) = -inf` and `exp(-inf) = 0` whatever
//! the score `x` was, and adds that 0 to its sum, which changes nothing. So when the executor runs
//! a softmax row right after its scores (`mul_mat_softmax`), the product computes only the keys
//! up to the query's last unmasked one (rounded up: `softmax::needed`), the softmax reads only
//! those and writes the rest as 0: the softmax's output, and everything after it, are the numbers
//! stock computes. For a 256-token prompt from an empty cache that is close to half of KQ's
//! multiply-adds and of the softmax's reads.
//!
//! Stock's result differs only where its own score times the scale overflows to +inf (its
//! softmax then reads `inf - inf = NaN` at the masked keys too); the executor applies this only
//! when the softmax is the product's one reader (see `exec::fused_softmax`).
//!
//! The product after the softmax (KQV: values x probabilities) then multiplies each query's
//! masked keys' zero probabilities. [`trim_keys`] stops its float dot products at the last
//! nonzero activation, rounded up to [`KEY_STEP`]: in ggml's F16/F32 dot products every lane
//! starts at +0 and can never become -0, so adding a product `v * 0 = ±0` changes nothing, and
//! the steps and leftovers after the cut add only such products. Exact whenever the skipped
//! weights are finite, which is checked (`inf * 0` is NaN).

use super::super::softmax::needed;
use super::super::Raw;
use super::tiles::{Acts, DstView, RowBits, Weights};
use crate::view::{F16, F32};

/// Activation (query) rows cut off together: each block computes the keys its last query needs,
/// so a block wastes at most a triangle of `BLOCK x BLOCK` scores; smaller blocks would rebuild
/// the kernels' weight panels for fewer rows.
const BLOCK: usize = 32;

/// Queries below which nothing is cut (a decode step's one query gains at most the padded cells).
pub const MIN_QUERIES: usize = 8;

/// For each of the product's `n_q` query rows, how many key rows its mask leaves finite: every key
/// `i >= limits[j]` of query `j` is masked with -inf. A row masked entirely keeps all its keys
/// (stock's softmax makes it NaN from the scores' `-inf - -inf`). `None` when the mask cuts nothing off, is
/// not one row per query broadcast over every head (`ne[2] = ne[3] = 1`), or is neither packed
/// F32 nor packed F16.
pub fn limits(mask: &Raw, n_kv: usize, n_q: usize) -> Option<Vec<usize>> {
    if mask.ne[0] < n_kv || mask.ne[1] == 0 || mask.ne[2] != 1 || mask.ne[3] != 1 {
        return None;
    }
    let masked: fn(&[u8]) -> bool = match (mask.ty, mask.nb[0]) {
        (F32, 4) => |e| u32::from_le_bytes([e[0], e[1], e[2], e[3]]) == f32::NEG_INFINITY.to_bits(),
        (F16, 2) => |e| u16::from_le_bytes([e[0], e[1]]) == 0xfc00,
        _ => return None,
    };
    let elem = mask.nb[0];
    let limits: Vec<usize> = (0..n_q)
        .map(|j| {
            let row = mask.row_bytes(j % mask.ne[1], 0, 0, n_kv * elem);
            row.chunks_exact(elem).rposition(|e| !masked(e)).map_or(n_kv, |i| i + 1)
        })
        .collect();
    limits.iter().any(|&l| l < n_kv).then_some(limits)
}

/// Splits a chunk of the product into the parts whose scores are needed, handed to `compute`;
/// the rest is left unwritten (only the softmax reads the scores, and it reads no further than
/// [`needed`]): query rows in blocks of `BLOCK`, each computing keys up to the largest
/// [`needed`] of its rows.
pub fn split(view: DstView<'_>, limits: &[usize], mut compute: impl FnMut(DstView<'_>)) {
    let (rows, acts) = (view.weight_rows(), view.act_rows());
    let mut rest = view;
    let mut j = acts.start;
    while j < acts.end {
        let end = (j + BLOCK).min(acts.end);
        let (block, after) = rest.split_acts_at(end);
        rest = after;
        let need = limits[j..end].iter().map(|&l| needed(l, rows.end)).max().unwrap_or(0);
        let (part, _masked) = block.split_at(need.clamp(rows.start, rows.end));
        if !part.weight_rows().is_empty() {
            compute(part);
        }
        j = end;
    }
}

/// Float dot products are cut at multiples of this: ggml's F16/F32 dot products take 64 (AVX-512),
/// 32 (AVX2, NEON F16) or 16 (NEON F32) elements per step, so a cut at a multiple of 64 ends a
/// step on every level and leaves no leftovers of its own.
pub const KEY_STEP: usize = 64;

/// A chunk of a float product (F16 / F32 weights, prefixes of which [`Weights::prefix`] and
/// [`Acts::prefix`] make) computed by `compute(part, k)` in blocks of `BLOCK` activation rows,
/// each block's dot products stopping after its rows' last nonzero activation rounded up to
/// [`KEY_STEP`] where the weights after that are finite (see the module doc). Same outputs as
/// `compute(view, k)`.
pub fn trim_keys(view: DstView<'_>, w: &Weights<'_>, acts: &Acts<'_>, mut compute: impl FnMut(DstView<'_>, usize)) {
    let k = w.k();
    let (rows, act_rows) = (view.weight_rows(), view.act_rows());
    // from where on every weight of the chunk's rows is finite (read once, when a block needs it)
    let mut finite_from: Option<usize> = None;
    let mut finite_from = || {
        *finite_from.get_or_insert_with(|| {
            rows.clone()
                .map(|i| match w.row_bits(i) {
                    RowBits::F16(r) => last_block(r, |h| h & 0x7c00 == 0x7c00),
                    RowBits::F32(r) => last_block(r, |x| !x.is_finite()),
                })
                .max()
                .unwrap_or(0)
        })
    };
    let mut cut = |j: usize| {
        let end = (j + BLOCK).min(act_rows.end);
        let used = (j..end).map(|r| last_block(acts.row(r), |x| x != 0.0)).max().unwrap_or(0).max(KEY_STEP);
        if used < k && used >= finite_from() { used } else { k }
    };
    // neighbouring blocks with the same cut in one call (no cut at all: the whole view)
    let mut rest = view;
    let mut k_run = cut(act_rows.start);
    let mut j = act_rows.start;
    while j < act_rows.end {
        let next = (j + BLOCK).min(act_rows.end);
        let k_next = if next < act_rows.end { cut(next) } else { usize::MAX };
        if k_next != k_run {
            let (run, after) = rest.split_acts_at(next);
            rest = after;
            compute(run, k_run);
            k_run = k_next;
        }
        j = next;
    }
    debug_assert!(rest.act_rows().is_empty());
}

/// The end of the last [`KEY_STEP`] elements of `row` that hold one for which `hit` is true (0
/// when none does).
fn last_block<T: Copy>(row: &[T], hit: impl Fn(T) -> bool) -> usize {
    let steps = row.len().div_ceil(KEY_STEP);
    // (each step's test a fold rather than an early exit, so that it vectorizes)
    (0..steps).rev().find(|&s| row[s * KEY_STEP..((s + 1) * KEY_STEP).min(row.len())].iter().fold(false, |any, &x| any | hit(x))).map_or(0, |s| ((s + 1) * KEY_STEP).min(row.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::test_util::bits;

    fn f32_mask(rows: &[Vec<f32>]) -> (Vec<f32>, Raw) {
        let n_kv = rows[0].len();
        let mut data: Vec<f32> = rows.concat();
        let raw = Raw { data: data.as_mut_ptr().cast(), ne: [n_kv, rows.len(), 1, 1], nb: [4, 4 * n_kv, 4 * n_kv * rows.len(), 4 * n_kv * rows.len()], ty: F32 };
        (data, raw)
    }

    /// Activation rows ending in more and more zeros, through `trim_keys` and through one
    /// product over the full rows: the same bits; and an infinite weight past a cut stops it.
    #[test]
    fn trimmed_float_products_equal_full_ones() {
        use crate::ops::mul_mat::tiles::{mul_mat, QuantizedActs};
        use crate::quant::WType;
        let (k, m, n) = (320, 12, 70);
        let mut lcg = 7u32;
        let mut next = || {
            lcg = lcg.wrapping_mul(1664525).wrapping_add(1013904223);
            (lcg >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        let mut wv: Vec<f32> = (0..k * m).map(|_| next()).collect();
        // query j's activations: nonzero up to 4 * j (the probabilities of a causal row), -0
        // and +0 after
        let a: Vec<f32> = (0..n * k).map(|e| if e % k < 4 * (e / k) + 1 { next() } else if e % 2 == 0 { -0.0 } else { 0.0 }).collect();
        let acts = Acts::new(&a, k, n, k);
        for inf_at in [None, Some(300)] {
            if let Some(at) = inf_at {
                wv[5 * k + at] = f32::INFINITY;
            }
            let bytes: Vec<u8> = wv.iter().flat_map(|x| x.to_le_bytes()).collect();
            let w = Weights::new(&bytes, WType::F32, k, 4 * k, m);
            let (mut full, mut trimmed) = (vec![0f32; n * m], vec![0f32; n * m]);
            let q = QuantizedActs::new();
            mul_mat(&w, &acts, &q, DstView::new(&mut full, n, m, m), &mut Vec::new());
            let mut cuts = Vec::new();
            trim_keys(DstView::new(&mut trimmed, n, m, m), &w, &acts, |v, kk| {
                cuts.push((v.act_rows(), kk));
                mul_mat(&w.prefix(kk), &acts.prefix(kk), &q, v, &mut Vec::new());
            });
            assert_eq!(bits(&trimmed), bits(&full));
            if inf_at.is_none() {
                // rows 0..32 use up to 125 activations, 32..64 up to 253, 64..70 all 320
                assert_eq!(cuts, [(0..32, 128), (32..64, 256), (64..70, 320)]);
            } else {
                assert!(cuts.iter().all(|(_, kk)| *kk == k), "a cut before an infinite weight: {cuts:?}");
                assert!(full[5].is_nan());
            }
        }
    }

    /// On every level the softmax's arithmetic has, a row masked with -inf from `limit` on comes
    /// out the same from its first `needed(limit)` elements (the rest written as 0) as from the
    /// whole row, whatever the scores past the limit are: row lengths around the 8- and 4-lane
    /// groups and their leftovers, F32 and F16 masks.
    #[test]
    fn softmax_of_the_needed_prefix_equals_the_whole_masked_row() {
        use crate::cpu_features::available_levels;
        use crate::softmax_row::{soft_max_row_at, Mask};
        let mut lcg = 11u32;
        let mut next = || {
            lcg = lcg.wrapping_mul(1664525).wrapping_add(1013904223);
            (lcg >> 8) as f32 / (1u32 << 24) as f32 * 8.0 - 4.0
        };
        for level in available_levels() {
            for n in [7, 37, 64, 100, 256, 301] {
                for limit in [1, 3, 8, 9, 31, 33, n - 1, n] {
                    let limit = limit.min(n);
                    let x: Vec<f32> = (0..n).map(|_| next()).collect();
                    let mask: Vec<f32> = (0..n).map(|i| if i < limit { -(i as f32) * 0.01 } else { f32::NEG_INFINITY }).collect();
                    let halves: Vec<u8> = mask.iter().flat_map(|&m| crate::quant::f16::fp32_to_fp16(m).to_le_bytes()).collect();
                    for f16_mask in [false, true] {
                        let m = || if f16_mask { Mask::F16(&halves) } else { Mask::F32(&mask) };
                        let mut whole = vec![0f32; n];
                        soft_max_row_at(level, &x, &mut whole, m(), 0.125, 1.0);
                        // the scores past the limit are not computed: anything finite
                        let mut x2 = x.clone();
                        x2[needed(limit, n)..].fill(1e30);
                        let read = needed(limit, n);
                        let mut part = vec![f32::NAN; n];
                        soft_max_row_at(level, &x2[..read], &mut part[..read], m(), 0.125, 1.0);
                        part[read..].fill(0.0);
                        assert_eq!(bits(&part), bits(&whole), "{level:?} n {n} limit {limit} f16 mask {f16_mask}");
                    }
                }
            }
        }
    }

    #[test]
    fn limits_end_after_each_querys_last_finite_key() {
        let inf = f32::NEG_INFINITY;
        let (_keep, m) = f32_mask(&[vec![0.0, inf, inf, inf], vec![0.0, 0.0, inf, inf], vec![inf, inf, inf, inf], vec![0.0, inf, -1.0, inf]]);
        assert_eq!(limits(&m, 4, 4), Some(vec![1, 2, 4, 3]), "a row masked entirely keeps its keys");
        // rows past the mask's repeat it (ggml broadcasts mask rows with `j % ne[1]`)
        assert_eq!(limits(&m, 4, 6), Some(vec![1, 2, 4, 3, 1, 2]));
        let (_keep, open) = f32_mask(&[vec![0.0, -5.0, 0.0], vec![0.0, 0.0, f32::MIN]]);
        assert_eq!(limits(&open, 3, 2), None, "nothing masked at the end: nothing to cut");
        let mut per_head = m;
        per_head.ne[2] = 2;
        assert_eq!(limits(&per_head, 4, 4), None);
        let mut halves: Vec<u16> = vec![0x3c00, 0xfc00, 0xfc00, 0xfc00, 0xfc00, 0xfc00];
        let h = Raw { data: halves.as_mut_ptr().cast(), ne: [3, 2, 1, 1], nb: [2, 6, 12, 12], ty: F16 };
        assert_eq!(limits(&h, 3, 2), Some(vec![1, 3]));
    }

    #[test]
    fn split_computes_each_blocks_needed_keys_and_leaves_the_rest() {
        let (n, m) = (70, 40);
        let mut out = vec![f32::NAN; n * m];
        let limits: Vec<usize> = (0..n).map(|j| (j + 1).min(m)).collect();
        let mut seen = Vec::new();
        split(DstView::new(&mut out, n, m, m), &limits, |mut v| {
            seen.push((v.act_rows(), v.weight_rows()));
            v.fill(1.0);
        });
        // blocks of 32 queries; each block's keys rounded up to whole 8-row tiles
        assert_eq!((needed(1, 40), needed(8, 40), needed(9, 40), needed(39, 40)), (8, 8, 16, 40));
        assert_eq!(seen, [(0..32, 0..32), (32..64, 0..40), (64..70, 0..40)]);
        for j in 0..n {
            let computed = seen.iter().find(|(a, _)| a.contains(&j)).unwrap().1.end;
            for i in 0..m {
                assert_eq!(out[j * m + i] == 1.0, i < computed, "({j}, {i})");
                assert!(i >= needed(limits[j], m) || i < computed, "query {j} needs key {i}");
            }
        }
        // a chunk of keys 16..40: queries whose keys all lie before it compute nothing
        let mut out = vec![f32::NAN; n * m];
        let (_, right) = DstView::new(&mut out, n, m, m).split_at(16);
        let mut seen = Vec::new();
        split(right, &limits, |v| seen.push((v.act_rows(), v.weight_rows())));
        assert_eq!(seen, [(0..32, 16..32), (32..64, 16..40), (64..70, 16..40)]);
        let mut out = vec![f32::NAN; n * m];
        let (_, right) = DstView::new(&mut out, n, m, m).split_at(32);
        let few: Vec<usize> = vec![3; n];
        let mut calls = 0;
        split(right, &few, |_| calls += 1);
        assert_eq!(calls, 0);
        assert!(out.iter().all(|x| x.is_nan()), "nothing written");
    }
}
