//! Layout facts, tested rather than assumed: `tests_c/layout.c` is compiled against each host's own
//! headers (fetched by `scripts/fetch-hosts.sh`) and against our generated ones, and every
//! size/offset/value it prints must equal the Rust mirror's.

use ggml_backend_rs::abi::*;
use std::collections::BTreeMap;
use std::mem::{offset_of, size_of};
use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn host_dir(tag: &str) -> PathBuf {
    let d = root().join(".cache/hosts").join(tag).join("package/cpp");
    assert!(d.join("ggml.h").exists(), "{} not found: run scripts/fetch-hosts.sh first", d.display());
    d
}

/// Compiles and runs the probe; `ours` puts include/<tag> first (after staging the host headers
/// without its own ggml-backend*.h so that ours are the ones found).
/// A host package to probe: its cache tag, its prefix, its ggml revision and our header folder.
struct Pkg {
    tag: &'static str,
    prefix: &'static str,
    rev2026: bool,
    caps_mmap: bool,
    include: &'static str,
}

const LM: Pkg = Pkg { tag: "lm", prefix: "lm", rev2026: false, caps_mmap: false, include: "lm" };
const WSP: Pkg = Pkg { tag: "wsp", prefix: "wsp", rev2026: false, caps_mmap: false, include: "wsp" };
const CUI: Pkg = Pkg { tag: "cui", prefix: "lm", rev2026: true, caps_mmap: true, include: "lm-2026" };
const LM12: Pkg = Pkg { tag: "lm12", prefix: "lm", rev2026: true, caps_mmap: false, include: "lm-2026" };
const WSP7: Pkg = Pkg { tag: "wsp7", prefix: "wsp", rev2026: true, caps_mmap: true, include: "wsp-2026" };

/// Upstream llama.cpp's ggml (scripts/fetch-upstream.sh): its headers live in two folders.
const UPSTREAM: Pkg = Pkg { tag: "upstream", prefix: "ggml", rev2026: true, caps_mmap: true, include: "ggml-2026" };

fn upstream_dir() -> PathBuf {
    root().join(".cache/upstream/llama.cpp-stock/ggml")
}

/// llama.rn 0.13.0-rc.5 (scripts/fetch-hosts.sh rn013): llama.cpp b11118's ggml, unprefixed, in
/// upstream layout under vendor/llama.cpp.
const RN013: Pkg = Pkg { tag: "rn013", prefix: "ggml", rev2026: true, caps_mmap: true, include: "ggml-b11118" };

fn rn013_dir() -> PathBuf {
    root().join(".cache/hosts/rn013/package/vendor/llama.cpp/ggml")
}

fn probe(pkg: &Pkg, ours: bool) -> BTreeMap<String, u64> {
    let tag = pkg.tag;
    let hosts: Vec<PathBuf> = if tag == "upstream" {
        vec![upstream_dir().join("include"), upstream_dir().join("src")]
    } else if tag == "rn013" {
        vec![rn013_dir().join("include"), rn013_dir().join("src")]
    } else {
        vec![host_dir(tag)]
    };
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("layout-{}-{}", tag, if ours { "ours" } else { "host" }));
    std::fs::create_dir_all(&tmp).unwrap();
    let mut includes: Vec<PathBuf> = Vec::new();
    if ours {
        // a header dir holding the host's headers minus the two we replace
        let stage = tmp.join("stage");
        std::fs::create_dir_all(&stage).unwrap();
        for e in hosts.iter().flat_map(|h| std::fs::read_dir(h).unwrap().flatten()) {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".h") && name != "ggml-backend.h" && name != "ggml-backend-impl.h" {
                std::fs::copy(e.path(), stage.join(&name)).unwrap();
            }
        }
        includes.push(root().join("include").join(pkg.include));
        includes.push(stage);
    } else {
        includes.extend(hosts.iter().cloned());
    }
    let exe = tmp.join("layout");
    let mut cc = Command::new("cc");
    // -O1 drops the unused static inline helpers of ggml-impl.h, which would need ggml.c to link
    cc.arg(format!("-DLAYOUT_{}", pkg.prefix.to_uppercase())).arg("-std=gnu11").arg("-O1").arg("-w");
    // layout.c links no ggml at all: our header's link anchors would name ggml_init and friends
    cc.args(["-DLM_GGML_RS_NO_LINK_ANCHORS", "-DWSP_GGML_RS_NO_LINK_ANCHORS", "-DGGML_RS_NO_LINK_ANCHORS"]);
    if pkg.rev2026 {
        cc.arg("-DLAYOUT_REV2026");
    }
    if tag == "rn013" {
        cc.arg("-DLAYOUT_B11118");
    }
    // ours always declares mmap_support (written, never read); only the packages that have it print it
    if pkg.caps_mmap {
        cc.arg("-DLAYOUT_CAPS_MMAP");
    }
    for i in &includes {
        cc.arg("-I").arg(i);
    }
    cc.arg(root().join("tests_c/layout.c")).arg("-o").arg(&exe);
    let st = cc.status().expect("cc");
    assert!(st.success(), "layout.c failed to compile for {} ({})", tag, if ours { "ours" } else { "host" });
    let out = Command::new(&exe).output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap();
            (k.to_string(), v.parse::<i64>().unwrap() as u64)
        })
        .collect()
}

macro_rules! off {
    ($m:ident, $name:literal, $t:ty, $($f:ident => $c:literal),*) => {
        $m.insert(concat!($name, ".size").to_string(), size_of::<$t>() as u64);
        $( $m.insert(concat!($name, ".", $c).to_string(), offset_of!($t, $f) as u64); )*
    };
}

fn rust_side<R: Rev>() -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    off!(m, "Tensor", Tensor<R>, type_ => "type", buffer => "buffer", ne => "ne", nb => "nb", op => "op",
        op_params => "op_params", flags => "flags", src => "src", view_src => "view_src",
        view_offs => "view_offs", data => "data", name => "name", extra => "extra");
    off!(m, "HashSet", HashSet<R>, size => "size", used => "used", keys => "keys");
    off!(m, "CGraph", CGraph<R>, size => "size", n_nodes => "n_nodes", n_leafs => "n_leafs", nodes => "nodes",
        grads => "grads", grad_accs => "grad_accs", leafs => "leafs", visited_hash_set => "visited_hash_set", order => "order");
    if size_of::<R::UseCounts>() > 0 {
        m.insert("CGraph.use_counts".into(), offset_of!(CGraph<R>, use_counts) as u64);
    }
    off!(m, "BufferTypeI", BufferTypeI<R>, get_name => "get_name", alloc_buffer => "alloc_buffer",
        get_alignment => "get_alignment", get_max_size => "get_max_size", get_alloc_size => "get_alloc_size", is_host => "is_host");
    off!(m, "BufferType", BufferType<R>, iface => "iface", device => "device", context => "context");
    off!(m, "BufferI", BufferI<R>, free_buffer => "free_buffer", get_base => "get_base", init_tensor => "init_tensor",
        memset_tensor => "memset_tensor", set_tensor => "set_tensor", get_tensor => "get_tensor",
        cpy_tensor => "cpy_tensor", clear => "clear", reset => "reset");
    off!(m, "Buffer", Buffer<R>, iface => "iface", buft => "buft", context => "context", size => "size", usage => "usage");
    off!(m, "BackendI", BackendI<R>, get_name => "get_name", free => "free", set_tensor_async => "set_tensor_async",
        get_tensor_async => "get_tensor_async", cpy_tensor_async => "cpy_tensor_async", synchronize => "synchronize",
        graph_plan_create => "graph_plan_create", graph_plan_free => "graph_plan_free", graph_plan_update => "graph_plan_update",
        graph_plan_compute => "graph_plan_compute", graph_compute => "graph_compute", event_record => "event_record",
        event_wait => "event_wait");
    off!(m, "Backend", Backend<R>, guid => "guid", iface => "iface", device => "device", context => "context");
    off!(m, "Event", Event<R>, device => "device", context => "context");
    off!(m, "DevCaps", DevCaps, async_ => "async", host_buffer => "host_buffer", buffer_from_host_ptr => "buffer_from_host_ptr", events => "events");
    off!(m, "DevProps", DevProps<R>, name => "name", description => "description", memory_free => "memory_free",
        memory_total => "memory_total", type_ => "type", caps => "caps");
    off!(m, "DeviceI", DeviceI<R>, get_name => "get_name", get_description => "get_description", get_memory => "get_memory",
        get_type => "get_type", get_props => "get_props", init_backend => "init_backend", get_buffer_type => "get_buffer_type",
        get_host_buffer_type => "get_host_buffer_type", buffer_from_host_ptr => "buffer_from_host_ptr",
        supports_op => "supports_op", supports_buft => "supports_buft", offload_op => "offload_op",
        event_new => "event_new", event_free => "event_free", event_synchronize => "event_synchronize");
    off!(m, "Device", Device<R>, iface => "iface", reg => "reg", context => "context");
    off!(m, "RegI", RegI<R>, get_name => "get_name", get_device_count => "get_device_count", get_device => "get_device",
        get_proc_address => "get_proc_address");
    off!(m, "Reg", Reg<R>, iface => "iface", context => "context");
    off!(m, "GraphCopy", GraphCopy<R>, buffer => "buffer", ctx_allocated => "ctx_allocated",
        ctx_unallocated => "ctx_unallocated", graph => "graph");
    if size_of::<R::Buffer2d>() > 0 {
        let b2 = offset_of!(BufferI<R>, tensor_2d) as u64;
        m.insert("BufferI.set_tensor_2d".into(), b2);
        m.insert("BufferI.get_tensor_2d".into(), b2 + 8);
        let a2 = offset_of!(BackendI<R>, tensor_2d_async) as u64;
        m.insert("BackendI.set_tensor_2d_async".into(), a2);
        m.insert("BackendI.get_tensor_2d_async".into(), a2 + 8);
        m.insert("BackendI.graph_optimize".into(), offset_of!(BackendI<R>, graph_optimize) as u64);
        m.insert("Reg.api_version".into(), offset_of!(Reg<R>, header) as u64);
        m.insert("DevProps.device_id".into(), offset_of!(DevProps<R>, device_id) as u64);
        m.insert("DevCaps.mmap_support".into(), (offset_of!(DevProps<R>, caps_extra) - offset_of!(DevProps<R>, caps)) as u64);
        m.insert("DevCaps.size".into(), (offset_of!(DevProps<R>, caps_extra) - offset_of!(DevProps<R>, caps) + size_of::<R::CapsExtra>()) as u64);
        m.insert("CGraph.uid".into(), offset_of!(CGraph<R>, uid) as u64);
        m.insert("const.DEV_TYPE_IGPU".into(), R::DEV_TYPE_IGPU.unwrap_or(-1) as i64 as u64);
    }
    m.insert("op.none".into(), R::OPS.none as i64 as u64);
    m.insert("op.dup".into(), R::OPS.dup as i64 as u64);
    m.insert("op.add".into(), R::OPS.add as i64 as u64);
    m.insert("op.sub".into(), R::OPS.sub as i64 as u64);
    m.insert("op.mul".into(), R::OPS.mul as i64 as u64);
    m.insert("op.div".into(), R::OPS.div as i64 as u64);
    m.insert("op.sqr".into(), R::OPS.sqr as i64 as u64);
    m.insert("op.sqrt".into(), R::OPS.sqrt as i64 as u64);
    m.insert("op.norm".into(), R::OPS.norm as i64 as u64);
    m.insert("op.rms_norm".into(), R::OPS.rms_norm as i64 as u64);
    m.insert("op.mul_mat".into(), R::OPS.mul_mat as i64 as u64);
    m.insert("op.scale".into(), R::OPS.scale as i64 as u64);
    m.insert("op.cpy".into(), R::OPS.cpy as i64 as u64);
    m.insert("op.cont".into(), R::OPS.cont as i64 as u64);
    m.insert("op.reshape".into(), R::OPS.reshape as i64 as u64);
    m.insert("op.view".into(), R::OPS.view as i64 as u64);
    m.insert("op.permute".into(), R::OPS.permute as i64 as u64);
    m.insert("op.transpose".into(), R::OPS.transpose as i64 as u64);
    m.insert("op.get_rows".into(), R::OPS.get_rows as i64 as u64);
    m.insert("op.soft_max".into(), R::OPS.soft_max as i64 as u64);
    m.insert("op.rope".into(), R::OPS.rope as i64 as u64);
    m.insert("op.im2col".into(), R::OPS.im2col as i64 as u64);
    m.insert("op.unary".into(), R::OPS.unary as i64 as u64);
    m.insert("op.flash_attn_ext".into(), R::OPS.flash_attn_ext as i64 as u64);
    m.insert("op.set_rows".into(), R::OPS.set_rows as i64 as u64);
    m.insert("op.glu".into(), R::OPS.glu as i64 as u64);
    let inplace = if size_of::<R::Buffer2d>() > 0 { "inplace26" } else { "inplace" };
    for (k, &op) in R::INPLACE_OPS.iter().enumerate() {
        m.insert(format!("{}.{}", inplace, k), op as i64 as u64);
    }
    let mut c = |k: &str, v: i64| {
        m.insert(format!("const.{}", k), v as u64);
    };
    c("MAX_DIMS", MAX_DIMS as i64);
    c("MAX_SRC", MAX_SRC as i64);
    c("MAX_OP_PARAMS", MAX_OP_PARAMS as i64);
    c("MAX_NAME", MAX_NAME as i64);
    c("TENSOR_ALIGNMENT", TENSOR_ALIGNMENT as i64);
    c("TYPE_COUNT", R::TYPE_COUNT as i64);
    c("UNARY_GELU", ggml_rs_kernels::op::id_of(R::UNARY_NAMES, "GELU") as i64);
    c("UNARY_SILU", ggml_rs_kernels::op::id_of(R::UNARY_NAMES, "SILU") as i64);
    c("TENSOR_FLAG_INPUT", TENSOR_FLAG_INPUT as i64);
    c("TENSOR_FLAG_OUTPUT", TENSOR_FLAG_OUTPUT as i64);
    c("STATUS_ALLOC_FAILED", STATUS_ALLOC_FAILED as i64);
    c("STATUS_FAILED", STATUS_FAILED as i64);
    c("STATUS_SUCCESS", STATUS_SUCCESS as i64);
    c("STATUS_ABORTED", STATUS_ABORTED as i64);
    c("USAGE_COMPUTE", USAGE_COMPUTE as i64);
    c("DEV_TYPE_ACCEL", <R as Rev>::DEV_TYPE_ACCEL as i64);
    c("LOG_LEVEL_ERROR", LogLevel::Error as i64);
    if R::BACKEND_API_VERSION > 0 {
        c("BACKEND_API_VERSION", R::BACKEND_API_VERSION as i64);
    }
    m
}

/// Facts the 2026 probe prints for the record (every enum in full, the meta backend's types)
/// that the library has no mirror of, as it does not act on them.
fn not_mirrored(k: &str) -> bool {
    const PREFIXES: [&str; 6] = ["op26.", "type26.", "unary26.", "glu26.", "MetaSplitState.", "const.SPLIT_AXIS_"];
    const KEYS: [&str; 9] = [
        "const.META_MAX_DEVICES",
        "const.TENSOR_FLAG_PARAM",
        "const.TENSOR_FLAG_LOSS",
        "const.TENSOR_FLAG_COMPUTE",
        "const.DEFAULT_GRAPH_SIZE",
        "const.DEV_TYPE_CPU",
        "const.DEV_TYPE_GPU",
        "const.DEV_TYPE_META",
        "const.USAGE_ANY",
    ];
    PREFIXES.iter().any(|p| k.starts_with(p)) || KEYS.contains(&k) || k == "const.USAGE_WEIGHTS"
}

fn compare(tag: &str, c: &BTreeMap<String, u64>, rust: &BTreeMap<String, u64>) {
    let mut bad = Vec::new();
    for (k, v) in c.iter().filter(|(k, _)| !not_mirrored(k)) {
        match rust.get(k) {
            Some(r) if r == v => {}
            // llama.rn 0.12.9: caps without mmap_support (4 bytes); ours has the byte, in padding
            Some(r) if k == "DevCaps.size" && *r == v + 1 && !c.contains_key("DevCaps.mmap_support") && c.contains_key("CGraph.uid") => {}
            Some(r) => bad.push(format!("{}: C {} vs Rust {}", k, v, r)),
            None => bad.push(format!("{}: C {} not mirrored in Rust", k, v)),
        }
    }
    for k in rust.keys() {
        // llama.rn 0.12.9's caps have no mmap_support: ours writes that padding byte, never reads it
        let padding_only = k.starts_with("DevCaps.") && !c.contains_key("DevCaps.mmap_support") && c.contains_key("CGraph.uid");
        if !c.contains_key(k) && !padding_only {
            bad.push(format!("{}: Rust only", k));
        }
    }
    assert!(bad.is_empty(), "{} layout differs:\n{}", tag, bad.join("\n"));
    assert!(c.len() > 100, "{}: probe printed only {} facts", tag, c.len());
}

#[test]
fn lm_layout_matches_host_headers() {
    compare("lm/host", &probe(&LM, false), &rust_side::<Lm>());
}

#[test]
fn wsp_layout_matches_host_headers() {
    compare("wsp/host", &probe(&WSP, false), &rust_side::<Wsp>());
}

#[test]
fn lm_layout_matches_generated_headers() {
    compare("lm/ours", &probe(&LM, true), &rust_side::<Lm>());
}

#[test]
fn wsp_layout_matches_generated_headers() {
    compare("wsp/ours", &probe(&WSP, true), &rust_side::<Wsp>());
}

/// The 2026 revision: one Rust layout (Lm26) for both lm packages, checked against each.
#[test]
fn lm26_layout_matches_cui_llama_rn_1_12_2_and_llama_rn_0_12_9() {
    compare("cui/host", &probe(&CUI, false), &rust_side::<Lm26>());
    compare("lm12/host", &probe(&LM12, false), &rust_side::<Lm26>());
    compare("lm-2026/ours", &probe(&Pkg { caps_mmap: true, ..CUI }, true), &rust_side::<Lm26>());
}

#[test]
fn wsp26_layout_matches_whisper_rn_0_7_4() {
    compare("wsp7/host", &probe(&WSP7, false), &rust_side::<Wsp26>());
    compare("wsp-2026/ours", &probe(&WSP7, true), &rust_side::<Wsp26>());
}

/// Upstream ggml v0.20.0 (the `ggml-2026` feature's layer): the same layout as `Lm26`, checked
/// against llama.cpp's own headers and include/ggml-2026 when scripts/fetch-upstream.sh has run.
#[test]
fn ggml26_layout_matches_upstream_ggml_v0_20_0() {
    if !upstream_dir().join("include/ggml.h").exists() {
        eprintln!("skipped: {} not found (scripts/fetch-upstream.sh)", upstream_dir().display());
        return;
    }
    compare("upstream/host", &probe(&UPSTREAM, false), &rust_side::<Ggml26>());
    compare("ggml-2026/ours", &probe(&UPSTREAM, true), &rust_side::<Ggml26>());
}

/// llama.rn 0.13.0-rc.5 (the `ggml-b11118` feature's layer): v0.20.0's layout (graph_optimize's
/// slot takes a third parameter, same offset), checked against the package's own headers and
/// include/ggml-b11118 when scripts/fetch-hosts.sh rn013 has run.
#[test]
fn b11118_layout_matches_llama_rn_0_13_0_rc_5() {
    if !rn013_dir().join("include/ggml.h").exists() {
        eprintln!("skipped: {} not found (scripts/fetch-hosts.sh rn013)", rn013_dir().display());
        return;
    }
    compare("rn013/host", &probe(&RN013, false), &rust_side::<GgmlB11118>());
    compare("ggml-b11118/ours", &probe(&RN013, true), &rust_side::<GgmlB11118>());
    assert_eq!(size_of::<GraphOptimizeParams<GgmlB11118>>(), 16);
}
