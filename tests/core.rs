//! The library on its own (no host linked): buffers, tensors, bad input, the registry with a
//! backend registered from Rust, for the revisions of both prefixes. The C suites in tests_c/ cover the same
//! surface through the exported symbols with a real host.

use ggml_backend_rs::abi::*;
use ggml_backend_rs::ffi::glue as g;
use ggml_backend_rs::ffi::{lm, wsp};
use std::ffi::{c_char, c_void, CStr};
use std::ptr::null_mut;

fn f32_tensor<R: Rev>(ne: [i64; 4]) -> Box<Tensor<R>> {
    let nb0 = 4usize;
    let nb = [nb0, nb0 * ne[0] as usize, nb0 * (ne[0] * ne[1]) as usize, nb0 * (ne[0] * ne[1] * ne[2]) as usize];
    // SAFETY: Tensor is plain data; all-zero is an unallocated tensor
    let mut t: Box<Tensor<R>> = Box::new(unsafe { std::mem::zeroed() });
    t.type_ = 0;
    t.ne = ne;
    t.nb = nb;
    t
}

fn name(p: *const c_char) -> String {
    assert!(!p.is_null());
    unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_string()
}

fn cpu_buffer_type_facts<R: Rev>() {
    let buft = g::cpu_buffer_type::<R>().unwrap();
    assert_eq!(name(g::buft_name(buft).unwrap()), "CPU");
    assert_eq!(g::buft_get_alignment(buft).unwrap(), 32);
    assert_eq!(g::buft_get_max_size(buft).unwrap(), usize::MAX);
    assert!(g::buft_is_host(buft).unwrap());
    assert!(g::buft_get_device(buft).unwrap().is_null());

    let b = g::buft_alloc_buffer(buft, 1000).unwrap();
    let base = g::buffer_get_base(b).unwrap();
    assert_eq!(base as usize % 64, 0);
    assert_eq!(g::buffer_get_size(b).unwrap(), 1000);
    assert_eq!(name(g::buffer_name(b).unwrap()), "CPU");
    assert_eq!(g::buffer_get_usage(b).unwrap(), USAGE_ANY);
    g::buffer_set_usage(b, USAGE_WEIGHTS).unwrap();
    assert_eq!(g::buffer_get_usage(b).unwrap(), USAGE_WEIGHTS);
    assert!(g::buffer_set_usage(b, 7).is_err());
    g::buffer_clear(b, 0xAB).unwrap();
    let bytes = unsafe { std::slice::from_raw_parts(base as *const u8, 1000) };
    assert!(bytes.iter().all(|&x| x == 0xAB));
    g::buffer_free(b).unwrap();

    let zero = g::buft_alloc_buffer(buft, 0).unwrap();
    assert_eq!(g::buffer_get_size(zero).unwrap(), 0);
    assert!(g::buffer_get_base(zero).unwrap().is_null());
    g::buffer_free(zero).unwrap();

    assert!(g::buft_alloc_buffer(buft, usize::MAX / 2).is_err(), "a huge allocation must fail, not abort");
    g::buffer_free::<R>(null_mut()).unwrap();
}

#[test]
fn cpu_buffer_type_lm() {
    cpu_buffer_type_facts::<Lm>();
}
#[test]
fn cpu_buffer_type_wsp() {
    cpu_buffer_type_facts::<Wsp>();
}

fn tensor_io<R: Rev>() {
    let buft = g::cpu_buffer_type::<R>().unwrap();
    let b = g::buft_alloc_buffer(buft, 4096).unwrap();
    let base = g::buffer_get_base(b).unwrap();
    let mut t = f32_tensor::<R>([7, 3, 1, 1]);
    let tp: *mut Tensor<R> = &mut *t;
    assert_eq!(g::buft_get_alloc_size(buft, tp).unwrap(), 84);
    let addr = (base as usize + 64) as *mut c_void;
    g::tensor_alloc(b, tp, addr).unwrap();
    assert_eq!(t.data, addr);
    assert_eq!(t.buffer, b);
    assert!(g::tensor_alloc(b, tp, addr).is_err(), "allocating twice is refused");

    let src: Vec<f32> = (0..21).map(|i| i as f32 * 0.5).collect();
    g::tensor_set(tp, src.as_ptr() as *const c_void, 0, 84).unwrap();
    let mut dst = vec![0f32; 21];
    g::tensor_get(tp, dst.as_mut_ptr() as *mut c_void, 0, 84).unwrap();
    assert_eq!(src, dst);

    // partial read at an offset
    let mut two = [0f32; 2];
    g::tensor_get(tp, two.as_mut_ptr() as *mut c_void, 8, 8).unwrap();
    assert_eq!(two, [1.0, 1.5]);

    // out of bounds, overflow, NULL data: refused, bytes untouched
    let canary = [7u8; 16];
    assert!(g::tensor_set(tp, canary.as_ptr() as *const c_void, 80, 8).is_err());
    assert!(g::tensor_set(tp, canary.as_ptr() as *const c_void, usize::MAX, 8).is_err());
    assert!(g::tensor_set(tp, std::ptr::null(), 0, 8).is_err());
    assert!(g::tensor_get::<R>(null_mut(), dst.as_mut_ptr() as *mut c_void, 0, 4).is_err());
    g::tensor_get(tp, dst.as_mut_ptr() as *mut c_void, 0, 84).unwrap();
    assert_eq!(src, dst);

    g::tensor_memset(tp, 0, 4, 8).unwrap();
    g::tensor_get(tp, dst.as_mut_ptr() as *mut c_void, 0, 84).unwrap();
    assert_eq!(&dst[..4], &[0.0, 0.0, 0.0, 1.5]);

    // a view of rows 1..3
    let mut v = f32_tensor::<R>([7, 2, 1, 1]);
    v.view_src = tp;
    v.view_offs = 28;
    let vp: *mut Tensor<R> = &mut *v;
    g::view_init(vp).unwrap();
    assert_eq!(v.data as usize, addr as usize + 28);
    let mut row = [0f32; 7];
    g::tensor_get(vp, row.as_mut_ptr() as *mut c_void, 0, 28).unwrap();
    assert_eq!(row[0], 3.5);

    // an unallocated tensor
    let mut u = f32_tensor::<R>([4, 1, 1, 1]);
    assert!(g::tensor_set(&mut *u, src.as_ptr() as *const c_void, 0, 16).is_err());
    // outside the buffer
    assert!(g::tensor_alloc(b, &mut *u, (base as usize + 4090) as *mut c_void).is_err());

    // copies between buffers
    let b2 = g::buft_alloc_buffer(buft, 256).unwrap();
    let mut t2 = f32_tensor::<R>([7, 3, 1, 1]);
    g::tensor_alloc(b2, &mut *t2, g::buffer_get_base(b2).unwrap()).unwrap();
    g::tensor_copy(tp, &mut *t2).unwrap();
    let mut dst2 = vec![0f32; 21];
    g::tensor_get(&*t2, dst2.as_mut_ptr() as *mut c_void, 0, 84).unwrap();
    assert_eq!(dst, dst2);
    let mut odd = f32_tensor::<R>([21, 1, 1, 1]);
    g::tensor_alloc(b2, &mut *odd, (g::buffer_get_base(b2).unwrap() as usize + 128) as *mut c_void).unwrap();
    assert!(g::tensor_copy(tp, &mut *odd).is_err(), "different layouts");

    // multi-buffer
    let parts = [b, b2];
    let mut list = parts;
    let m = g::multi_buffer_alloc_buffer(list.as_mut_ptr(), 2).unwrap();
    assert_eq!(g::buffer_get_size(m).unwrap(), 4096 + 256);
    assert!(g::buffer_is_multi_buffer(m).unwrap());
    assert!(!g::buffer_is_multi_buffer(b).unwrap());
    g::buffer_set_usage(m, USAGE_WEIGHTS).unwrap();
    assert_eq!(g::buffer_get_usage(b2).unwrap(), USAGE_WEIGHTS);
    g::buffer_free(m).unwrap(); // frees both parts
}

#[test]
fn tensor_io_lm() {
    tensor_io::<Lm>();
}
#[test]
fn tensor_io_wsp() {
    tensor_io::<Wsp>();
}

#[test]
fn mapped_buffer_uses_caller_memory() {
    #[repr(align(64))]
    struct Mem([u8; 256]);
    let mut mem = Mem([0; 256]);
    let p = mem.0.as_mut_ptr() as *mut c_void;
    let b = lm::lm_ggml_backend_cpu_buffer_from_ptr(p, 256);
    assert!(!b.is_null());
    assert_eq!(name(lm::lm_ggml_backend_buffer_name(b)), "CPU_Mapped");
    lm::lm_ggml_backend_buffer_clear(b, 9);
    lm::lm_ggml_backend_buffer_free(b);
    assert!(mem.0.iter().all(|&x| x == 9), "the caller's memory holds the bytes and survives the free");
    let misaligned = (p as usize + 1) as *mut c_void;
    assert!(wsp::wsp_ggml_backend_cpu_buffer_from_ptr(misaligned, 16).is_null());
}

#[test]
fn null_handles_get_no_values() {
    assert!(lm::lm_ggml_backend_buft_name(null_mut()).is_null());
    assert_eq!(lm::lm_ggml_backend_buffer_get_size(null_mut()), 0);
    assert_eq!(name(lm::lm_ggml_backend_name(null_mut())), "NULL");
    assert!(lm::lm_ggml_backend_guid(null_mut()).is_null());
    assert_eq!(lm::lm_ggml_backend_graph_compute(null_mut(), null_mut()), STATUS_FAILED);
    assert!(wsp::wsp_ggml_backend_dev_name(null_mut()).is_null());
    assert!(wsp::wsp_ggml_backend_reg_get(usize::MAX).is_null());
    assert!(wsp::wsp_ggml_backend_dev_by_name(std::ptr::null()).is_null());
    assert!(wsp::wsp_ggml_backend_load(c"/nonexistent/libggml-x.so".as_ptr()).is_null());
    assert_eq!(wsp::wsp_ggml_backend_tensor_alloc(null_mut(), null_mut(), null_mut()), STATUS_FAILED);
    assert!(lm::lm_ggml_backend_event_new(null_mut()).is_null());
    lm::lm_ggml_backend_event_free(null_mut());
    lm::lm_ggml_backend_free(null_mut());
    wsp::wsp_ggml_backend_unload(null_mut());
    #[cfg(not(feature = "lm-2026"))]
    assert!(lm::lm_ggml_backend_sched_new(null_mut(), null_mut(), 1, 16, false).is_null());
    #[cfg(feature = "lm-2026")] // 2026: sched_new(..., parallel, op_offload)
    assert!(lm::lm_ggml_backend_sched_new(null_mut(), null_mut(), 1, 16, false, true).is_null());
    assert_eq!(wsp::wsp_ggml_backend_sched_get_n_splits(null_mut()), 0);
}

// ---------------------------------------------------------------- a backend registered from Rust

unsafe extern "C" fn reg_name<R: Rev>(_: *mut Reg<R>) -> *const c_char {
    c"Toy".as_ptr()
}
unsafe extern "C" fn reg_count<R: Rev>(_: *mut Reg<R>) -> usize {
    1
}
unsafe extern "C" fn dev_name<R: Rev>(_: *mut Device<R>) -> *const c_char {
    c"ToyDev".as_ptr()
}
unsafe extern "C" fn dev_type<R: Rev>(_: *mut Device<R>) -> DevType {
    R::DEV_TYPE_ACCEL
}

struct Toy<R: Rev> {
    reg: Box<Reg<R>>,
    dev: Box<Device<R>>,
}

unsafe extern "C" fn reg_device<R: Rev>(r: *mut Reg<R>, _: usize) -> *mut Device<R> {
    unsafe { (*r).context as *mut Device<R> }
}

fn toy<R: Rev>(header: R::RegHeader) -> Toy<R> {
    let mut dev: Box<Device<R>> = Box::new(unsafe { std::mem::zeroed() });
    dev.iface.get_name = Some(dev_name::<R>);
    dev.iface.get_description = Some(dev_name::<R>);
    dev.iface.get_type = Some(dev_type::<R>);
    let mut reg: Box<Reg<R>> = Box::new(Reg {
        header,
        iface: RegI { get_name: Some(reg_name::<R>), get_device_count: Some(reg_count::<R>), get_device: Some(reg_device::<R>), get_proc_address: None },
        context: &mut *dev as *mut Device<R> as *mut c_void,
    });
    dev.reg = &mut *reg;
    Toy { reg, dev }
}

fn registry_roundtrip<R: Rev>(header: R::RegHeader) {
    let mut t = toy::<R>(header);
    let regs0 = g::reg_count::<R>().unwrap();
    let devs0 = g::dev_count::<R>().unwrap();
    g::register(&mut *t.reg).unwrap();
    assert_eq!(g::reg_count::<R>().unwrap(), regs0 + 1);
    assert_eq!(g::dev_count::<R>().unwrap(), devs0 + 1);
    assert_eq!(g::reg_by_name::<R>(c"Toy".as_ptr()).unwrap(), &mut *t.reg as *mut _);
    let lower = g::reg_by_name::<R>(c"toy".as_ptr()).unwrap();
    assert_eq!(!lower.is_null(), R::CASE_INSENSITIVE_NAMES, "lm matches names exactly, wsp ignores case");
    assert_eq!(g::dev_by_name::<R>(c"ToyDev".as_ptr()).unwrap(), &mut *t.dev as *mut _);
    assert_eq!(g::dev_by_type::<R>(R::DEV_TYPE_ACCEL).unwrap(), &mut *t.dev as *mut _);
    assert!(g::dev_by_name::<R>(c"nope".as_ptr()).unwrap().is_null());
    assert!(g::init_by_name::<R>(c"nope".as_ptr(), std::ptr::null()).is_err());
    assert_eq!(g::dev_backend_reg(&mut *t.dev).unwrap(), &mut *t.reg as *mut _);
    // the device has no init_backend: an error, not a jump to NULL
    assert!(g::dev_init(&mut *t.dev, std::ptr::null()).is_err());
    // unload removes the reg and its devices (and a device registered twice: both entries)
    g::device_register(&mut *t.dev).unwrap();
    assert_eq!(g::dev_count::<R>().unwrap(), devs0 + 2);
    g::unload(&mut *t.reg).unwrap();
    assert_eq!(g::reg_count::<R>().unwrap(), regs0);
    assert_eq!(g::dev_count::<R>().unwrap(), devs0);
}

#[test]
fn registry_lm() {
    registry_roundtrip::<Lm>(());
}
#[test]
fn registry_wsp() {
    registry_roundtrip::<Wsp>(1);
}
