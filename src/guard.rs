//! The panic guard every entry from C runs under: the exports (`ffi`) and the vtable callbacks C
//! code calls into (our buffer types, buffers, the SIMD device, backend and buffers). An error
//! becomes one log line through the host's logger and the function's "no" value; a panic the
//! same, so no panic ever unwinds into C.

use crate::abi::{LogLevel, Rev};
use crate::error::Result;
use once_cell::sync::Lazy;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Fault injection for the tests: `GGML_RS_FAULT_PANIC=<name>[,<name>...]` (read once) makes the
/// named entries panic inside their guard. An export is named by its symbol
/// (`lm_ggml_backend_buft_alloc_buffer`), a callback by prefix, vtable and slot
/// (`wsp_cpu_buffer.set_tensor`).
static FAULT_PANIC: Lazy<Vec<String>> = Lazy::new(|| {
    std::env::var("GGML_RS_FAULT_PANIC").map(|v| v.split(',').map(|s| s.trim().to_string()).collect()).unwrap_or_default()
});

fn fault_injected(prefix: &str, func: &str) -> bool {
    FAULT_PANIC.iter().any(|f| f == func || f.strip_prefix(prefix) == Some(func))
}

/// Runs an entry's body: `Ok(v)` → `v`; `Err(e)` → log "`func`: e" and `default`; a panic →
/// log "`func`: internal error: …" and `default`.
///
/// Only the body is instantiated per entry (and per revision): the unwinding, the fault injection
/// and the error lines are [`run`], once for the whole library (the guard used to be ~1.2 KiB of
/// code in each of ~290 instances).
#[inline]
pub fn guard<R: Rev, T>(func: &str, default: T, body: impl FnOnce() -> Result<T>) -> T {
    guarded(R::PREFIX, crate::host::log::<R>, func, default, body)
}

#[inline]
fn guarded<T, F: FnOnce() -> Result<T>>(prefix: &'static str, log: fn(LogLevel, &str), func: &str, default: T, body: F) -> T {
    let mut slot: Slot<T, F> = (Some(body), None);
    run(prefix, log, func, (&mut slot as *mut Slot<T, F>).cast(), call_body::<T, F>);
    slot.1.unwrap_or(default)
}

/// A guarded body and its result, handed to [`run`] as a plain pointer with [`call_body`] (a
/// `dyn FnMut` would add a vtable with a `call_once` shim per instance).
type Slot<T, F> = (Option<F>, Option<T>);

/// Runs the body in the [`Slot`] at `slot` once, keeping its value.
///
/// # Safety
/// `slot` points to a live `Slot<T, F>` that nothing else accesses during the call.
unsafe fn call_body<T, F: FnOnce() -> Result<T>>(slot: *mut ()) -> Result<()> {
    // SAFETY: the caller's contract (guard passes its own local state).
    let slot = unsafe { &mut *slot.cast::<Slot<T, F>>() };
    match slot.0.take() {
        Some(body) => body().map(|v| slot.1 = Some(v)),
        None => Ok(()),
    }
}

/// [`guard`]'s revision- and type-free part: runs `call(slot)` under `catch_unwind` and logs its
/// error or panic through `log` (the revision's logger).
#[inline(never)]
fn run(prefix: &'static str, log: fn(LogLevel, &str), func: &str, slot: *mut (), call: unsafe fn(*mut ()) -> Result<()>) {
    match catch_unwind(AssertUnwindSafe(|| {
        if !FAULT_PANIC.is_empty() && fault_injected(prefix, func) {
            panic!("fault injected by GGML_RS_FAULT_PANIC");
        }
        // SAFETY: `slot` and `call` come together from `guard`, which holds the slot for this call.
        unsafe { call(slot) }
    })) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => log(LogLevel::Error, &format!("{}: {}", func, e)),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            log(LogLevel::Error, &format!("{}: internal error: {}", func, what));
        }
    }
}

/// A vtable callback's body, which has no error of its own to report: see [`guard`].
pub fn callback<R: Rev, T>(func: &str, default: T, body: impl FnOnce() -> T) -> T {
    guard::<R, T>(func, default, || Ok(body()))
}
