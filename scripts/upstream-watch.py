#!/usr/bin/env python3
"""The facts half of scripts/upstream-watch.sh (which does the network part; see
docs/upstream-watch.md). Reads extracted package trees, never the network.

  upstream-watch.py record KNOWN                 facts of the supported revisions' cached trees -> KNOWN
  upstream-watch.py check KNOWN DIR LABEL [SUMMARY]  one package's facts against KNOWN; appends a
                                                 summary row (tab-separated) to SUMMARY
  upstream-watch.py diff KNOWN DIR [REV [LABEL]] full unified diffs of DIR's differing files against
                                                 REV (default: the nearest revision)
  upstream-watch.py nearest KNOWN DIR            the nearest known revision of DIR
  upstream-watch.py has-tree KNOWN REV           yes / no: REV's tree is on disk
  upstream-watch.py revs KNOWN                   the known revisions, one line each (spec, tree, fetch)
"""
import configparser
import difflib
import hashlib
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The backend files and headers compared, in report order.
FILES = ["ggml-backend.h", "ggml-backend-impl.h", "ggml-backend.cpp", "ggml-backend-reg.cpp",
         "ggml-alloc.h", "ggml-alloc.c", "ggml.h", "ggml-rpc.h"]
# The ones whose short diff the report prints when the nearest revision's tree is on disk.
SHORT_DIFF = ["ggml-backend.h", "ggml-backend-impl.h", "ggml-backend.cpp"]
SHORT_DIFF_LINES = 40
FACTS = ["prefix", "ggml_version", "upstream", "rpc_proto", "backend_api_version",
         "op_count", "type_count", "unary_op_count", "glu_op_count"]

# The supported revisions: what `record` reads (the trees scripts/fetch-hosts.sh and
# scripts/fetch-upstream.sh extract under .cache) and what a revision is in the project.
# A new revision: add a row here, fetch its tree, run `scripts/upstream-watch.sh --record`.
#   spec, tree (relative to the repo; alternatives separated by " | ", the first on disk is
#   used), command that puts the tree there, what serves it, status
REVISIONS = [
    ("llama.rn@0.4.4", ".cache/hosts/lm/package", "scripts/fetch-hosts.sh lm",
     "lm_ layer, default build (marker Lm, src/abi/lm.rs, headers include/lm)", "supported"),
    ("whisper.rn@0.4.3", ".cache/hosts/wsp/package", "scripts/fetch-hosts.sh wsp",
     "wsp_ layer, default build (marker Wsp, src/abi/wsp.rs, headers include/wsp)", "supported"),
    ("cui-llama.rn@1.12.2", ".cache/hosts/cui/package", "scripts/fetch-hosts.sh cui",
     "lm_ layer, feature lm-2026 (marker Lm26, src/abi/rev2026.rs, headers include/lm-2026)",
     "supported"),
    ("llama.rn@0.12.9", ".cache/hosts/lm12/package", "scripts/fetch-hosts.sh lm12",
     "lm_ layer, feature lm-2026 (marker Lm26, src/abi/rev2026.rs, headers include/lm-2026)",
     "supported"),
    ("whisper.rn@0.7.4", ".cache/hosts/wsp7/package", "scripts/fetch-hosts.sh wsp7",
     "wsp_ layer, feature wsp-2026 (marker Wsp26, src/abi/rev2026.rs, headers include/wsp-2026)",
     "supported"),
    ("llama.rn@0.13.0-rc.5", ".cache/hosts/rn013/package", "scripts/fetch-hosts.sh rn013",
     "unprefixed layer, feature ggml-b11118 (marker GgmlB11118, src/abi/b11118.rs, headers "
     "include/ggml-b11118, docs/llama-rn-0.13.md)", "supported"),
    # fetch-upstream.sh extracts into .cache/upstream/VERSION/ since it serves two versions
    # (issue 44); before, 0.3.35 was at .cache/upstream/llama.cpp-stock
    ("llama-cpp-python==0.3.35",
     ".cache/upstream/0.3.35/llama.cpp-stock | .cache/upstream/llama.cpp-stock",
     "scripts/fetch-upstream.sh 0.3.35",
     "unprefixed layer, feature ggml-2026 (marker Ggml26, src/abi/ggml26.rs, headers "
     "include/ggml-2026, docs/upstream.md)", "supported"),
    ("llama-cpp-python==0.3.36", ".cache/upstream/0.3.36/llama.cpp-stock",
     "scripts/fetch-upstream.sh 0.3.36",
     "unprefixed layer, feature ggml-0253 (marker Ggml0253, src/abi/g0253.rs, headers "
     "include/ggml-0.25.3, docs/upstream.md)", "supported"),
]

SKIP_DIRS = (".xcframework", "ggml-virtgpu", "node_modules", ".git")


def locate(tree):
    """Where each of FILES is in an extracted package tree (None: the package has no such file).
    Anchored on ggml-backend-impl.h: flat (llama.rn's cpp/) or upstream's ggml/{include,src}."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = sorted(d for d in dirnames if not any(s in d for s in SKIP_DIRS))
        for f in filenames:
            if f in FILES or f == "CMakeLists.txt" or f == "VERSIONS":
                found.setdefault(f, []).append(os.path.join(dirpath, f))
    anchors = sorted(found.get("ggml-backend-impl.h", []), key=lambda p: (p.count(os.sep), p))
    if not anchors:
        return None, {}
    adir = os.path.dirname(anchors[0])
    dirs = [adir]
    base = adir
    if os.path.basename(adir) == "src":
        base = os.path.dirname(adir)
        dirs = [os.path.join(base, "include"), adir]
    paths = {}
    for f in FILES:
        p = next((os.path.join(d, f) for d in dirs if os.path.isfile(os.path.join(d, f))), None)
        if p is None:  # elsewhere in the tree (shortest path), e.g. a subdirectory of cpp/
            cands = sorted(found.get(f, []), key=lambda q: (q.count(os.sep), q))
            p = cands[0] if cands else None
        paths[f] = p
    return base, paths


def detect_prefix(ggml_h):
    m = re.search(r"\b([A-Z]+)_GGML_TYPE_COUNT\b", ggml_h)
    return m.group(1).lower() if m else ""


def normalize(text, prefix):
    """The packages' renaming undone: lm_ggml_* / LM_GGML_* (and gguf) -> ggml_* / GGML_*."""
    if not prefix:
        return text
    p, P = prefix.lower(), prefix.upper()
    text = re.sub(p + r"_(ggml|gguf)", r"\1", text)
    return re.sub(P + r"_(GGML|GGUF)", r"\1", text)


def enum_count(ggml_h, enum, count):
    """Value of `count` in `enum <enum> { ... }` (C semantics: explicit values or previous + 1)."""
    m = re.search(r"enum\s+" + enum + r"\s*\{(.*?)\}", ggml_h, re.S)
    if not m:
        return "-"
    body = re.sub(r"//[^\n]*|/\*.*?\*/", "", m.group(1), flags=re.S)
    value = -1
    for item in body.split(","):
        item = item.strip()
        if not item:
            continue
        name, _, expr = item.partition("=")
        name, expr = name.strip(), expr.strip()
        if expr:
            try:
                value = int(expr, 0)
            except ValueError:
                return "?"
        else:
            value += 1
        if name == count:
            return str(value)
    return "-"


def tree_facts(tree):
    base, paths = locate(tree)
    if base is None:
        return None
    raw = {f: (open(p, "rb").read().decode("utf-8", "replace") if p else None)
           for f, p in paths.items()}
    prefix = detect_prefix(raw["ggml.h"] or "")
    norm = {f: (normalize(t, prefix) if t is not None else None) for f, t in raw.items()}
    facts = {"prefix": prefix or "-"}
    ver = "-"
    for cm in (os.path.join(base, "CMakeLists.txt"),):
        if os.path.isfile(cm):
            t = open(cm, encoding="utf-8", errors="replace").read()
            v = [re.search(r"set\(GGML_VERSION_%s\s+(\d+)\)" % k, t) for k in ("MAJOR", "MINOR", "PATCH")]
            if all(v):
                ver = ".".join(x.group(1) for x in v)
    facts["ggml_version"] = ver
    upstream = "-"
    for dirpath, _, filenames in os.walk(tree):  # llama.rn >= 0.13: vendor/VERSIONS
        if "VERSIONS" in filenames and dirpath.count(os.sep) - tree.count(os.sep) <= 3:
            t = open(os.path.join(dirpath, "VERSIONS"), encoding="utf-8", errors="replace").read()
            m = re.search(r"^LLAMA_CPP_REF=(\S+)", t, re.M)
            c = re.search(r"^LLAMA_CPP_COMMIT=(\w{9})", t, re.M)
            if m:
                upstream = "llama.cpp " + m.group(1) + (" (" + c.group(1) + ")" if c else "")
            break
    facts["upstream"] = upstream
    rpc = norm["ggml-rpc.h"]
    if rpc:
        v = [re.search(r"#define\s+RPC_PROTO_%s_VERSION\s+(\d+)" % k, rpc) for k in ("MAJOR", "MINOR", "PATCH")]
        facts["rpc_proto"] = ".".join(x.group(1) for x in v) if all(v) else "?"
    else:
        facts["rpc_proto"] = "-"
    impl = norm["ggml-backend-impl.h"] or ""
    m = re.search(r"#define\s+GGML_BACKEND_API_VERSION\s+(\d+)", impl)
    facts["backend_api_version"] = m.group(1) if m else "-"
    g = norm["ggml.h"] or ""
    facts["op_count"] = enum_count(g, "ggml_op", "GGML_OP_COUNT")
    facts["type_count"] = enum_count(g, "ggml_type", "GGML_TYPE_COUNT")
    facts["unary_op_count"] = enum_count(g, "ggml_unary_op", "GGML_UNARY_OP_COUNT")
    facts["glu_op_count"] = enum_count(g, "ggml_glu_op", "GGML_GLU_OP_COUNT")
    for f in FILES:
        facts["sha256." + f] = hashlib.sha256(norm[f].encode()).hexdigest() if norm[f] is not None else "absent"
    return facts, paths, norm


def load_known(path):
    cp = configparser.ConfigParser(interpolation=None)
    cp.optionxform = str
    if not cp.read(path):
        sys.exit("upstream-watch: no facts file %s (run scripts/upstream-watch.sh --record)" % path)
    return cp


def cmd_record(known):
    cp = configparser.ConfigParser(interpolation=None)
    cp.optionxform = str
    for spec, tree, fetch, serves, status in REVISIONS:
        t = first_dir(tree)
        r = tree_facts(t) if t else None
        if r is None:
            sys.exit("upstream-watch --record: %s has no tree at %s (run: %s)" % (spec, tree, fetch))
        facts = r[0]
        cp[spec] = {"status": status, "serves": serves, "tree": tree, "fetch": fetch, **facts}
        print("recorded %-26s ggml %-6s rpc %-5s api %s ops %s types %s (%s)" % (
            spec, facts["ggml_version"], facts["rpc_proto"], facts["backend_api_version"],
            facts["op_count"], facts["type_count"], os.path.relpath(t, ROOT)))
    with open(known, "w") as fh:
        fh.write("# The supported revisions' backend files and headers, as facts: one section per package\n"
                 "# version the library serves (or is being taught). sha256.* are of the files with the\n"
                 "# package's prefix removed (lm_ggml/LM_GGML/wsp_ggml/WSP_GGML -> ggml/GGML); 'absent':\n"
                 "# the package has no such file. Generated by `scripts/upstream-watch.sh --record` from\n"
                 "# the cached trees (column 'tree'); do not edit by hand. See docs/upstream-watch.md.\n\n")
        cp.write(fh)


def first_dir(trees):
    """The first of 'a | b' (relative to the repo) that is a directory, or None."""
    for t in trees.split("|"):
        p = os.path.join(ROOT, t.strip())
        if t.strip() and os.path.isdir(p):
            return p
    return None


def watch_dir(spec):
    """Where scripts/upstream-watch.sh --fetch SPEC extracts SPEC (its dirname_of)."""
    d = spec.replace("==", "-", 1).replace("@", "-", 1).lstrip("-").replace("/", "-")
    return os.path.join(os.environ.get("UPSTREAM_WATCH_DIR", os.path.join(ROOT, ".cache", "watch")), d)


def tree_path(spec, sec):
    """A known revision's tree on disk: the cached one (column 'tree') or the watch's copy."""
    cached, fetched = first_dir(sec["tree"]), watch_dir(spec)
    if cached:
        return cached
    if os.path.isfile(os.path.join(fetched, ".watch-stamp")):
        return fetched
    return None


def tree_of(spec, sec):
    """A known revision's normalized files, when its tree is on disk (else None)."""
    t = tree_path(spec, sec)
    r = tree_facts(t) if t else None
    return r[2] if r else None


def compare(known, facts):
    """[(spec, equal files, differing files)], nearest first: most files equal; on a tie, most
    facts equal, then a supported revision before one in progress, then the one listed last."""
    rows = []
    for i, spec in enumerate(known.sections()):
        sec = known[spec]
        diff = [f for f in FILES if sec.get("sha256." + f) != facts["sha256." + f]]
        same_facts = sum(sec.get(k, "-") == facts[k] for k in FACTS)
        rows.append(((len(FILES) - len(diff), same_facts, sec["status"] == "supported", i), spec, diff))
    rows.sort(key=lambda r: r[0], reverse=True)
    return [(spec, k[0], diff) for k, spec, diff in rows]


def short_diff(a, b, name_a, name_b, limit):
    lines = list(difflib.unified_diff((a or "").splitlines(), (b or "").splitlines(),
                                      name_a, name_b, n=1, lineterm=""))
    if limit and len(lines) > limit:
        more = len(lines) - limit
        lines = lines[:limit] + ["... (%d more diff lines)" % more]
    return lines


def cmd_check(known_path, tree, label, summary):
    known = load_known(known_path)
    pkg, ver = label.split("==", 1) if "==" in label else label.rsplit("@", 1) if "@" in label[1:] else (label, "-")
    r = tree_facts(tree) if os.path.isdir(tree) else None
    out = []
    if r is None:
        out.append("%s: no ggml-backend-impl.h in the package: not a ggml host any more?" % label)
        row = (pkg, ver, "no ggml backend files found")
    else:
        facts, paths, norm = r
        ranked = compare(known, facts)
        best, eq, diff = ranked[0]
        exact = [s for s, e, d in ranked if not d]
        where = os.path.relpath(os.path.dirname(paths["ggml-backend-impl.h"]), tree)
        out.append("%s  (files in %s)" % (label, where))
        out.append("  prefix %s, ggml %s%s, GGML_BACKEND_API_VERSION %s, ops %s, types %s, RPC protocol %s" % (
            facts["prefix"], facts["ggml_version"],
            "" if facts["upstream"] == "-" else " (" + facts["upstream"] + ")",
            facts["backend_api_version"], facts["op_count"], facts["type_count"], facts["rpc_proto"]))
        if exact:
            sec = known[exact[0]]
            note = ""
            if sec["prefix"] != facts["prefix"]:
                note = " [files equal once the prefix is removed; that revision is served with prefix %s, this package uses %s]" % (sec["prefix"], facts["prefix"])
            out.append("  MATCHES %s (%s): %s%s" % (", ".join(exact), sec["status"], sec["serves"], note))
            if sec["status"] != "supported":
                row = (pkg, ver, "matches %s (%s)" % (exact[0], sec["status"]))
            else:
                row = (pkg, ver, "matches %s" % exact[0])
        else:
            sec = known[best]
            out.append("  DIFFERS: nearest known revision %s (%d of %d files equal; %s)" % (
                best, eq, len(FILES), sec["status"]))
            out.append("  files equal: %s" % (", ".join(f for f in FILES if f not in diff) or "none"))
            out.append("  files differ: %s" % ", ".join(
                f + (" (absent here)" if facts["sha256." + f] == "absent" else
                     " (absent in %s)" % best if sec.get("sha256." + f) == "absent" else "")
                for f in diff))
            changed = [(k, sec.get(k, "-"), facts[k]) for k in FACTS if sec.get(k, "-") != facts[k]]
            if changed:
                out.append("  facts that changed (%s -> this package):" % best)
                for k, a, b in changed:
                    out.append("    %-20s %s -> %s" % (k, a, b))
            else:
                out.append("  facts: all equal to %s (prefix, ggml version, RPC protocol, API version, enum counts)" % best)
            kn = tree_of(best, sec)
            for f in SHORT_DIFF:
                if f not in diff:
                    continue
                if kn is None:
                    continue
                out.append("  --- short diff of %s (%s -> %s, prefix removed, first %d lines):" % (
                    f, best, label, SHORT_DIFF_LINES))
                out += ["    " + l for l in short_diff(kn[f], norm[f], best + "/" + f, label + "/" + f, SHORT_DIFF_LINES)]
            if kn is None:
                out.append("  (%s's tree is not on disk: no short diff; `%s` puts it at %s)" % (
                    best, sec["fetch"], sec["tree"].split("|")[0].strip()))
            out.append("  full diff: scripts/upstream-watch.sh --diff %s %s" % (label, best))
            row = (pkg, ver, "differs from %s (%s)" % (best, ", ".join(diff)))
    print("\n".join(out))
    if summary:
        with open(summary, "a") as fh:
            fh.write("\t".join(row) + "\n")


def cmd_diff(known_path, tree, rev, label=None):
    known = load_known(known_path)
    r = tree_facts(tree)
    if r is None:
        sys.exit("upstream-watch --diff: no ggml backend files under %s" % tree)
    facts, paths, norm = r
    if not rev:
        rev = compare(known, facts)[0][0]
    if rev not in known:
        sys.exit("upstream-watch --diff: unknown revision %s (known: %s)" % (rev, ", ".join(known.sections())))
    sec = known[rev]
    kn = tree_of(rev, sec)
    if kn is None:
        sys.exit("upstream-watch --diff: %s's tree is not at %s; get it with: %s" % (rev, sec["tree"], sec["fetch"]))
    ndiff = 0
    for f in FILES:
        if sec.get("sha256." + f) == facts["sha256." + f]:
            continue
        ndiff += 1
        for l in difflib.unified_diff(kn[f].splitlines() if kn[f] is not None else [],
                                      norm[f].splitlines() if norm[f] is not None else [],
                                      rev + "/" + f, (label or tree) + "/" + f, lineterm=""):
            print(l)
    print("upstream-watch --diff: %d file(s) differ from %s (prefix removed on both sides)" % (ndiff, rev), file=sys.stderr)


def cmd_nearest(known_path, tree):
    r = tree_facts(tree)
    if r is None:
        sys.exit("upstream-watch: no ggml backend files under %s" % tree)
    print(compare(load_known(known_path), r[0])[0][0])


def cmd_has_tree(known_path, rev):
    known = load_known(known_path)
    if rev not in known:
        sys.exit("upstream-watch: unknown revision %s (known: %s)" % (rev, ", ".join(known.sections())))
    print("yes" if tree_path(rev, known[rev]) else "no")


def cmd_revs(known_path):
    known = load_known(known_path)
    for spec in known.sections():
        sec = known[spec]
        print("\t".join([spec, sec["tree"], sec["fetch"]]))


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    cmd, known = argv[1], argv[2]
    if cmd == "record":
        cmd_record(known)
    elif cmd == "check":
        cmd_check(known, argv[3], argv[4], argv[5] if len(argv) > 5 else None)
    elif cmd == "diff":
        cmd_diff(known, argv[3], argv[4] if len(argv) > 4 else None, argv[5] if len(argv) > 5 else None)
    elif cmd == "nearest":
        cmd_nearest(known, argv[3])
    elif cmd == "has-tree":
        cmd_has_tree(known, argv[3])
    elif cmd == "revs":
        cmd_revs(known)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
