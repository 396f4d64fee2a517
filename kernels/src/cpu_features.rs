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

/// A family of kernels. Every machine runs `Portable` plus the SIMD levels of its own
/// architecture it has (`Avx2`, and `Avx512` above it, on x86_64; `Neon` on aarch64); asking for
/// a level the machine lacks gets `Portable` (see [`clamp_level`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SimdLevel {
    /// Plain Rust, written so LLVM can auto-vectorize it; the reference the SIMD paths are tested
    /// against.
    Portable,
    /// x86_64 with AVX2 + FMA + F16C (Haswell / Zen and later). One level for all three because
    /// no shipping CPU has AVX2 without the other two, and one flag keeps dispatch trivial.
    Avx2,
    /// x86_64 with AVX-512 F, BW, VL, DQ and VNNI on top of `Avx2`. Only the MUL_MAT kernels
    /// differ from `Avx2` (every other kernel runs its AVX2 code here), and they compute every
    /// output lane by lane in the same order as the AVX2 ones (an AVX2 accumulator pair per
    /// 512-bit register, `vpdpbusd` forming the same exact integer sums as `pmaddubsw` +
    /// `pmaddwd`, which never saturate on ggml's quant ranges), so results stay bit-identical to
    /// ggml-cpu's AVX2 build: a speed level, not a numerics level. [`AVX2_ONLY_ENV`] keeps the
    /// dispatching kernels at `Avx2`.
    Avx512,
    /// aarch64 Advanced SIMD (NEON), which the architecture makes mandatory, so this level needs
    /// no detection. The kernels follow ggml-cpu's NEON code as built for phones with the dot
    /// product extension and half-precision arithmetic (llama.rn's `*_fp16_dotprod` libraries).
    /// `sdot` itself is optional (Armv8.2+, `is_aarch64_feature_detected!("dotprod")`, cached in
    /// [`has_dotprod`]): where it is missing the same per-lane integer sums are formed with
    /// widening multiplies and pairwise adds, so the results are identical either way and only
    /// the speed differs. F16 products accumulate in half precision where the CPU has FEAT_FP16
    /// ([`has_fp16`], as ggml built with `+fp16`) and in f32 elsewhere (as ggml without it).
    Neon,
}

impl SimdLevel {
    /// The level's name as logs and the SIMD device's description print it (the same words as
    /// `Debug`, which the phone builds compile to nothing: `-Zfmt-debug=none`, scripts/cross.sh).
    pub fn name(self) -> &'static str {
        match self {
            SimdLevel::Portable => "Portable",
            SimdLevel::Avx2 => "Avx2",
            SimdLevel::Avx512 => "Avx512",
            SimdLevel::Neon => "Neon",
        }
    }
}

/// Best level the hardware supports, ignoring the environment override.
pub fn hardware_level() -> SimdLevel {
    static HW: OnceLock<SimdLevel> = OnceLock::new();
    *HW.get_or_init(detect_hardware)
}

/// Level the dispatching kernels use: [`hardware_level`] unless [`PORTABLE_ENV`] (or, for
/// `Avx512`, [`AVX2_ONLY_ENV`]) asks otherwise.
#[inline]
pub fn simd_level() -> SimdLevel {
    static LEVEL: OnceLock<SimdLevel> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        let level = level_from_env(std::env::var(PORTABLE_ENV).ok().as_deref(), hardware_level());
        if level == SimdLevel::Avx512 && avx2_only() {
            SimdLevel::Avx2
        } else {
            level
        }
    })
}

/// Every level this machine can execute, `Portable` first, so tests can compare them all.
pub fn available_levels() -> Vec<SimdLevel> {
    [SimdLevel::Portable, SimdLevel::Avx2, SimdLevel::Avx512, SimdLevel::Neon]
        .into_iter()
        .filter(|&l| clamp_level(l) == l)
        .collect()
}

/// Maps a requested level to one the hardware can run: itself when it is `Portable`, the
/// detected level or `Avx2` on an `Avx512` machine, else `Portable` (the level of another
/// architecture, or a level an older x86 lacks). The `*_at` entry points go through this, which
/// is what makes them safe to call with any level.
#[inline]
pub fn clamp_level(requested: SimdLevel) -> SimdLevel {
    match (requested, hardware_level()) {
        (r, hw) if r == hw => r,
        (SimdLevel::Avx2, SimdLevel::Avx512) => SimdLevel::Avx2,
        _ => SimdLevel::Portable,
    }
}

/// Whether `level` runs the x86 AVX2 code of the kernels that have no AVX-512 flavour.
#[inline]
pub fn is_x86(level: SimdLevel) -> bool {
    matches!(level, SimdLevel::Avx2 | SimdLevel::Avx512)
}

/// Whether the CPU has Armv8.2 half-precision arithmetic (FEAT_FP16, Linux's `asimdhp`); always
/// false elsewhere. ggml-cpu built for such CPUs (`+fp16`) accumulates F16 dot products in half
/// precision, so the NEON F16 kernels do too where it is available (see `quant::tile_neon`).
#[inline]
pub fn has_fp16() -> bool {
    #[cfg(target_arch = "aarch64")]
    {
        static FP16: OnceLock<bool> = OnceLock::new();
        *FP16.get_or_init(|| std::arch::is_aarch64_feature_detected!("fp16"))
    }
    #[cfg(not(target_arch = "aarch64"))]
    {
        false
    }
}

/// Whether the CPU has the Armv8.2 dot product instructions (`sdot`); always false elsewhere.
/// Only the NEON integer kernels' speed depends on it (see [`SimdLevel::Neon`]).
#[inline]
pub fn has_dotprod() -> bool {
    #[cfg(target_arch = "aarch64")]
    {
        static DOT: OnceLock<bool> = OnceLock::new();
        *DOT.get_or_init(|| std::arch::is_aarch64_feature_detected!("dotprod"))
    }
    #[cfg(not(target_arch = "aarch64"))]
    {
        false
    }
}

/// Whether the integer products (MUL_MAT of a block format) run here at `level`: everywhere but
/// on an aarch64 CPU without `sdot` in a build without the `neon-nodot` feature (the phone build,
/// see kernels/Cargo.toml), where they are declined to ggml-cpu.
pub fn integer_products(level: SimdLevel) -> bool {
    cfg!(feature = "neon-nodot") || level != SimdLevel::Neon || has_dotprod()
}

/// Environment variable that, set to `1`, keeps the x86 kernels to AVX2 + FMA + F16C even where
/// the CPU has AVX-512 or AVX-VNNI: how the AVX2-only speed is measured on a newer machine and
/// how both code paths are tested on one.
pub const AVX2_ONLY_ENV: &str = "GGML_RS_SIMD_AVX2_ONLY";

fn avx2_only() -> bool {
    static ONLY: OnceLock<bool> = OnceLock::new();
    *ONLY.get_or_init(|| std::env::var(AVX2_ONLY_ENV).is_ok_and(|v| v.trim() == "1"))
}

/// Whether the CPU has the AVX-512 subset of [`SimdLevel::Avx512`] (F, BW, VL, DQ, VNNI);
/// false off x86_64 and under valgrind (which hides AVX-512). Ignores [`AVX2_ONLY_ENV`]: the
/// dispatching level does not ([`simd_level`]).
#[inline]
pub fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static AVX512: OnceLock<bool> = OnceLock::new();
        *AVX512.get_or_init(|| {
            std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vl")
                && std::arch::is_x86_feature_detected!("avx512dq")
                && std::arch::is_x86_feature_detected!("avx512vnni")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the `Avx2` level may use 256-bit `vpdpbusd` (AVX-VNNI, or AVX512-VNNI with VL): the
/// same integer sums as the AVX2 pair of instructions it replaces (see [`has_avx512`]).
#[inline]
pub fn has_vnni256() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static VNNI: OnceLock<bool> = OnceLock::new();
        *VNNI.get_or_init(|| {
            !avx2_only()
                && (std::arch::is_x86_feature_detected!("avxvnni")
                    || (std::arch::is_x86_feature_detected!("avx512vnni") && std::arch::is_x86_feature_detected!("avx512vl")))
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
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
    #[cfg(target_arch = "aarch64")]
    {
        // NEON is part of the aarch64 base ISA (and Rust's aarch64 targets enable it).
        SimdLevel::Neon
    }
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
        {
            return if has_avx512() { SimdLevel::Avx512 } else { SimdLevel::Avx2 };
        }
        SimdLevel::Portable
    }
    #[cfg(not(any(target_arch = "aarch64", target_arch = "x86_64")))]
    {
        SimdLevel::Portable
    }
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

    /// `GGML_RS_EXPECT_DOTPROD=1|0` / `GGML_RS_EXPECT_FP16=1|0` (set by scripts/test-aarch64.sh
    /// per emulated CPU) make sure both paths of the NEON integer and F16 kernels really ran.
    #[test]
    fn feature_detection_as_expected() {
        let expect = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty()).map(|v| v.trim() == "1");
        if let Some(want) = expect("GGML_RS_EXPECT_DOTPROD") {
            assert_eq!(has_dotprod(), want, "GGML_RS_EXPECT_DOTPROD");
        }
        if let Some(want) = expect("GGML_RS_EXPECT_FP16") {
            assert_eq!(has_fp16(), want, "GGML_RS_EXPECT_FP16");
        }
        #[cfg(not(target_arch = "aarch64"))]
        assert!(!has_dotprod() && !has_fp16());
    }

    #[test]
    fn levels_are_consistent() {
        let levels = available_levels();
        assert_eq!(levels[0], SimdLevel::Portable);
        assert_eq!(*levels.last().unwrap(), hardware_level());
        assert!(simd_level() <= hardware_level());
        assert_eq!(clamp_level(SimdLevel::Portable), SimdLevel::Portable);
        assert_eq!(clamp_level(hardware_level()), hardware_level());
        #[cfg(target_arch = "aarch64")]
        {
            assert_eq!(hardware_level(), SimdLevel::Neon);
            assert_eq!(clamp_level(SimdLevel::Avx2), SimdLevel::Portable);
        }
        #[cfg(target_arch = "x86_64")]
        {
            assert_eq!(clamp_level(SimdLevel::Neon), SimdLevel::Portable);
            assert_eq!(clamp_level(SimdLevel::Avx512) == SimdLevel::Avx512, has_avx512());
            if has_avx512() {
                assert_eq!(available_levels(), [SimdLevel::Portable, SimdLevel::Avx2, SimdLevel::Avx512]);
            }
        }
    }
}
