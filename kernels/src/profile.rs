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
    // nanoseconds as u64 (584 years): u128's formatting is another 0.6 KiB
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let total_ns = nanos(total).max(1);
    eprintln!("GGML_RS_SIMD_PROFILE total {} ms", fixed(total_ns / 1_000, 3));
    for (key, (calls, t)) in rows {
        let ns = nanos(t);
        let share = fixed(ns.saturating_mul(10_000) / total_ns, 2);
        let per_call = fixed(ns / 10 / calls.max(1), 2);
        eprintln!("GGML_RS_SIMD_PROFILE {:>6}% {:>10} ms {:7} calls {:>9} us/call  {}", share, fixed(ns / 1_000, 3), calls, per_call, key);
    }
}

/// `n` hundredths (`places` = 2) or thousandths (3) as a decimal: integer arithmetic, so that the
/// phone builds carry no float formatting (core's flt2dec, ~9 KiB) for this debugging table.
fn fixed(n: u64, places: u32) -> String {
    let scale = 10u64.pow(places);
    format!("{}.{:0width$}", n / scale, n % scale, width = places as usize)
}

#[cfg(test)]
mod tests {
    #[test]
    fn fixed_point() {
        assert_eq!(super::fixed(12_345, 3), "12.345");
        assert_eq!(super::fixed(5, 2), "0.05");
        assert_eq!(super::fixed(100_000, 2), "1000.00");
    }
}
