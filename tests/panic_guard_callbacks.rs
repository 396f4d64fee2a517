//! The vtable callbacks C code calls into (here the CPU buffer type's and buffer's) run under the
//! same guard as the exports: an injected panic (`GGML_RS_FAULT_PANIC=<prefix><vtable>.<slot>`)
//! becomes the callback's "no" value and a log line, and nothing unwinds into the C caller.

use ggml_backend_rs::abi::*;
use ggml_backend_rs::ffi::{lm, wsp};

/// The revision the `wsp_` exports serve in this build.
#[cfg(not(feature = "wsp-2026"))]
type W = Wsp;
#[cfg(feature = "wsp-2026")]
type W = Wsp26;

#[test]
fn injected_callback_panics_become_no_values() {
    std::env::set_var("GGML_RS_FAULT_PANIC", "lm_cpu_buft.alloc_buffer,wsp_cpu_buffer.set_tensor,wsp_cpu_buffer.get_base");

    // lm: alloc_buffer called through the vtable, as ggml-alloc does
    let buft = lm::lm_ggml_backend_cpu_buffer_type();
    assert!(!buft.is_null());
    // SAFETY: buft is the library's CPU buffer type; its vtable slots are set.
    let alloc = unsafe { (*buft).iface.alloc_buffer.unwrap() };
    // SAFETY: calling the C callback with a valid buffer type.
    assert!(unsafe { alloc(buft, 256) }.is_null(), "the panicking callback returns NULL");
    // the export of the same operation is a different entry and still works
    let b = lm::lm_ggml_backend_buft_alloc_buffer(buft, 0);
    lm::lm_ggml_backend_buffer_free(b);

    // wsp: a buffer made by the export, then its set_tensor / get_base slots called directly
    let wbuft = wsp::wsp_ggml_backend_cpu_buffer_type();
    let wb = wsp::wsp_ggml_backend_buft_alloc_buffer(wbuft, 64);
    assert!(!wb.is_null(), "wsp's alloc_buffer is not injected");
    // SAFETY: wb is a live CPU buffer; its vtable slots are set.
    let (set, base) = unsafe { ((*wb).iface.set_tensor.unwrap(), (*wb).iface.get_base.unwrap()) };
    // SAFETY: as above.
    assert!(unsafe { base(wb) }.is_null(), "get_base panicked: NULL");
    let mut t: Tensor<W> = Tensor::with_layout(0, [16, 1, 1, 1], [4, 64, 64, 64]);
    t.buffer = wb;
    t.data = std::ptr::null_mut(); // a write through it would crash: the panic comes first
    let src = [1.0f32; 16];
    // SAFETY: the callback panics before touching t's data; the guard returns.
    unsafe { set(wb, &mut t, src.as_ptr().cast(), 0, 64) };
    assert_eq!(wsp::wsp_ggml_backend_buffer_get_size(wb), 64, "the process carries on");
    wsp::wsp_ggml_backend_buffer_free(wb);
}
