//! Opt-in placement of the pool's workers on the fastest cores (`GGML_RS_SIMD_AFFINITY=fast`).
//!
//! Phones mix core types (big.LITTLE: e.g. 1 prime + 3 big + 4 little, or 2 big + 6 little), and a
//! thread of a product that lands on a little core makes every other thread wait for it at the
//! next barrier. Linux describes the cores in sysfs: `cpuN/cpu_capacity` (the scheduler's relative
//! capacity, 1024 for the fastest; arm64 and Android kernels) or, where that is missing,
//! `cpuN/cpufreq/cpuinfo_max_freq`. The workers are allowed the fastest cores, as many as the pool
//! has threads (whole tiers: a tier is never split, so the scheduler can still balance inside it).
//! The calling thread belongs to the app and is left alone. Off Linux / Android, or when sysfs
//! says nothing useful, nothing is pinned.

use std::path::Path;

/// Environment variable turning the placement on (`fast`); anything else leaves threads alone.
pub const AFFINITY_ENV: &str = "GGML_RS_SIMD_AFFINITY";

/// The CPUs the workers of a pool of `n_threads` are allowed, when [`AFFINITY_ENV`] asks for it.
pub fn worker_cpus(n_threads: usize) -> Option<Vec<usize>> {
    let on = std::env::var(AFFINITY_ENV).is_ok_and(|v| v.trim().eq_ignore_ascii_case("fast"));
    if !on || n_threads < 2 {
        return None;
    }
    fastest_cpus(Path::new("/sys/devices/system/cpu"), n_threads)
}

/// Each online CPU under `root` (a sysfs `devices/system/cpu` tree) with its speed: its
/// `cpu_capacity`, else its `cpufreq/cpuinfo_max_freq`. `None` when neither is readable for
/// every CPU (no basis to rank them).
pub fn cpu_speeds(root: &Path) -> Option<Vec<(usize, u64)>> {
    let read = |p: &Path| std::fs::read_to_string(p).ok().and_then(|s| s.trim().parse::<u64>().ok());
    let mut cpus: Vec<usize> = std::fs::read_dir(root)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_prefix("cpu")?.parse().ok())
        .collect();
    cpus.sort_unstable();
    if cpus.is_empty() {
        return None;
    }
    for file in ["cpu_capacity", "cpufreq/cpuinfo_max_freq"] {
        let speeds: Option<Vec<(usize, u64)>> = cpus.iter().map(|&c| Some((c, read(&root.join(format!("cpu{c}")).join(file))?))).collect();
        if let Some(s) = speeds {
            return Some(s);
        }
    }
    None
}

/// The fastest CPUs under `root`, whole tiers of equal speed from the fastest down until there
/// are at least `n`; `None` when all CPUs are alike (nothing to choose) or speeds are unknown.
pub fn fastest_cpus(root: &Path, n: usize) -> Option<Vec<usize>> {
    let speeds = cpu_speeds(root)?;
    let mut tiers: Vec<u64> = speeds.iter().map(|&(_, s)| s).collect();
    tiers.sort_unstable_by(|a, b| b.cmp(a));
    tiers.dedup();
    if tiers.len() < 2 {
        return None;
    }
    let mut chosen = Vec::new();
    for t in tiers {
        chosen.extend(speeds.iter().filter(|&&(_, s)| s == t).map(|&(c, _)| c));
        if chosen.len() >= n {
            break;
        }
    }
    chosen.sort_unstable();
    (chosen.len() < speeds.len()).then_some(chosen)
}

/// Restricts the calling thread to `cpus` (best effort: a refusal leaves it where it was).
pub fn pin_current_thread(cpus: &[usize]) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: cpu_set_t is plain bits (zeroed is the empty set); CPU_SET only writes inside
        // the set for indices below CPU_SETSIZE, which the filter guarantees; pid 0 is this thread.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
                libc::CPU_SET(c, &mut set);
            }
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = cpus;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake `devices/system/cpu` tree: one `cpuN` folder per entry, with `cpu_capacity` or
    /// `cpufreq/cpuinfo_max_freq` (plus the files sysfs has that are not CPUs).
    fn tree(name: &str, speeds: &[u64], capacity: bool) -> std::path::PathBuf {
        let root = std::env::temp_dir().join(format!("ggml-rs-affinity-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (c, s) in speeds.iter().enumerate() {
            let dir = root.join(format!("cpu{c}"));
            if capacity {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join("cpu_capacity"), format!("{s}\n")).unwrap();
            } else {
                std::fs::create_dir_all(dir.join("cpufreq")).unwrap();
                std::fs::write(dir.join("cpufreq/cpuinfo_max_freq"), format!("{s}\n")).unwrap();
            }
        }
        std::fs::create_dir_all(root.join("cpufreq")).unwrap();
        std::fs::create_dir_all(root.join("cpuidle")).unwrap();
        std::fs::write(root.join("online"), "0-7\n").unwrap();
        root
    }

    /// 1 prime + 3 big + 4 little (Snapdragon 888 / 8 Gen 1 capacities).
    #[test]
    fn one_three_four_by_capacity() {
        let root = tree("134", &[325, 325, 325, 325, 828, 828, 828, 1024], true);
        assert_eq!(fastest_cpus(&root, 1), Some(vec![7]));
        assert_eq!(fastest_cpus(&root, 2), Some(vec![4, 5, 6, 7]));
        assert_eq!(fastest_cpus(&root, 4), Some(vec![4, 5, 6, 7]));
        // more threads than big cores: everything, which is no restriction at all
        assert_eq!(fastest_cpus(&root, 5), None);
        std::fs::remove_dir_all(root).unwrap();
    }

    /// 2 big + 6 little (Helio G99-style), known only by maximum frequency.
    #[test]
    fn two_six_by_max_freq() {
        let root = tree("26", &[2000000, 2000000, 2000000, 2000000, 2000000, 2000000, 2200000, 2200000], false);
        assert_eq!(cpu_speeds(&root).unwrap().len(), 8);
        assert_eq!(fastest_cpus(&root, 2), Some(vec![6, 7]));
        assert_eq!(fastest_cpus(&root, 4), None);
        std::fs::remove_dir_all(root).unwrap();
    }

    /// Identical cores (this machine's kind) or no sysfs: nothing to choose, nothing pinned.
    #[test]
    fn uniform_or_unknown_chooses_nothing() {
        let root = tree("uniform", &[1024, 1024, 1024, 1024], true);
        assert_eq!(fastest_cpus(&root, 2), None);
        std::fs::remove_dir_all(root).unwrap();
        assert_eq!(fastest_cpus(Path::new("/nonexistent-sysfs"), 2), None);
    }

    /// The pinned thread really is restricted to the set (and other threads are not).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn pinning_restricts_the_thread() {
        fn allowed() -> Vec<usize> {
            // SAFETY: a zeroed cpu_set_t is valid; the kernel fills at most its size.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                assert_eq!(libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set), 0);
                (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
            }
        }
        let before = allowed();
        let first = before[0];
        let inside = std::thread::spawn(move || {
            pin_current_thread(&[first]);
            allowed()
        })
        .join()
        .unwrap();
        assert_eq!(inside, vec![first]);
        assert_eq!(allowed(), before);
    }
}
