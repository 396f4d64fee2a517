//! Events: markers recorded on one stream and waited on by another (or by the host thread).

use crate::abi::vtable::{c_handle, obj};
use crate::abi::*;
use crate::bail;
use crate::error::Result;

fn device_of<R: Rev>(e: &Event<R>) -> Result<&Device<R>> {
    // SAFETY: a live event's device is NULL or live while it is (trust contract).
    match unsafe { obj(e.device) } {
        Some(d) => Ok(d),
        None => bail!("event has no device"),
    }
}

/// NULL when the device has no events (the CPU device): callers then fall back to synchronize.
pub fn event_new<R: Rev>(dev: Option<&Device<R>>) -> *mut Event<R> {
    dev.map(|d| d.event_new()).unwrap_or(std::ptr::null_mut())
}

// A handle C passed to the export (or one of ours): NULL-checked, the rest is the trust contract
// (abi::vtable), taken on at the `unsafe` below.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn event_free<R: Rev>(e: *mut Event<R>) -> Result<()> {
    // SAFETY: NULL or an event C passed to the export or a scheduler made (trust contract).
    let Some(ev) = (unsafe { obj(e) }) else { return Ok(()) };
    device_of(ev)?.event_free(e)
}

pub fn event_synchronize<R: Rev>(e: &Event<R>) -> Result<()> {
    device_of(e)?.event_synchronize(c_handle(e))
}
