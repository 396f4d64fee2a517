#!/usr/bin/env bash
# The 2026 revision's stage of scripts/test.sh: the library built with --features lm-2026,wsp-2026
# (target/rev2026), then the C suites, the real hosts (cui-llama.rn 1.12.2, llama.rn 0.12.9,
# whisper.rn 0.7.4: stock vs ours, static and shared) and the integrate checks configured with
# -DGGML_RS_REV2026=ON in $BUILD_DIR-rev2026, and ctest there.
#   BUILD_DIR (default build), JOBS (default nproc); extra arguments go to the CMake configure step.
# --bounded (what scripts/test.sh runs by default, ~15 min cold on 2 cores): the same configure,
# but only the real hosts of the three packages (SmolLM2 on cui-llama.rn 1.12.2 and llama.rn
# 0.12.9, whisper.rn 0.7.4's transcript: stock twice, then static and shared bitwise equal to it),
# bad_input, the fuzz corpus replay and the SIMD op suite (simd_ops_{lm,wsp}_static) are built (CMake
# target rev2026_bounded) and run; plus the
# quantized models (tests_c/hosts/quantized_models.cmake): Gemma 3 270M Q4_K_M on cui-llama.rn
# 1.12.2 (stock, identical, SIMD) and whisper base q5_1 / q8_0 on whisper.rn 0.7.4 (the same three).
# Until the library has the 2026 features only the stock hosts are built and checked (each stock
# driver deterministic), and the stage says so.
set -euo pipefail

scope=full
if [[ "${1:-}" == --bounded ]]; then
  scope=bounded
  shift
fi

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD_DIR="${BUILD_DIR:-build}-rev2026"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"

bash scripts/fetch-hosts.sh cui lm12 wsp7 >/dev/null

lib_dir="$ROOT/target/rev2026/release"
if grep -q '^lm-2026 *=' Cargo.toml && grep -q '^wsp-2026 *=' Cargo.toml; then
  source "$ROOT/scripts/lib/cargo-features.sh"
  cargo_features_build lm-2026,wsp-2026 "$ROOT/target/rev2026"
else
  echo "test-rev2026: Cargo.toml has no lm-2026 / wsp-2026 features yet: stock hosts only" >&2
fi

# valgrind stays with the default build (scripts/valgrind.sh); the fuzz corpus replay
# (fuzz_replay_<p>) runs here on the 2026 build, and the whole stage also runs libFuzzer on it
# (FUZZ_REV2026=1 scripts/fuzz.sh, the same deterministic run as the default build's ctest 'fuzz').
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_RS_REV2026=ON \
  -DGGML_RS_CARGO_BUILD=OFF -DGGML_RS_LIB_DIR="$lib_dir" \
  -DGGML_RS_VALGRIND_TEST=OFF -DGGML_RS_FUZZ_TEST=OFF "$@"
if [[ "$scope" == bounded ]]; then
  cmake --build "$BUILD_DIR" -j "$JOBS" --target rev2026_bounded
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" \
    -R '^(host_(cui|lm12)_llama_(stock|identical)|host_wsp7_whisper_(stock|identical)|bad_input_(lm|wsp)_(static|shared)|fuzz_replay_(lm|wsp)|simd_ops_(lm|wsp)_static|host_cui_gemma_(stock|identical|simd)|host_cui_llama_(simd|simd_nofa|simd_only|fastmath_simd|fastmath_exact)|quantize_whisper_base|host_wsp7_whisper_base_q(5_1|8_0)_(stock|identical|simd)|sched_gpu_(lm|wsp)_(stock|static|shared|static_hostalloc))$'
else
  cmake --build "$BUILD_DIR" -j "$JOBS"
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS"
  FUZZ_REV2026=1 FUZZ_RUNS="${GGML_RS_FUZZ_RUNS:-20000}" FUZZ_MAX_SECONDS="${GGML_RS_FUZZ_MAX_SECONDS:-240}" \
    bash scripts/fuzz.sh
fi
