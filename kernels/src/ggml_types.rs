//! The one table of `enum ggml_type`: each id's name as ggml prints it (`ggml_type_name`) and its
//! values and bytes per block (`ggml_blck_size` / `ggml_type_size`), over every revision's ids.
//! Which ids a revision has is a fact of that revision (`Rev::TYPE_COUNT`, `REMOVED_TYPES` in the
//! library's `abi`); the library sizes tensors from here (`abi::types`), the SIMD kernels map the
//! formats they compute to ids (`quant::WType`) and the fidelity check names them. Outside the
//! `compute` feature: the drop-in without SIMD sizes tensors too.

/// One ggml type: name, values per block, bytes per block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GgmlType {
    pub name: &'static str,
    pub block: usize,
    pub bytes: usize,
}

const fn t(name: &'static str, block: usize, bytes: usize) -> Option<GgmlType> {
    Some(GgmlType { name, block, bytes })
}

/// The ids the code names (`enum ggml_type`, numbered alike in every revision).
pub mod id {
    pub const F32: i32 = 0;
    pub const F16: i32 = 1;
    pub const Q4_0: i32 = 2;
    pub const Q4_1: i32 = 3;
    pub const Q5_0: i32 = 6;
    pub const Q5_1: i32 = 7;
    pub const Q8_0: i32 = 8;
    pub const Q8_1: i32 = 9;
    pub const Q4_K: i32 = 12;
    pub const Q5_K: i32 = 13;
    pub const Q6_K: i32 = 14;
    pub const Q8_K: i32 = 15;
    pub const IQ4_NL: i32 = 20;
    pub const I32: i32 = 26;
    pub const I64: i32 = 27;
}

/// By id; `None` for the ids every revision removed (Q4_2, Q4_3, and the IQ4_NL_4_4 family).
pub const TYPES: [Option<GgmlType>; 43] = [
    t("f32", 1, 4),
    t("f16", 1, 2),
    t("q4_0", 32, 18),
    t("q4_1", 32, 20),
    None, // q4_2 (removed)
    None, // q4_3 (removed)
    t("q5_0", 32, 22),
    t("q5_1", 32, 24),
    t("q8_0", 32, 34),
    t("q8_1", 32, 36),
    t("q2_K", 256, 84),
    t("q3_K", 256, 110),
    t("q4_K", 256, 144),
    t("q5_K", 256, 176),
    t("q6_K", 256, 210),
    t("q8_K", 256, 292),
    t("iq2_xxs", 256, 66),
    t("iq2_xs", 256, 74),
    t("iq3_xxs", 256, 98),
    t("iq1_s", 256, 50),
    t("iq4_nl", 32, 18),
    t("iq3_s", 256, 110),
    t("iq2_s", 256, 82),
    t("iq4_xs", 256, 136),
    t("i8", 1, 1),
    t("i16", 1, 2),
    t("i32", 1, 4),
    t("i64", 1, 8),
    t("f64", 1, 8),
    t("iq1_m", 256, 56),
    t("bf16", 1, 2),
    t("q4_0_4_4", 32, 18), // (the 2024 lm_ revision only; removed later)
    t("q4_0_4_8", 32, 18),
    t("q4_0_8_8", 32, 18),
    t("tq1_0", 256, 54),
    t("tq2_0", 256, 66),
    None, // iq4_nl_4_4 (removed)
    None, // iq4_nl_4_8
    None, // iq4_nl_8_8
    // the 2026 revisions (ggml-common.h of cui-llama.rn 1.12.2 / whisper.rn 0.7.4 / ggml v0.20.0)
    t("mxfp4", 32, 17),  // u8 e + 16 nibble bytes
    t("nvfp4", 64, 36),  // 4 UE4M3 scales + 32 nibble bytes
    t("q1_0", 128, 18),  // f16 d + 16 bit bytes
    t("q2_0", 64, 18),   // f16 d + 16 bytes of 2-bit quants
];

/// The type of id `ty`, if any revision has it (a revision newer than this table: `None`).
pub fn ggml_type(ty: i32) -> Option<GgmlType> {
    usize::try_from(ty).ok().and_then(|i| TYPES.get(i).copied().flatten())
}

/// ggml's name of id `ty` ("?" for an id no revision has).
pub fn name(ty: i32) -> &'static str {
    ggml_type(ty).map_or("?", |t| t.name)
}
