#!/usr/bin/env bash
# Bounded fuzzing of ggml-backend-rs with libFuzzer + AddressSanitizer, on stable Rust.
#
#   bash scripts/fuzz.sh [seconds]      (default 120; split evenly between the lm_ and wsp_ harness)
#
# What it does:
#   1. makes sure clang and its fuzzer/ASan runtime are installed (apt-get, only when missing);
#   2. builds the library as a static archive with SanitizerCoverage (-Cpasses=sancov-module,
#      stable rustc flags) plus debug assertions and overflow checks, into target/fuzz; the Rust
#      code is not ASan-instrumented (that needs nightly), but every malloc/free/memcpy it does
#      goes through ASan's interceptors, and the host core and the harness are fully instrumented;
#   3. configures $FUZZ_BUILD_DIR (default build-fuzz) with clang and -DGGML_RS_FUZZ=ON and builds
#      fuzz_lm / fuzz_wsp (tests_c/fuzz/fuzz.c over ASan copies of the host cores);
#   4. runs each harness for its share of the time over the committed seed corpus
#      (tests_c/fuzz/corpus, read-only) plus a scratch corpus in the build dir, then replays the
#      seed corpus once more.
# Exit status: 0 when nothing was found; non-zero on a crash, an ASan/LSan report, a panic caught
# by the library or a wrong result (the reproducer is written to $FUZZ_BUILD_DIR/artifacts/ and
# named in the output; replay it with `$FUZZ_BUILD_DIR/tests_c/fuzz_<p> <file>`).
#
# FUZZ_RUNS=N makes the run deterministic instead of timed: N executions per harness from a fresh
# scratch corpus with a fixed seed (FUZZ_SEED, default 1), so CI repeats exactly the run that was
# checked here (the ctest `fuzz` uses it). FUZZ_MAX_SECONDS=S caps each harness's wall time on
# those runs too (scripts/test.sh sets it, so a slow or loaded machine cannot stretch the stage); a
# capped run prints "capped" with the executions it did.
# Environment: FUZZ_BUILD_DIR, FUZZ_JOBS (build jobs, default 2), FUZZ_EXTRA_ARGS (more libFuzzer
# flags), FUZZ_PREFIXES (default "lm wsp"). FUZZ_REV2026=1 fuzzes the 2026 revision instead: the
# library with --features lm-2026,wsp-2026 (target/fuzz-rev2026) over cui-llama.rn 1.12.2's and
# whisper.rn 0.7.4's cores, in build-fuzz-rev2026 (scripts/test-rev2026.sh runs it).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SECONDS_TOTAL="${1:-120}"
REV2026="${FUZZ_REV2026:-0}"
if [[ "$REV2026" == 1 ]]; then
  BUILD="${FUZZ_BUILD_DIR:-build-fuzz-rev2026}"
  REV_CARGO=(--features lm-2026,wsp-2026) REV_CMAKE=(-DGGML_RS_REV2026=ON) REV_DIR=fuzz-rev2026
else
  BUILD="${FUZZ_BUILD_DIR:-build-fuzz}"
  REV_CARGO=() REV_CMAKE=() REV_DIR=fuzz
fi
JOBS="${FUZZ_JOBS:-2}"
PREFIXES="${FUZZ_PREFIXES:-lm wsp}"
export PATH="$HOME/.cargo/bin:$PATH"

SUDO=""
if [[ "$(id -u)" -ne 0 ]] && command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
fi
apt_install() {
  echo "fuzz.sh: apt-get install $*"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# --- 1. clang with libFuzzer and ASan ----------------------------------------------------------
if ! command -v clang >/dev/null 2>&1 || ! command -v clang++ >/dev/null 2>&1; then
  apt_install clang
fi
probe_dir="$(mktemp -d)"
trap 'rm -rf "$probe_dir"' EXIT
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void) d; (void) n; return 0; }' > "$probe_dir/p.c"
if ! clang -fsanitize=fuzzer,address "$probe_dir/p.c" -o "$probe_dir/p" >/dev/null 2>&1; then
  ver="$(clang -dumpversion | cut -d. -f1)"
  apt_install "libclang-rt-${ver}-dev" || apt_install "libclang-common-${ver}-dev"
  clang -fsanitize=fuzzer,address "$probe_dir/p.c" -o "$probe_dir/p"
fi

# --- 2. the library with coverage instrumentation ------------------------------------------------
HOST_TRIPLE="$(rustc -vV | sed -n 's/^host: //p')"
# (in the project's own target dir: with --target, RUSTFLAGS reach only the target's crates, so the
# build scripts' dependencies (cbindgen, serde, syn) are the ones `cargo build --release` compiled,
# about 40 s of CPU not spent again; the archive is copied to target/$REV_DIR per revision)
FUZZ_TARGET_DIR="$ROOT/target"
echo "fuzz.sh: building the sancov-instrumented library (target/$HOST_TRIPLE, copied to target/$REV_DIR)"
RUSTFLAGS="-Cpasses=sancov-module \
 -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
 -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares \
 -Cdebug-assertions=on -Coverflow-checks=on -Cforce-frame-pointers=yes" \
  cargo rustc --release --quiet --lib --crate-type staticlib "${REV_CARGO[@]}" \
    --target "$HOST_TRIPLE" --target-dir "$FUZZ_TARGET_DIR"
mkdir -p "$ROOT/target/$REV_DIR"
LIB="$ROOT/target/$REV_DIR/libggml_backend_rs.a"
cmp -s "$FUZZ_TARGET_DIR/$HOST_TRIPLE/release/libggml_backend_rs.a" "$LIB" \
  || cp "$FUZZ_TARGET_DIR/$HOST_TRIPLE/release/libggml_backend_rs.a" "$LIB"

# --- 3. the harnesses --------------------------------------------------------------------------
if [[ ! -d .cache/hosts/lm/package || ! -d .cache/hosts/wsp/package ]]; then
  bash scripts/fetch-hosts.sh
fi
if [[ "$REV2026" == 1 ]]; then bash scripts/fetch-hosts.sh cui lm12 wsp7 >/dev/null; fi
GEN=()
if command -v ninja >/dev/null 2>&1; then GEN=(-G Ninja); fi
cmake -S . -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DGGML_RS_FUZZ=ON -DGGML_RS_FUZZ_LIB="$LIB" \
  -DGGML_RS_CARGO_BUILD=OFF -DGGML_RS_HOST_TESTS=OFF "${REV_CMAKE[@]}" >/dev/null
targets=()
for p in $PREFIXES; do targets+=("fuzz_$p"); done
cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}"

# --- 4. fuzz -------------------------------------------------------------------------------------
n_prefixes=$(wc -w <<<"$PREFIXES")
per=$(( SECONDS_TOTAL / n_prefixes ))
(( per >= 1 )) || per=1
mkdir -p "$BUILD/artifacts"
# allocator_may_return_null: impossible buffer sizes must come back as NULL, as they do without ASan
export ASAN_OPTIONS="${ASAN_OPTIONS:-allocator_may_return_null=1:detect_leaks=1:abort_on_error=0:symbolize=1}"
status=0
summary=()
for p in $PREFIXES; do
  exe="$BUILD/tests_c/fuzz_$p"
  scratch="$BUILD/corpus-$p"
  mkdir -p "$scratch"
  log="$BUILD/fuzz-$p.log"
  echo "fuzz.sh: fuzz_$p for ${per}s (log: $log)"
  if [[ -n "${FUZZ_RUNS:-}" ]]; then
    rm -rf "$scratch" && mkdir -p "$scratch"
    bound=(-runs="$FUZZ_RUNS" -seed="${FUZZ_SEED:-1}")
    [[ -n "${FUZZ_MAX_SECONDS:-}" ]] && bound+=(-max_total_time="$FUZZ_MAX_SECONDS")
    echo "fuzz.sh: deterministic: $FUZZ_RUNS runs, seed ${FUZZ_SEED:-1}${FUZZ_MAX_SECONDS:+, capped at ${FUZZ_MAX_SECONDS}s}"
  else
    bound=(-max_total_time="$per")
  fi
  set +e
  # shellcheck disable=SC2086
  "$exe" "${bound[@]}" -timeout=20 -rss_limit_mb=4096 -max_len=4096 \
    -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$p-" ${FUZZ_EXTRA_ARGS:-} \
    "$scratch" tests_c/fuzz/corpus >"$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
  eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)
  cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -n1 || true)
  if (( rc != 0 )); then
    status=1
    echo "fuzz.sh: fuzz_$p FOUND A PROBLEM (exit $rc):"
    grep -E 'ERROR: |SUMMARY: |fuzz: |Test unit written|panicked|internal error' "$log" | head -n 20 || true
    tail -n 40 "$log"
  fi
  capped=""
  if [[ -n "${FUZZ_RUNS:-}" && -n "$execs" ]] && ((execs < FUZZ_RUNS)); then
    capped=" -- capped by FUZZ_MAX_SECONDS=${FUZZ_MAX_SECONDS:-?} before $FUZZ_RUNS runs"
  fi
  summary+=("fuzz_$p: ${execs:-?} executions (${eps:-?} exec/s), ${cov:-cov ?}, exit $rc$capped")
  # the committed seeds, once more, as a regression run
  set +e
  "$exe" -runs=0 tests_c/fuzz/corpus >"$BUILD/replay-$p.log" 2>&1
  rrc=$?
  set -e
  if (( rrc != 0 )); then
    status=1
    echo "fuzz.sh: replaying the seed corpus with fuzz_$p failed:"
    tail -n 40 "$BUILD/replay-$p.log"
  fi
done
for line in "${summary[@]}"; do echo "fuzz.sh: $line"; done
if (( status == 0 )); then
  echo "fuzz.sh: no crash, no sanitizer report"
fi
exit $status
