//! Dynamic backends (wsp's `backend_load`, `unload`, `load_all`, `load_all_from_path`): a shared
//! library exporting `<p>ggml_backend_init` (and optionally `<p>ggml_backend_score`) is opened with
//! `dlopen`, scored, initialised and registered, with stock's search order and file names.

use crate::abi::vtable::{cstr, obj};
use crate::abi::*;
use crate::error::Result;
use crate::{bail, log_at};
use crate::dl::DlHandle;
use std::ffi::c_void;
use std::path::{Path, PathBuf};

type InitFn<R> = unsafe extern "C" fn() -> *mut Reg<R>;
type ScoreFn = unsafe extern "C" fn() -> i32;

fn score_of<R: Rev>(h: &DlHandle) -> Option<i32> {
    let p = h.sym(&format!("{}ggml_backend_score", R::PREFIX));
    // SAFETY: the exported score function has the signature `int (void)` by the ggml DL protocol.
    (!p.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, ScoreFn>(p)() })
}

/// Loads one backend library; errors are logged unless `silent`.
#[inline(never)]
pub fn load<R: Rev>(path: &Path, silent: bool) -> Result<*mut Reg<R>> {
    let shown = path.display();
    let Some(h) = DlHandle::open(path) else {
        if silent {
            return Ok(std::ptr::null_mut());
        }
        bail!("failed to load {}", shown);
    };
    if score_of::<R>(&h) == Some(0) {
        if !silent {
            log_at!(R, Info, "ggml_backend_load", "backend {} is not supported on this system", shown);
        }
        return Ok(std::ptr::null_mut());
    }
    let init = h.sym(&format!("{}ggml_backend_init", R::PREFIX));
    if init.is_null() {
        if silent {
            return Ok(std::ptr::null_mut());
        }
        bail!("failed to find {}ggml_backend_init in {}", R::PREFIX, shown);
    }
    // SAFETY: `<p>ggml_backend_init` has the signature `ggml_backend_reg_t (void)` by the DL
    // protocol; a C++ exception thrown by it (a driver failing at start-up) stops in host_try.cpp.
    let reg = match unsafe { crate::host_try::call0(std::mem::transmute::<*mut c_void, InitFn<R>>(init)) } {
        Ok(reg) => reg,
        Err(e) => {
            // said even by load_all (silent): stock terminates here, the app runs on without it
            crate::log_at!(R, Warn, "ggml_backend_load", "leaving out {}: {}ggml_backend_init {}; the app runs without it",
                shown, R::PREFIX, e);
            return Ok(std::ptr::null_mut());
        }
    };
    // SAFETY: a module's init returns NULL or its static reg (trust contract).
    let Some(r) = (unsafe { obj(reg) }) else {
        if silent {
            return Ok(std::ptr::null_mut());
        }
        bail!("failed to initialize backend from {}: {}ggml_backend_init returned NULL", shown, R::PREFIX);
    };
    if let Some(v) = R::reg_api_version(r) {
        if v != R::BACKEND_API_VERSION {
            if silent {
                return Ok(std::ptr::null_mut());
            }
            bail!("failed to initialize backend from {}: incompatible API version (backend: {}, current: {})", shown, v, R::BACKEND_API_VERSION);
        }
    }
    log_at!(R, Info, "ggml_backend_load", "loaded {} backend from {}", cstr(r.name()?), shown);
    crate::registry::registry::<R>().register_loaded(reg, h)?;
    Ok(reg)
}

fn executable_dir() -> Option<PathBuf> {
    std::env::current_exe().ok()?.parent().map(Path::to_path_buf)
}

/// Picks the best-scoring `libggml-<name>-*.so` in the search paths, else `libggml-<name>.so`.
/// (Out of line: `load_all` calls it once per name, and phones rarely load backends.)
#[inline(never)]
fn load_best<R: Rev>(name: &str, silent: bool, search: &[PathBuf]) -> Result<*mut Reg<R>> {
    let prefix = format!("libggml-{}-", name);
    let mut best: Option<(i32, PathBuf)> = None;
    for d in search {
        let Ok(entries) = std::fs::read_dir(d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            let fname = e.file_name().to_string_lossy().into_owned();
            if !p.is_file() || !fname.starts_with(&prefix) || p.extension().map(|x| x != "so").unwrap_or(true) {
                continue;
            }
            let Some(h) = DlHandle::open(&p) else { continue };
            if let Some(s) = score_of::<R>(&h) {
                if s > best.as_ref().map(|b| b.0).unwrap_or(0) {
                    best = Some((s, p));
                }
            }
        }
    }
    if let Some((_, p)) = best {
        return load::<R>(&p, silent);
    }
    for d in search {
        let p = d.join(format!("libggml-{}.so", name));
        if p.exists() {
            return load::<R>(&p, silent);
        }
    }
    Ok(std::ptr::null_mut())
}

/// Stock's list and order (`Rev::DL_BACKEND_NAMES`); then `<P>GGML_BACKEND_PATH` for an
/// out-of-tree backend.
pub fn load_all<R: Rev>(dir: Option<&Path>) {
    // the folders, found once for every name
    let search: Vec<PathBuf> = match dir {
        Some(d) => vec![d.to_path_buf()],
        None => crate::dl::configured_backend_dir()
            .into_iter()
            .chain(executable_dir())
            .chain(std::env::current_dir().ok())
            .collect(),
    };
    for &name in R::DL_BACKEND_NAMES {
        if let Err(e) = load_best::<R>(name, true, &search) {
            log_at!(R, Debug, "ggml_backend_load_all", "{}", e);
        }
    }
    if let Ok(p) = std::env::var(format!("{}GGML_BACKEND_PATH", R::ENV_PREFIX)) {
        if let Err(e) = load::<R>(Path::new(&p), false) {
            crate::log_error!(R, "ggml_backend_load", "{}", e);
        }
    }
}
