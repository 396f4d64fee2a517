//! The SIMD backend as ggml sees it: a registry entry ("SIMD") with one device and backends
//! (streams) computing graphs with `exec`, in host memory.
//!
//! Its buffer type is the CPU host buffer type: SIMD computes where ggml-cpu does, so the
//! scheduler can move any CPU node to it without copies. Which device type it reports is decided
//! when the registry is built: CPU when the host links no CPU backend, ACCEL (opt-in with
//! `GGML_RS_SIMD=1`) beside the host's ggml-cpu.

use super::exec;
use super::pool::Pool;
use crate::abi::vtable::{cstr, obj};
use crate::abi::*;
use crate::buffer::Ptr;
use parking_lot::Mutex;
use std::ffi::{c_char, c_void, CString};
use std::sync::atomic::{AtomicI32, Ordering};

pub const NAME: &std::ffi::CStr = c"SIMD";

/// The revision's SIMD reg and device, built once, never freed (C keeps pointers to them).
static SIMD_STATICS: crate::per_rev::PerRev = crate::per_rev::PerRev::new();

/// The SIMD reg, device and settings of revision `R`, built on first use.
pub fn statics<R: Rev>() -> &'static SimdStatics<R> {
    SIMD_STATICS.get::<R, _>(SimdStatics::new)
}

pub struct SimdStatics<R: Rev> {
    pub reg: Ptr<Reg<R>>,
    pub dev: Ptr<Device<R>>,
    dev_type: AtomicI32,
    description: CString,
    set_n_threads_name: CString,
    set_abort_name: CString,
}

// SAFETY: the reg/device are leaked, immutable after construction; the type is atomic.
unsafe impl<R: Rev> Send for SimdStatics<R> {}
// SAFETY: as above.
unsafe impl<R: Rev> Sync for SimdStatics<R> {}

impl<R: Rev> Default for SimdStatics<R> {
    fn default() -> Self {
        Self::new()
    }
}

impl<R: Rev> SimdStatics<R> {
    pub fn new() -> Self {
        let dev = Box::into_raw(Box::new(Device {
            iface: DeviceI {
                get_name: Some(dev_name::<R>),
                get_description: Some(dev_description::<R>),
                get_memory: Some(dev_memory::<R>),
                get_type: Some(dev_type::<R>),
                get_props: Some(dev_props::<R>),
                init_backend: Some(dev_init::<R>),
                get_buffer_type: Some(dev_buffer_type::<R>),
                get_host_buffer_type: None,
                buffer_from_host_ptr: Some(dev_buffer_from_host_ptr::<R>),
                supports_op: Some(dev_supports_op::<R>),
                supports_buft: Some(dev_supports_buft::<R>),
                offload_op: None,
                event_new: None,
                event_free: None,
                event_synchronize: None,
            },
            reg: std::ptr::null_mut(),
            context: std::ptr::null_mut(),
        }));
        let reg = Box::into_raw(Box::new(Reg {
            header: R::reg_header(),
            iface: RegI {
                get_name: Some(reg_name::<R>),
                get_device_count: Some(reg_device_count::<R>),
                get_device: Some(reg_device::<R>),
                get_proc_address: Some(reg_proc_address::<R>),
            },
            context: std::ptr::null_mut(),
        }));
        // SAFETY: both were just leaked from boxes and are not shared yet.
        unsafe { (*dev).reg = reg };
        let level = crate::simd::cpu_features::simd_level();
        SimdStatics {
            reg: Ptr(reg),
            dev: Ptr(dev),
            dev_type: AtomicI32::new(DEV_TYPE_CPU),
            description: CString::new(format!("ggml-backend-rs SIMD CPU ({})", level.name())).unwrap_or_default(),
            set_n_threads_name: CString::new(format!("{}ggml_backend_set_n_threads", R::PREFIX)).unwrap(),
            set_abort_name: CString::new(format!("{}ggml_backend_set_abort_callback", R::PREFIX)).unwrap(),
        }
    }

    pub fn set_dev_type(&self, t: DevType) {
        self.dev_type.store(t, Ordering::Relaxed);
    }
}

/// One SIMD stream: its thread pool and wsp's abort callback.
pub struct SimdContext {
    pool: Mutex<Pool>,
    abort: Mutex<(Option<unsafe extern "C" fn(*mut c_void) -> bool>, usize)>,
}

/// ggml-cpu's default is 4 threads; never more than the machine has.
fn default_threads() -> usize {
    ggml_rs_kernels::pool::cpu_count().min(4)
}

/// Identifies SIMD streams (`ggml_backend_guid`), and lets `is_simd` recognise them.
static GUID: [u8; 16] = *b"ggml-rs-SIMD-v01";

pub fn init<R: Rev>() -> *mut Backend<R> {
    let ctx = Box::new(SimdContext { pool: Mutex::new(Pool::new(default_threads())), abort: Mutex::new((None, 0)) });
    Box::into_raw(Box::new(Backend {
        guid: crate::abi::vtable::c_handle(&GUID),
        iface: BackendI {
            get_name: Some(backend_name::<R>),
            free: Some(backend_free::<R>),
            set_tensor_async: None,
            get_tensor_async: None,
            tensor_2d_async: R::BACKEND_2D_NONE,
            cpy_tensor_async: None,
            synchronize: None,
            graph_plan_create: None,
            graph_plan_free: None,
            graph_plan_update: None,
            graph_plan_compute: None,
            graph_compute: Some(backend_graph_compute::<R>),
            event_record: None,
            event_wait: None,
            graph_optimize: R::GRAPH_OPTIMIZE_NONE,
        },
        device: crate::simd::device::statics::<R>().dev.0,
        context: Box::into_raw(ctx) as *mut c_void,
    }))
}

pub fn is_simd<R: Rev>(b: &Backend<R>) -> bool {
    // the guid first: asking for the statics builds them, and a scheduler created on a thread of
    // its own with CPU backends only must not be the one to do it (helgrind, threads.c part B)
    std::ptr::eq(b.guid, &GUID) && b.device == crate::simd::device::statics::<R>().dev.0
}

/// A SIMD backend's context, borrowed for as long as the backend is.
fn context<R: Rev>(be: &Backend<R>) -> Option<&SimdContext> {
    // SAFETY: a SIMD backend's context is the Box<SimdContext> of `init`, freed only with it (the
    // callers know `be` is one: it passed `is_simd` or it is the `self` of our own vtable).
    unsafe { obj(be.context as *const SimdContext) }
}

fn set_n_threads<R: Rev>(be: Option<&Backend<R>>, n: i32) -> crate::error::Result<()> {
    let Some(be) = be else { crate::bail!("backend is NULL") };
    crate::ensure!(is_simd(be), "backend is not a SIMD backend");
    crate::ensure!(n > 0, "n_threads must be positive, got {}", n);
    let ctx = context(be).unwrap();
    let mut pool = ctx.pool.lock();
    if pool.n_threads() != n as usize {
        *pool = Pool::new(n as usize);
    }
    Ok(())
}

// ---------------------------------------------------------------- vtables (called by C)

unsafe extern "C" fn reg_name<R: Rev>(_: *mut Reg<R>) -> *const c_char {
    crate::guard::callback::<R, _>("simd_reg.get_name", std::ptr::null(), || {
        NAME.as_ptr()
    })
}
unsafe extern "C" fn reg_device_count<R: Rev>(_: *mut Reg<R>) -> usize {
    crate::guard::callback::<R, _>("simd_reg.get_device_count", 0, || {
        1
    })
}
unsafe extern "C" fn reg_device<R: Rev>(_: *mut Reg<R>, i: usize) -> *mut Device<R> {
    crate::guard::callback::<R, _>("simd_reg.get_device", std::ptr::null_mut(), || {
        if i == 0 {
            crate::simd::device::statics::<R>().dev.0
        } else {
            std::ptr::null_mut()
        }
    })
}
unsafe extern "C" fn reg_proc_address<R: Rev>(_: *mut Reg<R>, name: *const c_char) -> *mut c_void {
    crate::guard::callback::<R, _>("simd_reg.get_proc_address", std::ptr::null_mut(), || {
        let n = cstr(name);
        let s = crate::simd::device::statics::<R>();
        if n == s.set_n_threads_name.to_str().unwrap_or("") {
            proc_set_n_threads::<R> as *mut c_void
        } else if n == s.set_abort_name.to_str().unwrap_or("") {
            proc_set_abort_callback::<R> as *mut c_void
        } else {
            std::ptr::null_mut()
        }
    })
}
unsafe extern "C" fn proc_set_n_threads<R: Rev>(b: *mut Backend<R>, n: i32) {
    crate::guard::guard::<R, _>("ggml_backend_simd_set_n_threads", (), || {
        // SAFETY: NULL or a live backend C passed to the entry (trust contract), for the call.
        set_n_threads(unsafe { obj(b) }, n)
    })
}
unsafe extern "C" fn proc_set_abort_callback<R: Rev>(b: *mut Backend<R>, cb: Option<unsafe extern "C" fn(*mut c_void) -> bool>, data: *mut c_void) {
    crate::guard::guard::<R, _>("ggml_backend_simd_set_abort_callback", (), || {
        // SAFETY: as in proc_set_n_threads.
        match unsafe { obj(b) }.filter(|&be| is_simd(be)).and_then(context) {
            Some(ctx) => *ctx.abort.lock() = (cb, data as usize),
            _ => crate::bail!("backend is not a SIMD backend"),
        }
        Ok(())
    })
}

unsafe extern "C" fn dev_name<R: Rev>(_: *mut Device<R>) -> *const c_char {
    crate::guard::callback::<R, _>("simd_device.get_name", std::ptr::null(), || {
        NAME.as_ptr()
    })
}
unsafe extern "C" fn dev_description<R: Rev>(_: *mut Device<R>) -> *const c_char {
    crate::guard::callback::<R, _>("simd_device.get_description", std::ptr::null(), || {
        crate::simd::device::statics::<R>().description.as_ptr()
    })
}
fn meminfo() -> (usize, usize) {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let field = |k: &str| {
        text.lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<usize>().ok())
            .map(|kb| kb * 1024)
            .unwrap_or(0)
    };
    (field("MemAvailable:"), field("MemTotal:"))
}
unsafe extern "C" fn dev_memory<R: Rev>(_: *mut Device<R>, free: *mut usize, total: *mut usize) {
    crate::guard::callback::<R, _>("simd_device.get_memory", (), || {
        let (f, t) = meminfo();
        if !free.is_null() {
            // SAFETY: a non-NULL out-pointer C passed for the answer.
            unsafe { *free = f };
        }
        if !total.is_null() {
            // SAFETY: as above.
            unsafe { *total = t };
        }
    })
}
unsafe extern "C" fn dev_type<R: Rev>(_: *mut Device<R>) -> DevType {
    crate::guard::callback::<R, _>("simd_device.get_type", DEV_TYPE_CPU, || {
        crate::simd::device::statics::<R>().dev_type.load(Ordering::Relaxed)
    })
}
unsafe extern "C" fn dev_props<R: Rev>(d: *mut Device<R>, props: *mut DevProps<R>) {
    crate::guard::callback::<R, _>("simd_device.get_props", (), || {
        // SAFETY: NULL or the out-parameter C passed for the answer, ours for the call.
        let Some(p) = (unsafe { crate::abi::vtable::obj_mut(props) }) else { return };
        let (f, t) = meminfo();
        // SAFETY: plain getters of this module.
        unsafe {
            *p = DevProps {
                name: dev_name(d),
                description: dev_description(d),
                memory_free: f,
                memory_total: t,
                type_: dev_type(d),
                device_id: R::DEVICE_ID_NONE,
                caps: DevCaps { async_: false, host_buffer: false, buffer_from_host_ptr: true, events: false },
                // host memory: a model file mapped into it can be used in place
                caps_extra: R::caps_extra(true),
            };
        }
    })
}
unsafe extern "C" fn dev_init<R: Rev>(_: *mut Device<R>, _params: *const c_char) -> *mut Backend<R> {
    crate::guard::callback::<R, _>("simd_device.init_backend", std::ptr::null_mut(), || {
        init::<R>()
    })
}
unsafe extern "C" fn dev_buffer_type<R: Rev>(_: *mut Device<R>) -> *mut BufferType<R> {
    crate::guard::callback::<R, _>("simd_device.get_buffer_type", std::ptr::null_mut(), || {
        crate::buffer::cpu_buffer_type::<R>()
    })
}
unsafe extern "C" fn dev_buffer_from_host_ptr<R: Rev>(_: *mut Device<R>, ptr: *mut c_void, size: usize, _max: usize) -> *mut Buffer<R> {
    crate::guard::guard::<R, _>("ggml_backend_simd_buffer_from_host_ptr", std::ptr::null_mut(), || crate::buffer::cpu_buffer_from_ptr(ptr, size))
}
unsafe extern "C" fn dev_supports_op<R: Rev>(_: *mut Device<R>, op: *const Tensor<R>) -> bool {
    crate::guard::callback::<R, _>("simd_device.supports_op", false, || {
        // a kind this host's ggml-cpu computes in another float order is left to it (fidelity.rs);
        // asked here, where the scheduler places nodes, so a graph given to SIMD directly still runs
        // SAFETY: the tensor C asks about (trust contract).
        unsafe { obj(op) }.is_some_and(|t| exec::supports(t) && !super::fidelity::declines(t, &super::node::node(t)))
    })
}
unsafe extern "C" fn dev_supports_buft<R: Rev>(_: *mut Device<R>, buft: *mut BufferType<R>) -> bool {
    crate::guard::callback::<R, _>("simd_device.supports_buft", false, || {
        // ggml-cpu's CPU_REPACK too: host memory in ggml-cpu's repacked layouts, which the
        // scheduler must not copy for SIMD (the bytes are no ggml rows, the buffer has no
        // get_tensor); `supports_op` takes only the nodes SIMD computes on them
        // (ops::mul_mat::repacked) and declines every other node reading them (node::repack)
        // SAFETY: the buffer type C asks about (trust contract).
        unsafe { obj(buft) }.is_some_and(|b| b.is_host() || b.name().ok().map(crate::abi::vtable::cstr).as_deref() == Some("CPU_REPACK"))
    })
}

unsafe extern "C" fn backend_name<R: Rev>(_: *mut Backend<R>) -> *const c_char {
    crate::guard::callback::<R, _>("simd_backend.get_name", std::ptr::null(), || {
        NAME.as_ptr()
    })
}
unsafe extern "C" fn backend_free<R: Rev>(b: *mut Backend<R>) {
    crate::guard::callback::<R, _>("simd_backend.free", (), || {
        if b.is_null() {
            return;
        }
        if super::profile::enabled() {
            super::profile::dump();
        }
        // SAFETY: SIMD backends are made by `init` (Box::into_raw, context too) and freed once, here.
        unsafe {
            let be = Box::from_raw(b);
            if !be.context.is_null() {
                drop(Box::from_raw(be.context as *mut SimdContext));
            }
        }
    })
}
unsafe extern "C" fn backend_graph_compute<R: Rev>(b: *mut Backend<R>, g: *mut CGraph<R>) -> Status {
    crate::guard::guard::<R, _>("ggml_backend_simd_graph_compute", STATUS_FAILED, || {
        // SAFETY: C calls our vtable with our backend (trust contract).
        let Some(ctx) = unsafe { obj(b) }.and_then(context) else { crate::bail!("backend is NULL") };
        // SAFETY: the graph C passes to its backend's graph_compute (trust contract).
        let Some(graph) = (unsafe { obj(g) }) else { crate::bail!("graph is NULL") };
        let (cb, data) = *ctx.abort.lock();
        // SAFETY: the app registered the callback with this data pointer.
        let abort = || cb.is_some_and(|f| unsafe { f(data as *mut c_void) });
        let pool = ctx.pool.lock();
        let session = pool.session();
        exec::compute_graph(&session, graph, &abort)
    })
}
