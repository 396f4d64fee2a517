#!/usr/bin/env bash
# NEON work counts: guest instructions (and memory accesses) that the SIMD backend and ggml-cpu
# execute for the same op cases of tests_c/bench_ops.c, cross-built for aarch64 with ggml-cpu
# compiled by clang for llama.rn's Armv8.2 phones (-march=armv8.2-a+fp16+dotprod, as
# scripts/test-aarch64-c.sh) and run under qemu-user ("max" CPU: both extensions) with the
# counting plugin (tools/qemu-count). A WORK COUNT, NOT A TIME: emulated instructions say nothing
# of cycles, cache misses or instructions retired per cycle on a phone's core.
# Each case runs on one backend alone, single-threaded (the plugin's counters are not atomic),
# once and three times; (three - once) / 2 is one computation without the setup.
#   usage: tools/qemu-count/count-neon.sh [case-substring...]   (default: the cases below)
#          a case matches every name containing it ("mul_mat q5_0 2048x640 x 1" also matches
#          "... x 128", and the count is then both); end it with '$' to match names ending with it
#          ("mul_mat q5_0 2048x640 x 1$": that case alone)
#   env:   BUILD_DIR (default build-aarch64), HOST_FLAGS, JOBS (default 2)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
BUILD_DIR="${BUILD_DIR:-build-aarch64}"
JOBS="${JOBS:-2}"
HOST_FLAGS="${HOST_FLAGS:--march=armv8.2-a+fp16+dotprod}"
source scripts/aarch64-toolchain.sh
aarch64_toolchain "aarch64-linux-gnu-g++ clang ninja" g++-aarch64-linux-gnu clang ninja-build cmake
bash scripts/fetch-hosts.sh
plugin="$(bash tools/qemu-count/build.sh | tail -n1)"

aarch64_build "$BUILD_DIR" OFF bench_ops_lm >/dev/null

cases=("$@")
((${#cases[@]})) || cases=(
  "mul_mat q4_1 576x576 x 256" "mul_mat q4_1 1536x576 x 256" "mul_mat q4_1 576x1536 x 256"
  "mul_mat q4_1 576x576 x 1" "mul_mat q4_1 1536x576 x 1" "mul_mat q4_1 576x1536 x 1"
  "mul_mat f16 KQ 1500x64 x 1500 x 2" "mul_mat f16 KQV 64x1500 x 1500 x 2"
  "rms_norm 576 x 256" "silu 1536 x 256" "soft_max_ext 256 x 256 x 9" "rope 64 x 9 x 256" "gelu 384 x 1500" "norm 384 x 1500")
count() {  # backend repeats case -> "insns mem"
  local f ran; f="$(mktemp)"
  ran="$(GGML_RS_BENCH_ONLY="$1" qemu-aarch64 -L /usr/aarch64-linux-gnu -plugin "$plugin,out=$f" \
      "$BUILD_DIR/tests_c/bench_ops_lm" 1 "$2" "$3" | grep '^computed ' || true)"
  # the count is of every case the name matched: say so when that is not exactly one
  [ "$(grep -c . <<<"$ran")" = 1 ] || echo "count-neon: '$3' matched $(grep -c . <<<"$ran") cases:" "$ran" >&2
  sed -E 's/.*insns=([0-9]+) mem=([0-9]+).*/\1 \2/' "$f"; rm -f "$f"
}
printf '| %-36s | %14s | %14s | %6s | %6s |\n|---|---:|---:|---:|---:|\n' "case (1 thread, one computation)" "ggml-cpu insns" "SIMD insns" "ratio" "mem ratio"
for c in "${cases[@]}"; do
  declare -A n=()
  for be in cpu simd; do
    read -r i1 m1 < <(count "$be" 1 "$c"); read -r i3 m3 < <(count "$be" 3 "$c")
    n[$be.i]=$(((i3 - i1) / 2)); n[$be.m]=$(((m3 - m1) / 2))
  done
  awk -v c="$c" -v ci="${n[cpu.i]}" -v si="${n[simd.i]}" -v cm="${n[cpu.m]}" -v sm="${n[simd.m]}" \
    'BEGIN { printf "| %-36s | %14d | %14d | %6.2f | %6.2f |\n", c, ci, si, si / ci, sm / cm }'
  unset n
done
echo "(ratio = SIMD / ggml-cpu instructions, < 1: SIMD executes fewer; host core flags: $HOST_FLAGS; qemu $(qemu-aarch64 --version | head -n1 | awk '{print $3}'))"
