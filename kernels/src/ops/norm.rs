//! NORM (layer norm) and RMS_NORM over rows, with ggml's double-precision sums (NORM's in the
//! order of the revision served, see [`CpuOrder::norm_vec_sums`](crate::CpuOrder)).

use super::{f32_rows, for_rows, map_row, same_shape, Raw, Session};
use crate::cpu_features::{simd_level, SimdLevel};
use crate::op::{Node, Op};
use crate::view::{alias, Alias, Detached};

pub fn supports(n: &Node) -> bool {
    let (d, Some(a)) = (n.dst, n.src[0]) else { return false };
    f32_rows(&a) && f32_rows(&d) && same_shape(&a, &d)
}

/// NORM or RMS_NORM, `eps` in `op_params[0]`.
pub fn compute(s: &Session, n: &Node) -> bool {
    match n.op {
        Op::Norm if n.order.norm_vec_sums => norm_vec_sums(s, n.dst, n.src(0), n.param_f32(0)),
        Op::Norm => norm(s, n.dst, n.src(0), n.param_f32(0)),
        _ => rms_norm(s, n.dst, n.src(0), n.param_f32(0)),
    }
}

pub fn norm(s: &Session, dst: Raw, a: Raw, eps: f32) -> bool {
    let (_a_copy, a) = Detached::unless_apart(&dst, a);
    let in_place = alias(&dst, &a) == Alias::Same;
    for_rows(s, dst.nrows(), dst.nelements(), |r| {
        let (i1, i2, i3) = dst.row_index(r);
        // in place, the sums read the destination row before anything is written to it
        let x = (!in_place).then(|| a.row_f32(i1, i2, i3));
        let d = dst.row_f32_mut(i1, i2, i3);
        let n = d.len();
        let sum: f64 = x.unwrap_or(&*d).iter().map(|&v| v as f64).sum();
        let mean = (sum / n as f64) as f32;
        let mut sum2 = 0f64;
        map_row(d, x, |_, x| {
            let v = x - mean;
            sum2 += (v * v) as f64;
            v
        });
        let variance = (sum2 / n as f64) as f32;
        let scale = 1.0 / (variance + eps).sqrt();
        d.iter_mut().for_each(|v| *v *= scale);
    })
}

/// The 2026 ggml-cpu's NORM: `ggml_vec_sum_f32` (f64 sum, rounded to f32) divided in f32 for the
/// mean, then `ggml_vec_cvar_f32`, whose squares are summed per vector block in f32 (the block
/// sums in f64, the leftovers one by one) as the host's build vectorizes it: 8 lanes folded
/// high half onto low, then pairwise (x86 AVX2), or 4 lanes added pairwise (`vaddvq_f32`,
/// aarch64); the portable kernels take the scalar loop.
pub fn norm_vec_sums(s: &Session, dst: Raw, a: Raw, eps: f32) -> bool {
    let (_a_copy, a) = Detached::unless_apart(&dst, a);
    let in_place = alias(&dst, &a) == Alias::Same;
    let block = match simd_level() {
        SimdLevel::Avx2 | SimdLevel::Avx512 => 8,
        SimdLevel::Neon => 4,
        SimdLevel::Portable => 1,
    };
    for_rows(s, dst.nrows(), dst.nelements(), |r| {
        let (i1, i2, i3) = dst.row_index(r);
        let x = (!in_place).then(|| a.row_f32(i1, i2, i3));
        let d = dst.row_f32_mut(i1, i2, i3);
        let n = d.len();
        let sum = x.unwrap_or(&*d).iter().map(|&v| v as f64).sum::<f64>() as f32;
        let mean = sum / n as f32;
        map_row(d, x, |_, x| x - mean);
        let full = if block > 1 { n / block * block } else { 0 };
        let mut sum2 = 0f64;
        for b in d[..full].chunks_exact(block) {
            let q: [f32; 8] = std::array::from_fn(|k| if k < block { b[k] * b[k] } else { 0.0 });
            let folded = if block == 8 {
                // _mm256_extractf128_ps + _mm_add_ps, _mm_movehl_ps, _mm_movehdup_ps + _mm_add_ss
                let h = [q[4] + q[0], q[5] + q[1], q[6] + q[2], q[7] + q[3]];
                (h[0] + h[2]) + (h[1] + h[3])
            } else {
                // vaddvq_f32: faddp twice
                (q[0] + q[1]) + (q[2] + q[3])
            };
            sum2 += folded as f64;
        }
        for &v in &d[full..] {
            sum2 += (v * v) as f64;
        }
        let variance = (sum2 / n as f64) as f32;
        let scale = 1.0 / (variance + eps).sqrt();
        d.iter_mut().for_each(|v| *v *= scale);
    })
}

pub fn rms_norm(s: &Session, dst: Raw, a: Raw, eps: f32) -> bool {
    let (_a_copy, a) = Detached::unless_apart(&dst, a);
    let in_place = alias(&dst, &a) == Alias::Same;
    for_rows(s, dst.nrows(), dst.nelements(), |r| {
        let (i1, i2, i3) = dst.row_index(r);
        let x = (!in_place).then(|| a.row_f32(i1, i2, i3));
        let d = dst.row_f32_mut(i1, i2, i3);
        let sum: f64 = x.unwrap_or(&*d).iter().map(|&v| (v * v) as f64).sum();
        let mean = (sum / d.len() as f64) as f32;
        let scale = 1.0 / (mean + eps).sqrt();
        map_row(d, x, |_, v| v * scale);
    })
}
