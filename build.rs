//! Reads the revisions from `src/abi/revisions.list` and derives from it what names them: the
//! markers' modules and slots (`abi`), one export layer per prefix built, stamped out from
//! `src/ffi/exports.list` (`ffi`), the C shim's weak-reference tables per prefix (`src/host.c`,
//! `host`), and every revision's header set in `include/`, regenerated with cbindgen (CI fails
//! when they are stale).

use std::collections::HashMap;
use std::env;
use std::fs;
use std::path::{Path, PathBuf};

/// One line of `src/abi/revisions.list`: a revision and where its pieces go.
struct Revision {
    tag: String,
    prefix: String,
    marker: String,
    file: String,
    include: String,
    feature: Option<String>,
    /// tags whose exports.list lines and template blocks it takes as well (`=t` and `t`)
    also: Vec<String>,
    /// the `=t` ones: revisions whose headers it has (a block tagged `!t` leaves it out too)
    same_headers: Vec<String>,
    cfgs: Vec<String>,
}

impl Revision {
    /// The name of its prefix's export module (`crate::ffi::<m>`) and of the shim's functions.
    fn module(&self) -> String {
        if self.prefix.is_empty() { "ggml".into() } else { self.prefix.trim_end_matches('_').into() }
    }
}

fn parse_revisions(text: &str) -> Vec<Revision> {
    let dash = |s: &str| (s != "-").then(|| s.to_string());
    let list = |s: &str| -> Vec<String> { dash(s).map(|s| s.split(',').map(String::from).collect()).unwrap_or_default() };
    let mut out: Vec<Revision> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        assert!(f.len() == 8, "revisions.list:{}: 8 columns wanted: {}", n + 1, line);
        let also = list(f[6]);
        let r = Revision {
            tag: f[0].into(),
            prefix: dash(f[1]).unwrap_or_default(),
            marker: f[2].into(),
            file: f[3].into(),
            include: f[4].into(),
            feature: dash(f[5]),
            same_headers: also.iter().filter_map(|t| t.strip_prefix('=')).map(String::from).collect(),
            also: also.iter().map(|t| t.trim_start_matches('=').to_string()).collect(),
            cfgs: list(f[7]),
        };
        assert!(r.also.iter().all(|t| out.iter().any(|o| &o.tag == t)), "revisions.list:{}: `also` names a tag not listed above", n + 1);
        assert!(!out.iter().any(|o| o.tag == r.tag || o.marker == r.marker), "revisions.list:{}: tag or marker listed twice", n + 1);
        out.push(r);
    }
    out
}

/// Whether revision `rev` takes the exports.list lines and template blocks tagged `tag`: its own,
/// and those of the revisions it names in `also` (theirs in turn).
fn rev_matches(revs: &[Revision], rev: &Revision, tag: &str) -> bool {
    tag == rev.tag || rev.also.iter().any(|t| revs.iter().find(|r| &r.tag == t).is_some_and(|r| rev_matches(revs, r, tag)))
}

/// A template block tagged `!x` is left out for revision `x` (and those with x's headers) whatever
/// its other tags say.
fn block_matches(revs: &[Revision], rev: &Revision, tags: &str) -> bool {
    let tags: Vec<&str> = tags.split(',').map(str::trim).collect();
    let excluded = |t: &&str| t.strip_prefix('!').is_some_and(|x| x == rev.tag || rev.same_headers.iter().any(|h| h == x));
    !tags.iter().any(excluded) && tags.iter().any(|t| rev_matches(revs, rev, t))
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

fn parse_list(text: &str, revisions: &[Revision]) -> Vec<Export> {
    // `all`: the revisions that take no other's lines
    let all: Vec<&str> = revisions.iter().filter(|r| r.also.is_empty()).map(|r| r.tag.as_str()).collect();
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
        let revs = if revs == "all" { all.join(",") } else { revs };
        assert!(revs.split(',').all(|t| revisions.iter().any(|r| r.tag == t)), "exports.list:{}: bad revs", n + 1);
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
fn render_template(text: &str, revs: &[Revision], rev: &Revision) -> String {
    let p = rev.prefix.as_str();
    let mut out = String::new();
    let mut keep = true;
    for line in text.lines() {
        let t = line.trim();
        if let Some(tags) = t.strip_prefix('@').and_then(|s| s.strip_suffix('{')) {
            keep = block_matches(revs, rev, tags);
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

/// The revision built for each prefix, in the list's order of prefixes: the one whose feature is
/// on, else the prefix's default. Also the `compile_error!` of two features on for one prefix.
fn built(revs: &[Revision]) -> (Vec<&Revision>, String) {
    let on = |r: &Revision| r.feature.as_ref().is_some_and(|f| env::var_os(format!("CARGO_FEATURE_{}", f.to_uppercase().replace('-', "_"))).is_some());
    let mut prefixes: Vec<&str> = Vec::new();
    for r in revs {
        if !prefixes.contains(&r.prefix.as_str()) {
            prefixes.push(&r.prefix);
        }
    }
    let (mut built, mut errors) = (Vec::new(), String::new());
    for p in prefixes {
        let of: Vec<&Revision> = revs.iter().filter(|r| r.prefix == p).collect();
        if of.iter().filter(|r| on(r)).count() > 1 {
            let features: Vec<&str> = of.iter().filter_map(|r| r.feature.as_deref()).collect();
            let (last, rest) = features.split_last().unwrap();
            let abi = if p.is_empty() { "the unprefixed ggml_".to_string() } else { format!("the {p}") };
            let what = if rest.len() > 1 { "each export" } else { "both export" };
            errors.push_str(&format!("compile_error!(\"features {} and {last} {what} {abi} ABI: pick one\");\n", rest.join(", ")));
        }
        if let Some(r) = of.iter().find(|r| on(r)).or_else(|| of.iter().find(|r| r.feature.is_none())) {
            built.push(*r);
        }
    }
    (built, errors)
}

/// `OUT_DIR/revisions.rs` (included by `abi`): each facts' file as a module, its markers, their
/// slots and prefixes (`Listed`), the slot count.
fn abi_source(root: &Path, revs: &[Revision], errors: &str) -> String {
    let mut s = String::from("// generated by build.rs from src/abi/revisions.list\n\n");
    s.push_str(errors);
    let mut modules: Vec<&str> = Vec::new();
    for r in revs {
        let m = r.file.trim_end_matches(".rs");
        if !modules.contains(&m) {
            modules.push(m);
            let path = root.join("src/abi").join(&r.file);
            s.push_str(&format!("#[path = {:?}]\npub mod {m};\n", path.to_str().expect("a UTF-8 path")));
        }
        s.push_str(&format!("pub use {m}::{};\n", r.marker));
    }
    s.push_str(&format!("\n/// How many revisions the crate knows (each has a distinct `Listed::SLOT` below this).\npub const REV_SLOTS: usize = {};\n\n", revs.len()));
    for (slot, r) in revs.iter().enumerate() {
        s.push_str(&format!(
            "impl Listed for {} {{\n    const SLOT: usize = {slot};\n    const PREFIX: &'static str = {:?};\n    const ENV_PREFIX: &'static str = {:?};\n}}\n",
            r.marker,
            r.prefix,
            r.prefix.to_uppercase()
        ));
    }
    s
}

/// `OUT_DIR/layers.rs` (included by `ffi`): the export layer of each prefix built.
fn layers_source(built: &[&Revision]) -> String {
    let mut s = String::from("// generated by build.rs from src/abi/revisions.list\n");
    for r in built {
        s.push_str(&format!(
            "\n/// The `{p}` layer ({marker}; `Marker` names it).\n#[allow(non_camel_case_types, clippy::missing_safety_doc)]\npub mod {m} {{\n    include!(concat!(env!(\"OUT_DIR\"), \"/exports_{m}.rs\"));\n}}\n",
            p = if r.prefix.is_empty() { "ggml_ (unprefixed)" } else { &r.prefix },
            marker = r.marker,
            m = r.module()
        ));
    }
    s
}

/// `OUT_DIR/ggml_rs_prefixes.h` (included by host.c: one table of weak references per prefix
/// built) and `OUT_DIR/host_prefixes.rs` (included by `host`: the shim's functions of each).
fn host_sources(built: &[&Revision]) -> (String, String) {
    let mut h = String::from("/* generated by build.rs from src/abi/revisions.list: X(prefix, module) of each prefix built */\n#define GGML_RS_PREFIXES(X)");
    let mut rs = String::from("// generated by build.rs from src/abi/revisions.list\n\nextern \"C\" {\n");
    let mut table = String::new();
    for r in built {
        let m = r.module();
        h.push_str(&format!(" X({}, {m})", r.prefix));
        rs.push_str(&format!(
            "    fn ggml_rs_host_sym_{m}(name: *const c_char) -> *mut c_void;\n    fn ggml_rs_log_{m}(level: i32, msg: *const c_char) -> i32;\n    fn ggml_rs_host_float_model_{m}() -> *const i32;\n"
        ));
        table.push_str(&format!(
            "    Shim {{ prefix: {:?}, sym: ggml_rs_host_sym_{m}, log: ggml_rs_log_{m}, float_model: ggml_rs_host_float_model_{m} }},\n",
            r.prefix
        ));
    }
    h.push('\n');
    rs.push_str(&format!("}}\n\n/// The shim's tables of the prefixes built.\nstatic SHIMS: [Shim; {}] = [\n{table}];\n", built.len()));
    (h, rs)
}

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    for f in ["src/host.c", "src/abi/revisions.list", "src/ffi/exports.list", "cbindgen.toml", "cbindgen/ggml-backend.h.in", "cbindgen/ggml-backend-impl.h.in", "cbindgen/ggml-simd.h.in"] {
        println!("cargo:rerun-if-changed={}", f);
    }

    let revs = parse_revisions(&fs::read_to_string(root.join("src/abi/revisions.list")).unwrap());
    // One ABI per prefix in a binary: the cargo features pick the revision of each prefix. The
    // headers of every revision are generated (and committed) whatever is built.
    let (built, errors) = built(&revs);
    write_if_changed(&out.join("revisions.rs"), &abi_source(&root, &revs, &errors));
    write_if_changed(&out.join("layers.rs"), &layers_source(&built));
    let (prefixes_h, host_rs) = host_sources(&built);
    write_if_changed(&out.join("ggml_rs_prefixes.h"), &prefixes_h);
    write_if_changed(&out.join("host_prefixes.rs"), &host_rs);
    // the cfgs of the few items only some revisions have
    let mut cfgs: Vec<&str> = revs.iter().flat_map(|r| r.cfgs.iter().map(String::as_str)).collect();
    cfgs.sort();
    cfgs.dedup();
    for c in cfgs {
        println!("cargo::rustc-check-cfg=cfg({c})");
        if built.iter().any(|r| r.cfgs.iter().any(|rc| rc == c)) {
            println!("cargo::rustc-cfg={c}");
        }
    }

    let mut shim = cc::Build::new();
    shim.file(root.join("src/host.c")).include(&out).flag_if_supported("-fvisibility=hidden");
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

    let list = parse_list(&fs::read_to_string(root.join("src/ffi/exports.list")).unwrap(), &revs);
    for r in &revs {
        let (p, rev, module) = (r.prefix.as_str(), r.marker.as_str(), r.module());
        let aliases = type_aliases(rev);
        let mut prelude = String::from("use crate::abi::*;\nuse std::ffi::{c_char, c_void};\n\n");

        for (name, rust, _) in &aliases {
            prelude.push_str(&format!("pub type {p}{name} = {rust};\n"));
        }
        prelude.push('\n');
        let mut all = prelude.clone();
        all.push_str(&format!("/// The revision this layer serves.\npub type Marker = {rev};\n\n"));
        let mut per_header: HashMap<&str, String> = HashMap::new();
        for e in list.iter().filter(|e| e.revs.split(',').any(|t| rev_matches(&revs, r, t))) {
            all.push_str(&export_fn(e, p, rev, false));
            per_header.entry(e.header.as_str()).or_insert_with(|| prelude.clone()).push_str(&export_fn(e, p, rev, true));
        }
        if built.iter().any(|b| std::ptr::eq(*b, r)) {
            write_if_changed(&out.join(format!("exports_{module}.rs")), &all);
        }

        for (header, template, file) in [
            ("api", "cbindgen/ggml-backend.h.in", "ggml-backend.h"),
            ("impl", "cbindgen/ggml-backend-impl.h.in", "ggml-backend-impl.h"),
            ("simd", "cbindgen/ggml-simd.h.in", "ggml-simd.h"),
        ] {
            let src = out.join(format!("cbindgen_{}_{header}.rs", r.tag));
            write_if_changed(&src, per_header.get(header).map(String::as_str).unwrap_or(""));
            let mut cfg = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml");
            cfg.after_includes = Some(render_template(&fs::read_to_string(root.join(template)).unwrap(), &revs, r));
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
            bindings.write_to_file(root.join("include").join(&r.include).join(file));
        }
    }
}
