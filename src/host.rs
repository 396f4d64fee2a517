//! The host's symbols, reached through the weak references of `host.c`, and the logger.

use crate::abi::{LogLevel, Reg, Rev};
use std::ffi::{c_char, c_void, CString};
use std::marker::PhantomData;

extern "C" {
    fn ggml_rs_host_sym_lm(name: *const c_char) -> *mut c_void;
    fn ggml_rs_host_sym_wsp(name: *const c_char) -> *mut c_void;
    fn ggml_rs_log_lm(level: i32, msg: *const c_char) -> i32;
    fn ggml_rs_log_wsp(level: i32, msg: *const c_char) -> i32;
}

pub fn sym_lm(name: &str) -> *mut c_void {
    let c = CString::new(name).expect("symbol names have no NUL");
    // SAFETY: the shim only compares the string against its table.
    unsafe { ggml_rs_host_sym_lm(c.as_ptr()) }
}

pub fn sym_wsp(name: &str) -> *mut c_void {
    let c = CString::new(name).expect("symbol names have no NUL");
    // SAFETY: the shim only compares the string against its table.
    unsafe { ggml_rs_host_sym_wsp(c.as_ptr()) }
}

pub type RegFn<R> = unsafe extern "C" fn() -> *mut Reg<R>;

/// Host functions found at first use. Each is `None` when the host did not link it.
pub struct HostFns<R: Rev> {
    /// Built-in backends in stock's registration order, with their short names.
    pub backend_regs: Vec<(&'static str, RegFn<R>)>,
    sym: fn(&str) -> *mut c_void,
    log: LogFn,
    _rev: PhantomData<R>,
}

type LogFn = unsafe extern "C" fn(i32, *const c_char) -> i32;
pub const LOG_LM: LogFn = ggml_rs_log_lm;
pub const LOG_WSP: LogFn = ggml_rs_log_wsp;

/// Stock's order of `register_backend` calls; each name `x` stands for `<p>ggml_backend_x_reg`.
/// lm knows sycl, vk, cann, blas, rpc, amx, kompute; wsp drops amx and adds opencl. A name the
/// host does not define resolves to NULL, so one list serves both.
const BACKEND_ORDER: [&str; 11] = [
    "cuda", "metal", "sycl", "vk", "opencl", "cann", "blas", "rpc", "amx", "kompute", "cpu",
];

impl<R: Rev> HostFns<R> {
    pub fn load(sym: fn(&str) -> *mut c_void, log: LogFn) -> Self {
        let mut backend_regs = Vec::new();
        for name in BACKEND_ORDER {
            let p = sym(&format!("{}ggml_backend_{}_reg", R::PREFIX, name));
            if !p.is_null() {
                // SAFETY: the symbol is the host's `ggml_backend_reg_t <p>ggml_backend_<x>_reg(void)`.
                let f: RegFn<R> = unsafe { std::mem::transmute::<*mut c_void, RegFn<R>>(p) };
                backend_regs.push((name, f));
            }
        }
        HostFns { backend_regs, sym, log, _rev: PhantomData }
    }

    /// Address of a ggml core function of the host (`ggml_init`, ...) by its unprefixed name.
    pub fn core_fn(&self, name: &str) -> Option<*mut c_void> {
        let p = (self.sym)(&format!("{}{}", R::PREFIX, name));
        (!p.is_null()).then_some(p)
    }
}

/// Sends one line through the host's `ggml_log_internal` (which honours the app's log callback,
/// e.g. llama.rn's route to JavaScript), or stderr when the host has no logger.
pub fn log<R: Rev>(level: LogLevel, msg: &str) {
    let mut line = String::with_capacity(msg.len() + 1);
    line.push_str(msg);
    if !line.ends_with('\n') {
        line.push('\n');
    }
    let c = CString::new(line.replace('\0', "?")).unwrap_or_default();
    // SAFETY: c is a valid NUL-terminated string for the duration of the call.
    unsafe {
        (R::host().log)(level as i32, c.as_ptr());
    }
}

/// Logs an error line prefixed with the exported function's name, e.g. `lm_ggml_backend_tensor_set: ...`.
#[macro_export]
macro_rules! log_error {
    ($r:ty, $func:expr, $($arg:tt)*) => {
        $crate::host::log::<$r>($crate::abi::LogLevel::Error,
            &format!("{}{}: {}", <$r as $crate::abi::Rev>::PREFIX, $func, format!($($arg)*)))
    };
}

#[macro_export]
macro_rules! log_at {
    ($r:ty, $level:ident, $func:expr, $($arg:tt)*) => {
        $crate::host::log::<$r>($crate::abi::LogLevel::$level,
            &format!("{}{}: {}", <$r as $crate::abi::Rev>::PREFIX, $func, format!($($arg)*)))
    };
}
