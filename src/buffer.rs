//! Buffer types and buffers: the generic entry points, the CPU host buffer type ("CPU"), buffers
//! over caller memory ("CPU_Mapped"), multi-buffers, and placing tensors in buffers.
//!
//! Ownership: a `Buffer` is created by `buffer_init` (ours, or a C backend calling it) and freed
//! exactly once by `buffer_free`, which first runs the buffer's own `free_buffer` on its context.

use crate::abi::vtable::{c_handle, copy_bytes, fill_bytes, obj};
use crate::abi::*;
use crate::error::Result;
use crate::tensor::{check_range, nbytes, same_layout};
use crate::{bail, ensure};
use std::ffi::{c_char, c_void};

/// A pointer that may live in a `static` (the pointee is immutable after creation or owned by C).
pub struct Ptr<T>(pub *mut T);
// SAFETY: the pointees are either leaked immutable statics or C objects that ggml shares across
// threads by design; the pointer itself is just an address.
unsafe impl<T> Send for Ptr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Ptr<T> {}
impl<T> Clone for Ptr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Ptr<T> {}

/// The revision's CPU buffer types and the vtables of the buffers we create, built once.
pub struct CpuStatics<R: Rev> {
    pub cpu_buft: Ptr<BufferType<R>>,
    pub mapped_buft: Ptr<BufferType<R>>,
    cpu_iface: BufferI<R>,
    mapped_iface: BufferI<R>,
    /// Stored once so that `is_multi_buffer` compares against the very pointer buffers carry.
    multi_iface: BufferI<R>,
}
// SAFETY: the vtables are plain function pointers; the buffer types are leaked and never mutated.
unsafe impl<R: Rev> Send for CpuStatics<R> {}
// SAFETY: as above.
unsafe impl<R: Rev> Sync for CpuStatics<R> {}

static CPU_STATICS: crate::per_rev::PerRev = crate::per_rev::PerRev::new();

/// The CPU buffer types and vtables of revision `R`, built on first use.
pub fn cpu_statics<R: Rev>() -> &'static CpuStatics<R> {
    CPU_STATICS.get::<R, _>(CpuStatics::new)
}

impl<R: Rev> CpuStatics<R> {
    // no `Default`: this leaks the buffer types and is meant to run once per revision (its Lazy static)
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        let buft = |name: unsafe extern "C" fn(*mut BufferType<R>) -> *const c_char| {
            Ptr(Box::into_raw(Box::new(BufferType {
                iface: BufferTypeI {
                    get_name: Some(name),
                    alloc_buffer: Some(cpu_buft_alloc_buffer::<R>),
                    get_alignment: Some(cpu_buft_get_alignment::<R>),
                    get_max_size: None,
                    get_alloc_size: None,
                    is_host: Some(cpu_buft_is_host::<R>),
                },
                // stock leaves the device NULL in every revision (its FIXME), and hosts rely on it
                device: std::ptr::null_mut(),
                context: std::ptr::null_mut(),
            })))
        };
        let cpu_iface = BufferI {
            free_buffer: Some(cpu_buffer_free::<R>),
            get_base: Some(cpu_buffer_get_base::<R>),
            init_tensor: None,
            memset_tensor: Some(cpu_buffer_memset_tensor::<R>),
            set_tensor: Some(cpu_buffer_set_tensor::<R>),
            get_tensor: Some(cpu_buffer_get_tensor::<R>),
            // as stock's CPU buffer: 2-D transfers take the row-by-row fallback
            tensor_2d: R::BUFFER_2D_NONE,
            cpy_tensor: Some(cpu_buffer_cpy_tensor::<R>),
            clear: Some(cpu_buffer_clear::<R>),
            reset: None,
        };
        CpuStatics {
            cpu_buft: buft(cpu_buft_name::<R>),
            mapped_buft: buft(mapped_buft_name::<R>),
            cpu_iface,
            // the caller owns the memory of a mapped buffer: nothing to free
            mapped_iface: BufferI { free_buffer: None, ..cpu_iface },
            multi_iface: BufferI { free_buffer: Some(multi_buffer_free::<R>), clear: Some(multi_buffer_clear::<R>), ..BufferI::EMPTY },
        }
    }
}

// ---------------------------------------------------------------- buffer type API

pub fn buft_name<R: Rev>(buft: &BufferType<R>) -> Result<*const c_char> {
    buft.name()
}

/// A 0-byte request returns a dummy buffer (size 0, base NULL) without asking the buffer type.
pub fn buft_alloc_buffer<R: Rev>(buft: &BufferType<R>, size: usize) -> Result<*mut Buffer<R>> {
    if size == 0 {
        return Ok(buffer_init(c_handle(buft), BufferI::EMPTY, std::ptr::null_mut(), 0));
    }
    let b = buft.alloc(size)?;
    ensure!(!b.is_null(), "failed to allocate {} buffer of size {}", crate::abi::vtable::cstr(buft.name()?), size);
    Ok(b)
}

pub fn buft_get_alloc_size<R: Rev>(buft: &BufferType<R>, t: &Tensor<R>) -> Result<usize> {
    let n = nbytes(t)?;
    match buft.custom_alloc_size(t) {
        Some(size) => {
            ensure!(size >= n, "buffer type reports alloc size {} below the tensor's {} bytes", size, n);
            if size > n && !alloc_size_may_expand::<R>(t) {
                // b11118 asserts here (a backend's get_alloc_size out of step with
                // ggml_op_alloc_size_may_expand); the size is still what the buffer type needs
                crate::log_at!(
                    R,
                    Warn,
                    "ggml_backend_buft_get_alloc_size",
                    "buffer type reports alloc size {} above the {} bytes of '{}' ({}), an op ggml_op_alloc_size_may_expand does not list",
                    size,
                    n,
                    t.name(),
                    crate::host::op_name::<R>(t.op)
                );
            }
            Ok(size)
        }
        None => Ok(n),
    }
}

/// b11118's `ggml_op_alloc_size_may_expand` (`None` for a revision without it).
pub fn op_alloc_size_may_expand<R: Rev>(op: i32) -> Option<bool> {
    R::ALLOC_SIZE_MAY_EXPAND_OPS.map(|ops| ops.contains(&op))
}

/// b11118's condition for a larger alloc size: an empty op (NONE or a view), a quantized type, or
/// an op that may expand; always true for a revision without the check.
fn alloc_size_may_expand<R: Rev>(t: &Tensor<R>) -> bool {
    let Some(expands) = op_alloc_size_may_expand::<R>(t.op) else { return true };
    let o = R::OPS;
    let empty = [o.none, o.reshape, o.transpose, o.view, o.permute].contains(&t.op);
    let quantized = crate::abi::type_traits::<R>(t.type_).is_some_and(|(block, _)| block > 1);
    expands || empty || quantized
}

// ---------------------------------------------------------------- buffer API

pub fn buffer_init<R: Rev>(buft: *mut BufferType<R>, iface: BufferI<R>, context: *mut c_void, size: usize) -> *mut Buffer<R> {
    Box::into_raw(Box::new(Buffer { iface, buft, context, size, usage: USAGE_ANY }))
}

// A NULL-checked handle from C that only `buffer_init` hands out (trust model in abi::vtable).
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn buffer_free<R: Rev>(buffer: *mut Buffer<R>) {
    // SAFETY: NULL or a buffer of `buffer_init`, not yet freed (as below).
    let Some(b) = (unsafe { obj(buffer) }) else { return };
    b.release_context();
    // SAFETY: every buffer is created by `buffer_init` (Box::into_raw) and freed once, here.
    drop(unsafe { Box::from_raw(buffer) });
}

pub fn buffer_clear<R: Rev>(b: &Buffer<R>, value: u8) -> Result<()> {
    if b.size == 0 {
        return Ok(());
    }
    b.clear(value)
}

// A handle C passed to the export (or one of ours): NULL-checked, the rest is the trust contract
// (abi::vtable), taken on at the `unsafe` below.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn buffer_set_usage<R: Rev>(buffer: *mut Buffer<R>, usage: BufferUsage) -> Result<()> {
    // SAFETY: NULL or a live buffer (trust contract): one C passed to the export, a part of a
    // multi-buffer, one the allocator allocated; nothing else borrows it during the call.
    let Some(b) = (unsafe { crate::abi::vtable::obj_mut(buffer) }) else { bail!("buffer is NULL") };
    b.usage = usage;
    if is_multi_buffer(b) {
        multi_buffer_set_usage(b, usage)?;
    } else if R::META_BUFFER_SET_USAGE {
        // b11118: a meta buffer (the host's ggml-backend-meta.cpp) passes it on to its parts
        crate::host::meta_buffer_set_usage(buffer, usage);
    }
    Ok(())
}

/// Only the parts: stock leaves the multi-buffer's own usage alone here (only `buffer_set_usage`
/// sets both), and the scheduler reads the usage of the buffer a tensor points at, a part.
pub fn multi_buffer_set_usage<R: Rev>(b: &Buffer<R>, usage: BufferUsage) -> Result<()> {
    for &part in multi_parts(b) {
        buffer_set_usage(part, usage)?;
    }
    Ok(())
}

pub fn buffer_copy_tensor<R: Rev>(src: &Tensor<R>, dst: &Tensor<R>) -> Result<bool> {
    let Some(dst_buf) = dst.data_buffer_ref() else { bail!("destination tensor '{}' has no buffer", dst.name()) };
    Ok(dst_buf.cpy_tensor(src, c_handle(dst)))
}

// ---------------------------------------------------------------- multi-buffer

fn multi_parts<R: Rev>(b: &Buffer<R>) -> &[*mut Buffer<R>] {
    // SAFETY: a multi-buffer's context is the Box<Vec> of `multi_buffer_alloc`, freed with it.
    match unsafe { obj(b.context as *const Vec<*mut Buffer<R>>) } {
        Some(v) => v.as_slice(),
        None => &[],
    }
}

pub fn multi_buffer_alloc<R: Rev>(buffers: &[*mut Buffer<R>]) -> Result<*mut Buffer<R>> {
    ensure!(!buffers.is_empty(), "a multi-buffer needs at least one buffer");
    let mut total = 0usize;
    for (i, &p) in buffers.iter().enumerate() {
        // SAFETY: the buffers C passed to the export: the trust contract.
        let Some(b) = (unsafe { obj(p) }) else { bail!("buffer {} of the multi-buffer is NULL", i) };
        total = total.saturating_add(b.size);
    }
    // SAFETY: as above.
    let first = unsafe { obj(buffers[0]) }.map(|b| b.buft).unwrap_or(std::ptr::null_mut());
    let parts = Box::into_raw(Box::new(buffers.to_vec())) as *mut c_void;
    Ok(buffer_init(first, crate::buffer::cpu_statics::<R>().multi_iface, parts, total))
}

pub fn is_multi_buffer<R: Rev>(b: &Buffer<R>) -> bool {
    b.iface.free_buffer.map(|f| f as usize) == crate::buffer::cpu_statics::<R>().multi_iface.free_buffer.map(|f| f as usize)
}

unsafe extern "C" fn multi_buffer_free<R: Rev>(buffer: *mut Buffer<R>) {
    crate::guard::callback::<R, _>("multi_buffer.free_buffer", (), || {
        // SAFETY: C calls a buffer's vtable with the buffer (trust contract).
        let Some(b) = (unsafe { obj(buffer) }) else { return };
        // SAFETY: the context of a multi-buffer is the Box<Vec> made in `multi_buffer_alloc`.
        let parts = unsafe { Box::from_raw(b.context as *mut Vec<*mut Buffer<R>>) };
        for &p in parts.iter() {
            buffer_free(p);
        }
    })
}

unsafe extern "C" fn multi_buffer_clear<R: Rev>(buffer: *mut Buffer<R>, value: u8) {
    crate::guard::callback::<R, _>("multi_buffer.clear", (), || {
        // SAFETY: as above.
        let Some(b) = (unsafe { obj(buffer) }) else { return };
        for &p in multi_parts(b) {
            // SAFETY: a part of a live multi-buffer is live (freed only with it).
            if let Some(part) = unsafe { obj(p) } {
                let _ = buffer_clear(part, value);
            }
        }
    })
}

// ---------------------------------------------------------------- tensor data

pub(crate) fn data_buffer<R: Rev>(t: &Tensor<R>) -> Result<&Buffer<R>> {
    match t.data_buffer_ref() {
        Some(b) => Ok(b),
        None => bail!("tensor '{}' has no buffer (not allocated)", t.name()),
    }
}

pub fn tensor_set<R: Rev>(t: &Tensor<R>, data: *const c_void, offset: usize, size: usize) -> Result<()> {
    if size == 0 {
        return Ok(());
    }
    let buf = data_buffer(t)?;
    ensure!(!t.data.is_null(), "tensor '{}' not allocated", t.name());
    ensure!(!data.is_null(), "source data is NULL");
    check_range(t, offset, size, "write")?;
    buf.set_tensor(c_handle(t), data, offset, size)
}

pub fn tensor_get<R: Rev>(t: &Tensor<R>, data: *mut c_void, offset: usize, size: usize) -> Result<()> {
    if size == 0 {
        return Ok(());
    }
    let buf = data_buffer(t)?;
    ensure!(!t.data.is_null(), "tensor '{}' not allocated", t.name());
    ensure!(!data.is_null(), "destination data is NULL");
    check_range(t, offset, size, "read")?;
    buf.get_tensor(t, data, offset, size)
}

pub fn tensor_memset<R: Rev>(t: &Tensor<R>, value: u8, offset: usize, size: usize) -> Result<()> {
    if size == 0 {
        return Ok(());
    }
    let buf = data_buffer(t)?;
    ensure!(!t.data.is_null(), "tensor '{}' not allocated", t.name());
    check_range(t, offset, size, "write")?;
    buf.memset_tensor(c_handle(t), value, offset, size)
}

pub(crate) fn is_host_buffer<R: Rev>(b: Option<&Buffer<R>>) -> bool {
    b.and_then(|b| b.buft().ok()).is_some_and(|t| t.is_host())
}

/// Copies between tensors of the same layout in any two buffers, with stock's fallbacks:
/// host source → set, host destination → get, else the buffer's `cpy_tensor`, else a staging copy.
pub fn tensor_copy<R: Rev>(src: &Tensor<R>, dst: &Tensor<R>) -> Result<()> {
    ensure!(same_layout(src, dst), "cannot copy tensors with different layouts ('{}' to '{}')", src.name(), dst.name());
    if std::ptr::eq(src, dst) {
        return Ok(());
    }
    data_buffer(src)?;
    data_buffer(dst)?;
    let n = nbytes(src)?;
    if is_host_buffer(src.data_buffer_ref()) {
        tensor_set(dst, src.data, 0, n)
    } else if is_host_buffer(dst.data_buffer_ref()) {
        tensor_get(src, dst.data, 0, n)
    } else if !buffer_copy_tensor(src, dst)? {
        let mut staging = vec![0u8; n];
        tensor_get(src, staging.as_mut_ptr() as *mut c_void, 0, n)?;
        tensor_set(dst, staging.as_ptr() as *const c_void, 0, n)
    } else {
        Ok(())
    }
}

/// `tensor_alloc`: places an unallocated tensor at `addr` inside `buffer`.
// A handle C passed to the export (or one of ours): NULL-checked, the rest is the trust contract
// (abi::vtable), taken on at the `unsafe` below.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn tensor_alloc<R: Rev>(b: &Buffer<R>, t: *mut Tensor<R>, addr: *mut c_void) -> Result<Status> {
    // SAFETY: NULL or a live tensor C passed to the export (trust contract), ours for the call.
    let Some(tr) = (unsafe { crate::abi::vtable::obj_mut(t) }) else { bail!("tensor is NULL") };
    ensure!(tr.buffer.is_null(), "tensor '{}' already has a buffer", tr.name());
    ensure!(tr.data.is_null(), "tensor '{}' already has data", tr.name());
    ensure!(tr.view_src.is_null(), "tensor '{}' is a view: use view_init", tr.name());
    let base = b.base()? as usize;
    let size = buft_get_alloc_size(b.buft()?, tr)?;
    let a = addr as usize;
    ensure!(
        !addr.is_null() && a >= base && a.checked_add(size).is_some_and(|end| end <= base + b.size),
        "tensor '{}' of {} bytes at {:#x} does not fit in buffer [{:#x}, {:#x})",
        tr.name(),
        size,
        a,
        base,
        base + b.size
    );
    tr.buffer = b.me();
    tr.data = addr;
    Ok(b.init_tensor(t))
}

/// `view_init`: points a view at its source's data and buffer.
// A handle C passed to the export (or one of ours): NULL-checked, the rest is the trust contract
// (abi::vtable), taken on at the `unsafe` below.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn view_init<R: Rev>(t: *mut Tensor<R>) -> Result<Status> {
    // SAFETY: NULL or a live tensor (trust contract): one C passed to the export, or one of
    // graph_copy's own; ours for the call.
    let Some(tr) = (unsafe { crate::abi::vtable::obj_mut(t) }) else { bail!("tensor is NULL") };
    ensure!(tr.buffer.is_null(), "view '{}' already has a buffer", tr.name());
    let Some(src) = tr.view_src() else { bail!("tensor '{}' is not a view", tr.name()) };
    ensure!(!src.buffer.is_null(), "view source of '{}' has no buffer", tr.name());
    ensure!(!src.data.is_null(), "view source of '{}' is not allocated", tr.name());
    let (buffer, data) = (src.buffer, (src.data as usize).wrapping_add(tr.view_offs) as *mut c_void);
    tr.buffer = buffer;
    tr.data = data;
    // SAFETY: the view source's buffer (checked non-NULL above), live while the source is.
    match unsafe { obj(buffer) } {
        Some(b) => Ok(b.init_tensor(t)),
        None => bail!("view source buffer vanished"),
    }
}

// ---------------------------------------------------------------- CPU buffer type

pub fn cpu_buffer_type<R: Rev>() -> *mut BufferType<R> {
    crate::buffer::cpu_statics::<R>().cpu_buft.0
}

/// A buffer over caller-owned memory (e.g. an mmapped model), which must be `TENSOR_ALIGNMENT`-aligned.
pub fn cpu_buffer_from_ptr<R: Rev>(ptr: *mut c_void, size: usize) -> Result<*mut Buffer<R>> {
    ensure!(!ptr.is_null() || size == 0, "pointer is NULL");
    ensure!((ptr as usize).is_multiple_of(TENSOR_ALIGNMENT), "buffer pointer {:p} must be aligned to {} bytes", ptr, TENSOR_ALIGNMENT);
    let s = crate::buffer::cpu_statics::<R>();
    Ok(buffer_init(s.mapped_buft.0, s.mapped_iface, ptr, size))
}

unsafe extern "C" fn cpu_buft_name<R: Rev>(_: *mut BufferType<R>) -> *const c_char {
    crate::guard::callback::<R, _>("cpu_buft.get_name", std::ptr::null(), || {
        c"CPU".as_ptr()
    })
}

unsafe extern "C" fn mapped_buft_name<R: Rev>(_: *mut BufferType<R>) -> *const c_char {
    crate::guard::callback::<R, _>("cpu_mapped_buft.get_name", std::ptr::null(), || {
        c"CPU_Mapped".as_ptr()
    })
}

unsafe extern "C" fn cpu_buft_get_alignment<R: Rev>(_: *mut BufferType<R>) -> usize {
    crate::guard::callback::<R, _>("cpu_buft.get_alignment", TENSOR_ALIGNMENT, || {
        TENSOR_ALIGNMENT
    })
}

unsafe extern "C" fn cpu_buft_is_host<R: Rev>(_: *mut BufferType<R>) -> bool {
    crate::guard::callback::<R, _>("cpu_buft.is_host", true, || {
        true
    })
}

unsafe extern "C" fn cpu_buft_alloc_buffer<R: Rev>(buft: *mut BufferType<R>, size: usize) -> *mut Buffer<R> {
    crate::guard::callback::<R, _>("cpu_buft.alloc_buffer", std::ptr::null_mut(), || {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: posix_memalign writes p on success; the alignment is a power of two >= sizeof(void*).
        let rc = unsafe { libc::posix_memalign(&mut p, BUFFER_BASE_ALIGNMENT, size.max(1)) };
        if rc != 0 || p.is_null() {
            crate::log_error!(R, "ggml_backend_cpu_buffer_type_alloc_buffer", "failed to allocate buffer of size {}", size);
            return std::ptr::null_mut();
        }
        buffer_init(buft, crate::buffer::cpu_statics::<R>().cpu_iface, p, size)
    })
}

unsafe extern "C" fn cpu_buffer_free<R: Rev>(buffer: *mut Buffer<R>) {
    crate::guard::callback::<R, _>("cpu_buffer.free_buffer", (), || {
        // SAFETY: C calls a buffer's vtable with the buffer (trust contract).
        if let Some(b) = unsafe { obj(buffer) } {
            // SAFETY: the context of a CPU buffer is the posix_memalign block of `cpu_buft_alloc_buffer`.
            unsafe { libc::free(b.context) }
        }
    })
}

unsafe extern "C" fn cpu_buffer_get_base<R: Rev>(buffer: *mut Buffer<R>) -> *mut c_void {
    crate::guard::callback::<R, _>("cpu_buffer.get_base", std::ptr::null_mut(), || {
        // SAFETY: as in cpu_buffer_free.
        unsafe { obj(buffer) }.map(|b| b.context).unwrap_or(std::ptr::null_mut())
    })
}

unsafe extern "C" fn cpu_buffer_memset_tensor<R: Rev>(_: *mut Buffer<R>, t: *mut Tensor<R>, value: u8, offset: usize, size: usize) {
    crate::guard::callback::<R, _>("cpu_buffer.memset_tensor", (), || {
        // SAFETY: the tensor C passes to its buffer's vtable (trust contract).
        if let Some(t) = unsafe { obj(t) } {
            fill_bytes((t.data as usize + offset) as *mut c_void, value, size);
        }
    })
}

unsafe extern "C" fn cpu_buffer_set_tensor<R: Rev>(_: *mut Buffer<R>, t: *mut Tensor<R>, data: *const c_void, offset: usize, size: usize) {
    crate::guard::callback::<R, _>("cpu_buffer.set_tensor", (), || {
        // SAFETY: as in cpu_buffer_memset_tensor.
        if let Some(t) = unsafe { obj(t) } {
            copy_bytes((t.data as usize + offset) as *mut c_void, data, size);
        }
    })
}

unsafe extern "C" fn cpu_buffer_get_tensor<R: Rev>(_: *mut Buffer<R>, t: *const Tensor<R>, data: *mut c_void, offset: usize, size: usize) {
    crate::guard::callback::<R, _>("cpu_buffer.get_tensor", (), || {
        // SAFETY: as in cpu_buffer_memset_tensor.
        if let Some(t) = unsafe { obj(t) } {
            copy_bytes(data, (t.data as usize + offset) as *const c_void, size);
        }
    })
}

unsafe extern "C" fn cpu_buffer_cpy_tensor<R: Rev>(_: *mut Buffer<R>, src: *const Tensor<R>, dst: *mut Tensor<R>) -> bool {
    crate::guard::callback::<R, _>("cpu_buffer.cpy_tensor", false, || {
        // SAFETY: as in cpu_buffer_memset_tensor.
        let (Some(s), Some(d)) = (unsafe { obj(src) }, unsafe { obj(dst) }) else { return false };
        if !is_host_buffer(s.buffer_ref()) {
            return false;
        }
        match nbytes(s) {
            Ok(n) => {
                copy_bytes(d.data, s.data, n);
                true
            }
            Err(_) => false,
        }
    })
}

unsafe extern "C" fn cpu_buffer_clear<R: Rev>(buffer: *mut Buffer<R>, value: u8) {
    crate::guard::callback::<R, _>("cpu_buffer.clear", (), || {
        // SAFETY: as in cpu_buffer_free.
        if let Some(b) = unsafe { obj(buffer) } {
            fill_bytes(b.context, value, b.size);
        }
    })
}
