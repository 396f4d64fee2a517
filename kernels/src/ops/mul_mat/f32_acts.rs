//! A product's activations converted once to f32 rows when they cannot be read in place (F16,
//! strided, or rounded for sgemm), and the rounding that makes sgemm multiply the numbers
//! ggml-cpu's dot products see.

use super::super::{for_rows, Raw, Session};
use crate::quant::f16::fp16_to_fp32;
use crate::quant::WType;
use crate::view::{F16, F32};
use parking_lot::Mutex;
use std::cell::RefCell;

/// Rounds activation rows (of `k` values each) as ggml-cpu's vec_dot type for `w` would.
fn round_like_ggml(w: WType, rows: &mut [f32], k: usize) {
    use crate::quant::{f16, q8_0, q8_1, BlockQ8_0, BlockQ8_1};
    match w {
        WType::F32 => {}
        WType::F16 => rows.iter_mut().for_each(|x| *x = f16::fp16_to_fp32(f16::fp32_to_fp16(*x))),
        WType::Q4_0 | WType::Q5_0 | WType::Q8_0 | WType::IQ4NL => ROUND_Q8_0.with(|b| {
            let mut blocks = b.borrow_mut();
            blocks.resize(k / 32, BlockQ8_0::default());
            for row in rows.chunks_exact_mut(k) {
                q8_0::quantize_row(row, &mut blocks);
                q8_0::dequantize_row(&blocks, row);
            }
        }),
        WType::Q4K | WType::Q5K | WType::Q6K => ROUND_Q8K.with(|b| {
            use crate::quant::q8_k;
            let mut blocks = b.borrow_mut();
            blocks.resize(k / q8_k::QK_K, crate::quant::BlockQ8K::default());
            for row in rows.chunks_exact_mut(k) {
                q8_k::quantize_row(row, &mut blocks);
                q8_k::dequantize_row(&blocks, row);
            }
        }),
        WType::Q4_1 | WType::Q5_1 => ROUND_Q8_1.with(|b| {
            let mut blocks = b.borrow_mut();
            blocks.resize(k / 32, BlockQ8_1::default());
            for row in rows.chunks_exact_mut(k) {
                q8_1::quantize_row(row, &mut blocks);
                q8_1::dequantize_row(&blocks, row);
            }
        }),
    }
}

thread_local! {
    static ROUND_Q8_0: RefCell<Vec<crate::quant::BlockQ8_0>> = const { RefCell::new(Vec::new()) };
    static ROUND_Q8_1: RefCell<Vec<crate::quant::BlockQ8_1>> = const { RefCell::new(Vec::new()) };
    static ROUND_Q8K: RefCell<Vec<crate::quant::BlockQ8K>> = const { RefCell::new(Vec::new()) };
}

/// Activation rows of `b` as f32, `rows_per` rows of `k` per batch (`batches`: each batch's
/// first head `(i2, i3)`; row `j` of a batch is row `j % n` of head `i2 + j / n`), rounded like
/// ggml-cpu's dot products for weights `round` when given. Rows are converted in parallel, each
/// row by one thread; `None` when a worker panicked.
pub(super) fn convert(s: &Session, b: Raw, k: usize, n: usize, rows_per: usize, batches: &[(usize, usize)], round: Option<WType>) -> Option<Vec<f32>> {
    let mut converted = vec![0f32; batches.len() * rows_per * k];
    let rows: Vec<Mutex<&mut [f32]>> = converted.chunks_exact_mut(k).map(Mutex::new).collect();
    let ok = for_rows(s, rows.len(), rows.len() * k, |r| {
        // row j of product bi: row j % n of head i2 + j / n
        let (bi, jr) = (r / rows_per, r % rows_per);
        let (i2, i3) = batches[bi];
        let (i2, j) = (i2 + jr / n, jr % n);
        let mut dst = rows[r].lock();
        match b.ty {
            F32 if b.nb[0] == 4 => dst.copy_from_slice(b.f32_at(b.offset(0, j, i2, i3), k)),
            F16 => {
                let bytes = b.bytes_at(b.offset(0, j, i2, i3), 2 * k);
                for (x, h) in dst.iter_mut().zip(bytes.chunks_exact(2)) {
                    *x = fp16_to_fp32(u16::from_le_bytes([h[0], h[1]]));
                }
            }
            _ => {
                for (i0, x) in dst.iter_mut().enumerate() {
                    *x = b.read_f32(i0, j, i2, i3);
                }
            }
        }
        if let Some(w) = round {
            round_like_ggml(w, &mut dst, k);
        }
    });
    drop(rows);
    ok.then_some(converted)
}
