//! Builds the C shim (`src/host.c`), stamps out the export layers from `src/ffi/exports.list` (lm_,
//! wsp_, and with the `ggml-2026` / `ggml-b11118` / `ggml-0253` feature the unprefixed one) and regenerates the seven header sets
//! in `include/` with cbindgen (CI fails when they are stale).

use std::collections::HashMap;
use std::env;
use std::fs;
use std::path::{Path, PathBuf};

/// The revision tags of exports.list and the header templates: the contract's pair and 2026's.
const ALL_TAGS: [&str; 4] = ["lm", "wsp", "lm26", "wsp26"];
/// Tags a line or block may carry beyond `ALL_TAGS` ("all" does not include them).
const EXTRA_TAGS: [&str; 3] = ["ggml26", "b11118", "g0253"];

/// (tag, prefix, Rust marker, include/ folder, exports module) of each revision.
const REVS: [(&str, &str, &str, &str, &str); 7] = [
    ("lm", "lm_", "Lm", "lm", "lm"),
    ("wsp", "wsp_", "Wsp", "wsp", "wsp"),
    ("lm26", "lm_", "Lm26", "lm-2026", "lm"),
    ("wsp26", "wsp_", "Wsp26", "wsp-2026", "wsp"),
    // upstream ggml v0.20.0: cui-llama.rn 1.12.2's revision without the prefix (cargo feature
    // `ggml-2026`, a third export layer beside lm_ and wsp_)
    ("ggml26", "", "Ggml26", "ggml-2026", "ggml"),
    // llama.rn 0.13.0-rc.5 (llama.cpp b11118): the same without a prefix, its own graph_optimize
    // (cargo feature `ggml-b11118`, instead of `ggml-2026`)
    ("b11118", "", "GgmlB11118", "ggml-b11118", "ggml"),
    // upstream ggml 0.25.3 (llama-cpp-python 0.3.36): b11118's headers and ABI, one more scheduler
    // fact (cargo feature `ggml-0253`)
    ("g0253", "", "Ggml0253", "ggml-0.25.3", "ggml"),
];

/// The unprefixed revisions by cargo feature (`CARGO_FEATURE_*`): at most one is built.
const UNPREFIXED_FEATURES: [(&str, &str); 3] = [("GGML_2026", "ggml26"), ("GGML_B11118", "b11118"), ("GGML_0253", "g0253")];

/// The revision whose headers and export lines `rev_tag` shares: 0.25.3's are b11118's.
fn headers_of(rev_tag: &str) -> &str {
    if rev_tag == "g0253" { "b11118" } else { rev_tag }
}

/// The exports.list / template tags a revision takes its lines and blocks from: its own, plus
/// those of the revision whose facts it shares (the unprefixed 2026 build is lm26 minus the prefix;
/// b11118 is lm26 minus the prefix but for its own blocks; 0.25.3 has b11118's headers). A template
/// block tagged `!x` is left out for revision `x` whatever its other tags say.
fn rev_matches(rev_tag: &str, tag: &str) -> bool {
    let r = headers_of(rev_tag);
    tag == rev_tag || tag == r || (matches!(r, "ggml26" | "b11118") && tag == "lm26")
}

fn block_matches(rev_tag: &str, tags: &str) -> bool {
    let tags: Vec<&str> = tags.split(',').map(str::trim).collect();
    let excluded = |t: &&str| t.strip_prefix('!').is_some_and(|x| x == rev_tag || x == headers_of(rev_tag));
    !tags.iter().any(excluded) && tags.iter().any(|t| rev_matches(rev_tag, t))
}

struct Export {
    revs: String,
    header: String,
    name: String,
    /// (name, type, in the header): `~name` params are taken from the ABI but not declared
    params: Vec<(String, String, bool)>,
    ret: Option<String>,
    default: Option<String>,
    /// glue function, when it is not named like the export
    via: Option<String>,
}

fn parse_list(text: &str) -> Vec<Export> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |what: &str| -> ! { panic!("exports.list:{}: {}: {}", n + 1, what, line) };
        let (revs, rest) = line.split_once(char::is_whitespace).unwrap_or_else(|| bad("no revs"));
        let (header, rest) = rest.trim().split_once(char::is_whitespace).unwrap_or_else(|| bad("no header"));
        let (revs, header, rest) = (revs.to_string(), header.to_string(), rest.trim());
        let open = rest.find('(').unwrap_or_else(|| bad("no ("));
        let close = rest.rfind(')').unwrap_or_else(|| bad("no )"));
        let name = rest[..open].trim().to_string();
        let params = rest[open + 1..close]
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (n, t) = p.split_once(':').unwrap_or_else(|| bad("param without type"));
                let (n, declared) = match n.trim().strip_prefix('~') {
                    Some(hidden) => (hidden, false),
                    None => (n.trim(), true),
                };
                (n.to_string(), t.trim().to_string(), declared)
            })
            .collect();
        let tail = rest[close + 1..].trim();
        let (tail, via) = match tail.split_once(" via ") {
            Some((t, v)) => (t.trim(), Some(v.trim().to_string())),
            None => (tail, None),
        };
        let (tail, default) = match tail.split_once(" or ") {
            Some((t, d)) => (t.trim(), Some(d.trim().to_string())),
            None => (tail, None),
        };
        let ret = tail.strip_prefix("->").map(|r| r.trim().to_string());
        let revs = if revs == "all" { ALL_TAGS.join(",") } else { revs };
        assert!(revs.split(',').all(|t| ALL_TAGS.contains(&t) || EXTRA_TAGS.contains(&t)), "exports.list:{}: bad revs", n + 1);
        assert!(["api", "impl", "simd"].contains(&header.as_str()), "exports.list:{}: bad header", n + 1);
        out.push(Export { revs, header, name, params, ret, default, via });
    }
    out
}

/// The per-prefix type names used in exports.list, their Rust meaning, and their C spelling
/// (`None`: the C name is a typedef of the preamble and is written as is).
fn type_aliases(rev: &str) -> Vec<(&'static str, String, Option<&'static str>)> {
    let r = rev;
    vec![
        ("ggml_backend_buffer_type_t", format!("*mut BufferType<{r}>"), None),
        ("ggml_backend_buffer_t", format!("*mut Buffer<{r}>"), None),
        ("ggml_backend_event_t", format!("*mut Event<{r}>"), None),
        ("ggml_backend_t", format!("*mut Backend<{r}>"), None),
        ("ggml_backend_graph_plan_t", "GraphPlan".into(), None),
        ("ggml_backend_reg_t", format!("*mut Reg<{r}>"), None),
        ("ggml_backend_dev_t", format!("*mut Device<{r}>"), None),
        ("ggml_backend_sched_t", format!("*mut crate::sched::Sched<{r}>"), None),
        ("ggml_guid_t", "*mut Guid".into(), None),
        ("ggml_backend_sched_eval_callback", format!("SchedEvalCallback<{r}>"), None),
        ("ggml_backend_eval_callback", format!("CompareCallback<{r}>"), None),
        ("ggml_tensor", format!("Tensor<{r}>"), Some("struct")),
        ("ggml_cgraph", format!("CGraph<{r}>"), Some("struct")),
        ("ggml_backend_buffer_i", format!("BufferI<{r}>"), Some("struct")),
        ("ggml_backend_dev_props", format!("DevProps<{r}>"), Some("struct")),
        ("ggml_backend_graph_copy_struct", format!("GraphCopy<{r}>"), Some("struct ggml_backend_graph_copy")),
        ("ggml_status", "Status".into(), Some("enum")),
        ("ggml_backend_buffer_usage", "BufferUsage".into(), Some("enum")),
        // these two share their names with functions (`ggml_backend_dev_type`, `ggml_backend_graph_copy`),
        // so their Rust aliases differ
        ("ggml_backend_dev_type_enum", "DevType".into(), Some("enum ggml_backend_dev_type")),
    ]
}

/// `for_header`: the text cbindgen reads, without the undeclared (`~`) parameters.
fn export_fn(e: &Export, p: &str, rev: &str, for_header: bool) -> String {
    let sub = |s: &str| s.replace("{p}", p);
    let params: Vec<String> =
        e.params.iter().filter(|(_, _, declared)| *declared || !for_header).map(|(n, t, _)| format!("{}: {}", n, sub(t))).collect();
    let args: Vec<&str> = e.params.iter().map(|(n, _, _)| n.as_str()).collect();
    let ret = e.ret.as_ref().map(|r| format!(" -> {}", sub(r))).unwrap_or_default();
    // spelled so clippy has nothing to say about the generated code: `()` rather than a unit-valued
    // call, and the glue function itself rather than a closure that only calls it
    let default = match (&e.default, &e.ret) {
        (Some(d), _) => format!("crate::abi::{}", d),
        (None, None) => "()".into(),
        (None, Some(_)) => "crate::ffi::FfiDefault::ffi_default()".into(),
    };
    let glue = format!("crate::ffi::glue::{}::<{rev}>", e.via.as_deref().unwrap_or(&e.name));
    let body = if args.is_empty() { glue } else { format!("|| {glue}({})", args.join(", ")) };
    format!(
        "#[no_mangle]\npub extern \"C\" fn {p}ggml_backend_{name}({params}){ret} {{\n    crate::ffi::guard::<{rev}, _>(\"{p}ggml_backend_{name}\", {default}, {body})\n}}\n\n",
        name = e.name,
        params = params.join(", "),
    )
}

/// Keeps `@lm{ ... }@` / `@wsp{ ... }@` blocks of the revision, drops the other's; fills @p@/@P@.
fn render_template(text: &str, rev_tag: &str, p: &str) -> String {
    let mut out = String::new();
    let mut keep = true;
    for line in text.lines() {
        let t = line.trim();
        if let Some(tags) = t.strip_prefix('@').and_then(|s| s.strip_suffix('{')) {
            keep = block_matches(rev_tag, tags);
            continue;
        }
        if t == "}@" {
            keep = true;
            continue;
        }
        if keep {
            out.push_str(&line.replace("@p@", p).replace("@P@", &p.to_uppercase()));
            out.push('\n');
        }
    }
    out
}

fn write_if_changed(path: &Path, text: &str) {
    if fs::read_to_string(path).ok().as_deref() != Some(text) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
}

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    for f in ["src/host.c", "src/ffi/exports.list", "cbindgen.toml", "cbindgen/ggml-backend.h.in", "cbindgen/ggml-backend-impl.h.in", "cbindgen/ggml-simd.h.in"] {
        println!("cargo:rerun-if-changed={}", f);
    }

    let ggml_tag = UNPREFIXED_FEATURES.iter().find(|(f, _)| env::var_os(format!("CARGO_FEATURE_{f}")).is_some()).map(|&(_, t)| t);
    let unprefixed = ggml_tag.is_some();
    // cfgs for the few items only some unprefixed revisions have
    println!("cargo::rustc-check-cfg=cfg(ggml_unprefixed)");
    println!("cargo::rustc-check-cfg=cfg(ggml_alloc_size_may_expand)");
    if unprefixed {
        println!("cargo::rustc-cfg=ggml_unprefixed");
    }
    if matches!(ggml_tag, Some("b11118" | "g0253")) {
        println!("cargo::rustc-cfg=ggml_alloc_size_may_expand");
    }
    let mut shim = cc::Build::new();
    shim.file(root.join("src/host.c")).flag_if_supported("-fvisibility=hidden");
    if unprefixed {
        // the weak references to the unprefixed host (ggml_init, ggml_backend_cpu_reg, ...)
        shim.define("GGML_RS_UNPREFIXED", None);
    }
    shim.compile("ggml_rs_host");
    // the try/catch trampolines of the registry's calls into backends (C++ without headers, its
    // runtime referenced weakly): compiled by the C compiler as C++, so no C++ compiler or standard
    // library is needed and none is linked
    println!("cargo:rerun-if-changed=src/host_try.cpp");
    cc::Build::new()
        .file(root.join("src/host_try.cpp"))
        .flag("-xc++")
        .flag("-fexceptions")
        .flag_if_supported("-fno-rtti")
        .flag_if_supported("-fvisibility=hidden")
        .compile("ggml_rs_host_try");

    let list = parse_list(&fs::read_to_string(root.join("src/ffi/exports.list")).unwrap());
    // One ABI per prefix in a binary: the cargo features pick the 2026 revision per prefix. The
    // headers of all seven revisions are generated (and committed) whatever is built.
    let lm_tag = if env::var_os("CARGO_FEATURE_LM_2026").is_some() { "lm26" } else { "lm" };
    let wsp_tag = if env::var_os("CARGO_FEATURE_WSP_2026").is_some() { "wsp26" } else { "wsp" };
    for (tag, p, rev, dir, module) in REVS {
        let (tag, p) = (tag.to_string(), p.to_string());
        let built = tag == lm_tag || tag == wsp_tag || Some(tag.as_str()) == ggml_tag;
        let aliases = type_aliases(rev);
        let mut prelude = String::from("use crate::abi::*;\nuse std::ffi::{c_char, c_void};\n\n");

        for (name, rust, _) in &aliases {
            prelude.push_str(&format!("pub type {p}{name} = {rust};\n"));
        }
        prelude.push('\n');
        let mut all = prelude.clone();
        if module == "ggml" {
            all.push_str(&format!("/// The revision this unprefixed layer serves.\npub type Marker = {rev};\n\n"));
        }
        let mut per_header: HashMap<&str, String> = HashMap::new();
        for e in list.iter().filter(|e| e.revs.split(',').any(|t| rev_matches(&tag, t))) {
            all.push_str(&export_fn(e, &p, rev, false));
            per_header.entry(e.header.as_str()).or_insert_with(|| prelude.clone()).push_str(&export_fn(e, &p, rev, true));
        }
        if built {
            write_if_changed(&out.join(format!("exports_{module}.rs")), &all);
        }

        for (header, template, file) in [
            ("api", "cbindgen/ggml-backend.h.in", "ggml-backend.h"),
            ("impl", "cbindgen/ggml-backend-impl.h.in", "ggml-backend-impl.h"),
            ("simd", "cbindgen/ggml-simd.h.in", "ggml-simd.h"),
        ] {
            let src = out.join(format!("cbindgen_{tag}_{header}.rs"));
            write_if_changed(&src, per_header.get(header).map(String::as_str).unwrap_or(""));
            let mut cfg = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml");
            cfg.after_includes = Some(render_template(&fs::read_to_string(root.join(template)).unwrap(), &tag, &p));
            cfg.function.prefix = Some(format!("{}GGML_BACKEND_API", p.to_uppercase()));
            for (name, _, keyword) in &aliases {
                let full = format!("{p}{name}");
                cfg.export.exclude.push(full.clone());
                match keyword {
                    Some(k) if k.contains(' ') => {
                        let (kw, c_name) = k.split_once(' ').unwrap();
                        cfg.export.rename.insert(full.clone(), format!("{kw} {p}{c_name}"));
                    }
                    Some(k) => {
                        cfg.export.rename.insert(full.clone(), format!("{k} {full}"));
                    }
                    None => {}
                }
            }
            let bindings = cbindgen::Builder::new()
                .with_config(cfg)
                .with_src(&src)
                .generate()
                .unwrap_or_else(|e| panic!("cbindgen failed on {}: {}", src.display(), e));
            bindings.write_to_file(root.join("include").join(dir).join(file));
        }
    }
}
