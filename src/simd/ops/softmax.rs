//! SOFT_MAX with ggml's extensions: a scale, an optional mask (F32 or F16, broadcast over rows),
//! and ALiBi slopes when `max_bias > 0`.

use super::{for_rows, Raw, Session};

pub fn soft_max(s: &Session, dst: Raw, a: Raw, mask: Option<Raw>, scale: f32, max_bias: f32) -> bool {
    let n_head = a.ne[2] as u32;
    let n_head_log2 = if n_head == 0 { 0 } else { 1u32 << (31 - n_head.leading_zeros()) };
    let m0 = 2f32.powf(-max_bias / n_head_log2.max(1) as f32);
    let m1 = 2f32.powf(-(max_bias / 2.0) / n_head_log2.max(1) as f32);
    for_rows(s, dst.nrows(), dst.nelements(), |r| {
        let (i1, i2, i3) = dst.row_index(r);
        let x = a.row_f32(i1, i2, i3);
        let d = dst.row_f32_mut(i1, i2, i3);
        let h = i2 as u32;
        let slope = if max_bias > 0.0 {
            if h < n_head_log2 {
                m0.powi(h as i32 + 1)
            } else {
                m1.powi(2 * (h - n_head_log2) as i32 + 1)
            }
        } else {
            1.0
        };
        for i in 0..x.len() {
            d[i] = x[i] * scale;
        }
        if let Some(m) = &mask {
            let (j1, j2, j3) = (i1 % m.ne[1], i2 % m.ne[2], i3 % m.ne[3]);
            for (i, v) in d.iter_mut().enumerate() {
                *v += slope * m.read_f32(i, j1, j2, j3);
            }
        }
        let max = d.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut sum = 0f64;
        for v in d.iter_mut() {
            *v = (*v - max).exp();
            sum += *v as f64;
        }
        let inv = (1.0 / sum) as f32;
        d.iter_mut().for_each(|v| *v *= inv);
    })
}
