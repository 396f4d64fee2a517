//! A panic inside an export never reaches C: the guard logs it and returns the "no" value.
//! Fault injection (`GGML_RS_FAULT_PANIC`) makes one export panic on purpose; this test binary
//! sets it before the first call.

use ggml_backend_rs::ffi::{lm, wsp};

#[test]
fn injected_panics_become_errors() {
    std::env::set_var("GGML_RS_FAULT_PANIC", "lm_ggml_backend_cpu_buffer_type");
    assert!(lm::lm_ggml_backend_cpu_buffer_type().is_null(), "the panicking export returns NULL");
    // the process and the other exports carry on
    let buft = wsp::wsp_ggml_backend_cpu_buffer_type();
    assert!(!buft.is_null());
    let b = wsp::wsp_ggml_backend_buft_alloc_buffer(buft, 64);
    assert!(!b.is_null());
    assert_eq!(wsp::wsp_ggml_backend_buffer_get_size(b), 64);
    wsp::wsp_ggml_backend_buffer_free(b);
    assert!(lm::lm_ggml_backend_cpu_buffer_type().is_null(), "and again");
}
