#!/usr/bin/env bash
# The upstream watch (issue 44; docs/upstream-watch.md). Not part of the test command.
# Fetches the newest llama-cpp-python sdist (PyPI) and the newest llama.rn (latest and newest
# pre-release), cui-llama.rn and whisper.rn tarballs (npm), and prints per package and version
# whether its backend files and headers (ggml-backend.h, ggml-backend-impl.h, ggml-backend.cpp,
# ggml-backend-reg.cpp, ggml-alloc.h, ggml-alloc.c, ggml.h, ggml-rpc.h), with the package's
# lm_/wsp_ prefix removed, equal a revision the library supports (scripts/upstream-watch.known),
# and where not, the nearest revision, the differing files and the facts that changed. Ends
# with a summary table. Every network call has a timeout; works on a fresh clone (no .cache).
#
# Usage:
#   scripts/upstream-watch.sh                  the newest versions (network)
#   scripts/upstream-watch.sh SPEC...          these versions instead (llama.rn@0.13.0-rc.6,
#                                              llama-cpp-python==0.3.37, ...)
#   scripts/upstream-watch.sh --diff SPEC [REV]  full diffs of SPEC's differing files against REV
#                                              (default: the nearest); fetches what it needs
#   scripts/upstream-watch.sh --fetch SPEC     download + extract SPEC's files, print the directory
#   scripts/upstream-watch.sh --record         regenerate scripts/upstream-watch.known from the
#                                              supported revisions' cached trees (.cache/hosts, ...)
# Environment: UPSTREAM_WATCH_DIR (downloads; default .cache/watch), UPSTREAM_WATCH_TIMEOUT
# (seconds per registry query, default 60), UPSTREAM_WATCH_FETCH_TIMEOUT (seconds per download,
# default 600), UPSTREAM_WATCH_NO_REUSE=1 (do not reuse tarballs already under .cache).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KNOWN="$ROOT/scripts/upstream-watch.known"
PY="$ROOT/scripts/upstream-watch.py"
export UPSTREAM_WATCH_DIR="${UPSTREAM_WATCH_DIR:-$ROOT/.cache/watch}"
WATCH="$UPSTREAM_WATCH_DIR"
TQ="${UPSTREAM_WATCH_TIMEOUT:-60}"
TF="${UPSTREAM_WATCH_FETCH_TIMEOUT:-600}"
NPM_PKGS=(llama.rn cui-llama.rn whisper.rn)
PYPI_PKG=llama-cpp-python
# what a tarball's extraction keeps: the compared files, ggml's CMakeLists (its version),
# llama.rn's vendor/VERSIONS (its llama.cpp build), package.json
KEEP=(ggml-backend.h ggml-backend-impl.h ggml-backend.cpp ggml-backend-reg.cpp ggml-alloc.h
      ggml-alloc.c ggml.h ggml-rpc.h ggml/CMakeLists.txt vendor/VERSIONS package/package.json)

log() { echo "upstream-watch: $*" >&2; }
# a command bounded in time: TERM after $1 s, KILL 10 s later (timeout signals its whole
# process group, so pip's build-backend subprocess goes too); stdin closed (nothing prompts)
bounded() {
  local t="$1" rc; shift
  timeout -k 10 "$t" "$@" </dev/null; rc=$?
  ((rc == 124 || rc == 137)) && log "timed out after $t s: $*"
  return $rc
}

dirname_of() { # spec -> directory name under $WATCH
  local s="${1/==/-}"; s="${s/@/-}"; s="${s#-}"; echo "${s//\//-}"
}

extract() { # tarball dest stamp
  local tgz="$1" dest="$2" stamp="$3" tmp="$2.tmp.$$"
  if [[ -f "$dest/.watch-stamp" && "$(cat "$dest/.watch-stamp")" == "$stamp" ]]; then return 0; fi
  rm -rf "$tmp" && mkdir -p "$tmp"
  # tar exits 2 when a pattern has no member (e.g. no ggml-rpc.h in llama.rn's cpp/): the
  # python side says which files are absent
  tar -xzf "$tgz" -C "$tmp" --wildcards --no-anchored --exclude='*.xcframework*' "${KEEP[@]}" 2>/dev/null
  [[ -n "$(find "$tmp" -name ggml-backend-impl.h -print -quit)" ]] ||
    log "$(basename "$tgz"): no ggml-backend-impl.h in the tarball"
  echo "$stamp" >"$tmp/.watch-stamp"
  rm -rf "$dest" && mv "$tmp" "$dest"
}

find_cached() { # file name, check command ('sha1sum'|'sha256sum'), digest -> path of a verified copy
  local name="$1" sum="$2" digest="$3" p
  [[ -n "$digest" ]] || return 1
  local cands=("$WATCH/$name")
  [[ "${UPSTREAM_WATCH_NO_REUSE:-0}" == 1 ]] || cands+=("$ROOT"/.cache/npm/"$name" "$ROOT"/.cache/upstream*/"$name")
  for p in "${cands[@]}"; do
    [[ -s "$p" ]] && echo "$digest  $p" | "$sum" -c --status 2>/dev/null && { echo "$p"; return 0; }
  done
  return 1
}

fetch_npm() { # name version -> prints the extracted directory
  local name="$1" v="$2" shasum tgz got tmp
  shasum="$(bounded "$TQ" npm view "$name@$v" dist.shasum 2>/dev/null | tail -1)" ||
    { log "npm view $name@$v failed or timed out"; return 1; }
  [[ "$shasum" =~ ^[0-9a-f]{40}$ ]] || { log "npm view $name@$v: no dist.shasum"; return 1; }
  tgz="$(echo "${name#@}" | tr / -)-$v.tgz"
  if ! got="$(find_cached "$tgz" sha1sum "$shasum")"; then
    tmp="$WATCH/dl.$$" && rm -rf "$tmp" && mkdir -p "$tmp"
    log "npm pack $name@$v"
    (cd "$tmp" && bounded "$TF" npm pack --silent "$name@$v" >/dev/null 2>"$tmp/err") ||
      { log "npm pack $name@$v failed or timed out: $(tail -2 "$tmp/err" 2>/dev/null)"; rm -rf "$tmp"; return 1; }
    mv "$tmp/$tgz" "$WATCH/$tgz" 2>/dev/null || { log "npm pack $name@$v: no $tgz"; rm -rf "$tmp"; return 1; }
    rm -rf "$tmp"
    got="$WATCH/$tgz"
    echo "$shasum  $got" | sha1sum -c --status || { log "$tgz: sha1 is not npm's $shasum"; return 1; }
  fi
  extract "$got" "$WATCH/$(dirname_of "$name@$v")" "$shasum" || return 1
  echo "$WATCH/$(dirname_of "$name@$v")"
}

pypi_json() { bounded "$TQ" curl -fsS --max-time "$TQ" "https://pypi.org/pypi/$1/json" 2>/dev/null; }

fetch_pypi() { # name version -> prints the extracted directory
  local name="$1" v="$2" meta file sha got tmp
  meta="$(pypi_json "$name" | python3 -c '
import json, sys
d = json.load(sys.stdin)
s = [u for u in d["releases"].get(sys.argv[1], []) if u["packagetype"] == "sdist"]
print(s[0]["filename"], s[0]["digests"]["sha256"]) if s else None' "$v" 2>/dev/null)"
  read -r file sha <<<"$meta"
  [[ -n "${file:-}" ]] || { file="${name//-/_}-$v.tar.gz"; sha=""; log "PyPI JSON for $name $v unavailable: no digest to check (pip checks its own)"; }
  if ! got="$(find_cached "$file" sha256sum "$sha")"; then
    # pip prepares the sdist's metadata, which imports its build backend: install that (small,
    # pure Python) first and keep pip from building it in an isolated environment (as
    # scripts/fetch-upstream.sh does); without it pip hung for minutes
    python3 -c 'import scikit_build_core' 2>/dev/null ||
      bounded "$TF" python3 -m pip install -q --timeout 30 --retries 1 scikit-build-core >&2 ||
      { log "pip install scikit-build-core failed or timed out"; return 1; }
    tmp="$WATCH/dl.$$" && rm -rf "$tmp" && mkdir -p "$tmp"
    log "pip download $name==$v (sdist)"
    bounded "$TF" python3 -m pip download -q --no-deps --no-binary :all: --no-build-isolation \
      --timeout 30 --retries 1 "$name==$v" -d "$tmp" >&2 2>"$tmp.err" ||
      { log "pip download $name==$v failed: $(tail -2 "$tmp.err")"; rm -rf "$tmp" "$tmp.err"; return 1; }
    rm -f "$tmp.err"
    got="$(ls "$tmp"/*.tar.gz 2>/dev/null | head -1)"
    [[ -n "$got" ]] || { log "pip download $name==$v: no sdist"; rm -rf "$tmp"; return 1; }
    file="$(basename "$got")" && mv "$got" "$WATCH/$file" && rm -rf "$tmp" && got="$WATCH/$file"
    if [[ -n "$sha" ]]; then
      echo "$sha  $got" | sha256sum -c --status || { log "$file: sha256 is not PyPI's $sha"; return 1; }
    else
      sha="$(sha256sum "$got" | cut -c1-64)"
    fi
  fi
  extract "$got" "$WATCH/$(dirname_of "$name==$v")" "$sha" || return 1
  echo "$WATCH/$(dirname_of "$name==$v")"
}

fetch_spec() { # spec -> prints the extracted directory
  local spec="$1"
  mkdir -p "$WATCH"
  case "$spec" in
    *==*) fetch_pypi "${spec%%==*}" "${spec#*==}" ;;
    ?*@?*) fetch_npm "${spec%@*}" "${spec##*@}" ;;
    *) log "not a spec: $spec (name@version for npm, name==version for PyPI)"; return 2 ;;
  esac
}

# the newest versions: npm's dist-tags (latest, next, ...) and the highest version published,
# pre-releases included; PyPI's newest release
newest_npm() { # name -> specs, one per line
  local name="$1" tags versions
  tags="$(bounded "$TQ" npm view "$name" dist-tags --json 2>/dev/null)" || { log "npm view $name dist-tags failed or timed out"; return 1; }
  versions="$(bounded "$TQ" npm view "$name" versions --json 2>/dev/null)" || { log "npm view $name versions failed or timed out"; return 1; }
  python3 - "$name" "$tags" "$versions" <<'EOF'
import json, re, sys
name, tags, versions = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
if isinstance(versions, str):
    versions = [versions]
def key(v):
    m = re.match(r"(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?", v)
    if not m:
        return (0, 0, 0, 0, ())
    pre = m.group(4)
    ids = tuple((0, int(x), "") if x.isdigit() else (1, 0, x) for x in pre.split(".")) if pre else ()
    return (int(m.group(1)), int(m.group(2)), int(m.group(3)), 0 if pre else 1, ids)
out = []
for t, v in sorted(tags.items(), key=lambda kv: kv[0] != "latest"):
    out.append((v, "dist-tag " + t))
top = max(versions, key=key) if versions else None
if top and all(key(top) > key(v) for v, _ in out):
    out.append((top, "newest published" + (", pre-release" if "-" in top else "")))
seen = set()
for v, why in out:
    if v not in seen:
        seen.add(v)
        print("%s@%s\t%s" % (name, v, why))
EOF
}

newest_pypi() { # name -> spec
  local name="$1" v
  v="$(pypi_json "$name" | python3 -c 'import json,sys; print(json.load(sys.stdin)["info"]["version"])' 2>/dev/null)"
  if [[ -z "$v" ]]; then # PyPI's JSON API unreachable: ask pip
    v="$(bounded "$TQ" python3 -m pip index versions --timeout 30 --retries 1 "$name" 2>/dev/null |
         sed -n "s/^$name (\(.*\))\$/\1/p")"
  fi
  [[ -n "$v" ]] || { log "no version of $name from PyPI (JSON API and pip index both failed)"; return 1; }
  printf '%s==%s\tPyPI newest release\n' "$name" "$v"
}

case "${1:-}" in
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  --record) exec python3 "$PY" record "$KNOWN" ;;
  --fetch)
    [[ $# -eq 2 ]] || { log "usage: --fetch SPEC"; exit 2; }
    fetch_spec "$2"; exit ;;
  --diff)
    [[ $# -ge 2 ]] || { log "usage: --diff SPEC [REV]"; exit 2; }
    dir="$(fetch_spec "$2")" || exit 1
    rev="${3:-}"
    [[ -n "$rev" ]] || rev="$(python3 "$PY" nearest "$KNOWN" "$dir")" || exit 1
    # the revision's tree: its cached one (.cache/hosts, .cache/upstream) or the watch's own copy
    has="$(python3 "$PY" has-tree "$KNOWN" "$rev")" || exit 2
    if [[ "$has" != yes ]]; then
      fetch_spec "$rev" >/dev/null || { log "could not fetch $rev"; exit 1; }
    fi
    exec python3 "$PY" diff "$KNOWN" "$dir" "$rev" "$2" ;;
  -*) log "unknown option $1 (see --help)"; exit 2 ;;
esac

[[ -f "$KNOWN" ]] || { log "no $KNOWN (run --record)"; exit 1; }
mkdir -p "$WATCH"
summary="$(mktemp)"
trap 'rm -f "$summary"' EXIT

if (($#)); then
  specs="$(printf '%s\tgiven\n' "$@")"
else
  specs=""
  for p in "$PYPI_PKG"; do
    s="$(newest_pypi "$p")" && specs+="$s"$'\n' || printf '%s\t-\tfetch failed (newest version unknown)\n' "$p" >>"$summary"
  done
  for p in "${NPM_PKGS[@]}"; do
    s="$(newest_npm "$p")" && specs+="$s"$'\n' || printf '%s\t-\tfetch failed (newest version unknown)\n' "$p" >>"$summary"
  done
fi

echo "upstream watch, $(date -u +%Y-%m-%d) (facts: scripts/upstream-watch.known, $(grep -c '^\[' "$KNOWN") revisions)"
while IFS=$'\t' read -r spec why; do
  [[ -n "$spec" ]] || continue
  echo
  echo "== $spec ($why)"
  if dir="$(fetch_spec "$spec")"; then
    python3 "$PY" check "$KNOWN" "$dir" "$spec" "$summary"
  else
    echo "  FETCH FAILED (see the messages above)"
    if [[ "$spec" == *==* ]]; then n="${spec%%==*}" v="${spec#*==}"; else n="${spec%@*}" v="${spec##*@}"; fi
    printf '%s\t%s\tfetch failed\n' "$n" "$v" >>"$summary"
  fi
done <<<"$specs"

echo
echo "== summary"
python3 - "$summary" <<'EOF'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
rows = [("package", "version", "result")] + rows
w = [max(len(r[i]) for r in rows) for i in range(2)]
for i, r in enumerate(rows):
    print("%-*s  %-*s  %s" % (w[0], r[0], w[1], r[1], r[2]))
    if i == 0:
        print("%s  %s  %s" % ("-" * w[0], "-" * w[1], "-" * 6))
EOF
# exit 0 when every package matches a revision, 1 when one differs or could not be fetched
! grep -qv $'\tmatches ' "$summary"
