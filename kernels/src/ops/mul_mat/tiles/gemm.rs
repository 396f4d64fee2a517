//! The sgemm path of MUL_MAT (portable level, and `GGML_RS_SIMD_SGEMM=1`): weight rows
//! dequantized panel by panel and multiplied with `matrixmultiply::sgemm`.

use super::operands::{check_shapes, Acts, DstView, Weights};
use crate::cpu_features::{simd_level, SimdLevel};
use crate::quant::WType;

/// Weight rows dequantized per sgemm call: a panel of about 256 KiB so it stays in L2 while
/// sgemm streams the activations past it; a multiple of 8 to match sgemm's register tile.
pub fn gemm_tile_rows(k: usize) -> usize {
    ((64 * 1024) / k.max(1)).clamp(8, 256) / 8 * 8
}

/// sgemm kernel for the weight rows of `dst`. `scratch` holds the dequantized panel; it is grown
/// once (to `gemm_tile_rows(k) * k` floats) and reused, so keep one per worker thread.
pub fn mul_mat_gemm(w: &Weights<'_>, acts: &Acts<'_>, dst: DstView<'_>, scratch: &mut Vec<f32>) {
    mul_mat_gemm_at(simd_level(), w, acts, dst, scratch)
}

/// [`mul_mat_gemm`] on an explicit kernel level (affects the dequantization only; sgemm does
/// its own CPU detection).
pub fn mul_mat_gemm_at(level: SimdLevel, w: &Weights<'_>, acts: &Acts<'_>, mut dst: DstView<'_>, scratch: &mut Vec<f32>) {
    check_shapes(w, acts, &dst);
    let rows = dst.weight_rows();
    let cols = dst.act_rows();
    let (k, n) = (w.k, cols.len());
    if n == 0 || rows.is_empty() {
        return;
    }
    if k == 0 {
        for j in cols {
            dst.row_mut(j).fill(0.0);
        }
        return;
    }
    // the view's activation rows: A starts at row cols.start, C at output row cols.start
    let a = acts.row(cols.start).as_ptr();
    let rsa = acts.stride as isize;
    let rsc = dst.stride as isize;
    let c_row = cols.start * dst.stride;
    if w.wtype == WType::F32 {
        // No conversion needed: sgemm reads the weight rows in place as B = W^T.
        let b = w.row_f32(rows.start).as_ptr();
        let c = dst.col_ptr(rows.start).wrapping_add(c_row);
        // SAFETY: A = n x k activations, rows cols.start..cols.end of `acts.data` (Acts::new
        // checked its length, check_shapes that the view's rows are among them); B = k x cols
        // read at b + c*1 + i*(row_stride/4), i.e. rows rows.start..rows.end of the weights,
        // inside `w.data` (Weights::new checked length and 4-byte alignment, check_shapes checked
        // rows.end <= w.rows); C = n x cols written at element (j, i) of the view (j in its
        // activation rows), inside the borrowed dst buffer (DstView::for_rows) and not aliased
        // by any other view or by A/B.
        unsafe {
            matrixmultiply::sgemm(
                n, k, rows.len(), 1.0,
                a, rsa, 1,
                b, 1, (w.row_stride / 4) as isize,
                0.0,
                c, rsc, 1,
            );
        }
        return;
    }
    let tile = gemm_tile_rows(k);
    if scratch.len() < tile * k {
        scratch.resize(tile * k, 0.0);
    }
    let mut t0 = rows.start;
    while t0 < rows.end {
        let t1 = (t0 + tile).min(rows.end);
        for i in t0..t1 {
            let off = (i - t0) * k;
            w.dequantize_row_at(level, i, &mut scratch[off..off + k]);
        }
        let c = dst.col_ptr(t0).wrapping_add(c_row);
        // SAFETY: A as above; B = k x (t1 - t0) read from the panel at element c + i*k, with
        // (t1 - t0) * k <= scratch.len(); C = n x (t1 - t0) at columns t0..t1 of the view, inside
        // the borrowed dst buffer and disjoint from A, B and every other view.
        unsafe {
            matrixmultiply::sgemm(
                n, k, t1 - t0, 1.0,
                a, rsa, 1,
                scratch.as_ptr(), 1, k as isize,
                0.0,
                c, rsc, 1,
            );
        }
        t0 = t1;
    }
}

