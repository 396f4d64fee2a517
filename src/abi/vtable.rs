//! Where the trust placed in C's pointers is stated, and the C vtables of ggml's backend structs
//! are called. Above the FFI layer (the export glue, the vtables C calls back, the host calls) the
//! scheduler, the allocator and the rest are safe Rust.
//!
//! Trust contract: a non-NULL handle passed to a ggml-backend function points to a live object of
//! the revision's layout, and so do the non-NULL pointer fields of a live object (a tensor's
//! sources, buffer and view source; a buffer's type; a backend's device), for as long as the
//! object is in use by the call (that is the C contract; we cannot check more). Optional vtable
//! entries are checked before every call and a missing one is an `Err`, never a jump to NULL.
//!
//! How the contract is taken on, and why in this shape (issue 43): a pointer becomes a reference in
//! one of three ways, none of which yields a reference of a lifetime chosen from nowhere.
//! - [`obj`] / [`obj_mut`] are `unsafe fn` (like `ptr::as_ref`): where a pointer enters from C
//!   (the export glue, the vtables C calls back, a value a backend returns) the caller writes a
//!   `// SAFETY:` line saying where the pointer comes from.
//! - The accessors of a borrowed object (`Tensor::src_ref`, `Tensor::data_buffer_ref`,
//!   `Buffer::buft_ref`, `Backend::device_ref`, `CGraph::node`, ...) follow its pointer fields; the
//!   result is bound to that borrow.
//! - [`Live`] is the scheduler's and the allocator's capability to follow the backends, buffer
//!   types and graph tensors handed to them: minted by an `unsafe` call in the export glue's
//!   `sched_new` (the promise is ggml's scheduler contract: the backends outlive the scheduler, a
//!   graph handed to it is live while it works on it), its references are bound to the borrow of
//!   the token, so none outlives the function that holds it. `unsafe` at each of the ~100 places
//!   where the scheduler and the allocator follow a pointer would restate that one promise on
//!   every line and bury the few places where a promise is really made. What the token cannot
//!   check: it is `Copy`, so `obj_mut`'s exclusivity holds per copy; the code takes `&mut` only
//!   for a write and holds no other borrow of that object across it (Miri checks the allocator's
//!   and the arena's tests for this, `scripts/miri.sh`).
//!
//! No shared reference becomes a mutable pointer handed to C: a `*mut` given to C comes from a
//! `&mut` (a graph to compute or optimize), a pointer C gave us and we kept, or [`c_handle`],
//! which says once which objects C only reads through ggml's non-const pointers.

// The vtable calls take C's pointers (tensors, graphs, events) and hand them on to C, which reads
// them under the contract above; they dereference nothing themselves but `self`.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use super::*;
use crate::error::Result;
use crate::host_try;
use crate::{bail, ensure};

/// Borrows a C object; `None` for NULL.
///
/// # Safety
/// `p` is NULL or points to a live `T` (the trust contract) that stays live and unmutated, but
/// through the returned reference, for the lifetime the caller gives it.
pub unsafe fn obj<'a, T>(p: *const T) -> Option<&'a T> {
    // SAFETY: the caller's promise above.
    unsafe { p.as_ref() }
}

/// Mutably borrows a C object; `None` for NULL.
///
/// # Safety
/// As [`obj`], and nothing else reads or writes the object while the reference lives.
pub unsafe fn obj_mut<'a, T>(p: *mut T) -> Option<&'a mut T> {
    // SAFETY: the caller's promise above.
    unsafe { p.as_mut() }
}

/// An object handed to C through one of ggml's non-const pointers that C only reads: the `self`
/// of a buffer type, buffer, backend, device or reg passed back to its own vtable (a backend's
/// state lives behind `context`, which we never borrow), a tensor whose *data* a transfer writes
/// (`set_tensor`, `memset_tensor`, a copy's destination: the bytes at `data`, not the struct), an
/// event to wait on, a GUID. A shared borrow may hand these over; this is the one place that
/// says so. Where C may write the struct itself (a graph to compute or optimize, a tensor
/// `init_tensor` may annotate), the pointer comes from a `&mut` or from C.
pub fn c_handle<T>(r: &T) -> *mut T {
    r as *const T as *mut T
}

/// The capability to follow the C pointers of the graphs and backends handed to a scheduler or an
/// allocator (see the module doc). Zero-sized; copies are the same promise.
#[derive(Clone, Copy)]
pub struct Live(());

impl Live {
    /// # Safety
    /// Every non-NULL pointer later passed to [`Live::obj`] / [`Live::obj_mut`] through this token
    /// or a copy points to a live object of its type (the backends and buffer types a scheduler
    /// or an allocator is created with, the tensors of the graphs handed to it, its own tensors),
    /// and nothing else writes it while a borrow taken here lives.
    pub unsafe fn vouch() -> Self {
        Live(())
    }
    /// Borrows a C object for as long as the token is borrowed; `None` for NULL.
    pub fn obj<T>(&self, p: *const T) -> Option<&T> {
        // SAFETY: the promise of `vouch`; the reference cannot outlive the token's borrow.
        unsafe { p.as_ref() }
    }
    /// Mutably borrows a C object while the token is mutably borrowed (so not beside another
    /// borrow taken through the same token); `None` for NULL.
    pub fn obj_mut<T>(&mut self, p: *mut T) -> Option<&mut T> {
        // SAFETY: as above.
        unsafe { p.as_mut() }
    }
}

/// (Defined with the error type, below this module, so that `host_try` can name a failing
/// function without importing this module, which calls it.)
pub use crate::error::cstr;

/// Copies `len` bytes (the C side guarantees both ranges are valid; we checked them against the tensor).
pub fn copy_bytes(dst: *mut c_void, src: *const c_void, len: usize) {
    if len == 0 {
        return;
    }
    // SAFETY: caller checked both pointers non-NULL and the ranges in bounds of their buffers.
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len) }
}

pub fn fill_bytes(dst: *mut c_void, value: u8, len: usize) {
    if len == 0 {
        return;
    }
    // SAFETY: caller checked dst non-NULL and the range in bounds of its buffer.
    unsafe { std::ptr::write_bytes(dst as *mut u8, value, len) }
}

impl<R: Rev> Tensor<R> {
    pub fn name(&self) -> String {
        let bytes: Vec<u8> = self.name.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
    pub fn view_src(&self) -> Option<&Tensor<R>> {
        // SAFETY: a live tensor's pointer fields are NULL or live while it is (trust contract).
        unsafe { obj(self.view_src) }
    }
    /// Source `i` (`None` for NULL).
    pub fn src_ref(&self, i: usize) -> Option<&Tensor<R>> {
        // SAFETY: as above.
        unsafe { obj(self.src[i]) }
    }
    /// The non-NULL sources, in order.
    pub fn srcs(&self) -> impl Iterator<Item = &Tensor<R>> {
        // SAFETY: as above.
        self.src.iter().filter_map(|&s| unsafe { obj(s) })
    }
    pub fn buffer_ref(&self) -> Option<&Buffer<R>> {
        // SAFETY: as above.
        unsafe { obj(self.buffer) }
    }
    /// [`Tensor::data_buffer`], borrowed.
    pub fn data_buffer_ref(&self) -> Option<&Buffer<R>> {
        // SAFETY: as above.
        unsafe { obj(self.data_buffer()) }
    }
    /// The buffer holding the tensor's data: the view source's for views, as stock does.
    pub fn data_buffer(&self) -> *mut Buffer<R> {
        match self.view_src() {
            Some(v) => v.buffer,
            None => self.buffer,
        }
    }
}

macro_rules! call {
    ($iface:expr, $f:ident, $what:expr) => {
        match $iface.$f {
            Some(f) => f,
            None => bail!("{} does not implement {}", $what, stringify!($f)),
        }
    };
}

impl<R: Rev> BufferType<R> {
    fn me(&self) -> *mut Self {
        c_handle(self)
    }
    pub fn name(&self) -> Result<*const c_char> {
        let f = call!(self.iface, get_name, "buffer type");
        // SAFETY: vtable entry of a live buffer type, called with itself.
        Ok(unsafe { f(self.me()) })
    }
    pub fn alloc(&self, size: usize) -> Result<*mut Buffer<R>> {
        let f = call!(self.iface, alloc_buffer, "buffer type");
        // SAFETY: as above; a C++ exception stops in host_try.cpp.
        unsafe { host_try::call_pz(f, self.me(), size) }.map_err(|e| e.during("alloc_buffer"))
    }
    pub fn alignment(&self) -> Result<usize> {
        let f = call!(self.iface, get_alignment, "buffer type");
        // SAFETY: as above.
        Ok(unsafe { f(self.me()) })
    }
    pub fn max_size(&self) -> usize {
        match self.iface.get_max_size {
            // SAFETY: as above.
            Some(f) => unsafe { f(self.me()) },
            None => usize::MAX,
        }
    }
    pub fn custom_alloc_size(&self, t: &Tensor<R>) -> Option<usize> {
        // SAFETY: as above; the tensor is live.
        self.iface.get_alloc_size.map(|f| unsafe { f(self.me(), t) })
    }
    pub fn is_host(&self) -> bool {
        // SAFETY: as above.
        self.iface.is_host.map(|f| unsafe { f(self.me()) }).unwrap_or(false)
    }
}

impl<R: Rev> Buffer<R> {
    pub fn me(&self) -> *mut Self {
        c_handle(self)
    }
    pub fn buft(&self) -> Result<&BufferType<R>> {
        match self.buft_ref() {
            Some(b) => Ok(b),
            None => bail!("buffer has no buffer type"),
        }
    }
    pub fn buft_ref(&self) -> Option<&BufferType<R>> {
        // SAFETY: a live buffer's type is NULL or live while it is (trust contract).
        unsafe { obj(self.buft) }
    }
    pub fn base(&self) -> Result<*mut c_void> {
        if self.size == 0 {
            return Ok(std::ptr::null_mut());
        }
        let f = call!(self.iface, get_base, "buffer");
        // SAFETY: vtable entry of a live buffer, called with itself.
        let base = unsafe { f(self.me()) };
        ensure!(!base.is_null(), "backend buffer base cannot be NULL");
        Ok(base)
    }
    pub fn init_tensor(&self, t: *mut Tensor<R>) -> Status {
        match self.iface.init_tensor {
            // SAFETY: as above; t is a live tensor of this buffer.
            Some(f) => R::init_status(unsafe { f(self.me(), t) }),
            None => STATUS_SUCCESS,
        }
    }
    pub fn memset_tensor(&self, t: *mut Tensor<R>, value: u8, offset: usize, size: usize) -> Result<()> {
        let f = call!(self.iface, memset_tensor, "buffer");
        // SAFETY: as above; the range was checked against the tensor's size.
        unsafe { f(self.me(), t, value, offset, size) };
        Ok(())
    }
    pub fn set_tensor(&self, t: *mut Tensor<R>, data: *const c_void, offset: usize, size: usize) -> Result<()> {
        let f = call!(self.iface, set_tensor, "buffer");
        // SAFETY: as above.
        unsafe { f(self.me(), t, data, offset, size) };
        Ok(())
    }
    /// The 2026 `set_tensor_2d` slot; `false` when the revision or the buffer has none.
    #[allow(clippy::too_many_arguments)]
    pub fn set_tensor_2d(&self, t: *mut Tensor<R>, data: *const c_void, offset: usize, size: usize, n: usize, st: usize, sd: usize) -> bool {
        match R::buffer_2d(&self.iface).and_then(|s| s.set_tensor_2d) {
            Some(f) => {
                // SAFETY: as above; the whole span was range-checked by the caller.
                unsafe { f(self.me(), t, data, offset, size, n, st, sd) };
                true
            }
            None => false,
        }
    }
    #[allow(clippy::too_many_arguments)]
    pub fn get_tensor_2d(&self, t: *const Tensor<R>, data: *mut c_void, offset: usize, size: usize, n: usize, st: usize, sd: usize) -> bool {
        match R::buffer_2d(&self.iface).and_then(|s| s.get_tensor_2d) {
            Some(f) => {
                // SAFETY: as above.
                unsafe { f(self.me(), t, data, offset, size, n, st, sd) };
                true
            }
            None => false,
        }
    }
    pub fn get_tensor(&self, t: *const Tensor<R>, data: *mut c_void, offset: usize, size: usize) -> Result<()> {
        let f = call!(self.iface, get_tensor, "buffer");
        // SAFETY: as above.
        unsafe { f(self.me(), t, data, offset, size) };
        Ok(())
    }
    /// `Ok(false)` when the buffer has no `cpy_tensor` or declines the copy.
    pub fn cpy_tensor(&self, src: *const Tensor<R>, dst: *mut Tensor<R>) -> bool {
        // SAFETY: as above.
        self.iface.cpy_tensor.map(|f| unsafe { f(self.me(), src, dst) }).unwrap_or(false)
    }
    pub fn clear(&self, value: u8) -> Result<()> {
        let f = call!(self.iface, clear, "buffer");
        // SAFETY: as above.
        unsafe { f(self.me(), value) };
        Ok(())
    }
    pub fn reset(&self) {
        if let Some(f) = self.iface.reset {
            // SAFETY: as above.
            unsafe { f(self.me()) }
        }
    }
    /// Runs the buffer's own `free_buffer` (which releases `context`), not the struct itself. A
    /// C++ exception thrown by it stops here (the context is then whatever the backend left).
    pub fn release_context(&self) {
        if let Some(f) = self.iface.free_buffer {
            // SAFETY: as above; called once, right before the struct is freed; a C++ exception
            // stops in host_try.cpp.
            let _ = unsafe { host_try::call_v(f, self.me()) };
        }
    }
}

impl<R: Rev> Backend<R> {
    pub fn me(&self) -> *mut Self {
        c_handle(self)
    }
    pub fn name(&self) -> Result<*const c_char> {
        let f = call!(self.iface, get_name, "backend");
        // SAFETY: vtable entry of a live backend, called with itself.
        Ok(unsafe { f(self.me()) })
    }
    pub fn device_ref(&self) -> Option<&Device<R>> {
        // SAFETY: a live backend's device is NULL or live while it is (trust contract).
        unsafe { obj(self.device) }
    }
    /// Frees the backend through its own vtable; `self` is dangling afterwards.
    pub fn free(&self) -> Result<()> {
        let f = call!(self.iface, free, "backend");
        // SAFETY: as above; the caller never touches the backend again.
        unsafe { f(self.me()) };
        Ok(())
    }
    pub fn set_tensor_async(&self, t: *mut Tensor<R>, data: *const c_void, offset: usize, size: usize) -> bool {
        match self.iface.set_tensor_async {
            Some(f) => {
                // SAFETY: as above; range checked by the caller.
                unsafe { f(self.me(), t, data, offset, size) };
                true
            }
            None => false,
        }
    }
    /// The 2026 async 2-D slots; `false` when the revision or the backend has none.
    #[allow(clippy::too_many_arguments)]
    pub fn set_tensor_2d_async(&self, t: *mut Tensor<R>, data: *const c_void, offset: usize, size: usize, n: usize, st: usize, sd: usize) -> bool {
        match R::backend_2d(&self.iface).and_then(|s| s.set_tensor_2d_async) {
            Some(f) => {
                // SAFETY: as above; the whole span was range-checked by the caller.
                unsafe { f(self.me(), t, data, offset, size, n, st, sd) };
                true
            }
            None => false,
        }
    }
    #[allow(clippy::too_many_arguments)]
    pub fn get_tensor_2d_async(&self, t: *const Tensor<R>, data: *mut c_void, offset: usize, size: usize, n: usize, st: usize, sd: usize) -> bool {
        match R::backend_2d(&self.iface).and_then(|s| s.get_tensor_2d_async) {
            Some(f) => {
                // SAFETY: as above.
                unsafe { f(self.me(), t, data, offset, size, n, st, sd) };
                true
            }
            None => false,
        }
    }
    /// The 2026 `graph_optimize` slot, run on a split before it is allocated; `false` when absent.
    /// From b11118 on the backend may add allocation dependencies, collected into `deps`.
    pub fn graph_optimize<D: AllocDepSink<R>>(&self, g: *mut CGraph<R>, deps: &mut D) -> bool {
        match R::graph_optimize(&self.iface) {
            Some(GraphOptimizer::Plain(f)) => {
                // SAFETY: as above; g is a live graph (view) of the caller.
                unsafe { f(self.me(), g) };
                true
            }
            Some(GraphOptimizer::WithParams(f)) => {
                let mut params = GraphOptimizeParams::<R> {
                    add_alloc_dep: Some(add_alloc_dep::<R, D>),
                    user_data: deps as *mut D as *mut c_void,
                };
                // SAFETY: as above; `params` and `deps` outlive the call, and the backend only
                // hands `user_data` back to `add_alloc_dep` during it (stock's contract).
                unsafe { f(self.me(), g, &mut params) };
                true
            }
            None => false,
        }
    }
    pub fn get_tensor_async(&self, t: *const Tensor<R>, data: *mut c_void, offset: usize, size: usize) -> bool {
        match self.iface.get_tensor_async {
            Some(f) => {
                // SAFETY: as above.
                unsafe { f(self.me(), t, data, offset, size) };
                true
            }
            None => false,
        }
    }
    /// Called on the destination backend, as stock does.
    pub fn cpy_tensor_async(&self, src_backend: *mut Backend<R>, src: *const Tensor<R>, dst: *mut Tensor<R>) -> bool {
        // SAFETY: as above.
        self.iface.cpy_tensor_async.map(|f| unsafe { f(src_backend, self.me(), src, dst) }).unwrap_or(false)
    }
    pub fn synchronize(&self) {
        if let Some(f) = self.iface.synchronize {
            // SAFETY: as above.
            unsafe { f(self.me()) }
        }
    }
    pub fn graph_plan_create(&self, g: *const CGraph<R>) -> Result<GraphPlan> {
        let f = call!(self.iface, graph_plan_create, "backend");
        // SAFETY: as above; g is a live graph.
        Ok(unsafe { f(self.me(), g) })
    }
    pub fn graph_plan_free(&self, plan: GraphPlan) -> Result<()> {
        let f = call!(self.iface, graph_plan_free, "backend");
        // SAFETY: as above; plan came from this backend's graph_plan_create.
        unsafe { f(self.me(), plan) };
        Ok(())
    }
    pub fn graph_plan_compute(&self, plan: GraphPlan) -> Result<Status> {
        let f = call!(self.iface, graph_plan_compute, "backend");
        // SAFETY: as above.
        Ok(unsafe { f(self.me(), plan) })
    }
    pub fn graph_compute(&self, g: *mut CGraph<R>) -> Result<Status> {
        let f = call!(self.iface, graph_compute, "backend");
        // SAFETY: as above.
        Ok(unsafe { f(self.me(), g) })
    }
    pub fn event_record(&self, e: *mut Event<R>) -> Result<()> {
        let f = call!(self.iface, event_record, "backend");
        // SAFETY: as above; e is a live event.
        unsafe { f(self.me(), e) };
        Ok(())
    }
    pub fn event_wait(&self, e: *mut Event<R>) -> Result<()> {
        let f = call!(self.iface, event_wait, "backend");
        // SAFETY: as above.
        unsafe { f(self.me(), e) };
        Ok(())
    }
}

impl<R: Rev> Device<R> {
    pub fn me(&self) -> *mut Self {
        c_handle(self)
    }
    pub fn name(&self) -> Result<*const c_char> {
        let f = call!(self.iface, get_name, "device");
        // SAFETY: vtable entry of a live device, called with itself.
        Ok(unsafe { f(self.me()) })
    }
    pub fn description(&self) -> Result<*const c_char> {
        let f = call!(self.iface, get_description, "device");
        // SAFETY: as above.
        Ok(unsafe { f(self.me()) })
    }
    pub fn memory(&self) -> Result<(usize, usize)> {
        let f = call!(self.iface, get_memory, "device");
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: as above; both out-pointers are valid locals; a C++ exception stops in host_try.cpp.
        unsafe { host_try::call_v_out2(f, self.me(), &mut free, &mut total) }.map_err(|e| e.during("get_memory"))?;
        Ok((free, total))
    }
    pub fn type_(&self) -> Result<DevType> {
        let f = call!(self.iface, get_type, "device");
        // SAFETY: as above; a C++ exception stops in host_try.cpp.
        unsafe { host_try::call_i(f, self.me()) }.map_err(|e| e.during("get_type"))
    }
    pub fn props(&self, out: &mut DevProps<R>) -> Result<()> {
        let f = call!(self.iface, get_props, "device");
        // SAFETY: as above; out is a valid props struct.
        unsafe { f(self.me(), out) };
        Ok(())
    }
    pub fn init_backend(&self, params: *const c_char) -> Result<*mut Backend<R>> {
        let f = call!(self.iface, init_backend, "device");
        // SAFETY: as above; params is NULL or a C string; a C++ exception stops in host_try.cpp.
        unsafe { host_try::call_pp(f, self.me(), params) }.map_err(|e| e.during("init_backend"))
    }
    pub fn buffer_type(&self) -> Result<*mut BufferType<R>> {
        let f = call!(self.iface, get_buffer_type, "device");
        // SAFETY: as above; a C++ exception stops in host_try.cpp.
        unsafe { host_try::call_p(f, self.me()) }.map_err(|e| e.during("get_buffer_type"))
    }
    /// [`Device::buffer_type`], borrowed for as long as the device is.
    pub fn buffer_type_ref(&self) -> Result<Option<&BufferType<R>>> {
        // SAFETY: a device's buffer type is NULL or lives as long as the device (ggml's contract).
        Ok(unsafe { obj(self.buffer_type()?) })
    }
    pub fn host_buffer_type(&self) -> *mut BufferType<R> {
        // SAFETY: as above.
        self.iface.get_host_buffer_type.map(|f| unsafe { f(self.me()) }).unwrap_or(std::ptr::null_mut())
    }
    pub fn buffer_from_host_ptr(&self, ptr: *mut c_void, size: usize, max_tensor_size: usize) -> Result<*mut Buffer<R>> {
        let f = call!(self.iface, buffer_from_host_ptr, "device");
        // SAFETY: as above; ptr/size describe host memory owned by the caller.
        Ok(unsafe { f(self.me(), ptr, size, max_tensor_size) })
    }
    pub fn supports_op(&self, op: *const Tensor<R>) -> Result<bool> {
        let f = call!(self.iface, supports_op, "device");
        // SAFETY: as above.
        Ok(unsafe { f(self.me(), op) })
    }
    pub fn supports_buft(&self, buft: *mut BufferType<R>) -> Result<bool> {
        let f = call!(self.iface, supports_buft, "device");
        // SAFETY: as above.
        Ok(unsafe { f(self.me(), buft) })
    }
    pub fn offload_op(&self, op: *const Tensor<R>) -> bool {
        // SAFETY: as above.
        self.iface.offload_op.map(|f| unsafe { f(self.me(), op) }).unwrap_or(false)
    }
    pub fn event_new(&self) -> *mut Event<R> {
        // SAFETY: as above.
        self.iface.event_new.map(|f| unsafe { f(self.me()) }).unwrap_or(std::ptr::null_mut())
    }
    pub fn event_free(&self, e: *mut Event<R>) -> Result<()> {
        let f = call!(self.iface, event_free, "device");
        // SAFETY: as above; e was created by this device.
        unsafe { f(self.me(), e) };
        Ok(())
    }
    pub fn event_synchronize(&self, e: *mut Event<R>) -> Result<()> {
        let f = call!(self.iface, event_synchronize, "device");
        // SAFETY: as above.
        unsafe { f(self.me(), e) };
        Ok(())
    }
}

impl<R: Rev> Reg<R> {
    pub fn me(&self) -> *mut Self {
        c_handle(self)
    }
    pub fn name(&self) -> Result<*const c_char> {
        let f = call!(self.iface, get_name, "backend reg");
        // SAFETY: vtable entry of a live reg, called with itself.
        Ok(unsafe { f(self.me()) })
    }
    pub fn device_count(&self) -> Result<usize> {
        let f = call!(self.iface, get_device_count, "backend reg");
        // SAFETY: as above; a C++ exception stops in host_try.cpp.
        unsafe { host_try::call_z(f, self.me()) }.map_err(|e| e.during("get_device_count"))
    }
    pub fn device(&self, index: usize) -> Result<*mut Device<R>> {
        let f = call!(self.iface, get_device, "backend reg");
        // SAFETY: as above; index < device_count is checked by the caller; a C++ exception stops
        // in host_try.cpp.
        unsafe { host_try::call_pz(f, self.me(), index) }.map_err(|e| e.during("get_device"))
    }
    pub fn proc_address(&self, name: *const c_char) -> *mut c_void {
        // SAFETY: as above; name is a C string.
        self.iface.get_proc_address.map(|f| unsafe { f(self.me(), name) }).unwrap_or(std::ptr::null_mut())
    }
}

impl<R: Rev> CGraph<R> {
    /// An empty graph, as stock's `calloc` gives its scheduler graph copy.
    pub fn zeroed() -> Self {
        // SAFETY: CGraph is plain data (integers, pointers, and `()` or a pointer); all-zero is valid.
        unsafe { std::mem::zeroed() }
    }
    pub fn nodes(&self) -> &[*mut Tensor<R>] {
        if self.nodes.is_null() || self.n_nodes <= 0 {
            return &[];
        }
        // SAFETY: a graph's `nodes` array holds at least `n_nodes` entries.
        unsafe { std::slice::from_raw_parts(self.nodes, self.n_nodes as usize) }
    }
    /// Node `i`, borrowed for as long as the graph is (`None` for NULL or out of range).
    pub fn node(&self, i: usize) -> Option<&Tensor<R>> {
        // SAFETY: a live graph's nodes are NULL or live while it is (trust contract).
        self.nodes().get(i).and_then(|&p| unsafe { obj(p) })
    }
    pub fn leafs(&self) -> &[*mut Tensor<R>] {
        if self.leafs.is_null() || self.n_leafs <= 0 {
            return &[];
        }
        // SAFETY: a graph's `leafs` array holds at least `n_leafs` entries.
        unsafe { std::slice::from_raw_parts(self.leafs, self.n_leafs as usize) }
    }
}

/// Calls an app's scheduler eval callback (`ask`: does the user want to see `t`?).
pub fn call_eval_callback<R: Rev>(cb: unsafe extern "C" fn(*mut Tensor<R>, bool, *mut c_void) -> bool, t: *mut Tensor<R>, ask: bool, user_data: *mut c_void) -> bool {
    // SAFETY: the callback and its user data were registered together by the app.
    unsafe { cb(t, ask, user_data) }
}

/// Calls `compare_graph_backend`'s callback.
pub fn call_compare_callback<R: Rev>(
    cb: unsafe extern "C" fn(i32, *mut Tensor<R>, *mut Tensor<R>, *mut c_void) -> bool,
    i: i32,
    t1: *mut Tensor<R>,
    t2: *mut Tensor<R>,
    user_data: *mut c_void,
) -> bool {
    // SAFETY: as above.
    unsafe { cb(i, t1, t2, user_data) }
}

impl<R: Rev> CGraph<R> {
    /// Writes node `i` of a graph made by `ggml_new_graph_custom` (capacity `size`).
    pub fn set_node(&mut self, i: usize, t: *mut Tensor<R>) -> bool {
        if self.nodes.is_null() || i >= self.size.max(0) as usize {
            return false;
        }
        // SAFETY: `nodes` holds `size` entries and i < size.
        unsafe { *self.nodes.add(i) = t };
        true
    }
}

/// `ggml_backend_graph_optimize_params.add_alloc_dep`, called by a backend's `graph_optimize`
/// (b11118) with the `AllocDepSink` the scheduler passed as `user_data`. C calls it: nothing unwinds,
/// and a dependency that cannot be recorded is reported with `reject` (the scheduler logs it).
unsafe extern "C" fn add_alloc_dep<R: Rev, D: AllocDepSink<R>>(user_data: *mut c_void, tensor: *mut Tensor<R>, until: *mut Tensor<R>) {
    // SAFETY: user_data is NULL or the `&mut D` of `Backend::graph_optimize`, live for
    // the duration of the backend's call, which is the only time the backend may call this.
    let Some(deps) = (unsafe { (user_data as *mut D).as_mut() }) else { return };
    if tensor.is_null() || until.is_null() {
        deps.reject();
        return;
    }
    let added = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| deps.add(tensor, until)));
    if added.is_err() {
        deps.reject();
    }
}
