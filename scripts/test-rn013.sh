#!/usr/bin/env bash
# llama.rn 0.13.0-rc.5 (npm release candidate; llama.cpp b11118 vendored unprefixed under
# vendor/llama.cpp) on this library, against the same package built stock. A stage of
# scripts/test.sh (GGML_RS_SKIP_RN013=1 skips it); docs/llama-rn-0.13.md.
#
#   1. the package (scripts/fetch-hosts.sh rn013) and SmolLM2 (scripts/fetch-models.sh llama);
#   2. the library with --features ggml-b11118 (target/b11118), the unprefixed layer of b11118,
#      built while the C++ that does not link it compiles;
#   3. tests_c/rn013/CMakeLists.txt builds the package from its own cmake/rnllama-sources.cmake:
#      ggml stock (its ggml-backend.cpp / -reg.cpp) and ours (include/ggml-b11118's headers, the
#      two files removed), llama once, and the llama driver of tests_c/hosts linked four ways:
#      stock, static (libggml_backend_rs.a), shared (.so, -rdynamic) and archive (plain archives,
#      no --whole-archive);
#   4. SmolLM2-135M Q4_1, 100-token prompt + 32 greedy tokens (flash attention auto, 1 thread),
#      and the same prompt in ubatches of 32 with flash attention off (+ 16 + 2 tokens on 2 threads
#      with GGML_RS_TEST_RN013_THREADS=1): stock twice (deterministic), then each of ours
#      bit-identical to it (tokens, every logit; tests_c/hosts/run-identical.sh, which also checks
#      ours' compute buffers are no larger than stock's).
# Prints each step's wall time; exit status non-zero on any failure.
#   JOBS (default 2), BUILD_DIR (default build; this stage uses $BUILD_DIR-rn013)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS="${JOBS:-2}"
BUILD="$ROOT/${BUILD_DIR:-build}-rn013"
LIB="$ROOT/target/b11118/release"
MODEL="$ROOT/.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf"
OUT="$BUILD/out"

times=()
step() { # name command...
  local name="$1" t0=$SECONDS
  shift
  echo "rn013: $name"
  "$@"
  times+=("$(printf "%-52s %4d s" "$name" $((SECONDS - t0)))")
}
cargo_pid=""
report() {
  # a failed step while the library still builds: stop that cargo (started below, by its pid)
  if [[ -n "$cargo_pid" ]]; then kill "$cargo_pid" 2>/dev/null || true; fi
  echo "rn013: step times"
  printf '  %s\n' "${times[@]}"
}
trap report EXIT

step "fetch llama.rn 0.13.0-rc.5" bash scripts/fetch-hosts.sh rn013
if [[ ! -s "$MODEL" ]]; then
  step "fetch SmolLM2" bash scripts/fetch-models.sh llama
fi

# The library builds while the C++ that does not link it compiles (llama, both ggml cores, the
# stock programs): cargo's serial phases leave a core free otherwise.
cargo_log="$ROOT/target/b11118-build.log"
mkdir -p "$ROOT/target"
source "$ROOT/scripts/lib/cargo-features.sh"
cargo_features_build ggml-b11118 "$ROOT/target/b11118" -j "$JOBS" -q >"$cargo_log" 2>&1 &
cargo_pid=$!
t_cargo=$SECONDS
step "cmake configure" cmake -S tests_c/rn013 -B "$BUILD" -G Ninja \
  -DRN013_PKG="$ROOT/.cache/hosts/rn013/package" -DGGML_RS_INCLUDE="$ROOT/include/ggml-b11118" \
  -DGGML_RS_LIB_DIR="$LIB" >/dev/null
step "build: llama, ggml stock + ours, stock programs (beside cargo)" cmake --build "$BUILD" -j "$JOBS" -- \
  rn013_llama rn013_core_stock rn013_core_ours rn013_driver_stock rn013_alloc_deps_stock
cargo_wait() {
  local pid="$cargo_pid"
  cargo_pid=""
  if ! wait "$pid"; then
    cat "$cargo_log" >&2
    echo "rn013: FAIL cargo build --features ggml-b11118" >&2
    return 1
  fi
  echo "rn013: cargo build --features ggml-b11118 done after $((SECONDS - t_cargo)) s"
}
step "cargo build --features ggml-b11118 (rest)" cargo_wait
step "link: static, shared, archive" cmake --build "$BUILD" -j "$JOBS" -- \
  rn013_driver_static rn013_driver_shared rn013_driver_archive rn013_alloc_deps_static

# ours really runs on the library: its Rust code (crate ggml_backend_rs) is in the static
# programs, the .so is NEEDED by the shared one, and no ggml-backend.cpp was compiled for them
check_linked() {
  local exe
  for exe in static archive; do
    grep -q 15ggml_backend_rs < <(nm "$BUILD/rn013_driver_$exe") ||
      { echo "rn013: FAIL rn013_driver_$exe does not contain the library" >&2; return 1; }
  done
  grep -q "NEEDED.*libggml_backend_rs.so" < <(readelf -d "$BUILD/rn013_driver_shared") ||
    { echo "rn013: FAIL rn013_driver_shared does not link libggml_backend_rs.so" >&2; return 1; }
  local objs="$BUILD/CMakeFiles/rn013_core_ours.dir/ours/ggml/src"
  if [[ -e "$objs/ggml-backend.cpp.o" || -e "$objs/ggml-backend-reg.cpp.o" ]]; then
    echo "rn013: FAIL ggml-backend.cpp compiled into ours" >&2
    return 1
  fi
  echo "rn013: ok   ours links the library, not ggml-backend.cpp / -reg.cpp"
  # every C function stock's two files define is exported by the library
  local stock_objs missing
  stock_objs=$(find "$BUILD/CMakeFiles/rn013_core_stock.dir" -name ggml-backend.cpp.o -o -name ggml-backend-reg.cpp.o)
  missing=$(comm -23 <(nm --defined-only -g $stock_objs | awk '$2 ~ /[TW]/ && $3 !~ /^_Z/ {print $3}' | sort -u) \
                     <(nm -D --defined-only "$LIB/libggml_backend_rs.so" | awk '{print $3}' | sort -u))
  if [[ -n "$missing" ]]; then
    echo "rn013: FAIL not exported by the library:" $missing >&2
    return 1
  fi
  echo "rn013: ok   the library exports all $(nm --defined-only -g $stock_objs | awk '$2 ~ /[TW]/ && $3 !~ /^_Z/' | wc -l) C functions of stock's ggml-backend.cpp / -reg.cpp"
}
step "ours links the library" check_linked

# b11118's graph_optimize parameters: a backend keeps a tensor alive until a later node (no CPU
# backend does; ggml-metal's fusion does). Stock and ours print the same splits, offsets and
# values, with the dependency and without, and the dependency keeps the tensor's memory its own.
alloc_deps() {
  local m v
  mkdir -p "$OUT"
  for m in stock static; do
    for v in dep nodep; do
      "$BUILD/rn013_alloc_deps_$m" "$v" >"$OUT/alloc_deps_${m}_$v.txt" ||
        { echo "rn013: FAIL alloc_deps $m $v"; cat "$OUT/alloc_deps_${m}_$v.txt"; return 1; }
    done
  done
  for v in dep nodep; do
    cmp -s "$OUT/alloc_deps_stock_$v.txt" "$OUT/alloc_deps_static_$v.txt" ||
      { echo "rn013: FAIL alloc_deps ($v): ours differs from stock"; diff "$OUT/alloc_deps_stock_$v.txt" "$OUT/alloc_deps_static_$v.txt"; return 1; }
  done
  grep -q "reused by a later node: yes" "$OUT/alloc_deps_stock_nodep.txt" ||
    { echo "rn013: FAIL alloc_deps: without the dependency nothing was reused (the case tests nothing)"; return 1; }
  echo "rn013: ok   allocation dependencies: ours = stock (splits, offsets, values), with and without"
}
step "graph_optimize allocation dependencies" alloc_deps

RUN=tests_c/hosts/run-identical.sh
ours=("$BUILD/rn013_driver_static" "$BUILD/rn013_driver_shared" "$BUILD/rn013_driver_archive")
identical() { # case driver-args...
  local case="$1"
  shift
  bash "$RUN" llama "$OUT/$case" reference "$BUILD/rn013_driver_stock" -- "$@" >"$OUT.$case.log" 2>&1 &&
    bash "$RUN" llama "$OUT/$case" compare "${ours[@]}" -- "$@" >>"$OUT.$case.log" 2>&1
  local rc=$?
  grep -E '^(OK|FAIL)' "$OUT.$case.log" | sed "s/^/rn013: $case: /"
  return $rc
}
mkdir -p "$OUT"
# one thread: ggml-cpu's spinning pool slows 2-thread runs 20x when the 2 cores are shared (a
# 1 s run took 21 s at load 6). GGML_RS_TEST_RN013_THREADS=1 adds a short 2-thread case.
step "SmolLM2 -p 100 -n 32 -t 1 (flash attention auto)" identical llama -m "$MODEL" -p 100 -n 32 -t 1
step "SmolLM2 -p 100 -n 16 -u 32 -t 1, flash attention off" identical llama_ubatch32_nofa -m "$MODEL" -p 100 -n 16 -u 32 -t 1 --flash-attn off
if [[ "${GGML_RS_TEST_RN013_THREADS:-0}" == 1 ]]; then
  step "SmolLM2 -p 16 -n 2 -t 2" identical llama_t2 -m "$MODEL" -p 16 -n 2 -t 2
fi
# the SIMD backend in b11118's graphs: the static build with GGML_RS_SIMD=1, whole output
# bit-identical to stock, every split on SIMD (run-simd.sh)
simd() {
  local rc=0
  GGML_RS_SIMD_ENV_PREFIX= GGML_RS_SIMD_BITWISE=1 \
    bash tests_c/hosts/run-simd.sh llama "$OUT/simd" "$BUILD/rn013_driver_stock" "$BUILD/rn013_driver_static" \
    -- -m "$MODEL" -p 100 -n 16 -t 1 >"$OUT.simd.log" 2>&1 || rc=$?
  grep -E '^(scheduler|whole|first|prompt|FAIL)' "$OUT.simd.log" | sed "s/^/rn013: simd: /"
  return $rc
}
step "SmolLM2 -p 100 -n 16 -t 1, GGML_RS_SIMD=1" simd
echo "rn013: llama.rn 0.13.0-rc.5: static, shared and archive bit-identical to stock; SIMD checked"
