//! Every row-local op computed in place (destination = source, as ggml's `*_inplace` builders
//! make it) must give exactly the out-of-place result; so must ops whose destination or a second
//! source only overlaps a source (the `Detached` path). Sizes on both sides of `SERIAL_ELEMENTS`
//! run the serial and the threaded split.

use super::binary::{self, Binary};
use super::copy;
use super::unary::{self, Unary};
use super::rope::{RopeParams, MODE_NEOX};
use crate::pool::Pool;
use crate::quant::test_util::bits;
use crate::view::{Raw, F16, F32, I32};

fn values(n: usize, seed: u32, lo: f32, hi: f32) -> Vec<f32> {
    let mut x = seed.wrapping_mul(2654435761).wrapping_add(12345);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            lo + (hi - lo) * (x as f32 / u32::MAX as f32)
        })
        .collect()
}

/// A contiguous F32 view [ne0, ne1, ne2, 1] of `buf`.
fn raw(buf: &mut [f32], ne: [usize; 3]) -> Raw {
    assert!(buf.len() >= ne.iter().product());
    Raw { data: buf.as_mut_ptr() as *mut u8, ne: [ne[0], ne[1], ne[2], 1], nb: [4, 4 * ne[0], 4 * ne[0] * ne[1], 4 * ne[0] * ne[1] * ne[2]], ty: F32 }
}

/// Runs `op(dst, src)` out of place and in place on the same input and compares the bits.
fn check(name: &str, ne: [usize; 3], lo: f32, hi: f32, op: impl Fn(Raw, Raw) -> bool) {
    let n: usize = ne.iter().product();
    let input = values(n, n as u32 ^ name.len() as u32, lo, hi);
    let mut src = input.clone();
    let mut out = vec![0f32; n];
    assert!(op(raw(&mut out, ne), raw(&mut src, ne)), "{name}: out of place failed");
    assert_eq!(bits(&src), bits(&input), "{name}: out of place wrote its source");
    let mut buf = input.clone();
    let t = raw(&mut buf, ne);
    assert!(op(t, t), "{name}: in place failed");
    assert_eq!(bits(&buf), bits(&out), "{name} {ne:?}: in place differs from out of place");
    assert_ne!(bits(&buf), bits(&input), "{name}: the op changed nothing, the test proves nothing");
}

const SHAPES: [[usize; 3]; 2] = [[67, 5, 3], [576, 40, 1]];

#[test]
fn binary_ops_in_place_equal_out_of_place() {
    let pool = Pool::new(2);
    let s = pool.session();
    for ne in SHAPES {
        let mut b = values(ne[0] * ne[1], 7, 0.5, 2.0);
        let b = raw(&mut b, [ne[0], ne[1], 1]);
        for (name, op) in [("add", Binary::Add), ("sub", Binary::Sub), ("mul", Binary::Mul), ("div", Binary::Div)] {
            check(name, ne, -1.0, 1.0, |d, a| binary::run(&s, op, d, a, b));
        }
        // the second source is the destination too: ggml_add_inplace(x, x)
        check("add x to itself", ne, -1.0, 1.0, |d, a| binary::run(&s, Binary::Add, d, a, a));
    }
}

#[test]
fn unary_ops_in_place_equal_out_of_place() {
    let pool = Pool::new(2);
    let s = pool.session();
    for ne in SHAPES {
        check("scale", ne, -1.0, 1.0, |d, a| unary::run(&s, Unary::Scale(0.37), d, a));
        check("sqr", ne, -1.0, 1.0, |d, a| unary::run(&s, Unary::Sqr, d, a));
        check("sqrt", ne, 0.1, 4.0, |d, a| unary::run(&s, Unary::Sqrt, d, a));
        check("silu", ne, -8.0, 8.0, |d, a| unary::run(&s, Unary::Silu, d, a));
        check("gelu", ne, -8.0, 8.0, |d, a| unary::run(&s, Unary::Gelu, d, a));
        check("norm", ne, -1.0, 1.0, |d, a| super::norm::norm(&s, d, a, 1e-5));
        check("norm (2026 order)", ne, -1.0, 1.0, |d, a| super::norm::norm_vec_sums(&s, d, a, 1e-5));
        check("rms_norm", ne, -1.0, 1.0, |d, a| super::norm::rms_norm(&s, d, a, 1e-5));
    }
}

#[test]
fn soft_max_and_rope_in_place_equal_out_of_place() {
    let pool = Pool::new(2);
    let s = pool.session();
    for ne in SHAPES {
        check("soft_max", ne, -4.0, 4.0, |d, a| super::softmax::soft_max(&s, d, a, None, 0.5, 0.0));
        let mut m = values(ne[0] * ne[1], 3, -2.0, 0.0);
        let m = raw(&mut m, [ne[0], ne[1], 1]);
        check("soft_max_ext alibi", ne, -4.0, 4.0, |d, a| super::softmax::soft_max(&s, d, a, Some(m), 0.5, 8.0));
        // a mask that is the destination itself (its rows read while others are written)
        check("soft_max masked by itself", ne, -4.0, 4.0, |d, a| super::softmax::soft_max(&s, d, a, Some(a), 0.5, 0.0));
        let mut pos: Vec<i32> = (0..ne[2] as i32).map(|i| 3 + 97 * i).collect();
        let pos = Raw { data: pos.as_mut_ptr() as *mut u8, ne: [ne[2], 1, 1, 1], nb: [4, 4 * ne[2], 4 * ne[2], 4 * ne[2]], ty: I32 };
        // on x86 normal mode in place rounds its products as ggml-cpu's fallback loop does (see
        // `rope`), so only NeoX must equal out of place there; simd_ops.c checks both against
        // ggml-cpu
        let modes: &[i32] = if cfg!(target_arch = "x86_64") { &[MODE_NEOX] } else { &[0, MODE_NEOX] };
        for &mode in modes {
            let p = RopeParams { n_dims: 48, mode, n_ctx_orig: 8192, freq_base: 10000.0, freq_scale: 1.0, ext_factor: 0.0, attn_factor: 1.0, beta_fast: 32.0, beta_slow: 1.0, fused_in_place: false };
            // rope's rows are [head_dim, n_head, n_tokens]: ne[2] tokens at `pos`
            check("rope", ne, -1.0, 1.0, |d, a| super::rope::rope(&s, d, a, pos, None, &p));
        }
        // the 2026 revision's rotate_pairs fuses in place too: both modes equal out of place
        for mode in [0, MODE_NEOX] {
            let p = RopeParams { n_dims: 48, mode, n_ctx_orig: 8192, freq_base: 10000.0, freq_scale: 1.0, ext_factor: 0.0, attn_factor: 1.0, beta_fast: 32.0, beta_slow: 1.0, fused_in_place: true };
            check("rope (2026 order)", ne, -1.0, 1.0, |d, a| super::rope::rope(&s, d, a, pos, None, &p));
        }
    }
}

#[test]
fn copies_onto_themselves_and_onto_overlapping_views() {
    let pool = Pool::new(2);
    let s = pool.session();
    for ne in SHAPES {
        let n: usize = ne.iter().product();
        let input = values(n + ne[0], 11, -1.0, 1.0);
        // onto itself: nothing changes
        let mut buf = input.clone();
        let t = raw(&mut buf, ne);
        assert!(copy::run(&s, t, t));
        assert_eq!(bits(&buf), bits(&input));
        // onto the same bytes one row further on: the result is the source as it was before
        let mut buf = input.clone();
        let src = raw(&mut buf, ne);
        let dst = Raw { data: src.data.wrapping_add(4 * ne[0]), ..src };
        assert!(copy::run(&s, dst, src));
        assert_eq!(bits(&buf[ne[0]..]), bits(&input[..n]), "{ne:?}: overlapping copy");
        // F32 into F16 over the same bytes (the flat conversion path)
        let mut buf = input.clone();
        let src = raw(&mut buf, ne);
        let dst = Raw { nb: [2, 2 * ne[0], 2 * ne[0] * ne[1], 2 * n], ty: F16, ..src };
        assert!(copy::run(&s, dst, src));
        // SAFETY: buf holds n f32, so at least n halves, and no other view of it is alive
        let halves = unsafe { std::slice::from_raw_parts(buf.as_ptr() as *const u16, n) };
        let want: Vec<u16> = input[..n].iter().map(|&v| crate::quant::f16::fp32_to_fp16(v)).collect();
        assert_eq!(halves, &want[..], "{ne:?}: overlapping f32 -> f16 copy");
    }
}
