#!/usr/bin/env bash
# Fetch upstream llama.cpp with ggml v0.20.0 (the 2026 revision without a prefix) from PyPI: the
# sdist of llama-cpp-python 0.3.35 vendors it. Checks the tarball's sha256 and extracts its
# vendor/llama.cpp twice into .cache/upstream: llama.cpp-stock (as shipped) and llama.cpp-rs, where
# include/ggml-2026's headers replace ggml/include/ggml-backend.h and ggml/src/ggml-backend-impl.h
# and ggml-backend.cpp / ggml-backend-reg.cpp are deleted (tests_c/upstream/CMakeLists.txt drops
# them from the targets). Idempotent; the sources are never committed.
# Prints the two tree paths.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="$ROOT/.cache/upstream"
VERSION=0.3.35
TGZ="llama_cpp_python-$VERSION.tar.gz"
SHA256=1139dbb54509074b70893fab8554e3b079aa9f4d312058ce4018ef0019e3de12
mkdir -p "$DIR"

if ! echo "$SHA256  $DIR/$TGZ" | sha256sum -c --status 2>/dev/null; then
  rm -f "$DIR/$TGZ"
  t0=$SECONDS
  echo "fetch-upstream: pip download llama-cpp-python==$VERSION (sdist, ~75 MB)" >&2
  # pip prepares the sdist's metadata, which imports its build backend: install that (small,
  # pure Python) first, and keep pip from building it in an isolated environment
  python3 -c 'import scikit_build_core' 2>/dev/null || python3 -m pip install -q scikit-build-core >&2
  python3 -m pip download -q --no-deps --no-binary :all: --no-build-isolation \
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

stock="$DIR/llama.cpp-stock"
[[ -f "$stock/.extracted" ]] || { extract "$stock"; touch "$stock/.extracted"; }

# ours: regenerated when include/ggml-2026 changes
rs="$DIR/llama.cpp-rs"
stamp="$(cat "$ROOT"/include/ggml-2026/ggml-backend.h "$ROOT"/include/ggml-2026/ggml-backend-impl.h | sha256sum | cut -c1-16)"
if [[ "$(cat "$rs/.extracted" 2>/dev/null)" != "$stamp" ]]; then
  extract "$rs"
  cp "$ROOT/include/ggml-2026/ggml-backend.h" "$rs/ggml/include/ggml-backend.h"
  cp "$ROOT/include/ggml-2026/ggml-backend-impl.h" "$rs/ggml/src/ggml-backend-impl.h"
  rm "$rs/ggml/src/ggml-backend.cpp" "$rs/ggml/src/ggml-backend-reg.cpp"
  echo "$stamp" > "$rs/.extracted"
fi
echo "$stock"
echo "$rs"
