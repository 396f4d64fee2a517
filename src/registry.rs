//! The backend registry: registered backends (regs) and their devices, in stock's order.
//!
//! Built once per revision on first use (a `Lazy`, so first use from many threads at once is
//! safe). Host backends are found through weak references (`host.rs`) and registered in stock's
//! order, CPU last. Foreign code (a reg's vtable) is never called with the lock held.

use crate::abi::vtable::{cstr, obj};
use crate::abi::*;
use crate::buffer::Ptr;
use crate::error::Result;
use crate::dl::DlHandle;
use crate::{bail, ensure};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::ffi::c_char;

/// A listed reg or device, borrowed for as long as its entry is.
fn listed<T>(p: &Ptr<T>) -> Option<&T> {
    // SAFETY: the lists hold only regs and devices registered with us (or the SIMD backend's
    // statics), which stay live until they are unregistered, which also drops the entry.
    unsafe { obj(p.0) }
}

struct Entry<R: Rev> {
    reg: Ptr<Reg<R>>,
    /// The library a dynamically loaded backend came from; held only to be dropped (dlclose)
    /// when the entry is removed on unload.
    _handle: Option<DlHandle>,
}

struct State<R: Rev> {
    backends: Vec<Entry<R>>,
    devices: Vec<Ptr<Device<R>>>,
    /// The SIMD backend is listed as the CPU device because the program links no ggml-cpu. It
    /// steps aside when a backend with a CPU device is registered later: a program built with
    /// `GGML_BACKEND_DL` loads ggml-cpu as a module (`load_all`), and then has stock's devices.
    stand_in: bool,
}

pub struct Registry<R: Rev> {
    state: Mutex<State<R>>,
    /// mirrors of the list lengths, read without the lock (hosts ask for the counts in hot loops)
    n_regs: AtomicUsize,
    n_devs: AtomicUsize,
    /// The "no ggml-cpu" warning is owed: said at the first device or backend lookup made while
    /// SIMD still stands in, so a program that loads ggml-cpu as a module first never sees it.
    warning_owed: AtomicBool,
}

/// What a probe of a GPU-type device allocates (and frees at once) from its buffer type.
const PROBE_ALLOC: usize = 256;

/// Asks a reg for its devices (foreign calls, made before taking the lock, each through the
/// C++ trampolines of `host_try`). A device that fails [`check_device`] is left out with one
/// warning and the others are kept. `Err` (nothing registered) when the reg cannot say how many
/// devices it has; `Ok(None)` when it has some and every one was left out (already said: the reg
/// is left out without another line).
fn devices_of<R: Rev>(reg: &Reg<R>, who: &str) -> Result<Option<Vec<Ptr<Device<R>>>>> {
    let n = reg.device_count()?;
    let mut devs = Vec::with_capacity(n);
    for i in 0..n {
        match check_device(reg, i) {
            Ok(d) => devs.push(Ptr(d)),
            Err(e) => crate::log_at!(R, Warn, "ggml_backend_registry",
                "leaving out device {} of backend {}: {}; the app runs without it", i, who, e),
        }
    }
    Ok((n == 0 || !devs.is_empty()).then_some(devs))
}

/// Device `i` of `reg`, if it passes what a device must to be offered to the app: it exists
/// (`get_device` returns it without throwing) and, for a GPU-type device (which has memory of its
/// own), it reports some memory and allocates a small buffer. CPU-type and accelerator devices
/// (ggml-cpu, BLAS, AMX, the SIMD backend) share the host's memory and may report none (old
/// ggml-cpu and ggml-blas report 0): only their existence is checked.
fn check_device<R: Rev>(reg: &Reg<R>, i: usize) -> Result<*mut Device<R>> {
    let d = reg.device(i)?;
    // SAFETY: a device its reg returned: NULL or live while the reg is (trust contract).
    let Some(dev) = (unsafe { obj(d) }) else { return Err(DeviceFault::Null.explain(String::new())) };
    let ty = dev.type_()?;
    if ty != DEV_TYPE_GPU && Some(ty) != R::DEV_TYPE_IGPU {
        return Ok(d);
    }
    let name = || dev.name().map(cstr).unwrap_or_default();
    let (_, total) = dev.memory()?;
    if total == 0 {
        return Err(DeviceFault::NoMemory.explain(name()));
    }
    let Some(bt) = dev.buffer_type_ref()? else { return Err(DeviceFault::NoBufferType.explain(name())) };
    let buf = bt.alloc(PROBE_ALLOC)?;
    if buf.is_null() {
        return Err(DeviceFault::AllocFailed.explain(name()));
    }
    crate::buffer::buffer_free(buf);
    Ok(d)
}

/// Why [`check_device`] leaves a device out; the message is formed here, once for every revision
/// (the phone library carries the registry for two).
enum DeviceFault {
    Null,
    NoMemory,
    NoBufferType,
    AllocFailed,
}

impl DeviceFault {
    #[inline(never)]
    fn explain(self, name: String) -> crate::error::Error {
        crate::error::Error(match self {
            DeviceFault::Null => "get_device returned NULL".into(),
            DeviceFault::NoMemory => format!("{} reports no memory (total 0)", name),
            DeviceFault::NoBufferType => format!("{} has no buffer type (get_buffer_type returned NULL)", name),
            DeviceFault::AllocFailed => format!("{}: its first buffer allocation ({} bytes) failed", name, PROBE_ALLOC),
        })
    }
}

static REGISTRIES: crate::per_rev::PerRev = crate::per_rev::PerRev::new();

/// Revision `R`'s registry, built on first use (concurrent first uses build it once).
pub fn registry<R: Rev>() -> &'static Registry<R> {
    REGISTRIES.get::<R, _>(Registry::new)
}

impl<R: Rev> Registry<R> {
    // no `Default`: this probes the host's backends and is meant to run once per revision (its Lazy static)
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        let mut state = State { backends: Vec::new(), devices: Vec::new(), stand_in: false };
        let regs = &crate::host::host::<R>().backend_regs;
        let host_has_cpu = regs.iter().any(|(name, _)| *name == "cpu");
        let simd_opt_in = std::env::var("GGML_RS_SIMD").is_ok_and(|v| v.trim() == "1");
        #[cfg(feature = "simd")]
        let add_simd = |state: &mut State<R>, dev_type: DevType| {
            let simd = crate::simd::device::statics::<R>();
            simd.set_dev_type(dev_type);
            state.backends.push(Entry { reg: simd.reg, _handle: None });
            state.devices.push(simd.dev);
        };
        // built without SIMD (cargo feature "simd" off): no SIMD device, as stock
        #[cfg(not(feature = "simd"))]
        let add_simd = |_: &mut State<R>, _: DevType| {};
        for (name, reg_fn) in regs {
            if *name == "cpu" && simd_opt_in {
                // beside ggml-cpu, as an accelerator ahead of it (where stock puts BLAS)
                add_simd(&mut state, R::DEV_TYPE_ACCEL);
            }
            // SAFETY: a host's `<p>ggml_backend_<x>_reg` takes nothing and returns its static reg or
            // NULL; a C++ exception thrown by it stops in host_try.cpp.
            let reg = match unsafe { crate::host_try::call0(*reg_fn) } {
                Ok(reg) => reg,
                Err(e) => {
                    crate::log_at!(R, Warn, "ggml_backend_registry",
                        "leaving out host backend {}: {}ggml_backend_{}_reg() {}; the app runs without it", name, R::PREFIX, name, e);
                    continue;
                }
            };
            // SAFETY: a host's reg function returns NULL or its static reg (trust contract).
            let Some(r) = (unsafe { obj(reg) }) else {
                crate::log_at!(R, Warn, "ggml_backend_registry",
                    "leaving out host backend {}: {}ggml_backend_{}_reg() returned NULL; the app runs without it", name, R::PREFIX, name);
                continue;
            };
            match devices_of(r, name) {
                Ok(None) => {}
                Ok(Some(devs)) => {
                    state.backends.push(Entry { reg: Ptr(reg), _handle: None });
                    state.devices.extend(devs);
                }
                Err(e) => crate::log_at!(R, Warn, "ggml_backend_registry",
                    "leaving out host backend {}: {}; the app runs without it", name, e),
            }
        }
        if !host_has_cpu {
            // no ggml-cpu linked: SIMD is the CPU device, so init_best() and the scheduler work
            add_simd(&mut state, DEV_TYPE_CPU);
            state.stand_in = cfg!(feature = "simd");
        }
        let (n_regs, n_devs) = (AtomicUsize::new(state.backends.len()), AtomicUsize::new(state.devices.len()));
        Registry { state: Mutex::new(state), n_regs, n_devs, warning_owed: AtomicBool::new(!host_has_cpu) }
    }

    /// Says, once, that the program links no ggml-cpu, if that is still so at the first lookup.
    /// Either the program has no ggml-cpu at all (a C program on ggml's core and our SIMD backend)
    /// or a static archive's ggml-cpu was never pulled into the link: a weak reference pulls no
    /// archive member. The second loses the app its CPU backend without a word from stock's point
    /// of view, so say how to keep it.
    #[inline]
    fn settle(&self) {
        if self.warning_owed.load(Ordering::Relaxed) {
            self.warn_no_cpu();
        }
    }

    #[cold]
    #[inline(never)]
    fn warn_no_cpu(&self) {
        if self.warning_owed.swap(false, Ordering::AcqRel) {
            crate::log_at!(R, Warn, "ggml_backend_registry",
                "this program links no {p}ggml_backend_cpu_reg, so ggml-cpu is not registered{simd}. If the host \
                 compiles ggml-cpu into a static archive, build the host with ggml-backend-rs's ggml-backend.h and \
                 -D{e}GGML_USE_CPU (its link anchors keep ggml-cpu in the link) or link that archive whole \
                 (-Wl,--whole-archive with GNU ld / lld, -Wl,-force_load with Apple's ld)",
                p = R::PREFIX, e = R::ENV_PREFIX,
                simd = if cfg!(feature = "simd") { "; the library's SIMD backend stands in as the CPU device" } else { "" });
        }
    }

    /// A backend bringing a CPU device was registered: the SIMD stand-in leaves the lists (its
    /// reg and device stay valid for whoever already holds them).
    #[cfg(feature = "simd")]
    fn retire_stand_in(&self, st: &mut State<R>) -> bool {
        if !st.stand_in {
            return false;
        }
        let simd = crate::simd::device::statics::<R>();
        st.backends.retain(|e| e.reg.0 != simd.reg.0);
        st.devices.retain(|d| d.0 != simd.dev.0);
        st.stand_in = false;
        self.warning_owed.store(false, Ordering::Release);
        true
    }
    #[cfg(not(feature = "simd"))]
    fn retire_stand_in(&self, _: &mut State<R>) -> bool {
        self.warning_owed.store(false, Ordering::Release);
        false
    }

    /// Registers a reg and the devices of it that pass [`check_device`]. A NULL reg is nothing to
    /// register (stock ignores it too: llama.cpp registers what `ggml_backend_rpc_add_server`
    /// returned, NULL when the server is unreachable), so it is a silent no-op.
    fn add(&self, reg: *mut Reg<R>, handle: Option<DlHandle>) -> Result<()> {
        // SAFETY: a reg C registers: NULL or live until it is unregistered (trust contract).
        let Some(r) = (unsafe { obj(reg) }) else {
            crate::log_at!(R, Debug, "ggml_backend_register", "backend reg is NULL: nothing registered");
            return Ok(());
        };
        let who = r.name().map(cstr).unwrap_or_else(|_| "(unnamed)".into());
        let devs = match devices_of(r, &who) {
            Ok(Some(devs)) => devs,
            Ok(None) => return Ok(()),
            Err(e) => {
                crate::log_at!(R, Warn, "ggml_backend_register",
                    "leaving out backend {}: {}; the app runs without it", who, e);
                return Ok(());
            }
        };
        let brings_cpu = devs.iter().any(|d| listed(d).and_then(|d| d.type_().ok()) == Some(DEV_TYPE_CPU));
        let retired = {
            let mut st = self.state.lock();
            let retired = brings_cpu && self.retire_stand_in(&mut st);
            st.backends.push(Entry { reg: Ptr(reg), _handle: handle });
            st.devices.extend(devs);
            self.publish(&st);
            retired
        };
        if retired {
            stood_aside::<R>(&who);
        }
        Ok(())
    }

    pub fn register_backend(&self, reg: *mut Reg<R>) -> Result<()> {
        self.add(reg, None)
    }

    pub fn register_loaded(&self, reg: *mut Reg<R>, handle: DlHandle) -> Result<()> {
        self.add(reg, Some(handle))
    }

    pub fn register_device(&self, dev: *mut Device<R>) -> Result<()> {
        ensure!(!dev.is_null(), "device is NULL");
        let mut st = self.state.lock();
        st.devices.push(Ptr(dev));
        self.publish(&st);
        Ok(())
    }

    /// Removes a reg and every device whose `reg` field points at it; `false` if it is not registered.
    pub fn unregister(&self, reg: *mut Reg<R>) -> bool {
        let removed = {
            let mut st = self.state.lock();
            let Some(pos) = st.backends.iter().position(|e| e.reg.0 == reg) else { return false };
            st.devices.retain(|d| listed(d).map(|d| d.reg) != Some(reg));
            let removed = st.backends.remove(pos);
            self.publish(&st);
            removed
        };
        drop(removed); // dlclose outside the lock
        true
    }

    fn publish(&self, st: &State<R>) {
        self.n_regs.store(st.backends.len(), Ordering::Release);
        self.n_devs.store(st.devices.len(), Ordering::Release);
    }

    pub fn reg_count(&self) -> usize {
        self.settle();
        self.n_regs.load(Ordering::Acquire)
    }

    pub fn reg_get(&self, index: usize) -> Result<*mut Reg<R>> {
        self.settle();
        let st = self.state.lock();
        match st.backends.get(index) {
            Some(e) => Ok(e.reg.0),
            None => bail!("index {} out of range ({} backends registered)", index, st.backends.len()),
        }
    }

    pub fn dev_count(&self) -> usize {
        self.settle();
        self.n_devs.load(Ordering::Acquire)
    }

    pub fn dev_get(&self, index: usize) -> Result<*mut Device<R>> {
        self.settle();
        let st = self.state.lock();
        match st.devices.get(index) {
            Some(d) => Ok(d.0),
            None => bail!("index {} out of range ({} devices registered)", index, st.devices.len()),
        }
    }

    fn regs(&self) -> Vec<Ptr<Reg<R>>> {
        self.state.lock().backends.iter().map(|e| e.reg).collect()
    }

    fn devs(&self) -> Vec<Ptr<Device<R>>> {
        self.state.lock().devices.clone()
    }

    pub fn reg_by_name(&self, name: &str) -> Result<*mut Reg<R>> {
        self.settle();
        for r in self.regs() {
            if let Some(reg) = listed(&r) {
                if names_match::<R>(&cstr(reg.name()?), name) {
                    return Ok(r.0);
                }
            }
        }
        Ok(std::ptr::null_mut())
    }

    pub fn dev_by_name(&self, name: &str) -> Result<*mut Device<R>> {
        self.settle();
        for d in self.devs() {
            if let Some(dev) = listed(&d) {
                if names_match::<R>(&cstr(dev.name()?), name) {
                    return Ok(d.0);
                }
            }
        }
        Ok(std::ptr::null_mut())
    }

    pub fn dev_by_type(&self, type_: DevType) -> Result<*mut Device<R>> {
        self.settle();
        for d in self.devs() {
            if let Some(dev) = listed(&d) {
                if dev.type_()? == type_ {
                    return Ok(d.0);
                }
            }
        }
        Ok(std::ptr::null_mut())
    }
}

/// The SIMD stand-in left the lists for `who`'s CPU device: one info line.
#[cold]
#[inline(never)]
fn stood_aside<R: Rev>(who: &str) {
    let opt_in = std::env::var("GGML_RS_SIMD").is_ok_and(|v| v.trim() == "1");
    crate::log_at!(R, Info, "ggml_backend_register",
        "backend {} brings a CPU device: the SIMD backend, which stood in for a missing ggml-cpu, steps aside{}",
        who, if opt_in { " (GGML_RS_SIMD=1 computes beside ggml-cpu only when ggml-cpu is linked into the program, not loaded as a module)" } else { "" });
}

/// lm compares names with `strcmp`; wsp ignores ASCII case.
pub fn names_match<R: Rev>(a: &str, b: &str) -> bool {
    if R::CASE_INSENSITIVE_NAMES {
        a.eq_ignore_ascii_case(b)
    } else {
        a == b
    }
}

/// `dev_init`: the device's backend, or NULL as its `init_backend` answered. A C++ exception
/// thrown by it (stock lets it terminate the app) is one warning and NULL.
// A handle C passed to the export (or one of ours): NULL-checked, the rest is the trust contract
// (abi::vtable), taken on at the `unsafe` below.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn init_dev<R: Rev>(dev: *mut Device<R>, params: *const c_char) -> Result<*mut Backend<R>> {
    // SAFETY: a device C passed to the export: the trust contract.
    let Some(d) = (unsafe { obj(dev) }) else { return Ok(std::ptr::null_mut()) };
    match d.init_backend(params) {
        Ok(b) => Ok(b),
        // no init_backend at all: the caller's error, as for any missing vtable entry
        Err(e) if d.iface.init_backend.is_none() => Err(e),
        Err(e) => {
            let name = d.name().map(cstr).unwrap_or_else(|_| "(unnamed)".into());
            crate::log_at!(R, Warn, "ggml_backend_dev_init", "device {}: {}; returning NULL", name, e);
            Ok(std::ptr::null_mut())
        }
    }
}

/// GPU first (2026: then an integrated GPU), else CPU, as stock; a device that fails to start
/// (its `init_backend` returns NULL or throws) is passed over with one warning, down to the CPU.
pub fn init_best<R: Rev>() -> Result<*mut Backend<R>> {
    let reg = crate::registry::registry::<R>();
    for ty in [Some(DEV_TYPE_GPU), R::DEV_TYPE_IGPU, Some(DEV_TYPE_CPU)].into_iter().flatten() {
        let dev = reg.dev_by_type(ty)?;
        // SAFETY: NULL or a registered device, live until its reg is unregistered.
        let Some(d) = (unsafe { obj(dev) }) else { continue };
        let failure = match d.init_backend(std::ptr::null()) {
            Ok(b) if !b.is_null() => return Ok(b),
            Ok(_) => None,
            Err(e) => Some(e),
        };
        crate::log_at!(R, Warn, "ggml_backend_init_best", "device {} did not start ({}); trying the next device type",
            d.name().map(cstr).unwrap_or_default(),
            failure.as_ref().map_or("its init_backend returned NULL", |e| e.0.as_str()));
    }
    Ok(std::ptr::null_mut())
}
