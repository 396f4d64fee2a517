//! GET_ROWS: gathers rows of `a` (F32, F16, Q4_0, Q4_1, Q8_0) by I32 indices into F32 rows.

use super::{for_rows, Raw, Session};
use crate::simd::quant::{self, f16, q4_0, q4_1, q8_0};
use crate::simd::tensor::{F16, F32, Q4_0, Q4_1, Q8_0};

/// Bytes of one row of `n` values of type `ty`.
pub fn row_size(ty: i32, n: usize) -> usize {
    match ty {
        F32 => 4 * n,
        F16 => 2 * n,
        Q4_0 => n / 32 * 18,
        Q4_1 => n / 32 * 20,
        Q8_0 => n / 32 * 34,
        _ => 0,
    }
}

/// Converts one row of `ty` to f32.
pub fn to_f32(ty: i32, bytes: &[u8], out: &mut [f32]) {
    match ty {
        F32 => out.iter_mut().zip(bytes.chunks_exact(4)).for_each(|(o, b)| *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        F16 => out.iter_mut().zip(bytes.chunks_exact(2)).for_each(|(o, b)| *o = f16::fp16_to_fp32(u16::from_le_bytes([b[0], b[1]]))),
        Q4_0 => q4_0::dequantize_row(quant::blocks_from_bytes(bytes), out),
        Q4_1 => q4_1::dequantize_row(quant::blocks_from_bytes(bytes), out),
        Q8_0 => q8_0::dequantize_row(quant::blocks_from_bytes(bytes), out),
        _ => {}
    }
}

pub fn get_rows(s: &Session, dst: Raw, a: Raw, idx: Raw) -> bool {
    let len = row_size(a.ty, a.ne[0]);
    for_rows(s, dst.nrows(), dst.nelements(), |r| {
        let (i10, i11, i12) = dst.row_index(r);
        let row = idx.read_i32(i10, i11, i12, 0).max(0) as usize;
        let src = a.row_bytes(row.min(a.ne[1].saturating_sub(1)), i11 % a.ne[2], i12 % a.ne[3], len);
        to_f32(a.ty, src, dst.row_f32_mut(i10, i11, i12));
    })
}
