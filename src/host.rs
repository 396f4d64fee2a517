//! The host's symbols, reached through the weak references of `host.c`, and the logger.

use crate::abi::{Backend, Buffer, BufferType, BufferUsage, CGraph, LogLevel, Reg, Rev, Tensor};
use once_cell::sync::OnceCell;
use std::ffi::{c_char, c_void, CString};
use std::marker::PhantomData;

extern "C" {
    fn ggml_rs_host_sym_lm(name: *const c_char) -> *mut c_void;
    fn ggml_rs_host_sym_wsp(name: *const c_char) -> *mut c_void;
    fn ggml_rs_log_lm(level: i32, msg: *const c_char) -> i32;
    fn ggml_rs_log_wsp(level: i32, msg: *const c_char) -> i32;
}

pub fn sym_lm(name: &str) -> *mut c_void {
    let c = CString::new(name).expect("symbol names have no NUL");
    // SAFETY: the shim only compares the string against its table.
    unsafe { ggml_rs_host_sym_lm(c.as_ptr()) }
}

pub fn sym_wsp(name: &str) -> *mut c_void {
    let c = CString::new(name).expect("symbol names have no NUL");
    // SAFETY: the shim only compares the string against its table.
    unsafe { ggml_rs_host_sym_wsp(c.as_ptr()) }
}

pub type RegFn<R> = unsafe extern "C" fn() -> *mut Reg<R>;

/// Host functions found at first use. Each is `None` when the host did not link it.
pub struct HostFns<R: Rev> {
    /// Built-in backends in stock's registration order, with their short names.
    pub backend_regs: Vec<(&'static str, RegFn<R>)>,
    sym: fn(&str) -> *mut c_void,
    log: LogFn,
    core: OnceCell<CoreFns<R>>,
    _rev: PhantomData<R>,
}

type LogFn = unsafe extern "C" fn(i32, *const c_char) -> i32;
pub const LOG_LM: LogFn = ggml_rs_log_lm;
pub const LOG_WSP: LogFn = ggml_rs_log_wsp;

/// Stock's order of `register_backend` calls; each name `x` stands for `<p>ggml_backend_x_reg`.
/// lm knows sycl, vk, cann, blas, rpc, amx, kompute; wsp drops amx and adds opencl. A name the
/// host does not define resolves to NULL, so one list serves both.
const BACKEND_ORDER: [&str; 11] = [
    "cuda", "metal", "sycl", "vk", "opencl", "cann", "blas", "rpc", "amx", "kompute", "cpu",
];

static HOSTS: crate::per_rev::PerRev = crate::per_rev::PerRev::new();

/// The host functions of revision `R`, looked up on first use. The shim's weak references are
/// per prefix: revisions sharing a prefix share them.
pub fn host<R: Rev>() -> &'static HostFns<R> {
    HOSTS.get::<R, _>(|| match R::PREFIX {
        "lm_" => HostFns::load(sym_lm, LOG_LM),
        #[cfg(ggml_unprefixed)]
        "" => HostFns::load(crate::host_ggml::sym, crate::host_ggml::LOG),
        _ => HostFns::load(sym_wsp, LOG_WSP),
    })
}

impl<R: Rev> HostFns<R> {
    pub fn load(sym: fn(&str) -> *mut c_void, log: LogFn) -> Self {
        let mut backend_regs = Vec::new();
        for name in BACKEND_ORDER {
            let p = sym(&format!("{}ggml_backend_{}_reg", R::PREFIX, name));
            if !p.is_null() {
                // SAFETY: the symbol is the host's `ggml_backend_reg_t <p>ggml_backend_<x>_reg(void)`.
                let f: RegFn<R> = unsafe { std::mem::transmute::<*mut c_void, RegFn<R>>(p) };
                backend_regs.push((name, f));
            }
        }
        HostFns { backend_regs, sym, log, core: OnceCell::new(), _rev: PhantomData }
    }

    /// Address of a ggml core function of the host (`ggml_init`, ...) by its unprefixed name.
    pub fn core_fn(&self, name: &str) -> Option<*mut c_void> {
        let p = (self.sym)(&format!("{}{}", R::PREFIX, name));
        (!p.is_null()).then_some(p)
    }
}

/// Sends one line through the host's `ggml_log_internal` (which honours the app's log callback,
/// e.g. llama.rn's route to JavaScript), or stderr when the host has no logger.
pub fn log<R: Rev>(level: LogLevel, msg: &str) {
    log_line(crate::host::host::<R>().log, level, format_args!("{}", msg));
}

/// `log_error!` / `log_at!`: `<prefix><func>: <message>`, formatted once, in one non-generic body
/// (the phone library carries each call site for two revisions).
pub fn log_fmt<R: Rev>(level: LogLevel, func: &str, args: std::fmt::Arguments<'_>) {
    log_line(crate::host::host::<R>().log, level, format_args!("{}{}: {}", R::PREFIX, func, args));
}

#[inline(never)]
fn log_line(log: LogFn, level: LogLevel, args: std::fmt::Arguments<'_>) {
    use std::fmt::Write;
    let mut line = String::new();
    let _ = line.write_fmt(args);
    if !line.ends_with('\n') {
        line.push('\n');
    }
    let c = CString::new(line.replace('\0', "?")).unwrap_or_default();
    // SAFETY: c is a valid NUL-terminated string for the duration of the call.
    unsafe {
        log(level as i32, c.as_ptr());
    }
}

/// Logs an error line prefixed with the exported function's name, e.g. `lm_ggml_backend_tensor_set: ...`.
#[macro_export]
macro_rules! log_error {
    ($r:ty, $func:expr, $($arg:tt)*) => {
        $crate::host::log_fmt::<$r>($crate::abi::LogLevel::Error, $func, format_args!($($arg)*))
    };
}

#[macro_export]
macro_rules! log_at {
    ($r:ty, $level:ident, $func:expr, $($arg:tt)*) => {
        $crate::host::log_fmt::<$r>($crate::abi::LogLevel::$level, $func, format_args!($($arg)*))
    };
}

/// Typed entry points of the host's ggml core (`ggml.c`, `ggml-alloc.c`) that the scheduler and
/// the graph utilities use. Resolved once; each is `None` when the host did not link it.
pub struct CoreFns<R: Rev> {
    pub gallocr_new_n: Option<unsafe extern "C" fn(*mut *mut BufferType<R>, i32) -> *mut c_void>,
    pub gallocr_free: Option<unsafe extern "C" fn(*mut c_void)>,
    pub gallocr_reserve_n: Option<unsafe extern "C" fn(*mut c_void, *mut CGraph<R>, *const i32, *const i32) -> bool>,
    pub gallocr_alloc_graph: Option<unsafe extern "C" fn(*mut c_void, *mut CGraph<R>) -> bool>,
    pub gallocr_get_buffer_size: Option<unsafe extern "C" fn(*mut c_void, i32) -> usize>,
    pub hash_size: Option<unsafe extern "C" fn(usize) -> usize>,
    pub op_name: Option<unsafe extern "C" fn(i32) -> *const c_char>,
    pub op_desc: Option<unsafe extern "C" fn(*const Tensor<R>) -> *const c_char>,
    pub init: Option<unsafe extern "C" fn(InitParams) -> *mut c_void>,
    pub free: Option<unsafe extern "C" fn(*mut c_void)>,
    pub dup_tensor: Option<unsafe extern "C" fn(*mut c_void, *const Tensor<R>) -> *mut Tensor<R>>,
    pub set_name: Option<unsafe extern "C" fn(*mut Tensor<R>, *const c_char) -> *mut Tensor<R>>,
    pub new_graph_custom: Option<unsafe extern "C" fn(*mut c_void, usize, bool) -> *mut CGraph<R>>,
    pub tensor_overhead: Option<unsafe extern "C" fn() -> usize>,
    pub graph_overhead_custom: Option<unsafe extern "C" fn(usize, bool) -> usize>,
    pub alloc_ctx_tensors: Option<unsafe extern "C" fn(*mut c_void, *mut Backend<R>) -> *mut Buffer<R>>,
    /// ggml-cpu's `ggml_get_type_traits_cpu` (returns `const struct ggml_type_traits_cpu *`,
    /// whose first field is `from_float` in every revision).
    pub type_traits_cpu: Option<unsafe extern "C" fn(i32) -> *const Option<FromFloat>>,
    /// the meta backend's (ggml-backend-meta.cpp, 2026): is a buffer one of its buffers, and
    /// (b11118) pass a usage on to its parts
    pub buffer_is_meta: Option<unsafe extern "C" fn(*mut Buffer<R>) -> bool>,
    pub meta_buffer_set_usage: Option<unsafe extern "C" fn(*mut Buffer<R>, BufferUsage)>,
}

pub use ggml_rs_kernels::FromFloat;

#[cfg(feature = "simd")]
pub use ggml_rs_kernels::quant::HostQ8K;

#[cfg(feature = "simd")]
/// [`HostQ8K`] of revision `R`'s host, looked up once.
pub fn host_q8k<R: Rev>() -> Option<HostQ8K> {
    /// `GGML_TYPE_Q8_K`, numbered alike in every revision.
    const Q8_K: i32 = 15;
    static FOUND: crate::per_rev::PerRev = crate::per_rev::PerRev::new();
    *FOUND.get::<R, _>(|| traits_cpu::<R>(Q8_K).and_then(|t| t.from_float).map(|f| {
        // SAFETY: ggml-cpu's Q8_K `from_float` is `quantize_row_q8_K`, which has HostQ8K's contract.
        unsafe { HostQ8K::new(f) }
    }))
}

#[cfg(feature = "simd")]
/// Whether revision `R`'s ggml-cpu repacks Q4_K weights as `block_q4_Kx8` and multiplies them with
/// its AVX2 kernels: built for AVX2 (`ggml_cpu_has_avx2()`, which ggml-cpu answers from its
/// compiler flags, as `ggml_repack_get_optimal_repack_type` asks) and not for AVX-512 (whose
/// `ggml_gemm_q4_K_8x8_q8_K` takes other paths), on x86_64. ggml picks its Q4_0 and IQ4_NL 8x8
/// layouts on the same condition, so this answers for the three layouts the SIMD backend reads
/// (`ggml_rs_kernels::op::Repack`: Q4Kx8, Q4_0x8, IQ4NLx8).
pub fn cpu_repacks_q4k_x8<R: Rev>() -> bool {
    static FOUND: crate::per_rev::PerRev = crate::per_rev::PerRev::new();
    *FOUND.get::<R, _>(|| {
        let h = host::<R>();
        let ask = |name: &str| {
            h.core_fn(name).map(|p| {
                // SAFETY: the weak symbol is ggml-cpu's `int <p>ggml_cpu_has_<x>(void)`.
                let f: unsafe extern "C" fn() -> i32 = unsafe { std::mem::transmute::<*mut c_void, _>(p) };
                // SAFETY: a plain getter without arguments.
                unsafe { f() }
            })
        };
        cfg!(target_arch = "x86_64") && ask("ggml_cpu_has_avx2") == Some(1) && ask("ggml_cpu_has_avx512") == Some(0)
    })
}

#[cfg(feature = "simd")]
/// `int <p>ggml_cpu_has_<x>(void)` of revision `R`'s ggml-cpu (answered from its compiler
/// flags), `None` when the host did not link it.
fn cpu_has<R: Rev>(name: &str) -> Option<i32> {
    host::<R>().core_fn(name).map(|p| {
        // SAFETY: the weak symbol is ggml-cpu's `int <p>ggml_cpu_has_<x>(void)`.
        let f: unsafe extern "C" fn() -> i32 = unsafe { std::mem::transmute::<*mut c_void, _>(p) };
        // SAFETY: a plain getter without arguments.
        unsafe { f() }
    })
}

#[cfg(feature = "simd")]
/// The layout revision `R`'s ggml-cpu repacks weights of type `ty` (ggml's type id; rows a
/// multiple of 4) into on aarch64, when the SIMD backend reproduces it. From ggml-cpu's compiler
/// flags, as `ggml_repack_get_optimal_repack_type` asks them: Q4_0 `q4_0_4x8` with NEON and i8mm,
/// else `q4_0_4x4` with dotprod; IQ4_NL `iq4_nl_4x4` with dotprod; Q8_0 `q8_0_4x8` with i8mm,
/// else `q8_0_4x4` with dotprod. Declined: SVE builds (Q4_0 takes `q4_0_8x8` first with i8mm on
/// 256-bit vectors, Q8_0's 4x8 gemm an SVE path), builds without dotprod (every NEON gemv of
/// these layouts falls back to the generic C, another float order), other types. `None` off
/// aarch64 or when a getter is missing.
pub fn arm_repack_layout<R: Rev>(ty: i32) -> Option<ggml_rs_kernels::op::Repack> {
    use ggml_rs_kernels::op::Repack;
    use ggml_rs_kernels::quant::type_id;
    /// (dotprod and NEON and no SVE, i8mm), asked once
    static FLAGS: crate::per_rev::PerRev = crate::per_rev::PerRev::new();
    let flags: Option<bool> = *FLAGS.get::<R, _>(|| {
        let ok = cfg!(target_arch = "aarch64")
            && cpu_has::<R>("ggml_cpu_has_neon") == Some(1)
            && cpu_has::<R>("ggml_cpu_has_dotprod") == Some(1)
            && cpu_has::<R>("ggml_cpu_has_sve") == Some(0);
        if ok { cpu_has::<R>("ggml_cpu_has_matmul_int8").map(|i| i != 0) } else { None }
    });
    let i8mm = flags?;
    match ty {
        type_id::Q4_0 => Some(if i8mm { Repack::Q4_0_4x8 } else { Repack::Q4_0_4x4 }),
        type_id::IQ4_NL => Some(Repack::IQ4NLx4),
        type_id::Q8_0 => Some(if i8mm { Repack::Q8_0_4x8 } else { Repack::Q8_0_4x4 }),
        _ => None,
    }
}

#[cfg(feature = "simd")]
/// What the SIMD backend reads of ggml-cpu's `struct ggml_type_traits_cpu` for one type.
#[derive(Clone, Copy)]
pub struct TraitsCpu {
    /// the type's quantizer (`NULL` for types ggml-cpu does not quantize to)
    pub from_float: Option<FromFloat>,
    /// rows its `vec_dot` multiplies at once: 2 for some formats on ARM with i8mm
    pub nrows: i64,
}

#[cfg(feature = "simd")]
/// The struct's two layouts ([`Rev::TRAITS_CPU_FROM_FLOAT_TO_MAT`]), for reading only.
#[repr(C)]
#[allow(dead_code)] // the fields before `nrows` hold the layout
struct TraitsCpuToMat {
    from_float: Option<FromFloat>,
    from_float_to_mat: *const c_void,
    vec_dot: *const c_void,
    vec_dot_type: i32,
    nrows: i64,
}
#[cfg(feature = "simd")]
#[repr(C)]
#[allow(dead_code)] // as above
struct TraitsCpuPlain {
    from_float: Option<FromFloat>,
    vec_dot: *const c_void,
    vec_dot_type: i32,
    nrows: i64,
}

#[cfg(feature = "simd")]
/// ggml-cpu's traits of type `ty` in revision `R`'s host; `None` without ggml-cpu or for a type
/// id out of its table.
pub fn traits_cpu<R: Rev>(ty: i32) -> Option<TraitsCpu> {
    let f = host::<R>().core().type_traits_cpu?;
    if !(0..R::TYPE_COUNT).contains(&ty) {
        return None;
    }
    // SAFETY: the host's ggml_get_type_traits_cpu returns a pointer into its static table for any
    // type id below GGML_TYPE_COUNT (checked above).
    let p = unsafe { f(ty) } as *const c_void;
    if p.is_null() {
        return None;
    }
    // SAFETY: the pointer is to the host's `struct ggml_type_traits_cpu`, whose layout in this
    // revision is the mirror chosen by the revision's fact.
    Some(unsafe {
        if R::TRAITS_CPU_FROM_FLOAT_TO_MAT {
            let t = &*(p as *const TraitsCpuToMat);
            TraitsCpu { from_float: t.from_float, nrows: t.nrows }
        } else {
            let t = &*(p as *const TraitsCpuPlain);
            TraitsCpu { from_float: t.from_float, nrows: t.nrows }
        }
    })
}

/// `struct ggml_init_params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct InitParams {
    pub mem_size: usize,
    pub mem_buffer: *mut c_void,
    pub no_alloc: bool,
}

impl<R: Rev> CoreFns<R> {
    fn load(h: &HostFns<R>) -> Self {
        macro_rules! f {
            ($name:literal) => {
                // SAFETY: the weak symbol `<p>ggml_<name>` has exactly the signature of the field
                // (checked against the hosts' headers when this table was written).
                h.core_fn($name).map(|p| unsafe { std::mem::transmute::<*mut c_void, _>(p) })
            };
        }
        CoreFns {
            gallocr_new_n: f!("ggml_gallocr_new_n"),
            gallocr_free: f!("ggml_gallocr_free"),
            gallocr_reserve_n: f!("ggml_gallocr_reserve_n"),
            gallocr_alloc_graph: f!("ggml_gallocr_alloc_graph"),
            gallocr_get_buffer_size: f!("ggml_gallocr_get_buffer_size"),
            hash_size: f!("ggml_hash_size"),
            op_name: f!("ggml_op_name"),
            op_desc: f!("ggml_op_desc"),
            init: f!("ggml_init"),
            free: f!("ggml_free"),
            dup_tensor: f!("ggml_dup_tensor"),
            set_name: f!("ggml_set_name"),
            new_graph_custom: f!("ggml_new_graph_custom"),
            tensor_overhead: f!("ggml_tensor_overhead"),
            graph_overhead_custom: f!("ggml_graph_overhead_custom"),
            alloc_ctx_tensors: f!("ggml_backend_alloc_ctx_tensors"),
            type_traits_cpu: f!("ggml_get_type_traits_cpu"),
            buffer_is_meta: f!("ggml_backend_buffer_is_meta"),
            meta_buffer_set_usage: f!("ggml_backend_meta_buffer_set_usage"),
        }
    }
}

impl<R: Rev> HostFns<R> {
    pub fn core(&self) -> &CoreFns<R> {
        self.core.get_or_init(|| CoreFns::load(self))
    }
}

/// `ggml_op_name`, or the op number when the host has no ggml.c.
pub fn op_name<R: Rev>(op: i32) -> String {
    match crate::host::host::<R>().core().op_name {
        // SAFETY: ggml_op_name returns a static string for any op id below GGML_OP_COUNT.
        Some(f) if (0..128).contains(&op) => crate::abi::vtable::cstr(unsafe { f(op) }),
        _ => format!("op#{}", op),
    }
}

/// `ggml_op_desc` (a GLU / UNARY node by its kind), or [`op_name`] when the host has none.
pub fn op_desc<R: Rev>(t: &Tensor<R>) -> String {
    match crate::host::host::<R>().core().op_desc {
        // SAFETY: ggml_op_desc reads the tensor's op and params and returns a static string.
        Some(f) if (0..128).contains(&t.op) => crate::abi::vtable::cstr(unsafe { f(t) }),
        _ => op_name::<R>(t.op),
    }
}

/// b11118's `buffer_set_usage` on a meta buffer: the host's `ggml_backend_meta_buffer_set_usage`
/// when `buffer` is one of its meta buffers (nothing when the host has no meta backend).
// A non-NULL handle from C (checked by the caller), passed on to the host (trust model in abi::vtable).
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn meta_buffer_set_usage<R: Rev>(buffer: *mut Buffer<R>, usage: BufferUsage) {
    let core = host::<R>().core();
    if let (Some(is_meta), Some(set_usage)) = (core.buffer_is_meta, core.meta_buffer_set_usage) {
        // SAFETY: the host's own functions (weak references, present), called with a live buffer
        // (the caller checked it non-NULL)
        if unsafe { is_meta(buffer) } {
            // SAFETY: as above; the buffer is one of the meta backend's
            unsafe { set_usage(buffer, usage) };
        }
    }
}

#[cfg(feature = "simd")]
/// How the host's ggml was compiled, as every host file that includes our `ggml-backend.h`
/// reports it at start-up into one weak variable (cbindgen/ggml-backend.h.in): whether ggml-cpu
/// may have been compiled with its float operations reordered, which the SIMD backend cannot
/// reproduce.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FloatModel {
    /// a host file was compiled with a fast-math macro defined (`__FAST_MATH__`, GCC's
    /// `__ASSOCIATIVE_MATH__` / `__RECIPROCAL_MATH__`)
    pub fast_math_macro: bool,
    /// a host file's compiler folded `(x + y) - y` to `x` (clang's `-ffast-math
    /// -fno-finite-math-only` defines no macro)
    pub reassociates: bool,
    /// the variable exists: the host includes our header (compiled with its own, it has none)
    pub probed: bool,
}

#[cfg(feature = "simd")]
impl FloatModel {
    pub fn fast_math(&self) -> bool {
        self.fast_math_macro || self.reassociates
    }

    fn of(p: *const i32) -> FloatModel {
        if p.is_null() {
            return FloatModel::default();
        }
        // SAFETY: a non-NULL address is our header's `int <p>ggml_rs_host_float_model`, written
        // only by the host files' constructors, which ran when they were loaded.
        let bits = unsafe { p.read_volatile() };
        FloatModel { fast_math_macro: bits & 1 != 0, reassociates: bits & 2 != 0, probed: true }
    }
}

#[cfg(feature = "simd")]
extern "C" {
    fn ggml_rs_host_float_model_lm() -> *const i32;
    fn ggml_rs_host_float_model_wsp() -> *const i32;
}

#[cfg(feature = "simd")]
/// The float model of revision `R`'s host, read once.
pub fn float_model<R: Rev>() -> FloatModel {
    static FOUND: crate::per_rev::PerRev = crate::per_rev::PerRev::new();
    *FOUND.get::<R, _>(|| {
        let p = match R::PREFIX {
            // SAFETY: the shim's accessor returns the address of a weak variable (NULL if absent).
            "lm_" => unsafe { ggml_rs_host_float_model_lm() },
            #[cfg(ggml_unprefixed)]
            "" => crate::host_ggml::float_model(),
            // SAFETY: as above.
            _ => unsafe { ggml_rs_host_float_model_wsp() },
        };
        FloatModel::of(p)
    })
}
