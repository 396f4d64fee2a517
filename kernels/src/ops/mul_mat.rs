//! MUL_MAT: `dst[.., j, i] = a[.., i, :] . b[.., j, :]`, with `a` (the weights) broadcast over
//! `b`'s batch dimensions. This file is the op's entry (`supports`, `compute`, the product with
//! the softmax after it); everything the op computes is in the folder beside it, from the node
//! down to the registers:
//!
//! * `product`: a node's product in named steps: its batches, its activations (`f32_acts`:
//!   converted once when they cannot be read in place), its output cut into chunks of weight
//!   rows x activation rows that the pool's threads take in turn, the fused softmax.
//! * `streamed`: decoding's products (one weight matrix, one activation row): own runs of
//!   rows, siblings computed together. `causal`: the scores a causal mask discards, skipped.
//! * `buffers`: what a calling thread keeps from one product to the next.
//! * `repacked`: weights in ggml-cpu's repacked layouts (CPU_REPACK buffers), kernels of their
//!   own.
//! * `tiles`: the products over plain memory (operand views, no node): the dispatch per SIMD
//!   level (ggml's dot products in register tiles, or sgemm), the activations in the weights'
//!   partner formats, one folder per ISA's tiles. It imports nothing above it.

mod buffers;
pub mod causal;
mod f32_acts;
mod product;
pub mod repacked;
pub mod streamed;
pub mod tiles;

pub use buffers::trim_thread_buffers;

use super::{Raw, Session};
use crate::cpu_features::simd_level;
use crate::op::Node;
use crate::quant::WType;
use crate::view::{F16, F32};
use product::product;

/// Weights of any [`WType`] (packed along dim 0, whole blocks, aligned rows) broadcast over F32
/// or F16 activations with packed rows, F32 out.
pub fn supports(n: &Node) -> bool {
    if n.repack.is_some() {
        return repacked::supports(n);
    }
    let (d, Some(a), Some(b)) = (n.dst, n.src[0], n.src[1]) else { return false };
    let Some(w) = WType::from_ggml(a.ty) else { return false };
    let elem_b = match b.ty {
        F32 => 4,
        F16 => 2,
        _ => return false,
    };
    let wt_align = w.align();
    a.nb[0] == w.block_bytes()
        && a.ne[0].is_multiple_of(w.block_len())
        && a.nb[1].is_multiple_of(wt_align)
        && w.rows_aligned(a.data, &a.nb)
        && b.nb[0] == elem_b
        && b.ne[0] == a.ne[0]
        && a.ne[2] > 0
        && a.ne[3] > 0
        && b.ne[2].is_multiple_of(a.ne[2])
        && b.ne[3].is_multiple_of(a.ne[3])
        && d.ty == F32
        && d.nb[0] == 4
        && d.nb[1].is_multiple_of(4)
        && d.ne == [a.ne[1], b.ne[1], b.ne[2], b.ne[3]]
        && (matches!(w, WType::F16 | WType::F32) || crate::cpu_features::integer_products(simd_level()))
}

pub fn compute(s: &Session, n: &Node) -> bool {
    if n.repack.is_some() {
        return repacked::compute(s, n);
    }
    product(s, n.order, n.q8k, n.dst, n.src(0), n.src(1), None)
}

/// `d = a . b` in the order before 2026, activations quantized by the Rust quantizers (the
/// ops' tests).
#[cfg(test)]
pub fn mul_mat(s: &Session, d: Raw, a: Raw, b: Raw) -> bool {
    product(s, crate::CpuOrder::BEFORE_2026, None, d, a, b, None)
}

/// [`mul_mat`] (node `n`) followed by the softmax whose only input it is (`then`, the rows of
/// the next node): each chunk's softmax rows are computed as soon as the chunk is, so that with
/// a causal mask the scores it masks need not be computed at all ([`causal`]); SmolLM2's chunks
/// of scores (128 KiB) are also still in the thread's cache then, whisper's (4.5 MB) are not.
/// Chunks of whole rows only; other products run the softmax after them.
pub fn mul_mat_softmax(s: &Session, n: &Node, then: &super::softmax::Rows) -> bool {
    if n.repack.is_some() {
        return repacked::compute(s, n) && super::for_rows(s, n.dst.nrows(), n.dst.nelements(), |r| then.row(r, None));
    }
    product(s, n.order, n.q8k, n.dst, n.src(0), n.src(1), Some(then))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::quant::{f16::fp32_to_fp16, q8_0, type_id, BlockQ8_0};

    /// A contiguous tensor [ne0, ne1, ne2] of `elem` bytes per block of `block` values.
    pub(super) fn raw<T>(data: &mut [T], ty: i32, elem: usize, block: usize, ne: [usize; 3]) -> Raw {
        let row = ne[0] / block * elem;
        assert!(std::mem::size_of_val(data) >= row * ne[1] * ne[2]);
        Raw { data: data.as_mut_ptr() as *mut u8, ne: [ne[0], ne[1], ne[2], 1], nb: [elem, row, row * ne[1], row * ne[1] * ne[2]], ty }
    }

    /// The block formats' products are declined only on an aarch64 CPU without `sdot` in a build
    /// without the `neon-nodot` feature (scripts/test-aarch64.sh runs this on a Cortex-A53 without
    /// it); the float products never.
    #[test]
    fn integer_products_declined_only_without_their_path() {
        let declined = cfg!(target_arch = "aarch64")
            && !cfg!(feature = "neon-nodot")
            && simd_level() == crate::cpu_features::SimdLevel::Neon
            && !crate::cpu_features::has_dotprod();
        let (k, m, n) = (64, 4, 3);
        let mut acts = vec![0f32; k * n];
        let mut out = vec![0f32; m * n];
        for (ty, elem, block) in [(type_id::Q4_0, 18, 32), (type_id::Q8_0, 34, 32), (type_id::F16, 2, 1), (type_id::F32, 4, 1)] {
            let mut w = vec![0u32; k * m]; // enough bytes for F32, aligned for every format
            let node = Node {
                op: crate::op::Op::MulMat,
                dst: raw(&mut out, type_id::F32, 4, 1, [m, n, 1]),
                src: [Some(raw(&mut w, ty, elem, block, [k, m, 1])), Some(raw(&mut acts, type_id::F32, 4, 1, [k, n, 1])), None, None, None],
                params: [0; 16],
                order: crate::CpuOrder::BEFORE_2026,
                q8k: None,
                repack: None,
            };
            let float = ty == type_id::F16 || ty == type_id::F32;
            assert_eq!(supports(&node), float || !declined, "type {ty}, declined {declined}");
        }
    }

    /// Weights of type `ty`, `kvh` matrices of `m` rows of `k`, as bytes.
    pub(super) fn weight_bytes(ty: i32, k: usize, m: usize, kvh: usize) -> Vec<u8> {
        let x: Vec<f32> = (0..k * m * kvh).map(|i| ((i * 37 % 101) as f32 - 50.0) / 64.0).collect();
        match ty {
            type_id::F32 => x.iter().flat_map(|v| v.to_le_bytes()).collect(),
            type_id::F16 => x.iter().flat_map(|&v| fp32_to_fp16(v).to_le_bytes()).collect(),
            _ => {
                let mut blocks = vec![BlockQ8_0::default(); x.len() / 32];
                q8_0::quantize_row(&x, &mut blocks);
                // SAFETY: BlockQ8_0 is plain bytes (repr(C), no padding: ggml's block layout).
                unsafe { std::slice::from_raw_parts(blocks.as_ptr() as *const u8, std::mem::size_of_val(&blocks[..])) }.to_vec()
            }
        }
    }

    /// Query (activation) values for the tests and the bench.
    pub(super) fn query_values(n: usize) -> Vec<f32> {
        (0..n).map(|i| ((i * 53 % 97) as f32 - 48.0) / 48.0).collect()
    }
}
