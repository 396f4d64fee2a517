//! Failure as a value: core functions return `Result`, the export layer logs the message once
//! (prefixed with the C function's name) and returns the function's "no" value.

use std::ffi::{c_char, CStr};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// Reads a C string for messages and comparisons (`"(null)"` for NULL).
#[allow(clippy::not_unsafe_ptr_arg_deref)] // the names ggml and its backends hand us; see abi::vtable
pub fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        return "(null)".into();
    }
    // SAFETY: names handed to us by ggml and its backends are NUL-terminated.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

impl Error {
    /// The message of `bail!`, formatted out of line: one copy of `format!`'s code for the
    /// library instead of one per failure site and revision.
    #[cold]
    #[inline(never)]
    pub fn from_args(args: fmt::Arguments<'_>) -> Error {
        Error(fmt::format(args))
    }
}

/// `bail!("fmt", args)` returns `Err(Error(format!(...)))`.
#[macro_export]
macro_rules! bail {
    ($($arg:tt)*) => { return Err($crate::error::Error::from_args(format_args!($($arg)*))) };
}

/// `ensure!(cond, "fmt", args)` bails unless `cond` holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => { if !$cond { $crate::bail!($($arg)*) } };
}
