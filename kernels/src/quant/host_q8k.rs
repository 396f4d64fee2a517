//! The host's own Q8_K quantizer, when one is linked.

use crate::FromFloat;
use std::ffi::c_void;

/// The host ggml-cpu's own quantizer of activations to Q8_K (`quantize_row_q8_K`), or `None`
/// without ggml-cpu. The SIMD backend's K-quant products use it so that their activations are
/// rounded as stock's are: ggml's reference quantizer is plain C whose `iscale * x + 1.5 * 2^23`
/// a compiler may fuse into one FMA or not (GCC with `-mfma` does, clang does not), so no single
/// Rust rounding matches every host build.
#[derive(Clone, Copy, Debug)]
pub struct HostQ8K(FromFloat);

impl HostQ8K {
    /// # Safety
    /// `f` must quantize `k` floats into `k / 256` ggml `block_q8_K` (ggml-cpu's `quantize_row_q8_K`).
    pub unsafe fn new(f: FromFloat) -> HostQ8K {
        HostQ8K(f)
    }

    /// Quantizes `src` (`dst.len() * 256` values) with the host's function.
    pub fn quantize(self, src: &[f32], dst: &mut [crate::quant::BlockQ8K]) {
        assert_eq!(src.len(), dst.len() * crate::quant::q8_k::QK_K, "HostQ8K::quantize: length mismatch");
        // SAFETY: `from_float` of ggml's Q8_K reads `k` floats and writes `k / 256` block_q8_K,
        // which BlockQ8K mirrors byte for byte (292 bytes, repr(C)); both slices hold that many.
        unsafe { (self.0)(src.as_ptr(), dst.as_mut_ptr() as *mut c_void, src.len() as i64) }
    }
}
