//! First use of the registry from 8 threads at once (its own test binary, so that the registry is
//! fresh): every thread sees the same, fully built registry.

use ggml_backend_rs::ffi::{lm, wsp};
use std::sync::Barrier;

#[test]
fn first_use_from_many_threads() {
    let barrier = Barrier::new(8);
    let seen: Vec<(usize, usize, usize, usize)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    (
                        lm::lm_ggml_backend_reg_count(),
                        lm::lm_ggml_backend_dev_count(),
                        wsp::wsp_ggml_backend_reg_count(),
                        wsp::wsp_ggml_backend_cpu_buffer_type() as usize,
                    )
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "threads saw different registries: {:?}", seen);
    assert_ne!(seen[0].3, 0);
}
