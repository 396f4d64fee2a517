#!/usr/bin/env bash
# A voice assistant on ggml-backend-rs: whisper.rn 0.4.3 and llama.rn 0.4.4 linked together in
# ONE program with ONE copy of this library (as an app shipping both packages), next to the two
# stock builds run one after the other.
#
# espeak-ng speaks a question; whisper base (OpenAI's multilingual base model, 74 M parameters,
# converted from PyPI's CTranslate2 wheels by scripts/fetch-models.sh) transcribes it; the
# transcript becomes the user turn of SmolLM2-135M-Instruct's chat template (system turn in
# tests_c/hosts/llama_run.cpp) and SmolLM2 answers greedily until its end of turn (the first
# end-of-generation token, as apps stop; -n caps it). Prints the sentence spoken, the transcript
# and its word error rate against the sentence, the answer, and whisper encode / total ms, llama
# prompt / generation tok/s and peak RSS (getrusage ru_maxrss), stock vs ours: stock and ours run
# alternately (ABAB...), and each ratio is the median over those pairs with its min-max spread,
# labelled "within noise" when the spread includes 1.0x (without --simd both sides compute with
# the same ggml-cpu, and the table says so); checks
# that the outputs (whisper tokens and their probabilities, llama prompt and generated tokens,
# every logits vector) are bit-identical to the stock pair and exits non-zero when they are not.
#
# Sets itself up: installs what the machine lacks (scripts/provision.sh), fetches the host
# packages (npm) and the models (PyPI) into .cache/, builds (CMake: cargo, both host cores and
# drivers in stock and the chosen mode). The first run takes minutes; each step prints a line.
#
# usage: scripts/run-assistant.sh [--text "SENTENCE"] [--wav FILE] [--mode static|shared] [--simd]
#                                 [-r ROUNDS=5] [-n N_GEN=64] [-p N_PROMPT_MAX=256]
#                                 [--max-tokens N=0] [--whisper-model FILE]
#   (default)     espeak-ng speaks "Can you tell me three good reasons to drink more water every day?"
#   --text        espeak-ng speaks SENTENCE instead (English)
#   --wav         your own recording: a 16 kHz mono 16-bit PCM WAV is used as it is; any other
#                 audio file sox reads is converted to that first (sox). With --text as well,
#                 SENTENCE is what the recording says (for the word error rate), nothing is spoken
#   --mode        how ours links the library: static (.a, as the phone builds) or shared (.so)
#   --simd        ours with GGML_RS_SIMD=1: the library's SIMD backend computes both models
#   -r            rounds: ours, then the stock pair, ROUNDS times (ABAB...); the speed figures are
#                 medians over these rounds and each ratio is given with its min-max over them (the
#                 stock pair's two first runs only check determinism). Every run's outputs are compared.
#   -n / -p       llama: cap on the answer's greedy tokens (it ends earlier at SmolLM2's end of
#                 turn) / cap on the templated prompt's tokens
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
ROUNDS=5
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

load0="$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')"
step 4/6 "stock whisper.rn, then stock llama.rn on its transcript (twice: determinism)"
if ! bash "$RUN" reference "$OUT" "$BIN/whisper_driver_stock" "$BIN/llama_driver_stock" -- "${ARGS[@]}" >"$OUT/stock.txt" 2>&1; then
  cat "$OUT/stock.txt" >&2
  exit 1
fi
ours="$MODE" tag=""
if ((SIMD)); then ours="$MODE, GGML_RS_SIMD=1" tag=_simd; fi
step 5/6 "one program, both hosts, one library ($ours), then the stock pair, $ROUNDS time(s) (ABAB...)"
identical=1
for ((i = 1; i <= ROUNDS; i++)); do
  ASSISTANT_SIMD="$SIMD" ASSISTANT_TAG="$tag.$i" bash "$RUN" compare "$OUT" "$BIN/assistant_$MODE" -- "${ARGS[@]}" \
    >"$OUT/ours.$i.txt" 2>&1 || identical=0
  ASSISTANT_TAG=".$((i + 2))" bash "$RUN" stock "$OUT" "$BIN/whisper_driver_stock" "$BIN/llama_driver_stock" \
    -- "${ARGS[@]}" >>"$OUT/stock.txt" 2>&1 || identical=0
done
cat "$OUT"/ours.*.txt >"$OUT/ours.txt"
load1="$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')"
step 6/6 "done"

mine="$OUT/assistant_$MODE$tag.1.log"
if [[ ! -s "$mine" ]] || ! grep -q '^ASSISTANT ' "$mine"; then
  cat "$OUT/ours.txt" >&2
  echo "run-assistant: the assistant failed" >&2
  exit 1
fi
# field <file> <line tag> <key>
field() { grep "^$2 " "$1" | sed -n "s/.* $3=\([^ ]*\).*/\1/p"; }
L="$OUT/llama_stock.log"
# the interleaved rounds, in order: round i is ours (assistant .i), then the stock pair (.i+2)
WS=() LS=() OS=()
for ((i = 1; i <= ROUNDS; i++)); do
  WS+=("$OUT/whisper_stock.$((i + 2)).log") LS+=("$OUT/llama_stock.$((i + 2)).log") OS+=("$OUT/assistant_$MODE$tag.$i.log")
done
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
echo "prompt <= $N_PROMPT tokens, greedy answer up to its end of turn (at most $N_GEN tokens); 2 threads each"
echo
if [[ -n "$SENTENCE_FILE" ]]; then
  echo "sentence spoken:  $(cat "$SENTENCE_FILE")   ($source_desc, $secs s)"
else
  echo "audio:            $source_desc, $secs s"
fi
echo "transcript:      $our_transcript"
echo "word error rate:  $wer"
echo "answer:           $our_answer"
n_gen="$(field "$mine" LLAMA n_gen)"
if [[ "$(field "$mine" LLAMA stop)" == eog ]]; then
  echo "                  ($n_gen tokens; SmolLM2 ended its turn there)"
else
  echo "                  ($n_gen tokens: cut at the -n $N_GEN cap before SmolLM2 ended its turn; -n for more)"
fi
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
# vals <line tag> <key> <file>...: the field of each run, one a line, in round order
vals() {
  local t="$1" k="$2" f
  shift 2
  for f in "$@"; do field "$f" "$t" "$k"; done
}
# median of the numbers on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# spread <stock values file> <ours values file> [less]: per round, the ratio ours vs stock (> 1
# when ours is better: faster, or with "less" smaller), then "median min max n" of those ratios
spread() {
  paste "$1" "$2" | awk -v less="${3:-}" '
    { r = (less == "less") ? ($2 > 0 ? $1 / $2 : -1) : ($1 > 0 ? $2 / $1 : -1); if (r >= 0) v[++n] = r }
    END {
      if (!n) { print "- - - 0"; exit }
      for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
      m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
      printf "%.2f %.2f %.2f %d\n", m, v[1], v[n], n
    }'
}
# row <what> <stock values file> <ours values file> [less]: medians, the ratio's median and min-max
# over the rounds, and what the spread allows saying
row() {
  local m lo hi n verdict better=faster worse=slower
  [[ "${4:-}" == less && "$1" == *RSS* ]] && better=smaller worse=larger
  read -r m lo hi n < <(spread "$2" "$3" "${4:-}")
  if ((n < 2)); then
    verdict="one round: no spread (-r)"
  elif awk -v a="$lo" -v b="$hi" 'BEGIN { exit !(a <= 1 && b >= 1) }'; then
    verdict="within noise"
  elif awk -v a="$lo" 'BEGIN { exit !(a > 1) }'; then
    verdict="ours $better"
  else
    verdict="ours $worse"
  fi
  # the same ggml-cpu computes both: a side that wins every round does so for another reason
  [[ "$verdict" == ours* && "$1" != *RSS* ]] && ((!SIMD)) && verdict="$verdict every round (*)" && footnote=1
  printf "%-32s %10s %10s %7sx %-13s %s\n" "$1" "$(median <"$2")" "$(median <"$3")" "$m" "($lo-$hi)" "$verdict"
}
footnote=0
vals RESULT encode_ms "${WS[@]}" >"$OUT/s.we"; vals WHISPER encode_ms "${OS[@]}" >"$OUT/o.we"
vals RESULT total_ms "${WS[@]}" >"$OUT/s.wt"; vals WHISPER total_ms "${OS[@]}" >"$OUT/o.wt"
vals RESULT prompt_tps "${LS[@]}" >"$OUT/s.lp"; vals LLAMA prompt_tps "${OS[@]}" >"$OUT/o.lp"
vals RESULT gen_tps "${LS[@]}" >"$OUT/s.lg"; vals LLAMA gen_tps "${OS[@]}" >"$OUT/o.lg"
paste <(vals RESULT peak_rss_kb "${WS[@]}") <(vals RESULT peak_rss_kb "${LS[@]}") \
  | awk '{ printf "%.1f\n", ($1 + $2) / 1024 }' >"$OUT/s.rss"
vals ASSISTANT peak_rss_kb "${OS[@]}" | awk '{ printf "%.1f\n", $1 / 1024 }' >"$OUT/o.rss"
echo "speed and memory: $ROUNDS round(s), ours then stock in turn (ABAB...): each side's median, and"
echo "ours vs stock (> 1: ours faster/smaller) in each round, as the median (min-max) of those ratios"
echo "(not the ratio of the two medians: a round compares runs made moments apart); load average"
echo "$load0 before the runs, $load1 after, on $(nproc 2>/dev/null || echo '?') cores"
printf "%-32s %10s %10s %8s %-13s %s\n" "" "stock" "ours" "ratio" "(min-max)" ""
row "whisper encode ms" "$OUT/s.we" "$OUT/o.we" less
row "whisper total ms" "$OUT/s.wt" "$OUT/o.wt" less
row "llama prompt tok/s ($(field "$L" RESULT n_prompt) tok)" "$OUT/s.lp" "$OUT/o.lp"
row "llama generation tok/s ($n_gen tok)" "$OUT/s.lg" "$OUT/o.lg"
row "peak RSS MiB (both models)" "$OUT/s.rss" "$OUT/o.rss" less
sw="$(vals RESULT peak_rss_kb "${WS[@]}" | median)" sl="$(vals RESULT peak_rss_kb "${LS[@]}" | median)"
echo "(stock is two processes, whisper $(kib2mib "$sw") + llama $(kib2mib "$sl") MiB peak RSS; ours one process"
echo " holding both models at once.)"
if ((SIMD)); then
  echo "Ours computes with this library's SIMD backend, stock with the hosts' ggml-cpu. A speed ratio"
  echo "says something only when its whole min-max lies on one side of 1.0x; \"within noise\" means"
  echo "this machine's load swung the runs more than the two sides differ."
else
  echo "Both sides compute with the same ggml-cpu, the hosts' own (this library replaces ggml-backend,"
  echo "not the kernels; --simd lets its SIMD backend compute): the same arithmetic on the same threads,"
  echo "so the speed should be the same, and a ratio whose min-max spans 1.0x is this machine's noise,"
  echo "not a speed-up or a slow-down. On a busy shared machine single runs swing by several x."
  if ((footnote)); then
    echo "(*) one side ahead in every round even so: not its arithmetic, which is the same, but when"
    echo "    and how its runs met the load (and a short answer's few tokens time little); -r for more"
  fi
fi
echo "loggers: each prefix's log lines reach only its own host's logger: $(field "$mine" ASSISTANT loggers)"
if ((SIMD)); then grep -E '^(OK|FAIL): .*splits' "$OUT/ours.1.txt" || true; fi
if ((identical)); then
  echo "transcript tokens, llama tokens and logits: bit-identical to the stock pair"
else
  grep -E '^(FAIL|prompt|logits|generated|final|segment|no token)' "$OUT/ours.txt" || true
  echo "transcript tokens, llama tokens and logits: DIFFER from the stock pair"
  exit 1
fi
