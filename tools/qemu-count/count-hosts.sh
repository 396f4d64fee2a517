#!/usr/bin/env bash
# Whole-model NEON work counts: guest instructions that the real hosts execute under qemu-user
# with the counting plugin (tools/qemu-count), stock (llama.rn 0.4.4 / whisper.rn 0.4.3 with their
# own ggml-backend and ggml-cpu) against the static build computing with the SIMD backend
# (GGML_RS_SIMD=1), both cross-built for aarch64 with the host cores compiled by clang for
# llama.rn's Armv8.2 phones (-march=armv8.2-a+fp16+dotprod), qemu's "max" CPU, one thread.
# A WORK COUNT, NOT A TIME: emulated instructions say nothing of a phone's cycles or caches.
#   llama:   SmolLM2-135M Q4_1; per prompt token = (count at -p 80 - count at -p 16) / 64 and per
#            generated token = (count at -n 17 - count at -n 1) / 16, so loading and setup cancel
#   whisper: whisper base on the assistant's question, one whole run (mel, encode, decode), and
#            whisper tiny's random model on the same audio
# Also compares each pair's output files (tokens and logits / transcript): bit-identical or not.
#   usage: tools/qemu-count/count-hosts.sh          env: BUILD_DIR (build-aarch64-hosts), JOBS (2),
#          HOSTS ("llama whisper"; HOSTS=llama skips whisper's half hour per backend)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
BUILD_DIR="${BUILD_DIR:-build-aarch64-hosts}"
JOBS="${JOBS:-2}"
HOSTS="${HOSTS:-llama whisper}"
HOST_FLAGS="${HOST_FLAGS:--march=armv8.2-a+fp16+dotprod}"
source scripts/aarch64-toolchain.sh
source tools/qemu-count/common.sh
aarch64_toolchain "aarch64-linux-gnu-g++ clang ninja" g++-aarch64-linux-gnu clang ninja-build cmake
bash scripts/fetch-hosts.sh
bash scripts/fetch-models.sh >/dev/null
plugin="$(bash tools/qemu-count/build.sh | tail -n1)"
M="$ROOT/.cache/models"

aarch64_build "$BUILD_DIR" ON llama_driver_stock llama_driver_static whisper_driver_stock whisper_driver_static >/dev/null
bin="$BUILD_DIR/tests_c/hosts"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

count() {  # mode name driver args...: qc_run name.mode (common.sh)
  local mode="$1" name="$2" drv="$3"; shift 3
  local exe="$bin/${drv}_stock" env=()
  [[ "$mode" == simd ]] && exe="$bin/${drv}_static" env=(GGML_RS_SIMD=1)
  qc_run "$name.$mode" "$exe" ${env[@]+"${env[@]}"} -- "$@"
}
n() { qc_insns "$1"; }
same() { qc_same "$1.stock" "$1.simd"; }

llama=(-m "$M/SmolLM2-135M-Instruct.Q4_1.gguf")
# the two backends side by side (the plugin's counters are per process); whisper base takes
# ~30 min under qemu with the plugin
for mode in stock simd; do
  (
    count "$mode" l16 llama_driver "${llama[@]}" -p 16 -n 1
    count "$mode" l80 llama_driver "${llama[@]}" -p 80 -n 1
    count "$mode" l17 llama_driver "${llama[@]}" -p 16 -n 17
    if [[ " $HOSTS " == *" whisper "* ]]; then
      count "$mode" wb whisper_driver -m "$M/ggml-base.bin" -f "$M/question-16k.wav"
      count "$mode" wt whisper_driver -m "$M/ggml-tiny-random.bin" -f "$M/question-16k.wav"
    fi
  ) &
done
wait
declare -A c
keys="l16 l80 l17"
[[ " $HOSTS " == *" whisper "* ]] && keys+=" wb wt"
for mode in stock simd; do
  for k in $keys; do c[$mode.$k]=$(n "$k.$mode"); done
done
row() {  # label stock simd
  awk -v l="$1" -v a="$2" -v b="$3" 'BEGIN { printf "| %-44s | %14.0f | %14.0f | %5.2f |\n", l, a, b, b / a }'
}
printf '| %-44s | %14s | %14s | %5s |\n|---|---:|---:|---:|\n' "SmolLM2-135M / whisper, 1 thread" "ggml-cpu insns" "SIMD insns" "ratio"
row "llama prompt, per token (-p 80 vs -p 16)" $(((c[stock.l80] - c[stock.l16]) / 64)) $(((c[simd.l80] - c[simd.l16]) / 64))
row "llama generation, per token (-n 17 vs -n 1)" $(((c[stock.l17] - c[stock.l16]) / 16)) $(((c[simd.l17] - c[simd.l16]) / 16))
if [[ " $HOSTS " == *" whisper "* ]]; then
  row "whisper base, whole run (4.1 s question)" "${c[stock.wb]}" "${c[simd.wb]}"
  row "whisper tiny (random weights), whole run" "${c[stock.wt]}" "${c[simd.wt]}"
fi
echo "(ratio = SIMD / ggml-cpu, < 1: SIMD executes fewer; host core flags: $HOST_FLAGS; qemu $(qemu-aarch64 --version | head -n1 | awk '{print $3}'))"
outputs="llama -p 16 $(same l16), -p 80 $(same l80), -n 17 $(same l17)"
[[ " $HOSTS " == *" whisper "* ]] && outputs+="; whisper base $(same wb), tiny $(same wt)"
echo "outputs vs stock: $outputs"
