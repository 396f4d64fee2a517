#!/usr/bin/env bash
# ThreadSanitizer over the library while both hosts compute at once (issue: whisper.rn and llama.rn
# in one process): builds the library with -Zsanitizer=thread (its std too, from rust-src, on the
# stable toolchain through RUSTC_BOOTSTRAP=1; target/tsan), links assistant_tsan and tsan_control
# in the CMake build and runs host_assistant_tsan (tests_c/hosts/run-tsan.sh: the planted race must
# be reported, the concurrent hosts must give no report in the library's frames).
#   BUILD_DIR (default build), JOBS (default nproc); extra arguments go to the CMake configure step.
# Part of scripts/test.sh; GGML_RS_SKIP_TSAN=1 skips it there.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD_DIR="${BUILD_DIR:-build}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
host="$(rustc -vV | sed -n 's/^host: //p')"

if [[ "$host" != x86_64-unknown-linux-gnu && "$host" != aarch64-unknown-linux-gnu ]]; then
  echo "tsan.sh: SKIPPED: rustc's ThreadSanitizer runtime is for Linux x86_64/aarch64 hosts, not $host"
  exit 0
fi
runtime="$(rustc --print sysroot)/lib/rustlib/$host/lib/librustc-stable_rt.tsan.a"
if [[ ! -f "$runtime" ]]; then
  echo "tsan.sh: no ThreadSanitizer runtime at $runtime" >&2
  exit 1
fi
if ! rustup component list --installed 2>/dev/null | grep -q '^rust-src'; then
  echo "tsan.sh: rustup component rust-src is missing (scripts/provision.sh test installs it)" >&2
  exit 1
fi

RUSTC_BOOTSTRAP=1 RUSTFLAGS="-Zsanitizer=thread" \
  cargo build --release -Zbuild-std=std,panic_unwind --target "$host" --target-dir target/tsan
lib="$ROOT/target/tsan/$host/release/libggml_backend_rs.a"

cmake -S . -B "$BUILD_DIR" -G Ninja -DGGML_RS_TSAN_LIB="$lib" -DGGML_RS_TSAN_RUNTIME="$runtime" "$@" >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS" --target assistant_tsan tsan_control
ctest --test-dir "$BUILD_DIR" --output-on-failure -R '^host_assistant_tsan$'
