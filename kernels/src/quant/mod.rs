//! ggml's block quantization formats as plain Rust over slices: the 32-value formats (Q4_0,
//! Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL and the activations' Q8_1), the 256-value K-quants (Q4_K, Q5_K, Q6_K
//! and the activations' Q8_K), and half floats.
//!
//! Each format module has the `#[repr(C)]` block (same size and field offsets as
//! ggml-common.h, so tensor bytes can be viewed as blocks without copying), the dequantizer
//! (what GET_ROWS and the sgemm path read), and ggml's generic `vec_dot`, the portable level's
//! kernel. The formats that activations are converted to (Q8_0, Q8_1, Q8_K) and those the tests
//! build weights from have ggml's reference quantizer too (byte-identical where ggml's C leaves
//! no rounding to the compiler); the K-quant weights' quantizers are not ported (the tests use
//! random super-blocks). Q4_0, Q4_1, Q8_0 and F16 have AVX2 conversions besides; `*_at(level, ..)`
//! lets tests pick the level. The ISA kernels of the products are in `ops::mul_mat::tiles`.

pub mod f16;
pub mod host_q8k;
pub mod iq4_nl;
pub mod q4_0;
pub mod q4_1;
pub mod q4_k;
pub mod q5_0;
pub mod q5_1;
pub mod q5_k;
pub mod q8_0;
pub mod q8_1;
pub mod q8_k;
pub mod q6_k;

pub use host_q8k::HostQ8K;
pub use iq4_nl::BlockIQ4NL;
pub use q4_0::BlockQ4_0;
pub use q4_1::BlockQ4_1;
pub use q5_0::BlockQ5_0;
pub use q5_1::BlockQ5_1;
pub use q8_0::BlockQ8_0;
pub use q8_1::BlockQ8_1;
pub use q4_k::BlockQ4K;
pub use q5_k::BlockQ5K;
pub use q6_k::BlockQ6K;
pub use q8_k::BlockQ8K;

use crate::cpu_features::SimdLevel;

/// Values per block for every format here (ggml's QK4_0 = QK4_1 = QK8_0 = QK8_1 = 32).
pub const QK: usize = 32;

/// The `enum ggml_type` ids the backend reads (the one table: [`crate::ggml_types`]).
pub use crate::ggml_types::id as type_id;

/// The weight types the backend reads (MUL_MAT weights, GET_ROWS tables): the one table of what
/// each ggml type id is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WType {
    F32,
    F16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q4K,
    Q5K,
    Q6K,
    IQ4NL,
}

impl WType {
    /// Every weight type, in id order.
    pub const ALL: [WType; 11] =
        [WType::F32, WType::F16, WType::Q4_0, WType::Q4_1, WType::Q5_0, WType::Q5_1, WType::Q8_0, WType::Q4K, WType::Q5K, WType::Q6K, WType::IQ4NL];

    /// Its ggml type id.
    pub const fn ggml_id(self) -> i32 {
        use type_id as t;
        match self {
            WType::F32 => t::F32,
            WType::F16 => t::F16,
            WType::Q4_0 => t::Q4_0,
            WType::Q4_1 => t::Q4_1,
            WType::Q5_0 => t::Q5_0,
            WType::Q5_1 => t::Q5_1,
            WType::Q8_0 => t::Q8_0,
            WType::Q4K => t::Q4_K,
            WType::Q5K => t::Q5_K,
            WType::Q6K => t::Q6_K,
            WType::IQ4NL => t::IQ4_NL,
        }
    }

    /// ggml's name of it (`ggml_type_name`).
    pub fn name(self) -> &'static str {
        crate::ggml_types::name(self.ggml_id())
    }

    /// The type of ggml type id `ty` (`enum ggml_type`, numbered alike in every revision).
    pub const fn from_ggml(ty: i32) -> Option<WType> {
        use type_id as t;
        match ty {
            t::F32 => Some(WType::F32),
            t::F16 => Some(WType::F16),
            t::Q4_0 => Some(WType::Q4_0),
            t::Q4_1 => Some(WType::Q4_1),
            t::Q5_0 => Some(WType::Q5_0),
            t::Q5_1 => Some(WType::Q5_1),
            t::Q8_0 => Some(WType::Q8_0),
            t::Q4_K => Some(WType::Q4K),
            t::Q5_K => Some(WType::Q5K),
            t::Q6_K => Some(WType::Q6K),
            t::IQ4_NL => Some(WType::IQ4NL),
            _ => None,
        }
    }

    /// Values per block (1 for the float types).
    pub const fn block_len(self) -> usize {
        match self {
            WType::F32 | WType::F16 => 1,
            WType::Q4_0 | WType::Q4_1 | WType::Q5_0 | WType::Q5_1 | WType::Q8_0 | WType::IQ4NL => QK,
            WType::Q4K | WType::Q5K | WType::Q6K => q8_k::QK_K,
        }
    }

    /// Bytes per block (ggml's `type_size`).
    pub const fn block_bytes(self) -> usize {
        match self {
            WType::F32 => 4,
            WType::F16 => 2,
            WType::Q4_0 => <Q4_0 as Format>::W::BYTES,
            WType::Q4_1 => <Q4_1 as Format>::W::BYTES,
            WType::Q5_0 => <Q5_0 as Format>::W::BYTES,
            WType::Q5_1 => <Q5_1 as Format>::W::BYTES,
            WType::Q8_0 => <Q8_0 as Format>::W::BYTES,
            WType::Q4K => <Q4K as Format>::W::BYTES,
            WType::Q5K => <Q5K as Format>::W::BYTES,
            WType::Q6K => <Q6K as Format>::W::BYTES,
            WType::IQ4NL => <IQ4NL as Format>::W::BYTES,
        }
    }

    /// Bytes of one dense row of `k` values (`k` must be a multiple of [`Self::block_len`]).
    pub const fn row_bytes(self, k: usize) -> usize {
        k / self.block_len() * self.block_bytes()
    }

    /// Required alignment of row starts, so rows can be viewed as typed slices.
    pub const fn align(self) -> usize {
        match self {
            WType::F32 => 4,
            _ => 2,
        }
    }

    /// Whether every row of a tensor at `data` with strides `nb` starts `align()`-aligned, as
    /// the kernels' block views require (a misaligned view is declined, not a panic later).
    pub fn rows_aligned(self, data: *const u8, nb: &[usize; 4]) -> bool {
        let a = self.align();
        (data as usize).is_multiple_of(a) && nb[1..].iter().all(|s| s.is_multiple_of(a))
    }

    /// Writes one row (`out.len()` values, [`Self::row_bytes`] of `bytes`) as f32.
    pub fn to_f32_at(self, level: SimdLevel, bytes: &[u8], out: &mut [f32]) {
        match self {
            WType::F32 => out.iter_mut().zip(bytes.chunks_exact(4)).for_each(|(o, b)| *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            WType::F16 => match try_halves(bytes) {
                Some(h) => f16::f16_to_f32_slice_at(level, &h[..out.len()], out),
                None => out.iter_mut().zip(bytes.chunks_exact(2)).for_each(|(o, b)| *o = f16::fp16_to_fp32(u16::from_le_bytes([b[0], b[1]]))),
            },
            WType::Q4_0 => Q4_0::dequantize_row_at(level, blocks_from_bytes(bytes), out),
            WType::Q4_1 => Q4_1::dequantize_row_at(level, blocks_from_bytes(bytes), out),
            WType::Q5_0 => Q5_0::dequantize_row_at(level, blocks_from_bytes(bytes), out),
            WType::Q5_1 => Q5_1::dequantize_row_at(level, blocks_from_bytes(bytes), out),
            WType::Q8_0 => Q8_0::dequantize_row_at(level, blocks_from_bytes(bytes), out),
            WType::Q4K => Q4K::dequantize_row_at(level, blocks_from_bytes(bytes), out),
            WType::Q5K => Q5K::dequantize_row_at(level, blocks_from_bytes(bytes), out),
            WType::Q6K => Q6K::dequantize_row_at(level, blocks_from_bytes(bytes), out),
            WType::IQ4NL => IQ4NL::dequantize_row_at(level, blocks_from_bytes(bytes), out),
        }
    }
}

/// `bytes` as halves when 2-aligned.
fn try_halves(bytes: &[u8]) -> Option<&[u16]> {
    // SAFETY: u16 has no invalid bit patterns; align_to only hands out the aligned middle.
    let (head, mid, _) = unsafe { bytes.align_to::<u16>() };
    head.is_empty().then_some(mid)
}

/// A block format of weights, with everything ggml-cpu's MUL_MAT does with it: the block layout,
/// the partner format activations are quantized to (ggml's `vec_dot_type`), quantize /
/// dequantize, and the portable dot product, which is the reference for the ISA kernels. Those
/// kernels (`tiles::avx2`, `tiles::avx512`, `tiles::neon` in `ops::mul_mat`) extend this trait with each ISA's
/// tile interface, implemented for the same markers [`Q4_0`], [`Q4_1`], [`Q8_0`].
pub trait Format: 'static {
    /// The weight block (`block_q4_0`, ...).
    type W: QuantBlock;
    /// The activations' block (`block_q8_0` or `block_q8_1`).
    type A: QuantBlock;
    const WTYPE: WType;
    fn dequantize_row_at(level: SimdLevel, w: &[Self::W], out: &mut [f32]);
    /// Activations to the partner format, as ggml-cpu's `from_float` of the `vec_dot_type`.
    fn quantize_acts_at(level: SimdLevel, x: &[f32], out: &mut [Self::A]);
    /// An activation block's scale and (Q8_1) sum as f32, as the tiles read them.
    fn act_scale_sum(a: &Self::A) -> (f32, f32);
    /// ggml's scalar `vec_dot` of a weight row and an activation row: the reference every ISA
    /// kernel is tested against (what MUL_MAT runs per level is `ops::mul_mat::tiles::vec_dot_at`).
    fn vec_dot_portable(w: &[Self::W], a: &[Self::A]) -> f32;
}

/// Marker of the Q4_0 format (weights: `block_q4_0`, activations: Q8_0).
pub struct Q4_0;
/// Marker of the Q4_1 format (weights: `block_q4_1`, activations: Q8_1).
pub struct Q4_1;
/// Marker of the Q5_0 format (weights: `block_q5_0`, activations: Q8_0).
pub struct Q5_0;
/// Marker of the Q5_1 format (weights: `block_q5_1`, activations: Q8_1).
pub struct Q5_1;
/// Marker of the Q8_0 format (weights and activations: `block_q8_0`).
pub struct Q8_0;
/// Marker of the Q4_K format (weights: `block_q4_K`, activations: Q8_K).
pub struct Q4K;
/// Marker of the Q5_K format (weights: `block_q5_K`, activations: Q8_K).
pub struct Q5K;
/// Marker of the Q6_K format (weights: `block_q6_K`, activations: Q8_K).
pub struct Q6K;
/// Marker of the IQ4_NL format (weights: `block_iq4_nl`, activations: Q8_0).
pub struct IQ4NL;

macro_rules! block_format {
    ($fmt:ident, $module:ident, $block:ident, $acts:ident) => {
        impl Format for $fmt {
            type W = $block;
            type A = <$acts as ActFormat>::Block;
            const WTYPE: WType = WType::$fmt;
            fn dequantize_row_at(level: SimdLevel, w: &[Self::W], out: &mut [f32]) {
                $module::dequantize_row_at(level, w, out)
            }
            fn quantize_acts_at(level: SimdLevel, x: &[f32], out: &mut [Self::A]) {
                <$acts as ActFormat>::quantize_row_at(level, x, out)
            }
            fn act_scale_sum(a: &Self::A) -> (f32, f32) {
                <$acts as ActFormat>::scale_sum(a)
            }
            fn vec_dot_portable(w: &[Self::W], a: &[Self::A]) -> f32 {
                $module::vec_dot_portable(w, a)
            }
        }
    };
}

/// An activation (partner) format: the block and its quantizer.
pub trait ActFormat {
    type Block: QuantBlock;
    fn quantize_row_at(level: SimdLevel, x: &[f32], out: &mut [Self::Block]);
    fn scale_sum(b: &Self::Block) -> (f32, f32);
}
/// Marker of the Q8_0 activation format.
pub struct ActQ8_0;
/// Marker of the Q8_K activation format (the K-quants' partner).
pub struct ActQ8K;
impl ActFormat for ActQ8K {
    type Block = BlockQ8K;
    fn quantize_row_at(_level: SimdLevel, x: &[f32], out: &mut [BlockQ8K]) {
        q8_k::quantize_row(x, out)
    }
    fn scale_sum(b: &BlockQ8K) -> (f32, f32) {
        (b.scale(), 0.0)
    }
}
/// Marker of the Q8_1 activation format (Q8_0 plus each block's sum).
pub struct ActQ8_1;
impl ActFormat for ActQ8_0 {
    type Block = BlockQ8_0;
    fn quantize_row_at(level: SimdLevel, x: &[f32], out: &mut [BlockQ8_0]) {
        q8_0::quantize_row_at(level, x, out)
    }
    fn scale_sum(b: &BlockQ8_0) -> (f32, f32) {
        (f16::fp16_to_fp32(b.d), 0.0)
    }
}
impl ActFormat for ActQ8_1 {
    type Block = BlockQ8_1;
    fn quantize_row_at(level: SimdLevel, x: &[f32], out: &mut [BlockQ8_1]) {
        q8_1::quantize_row_at(level, x, out)
    }
    fn scale_sum(b: &BlockQ8_1) -> (f32, f32) {
        (f16::fp16_to_fp32(b.d), f16::fp16_to_fp32(b.s))
    }
}

block_format!(Q4_0, q4_0, BlockQ4_0, ActQ8_0);
block_format!(Q4_1, q4_1, BlockQ4_1, ActQ8_1);
block_format!(Q5_0, q5_0, BlockQ5_0, ActQ8_0);
block_format!(Q5_1, q5_1, BlockQ5_1, ActQ8_1);
block_format!(Q8_0, q8_0, BlockQ8_0, ActQ8_0);
block_format!(Q4K, q4_k, BlockQ4K, ActQ8K);
block_format!(Q5K, q5_k, BlockQ5K, ActQ8K);
block_format!(Q6K, q6_k, BlockQ6K, ActQ8K);
block_format!(IQ4NL, iq4_nl, BlockIQ4NL, ActQ8_0);

/// A quantization block: plain bytes with no padding, valid for every bit pattern.
///
/// # Safety
/// Implementors must be `#[repr(C)]`, contain only integer fields/arrays (so any byte pattern is
/// a valid value), have no padding, and have `size_of::<Self>() == BYTES`. The byte-view helpers
/// below rely on this to reinterpret tensor memory.
pub unsafe trait QuantBlock: Copy + Default + Send + Sync + 'static {
    /// Values encoded by one block.
    const QK: usize;
    /// Size of one block in bytes (ggml's `type_size`).
    const BYTES: usize;
}

/// Views tensor bytes as blocks, or `None` when the length is not a whole number of blocks or
/// the pointer is not aligned for the block's `u16` scale (ggml buffers always are).
pub fn try_blocks_from_bytes<B: QuantBlock>(bytes: &[u8]) -> Option<&[B]> {
    if !bytes.len().is_multiple_of(B::BYTES) || !(bytes.as_ptr() as usize).is_multiple_of(std::mem::align_of::<B>()) {
        return None;
    }
    // SAFETY: length is a whole number of blocks, the pointer is aligned for B, and QuantBlock
    // guarantees every byte pattern is a valid B without padding. The lifetime is carried over.
    Some(unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const B, bytes.len() / B::BYTES) })
}

/// [`try_blocks_from_bytes`] that panics with a useful message instead of returning `None`.
pub fn blocks_from_bytes<B: QuantBlock>(bytes: &[u8]) -> &[B] {
    try_blocks_from_bytes(bytes).unwrap_or_else(|| {
        panic!(
            "cannot view {} bytes at {:p} as {}-byte blocks (length or alignment)",
            bytes.len(),
            bytes.as_ptr(),
            B::BYTES
        )
    })
}

/// Mutable counterpart of [`blocks_from_bytes`], for quantizing straight into tensor memory.
pub fn blocks_from_bytes_mut<B: QuantBlock>(bytes: &mut [u8]) -> &mut [B] {
    assert!(
        bytes.len().is_multiple_of(B::BYTES) && (bytes.as_ptr() as usize).is_multiple_of(std::mem::align_of::<B>()),
        "cannot view {} bytes as {}-byte blocks (length or alignment)",
        bytes.len(),
        B::BYTES
    );
    // SAFETY: checked above: whole blocks, aligned; QuantBlock guarantees any bytes are a valid B
    // and B has no padding, so writes through the view leave the bytes initialized.
    unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr() as *mut B, bytes.len() / B::BYTES) }
}

/// The raw bytes of a block slice (what ggml would see in tensor memory).
pub fn blocks_as_bytes<B: QuantBlock>(blocks: &[B]) -> &[u8] {
    // SAFETY: QuantBlock guarantees no padding, so all bytes are initialized; u8 has alignment 1.
    unsafe { std::slice::from_raw_parts(blocks.as_ptr() as *const u8, std::mem::size_of_val(blocks)) }
}

#[cfg(test)]
pub(crate) mod test_util {
    /// Deterministic generator shared with the C harness that produced the golden hashes
    /// (64-bit LCG, top 24 bits -> uniform in [-1, 1), conversion exact).
    pub struct Lcg(u64);

    impl Lcg {
        pub fn new(seed: u64) -> Self {
            Lcg(seed)
        }
        pub fn next_f32(&mut self) -> f32 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let r = (self.0 >> 40) as u32;
            r as f32 / 16777216.0 * 2.0 - 1.0
        }
        pub fn next_u32(&mut self) -> u32 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 32) as u32
        }
        /// Gaussian-ish (sum of 4 uniforms), closer to real activations than a flat distribution.
        pub fn next_gauss(&mut self) -> f32 {
            (self.next_f32() + self.next_f32() + self.next_f32() + self.next_f32()) * 0.866
        }
    }

    /// FNV-1a 64, the hash the C harness printed.
    pub fn fnv(bytes: &[u8]) -> u64 {
        let mut h: u64 = 0xcbf29ce484222325;
        for &b in bytes {
            h ^= b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        h
    }

    /// The bit patterns of `v`: outputs that must equal stock's bit for bit (signed zeros and
    /// NaN payloads included), compared as integers.
    pub fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// Normalized mean squared error: sum((a-b)^2) / sum(b^2).
    pub fn nmse(got: &[f32], want: &[f32]) -> f64 {
        assert_eq!(got.len(), want.len());
        let mut num = 0.0f64;
        let mut den = 0.0f64;
        for (&g, &w) in got.iter().zip(want) {
            num += (g as f64 - w as f64).powi(2);
            den += (w as f64).powi(2);
        }
        if den == 0.0 {
            num
        } else {
            num / den
        }
    }

    pub const GOLDEN_NB: usize = 64;
    const SCALES: [f32; 8] = [1.0, 0.001, 1000.0, 3.7, 1e-6, 0.0, 250.0, 0.05];

    /// The golden input row: 64 blocks at assorted scales plus hand-made tie/edge blocks
    /// (identical to `gen()` in the C harness).
    pub fn golden_input(seed: u64) -> Vec<f32> {
        let k = GOLDEN_NB * 32;
        let mut rng = Lcg::new(seed);
        let mut x: Vec<f32> = (0..k).map(|i| rng.next_f32() * SCALES[(i / 32) % 8]).collect();
        for j in 0..32 {
            // block 8: q8 ties (amax 127 -> d = 1, values at .5)
            x[8 * 32 + j] = if j == 0 { -127.0 } else { (j as f32 - 16.0) + 0.5 };
            // block 9: q4_0 ties (max -8 -> d = 1)
            x[9 * 32 + j] = if j == 3 { -8.0 } else { ((j % 15) as f32 - 8.0) + 0.5 };
            // block 10: q4_1 ties (min 0, max 15 -> d = 1)
            x[10 * 32 + j] = match j {
                0 => 0.0,
                1 => 15.0,
                _ => (j % 15) as f32 + 0.5,
            };
            // block 11: constant
            x[11 * 32 + j] = 0.75;
        }
        x
    }

    /// (seed, input hash, q4_0, q4_0 dequant, q4_1, q4_1 dequant, q8_0, q8_0 dequant, q8_1),
    /// printed by a C harness linking whisper.rn's ggml-quants.c (gcc -O2, x86_64).
    pub const GOLDEN: [(u64, [u64; 8]); 3] = [
        (1, [0x6df71d84f7629bc5, 0x36e2059559fe79c6, 0xacdfb421b9cb41d9, 0x0324feb3ed6956e7,
             0x8be140038f5631fe, 0xbfee2f70d6e609e3, 0xe256b95dab09c15d, 0x00c4e8e630213fcb]),
        (42, [0xd867932249dcfb7e, 0x6a85ae89350b15b9, 0xb6feb458b842bae5, 0xad872028c073cffd,
              0xde64f3c95e033d3e, 0x1abeb332c9358ac1, 0x26ed6b02f86d9640, 0x77082d7ffa072ee0]),
        (0xdeadbeef, [0x74a58c3ee238cfe0, 0x2c6f5e3231e9020a, 0x39585f017fea3bb8, 0xddf6d62faf311ee3,
                      0x03b1adbaf00592f4, 0xf39dba1bd53dd235, 0xbd43eef1e28531c2, 0x7e56359a82d958eb]),
    ];
}

#[cfg(test)]
mod tests {
    use super::test_util::*;
    use super::*;

    #[test]
    fn golden_input_matches_c_harness() {
        for (seed, h) in GOLDEN {
            assert_eq!(fnv(&f32_bytes(&golden_input(seed))), h[0], "seed {seed}");
        }
    }

    #[test]
    fn byte_views() {
        let mut storage = vec![0u16; 64]; // u16 storage => 2-aligned bytes
        // SAFETY: test-only reinterpretation of an initialized u16 buffer as bytes.
        let bytes = unsafe { std::slice::from_raw_parts_mut(storage.as_mut_ptr() as *mut u8, 128) };
        assert!(try_blocks_from_bytes::<BlockQ4_0>(&bytes[..36]).is_some());
        assert!(try_blocks_from_bytes::<BlockQ4_0>(&bytes[..35]).is_none());
        assert!(try_blocks_from_bytes::<BlockQ4_0>(&bytes[1..37]).is_none());
        let blocks = blocks_from_bytes_mut::<BlockQ8_0>(&mut bytes[..68]);
        blocks[1].d = 0x3C00;
        blocks[1].qs[0] = -1;
        assert_eq!(bytes[34..37], [0x00, 0x3C, 0xFF]);
        let b = blocks_from_bytes::<BlockQ8_0>(&bytes[..68]);
        assert_eq!(blocks_as_bytes(b).len(), 68);
    }
}

/// AVX2 building blocks shared by the format modules. All require AVX2 + FMA + F16C, which the
/// callers guarantee by only reaching them through `SimdLevel::Avx2` dispatch.
#[cfg(target_arch = "x86_64")]
pub(crate) mod x86_util {
    use std::arch::x86_64::*;

    pub(crate) use super::f16::x86::{hsum_ps, load8_f32};

    /// Hints that the `bytes` from `p` will be read soon, into L2 (`T1`: the request leaves the
    /// L1 miss buffers at once). Never faults, wherever `p` points.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn prefetch_l2(p: *const u8, bytes: usize) {
        let mut b = 0;
        while b < bytes {
            _mm_prefetch::<_MM_HINT_T1>(p.wrapping_add(b) as *const i8);
            b += 64;
        }
        // the last line, when the range starts mid-line
        _mm_prefetch::<_MM_HINT_T1>(p.wrapping_add(bytes.saturating_sub(1)) as *const i8);
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn load_u8x16(b: &[u8; 16]) -> __m128i {
        // SAFETY: `b` is 16 readable bytes; loadu has no alignment requirement.
        unsafe { _mm_loadu_si128(b.as_ptr() as *const __m128i) }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn load_i8x32(b: &[i8; 32]) -> __m256i {
        // SAFETY: `b` is 32 readable bytes; loadu has no alignment requirement.
        unsafe { _mm256_loadu_si256(b.as_ptr() as *const __m256i) }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn load_u8x32(b: &[u8; 32]) -> __m256i {
        // SAFETY: `b` is 32 readable bytes; loadu has no alignment requirement.
        unsafe { _mm256_loadu_si256(b.as_ptr() as *const __m256i) }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn store_i8x32(b: &mut [i8; 32], v: __m256i) {
        // SAFETY: `b` is 32 writable bytes; storeu has no alignment requirement.
        unsafe { _mm256_storeu_si256(b.as_mut_ptr() as *mut __m256i, v) }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn store8_f32(dst: &mut [f32], v: __m256) {
        assert!(dst.len() >= 8);
        // SAFETY: the assert guarantees 8 writable f32; storeu has no alignment requirement.
        unsafe { _mm256_storeu_ps(dst.as_mut_ptr(), v) }
    }

    /// Widens up to four halves at once (one `vcvtph2ps` instead of four scalar conversions).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn halves4(a: u16, b: u16, c: u16, d: u16) -> __m128 {
        let packed = (a as u64) | (b as u64) << 16 | (c as u64) << 32 | (d as u64) << 48;
        _mm_cvtph_ps(_mm_cvtsi64_si128(packed as i64))
    }

    /// 32 nibbles -> 32 bytes in 0..=15: low nibbles in bytes 0..16, high nibbles in 16..32,
    /// which is the element order of ggml's 4-bit blocks.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn nibbles32(qs: &[u8; 16]) -> __m256i {
        // the 16 bytes in both halves (a broadcasting load: no shuffle), the high copy shifted
        // down a nibble
        let both = _mm256_broadcastsi128_si256(load_u8x16(qs));
        let v = _mm256_srlv_epi64(both, _mm256_set_epi64x(4, 4, 0, 0));
        _mm256_and_si256(v, _mm256_set1_epi8(0x0F))
    }

    /// The 5-bit quants of a Q5_0 / Q5_1 block in element order, 0..=31: the nibbles plus 16
    /// for every set bit of `qh` (ggml's `bytes_from_bits_32`, masked to 0x10).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn quants5_32(qs: &[u8; 16], qh: &[u8; 4]) -> __m256i {
        let x32 = u32::from_le_bytes(*qh) as i32;
        // byte i of the word to bytes 8i..8i+8, then each byte's own bit forced in place
        let shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
        let bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(x32), shuf);
        let bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
        let set = _mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1));
        _mm256_or_si256(nibbles32(qs), _mm256_and_si256(set, _mm256_set1_epi8(0x10)))
    }

    /// Unsigned-by-signed byte products summed in groups of 4, as 8 floats. Exact while each
    /// adjacent pair sum fits i16 (`vpmaddubsw` saturates): true for |ax| <= 128, |sy| <= 127.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn mul_sum_us8_pairs_float(ax: __m256i, sy: __m256i) -> __m256 {
        let dot = _mm256_maddubs_epi16(ax, sy);
        _mm256_cvtepi32_ps(_mm256_madd_epi16(dot, _mm256_set1_epi16(1)))
    }

    /// Max of |x| over 32 floats (the block's absolute maximum).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn abs_max32(v: &[__m256; 4]) -> f32 {
        let sign = _mm256_set1_ps(-0.0);
        let m = _mm256_max_ps(
            _mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
            _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])),
        );
        let m4 = _mm_max_ps(_mm256_extractf128_ps::<1>(m), _mm256_castps256_ps128(m));
        let m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        let m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        _mm_cvtss_f32(m4)
    }

    /// Packs 4x8 i32 (each in -128..=127 after saturation) into 32 i8 in element order.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn pack_i32x32_to_i8(i: [__m256i; 4]) -> __m256i {
        // packs works per 128-bit lane, leaving dwords in order 0,4,1,5,2,6,3,7; undo with a permute.
        let a = _mm256_packs_epi32(i[0], i[1]);
        let b = _mm256_packs_epi32(i[2], i[3]);
        let p = _mm256_packs_epi16(a, b);
        _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn hsum_i32_8(a: __m256i) -> i32 {
        let s = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256::<1>(a));
        let s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
        _mm_cvtsi128_si32(s)
    }

    /// Writes 16 signed bytes as 16 floats times `d` (dequantization of half a block).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn store16_i8_scaled(dst: &mut [f32], q: __m128i, d: __m256) {
        let lo = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
        let hi = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128::<8>(q)));
        store8_f32(&mut dst[0..8], _mm256_mul_ps(lo, d));
        store8_f32(&mut dst[8..16], _mm256_mul_ps(hi, d));
    }
}

#[cfg(test)]
mod table_tests {
    use super::*;

    /// The block layouts the kernels compute with are the table's, id for id (the table sizes
    /// tensors in the library; a format whose blocks disagreed would read past rows).
    #[test]
    fn weight_types_agree_with_the_ggml_types_table() {
        for w in WType::ALL {
            let row = crate::ggml_types::ggml_type(w.ggml_id()).expect("a weight type's id is in the table");
            assert_eq!((row.block, row.bytes), (w.block_len(), w.block_bytes()), "{w:?}");
            assert_eq!(WType::from_ggml(w.ggml_id()), Some(w));
        }
        let named: Vec<_> = WType::ALL.iter().map(|w| w.name()).collect();
        assert_eq!(named, ["f32", "f16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q4_K", "q5_K", "q6_K", "iq4_nl"]);
    }
}
