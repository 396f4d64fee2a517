//! Calls into foreign backend code that may throw a C++ exception, made through the trampolines of
//! `host_try.cpp`: the exception stops in a C++ frame of ours and comes back as [`Threw`].
//!
//! Rust cannot catch a foreign exception (one unwinding into a Rust frame aborts), so every
//! start-up call the registry makes into a backend (`abi::vtable`: the host's reg function,
//! `get_device_count`, `get_device`, `get_type`, `get_memory`, `get_buffer_type`, the first
//! buffer allocation and its free, `init_backend`) goes through one of these.
//!
//! Each function is `unsafe`: `f` must be a live function of the stated signature, and the
//! arguments what it expects (the trampoline only adds the `try`).

use crate::error::Error;
use std::ffi::{c_char, c_void};
use std::fmt;

#[cfg(not(miri))]
extern "C" {
    fn ggml_rs_try_p_v(f: *const c_void, out: *mut *mut c_void, what: *mut *const c_char) -> i32;
    fn ggml_rs_try_p_p(f: *const c_void, a: *mut c_void, out: *mut *mut c_void, what: *mut *const c_char) -> i32;
    fn ggml_rs_try_p_pz(f: *const c_void, a: *mut c_void, n: usize, out: *mut *mut c_void, what: *mut *const c_char) -> i32;
    fn ggml_rs_try_p_pp(f: *const c_void, a: *mut c_void, b: *const c_void, out: *mut *mut c_void, what: *mut *const c_char) -> i32;
    fn ggml_rs_try_z_p(f: *const c_void, a: *mut c_void, out: *mut usize, what: *mut *const c_char) -> i32;
    fn ggml_rs_try_i_p(f: *const c_void, a: *mut c_void, out: *mut i32, what: *mut *const c_char) -> i32;
    fn ggml_rs_try_v_p(f: *const c_void, a: *mut c_void, what: *mut *const c_char) -> i32;
    fn ggml_rs_try_v_ppp(f: *const c_void, a: *mut c_void, b: *mut c_void, c: *mut c_void, what: *mut *const c_char) -> i32;
}

/// Miri runs no C++ (`scripts/miri.sh`): there the trampolines are these direct calls, with the
/// same signatures. Under Miri only our own Rust vtables are called (the CPU buffer type of the
/// allocator's tests), which throw nothing.
#[cfg(miri)]
mod direct {
    use std::ffi::{c_char, c_void};
    type P = *mut c_void;
    type What = *mut *const c_char;
    // SAFETY (each): `f` is a function of the stated signature (the trampoline's contract); thin
    // pointer types are ABI-compatible, so calling it through `P` is calling it as declared.
    pub unsafe fn ggml_rs_try_p_v(f: *const c_void, out: *mut P, _: What) -> i32 {
        unsafe { *out = std::mem::transmute::<*const c_void, unsafe extern "C" fn() -> P>(f)() };
        0
    }
    pub unsafe fn ggml_rs_try_p_p(f: *const c_void, a: P, out: *mut P, _: What) -> i32 {
        unsafe { *out = std::mem::transmute::<*const c_void, unsafe extern "C" fn(P) -> P>(f)(a) };
        0
    }
    pub unsafe fn ggml_rs_try_p_pz(f: *const c_void, a: P, n: usize, out: *mut P, _: What) -> i32 {
        unsafe { *out = std::mem::transmute::<*const c_void, unsafe extern "C" fn(P, usize) -> P>(f)(a, n) };
        0
    }
    pub unsafe fn ggml_rs_try_p_pp(f: *const c_void, a: P, b: *const c_void, out: *mut P, _: What) -> i32 {
        unsafe { *out = std::mem::transmute::<*const c_void, unsafe extern "C" fn(P, *const c_void) -> P>(f)(a, b) };
        0
    }
    pub unsafe fn ggml_rs_try_z_p(f: *const c_void, a: P, out: *mut usize, _: What) -> i32 {
        unsafe { *out = std::mem::transmute::<*const c_void, unsafe extern "C" fn(P) -> usize>(f)(a) };
        0
    }
    pub unsafe fn ggml_rs_try_i_p(f: *const c_void, a: P, out: *mut i32, _: What) -> i32 {
        unsafe { *out = std::mem::transmute::<*const c_void, unsafe extern "C" fn(P) -> i32>(f)(a) };
        0
    }
    pub unsafe fn ggml_rs_try_v_p(f: *const c_void, a: P, _: What) -> i32 {
        unsafe { std::mem::transmute::<*const c_void, unsafe extern "C" fn(P)>(f)(a) };
        0
    }
    pub unsafe fn ggml_rs_try_v_ppp(f: *const c_void, a: P, b: P, c: P, _: What) -> i32 {
        unsafe { std::mem::transmute::<*const c_void, unsafe extern "C" fn(P, P, P)>(f)(a, b, c) };
        0
    }
}
#[cfg(miri)]
use direct::*;

/// A foreign function threw a C++ exception, of this (mangled) type when the C++ runtime said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Threw(pub Option<String>);

impl fmt::Display for Threw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(t) => write!(f, "threw a C++ exception ({})", t),
            None => f.write_str("threw a C++ exception"),
        }
    }
}

impl Threw {
    /// `"<call> threw a C++ exception (<type>)"` as the crate's error.
    pub fn during(self, call: &str) -> Error {
        Error(format!("{} {}", call, self))
    }
}

fn outcome(status: i32, what: *const c_char) -> Result<(), Threw> {
    if status == 0 {
        return Ok(());
    }
    let name = (!what.is_null()).then(|| crate::error::cstr(what));
    Err(Threw(name))
}

/// `f()`
pub unsafe fn call0<T>(f: unsafe extern "C" fn() -> *mut T) -> Result<*mut T, Threw> {
    let (mut out, mut what) = (std::ptr::null_mut(), std::ptr::null());
    // SAFETY: the trampoline calls `f` with no argument (the caller's promise: its signature).
    let st = unsafe { ggml_rs_try_p_v(f as *const c_void, &mut out, &mut what) };
    outcome(st, what).map(|()| out as *mut T)
}

/// `f(a)` returning a pointer
pub unsafe fn call_p<A, T>(f: unsafe extern "C" fn(*mut A) -> *mut T, a: *mut A) -> Result<*mut T, Threw> {
    let (mut out, mut what) = (std::ptr::null_mut(), std::ptr::null());
    // SAFETY: as `call0`, with the caller's argument.
    let st = unsafe { ggml_rs_try_p_p(f as *const c_void, a as *mut c_void, &mut out, &mut what) };
    outcome(st, what).map(|()| out as *mut T)
}

/// `f(a, n)`
pub unsafe fn call_pz<A, T>(f: unsafe extern "C" fn(*mut A, usize) -> *mut T, a: *mut A, n: usize) -> Result<*mut T, Threw> {
    let (mut out, mut what) = (std::ptr::null_mut(), std::ptr::null());
    // SAFETY: as `call0`.
    let st = unsafe { ggml_rs_try_p_pz(f as *const c_void, a as *mut c_void, n, &mut out, &mut what) };
    outcome(st, what).map(|()| out as *mut T)
}

/// `f(a, b)`
pub unsafe fn call_pp<A, B, T>(f: unsafe extern "C" fn(*mut A, *const B) -> *mut T, a: *mut A, b: *const B) -> Result<*mut T, Threw> {
    let (mut out, mut what) = (std::ptr::null_mut(), std::ptr::null());
    // SAFETY: as `call0`.
    let st = unsafe { ggml_rs_try_p_pp(f as *const c_void, a as *mut c_void, b as *const c_void, &mut out, &mut what) };
    outcome(st, what).map(|()| out as *mut T)
}

/// `f(a)` returning a `size_t`
pub unsafe fn call_z<A>(f: unsafe extern "C" fn(*mut A) -> usize, a: *mut A) -> Result<usize, Threw> {
    let (mut out, mut what) = (0usize, std::ptr::null());
    // SAFETY: as `call0`.
    let st = unsafe { ggml_rs_try_z_p(f as *const c_void, a as *mut c_void, &mut out, &mut what) };
    outcome(st, what).map(|()| out)
}

/// `f(a)` returning an `int` (or an enum)
pub unsafe fn call_i<A>(f: unsafe extern "C" fn(*mut A) -> i32, a: *mut A) -> Result<i32, Threw> {
    let (mut out, mut what) = (0i32, std::ptr::null());
    // SAFETY: as `call0`.
    let st = unsafe { ggml_rs_try_i_p(f as *const c_void, a as *mut c_void, &mut out, &mut what) };
    outcome(st, what).map(|()| out)
}

/// `f(a)` returning nothing
pub unsafe fn call_v<A>(f: unsafe extern "C" fn(*mut A), a: *mut A) -> Result<(), Threw> {
    let mut what = std::ptr::null();
    // SAFETY: as `call0`.
    let st = unsafe { ggml_rs_try_v_p(f as *const c_void, a as *mut c_void, &mut what) };
    outcome(st, what)
}

/// `f(a, b, c)` with two out-pointers (`get_memory`)
pub unsafe fn call_v_out2<A>(f: unsafe extern "C" fn(*mut A, *mut usize, *mut usize), a: *mut A, b: &mut usize, c: &mut usize) -> Result<(), Threw> {
    let mut what = std::ptr::null();
    // SAFETY: as `call0`; b and c are valid for the call.
    let st = unsafe { ggml_rs_try_v_ppp(f as *const c_void, a as *mut c_void, b as *mut usize as *mut c_void, c as *mut usize as *mut c_void, &mut what) };
    outcome(st, what)
}
