//! The ops the SIMD backend knows, free of any ggml revision's numbering.
//!
//! ggml revisions number `enum ggml_op` differently (and later ones add ops); each revision lists
//! ggml's op names in its own numbering, the library reads a node's op id through that list by
//! name (`simd::node`), and every kernel matches on [`Op`]. A name the table below does not hold
//! becomes [`Op::Unsupported`], which `supports` declines, so a newer revision's ops fall to
//! ggml-cpu instead of being misread as one of ours.

#[cfg(feature = "compute")]
use super::view::Raw;
#[cfg(feature = "compute")]
use crate::quant::HostQ8K;
#[cfg(feature = "compute")]
use crate::CpuOrder;

/// The one table of the ops the SIMD backend knows: each row is an [`Op`], ggml's names for it
/// (`op(...)`: `enum ggml_op` names; `unary(...)`: GGML_OP_UNARY with that `enum ggml_unary_op`
/// name), the kernel module computing it (`=> module`, in `ops`; none for the ops with nothing to
/// compute), for an element-wise op the constructor the start-up fidelity check builds it with
/// (`probe "sqr"`: `ggml_sqr`) and `since 2026` for the ops only the 2026 graphs hold (SIMD routes them to their
/// kernels in the builds that serve a 2026 revision only: `kernel::<WITH_2026>`). A revision's op ids never
/// appear here: each revision lists ggml's op names in its numbering (`OP_NAMES` in its facts
/// file), and [`Op::from_ggml`] reads a node's op by name. Adding an op is one row here and its
/// kernel in its module (docs/layout.md, "adding an op").
macro_rules! op_table {
    ($( $(#[$doc:meta])* $op:ident: $kind:ident($($gname:literal),+) $(=> $module:ident)? $(, probe $probe:literal)? $(, since $year:literal)?; )*) => {
        /// A graph node's operation, as the kernels see it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Op {
            $( $(#[$doc])* $op, )*
            /// Every other op id (and unary ops the table does not name): never computed here.
            Unsupported,
        }

        impl Op {
            /// Every op of the table, [`Op::Unsupported`] last.
            pub const ALL: &'static [Op] = &[$(Op::$op,)* Op::Unsupported];

            /// The op's name as logs print it and `GGML_RS_FAULT_SIMD_ORDER` names a kind of node:
            /// the same words as `Debug`, which the phone builds compile to nothing
            /// (`-Zfmt-debug=none`, scripts/cross.sh).
            pub fn name(self) -> &'static str {
                match self {
                    $(Op::$op => stringify!($op),)*
                    Op::Unsupported => "Unsupported",
                }
            }

            /// ggml's names for the op.
            pub const fn ggml(self) -> GgmlNames {
                match self {
                    $(Op::$op => GgmlNames::$kind(&[$($gname),+]),)*
                    Op::Unsupported => GgmlNames::None,
                }
            }

            /// The module computing the op (its `supports` and `compute`); `None` for the ops with
            /// nothing to compute (leaves, views), for [`Op::Unsupported`] and, unless `WITH_2026`,
            /// for the ops only the 2026 graphs hold: a build serving no 2026 revision then never
            /// names their kernels, so its link drops them (the phone library's size budget).
            #[cfg(feature = "compute")]
            pub fn kernel<const WITH_2026: bool>(self) -> Option<Kernel> {
                match self {
                    $(Op::$op => op_table!(@kernel WITH_2026 [$($year)?] $($module)?),)*
                    Op::Unsupported => None,
                }
            }

            /// Whether the op is GGML_OP_UNARY with one of `enum ggml_unary_op`'s ops.
            pub const fn is_unary(self) -> bool {
                match self {
                    $(Op::$op => op_table!(@is_unary $kind),)*
                    Op::Unsupported => false,
                }
            }

            /// The element-wise ops' probe for the start-up fidelity check: ggml's constructor
            /// (`ggml_<name>`) and whether it takes two sources (the `binary` module's ops).
            pub const fn probe(self) -> Option<(&'static str, bool)> {
                match self {
                    $(Op::$op => op_table!(@probe $($probe)? ; $($module)?),)*
                    Op::Unsupported => None,
                }
            }

            /// Whether only the 2026 graphs hold the op (see the table).
            pub const fn since_2026(self) -> bool {
                match self {
                    $(Op::$op => op_table!(@since $($year)?),)*
                    Op::Unsupported => false,
                }
            }
        }
    };
    (@kernel $with_2026:ident [$year:literal] $module:ident) => {
        if $with_2026 {
            op_table!(@kernel $with_2026 [] $module)
        } else {
            None
        }
    };
    (@kernel $with_2026:ident [] $module:ident) => {
        Some(Kernel { supports: crate::ops::$module::supports, compute: crate::ops::$module::compute })
    };
    (@kernel $with_2026:ident [$($year:literal)?]) => {
        None
    };
    (@probe $probe:literal ; binary) => {
        Some(($probe, true))
    };
    (@probe $probe:literal ; $module:ident) => {
        Some(($probe, false))
    };
    (@probe ; $($module:ident)?) => {
        None
    };
    (@is_unary unary) => {
        true
    };
    (@is_unary op) => {
        false
    };
    (@since $year:literal) => {
        true
    };
    (@since) => {
        false
    };
}

op_table! {
    /// GGML_OP_NONE: a leaf, nothing to compute.
    None: op("NONE");
    /// VIEW, RESHAPE, PERMUTE, TRANSPOSE: metadata only, nothing to compute.
    View: op("VIEW", "RESHAPE", "PERMUTE", "TRANSPOSE");
    Add: op("ADD") => binary, probe "add";
    Sub: op("SUB") => binary, probe "sub";
    Mul: op("MUL") => binary, probe "mul";
    Div: op("DIV") => binary, probe "div";
    Scale: op("SCALE") => unary, probe "scale";
    Sqr: op("SQR") => unary, probe "sqr";
    Sqrt: op("SQRT") => unary, probe "sqrt";
    Silu: unary("SILU") => unary, probe "silu";
    Gelu: unary("GELU") => unary, probe "gelu";
    /// CPY, DUP and CONT: element `k` of the source to element `k` of the destination.
    Copy: op("CPY", "DUP", "CONT") => copy;
    Norm: op("NORM") => norm;
    RmsNorm: op("RMS_NORM") => norm;
    SoftMax: op("SOFT_MAX") => softmax;
    Rope: op("ROPE") => rope;
    GetRows: op("GET_ROWS") => get_rows;
    Im2col: op("IM2COL") => im2col;
    MulMat: op("MUL_MAT") => mul_mat;
    /// SET_ROWS: rows of F32 written into rows of the destination's type at I32/I64 indices (the
    /// 2026 KV cache stores).
    SetRows: op("SET_ROWS") => set_rows, since 2026;
    /// GLU (SwiGLU, GeGLU, ...: which one is `op_params[0]`, halves swapped is `op_params[1]`).
    Glu: op("GLU") => glu, since 2026;
    /// FLASH_ATTN_EXT: attention with an online softmax over K/V blocks.
    FlashAttnExt: op("FLASH_ATTN_EXT") => flash_attn, since 2026;
}

/// ggml's names for an [`Op`]: `enum ggml_op` names, or GGML_OP_UNARY with one of
/// `enum ggml_unary_op`'s.
// (lower case: the table's rows read `op(...)` / `unary(...)`, as ggml's own words)
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub enum GgmlNames {
    op(&'static [&'static str]),
    unary(&'static [&'static str]),
    None,
}

/// What computes an op: its module's `supports` and `compute` (see `ops`).
#[cfg(feature = "compute")]
#[derive(Clone, Copy)]
pub struct Kernel {
    pub supports: fn(&Node) -> bool,
    pub compute: fn(&crate::pool::Session, &Node) -> bool,
}

impl Op {
    /// The op of a node named `op` in `enum ggml_op` (and, for "UNARY", `unary` in
    /// `enum ggml_unary_op`): [`Op::Unsupported`] for a name the table does not hold. A `const fn`
    /// so that each revision's id-to-op table is built at compile time ([`OpTable`]).
    pub const fn from_ggml(op: &str, unary: &str) -> Op {
        let mut i = 0;
        while i < Op::ALL.len() {
            let found = match Op::ALL[i].ggml() {
                GgmlNames::op(names) => !eq(op.as_bytes(), b"UNARY") && any_eq(names, op),
                GgmlNames::unary(names) => eq(op.as_bytes(), b"UNARY") && any_eq(names, unary),
                GgmlNames::None => false,
            };
            if found {
                return Op::ALL[i];
            }
            i += 1;
        }
        Op::Unsupported
    }
}

/// Most op ids any revision has (`GGML_OP_COUNT` is 102 in 2026) and unary op ids.
pub const MAX_OPS: usize = 128;
pub const MAX_UNARY: usize = 32;

/// A revision's op ids read as [`Op`]s: built from its names at compile time (what
/// [`Op::from_ggml`] answers for each id), so reading a node's op is two array lookups.
#[derive(Clone, Copy, Debug)]
pub struct OpTable {
    ops: [Op; MAX_OPS],
    unary: [Op; MAX_UNARY],
    unary_id: i32,
}

impl OpTable {
    /// The table of a revision whose `enum ggml_op` is `op_names` and `enum ggml_unary_op`
    /// `unary_names` (ids past the names: [`Op::Unsupported`]).
    pub const fn new(op_names: &[&str], unary_names: &[&str]) -> OpTable {
        let mut ops = [Op::Unsupported; MAX_OPS];
        let mut unary = [Op::Unsupported; MAX_UNARY];
        let mut i = 0;
        while i < op_names.len() && i < MAX_OPS {
            ops[i] = Op::from_ggml(op_names[i], "");
            i += 1;
        }
        let mut u = 0;
        while u < unary_names.len() && u < MAX_UNARY {
            unary[u] = Op::from_ggml("UNARY", unary_names[u]);
            u += 1;
        }
        OpTable { ops, unary, unary_id: id_of(op_names, "UNARY") }
    }

    /// The op of a node with op id `id` (and `unary`, its `op_params[0]`, read for UNARY only).
    pub fn op(&self, id: i32, unary: i32) -> Op {
        let at = |t: &[Op], i: i32| usize::try_from(i).ok().and_then(|i| t.get(i).copied()).unwrap_or(Op::Unsupported);
        if id == self.unary_id && id >= 0 {
            at(&self.unary, unary)
        } else {
            at(&self.ops, id)
        }
    }
}

/// The id of `name` in `names` (a revision's `enum ggml_op`), -1 when the revision has no such op.
pub const fn id_of(names: &[&str], name: &str) -> i32 {
    let mut i = 0;
    while i < names.len() {
        if eq(names[i].as_bytes(), name.as_bytes()) {
            return i as i32;
        }
        i += 1;
    }
    -1
}

const fn any_eq(names: &[&str], name: &str) -> bool {
    id_of(names, name) >= 0
}

const fn eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

#[cfg(feature = "compute")]
/// One node as the ops read it: its op, its destination, up to five sources and its parameters,
/// with no revision type left.
#[derive(Clone, Copy, Debug)]
pub struct Node {
    pub op: Op,
    pub dst: Raw,
    /// ggml's `src[0..5]` (FLASH_ATTN_EXT reads five: q, k, v, mask, sinks).
    pub src: [Option<Raw>; 5],
    pub params: [i32; 16],
    /// The float order of the revision's ggml-cpu where revisions differ (`R::CPU_ORDER`): the
    /// kernels follow it to stay bit-identical to the ggml-cpu they run beside.
    pub order: CpuOrder,
    /// The host ggml-cpu's Q8_K quantizer, which the K-quant products quantize their
    /// activations with (see [`HostQ8K`]); `None` without ggml-cpu.
    pub q8k: Option<HostQ8K>,
    /// Set when a source lives in ggml-cpu's `CPU_REPACK` buffer type, whose bytes are not
    /// ggml's block rows: how (see [`Repack`]). `None` for plain sources.
    pub repack: Option<Repack>,
}

#[cfg(feature = "compute")]
/// The layout of a source that ggml-cpu's repacking (`CPU_REPACK` buffers, repack.cpp) gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repack {
    /// `src[0]` of a MUL_MAT is Q4_K as ggml-cpu repacks it on an AVX2 host without AVX-512
    /// (`block_q4_Kx8`: 8 rows interleaved 8 bytes at a time, computed by
    /// `ggml_gemv/gemm_q4_K_8x8_q8_K`); every other source is plain.
    Q4Kx8,
    /// `src[0]` of a MUL_MAT is Q4_0 as ggml-cpu repacks it on such a host (`block_q4_0x8`: 8
    /// rows interleaved 8 bytes at a time, nibbles xor 0x88, computed by
    /// `ggml_gemv/gemm_q4_0_8x8_q8_0`); every other source is plain.
    Q4_0x8,
    /// `src[0]` of a MUL_MAT is IQ4_NL as ggml-cpu repacks it on such a host (`block_iq4_nlx8`:
    /// Q4_0's interleave without the xor, computed by `ggml_gemv/gemm_iq4_nl_8x8_q8_0`).
    IQ4NLx8,
    /// `src[0]` of a MUL_MAT is Q4_0 as ggml-cpu repacks it on aarch64 with the dot product
    /// extension and without i8mm (`block_q4_0x4`: 4 rows interleaved 4 bytes at a time, nibbles
    /// xor 0x88, computed by `ggml_gemv/gemm_q4_0_4x4_q8_0`).
    Q4_0_4x4,
    /// `src[0]` of a MUL_MAT is Q4_0 as ggml-cpu repacks it on aarch64 with i8mm (and dotprod):
    /// `block_q4_0x4` interleaved 8 bytes at a time (`ggml_gemv/gemm_q4_0_4x8_q8_0`).
    Q4_0_4x8,
    /// `src[0]` of a MUL_MAT is IQ4_NL as ggml-cpu repacks it on aarch64 with dotprod
    /// (`block_iq4_nlx4`: Q4_0's 4x4 interleave without the xor, `ggml_gemv/gemm_iq4_nl_4x4_q8_0`).
    IQ4NLx4,
    /// `src[0]` of a MUL_MAT is Q8_0 as ggml-cpu repacks it on aarch64 with dotprod and without
    /// i8mm (`block_q8_0x4`: 4 rows interleaved 4 bytes at a time, `ggml_gemv/gemm_q8_0_4x4_q8_0`).
    Q8_0_4x4,
    /// `src[0]` of a MUL_MAT is Q8_0 as ggml-cpu repacks it on aarch64 with i8mm (and dotprod):
    /// interleaved 8 bytes at a time (`ggml_gemv/gemm_q8_0_4x8_q8_0`).
    Q8_0_4x8,
    /// `src[0]` of a MUL_MAT is Q4_K as ggml-cpu repacks it on aarch64 with i8mm (and dotprod):
    /// `block_q4_Kx8` as on x86 (8 rows interleaved 8 bytes at a time), but computed by the NEON
    /// `ggml_gemv/gemm_q4_K_8x8_q8_K`, whose float steps are not x86's.
    Q4K8x8,
    /// `src[0]` of a MUL_MAT is Q4_K as ggml-cpu repacks it on aarch64 with dotprod and without
    /// i8mm: `block_q4_Kx8` interleaved 4 bytes at a time (`ggml_gemv/gemm_q4_K_8x4_q8_K`).
    Q4K8x4,
    /// A source in a layout the kernels do not read: the node is declined.
    Other,
}

#[cfg(feature = "compute")]
impl Node {
    /// Source `i` (present: `supports` checked it before `compute` runs).
    pub fn src(&self, i: usize) -> Raw {
        self.src[i].expect("source checked by supports")
    }

    /// The f32 parameter stored in `params[i]`.
    pub fn param_f32(&self, i: usize) -> f32 {
        f32::from_bits(self.params[i] as u32)
    }
}

#[cfg(all(test, feature = "compute"))]
mod tests {
    use super::Op;
    use crate::cpu_features::SimdLevel;

    /// `name` answers what `Debug` prints (the fault-injection names and the logs rely on it).
    #[test]
    fn names_match_debug() {
        for &op in Op::ALL {
            assert_eq!(op.name(), format!("{:?}", op));
        }
        for level in [SimdLevel::Portable, SimdLevel::Avx2, SimdLevel::Avx512, SimdLevel::Neon] {
            assert_eq!(level.name(), format!("{:?}", level));
        }
    }

    /// Each row's ggml names read back as that row, UNARY's only through its unary names, and a
    /// name the table does not hold is declined.
    #[test]
    fn ggml_names_read_back() {
        use super::GgmlNames;
        for &op in Op::ALL {
            match op.ggml() {
                GgmlNames::op(names) => names.iter().for_each(|n| assert_eq!(Op::from_ggml(n, ""), op, "{n}")),
                GgmlNames::unary(names) => names.iter().for_each(|n| {
                    assert_eq!(Op::from_ggml("UNARY", n), op, "{n}");
                    assert_eq!(Op::from_ggml(n, ""), Op::Unsupported, "{n} is not an op of its own");
                }),
                GgmlNames::None => assert_eq!(op, Op::Unsupported),
            }
        }
        assert_eq!(Op::from_ggml("UNARY", "TANH"), Op::Unsupported);
        assert_eq!(Op::from_ggml("MUL_MAT_ID", ""), Op::Unsupported);
        assert_eq!(Op::from_ggml("UNARY", ""), Op::Unsupported);
        let t = super::OpTable::new(&["NONE", "MUL_MAT", "UNARY", "NEWER_OP"], &["ABS", "SILU"]);
        let ops: Vec<Op> = (-1..5).map(|id| t.op(id, 1)).collect();
        assert_eq!(ops, [Op::Unsupported, Op::None, Op::MulMat, Op::Silu, Op::Unsupported, Op::Unsupported]);
        let unary: Vec<Op> = (-1..3).map(|u| t.op(2, u)).collect();
        assert_eq!(unary, [Op::Unsupported, Op::Unsupported, Op::Silu, Op::Unsupported]);
        assert_eq!(super::id_of(&["NONE", "MUL_MAT"], "MUL_MAT"), 1);
        assert_eq!(super::id_of(&["NONE", "MUL_MAT"], "GLU"), -1);
    }
}
