//! Which instruction set the numeric kernels use.
//!
//! Detection runs once per process so the hot loops pay nothing for it and every kernel agrees on
//! the same path (mixing paths inside one graph would make results depend on which op ran where).
//! `GGML_RS_SIMD_PORTABLE=1` pins the portable kernels, which is how a suspected SIMD bug is
//! bisected in the field; tests instead call the `*_at(level, ..)` variants to run both paths in
//! one process.

use std::sync::OnceLock;

/// Environment variable that, when set to anything but `""`/`"0"`, forces [`SimdLevel::Portable`].
pub const PORTABLE_ENV: &str = "GGML_RS_SIMD_PORTABLE";

/// A family of kernels. Ordered: a machine that can run a level can run every lower one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SimdLevel {
    /// Plain Rust, written so LLVM can auto-vectorize it; the reference the SIMD paths are tested
    /// against. On aarch64 this is what runs (no hand-written NEON yet).
    Portable,
    /// x86_64 with AVX2 + FMA + F16C (Haswell / Zen and later). One level for all three because
    /// no shipping CPU has AVX2 without the other two, and one flag keeps dispatch trivial.
    Avx2,
}

/// Best level the hardware supports, ignoring the environment override.
pub fn hardware_level() -> SimdLevel {
    static HW: OnceLock<SimdLevel> = OnceLock::new();
    *HW.get_or_init(detect_hardware)
}

/// Level the dispatching kernels use: [`hardware_level`] unless [`PORTABLE_ENV`] asks otherwise.
#[inline]
pub fn simd_level() -> SimdLevel {
    static LEVEL: OnceLock<SimdLevel> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        level_from_env(std::env::var(PORTABLE_ENV).ok().as_deref(), hardware_level())
    })
}

/// Every level this machine can execute, lowest first, so tests can compare them all.
pub fn available_levels() -> Vec<SimdLevel> {
    let hw = hardware_level();
    [SimdLevel::Portable, SimdLevel::Avx2].into_iter().filter(|l| *l <= hw).collect()
}

/// Clamps a requested level to what the hardware can run. The `*_at` entry points go through
/// this, which is what makes them safe to call with any level.
#[inline]
pub fn clamp_level(requested: SimdLevel) -> SimdLevel {
    requested.min(hardware_level())
}

/// The env override as a pure function, so its parsing is testable without touching the
/// process environment (which is read only once).
pub fn level_from_env(value: Option<&str>, hw: SimdLevel) -> SimdLevel {
    match value.map(str::trim) {
        Some(v) if !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false") => {
            SimdLevel::Portable
        }
        _ => hw,
    }
}

fn detect_hardware() -> SimdLevel {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
        {
            return SimdLevel::Avx2;
        }
    }
    SimdLevel::Portable
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_parsing() {
        let hw = SimdLevel::Avx2;
        assert_eq!(level_from_env(None, hw), hw);
        assert_eq!(level_from_env(Some(""), hw), hw);
        assert_eq!(level_from_env(Some("0"), hw), hw);
        assert_eq!(level_from_env(Some("false"), hw), hw);
        assert_eq!(level_from_env(Some("1"), hw), SimdLevel::Portable);
        assert_eq!(level_from_env(Some(" yes "), hw), SimdLevel::Portable);
        assert_eq!(level_from_env(Some("1"), SimdLevel::Portable), SimdLevel::Portable);
    }

    #[test]
    fn levels_are_consistent() {
        let levels = available_levels();
        assert_eq!(levels[0], SimdLevel::Portable);
        assert_eq!(*levels.last().unwrap(), hardware_level());
        assert!(simd_level() <= hardware_level());
        assert_eq!(clamp_level(SimdLevel::Avx2), hardware_level());
        assert_eq!(clamp_level(SimdLevel::Portable), SimdLevel::Portable);
    }
}
