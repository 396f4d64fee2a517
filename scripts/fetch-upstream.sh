#!/usr/bin/env bash
# Fetch upstream llama.cpp from PyPI: the sdist of llama-cpp-python vendors it.
#   scripts/fetch-upstream.sh [VERSION]     VERSION (or $GGML_RS_UPSTREAM): 0.3.36 (default) or 0.3.35
#     0.3.36: llama.cpp 0c1e57098, ggml 0.25.3  -> cargo feature ggml-0253,  headers include/ggml-0.25.3
#     0.3.35: ggml v0.20.0 (the 2026 revision)  -> cargo feature ggml-2026,  headers include/ggml-2026
# Checks the tarball's sha256 and extracts its vendor/llama.cpp twice into .cache/upstream/VERSION:
# llama.cpp-stock, built stock, and llama.cpp-rs, built on the library (cmake/ggml-rs-upstream.cmake
# swaps its two headers when configured). Idempotent; the sources are never committed.
# Prints four lines: the stock tree, our tree, the library's cargo feature and its include/ folder.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="$ROOT/.cache/upstream"
VERSION="${1:-${GGML_RS_UPSTREAM:-0.3.36}}"
case "$VERSION" in
  0.3.36) SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e FEATURE=ggml-0253 HEADERS=ggml-0.25.3 ;;
  0.3.35) SHA256=1139dbb54509074b70893fab8554e3b079aa9f4d312058ce4018ef0019e3de12 FEATURE=ggml-2026 HEADERS=ggml-2026 ;;
  *) echo "fetch-upstream: llama-cpp-python $VERSION is not a version the library serves (0.3.36, 0.3.35)" >&2; exit 2 ;;
esac
TGZ="llama_cpp_python-$VERSION.tar.gz"
mkdir -p "$DIR/$VERSION"

if ! echo "$SHA256  $DIR/$TGZ" | sha256sum -c --status 2>/dev/null; then
  rm -f "$DIR/$TGZ"
  t0=$SECONDS
  echo "fetch-upstream: pip download llama-cpp-python==$VERSION (sdist, ~75 MB)" >&2
  # pip prepares the sdist's metadata, which imports its build backend: install that (small,
  # pure Python) first, and keep pip from building it in an isolated environment (without both,
  # a plain `pip download` sits for minutes)
  python3 -c 'import scikit_build_core' 2>/dev/null || python3 -m pip install -q scikit-build-core >&2
  timeout 900 python3 -m pip download -q --no-deps --no-binary :all: --no-build-isolation \
    "llama-cpp-python==$VERSION" -d "$DIR" >&2
  echo "$SHA256  $DIR/$TGZ" | sha256sum -c --quiet || { echo "fetch-upstream: sha256 mismatch for $TGZ" >&2; exit 1; }
  echo "fetch-upstream: downloaded in $((SECONDS - t0)) s" >&2
fi

extract() { # dest
  local dest="$1" tmp="$1.tmp"
  rm -rf "$tmp" && mkdir -p "$tmp"
  tar -xzf "$DIR/$TGZ" -C "$tmp" --strip-components=3 "llama_cpp_python-$VERSION/vendor/llama.cpp"
  rm -rf "$dest" && mv "$tmp" "$dest"
}

stock="$DIR/$VERSION/llama.cpp-stock"
[[ -f "$stock/.extracted" ]] || { extract "$stock"; touch "$stock/.extracted"; }

# ours: the same sources; cmake/ggml-rs-upstream.cmake puts our headers in place when configured
rs="$DIR/$VERSION/llama.cpp-rs"
[[ -f "$rs/.extracted" ]] || { extract "$rs"; touch "$rs/.extracted"; }
echo "$stock"
echo "$rs"
echo "$FEATURE"
echo "$HEADERS"
