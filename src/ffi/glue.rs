//! The export layer's logic, once for both prefixes: check every argument, convert, call the safe
//! core. Each function here backs the C symbol `<p>ggml_backend_<same name>`; errors become one log
//! line and the function's "no" value in `ffi::guard`.

// This is where C's pointers enter: each is taken on, with its `// SAFETY:` line, by
// `non_null!` / `nullable!` / `sched_mut!` / `graph_mut!` or a slice built from it; making these
// functions `unsafe` would only move the same promise into the generated exports.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use crate::abi::vtable::{cstr, obj, obj_mut};
use crate::abi::*;
use crate::error::Result;
use crate::{backend, buffer, device, event, loader, registry};
use crate::{bail, ensure};
use std::ffi::{c_char, c_void};
use std::path::Path;

/// `non_null!(ptr, "what")`: borrows a C handle or fails with "<what> is NULL". The borrow is
/// used within the export's call.
macro_rules! non_null {
    ($p:expr, $what:expr) => {
        // SAFETY: an argument C passed to the export: the trust contract (abi::vtable).
        match unsafe { obj($p) } {
            Some(r) => r,
            None => bail!("{} is NULL", $what),
        }
    };
}

/// `nullable!(ptr)`: borrows a C handle that may be NULL, for the export's call.
macro_rules! nullable {
    ($p:expr) => {
        // SAFETY: an argument C passed to the export: the trust contract (abi::vtable).
        unsafe { obj($p) }
    };
}

fn name_arg(name: *const c_char) -> Result<String> {
    ensure!(!name.is_null(), "name is NULL");
    Ok(cstr(name))
}

// ---------------------------------------------------------------- buffer type

pub fn buft_name<R: Rev>(buft: *mut BufferType<R>) -> Result<*const c_char> {
    buffer::buft_name(non_null!(buft, "buffer type"))
}
pub fn buft_alloc_buffer<R: Rev>(buft: *mut BufferType<R>, size: usize) -> Result<*mut Buffer<R>> {
    buffer::buft_alloc_buffer(non_null!(buft, "buffer type"), size)
}
pub fn buft_get_alignment<R: Rev>(buft: *mut BufferType<R>) -> Result<usize> {
    non_null!(buft, "buffer type").alignment()
}
pub fn buft_get_max_size<R: Rev>(buft: *mut BufferType<R>) -> Result<usize> {
    Ok(non_null!(buft, "buffer type").max_size())
}
pub fn buft_get_alloc_size<R: Rev>(buft: *mut BufferType<R>, tensor: *const Tensor<R>) -> Result<usize> {
    buffer::buft_get_alloc_size(non_null!(buft, "buffer type"), non_null!(tensor, "tensor"))
}
pub fn buft_is_host<R: Rev>(buft: *mut BufferType<R>) -> Result<bool> {
    Ok(non_null!(buft, "buffer type").is_host())
}
pub fn buft_get_device<R: Rev>(buft: *mut BufferType<R>) -> Result<*mut Device<R>> {
    Ok(non_null!(buft, "buffer type").device)
}

// ---------------------------------------------------------------- buffer

pub fn buffer_name<R: Rev>(buffer: *mut Buffer<R>) -> Result<*const c_char> {
    non_null!(buffer, "buffer").buft()?.name()
}
pub fn buffer_free<R: Rev>(buffer: *mut Buffer<R>) -> Result<()> {
    buffer::buffer_free(buffer);
    Ok(())
}
pub fn buffer_get_base<R: Rev>(buffer: *mut Buffer<R>) -> Result<*mut c_void> {
    non_null!(buffer, "buffer").base()
}
pub fn buffer_get_size<R: Rev>(buffer: *mut Buffer<R>) -> Result<usize> {
    Ok(non_null!(buffer, "buffer").size)
}
pub fn buffer_init_tensor<R: Rev>(buffer: *mut Buffer<R>, tensor: *mut Tensor<R>) -> Result<R::InitRet> {
    let b = non_null!(buffer, "buffer");
    non_null!(tensor, "tensor");
    Ok(R::init_ret(b.init_tensor(tensor)))
}
pub fn buffer_get_alignment<R: Rev>(buffer: *mut Buffer<R>) -> Result<usize> {
    non_null!(buffer, "buffer").buft()?.alignment()
}
pub fn buffer_get_max_size<R: Rev>(buffer: *mut Buffer<R>) -> Result<usize> {
    Ok(non_null!(buffer, "buffer").buft()?.max_size())
}
pub fn buffer_get_alloc_size<R: Rev>(buffer: *mut Buffer<R>, tensor: *const Tensor<R>) -> Result<usize> {
    buffer::buft_get_alloc_size(non_null!(buffer, "buffer").buft()?, non_null!(tensor, "tensor"))
}
pub fn buffer_clear<R: Rev>(buffer: *mut Buffer<R>, value: u8) -> Result<()> {
    buffer::buffer_clear(non_null!(buffer, "buffer"), value)
}
pub fn buffer_is_host<R: Rev>(buffer: *mut Buffer<R>) -> Result<bool> {
    Ok(non_null!(buffer, "buffer").buft()?.is_host())
}
pub fn buffer_set_usage<R: Rev>(buffer: *mut Buffer<R>, usage: BufferUsage) -> Result<()> {
    ensure!((USAGE_ANY..=USAGE_COMPUTE).contains(&usage), "unknown buffer usage {}", usage);
    buffer::buffer_set_usage(buffer, usage)
}
pub fn buffer_get_usage<R: Rev>(buffer: *mut Buffer<R>) -> Result<BufferUsage> {
    Ok(non_null!(buffer, "buffer").usage)
}
pub fn buffer_get_type<R: Rev>(buffer: *mut Buffer<R>) -> Result<*mut BufferType<R>> {
    Ok(non_null!(buffer, "buffer").buft)
}
pub fn buffer_reset<R: Rev>(buffer: *mut Buffer<R>) -> Result<()> {
    non_null!(buffer, "buffer").reset();
    Ok(())
}
pub fn tensor_copy<R: Rev>(src: *const Tensor<R>, dst: *mut Tensor<R>) -> Result<()> {
    buffer::tensor_copy(non_null!(src, "source tensor"), non_null!(dst, "destination tensor"))
}

// ---------------------------------------------------------------- impl functions for C backends

pub fn buffer_init<R: Rev>(buft: *mut BufferType<R>, iface: BufferI<R>, context: *mut c_void, size: usize) -> Result<*mut Buffer<R>> {
    Ok(buffer::buffer_init(buft, iface, context, size))
}
pub fn buffer_copy_tensor<R: Rev>(src: *const Tensor<R>, dst: *mut Tensor<R>) -> Result<bool> {
    buffer::buffer_copy_tensor(non_null!(src, "source tensor"), non_null!(dst, "destination tensor"))
}
// `buffers` comes from C: checked non-NULL here, its length is the caller's promise (trust model in
// abi::vtable), and `unsafe fn` would only move that promise to the generated export.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn multi_buffer_alloc_buffer<R: Rev>(buffers: *mut *mut Buffer<R>, n_buffers: usize) -> Result<*mut Buffer<R>> {
    ensure!(!buffers.is_null(), "buffers is NULL");
    ensure!(n_buffers > 0 && n_buffers <= isize::MAX as usize / 8, "invalid buffer count {}", n_buffers);
    // SAFETY: the caller passes an array of n_buffers handles (checked non-NULL above).
    let list = unsafe { std::slice::from_raw_parts(buffers, n_buffers) };
    buffer::multi_buffer_alloc(list)
}
pub fn buffer_is_multi_buffer<R: Rev>(buffer: *mut Buffer<R>) -> Result<bool> {
    Ok(buffer::is_multi_buffer(non_null!(buffer, "buffer")))
}
pub fn multi_buffer_set_usage<R: Rev>(buffer: *mut Buffer<R>, usage: BufferUsage) -> Result<()> {
    ensure!((USAGE_ANY..=USAGE_COMPUTE).contains(&usage), "unknown buffer usage {}", usage);
    let b = non_null!(buffer, "buffer");
    ensure!(buffer::is_multi_buffer(b), "buffer is not a multi-buffer");
    buffer::multi_buffer_set_usage(b, usage)
}
pub fn register<R: Rev>(reg: *mut Reg<R>) -> Result<()> {
    crate::registry::registry::<R>().register_backend(reg)
}
pub fn device_register<R: Rev>(device: *mut Device<R>) -> Result<()> {
    crate::registry::registry::<R>().register_device(device)
}

// ---------------------------------------------------------------- backend (stream)

pub fn guid<R: Rev>(backend: *mut Backend<R>) -> Result<*mut Guid> {
    Ok(nullable!(backend).map(|b| b.guid).unwrap_or(std::ptr::null_mut()))
}
pub fn name<R: Rev>(backend: *mut Backend<R>) -> Result<*const c_char> {
    match nullable!(backend) {
        Some(b) => b.name(),
        None => Ok(c"NULL".as_ptr()),
    }
}
pub fn free<R: Rev>(backend: *mut Backend<R>) -> Result<()> {
    match nullable!(backend) {
        Some(b) => b.free(),
        None => Ok(()),
    }
}
pub fn get_default_buffer_type<R: Rev>(backend: *mut Backend<R>) -> Result<*mut BufferType<R>> {
    Ok(crate::abi::vtable::c_handle(backend::default_buffer_type(non_null!(backend, "backend"))?))
}
pub fn alloc_buffer<R: Rev>(backend: *mut Backend<R>, size: usize) -> Result<*mut Buffer<R>> {
    backend::alloc_buffer(non_null!(backend, "backend"), size)
}
pub fn get_alignment<R: Rev>(backend: *mut Backend<R>) -> Result<usize> {
    backend::default_buffer_type(non_null!(backend, "backend"))?.alignment()
}
pub fn get_max_size<R: Rev>(backend: *mut Backend<R>) -> Result<usize> {
    Ok(backend::default_buffer_type(non_null!(backend, "backend"))?.max_size())
}
pub fn tensor_set_async<R: Rev>(backend: *mut Backend<R>, tensor: *mut Tensor<R>, data: *const c_void, offset: usize, size: usize) -> Result<()> {
    backend::tensor_set_async(non_null!(backend, "backend"), non_null!(tensor, "tensor"), data, offset, size)
}
pub fn tensor_get_async<R: Rev>(backend: *mut Backend<R>, tensor: *const Tensor<R>, data: *mut c_void, offset: usize, size: usize) -> Result<()> {
    backend::tensor_get_async(non_null!(backend, "backend"), non_null!(tensor, "tensor"), data, offset, size)
}
pub fn tensor_set<R: Rev>(tensor: *mut Tensor<R>, data: *const c_void, offset: usize, size: usize) -> Result<()> {
    buffer::tensor_set(non_null!(tensor, "tensor"), data, offset, size)
}
pub fn tensor_get<R: Rev>(tensor: *const Tensor<R>, data: *mut c_void, offset: usize, size: usize) -> Result<()> {
    buffer::tensor_get(non_null!(tensor, "tensor"), data, offset, size)
}
pub fn tensor_memset<R: Rev>(tensor: *mut Tensor<R>, value: u8, offset: usize, size: usize) -> Result<()> {
    buffer::tensor_memset(non_null!(tensor, "tensor"), value, offset, size)
}
pub fn synchronize<R: Rev>(backend: *mut Backend<R>) -> Result<()> {
    non_null!(backend, "backend").synchronize();
    Ok(())
}
pub fn graph_plan_create<R: Rev>(backend: *mut Backend<R>, cgraph: *mut CGraph<R>) -> Result<GraphPlan> {
    non_null!(cgraph, "graph");
    non_null!(backend, "backend").graph_plan_create(cgraph)
}
pub fn graph_plan_free<R: Rev>(backend: *mut Backend<R>, plan: GraphPlan) -> Result<()> {
    let b = non_null!(backend, "backend");
    if plan.is_null() {
        return Ok(());
    }
    b.graph_plan_free(plan)
}
pub fn graph_plan_compute<R: Rev>(backend: *mut Backend<R>, plan: GraphPlan) -> Result<Status> {
    let b = non_null!(backend, "backend");
    ensure!(!plan.is_null(), "plan is NULL");
    b.graph_plan_compute(plan)
}
pub fn graph_compute<R: Rev>(backend: *mut Backend<R>, cgraph: *mut CGraph<R>) -> Result<Status> {
    non_null!(cgraph, "graph");
    backend::graph_compute(non_null!(backend, "backend"), cgraph)
}
pub fn graph_compute_async<R: Rev>(backend: *mut Backend<R>, cgraph: *mut CGraph<R>) -> Result<Status> {
    non_null!(cgraph, "graph");
    non_null!(backend, "backend").graph_compute(cgraph)
}
pub fn supports_op<R: Rev>(backend: *mut Backend<R>, op: *const Tensor<R>) -> Result<bool> {
    backend::supports_op(non_null!(backend, "backend"), non_null!(op, "op"))
}
pub fn supports_buft<R: Rev>(backend: *mut Backend<R>, buft: *mut BufferType<R>) -> Result<bool> {
    non_null!(buft, "buffer type");
    backend::supports_buft(non_null!(backend, "backend"), buft)
}
pub fn offload_op<R: Rev>(backend: *mut Backend<R>, op: *const Tensor<R>) -> Result<bool> {
    backend::offload_op(non_null!(backend, "backend"), non_null!(op, "op"))
}
pub fn tensor_copy_async<R: Rev>(backend_src: *mut Backend<R>, backend_dst: *mut Backend<R>, src: *const Tensor<R>, dst: *mut Tensor<R>) -> Result<()> {
    backend::tensor_copy_async(
        non_null!(backend_src, "source backend"),
        non_null!(backend_dst, "destination backend"),
        non_null!(src, "source tensor"),
        non_null!(dst, "destination tensor"),
    )
}
pub fn get_device<R: Rev>(backend: *mut Backend<R>) -> Result<*mut Device<R>> {
    Ok(non_null!(backend, "backend").device)
}

// ---------------------------------------------------------------- events

pub fn event_new<R: Rev>(device: *mut Device<R>) -> Result<*mut Event<R>> {
    Ok(event::event_new(nullable!(device)))
}
pub fn event_free<R: Rev>(e: *mut Event<R>) -> Result<()> {
    event::event_free(e)
}
pub fn event_record<R: Rev>(e: *mut Event<R>, backend: *mut Backend<R>) -> Result<()> {
    non_null!(e, "event");
    non_null!(backend, "backend").event_record(e)
}
pub fn event_synchronize<R: Rev>(e: *mut Event<R>) -> Result<()> {
    event::event_synchronize(non_null!(e, "event"))
}
pub fn event_wait<R: Rev>(backend: *mut Backend<R>, e: *mut Event<R>) -> Result<()> {
    non_null!(e, "event");
    non_null!(backend, "backend").event_wait(e)
}

// ---------------------------------------------------------------- devices

pub fn dev_name<R: Rev>(device: *mut Device<R>) -> Result<*const c_char> {
    non_null!(device, "device").name()
}
pub fn dev_description<R: Rev>(device: *mut Device<R>) -> Result<*const c_char> {
    non_null!(device, "device").description()
}
pub fn dev_memory<R: Rev>(device: *mut Device<R>, free: *mut usize, total: *mut usize) -> Result<()> {
    let (f, t) = non_null!(device, "device").memory()?;
    if !free.is_null() {
        // SAFETY: a non-NULL out-pointer C passed for the answer.
        unsafe { *free = f };
    }
    if !total.is_null() {
        // SAFETY: as above.
        unsafe { *total = t };
    }
    Ok(())
}
pub fn dev_type<R: Rev>(device: *mut Device<R>) -> Result<DevType> {
    non_null!(device, "device").type_()
}
pub fn dev_get_props<R: Rev>(device: *mut Device<R>, props: *mut DevProps<R>) -> Result<()> {
    let d = non_null!(device, "device");
    // SAFETY: an out-parameter C passed to the export, the caller's for the call.
    let Some(out) = (unsafe { obj_mut(props) }) else { bail!("props is NULL") };
    device::get_props(d, out)
}
pub fn dev_backend_reg<R: Rev>(device: *mut Device<R>) -> Result<*mut Reg<R>> {
    Ok(non_null!(device, "device").reg)
}
pub fn dev_init<R: Rev>(device: *mut Device<R>, params: *const c_char) -> Result<*mut Backend<R>> {
    non_null!(device, "device");
    registry::init_dev(device, params)
}
pub fn dev_buffer_type<R: Rev>(device: *mut Device<R>) -> Result<*mut BufferType<R>> {
    non_null!(device, "device").buffer_type()
}
pub fn dev_host_buffer_type<R: Rev>(device: *mut Device<R>) -> Result<*mut BufferType<R>> {
    Ok(non_null!(device, "device").host_buffer_type())
}
pub fn dev_buffer_from_host_ptr<R: Rev>(device: *mut Device<R>, ptr: *mut c_void, size: usize, max_tensor_size: usize) -> Result<*mut Buffer<R>> {
    let d = non_null!(device, "device");
    ensure!(!ptr.is_null(), "host pointer is NULL");
    d.buffer_from_host_ptr(ptr, size, max_tensor_size)
}
pub fn dev_supports_op<R: Rev>(device: *mut Device<R>, op: *const Tensor<R>) -> Result<bool> {
    non_null!(op, "op");
    non_null!(device, "device").supports_op(op)
}
pub fn dev_supports_buft<R: Rev>(device: *mut Device<R>, buft: *mut BufferType<R>) -> Result<bool> {
    non_null!(buft, "buffer type");
    non_null!(device, "device").supports_buft(buft)
}
pub fn dev_offload_op<R: Rev>(device: *mut Device<R>, op: *const Tensor<R>) -> Result<bool> {
    non_null!(op, "op");
    Ok(non_null!(device, "device").offload_op(op))
}

// ---------------------------------------------------------------- regs and the registry

pub fn reg_name<R: Rev>(reg: *mut Reg<R>) -> Result<*const c_char> {
    non_null!(reg, "backend reg").name()
}
pub fn reg_dev_count<R: Rev>(reg: *mut Reg<R>) -> Result<usize> {
    non_null!(reg, "backend reg").device_count()
}
pub fn reg_dev_get<R: Rev>(reg: *mut Reg<R>, index: usize) -> Result<*mut Device<R>> {
    let r = non_null!(reg, "backend reg");
    let n = r.device_count()?;
    ensure!(index < n, "device index {} out of range ({} devices)", index, n);
    r.device(index)
}
pub fn reg_get_proc_address<R: Rev>(reg: *mut Reg<R>, name: *const c_char) -> Result<*mut c_void> {
    let r = non_null!(reg, "backend reg");
    name_arg(name)?;
    Ok(r.proc_address(name))
}
pub fn reg_count<R: Rev>() -> Result<usize> {
    Ok(crate::registry::registry::<R>().reg_count())
}
pub fn reg_get<R: Rev>(index: usize) -> Result<*mut Reg<R>> {
    crate::registry::registry::<R>().reg_get(index)
}
pub fn reg_by_name<R: Rev>(name: *const c_char) -> Result<*mut Reg<R>> {
    crate::registry::registry::<R>().reg_by_name(&name_arg(name)?)
}
pub fn dev_count<R: Rev>() -> Result<usize> {
    Ok(crate::registry::registry::<R>().dev_count())
}
pub fn dev_get<R: Rev>(index: usize) -> Result<*mut Device<R>> {
    crate::registry::registry::<R>().dev_get(index)
}
pub fn dev_by_name<R: Rev>(name: *const c_char) -> Result<*mut Device<R>> {
    crate::registry::registry::<R>().dev_by_name(&name_arg(name)?)
}
pub fn dev_by_type<R: Rev>(type_: DevType) -> Result<*mut Device<R>> {
    crate::registry::registry::<R>().dev_by_type(type_)
}
pub fn init_by_name<R: Rev>(name: *const c_char, params: *const c_char) -> Result<*mut Backend<R>> {
    let dev = crate::registry::registry::<R>().dev_by_name(&name_arg(name)?)?;
    ensure!(!dev.is_null(), "no device named '{}'", cstr(name));
    registry::init_dev(dev, params)
}
pub fn init_by_type<R: Rev>(type_: DevType, params: *const c_char) -> Result<*mut Backend<R>> {
    registry::init_dev(crate::registry::registry::<R>().dev_by_type(type_)?, params)
}
pub fn init_best<R: Rev>() -> Result<*mut Backend<R>> {
    registry::init_best()
}
pub fn load<R: Rev>(path: *const c_char) -> Result<*mut Reg<R>> {
    ensure!(!path.is_null(), "path is NULL");
    loader::load::<R>(Path::new(&cstr(path)), false)
}
pub fn unload<R: Rev>(reg: *mut Reg<R>) -> Result<()> {
    non_null!(reg, "backend reg");
    // stock unloads silently when the reg is unknown
    crate::registry::registry::<R>().unregister(reg);
    Ok(())
}
pub fn load_all<R: Rev>() -> Result<()> {
    loader::load_all::<R>(None);
    Ok(())
}
pub fn load_all_from_path<R: Rev>(dir_path: *const c_char) -> Result<()> {
    let dir = (!dir_path.is_null()).then(|| cstr(dir_path));
    loader::load_all::<R>(dir.as_deref().map(Path::new));
    Ok(())
}

// ---------------------------------------------------------------- tensor placement, CPU buffers

pub fn tensor_alloc<R: Rev>(buffer: *mut Buffer<R>, tensor: *mut Tensor<R>, addr: *mut c_void) -> Result<R::InitRet> {
    Ok(R::init_ret(buffer::tensor_alloc(non_null!(buffer, "buffer"), tensor, addr)?))
}
pub fn view_init<R: Rev>(tensor: *mut Tensor<R>) -> Result<R::InitRet> {
    Ok(R::init_ret(buffer::view_init(tensor)?))
}
pub fn cpu_buffer_from_ptr<R: Rev>(ptr: *mut c_void, size: usize) -> Result<*mut Buffer<R>> {
    buffer::cpu_buffer_from_ptr(ptr, size)
}
pub fn cpu_buffer_type<R: Rev>() -> Result<*mut BufferType<R>> {
    Ok(buffer::cpu_buffer_type())
}

// ---------------------------------------------------------------- scheduler

use crate::sched::Sched;

/// `sched_mut!(ptr)`: the scheduler C passes back (one of `sched_new`'s), for the export's call.
macro_rules! sched_mut {
    ($p:expr) => {
        // SAFETY: a scheduler C got from sched_new, passed to one export at a time (ggml's
        // scheduler is not thread-safe: the caller serialises its calls).
        match unsafe { obj_mut::<Sched<R>>($p) } {
            Some(s) => s,
            None => bail!("scheduler is NULL"),
        }
    };
}

/// `graph_mut!(ptr)`: the graph C passes to a scheduler call, which may rewrite it (as stock's).
macro_rules! graph_mut {
    ($p:expr) => {
        // SAFETY: an argument C passed to the export, the caller's for the call (trust contract).
        match unsafe { obj_mut::<CGraph<R>>($p) } {
            Some(g) => g,
            None => bail!("graph is NULL"),
        }
    };
}


fn sched_new_impl<R: Rev>(
    backends: *mut *mut Backend<R>,
    bufts: *mut *mut BufferType<R>,
    n_backends: i32,
    graph_size: usize,
    parallel: bool,
    op_offload: bool,
) -> Result<*mut Sched<R>> {
    ensure!(!backends.is_null(), "backends is NULL");
    ensure!(n_backends > 0 && n_backends as usize <= crate::sched::MAX_BACKENDS, "n_backends is {}: between 1 and {} backends are supported", n_backends, crate::sched::MAX_BACKENDS);
    ensure!(graph_size > 0, "graph_size is 0");
    // SAFETY: the caller passes arrays of n_backends entries (checked non-NULL above).
    let list = unsafe { std::slice::from_raw_parts(backends, n_backends as usize) };
    // SAFETY: as above, when bufts is given.
    let bts = (!bufts.is_null()).then(|| unsafe { std::slice::from_raw_parts(bufts, n_backends as usize) });
    // SAFETY: ggml's scheduler contract: the backends (and buffer types) outlive the scheduler,
    // and a graph handed to one of its calls, with every tensor it reaches, is the caller's and
    // live until the call returns (or, for a graph it allocated, until it is computed or reset).
    let live = unsafe { crate::abi::vtable::Live::vouch() };
    Ok(Box::into_raw(Sched::new(live, list, bts, graph_size, parallel, op_offload)?))
}

/// lm has no `op_offload` parameter: it always lets a higher-priority backend offload.
pub fn sched_new<R: Rev>(backends: *mut *mut Backend<R>, bufts: *mut *mut BufferType<R>, n_backends: i32, graph_size: usize, parallel: bool) -> Result<*mut Sched<R>> {
    sched_new_impl(backends, bufts, n_backends, graph_size, parallel, true)
}
pub fn sched_new_offload<R: Rev>(
    backends: *mut *mut Backend<R>,
    bufts: *mut *mut BufferType<R>,
    n_backends: i32,
    graph_size: usize,
    parallel: bool,
    op_offload: bool,
) -> Result<*mut Sched<R>> {
    sched_new_impl(backends, bufts, n_backends, graph_size, parallel, op_offload)
}
// A NULL-checked handle from C that only `sched_new` hands out (trust model in abi::vtable).
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn sched_free<R: Rev>(sched: *mut Sched<R>) -> Result<()> {
    if !sched.is_null() {
        // SAFETY: schedulers are created by sched_new (Box::into_raw) and freed once, here.
        drop(unsafe { Box::from_raw(sched) });
    }
    Ok(())
}
pub fn sched_reserve<R: Rev>(sched: *mut Sched<R>, g: *mut CGraph<R>) -> Result<bool> {
    sched_mut!(sched).reserve(graph_mut!(g))?;
    Ok(true)
}
pub fn sched_get_n_backends<R: Rev>(sched: *mut Sched<R>) -> Result<i32> {
    Ok(sched_mut!(sched).n_backends() as i32)
}
pub fn sched_get_backend<R: Rev>(sched: *mut Sched<R>, i: i32) -> Result<*mut Backend<R>> {
    sched_mut!(sched).backend(i)
}
pub fn sched_get_n_splits<R: Rev>(sched: *mut Sched<R>) -> Result<i32> {
    Ok(sched_mut!(sched).n_splits() as i32)
}
pub fn sched_get_n_copies<R: Rev>(sched: *mut Sched<R>) -> Result<i32> {
    Ok(sched_mut!(sched).n_copies() as i32)
}
pub fn sched_get_buffer_size<R: Rev>(sched: *mut Sched<R>, backend: *mut Backend<R>) -> Result<usize> {
    sched_mut!(sched).buffer_size(backend)
}
pub fn sched_set_tensor_backend<R: Rev>(sched: *mut Sched<R>, node: *mut Tensor<R>, backend: *mut Backend<R>) -> Result<()> {
    let s = sched_mut!(sched);
    s.set_tensor_backend(non_null!(node, "node"), backend)
}
pub fn sched_get_tensor_backend<R: Rev>(sched: *mut Sched<R>, node: *mut Tensor<R>) -> Result<*mut Backend<R>> {
    let s = sched_mut!(sched);
    non_null!(node, "node");
    Ok(s.reported_backend(node))
}
pub fn sched_alloc_graph<R: Rev>(sched: *mut Sched<R>, g: *mut CGraph<R>) -> Result<bool> {
    sched_mut!(sched).alloc_graph(graph_mut!(g))?;
    Ok(true)
}
pub fn sched_graph_compute<R: Rev>(sched: *mut Sched<R>, g: *mut CGraph<R>) -> Result<Status> {
    let s = sched_mut!(sched);
    let st = s.graph_compute_async(graph_mut!(g))?;
    s.synchronize();
    Ok(st)
}
pub fn sched_graph_compute_async<R: Rev>(sched: *mut Sched<R>, g: *mut CGraph<R>) -> Result<Status> {
    sched_mut!(sched).graph_compute_async(graph_mut!(g))
}
pub fn sched_synchronize<R: Rev>(sched: *mut Sched<R>) -> Result<()> {
    sched_mut!(sched).synchronize();
    Ok(())
}
pub fn sched_reset<R: Rev>(sched: *mut Sched<R>) -> Result<()> {
    sched_mut!(sched).reset();
    Ok(())
}
pub fn sched_set_eval_callback<R: Rev>(sched: *mut Sched<R>, callback: SchedEvalCallback<R>, user_data: *mut c_void) -> Result<()> {
    let s = sched_mut!(sched);
    s.set_eval_callback(callback, user_data);
    Ok(())
}

// ---------------------------------------------------------------- graph utilities

pub fn graph_copy<R: Rev>(backend: *mut Backend<R>, g: *mut CGraph<R>) -> Result<GraphCopy<R>> {
    crate::graph::graph_copy(non_null!(backend, "backend"), graph_mut!(g))
}
pub fn graph_copy_free<R: Rev>(copy: GraphCopy<R>) -> Result<()> {
    crate::graph::graph_copy_free(copy)
}
pub fn compare_graph_backend<R: Rev>(
    backend1: *mut Backend<R>,
    backend2: *mut Backend<R>,
    g: *mut CGraph<R>,
    callback: CompareCallback<R>,
    user_data: *mut c_void,
) -> Result<bool> {
    let Some(cb) = callback else { bail!("callback is NULL") };
    crate::graph::compare_graph_backend(non_null!(backend1, "backend1"), non_null!(backend2, "backend2"), graph_mut!(g), cb, user_data, &[])
}
/// wsp: the spec declares five parameters, whisper.rn 0.4.3's own header a sixth, `test_node`,
/// and callers of both kinds exist. The export takes six (the header stays at five, see
/// exports.list). A caller that passed five leaves an indeterminate value in the sixth
/// argument's place: on x86_64 SysV (r9) and AArch64 AAPCS (x5) a register, on 32-bit ARM and
/// x86 a stack slot in the caller's own frame, so reading it never faults. The value is only
/// compared with the graph's node pointers, never dereferenced: when it equals one, the caller
/// meant it (0.4.3's behaviour for that node), otherwise it is the spec's five-parameter call.
pub fn compare_graph_backend_test_node<R: Rev>(
    backend1: *mut Backend<R>,
    backend2: *mut Backend<R>,
    g: *mut CGraph<R>,
    callback: CompareCallback<R>,
    user_data: *mut c_void,
    test_node: *mut Tensor<R>,
) -> Result<bool> {
    let Some(cb) = callback else { bail!("callback is NULL") };
    let graph = graph_mut!(g);
    let index = if test_node.is_null() { None } else { graph.nodes().iter().position(|&n| n == test_node) };
    crate::graph::compare_graph_backend(non_null!(backend1, "backend1"), non_null!(backend2, "backend2"), graph, cb, user_data, index.as_slice())
}

/// 2026: with `num_test_nodes > 0` the whole graph is computed on both backends and the callback
/// sees each listed node (graph order, a node listed twice twice); stock aborts when none of the
/// list is in the graph, we return false with a log line.
#[allow(clippy::not_unsafe_ptr_arg_deref)] // the list is read as the C caller's contract says (see sched_reserve_size)
pub fn compare_graph_backend_test_nodes<R: Rev>(
    backend1: *mut Backend<R>,
    backend2: *mut Backend<R>,
    g: *mut CGraph<R>,
    callback: CompareCallback<R>,
    user_data: *mut c_void,
    test_nodes: *const *const Tensor<R>,
    num_test_nodes: usize,
) -> Result<bool> {
    let Some(cb) = callback else { bail!("callback is NULL") };
    let graph = graph_mut!(g);
    let (b1, b2) = (non_null!(backend1, "backend1"), non_null!(backend2, "backend2"));
    if num_test_nodes == 0 {
        return crate::graph::compare_graph_backend(b1, b2, graph, cb, user_data, &[]);
    }
    ensure!(!test_nodes.is_null(), "test_nodes is NULL with num_test_nodes {}", num_test_nodes);
    // SAFETY: the caller passes num_test_nodes pointers; only compared, never dereferenced.
    let list = unsafe { std::slice::from_raw_parts(test_nodes, num_test_nodes) };
    let picked: Vec<usize> = graph
        .nodes()
        .iter()
        .enumerate()
        .flat_map(|(i, &n)| list.iter().filter(move |&&t| std::ptr::eq(t, n)).map(move |_| i))
        .collect();
    ensure!(!picked.is_empty(), "none of the {} test nodes is in the graph", num_test_nodes);
    crate::graph::compare_graph_backend(b1, b2, graph, cb, user_data, &picked)
}

// ---------------------------------------------------------------- 2-D transfers (2026)

#[allow(clippy::too_many_arguments)]
fn rows(offset: usize, size: usize, n_copies: usize, stride_tensor: usize, stride_data: usize) -> crate::tensor_2d::Rows {
    crate::tensor_2d::Rows { offset, size, n: n_copies, stride_tensor, stride_data }
}
#[allow(clippy::too_many_arguments)]
pub fn tensor_set_2d<R: Rev>(tensor: *mut Tensor<R>, data: *const c_void, offset: usize, size: usize, n_copies: usize, stride_tensor: usize, stride_data: usize) -> Result<()> {
    if n_copies == 0 {
        return Ok(()); // stock: nothing, whatever the tensor
    }
    crate::tensor_2d::tensor_set_2d(non_null!(tensor, "tensor"), data, rows(offset, size, n_copies, stride_tensor, stride_data))
}
#[allow(clippy::too_many_arguments)]
pub fn tensor_get_2d<R: Rev>(tensor: *const Tensor<R>, data: *mut c_void, offset: usize, size: usize, n_copies: usize, stride_tensor: usize, stride_data: usize) -> Result<()> {
    if n_copies == 0 {
        return Ok(());
    }
    crate::tensor_2d::tensor_get_2d(non_null!(tensor, "tensor"), data, rows(offset, size, n_copies, stride_tensor, stride_data))
}
#[allow(clippy::too_many_arguments)]
pub fn tensor_set_2d_async<R: Rev>(backend: *mut Backend<R>, tensor: *mut Tensor<R>, data: *const c_void, offset: usize, size: usize, n_copies: usize, stride_tensor: usize, stride_data: usize) -> Result<()> {
    crate::tensor_2d::tensor_set_2d_async(non_null!(backend, "backend"), non_null!(tensor, "tensor"), data, rows(offset, size, n_copies, stride_tensor, stride_data))
}
#[allow(clippy::too_many_arguments)]
pub fn tensor_get_2d_async<R: Rev>(backend: *mut Backend<R>, tensor: *const Tensor<R>, data: *mut c_void, offset: usize, size: usize, n_copies: usize, stride_tensor: usize, stride_data: usize) -> Result<()> {
    crate::tensor_2d::tensor_get_2d_async(non_null!(backend, "backend"), non_null!(tensor, "tensor"), data, rows(offset, size, n_copies, stride_tensor, stride_data))
}

// ---------------------------------------------------------------- scheduler additions (2026)

// `sizes` is written through as the C caller's contract says, like every pointer this module is
// handed (the exports are the unsafe boundary; these functions check what can be checked).
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn sched_reserve_size<R: Rev>(sched: *mut Sched<R>, g: *mut CGraph<R>, sizes: *mut usize) -> Result<()> {
    let s = sched_mut!(sched);
    ensure!(!sizes.is_null(), "sizes is NULL");
    let got = s.reserve_size(graph_mut!(g))?;
    // SAFETY: the caller passes one size_t per backend of the scheduler (stock's contract).
    unsafe { std::ptr::copy_nonoverlapping(got.as_ptr(), sizes, got.len()) };
    Ok(())
}
pub fn sched_get_buffer_type<R: Rev>(sched: *mut Sched<R>, backend: *mut Backend<R>) -> Result<*mut BufferType<R>> {
    sched_mut!(sched).buffer_type(backend)
}
pub fn sched_split_graph<R: Rev>(sched: *mut Sched<R>, g: *mut CGraph<R>) -> Result<()> {
    sched_mut!(sched).split_graph_public(graph_mut!(g))
}

// ---------------------------------------------------------------- the SIMD backend

#[cfg(feature = "simd")]
pub fn simd_reg<R: Rev>() -> Result<*mut Reg<R>> {
    Ok(crate::simd::device::statics::<R>().reg.0)
}
#[cfg(feature = "simd")]
pub fn simd_init<R: Rev>() -> Result<*mut Backend<R>> {
    Ok(crate::simd::device::init::<R>())
}
#[cfg(feature = "simd")]
pub fn is_simd<R: Rev>(backend: *mut Backend<R>) -> Result<bool> {
    Ok(nullable!(backend).is_some_and(crate::simd::device::is_simd))
}
// built without SIMD (cargo feature "simd" off): the exports stay (same ABI), saying so
#[cfg(not(feature = "simd"))]
pub fn simd_reg<R: Rev>() -> Result<*mut Reg<R>> {
    bail!("this build has no SIMD backend (cargo feature \"simd\" off)")
}
#[cfg(not(feature = "simd"))]
pub fn simd_init<R: Rev>() -> Result<*mut Backend<R>> {
    bail!("this build has no SIMD backend (cargo feature \"simd\" off)")
}
#[cfg(not(feature = "simd"))]
pub fn is_simd<R: Rev>(backend: *mut Backend<R>) -> Result<bool> {
    let _ = backend;
    Ok(false)
}
