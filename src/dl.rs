//! `dlopen` handles for dynamically loaded backends (what stock's `ggml-backend-dl.cpp` wraps):
//! the loader opens them, the registry keeps them open while their backend is registered.

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::{Path, PathBuf};

/// An open `dlopen` handle, closed when dropped.
pub struct DlHandle(*mut c_void);
// SAFETY: a dlopen handle is a process-wide token, usable from any thread.
unsafe impl Send for DlHandle {}
// SAFETY: as above.
unsafe impl Sync for DlHandle {}

impl DlHandle {
    pub fn open(path: &Path) -> Option<DlHandle> {
        let c = CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
        // SAFETY: c is a valid path string; RTLD_NOW|RTLD_LOCAL as stock.
        let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        (!h.is_null()).then(|| DlHandle(h))
    }
    pub fn sym(&self, name: &str) -> *mut c_void {
        let Ok(c) = CString::new(name) else { return std::ptr::null_mut() };
        // SAFETY: self.0 is an open handle; c a valid symbol name.
        unsafe { libc::dlsym(self.0, c.as_ptr()) }
    }
}

impl Drop for DlHandle {
    fn drop(&mut self) {
        // SAFETY: the handle is open and dropped once.
        unsafe { libc::dlclose(self.0) };
    }
}

/// The folder of a ggml build configured with `-DGGML_BACKEND_DIR=<dir>`, which `load_all` searches
/// first. Stock compiles it into ggml-backend-reg.cpp; ours is built before that option is known,
/// so `cmake/ggml-rs-upstream.cmake` compiles it into libggml as the string
/// `ggml_rs_backend_dir`, found here in the process's global scope (the option needs
/// `GGML_BACKEND_DL`, hence shared libraries, where libggml's symbols are global).
pub fn configured_backend_dir() -> Option<PathBuf> {
    // SAFETY: a lookup by a valid NUL-terminated name in the global scope; no handle involved.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"ggml_rs_backend_dir".as_ptr()) } as *const c_char;
    if p.is_null() {
        return None;
    }
    // SAFETY: the symbol is the NUL-terminated `const char[]` the CMake include writes.
    let dir = unsafe { CStr::from_ptr(p) }.to_str().ok()?;
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}
