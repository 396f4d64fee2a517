//! Attention scores the mask throws away, left uncomputed.
//!
//! A prompt's KQ product (keys x queries) is read only by a SOFT_MAX whose mask is -inf for every
//! key after the query's own position (the causal mask; also the unused cells of a padded KV
//! cache). There the softmax computes `x * scale + (-inf) = -inf` and `exp(-inf) = 0` whatever
//! the score `x` was, and adds that 0 to its sum, which changes nothing. So when the executor runs
//! a softmax row right after its scores (`mul_mat_softmax`), the product computes only the keys
//! up to the query's last unmasked one (rounded up to [`ROW_MULTIPLE`]), the softmax reads only
//! those and writes the rest as 0: the softmax's output, and everything after it, are the numbers
//! stock computes. For a 256-token prompt from an empty cache that is close to half of KQ's
//! multiply-adds and of the softmax's reads.
//!
//! Stock's result differs only where its own score times the scale overflows to +inf (its
//! softmax then reads `inf - inf = NaN` at the masked keys too); the executor applies this only
//! when the softmax is the product's one reader (see `exec::fused_softmax`).

use super::super::Raw;
use crate::simd::matmul::DstView;
use crate::simd::view::{F16, F32};

/// Activation (query) rows cut off together: each block computes the keys its last query needs,
/// so a block wastes at most a triangle of `BLOCK x BLOCK` scores; smaller blocks would rebuild
/// the kernels' weight panels for fewer rows.
const BLOCK: usize = 32;

/// Keys a row computes and reads are rounded up to this: whole tiles for the product's walk, and
/// whole groups of the softmax's 8-lane passes, so each group it sums is one stock sums too (the
/// groups after it are all -inf, which stock's softmax adds as 0).
const ROW_MULTIPLE: usize = 8;

/// Elements of a row of `n` that a query with limit `limit` ([`limits`]) needs computed and read.
pub fn needed(limit: usize, n: usize) -> usize {
    limit.next_multiple_of(ROW_MULTIPLE).min(n)
}

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
/// [`needed`]): query rows in blocks of [`BLOCK`], each computing keys up to the largest
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

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_mask(rows: &[Vec<f32>]) -> (Vec<f32>, Raw) {
        let n_kv = rows[0].len();
        let mut data: Vec<f32> = rows.concat();
        let raw = Raw { data: data.as_mut_ptr().cast(), ne: [n_kv, rows.len(), 1, 1], nb: [4, 4 * n_kv, 4 * n_kv * rows.len(), 4 * n_kv * rows.len()], ty: F32 };
        (data, raw)
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
