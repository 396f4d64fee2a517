//! The C boundary: two thin export layers (lm, wsp) stamped out by build.rs from `exports.list`,
//! each function a call to `glue` under `guard`, which turns errors and panics into one log line
//! and the function's "no" value.

pub mod glue;

use crate::abi::Rev;
use crate::error::Result;
use std::panic::{catch_unwind, AssertUnwindSafe};

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

/// Fault injection for the tests: `GGML_RS_FAULT_PANIC=<exported function name>` (read once)
/// makes that function panic inside its guard, to prove a panic never crosses into C.
static FAULT_PANIC: once_cell::sync::Lazy<Option<String>> = once_cell::sync::Lazy::new(|| std::env::var("GGML_RS_FAULT_PANIC").ok());

/// Runs an export's body: `Ok(v)` → `v`; `Err(e)` → log "`func`: e" and `default`; a panic →
/// log and `default`. No panic crosses into C.
pub fn guard<R: Rev, T>(func: &str, default: T, body: impl FnOnce() -> Result<T>) -> T {
    match catch_unwind(AssertUnwindSafe(|| {
        if FAULT_PANIC.as_deref() == Some(func) {
            panic!("fault injected by GGML_RS_FAULT_PANIC");
        }
        body()
    })) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            crate::host::log::<R>(crate::abi::LogLevel::Error, &format!("{}: {}", func, e));
            default
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            crate::host::log::<R>(crate::abi::LogLevel::Error, &format!("{}: internal error: {}", func, what));
            default
        }
    }
}

#[allow(non_camel_case_types, clippy::missing_safety_doc)]
pub mod lm {
    include!(concat!(env!("OUT_DIR"), "/exports_lm.rs"));
}

#[allow(non_camel_case_types, clippy::missing_safety_doc)]
pub mod wsp {
    include!(concat!(env!("OUT_DIR"), "/exports_wsp.rs"));
}
