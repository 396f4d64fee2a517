//! `dlopen` handles for dynamically loaded backends (what stock's `ggml-backend-dl.cpp` wraps):
//! the loader opens them, the registry keeps them open while their backend is registered.

use std::ffi::{c_void, CString};
use std::path::Path;

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
