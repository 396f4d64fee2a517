#!/usr/bin/env bash
# The C op suite (tests_c/simd_ops.c) for aarch64: ggml-cpu from llama.rn / whisper.rn compiled by
# clang for Armv8.2-a+fp16+dotprod (the flags of llama.rn's rnllama_v8_2_fp16_dotprod Android
# library), the Rust library cross-built, every case compared between the two backends under
# qemu-user (its "max" CPU has both extensions). With these flags SIMD's NEON kernels must match
# ggml-cpu bit for bit (GGML_RS_HOST_NEON_DOTPROD); other flags (e.g. HOST_FLAGS=-march=armv8-a)
# build and compare with the suite's tolerances. scripts/test.sh runs it on x86_64 machines; if the
# toolchain cannot be installed it says SKIPPED and exits 0, unless GGML_RS_AARCH64_REQUIRED=1.
#   BUILD_DIR   (default: build-aarch64)
#   JOBS        (default: 2)
#   HOST_FLAGS  (default: -march=armv8.2-a+dotprod)   flags for the host ggml core
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD_DIR="${BUILD_DIR:-build-aarch64}"
JOBS="${JOBS:-2}"
HOST_FLAGS="${HOST_FLAGS:--march=armv8.2-a+fp16+dotprod}"
source scripts/aarch64-toolchain.sh
aarch64_toolchain "aarch64-linux-gnu-g++ clang ninja" g++-aarch64-linux-gnu clang ninja-build cmake
bash scripts/fetch-hosts.sh

aarch64_build "$BUILD_DIR" OFF simd_ops_lm_static simd_ops_wsp_static
for p in lm wsp; do
    echo "== simd_ops_${p}_static (host core: $HOST_FLAGS)"
    qemu-aarch64 -L /usr/aarch64-linux-gnu "$BUILD_DIR/tests_c/simd_ops_${p}_static"
    GGML_RS_SIMD_PORTABLE=1 GGML_RS_SIMD_EXACT=0 qemu-aarch64 -L /usr/aarch64-linux-gnu "$BUILD_DIR/tests_c/simd_ops_${p}_static" | tail -n1
done
