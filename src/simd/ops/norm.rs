//! NORM (layer norm) and RMS_NORM over rows, with ggml's double-precision sums.

use super::{for_rows, Raw, Session};

pub fn norm(s: &Session, dst: Raw, a: Raw, eps: f32) -> bool {
    for_rows(s, dst.nrows(), dst.nelements(), |r| {
        let (i1, i2, i3) = dst.row_index(r);
        let x = a.row_f32(i1, i2, i3);
        let d = dst.row_f32_mut(i1, i2, i3);
        let n = x.len();
        let sum: f64 = x.iter().map(|&v| v as f64).sum();
        let mean = (sum / n as f64) as f32;
        let mut sum2 = 0f64;
        for i in 0..n {
            let v = x[i] - mean;
            d[i] = v;
            sum2 += (v * v) as f64;
        }
        let variance = (sum2 / n as f64) as f32;
        let scale = 1.0 / (variance + eps).sqrt();
        d.iter_mut().for_each(|v| *v *= scale);
    })
}

pub fn rms_norm(s: &Session, dst: Raw, a: Raw, eps: f32) -> bool {
    for_rows(s, dst.nrows(), dst.nelements(), |r| {
        let (i1, i2, i3) = dst.row_index(r);
        let x = a.row_f32(i1, i2, i3);
        let d = dst.row_f32_mut(i1, i2, i3);
        let sum: f64 = x.iter().map(|&v| (v * v) as f64).sum();
        let mean = (sum / x.len() as f64) as f32;
        let scale = 1.0 / (mean + eps).sqrt();
        d.iter_mut().zip(x).for_each(|(d, &v)| *d = v * scale);
    })
}
