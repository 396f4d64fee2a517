//! 2-D tensor transfers (2026 revision): `n` rows of `size` bytes, `stride_tensor` apart in the
//! tensor and `stride_data` apart in the caller's memory. A buffer (or, for the async pair, a
//! backend) with a 2-D slot gets one call; otherwise, and always for `n <= 1`, the rows go
//! through the ordinary one-row transfer, as stock does. Unlike stock, which asserts row by row,
//! the whole span is checked first: a bad call writes nothing and logs one line.

use crate::abi::vtable::c_handle;
use crate::abi::*;
use crate::error::Result;
use crate::tensor::check_range;
use crate::{backend, buffer, ensure};
use std::ffi::c_void;

/// Rows of one 2-D transfer.
#[derive(Clone, Copy)]
pub struct Rows {
    pub offset: usize,
    pub size: usize,
    pub n: usize,
    pub stride_tensor: usize,
    pub stride_data: usize,
}

impl Rows {
    /// Checks the span in the tensor and the caller's memory; `false` when nothing is to move.
    fn check<R: Rev>(&self, t: &Tensor<R>, data_is_null: bool, what: &str) -> Result<bool> {
        if self.n == 0 || self.size == 0 {
            return Ok(false);
        }
        ensure!(!data_is_null, "data is NULL");
        let last = (self.n - 1).checked_mul(self.stride_tensor).and_then(|x| x.checked_add(self.offset));
        let Some(last) = last else { crate::bail!("tensor '{}' {}: rows overflow the address space", t.name(), what) };
        ensure!((self.n - 1).checked_mul(self.stride_data).is_some(), "tensor '{}' {}: data rows overflow the address space", t.name(), what);
        check_range(t, last, self.size, what)?;
        Ok(true)
    }
    fn tensor_offset(&self, i: usize) -> usize {
        self.offset + i * self.stride_tensor
    }
    fn data_offset(&self, i: usize) -> usize {
        i * self.stride_data
    }
}

pub fn tensor_set_2d<R: Rev>(t: &Tensor<R>, data: *const c_void, r: Rows) -> Result<()> {
    if !r.check(t, data.is_null(), "2-D write")? {
        return Ok(());
    }
    if r.n > 1 {
        let buf = buffer::data_buffer(t)?;
        ensure!(!t.data.is_null(), "tensor '{}' not allocated", t.name());
        if buf.set_tensor_2d(c_handle(t), data, r.offset, r.size, r.n, r.stride_tensor, r.stride_data) {
            return Ok(());
        }
    }
    for i in 0..r.n {
        buffer::tensor_set(t, (data as usize + r.data_offset(i)) as *const c_void, r.tensor_offset(i), r.size)?;
    }
    Ok(())
}

pub fn tensor_get_2d<R: Rev>(t: &Tensor<R>, data: *mut c_void, r: Rows) -> Result<()> {
    if !r.check(t, data.is_null(), "2-D read")? {
        return Ok(());
    }
    if r.n > 1 {
        let buf = buffer::data_buffer(t)?;
        ensure!(!t.data.is_null(), "tensor '{}' not allocated", t.name());
        if buf.get_tensor_2d(t, data, r.offset, r.size, r.n, r.stride_tensor, r.stride_data) {
            return Ok(());
        }
    }
    for i in 0..r.n {
        buffer::tensor_get(t, (data as usize + r.data_offset(i)) as *mut c_void, r.tensor_offset(i), r.size)?;
    }
    Ok(())
}

pub fn tensor_set_2d_async<R: Rev>(b: &Backend<R>, t: &Tensor<R>, data: *const c_void, r: Rows) -> Result<()> {
    if !r.check(t, data.is_null(), "2-D write")? {
        return Ok(());
    }
    ensure!(!t.data.is_null(), "tensor '{}' not allocated", t.name());
    if r.n > 1 && b.set_tensor_2d_async(c_handle(t), data, r.offset, r.size, r.n, r.stride_tensor, r.stride_data) {
        return Ok(());
    }
    for i in 0..r.n {
        backend::tensor_set_async(b, t, (data as usize + r.data_offset(i)) as *const c_void, r.tensor_offset(i), r.size)?;
    }
    Ok(())
}

pub fn tensor_get_2d_async<R: Rev>(b: &Backend<R>, t: &Tensor<R>, data: *mut c_void, r: Rows) -> Result<()> {
    if !r.check(t, data.is_null(), "2-D read")? {
        return Ok(());
    }
    ensure!(!t.data.is_null(), "tensor '{}' not allocated", t.name());
    if r.n > 1 && b.get_tensor_2d_async(t, data, r.offset, r.size, r.n, r.stride_tensor, r.stride_data) {
        return Ok(());
    }
    for i in 0..r.n {
        backend::tensor_get_async(b, t, (data as usize + r.data_offset(i)) as *mut c_void, r.tensor_offset(i), r.size)?;
    }
    Ok(())
}
