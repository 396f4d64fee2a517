#!/usr/bin/env bash
# The C op suite (tests_c/simd_ops.c) for aarch64: ggml-cpu from the host packages compiled by
# clang for Armv8.2-a+fp16+dotprod (the flags of llama.rn's rnllama_v8_2_fp16_dotprod Android
# library), the Rust library cross-built, every case compared between the two backends under
# qemu-user (its "max" CPU has both extensions). With these flags SIMD's NEON kernels must match
# ggml-cpu bit for bit (GGML_RS_HOST_NEON_DOTPROD); other flags (e.g. HOST_FLAGS=-march=armv8-a)
# build and compare with the suite's tolerances. scripts/test.sh runs it on x86_64 machines; if the
# toolchain cannot be installed it says SKIPPED and exits 0, unless GGML_RS_AARCH64_REQUIRED=1.
# Three parts, each in its own build dir, each printing its wall time ("test-aarch64-c: <part>: N s"):
#   2024  llama.rn 0.4.4 / whisper.rn 0.4.3 (simd_ops_{lm,wsp}_static) in $BUILD_DIR: every case
#         bit for bit, then once on the portable kernels (the suite's tolerances).
#         GGML_RS_AARCH64_2024=0 skips it.
#   2026  cui-llama.rn 1.12.2 / whisper.rn 0.7.4 (cargo features lm-2026,wsp-2026 into
#         target/features, -DGGML_RS_REV2026=ON) in $BUILD_DIR-rev2026, the same flags: every case
#         bit for bit, the 2026 ops' cases included (SET_ROWS, GLU, FLASH_ATTN_EXT on NEON;
#         repacked Q4_0, IQ4_NL, Q8_0 in ggml's 4x4 layouts, Q4_K in q4_K_8x4), the suite's
#         expected declined count,
#         and the start-up check's contract line "exact ... all bit-identical".
#         GGML_RS_AARCH64_REV2026=0 skips it, GGML_RS_AARCH64_REV2026_WSP=0 its whisper.rn half.
#   i8mm  the 2026 lm_ suite's repacked cases (SIMD_OPS_ONLY=repack) with the host core built for
#         the exact flags plus i8mm (ggml's q4_0_4x8, q8_0_4x8, q4_K_8x8 layouts) in $BUILD_DIR-rev2026-i8mm, bit for
#         bit. GGML_RS_AARCH64_I8MM=0 skips it (default: as the 2026 part).
#   package flags  the 2026 lm_ suite with cui-llama.rn 1.12.2's fastest arm64 flags
#         (PACKAGE_FLAGS below, from its Android CMakeLists.txt: clang's fast floating-point
#         model, i8mm) in $BUILD_DIR-rev2026-pkg: our header must report a fast-math host and the
#         contract must be the bounded one, every case within the suite's (ggml's) bounds; with
#         GGML_RS_SIMD_EXACT=1 the exact contract, and every case SIMD still takes bit for bit
#         (SIMD_OPS_BITWISE=1). Prints both contract lines: the arm64 rows of docs/simd.md's kinds
#         x host flags table. GGML_RS_AARCH64_PACKAGE_FLAGS=0 skips it (default: as the 2026 part).
# Wall time on 2 cores shared with a Vulkan build (2026-12-07): the 2026 part 91 s cold at a load
# average of 2.5, 197 s at 5-7 (cargo's aarch64 build with the 2026 features is most of it), 18 s
# warm; the package-flags part 46 s cold at 2.5, 54-73 s at 5-7 (its host core, about 43 s of
# CPU; the library is the 2026 part's), 10 s warm.
#   BUILD_DIR   (default: build-aarch64)
#   JOBS        (default: 2)
#   HOST_FLAGS  (default: -march=armv8.2-a+fp16+dotprod)   flags for the host ggml cores of the
#               2024 and 2026 parts (the 2026 contract line is required only with the default)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD_DIR="${BUILD_DIR:-build-aarch64}"
JOBS="${JOBS:-2}"
EXACT_FLAGS="-march=armv8.2-a+fp16+dotprod"
HOST_FLAGS="${HOST_FLAGS:-$EXACT_FLAGS}"
PACKAGE_FLAGS="-march=armv8.2-a+dotprod+i8mm;-fvectorize;-ffp-model=fast;-fno-finite-math-only"
source scripts/aarch64-toolchain.sh
aarch64_toolchain "aarch64-linux-gnu-g++ clang ninja" g++-aarch64-linux-gnu clang ninja-build cmake

qemu() { qemu-aarch64 -L /usr/aarch64-linux-gnu "$@"; }
t0=$SECONDS
elapsed() { echo "test-aarch64-c: $1: $((SECONDS - t0)) s"; t0=$SECONDS; }

# the contract line of the SIMD start-up check in a suite's log ($1, the line in $1.err), or fail
contract_line() {
  grep -m1 -o 'SIMD: contract: .*' "$1.err" || { echo "test-aarch64-c: no 'SIMD: contract:' line in $1.err" >&2; return 1; }
}
# run_suite <exe> <log> [VAR=value...]: a suite under qemu, its stdout in <log> and its stderr
# (the log lines, the failures) in <log>.err; prints the cases that failed or were declined
# (only those that failed with SHOW_DECLINED=0) and the summary line; returns the suite's status
run_suite() {
  local exe="$1" log="$2" rc=0 show='FAILED|declined'
  shift 2
  [[ "${SHOW_DECLINED:-1}" != 0 ]] || show='FAILED'
  env "$@" qemu-aarch64 -L /usr/aarch64-linux-gnu "$exe" >"$log" 2>"$log.err" || rc=$?
  grep -E "$show" "$log" | grep -v '^simd_ops ' || true
  # (ggml-cpu's own "repack: repack tensor ..." lines for the repacked cases left out)
  grep -v -e '^SIMD: ' -e '^repack: ' "$log.err" || true
  tail -n1 "$log"
  return $rc
}

## 2024: llama.rn 0.4.4 / whisper.rn 0.4.3
if [[ "${GGML_RS_AARCH64_2024:-1}" != 0 ]]; then
  bash scripts/fetch-hosts.sh lm wsp >/dev/null
  aarch64_build "$BUILD_DIR" OFF simd_ops_lm_static simd_ops_wsp_static
  for p in lm wsp; do
      echo "== simd_ops_${p}_static (host core: $HOST_FLAGS)"
      qemu "$BUILD_DIR/tests_c/simd_ops_${p}_static"
      GGML_RS_SIMD_PORTABLE=1 GGML_RS_SIMD_EXACT=0 qemu "$BUILD_DIR/tests_c/simd_ops_${p}_static" | tail -n1
  done
  elapsed "2024 suites"
fi

## 2026: cui-llama.rn 1.12.2 / whisper.rn 0.7.4
# build_2026 <build dir> <host flags> <targets...>: the 2026 library (target/features) and the
# suites, no real hosts (their drivers are the 2026 stage's and count-gemma.sh's)
build_2026() {
  local dir="$1"
  shift
  AARCH64_FEATURES=lm-2026,wsp-2026 HOST_FLAGS="$1"
  shift
  AARCH64_CMAKE_ARGS=(-DGGML_RS_REV2026=ON -DGGML_RS_REV2026_LM12=OFF
    -DGGML_RS_VALGRIND_TEST=OFF -DGGML_RS_FUZZ_TEST=OFF)
  aarch64_build "$dir" OFF "$@"
}
if [[ "${GGML_RS_AARCH64_REV2026:-1}" != 0 ]]; then
  bash scripts/fetch-hosts.sh cui wsp7 >/dev/null
  prefixes=(lm)
  [[ "${GGML_RS_AARCH64_REV2026_WSP:-1}" == 0 ]] || prefixes+=(wsp)
  targets=()
  for p in "${prefixes[@]}"; do targets+=("simd_ops_${p}_static"); done
  ( build_2026 "$BUILD_DIR-rev2026" "$HOST_FLAGS" "${targets[@]}" )
  elapsed "2026 build"
  for p in "${prefixes[@]}"; do
    echo "== 2026 simd_ops_${p}_static (host core: $HOST_FLAGS)"
    log="$BUILD_DIR-rev2026/simd_ops_${p}_static.log"
    run_suite "$BUILD_DIR-rev2026/tests_c/simd_ops_${p}_static" "$log" \
      || { cat "$log" "$log.err"; echo "test-aarch64-c: 2026 simd_ops_${p}_static failed" >&2; exit 1; }
    line="$(contract_line "$log")"
    echo "$line"
    # the default flags: no fast math, every kind of the start-up check bit-identical
    [[ "$HOST_FLAGS" != "$EXACT_FLAGS" \
       || "$line" == "SIMD: contract: bit-identical to ggml-cpu (host compiled without fast math). "*": all bit-identical" ]] \
      || { echo "test-aarch64-c: 2026 $p: not the exact contract with every kind bit-identical" >&2; exit 1; }
  done
  elapsed "2026 suites"
fi

## the i8mm layouts: ggml-cpu built with the exact flags plus i8mm repacks Q4_0 / Q8_0 as
## q4_0_4x8 / q8_0_4x8 (the 2026 part's build makes the 4x4 ones); the repacked products alone (its plain Q4_0 / Q4_1 / Q8_0
## kinds multiply two rows at a time, which the exact contract leaves to ggml-cpu), bit for bit
if [[ "${GGML_RS_AARCH64_I8MM:-${GGML_RS_AARCH64_REV2026:-1}}" != 0 ]]; then
  bash scripts/fetch-hosts.sh cui wsp7 >/dev/null
  I8MM_FLAGS="$EXACT_FLAGS+i8mm"
  ( build_2026 "$BUILD_DIR-rev2026-i8mm" "$I8MM_FLAGS" simd_ops_lm_static )
  elapsed "i8mm build"
  log="$BUILD_DIR-rev2026-i8mm/simd_ops_lm_static.repack.log"
  echo "== 2026 simd_ops_lm_static (host core: $I8MM_FLAGS; SIMD_OPS_ONLY=repack, bit for bit)"
  run_suite "$BUILD_DIR-rev2026-i8mm/tests_c/simd_ops_lm_static" "$log" SIMD_OPS_ONLY=repack \
    || { cat "$log" "$log.err"; echo "test-aarch64-c: i8mm: the repacked cases failed" >&2; exit 1; }
  for t in q4_0 q8_0 q4_K; do
    grep -q "^repacked $t .*, 0 of [0-9]* outputs differ\$" "$log" \
      || { echo "test-aarch64-c: i8mm: no repacked $t case computed by SIMD" >&2; exit 1; }
  done
  elapsed "i8mm suite"
fi

## cui-llama.rn 1.12.2's own arm64 flags (fast math): the contract and its kinds
if [[ "${GGML_RS_AARCH64_PACKAGE_FLAGS:-${GGML_RS_AARCH64_REV2026:-1}}" != 0 ]]; then
  bash scripts/fetch-hosts.sh cui wsp7 >/dev/null
  ( build_2026 "$BUILD_DIR-rev2026-pkg" "$PACKAGE_FLAGS" simd_ops_lm_static )
  elapsed "package-flags build"
  exe="$BUILD_DIR-rev2026-pkg/tests_c/simd_ops_lm_static"
  # bounded: every case within the suite's thresholds (ggml's bounds on this build) and only the
  # cases meant to be declined declined
  log="$BUILD_DIR-rev2026-pkg/simd_ops_lm_static.log"
  echo "== 2026 simd_ops_lm_static (host core: ${PACKAGE_FLAGS//;/ })"
  run_suite "$exe" "$log" || { echo "test-aarch64-c: package flags: the suite failed" >&2; exit 1; }
  line="$(contract_line "$log")"
  echo "$line"
  want="SIMD: contract: within ggml's error bounds of ggml-cpu (host compiled with fast math (its compiler reassociates floats): "
  [[ "$line" == "$want"* ]] || { echo "test-aarch64-c: package flags: expected a contract line starting '$want'" >&2; exit 1; }
  # GGML_RS_SIMD_EXACT=1: the exact contract; every case SIMD still takes bit for bit
  # (SIMD_OPS_BITWISE=1); the kinds the check hands back make more cases declined, so the suite's
  # declined count is the one failure it may report
  log="$BUILD_DIR-rev2026-pkg/simd_ops_lm_static.exact.log"
  echo "== 2026 simd_ops_lm_static (host core: ${PACKAGE_FLAGS//;/ }; GGML_RS_SIMD_EXACT=1, every case bit for bit)"
  SHOW_DECLINED=0 run_suite "$exe" "$log" GGML_RS_SIMD_EXACT=1 SIMD_OPS_BITWISE=1 || true
  line="$(contract_line "$log")"
  echo "$line"
  want="SIMD: contract: bit-identical to ggml-cpu (GGML_RS_SIMD_EXACT=1; host compiled with fast math (its compiler reassociates floats): "
  [[ "$line" == "$want"* ]] || { echo "test-aarch64-c: package flags: expected a contract line starting '$want'" >&2; exit 1; }
  if grep -q FAILED "$log" || ! tail -n1 "$log" | grep -q ', 1 failed$' \
     || ! grep -q '^simd_ops: [0-9]* cases declined by SIMD, expected' "$log.err"; then
    echo "test-aarch64-c: package flags, GGML_RS_SIMD_EXACT=1: a case SIMD took is not bit-identical" >&2; exit 1
  fi
  elapsed "package-flags suites"
fi
