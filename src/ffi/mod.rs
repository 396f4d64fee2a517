//! The C boundary: two thin export layers (lm, wsp) stamped out by build.rs from `exports.list`,
//! each function a call to `glue` under `guard`, which turns errors and panics into one log line
//! and the function's "no" value.

pub mod glue;


/// The value a C function returns when it must say no.
pub trait FfiDefault {
    fn ffi_default() -> Self;
}
impl<T> FfiDefault for *const T {
    fn ffi_default() -> Self {
        std::ptr::null()
    }
}
impl<T> FfiDefault for *mut T {
    fn ffi_default() -> Self {
        std::ptr::null_mut()
    }
}
impl FfiDefault for bool {
    fn ffi_default() -> Self {
        false
    }
}
impl FfiDefault for usize {
    fn ffi_default() -> Self {
        0
    }
}
/// `enum ggml_status` and `int` results: -1 (`GGML_STATUS_FAILED`) unless the list says otherwise.
impl FfiDefault for i32 {
    fn ffi_default() -> Self {
        crate::abi::STATUS_FAILED
    }
}
impl<R: crate::abi::Rev> FfiDefault for crate::abi::GraphCopy<R> {
    fn ffi_default() -> Self {
        crate::abi::GraphCopy {
            buffer: std::ptr::null_mut(),
            ctx_allocated: std::ptr::null_mut(),
            ctx_unallocated: std::ptr::null_mut(),
            graph: std::ptr::null_mut(),
        }
    }
}

pub use crate::guard::guard;

#[allow(non_camel_case_types, clippy::missing_safety_doc)]
pub mod lm {
    include!(concat!(env!("OUT_DIR"), "/exports_lm.rs"));
}

#[allow(non_camel_case_types, clippy::missing_safety_doc)]
pub mod wsp {
    include!(concat!(env!("OUT_DIR"), "/exports_wsp.rs"));
}

/// The unprefixed layer: upstream ggml v0.20.0 (`ggml-2026`), llama.cpp b11118 (`ggml-b11118`) or
/// upstream ggml 0.25.3 (`ggml-0253`); `ggml::Marker` names the built one's marker.
#[cfg(ggml_unprefixed)]
#[allow(non_camel_case_types, clippy::missing_safety_doc)]
pub mod ggml {
    include!(concat!(env!("OUT_DIR"), "/exports_ggml.rs"));
}

/// `ggml_op_alloc_size_may_expand(op)` (b11118 on): defined by its ggml-backend.cpp (declared in
/// ggml-backend-impl.h), so the layer replacing that file exports it too. Named outside the
/// `ggml_backend_` family of exports.list, hence written here.
#[cfg(ggml_alloc_size_may_expand)]
#[no_mangle]
pub extern "C" fn ggml_op_alloc_size_may_expand(op: i32) -> bool {
    guard::<crate::ffi::ggml::Marker, _>("ggml_op_alloc_size_may_expand", false, || {
        Ok(crate::buffer::op_alloc_size_may_expand::<crate::ffi::ggml::Marker>(op).unwrap_or(false))
    })
}
