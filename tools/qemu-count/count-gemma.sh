#!/usr/bin/env bash
# Whole-model NEON work counts on a 2026 host (issue 34): Gemma 3 270M Q4_K_M (Q5_0, Q4_K, Q6_K,
# Q8_0 weights) on cui-llama.rn 1.12.2 cross-built for aarch64 as count-hosts.sh does for the
# 2024 hosts, under qemu-user ("max" CPU: dotprod, i8mm, FP16) with the counting plugin, one thread.
# A WORK COUNT, NOT A TIME: emulated instructions say nothing of a phone's cycles or caches.
# Every host core (stock's and ours) is compiled by clang as the package's fastest arm64 library
# (android/src/main/rnllama/CMakeLists.txt, rnllama_v8_2_dotprod_i8mm: -march=armv8.2-a+dotprod+i8mm
# -fvectorize -ffp-model=fast -fno-finite-math-only; no +fp16 in any of its arm64 variants) with
# LM_GGML_USE_CPU_REPACK, so on this CPU ggml-cpu repacks the Q4_K, Q6_K and Q8_0 weights for its
# i8mm kernels (q4_K_8x8, q6_K_8x8, q8_0_4x8). Five ways to run it:
#   stock          the package as shipped, weights repacked (its default)                     (a)
#   stock-norepack the same binary with --no-repack (llama_model_params.use_extra_bufts = false):
#                  every weight in a plain CPU buffer, ggml-cpu's vec_dot kernels              (b)
#   simd           the static build (our library) with GGML_RS_SIMD=1, as it really runs: the
#                  repacked weights live in CPU_REPACK buffers that SIMD cannot take, so their
#                  products stay on ggml-cpu; the rest runs on SIMD                            (c)
#   simd-norepack  the static build, GGML_RS_SIMD=1 and --no-repack: every product on SIMD
#   static         the static build without SIMD (ggml-cpu under our backend layer), repacked
# Per prompt token = (count at -p $P_LONG - count at -p $P_SHORT) / ($P_LONG - $P_SHORT) and per
# generated token = (count at -n $N_GEN - count at -n 1) / ($N_GEN - 1), so loading and setup cancel.
# Also: which output files (tokens, logits digests, final logits) are bit-identical, and where the
# SIMD runs' graph nodes went (one uncounted run each with LM_GGML_SCHED_DEBUG=2: MUL_MATs per
# backend, what stays off SIMD).
#   usage: tools/qemu-count/count-gemma.sh
#   env:   BUILD_DIR (build-aarch64-gemma), JOBS (2), HOST_FLAGS (the package's, ';'-separated),
#          RUNS (the five above), P_SHORT (16), P_LONG (80), N_GEN (17)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
BUILD_DIR="${BUILD_DIR:-build-aarch64-gemma}"
JOBS="${JOBS:-2}"
HOST_FLAGS="${HOST_FLAGS:--march=armv8.2-a+dotprod+i8mm;-fvectorize;-ffp-model=fast;-fno-finite-math-only}"
RUNS="${RUNS:-stock stock-norepack simd simd-norepack static}"
P_SHORT="${P_SHORT:-16}" P_LONG="${P_LONG:-80}" N_GEN="${N_GEN:-17}"
source scripts/aarch64-toolchain.sh
source tools/qemu-count/common.sh
aarch64_toolchain "aarch64-linux-gnu-g++ clang ninja" g++-aarch64-linux-gnu clang ninja-build cmake
bash scripts/fetch-hosts.sh cui >/dev/null
model="$ROOT/.cache/models/gemma-3-270m-q4_k_m.gguf"
[[ -f "$model" ]] || bash scripts/fetch-models.sh gemma >/dev/null
plugin="$(bash tools/qemu-count/build.sh | tail -n1)"

# the 2026 lm_ host alone (cui-llama.rn 1.12.2; not llama.rn 0.12.9), stock and static
AARCH64_FEATURES=lm-2026,wsp-2026
AARCH64_CMAKE_ARGS=(-DGGML_RS_REV2026=ON -DGGML_RS_REV2026_LM12=OFF "-DGGML_RS_HOST_MODES=stock;static"
  -DGGML_RS_VALGRIND_TEST=OFF -DGGML_RS_FUZZ_TEST=OFF)
aarch64_build "$BUILD_DIR" ON llama_driver_stock llama_driver_static >/dev/null
bin="$BUILD_DIR/tests_c/hosts"
tmp="${QC_TMP:-$(mktemp -d)}"
[[ -n "${QC_TMP:-}" ]] || trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"

# run <way> -> exe, then environment and driver flags, as qc_run takes them
run_args() {
  case "$1" in
    stock)          echo "$bin/llama_driver_stock --" ;;
    stock-norepack) echo "$bin/llama_driver_stock -- --no-repack" ;;
    simd)           echo "$bin/llama_driver_static GGML_RS_SIMD=1 --" ;;
    simd-norepack)  echo "$bin/llama_driver_static GGML_RS_SIMD=1 -- --no-repack" ;;
    static)         echo "$bin/llama_driver_static --" ;;
    *) echo "count-gemma: unknown run '$1'" >&2; exit 2 ;;
  esac
}
count() {  # way tag -p N -n N: qc_run <tag>.<way>
  local way="$1" tag="$2" a
  shift 2
  read -ra a <<<"$(run_args "$way")"
  qc_run "$tag.$way" "${a[@]}" -m "$model" "$@"
}
# two runs at a time (2 cores); each run is single-threaded
jobs_list=()
for way in $RUNS; do
  jobs_list+=("$way s -p $P_SHORT -n 1" "$way l -p $P_LONG -n 1" "$way g -p $P_SHORT -n $N_GEN")
done
for j in "${jobs_list[@]}"; do
  while (($(jobs -rp | wc -l) >= JOBS)); do wait -n; done
  # shellcheck disable=SC2086
  count $j &
done
wait

# where the SIMD runs' nodes went: uncounted, -p $P_SHORT -n 2, every node printed
placement() {  # way
  local a
  read -ra a <<<"$(run_args "$1")"
  QC_UNCOUNTED=1 qc_run "sched.$1" "${a[0]}" LM_GGML_SCHED_DEBUG=2 "${a[@]:1}" -m "$model" -p "$P_SHORT" -n 2 -v
  python3 - "$tmp/sched.$1.log" "$1" <<'PY'
import re, sys
from collections import Counter
log, way = sys.argv[1:3]
graphs, cur, backend = [], None, None
for l in open(log, errors="replace"):
    m = re.search(r"## SPLIT #(\d+): (\S+)", l)
    if m:
        if m.group(1) == "0":
            cur = {"mm": Counter(), "off": Counter(), "mmw": Counter(), "n": 0}
            graphs.append(cur)
        backend = m.group(2)
        continue
    # node #  i (    OP):   name (size) [backend ]:   src0 (size) [backend ] ...
    m = re.match(r"node #\s*\d+ \(\s*([A-Z_0-9]+)\):\s*\S+ \(.*?\) \[\s*(\S+)\s*\]:\s*(\S+)", l)
    if m and cur is not None:
        op, be, src0 = m.groups()
        cur["n"] += 1
        if op == "MUL_MAT":
            cur["mm"][be] += 1
            if be != "SIMD":  # by weight, blk.<i>. dropped (names cut at 20 characters)
                cur["mmw"][re.sub(r"\.w[a-z]*$", "", re.sub(r"^blk\.\d+\.", "", src0))] += 1
        if be != "SIMD":
            cur["off"][op] += 1
seen = set()
for g in graphs:
    key = (g["n"], tuple(sorted(g["mm"].items())), tuple(sorted(g["off"].items())))
    if key in seen:
        continue
    seen.add(key)
    print("  %s: graph of %d nodes: MUL_MAT %s; nodes off SIMD: %s%s" % (
        way, g["n"], ", ".join("%s %d" % kv for kv in sorted(g["mm"].items())),
        ", ".join("%s %d" % kv for kv in sorted(g["off"].items())) or "none",
        "; MUL_MATs off SIMD by weight: " + ", ".join("%s %d" % kv for kv in sorted(g["mmw"].items())) if g["mmw"] else ""))
if not graphs:
    print("  %s: no scheduler printout (LM_GGML_SCHED_DEBUG)" % way)
PY
}

declare -A c
for way in $RUNS; do
  for k in s l g; do c[$k.$way]=$(qc_insns "$k.$way"); done
  c[p.$way]=$(((c[l.$way] - c[s.$way]) / (P_LONG - P_SHORT)))
  c[n.$way]=$(((c[g.$way] - c[s.$way]) / (N_GEN - 1)))
done
label() {
  case "$1" in
    stock) echo "(a) stock ggml-cpu, repacked" ;;
    stock-norepack) echo "(b) stock ggml-cpu, --no-repack" ;;
    simd) echo "(c) ours, GGML_RS_SIMD=1 (repacked on ggml-cpu)" ;;
    simd-norepack) echo "(c') ours, GGML_RS_SIMD=1, --no-repack" ;;
    static) echo "ours without SIMD, repacked" ;;
  esac
}
ratio() { [[ -n "${c[$1.$2]:-}" ]] && awk -v a="${c[$1.$3]}" -v b="${c[$1.$2]}" 'BEGIN { printf "%.2f", a / b }' || echo "-"; }
printf '| %-48s | %12s | %6s | %6s | %12s | %6s | %6s |\n|---|---:|---:|---:|---:|---:|---:|\n' \
  "Gemma 3 270M Q4_K_M, cui-llama.rn 1.12.2, 1 thread" "prompt/token" "/ (a)" "/ (b)" "gen/token" "/ (a)" "/ (b)"
for way in $RUNS; do
  printf '| %-48s | %12d | %6s | %6s | %12d | %6s | %6s |\n' "$(label "$way")" \
    "${c[p.$way]}" "$(ratio p stock "$way")" "$(ratio p stock-norepack "$way")" \
    "${c[n.$way]}" "$(ratio n stock "$way")" "$(ratio n stock-norepack "$way")"
done
echo "(instructions per token; prompt: -p $P_LONG vs -p $P_SHORT, generation: -n $N_GEN vs -n 1; host core flags: $HOST_FLAGS; qemu $(qemu-aarch64 --version | head -n1 | awk '{print $3}'))"
has() { [[ " $RUNS " == *" $1 "* ]]; }
pair() {  # a b: each of the three runs' outputs
  has "$1" && has "$2" || return 0
  echo "outputs $2 vs $1: -p $P_SHORT $(qc_same "s.$1" "s.$2"), -p $P_LONG $(qc_same "l.$1" "l.$2"), -n $N_GEN $(qc_same "g.$1" "g.$2")"
}
pair stock simd; pair stock static; pair stock-norepack simd-norepack; pair stock stock-norepack
for way in simd simd-norepack; do has "$way" && placement "$way"; done
exit 0
