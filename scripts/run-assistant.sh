#!/usr/bin/env bash
# A voice assistant on ggml-backend-rs: whisper.rn 0.4.3 and llama.rn 0.4.4 linked together in
# ONE program with ONE copy of this library (as an app shipping both packages), next to the two
# stock builds run one after the other.
#
# espeak-ng speaks a question; whisper base (OpenAI's multilingual base model, 74 M parameters,
# converted from PyPI's CTranslate2 wheels by scripts/fetch-models.sh) transcribes it; the
# transcript becomes the user turn of SmolLM2-135M-Instruct's chat template (system turn in
# tests_c/hosts/llama_run.cpp) and SmolLM2 answers greedily. Prints the sentence spoken, the
# transcript and its word error rate against the sentence, the answer, and whisper encode / total
# ms, llama prompt / generation tok/s and peak RSS (getrusage ru_maxrss), stock vs ours; checks
# that the outputs (whisper tokens and their probabilities, llama prompt and generated tokens,
# every logits vector) are bit-identical to the stock pair and exits non-zero when they are not.
#
# Sets itself up: installs what the machine lacks (scripts/provision.sh), fetches the host
# packages (npm) and the models (PyPI) into .cache/, builds (CMake: cargo, both host cores and
# drivers in stock and the chosen mode). The first run takes minutes; each step prints a line.
#
# usage: scripts/run-assistant.sh [--text "SENTENCE"] [--wav FILE] [--mode static|shared] [--simd]
#                                 [-r ROUNDS=3] [-n N_GEN=64] [-p N_PROMPT_MAX=256]
#                                 [--max-tokens N=0] [--whisper-model FILE]
#   (default)     espeak-ng speaks "Can you tell me three good reasons to drink more water every day?"
#   --text        espeak-ng speaks SENTENCE instead (English)
#   --wav         your own recording: a 16 kHz mono 16-bit PCM WAV is used as it is; any other
#                 audio file sox reads is converted to that first (sox). With --text as well,
#                 SENTENCE is what the recording says (for the word error rate), nothing is spoken
#   --mode        how ours links the library: static (.a, as the phone builds) or shared (.so)
#   --simd        ours with GGML_RS_SIMD=1: the library's SIMD backend computes both models
#   -r            rounds of ours, each followed by one more stock pair; figures are medians (stock
#                 also counts its two determinism runs). Every run's outputs are compared.
#   -n / -p       llama: greedy tokens of the answer / cap on the templated prompt's tokens
#   --max-tokens  whisper tokens per segment (0: the model ends its segments itself)
#   --whisper-model  another whisper.cpp model file (the random-weight test model,
#                 .cache/models/ggml-tiny-random.bin, transcribes gibberish)
# env:   BUILD_DIR (default build), JOBS (default 2)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD_DIR="${BUILD_DIR:-build}"
JOBS="${JOBS:-2}"
MODE=static
MAX_TOKENS=0
N_PROMPT=256
N_GEN=64
SIMD=0
ROUNDS=3
TEXT=""
USER_WAV=""
WMODEL=""
while (($#)); do
  case "$1" in
    --text) TEXT="${2:?--text wants a sentence}"; shift 2 ;;
    --wav) USER_WAV="${2:?--wav wants a file}"; shift 2 ;;
    --whisper-model) WMODEL="${2:?--whisper-model wants a file}"; shift 2 ;;
    --mode) MODE="$2"; shift 2 ;;
    --max-tokens) MAX_TOKENS="$2"; shift 2 ;;
    -p) N_PROMPT="$2"; shift 2 ;;
    -n) N_GEN="$2"; shift 2 ;;
    --simd) SIMD=1; shift ;;
    -r) ROUNDS="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "run-assistant: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
[[ "$MODE" == static || "$MODE" == shared ]] || { echo "run-assistant: --mode static|shared" >&2; exit 2; }
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "run-assistant: -r wants a positive number" >&2; exit 2; }
if [[ -n "$USER_WAV" && ! -r "$USER_WAV" ]]; then echo "run-assistant: --wav $USER_WAV: no such file" >&2; exit 2; fi
if [[ -n "$WMODEL" && ! -s "$WMODEL" ]]; then echo "run-assistant: --whisper-model $WMODEL: no such file" >&2; exit 2; fi

T0=$SECONDS
step() { echo "run-assistant: [$1] $2 ($((SECONDS - T0)) s)"; }

step 1/6 "the machine: compilers, cmake, ninja, numpy, espeak-ng, sox (installs only what is missing)"
source scripts/provision.sh build hosts speech
step 2/6 "host packages (npm) and models (PyPI: SmolLM2, whisper base; converted once)"
bash scripts/fetch-hosts.sh
bash scripts/fetch-models.sh llama base
M="$ROOT/.cache/models"
WMODEL="${WMODEL:-$M/ggml-base.bin}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

# The audio and the sentence it says (SENTENCE_FILE empty: unknown, no word error rate).
SENTENCE_FILE=""
if [[ -n "$USER_WAV" ]]; then
  WAV="$OUT/input-16k.wav"
  fmt="$(python3 - "$USER_WAV" <<'PY'
import sys, wave
try:
    with wave.open(sys.argv[1]) as w:
        print("%d %d %d" % (w.getframerate(), w.getnchannels(), w.getsampwidth() * 8))
except Exception as e:
    print("not-a-pcm-wav")
PY
)"
  if [[ "$fmt" == "16000 1 16" ]]; then
    cp "$USER_WAV" "$WAV"
  else
    if ! command -v sox >/dev/null 2>&1; then
      echo "run-assistant: $USER_WAV is not a 16 kHz mono 16-bit PCM WAV ($fmt) and sox is missing to convert it" >&2
      echo "run-assistant: apt-get install sox, or convert it yourself: sox IN -r 16000 -c 1 -b 16 -e signed-integer OUT.wav" >&2
      exit 2
    fi
    if ! sox "$USER_WAV" -r 16000 -c 1 -b 16 -e signed-integer "$WAV" 2>"$OUT/sox.log"; then
      echo "run-assistant: sox cannot read $USER_WAV as audio:" >&2
      cat "$OUT/sox.log" >&2
      exit 2
    fi
    echo "run-assistant: converted $USER_WAV ($fmt) to 16 kHz mono 16-bit PCM with sox"
  fi
  if [[ -n "$TEXT" ]]; then SENTENCE_FILE="$OUT/sentence.txt"; printf '%s\n' "$TEXT" >"$SENTENCE_FILE"; fi
elif [[ -n "$TEXT" ]]; then
  WAV="$OUT/speech-16k.wav"
  python3 scripts/make-speech-wav.py "$WAV" --text "$TEXT" >/dev/null
  SENTENCE_FILE="$OUT/speech-16k.txt"
else
  WAV="$M/question-16k.wav"
  SENTENCE_FILE="$M/question-16k.txt"
fi
ARGS=("$WMODEL" "$WAV" "$M/SmolLM2-135M-Instruct.Q4_1.gguf" "$MAX_TOKENS" "$N_PROMPT" "$N_GEN")

step 3/6 "building whisper.rn + llama.rn stock and ours ($MODE) and the library (cmake, $BUILD_DIR; minutes the first time)"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
LOG="$BUILD_DIR/run-assistant-build.log"
if ! cmake --build "$BUILD_DIR" -j "$JOBS" --target whisper_driver_stock llama_driver_stock "assistant_$MODE" >"$LOG" 2>&1; then
  tail -n 60 "$LOG" >&2
  echo "run-assistant: build failed (full log: $LOG)" >&2
  exit 1
fi
BIN="$BUILD_DIR/tests_c/hosts"
RUN="$ROOT/tests_c/hosts/run-assistant.sh"

step 4/6 "stock whisper.rn, then stock llama.rn on its transcript (twice: determinism)"
if ! bash "$RUN" reference "$OUT" "$BIN/whisper_driver_stock" "$BIN/llama_driver_stock" -- "${ARGS[@]}" >"$OUT/stock.txt" 2>&1; then
  cat "$OUT/stock.txt" >&2
  exit 1
fi
ours="$MODE" tag=""
if ((SIMD)); then ours="$MODE, GGML_RS_SIMD=1" tag=_simd; fi
step 5/6 "one program, both hosts, one library ($ours), $ROUNDS round(s) interleaved with stock"
identical=1
for ((i = 1; i <= ROUNDS; i++)); do
  ASSISTANT_SIMD="$SIMD" ASSISTANT_TAG="$tag.$i" bash "$RUN" compare "$OUT" "$BIN/assistant_$MODE" -- "${ARGS[@]}" \
    >"$OUT/ours.$i.txt" 2>&1 || identical=0
  ASSISTANT_TAG=".$((i + 2))" bash "$RUN" stock "$OUT" "$BIN/whisper_driver_stock" "$BIN/llama_driver_stock" \
    -- "${ARGS[@]}" >>"$OUT/stock.txt" 2>&1 || identical=0
done
cat "$OUT"/ours.*.txt >"$OUT/ours.txt"
step 6/6 "done"

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

wname="$(basename "$WMODEL")"
case "$wname" in
  ggml-base.bin) wdesc="whisper base (OpenAI, multilingual, 74 M parameters, f16)" ;;
  ggml-tiny-random.bin) wdesc="the random-weight tiny test model (its transcript is gibberish)" ;;
  *) wdesc="$wname" ;;
esac
if [[ -n "$USER_WAV" ]]; then source_desc="your recording, $(basename "$USER_WAV")"; else source_desc="espeak-ng"; fi
secs="$(python3 -c 'import sys, wave; w = wave.open(sys.argv[1]); print("%.1f" % (w.getnframes() / w.getframerate()))' "$WAV")"
printf '%s' "$our_transcript" >"$OUT/transcript_ours.txt"
wer="(sentence unknown: give --text with --wav for a word error rate)"
if [[ -n "$SENTENCE_FILE" ]]; then
  wer="$(python3 tests_c/hosts/whisper_wer.py "$SENTENCE_FILE" "$OUT/transcript_ours.txt" | sed "s/^WER //")"
fi

echo
echo "whisper: $wdesc; llama: SmolLM2-135M-Instruct Q4_1, chat template (system + transcript),"
echo "prompt <= $N_PROMPT tokens, $N_GEN greedy tokens; 2 threads each"
echo
if [[ -n "$SENTENCE_FILE" ]]; then
  echo "sentence spoken:  $(cat "$SENTENCE_FILE")   ($source_desc, $secs s)"
else
  echo "audio:            $source_desc, $secs s"
fi
echo "transcript:      $our_transcript"
echo "word error rate:  $wer"
echo "answer:           $our_answer"
echo
if [[ "$stock_transcript" == "$our_transcript" && "$stock_answer" == "$our_answer" ]]; then
  echo "(stock whisper.rn 0.4.3 then llama.rn 0.4.4, two programs each with its own ggml-backend.cpp, heard"
  echo " and answered the same; ours: one program, whisper.rn + llama.rn on one ggml-backend-rs, $ours)"
else
  echo "=== stock: whisper.rn 0.4.3, then llama.rn 0.4.4 (two programs, each its own ggml-backend.cpp) ==="
  echo "transcript: $stock_transcript"
  echo "answer: $stock_answer"
  echo "=== ours: one program, whisper.rn + llama.rn on one ggml-backend-rs ($ours): above ==="
fi
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
