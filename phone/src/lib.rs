//! The phone build (scripts/cross.sh): the library's exports, linked with fat LTO.
//!
//! Why a crate of its own: fat LTO optimizes the whole program with the opt-level of the crate it
//! links, and the kernels need opt-level 3's pipeline (loop vectorization, unrolling; with the
//! library at opt-level z as the root, the NEON counts of rms_norm tripled and the q4_1 products
//! grew by 70 %). This crate is that root, at opt-level 3 (Cargo.toml's profile `phone`); the
//! library's own functions keep their opt-level z attributes (`minsize`), so LLVM still keeps them
//! small. The exports are the library's: `extern crate` links it, and a static or shared library
//! carries every `#[no_mangle]` function of the crates it links.

extern crate ggml_backend_rs;
