//! The unprefixed host (upstream ggml, cargo feature `ggml-2026`): the shim's third table of weak
//! references (`HOST_SYMBOLS` of `host.c` with an empty prefix) and `ggml_log_internal`.

use std::ffi::{c_char, c_void, CString};

extern "C" {
    fn ggml_rs_host_sym_ggml(name: *const c_char) -> *mut c_void;
    fn ggml_rs_log_ggml(level: i32, msg: *const c_char) -> i32;
    #[cfg(feature = "simd")]
    fn ggml_rs_host_float_model_ggml() -> *const i32;
}

#[cfg(feature = "simd")]
/// The address of the host's float-model variable (`crate::host::FloatModel`), NULL if absent.
pub fn float_model() -> *const i32 {
    // SAFETY: the shim's accessor returns the address of a weak variable (NULL if absent).
    unsafe { ggml_rs_host_float_model_ggml() }
}

pub fn sym(name: &str) -> *mut c_void {
    let c = CString::new(name).expect("symbol names have no NUL");
    // SAFETY: the shim only compares the string against its table.
    unsafe { ggml_rs_host_sym_ggml(c.as_ptr()) }
}

pub const LOG: unsafe extern "C" fn(i32, *const c_char) -> i32 = ggml_rs_log_ggml;
