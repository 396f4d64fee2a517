//! Backends (streams): tensor transfers with stock's synchronous fallbacks, graph compute and plans.

use crate::abi::vtable::c_handle;
use crate::abi::*;
use crate::buffer::{buft_alloc_buffer, tensor_copy, tensor_get, tensor_set};
use crate::error::Result;
use crate::tensor::{check_range, same_layout};
use crate::{bail, ensure};
use std::ffi::c_void;

pub fn default_buffer_type<R: Rev>(b: &Backend<R>) -> Result<&BufferType<R>> {
    let Some(dev) = b.device_ref() else { bail!("backend has no device") };
    match dev.buffer_type_ref()? {
        Some(t) => Ok(t),
        None => bail!("device has no buffer type"),
    }
}

pub fn alloc_buffer<R: Rev>(b: &Backend<R>, size: usize) -> Result<*mut Buffer<R>> {
    buft_alloc_buffer(default_buffer_type(b)?, size)
}

fn check_allocated<R: Rev>(t: &Tensor<R>, offset: usize, size: usize, what: &str) -> Result<()> {
    ensure!(!t.data.is_null(), "tensor '{}' not allocated", t.name());
    check_range(t, offset, size, what)
}

pub fn tensor_set_async<R: Rev>(b: &Backend<R>, t: &Tensor<R>, data: *const c_void, offset: usize, size: usize) -> Result<()> {
    check_allocated(t, offset, size, "write")?;
    ensure!(!data.is_null() || size == 0, "source data is NULL");
    if !b.set_tensor_async(c_handle(t), data, offset, size) {
        // 2026: the work queued on the backend ends first, as stock
        if R::ASYNC_IO_FALLBACK_SYNCS {
            b.synchronize();
        }
        tensor_set(t, data, offset, size)?;
    }
    Ok(())
}

pub fn tensor_get_async<R: Rev>(b: &Backend<R>, t: &Tensor<R>, data: *mut c_void, offset: usize, size: usize) -> Result<()> {
    check_allocated(t, offset, size, "read")?;
    ensure!(!data.is_null() || size == 0, "destination data is NULL");
    if !b.get_tensor_async(t, data, offset, size) {
        if R::ASYNC_IO_FALLBACK_SYNCS {
            b.synchronize();
        }
        tensor_get(t, data, offset, size)?;
    }
    Ok(())
}

/// The copy runs after the work queued on `src_b`; without async support both streams are
/// drained and the copy is made synchronously, as stock does.
pub fn tensor_copy_async<R: Rev>(src_b: &Backend<R>, dst_b: &Backend<R>, src: &Tensor<R>, dst: &Tensor<R>) -> Result<()> {
    ensure!(same_layout(src, dst), "cannot copy tensors with different layouts ('{}' to '{}')", src.name(), dst.name());
    if std::ptr::eq(src, dst) {
        return Ok(());
    }
    if dst_b.cpy_tensor_async(src_b.me(), src, c_handle(dst)) {
        return Ok(());
    }
    src_b.synchronize();
    dst_b.synchronize();
    tensor_copy(src, dst)
}

pub fn graph_compute<R: Rev>(b: &Backend<R>, g: *mut CGraph<R>) -> Result<Status> {
    let status = b.graph_compute(g)?;
    b.synchronize();
    Ok(status)
}

pub fn supports_op<R: Rev>(b: &Backend<R>, op: &Tensor<R>) -> Result<bool> {
    match b.device_ref() {
        Some(d) => d.supports_op(op),
        None => bail!("backend has no device"),
    }
}

pub fn supports_buft<R: Rev>(b: &Backend<R>, buft: *mut BufferType<R>) -> Result<bool> {
    match b.device_ref() {
        Some(d) => d.supports_buft(buft),
        None => bail!("backend has no device"),
    }
}

pub fn offload_op<R: Rev>(b: &Backend<R>, op: &Tensor<R>) -> Result<bool> {
    match b.device_ref() {
        Some(d) => Ok(d.offload_op(op)),
        None => bail!("backend has no device"),
    }
}
