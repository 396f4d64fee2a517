#!/usr/bin/env bash
# A voice assistant on ggml-backend-rs: whisper.rn 0.4.3 and llama.rn 0.4.4 linked together in
# ONE program with ONE copy of this library (as an app shipping both packages), next to the two
# stock builds run one after the other.
#
# whisper (random-weight tiny model, scripts/fetch-models.sh) transcribes the espeak-ng sentence
# -- the transcript is deterministic gibberish -- and the transcript becomes the user turn of
# SmolLM2-135M-Instruct's chat template (system turn in tests_c/hosts/llama_run.cpp); SmolLM2
# answers greedily. Prints both transcripts and answers, whisper encode / total ms, llama prompt /
# generation tok/s and peak RSS (getrusage ru_maxrss), stock vs ours, and whether the outputs
# (whisper tokens and their probabilities, llama prompt and generated tokens, every logits vector)
# are bit-identical; exits non-zero when they are not.
#
# Builds what it needs (cargo via CMake, both host cores and drivers in stock and the chosen
# mode) and fetches the host packages (npm) and the models into .cache/.
#
# usage: scripts/run-assistant.sh [--mode static|shared] [--max-tokens N=32] [-p N_PROMPT_MAX=256]
#                                 [-n N_GEN=64] [--simd] [-r ROUNDS=3]
#   --max-tokens  whisper tokens per segment (the random model decodes a long repeated run)
#   -p            cap on the templated llama prompt's tokens
#   --simd        ours with GGML_RS_SIMD=1: the library's SIMD backend computes both models
#   -r            rounds of ours, each followed by one more stock pair; figures are medians (stock
#                 also counts its two determinism runs). Every run's outputs are compared.
# env:   BUILD_DIR (default build), JOBS (default 2)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD_DIR="${BUILD_DIR:-build}"
JOBS="${JOBS:-2}"
MODE=static
MAX_TOKENS=32
N_PROMPT=256
N_GEN=64
SIMD=0
ROUNDS=3
while (($#)); do
  case "$1" in
    --mode) MODE="$2"; shift 2 ;;
    --max-tokens) MAX_TOKENS="$2"; shift 2 ;;
    -p) N_PROMPT="$2"; shift 2 ;;
    -n) N_GEN="$2"; shift 2 ;;
    --simd) SIMD=1; shift ;;
    -r) ROUNDS="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "run-assistant: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ "$MODE" == static || "$MODE" == shared ]] || { echo "run-assistant: --mode static|shared" >&2; exit 2; }
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "run-assistant: -r wants a positive number" >&2; exit 2; }

source scripts/provision.sh build hosts speech
bash scripts/fetch-hosts.sh
bash scripts/fetch-models.sh
M="$ROOT/.cache/models"
ARGS=("$M/ggml-tiny-random.bin" "$M/speech-16k.wav" "$M/SmolLM2-135M-Instruct.Q4_1.gguf" "$MAX_TOKENS" "$N_PROMPT" "$N_GEN")

echo "run-assistant: building (cmake, $BUILD_DIR)"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
LOG="$BUILD_DIR/run-assistant-build.log"
if ! cmake --build "$BUILD_DIR" -j "$JOBS" --target whisper_driver_stock llama_driver_stock "assistant_$MODE" >"$LOG" 2>&1; then
  tail -n 60 "$LOG" >&2
  echo "run-assistant: build failed (full log: $LOG)" >&2
  exit 1
fi
BIN="$BUILD_DIR/tests_c/hosts"
RUN="$ROOT/tests_c/hosts/run-assistant.sh"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

echo "run-assistant: stock whisper.rn, then stock llama.rn on its transcript (twice: determinism)"
if ! bash "$RUN" reference "$OUT" "$BIN/whisper_driver_stock" "$BIN/llama_driver_stock" -- "${ARGS[@]}" >"$OUT/stock.txt" 2>&1; then
  cat "$OUT/stock.txt" >&2
  exit 1
fi
ours="$MODE" tag=""
if ((SIMD)); then ours="$MODE, GGML_RS_SIMD=1" tag=_simd; fi
echo "run-assistant: one program, both hosts, one library ($ours), $ROUNDS round(s) interleaved with stock"
identical=1
for ((i = 1; i <= ROUNDS; i++)); do
  ASSISTANT_SIMD="$SIMD" ASSISTANT_TAG="$tag.$i" bash "$RUN" compare "$OUT" "$BIN/assistant_$MODE" -- "${ARGS[@]}" \
    >"$OUT/ours.$i.txt" 2>&1 || identical=0
  ASSISTANT_TAG=".$((i + 2))" bash "$RUN" stock "$OUT" "$BIN/whisper_driver_stock" "$BIN/llama_driver_stock" \
    -- "${ARGS[@]}" >>"$OUT/stock.txt" 2>&1 || identical=0
done
cat "$OUT"/ours.*.txt >"$OUT/ours.txt"

mine="$OUT/assistant_$MODE$tag.1.log"
if [[ ! -s "$mine" ]] || ! grep -q '^ASSISTANT ' "$mine"; then
  cat "$OUT/ours.txt" >&2
  echo "run-assistant: the assistant failed" >&2
  exit 1
fi
# field <file> <line tag> <key>
field() { grep "^$2 " "$1" | sed -n "s/.* $3=\([^ ]*\).*/\1/p"; }
# med <line tag> <key> <file>...: the median of the field over the runs
med() {
  local t="$1" k="$2" f
  shift 2
  for f in "$@"; do field "$f" "$t" "$k"; done | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
W="$OUT/whisper_stock.log" L="$OUT/llama_stock.log"
WS=("$OUT"/whisper_stock.[0-9]*.log) LS=("$OUT"/llama_stock.[0-9]*.log) OS=("$OUT"/assistant_"$MODE$tag".[0-9]*.log)
stock_transcript="$(cat "$OUT/transcript_stock.txt")"
stock_answer="$(grep -v '^RESULT ' "$L")"
our_transcript="$(sed -n 's/^transcript: //p' "$mine")"
our_answer="$(sed -n '/^answer: /,/^WHISPER /p' "$mine" | sed '$d' | sed '1s/^answer: //')"

echo
echo "whisper: random-weight tiny model on the espeak-ng sentence, at most $MAX_TOKENS tokens/segment;"
echo "llama: SmolLM2-135M-Instruct Q4_1, chat template (system + transcript), prompt <= $N_PROMPT tokens,"
echo "$N_GEN greedy tokens; 2 threads each"
echo
echo "=== stock: whisper.rn 0.4.3, then llama.rn 0.4.4 (two programs, each its own ggml-backend.cpp) ==="
echo "transcript: $stock_transcript"
echo "answer: $stock_answer"
echo
echo "=== ours: one program, whisper.rn + llama.rn on one ggml-backend-rs ($ours) ==="
echo "transcript: $our_transcript"
echo "answer: $our_answer"
echo
kib2mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3fx", a / b }'; }
printf "%-34s %14s %14s %12s\n" "(vs stock > 1: ours faster/smaller)" "stock" "ours" "vs stock"
# row <what> <stock> <ours> [less]: the ratio is > 1 when ours is better (faster, or with "less"
# smaller: milliseconds, memory)
row() {
  local r
  if [[ "${4:-}" == less ]]; then r="$(ratio "$2" "$3")"; else r="$(ratio "$3" "$2")"; fi
  printf "%-34s %14s %14s %12s\n" "$1" "$2" "$3" "$r"
}
row "whisper encode ms" "$(med RESULT encode_ms "${WS[@]}")" "$(med WHISPER encode_ms "${OS[@]}")" less
row "whisper total ms" "$(med RESULT total_ms "${WS[@]}")" "$(med WHISPER total_ms "${OS[@]}")" less
row "llama prompt tok/s ($(field "$L" RESULT n_prompt) tok)" "$(med RESULT prompt_tps "${LS[@]}")" "$(med LLAMA prompt_tps "${OS[@]}")"
row "llama generation tok/s ($N_GEN tok)" "$(med RESULT gen_tps "${LS[@]}")" "$(med LLAMA gen_tps "${OS[@]}")"
sw="$(med RESULT peak_rss_kb "${WS[@]}")" sl="$(med RESULT peak_rss_kb "${LS[@]}")"
row "peak RSS MiB (both models)" "$(kib2mib "$(awk -v a="$sw" -v b="$sl" 'BEGIN { print a + b }')")" "$(kib2mib "$(med ASSISTANT peak_rss_kb "${OS[@]}")")" less
echo "(medians: stock ${#WS[@]} runs, ours ${#OS[@]}; stock is two processes, whisper $(kib2mib "$sw") + llama"
echo " $(kib2mib "$sl") MiB peak RSS; ours one process holding both models at once. Wall-clock figures"
echo " follow the machine's load: on a busy shared machine they swing by several x between runs.)"
echo "loggers: each prefix's log lines reach only its own host's logger: $(field "$mine" ASSISTANT loggers)"
if ((SIMD)); then grep -E '^(OK|FAIL): .*splits' "$OUT/ours.1.txt" || true; fi
if ((identical)); then
  echo "transcript tokens, llama tokens and logits: bit-identical to the stock pair"
else
  grep -E '^(FAIL|prompt|logits|generated|final|segment|no token)' "$OUT/ours.txt" || true
  echo "transcript tokens, llama tokens and logits: DIFFER from the stock pair"
  exit 1
fi
