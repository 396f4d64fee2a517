//! `GGML_RS_SIMD_PROFILE=1`: wall time per kind of node (op, types, shapes), printed to stderr as
//! a table when a SIMD backend is freed. It is how the SIMD backend's time (docs/simd.md, "where the
//! time goes") is measured inside the real hosts, where a sampling profiler only sees one big kernel.

use once_cell::sync::Lazy;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::Duration;

static ENABLED: Lazy<bool> = Lazy::new(|| std::env::var("GGML_RS_SIMD_PROFILE").is_ok_and(|v| v.trim() == "1"));

/// (calls, total time) per node signature.
static TABLE: Lazy<Mutex<HashMap<String, (u64, Duration)>>> = Lazy::new(|| Mutex::new(HashMap::new()));

pub fn enabled() -> bool {
    *ENABLED
}

/// Adds one node's time under `key` (built only when profiling).
pub fn record(key: String, t: Duration) {
    let mut table = TABLE.lock();
    let e = table.entry(key).or_default();
    e.0 += 1;
    e.1 += t;
}

/// Prints and clears the table: rows by total time, with each row's share.
pub fn dump() {
    let mut rows: Vec<(String, (u64, Duration))> = TABLE.lock().drain().collect();
    if rows.is_empty() {
        return;
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.1 .1));
    let total: Duration = rows.iter().map(|r| r.1 .1).sum();
    eprintln!("GGML_RS_SIMD_PROFILE total {:.3} ms", total.as_secs_f64() * 1e3);
    for (key, (calls, t)) in rows {
        let ms = t.as_secs_f64() * 1e3;
        eprintln!("GGML_RS_SIMD_PROFILE {:6.2}% {:10.3} ms {:7} calls {:9.2} us/call  {}", 100.0 * ms / (total.as_secs_f64() * 1e3), ms, calls, ms * 1e3 / calls as f64, key);
    }
}
