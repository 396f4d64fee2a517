#!/usr/bin/env bash
# The assistant's identity tests (registered by assistant.cmake) and the runs of
# scripts/run-assistant.sh.
#
#   run-assistant.sh reference <outdir> <whisper-stock> <llama-stock> -- <args>
#       The stock reference: the stock whisper driver transcribes, the stock llama driver answers
#       that transcript (two programs, one after the other); with GGML_RS_STOCK_TWICE=1 twice, identical.
#       Keeps whisper_stock.bin, llama_stock.bin (+ .log) in <outdir>.
#   run-assistant.sh stock <outdir> <whisper-stock> <llama-stock> -- <args>
#       One more run of the stock pair (a timing sample for scripts/run-assistant.sh), into
#       <outdir>/{whisper,llama}_stock<tag>.{bin,log}, checked identical to the reference.
#   run-assistant.sh compare <outdir> <assistant>... -- <args>
#       Runs each assistant (assistant_static, assistant_shared: both hosts in one process) and
#       compares its whisper and llama outputs bitwise with the reference; on a difference prints
#       the first differing token / logit (compare-outputs.py).
#   <args> = WHISPER_MODEL WAV LLAMA_MODEL MAX_TOKENS N_PROMPT_MAX N_GEN
# env: ASSISTANT_THREADS (default 2); ASSISTANT_TAG names the compare outputs
#      (<outdir>/{whisper,llama}_<mode><tag>.bin, default empty); ASSISTANT_SIMD=1 runs the
#      assistants with GGML_RS_SIMD=1 and LM_/WSP_GGML_SCHED_DEBUG=1 and also requires that both
#      hosts' schedulers printed splits and that every one of them ran on SIMD.
#      ASSISTANT_ARGS adds arguments to the compare runs: "--rounds N --cycles N" (both hosts at once,
#      then load/compute/free cycles: assistant.cpp) also requires the assistant's CONCURRENT line
#      to say every round and cycle gave the sequential run's outputs and the RSS stayed flat.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
what="$1"; out="$2"; shift 2
exes=()
while (($#)) && [[ "$1" != "--" ]]; do exes+=("$1"); shift; done
[[ "${1:-}" == "--" ]] && shift
if (($# != 6)); then
  echo "run-assistant.sh: want WHISPER_MODEL WAV LLAMA_MODEL MAX_TOKENS N_PROMPT_MAX N_GEN after --" >&2
  exit 2
fi
wmodel="$1"; wav="$2"; lmodel="$3"; max_tokens="$4"; n_prompt="$5"; n_gen="$6"
threads="${ASSISTANT_THREADS:-2}"
tag="${ASSISTANT_TAG:-}"
mkdir -p "$out"
for f in "$wmodel" "$wav" "$lmodel"; do
  if [[ ! -s "$f" ]]; then
    echo "FAIL: $f missing -- run scripts/fetch-models.sh" >&2
    exit 1
  fi
done

# stock <whisper-driver> <llama-driver> <suffix>: the two stock programs, one after the other
stock() {
  local w="$1" l="$2" s="$3"
  "$w" -m "$wmodel" -f "$wav" -t "$threads" --max-tokens "$max_tokens" --text \
    --transcript "$out/transcript_stock$s.txt" -o "$out/whisper_stock$s.bin" >"$out/whisper_stock$s.log" 2>&1 \
    || { cat "$out/whisper_stock$s.log"; echo "FAIL: $(basename "$w") failed" >&2; return 1; }
  "$l" -m "$lmodel" --prompt-file "$out/transcript_stock$s.txt" --chat -p "$n_prompt" -n "$n_gen" -t "$threads" \
    --text -o "$out/llama_stock$s.bin" >"$out/llama_stock$s.log" 2>&1 \
    || { cat "$out/llama_stock$s.log"; echo "FAIL: $(basename "$l") failed" >&2; return 1; }
}

same() { # same <host> <ref> <file> <what>
  if cmp -s "$2" "$3"; then
    return 0
  fi
  echo "FAIL: $4: $1 output differs" >&2
  python3 "$HERE/compare-outputs.py" "$1" "$2" "$3" >&2 || true
  return 1
}

case "$what" in
  reference)
    stock "${exes[0]}" "${exes[1]}" .1 || exit 1
    # (stock's determinism: a second run with GGML_RS_STOCK_TWICE=1, as run-identical.sh)
    if [[ "${GGML_RS_STOCK_TWICE:-0}" == 1 ]]; then
      stock "${exes[0]}" "${exes[1]}" .2 || exit 1
      fails=0
      same whisper "$out/whisper_stock.1.bin" "$out/whisper_stock.2.bin" "stock not deterministic" || fails=1
      same llama "$out/llama_stock.1.bin" "$out/llama_stock.2.bin" "stock not deterministic" || fails=1
      ((fails == 0)) || exit 1
    fi
    for h in whisper llama; do
      cp "$out/${h}_stock.1.bin" "$out/${h}_stock.bin"
      cp "$out/${h}_stock.1.log" "$out/${h}_stock.log"
    done
    cp "$out/transcript_stock.1.txt" "$out/transcript_stock.txt"
    echo "transcript: $(cat "$out/transcript_stock.txt")"
    grep -h '^RESULT ' "$out/whisper_stock.log" "$out/llama_stock.log"
    echo "OK: stock whisper -> llama pipeline deterministic"
    ;;
  stock)
    stock "${exes[0]}" "${exes[1]}" "$tag" || exit 1
    fails=0
    same whisper "$out/whisper_stock.bin" "$out/whisper_stock$tag.bin" "stock not deterministic" || fails=1
    same llama "$out/llama_stock.bin" "$out/llama_stock$tag.bin" "stock not deterministic" || fails=1
    exit $fails
    ;;
  compare)
    for h in whisper llama; do
      if [[ ! -s "$out/${h}_stock.bin" ]]; then
        echo "FAIL: no stock reference $out/${h}_stock.bin (host_assistant_stock must run first)" >&2
        exit 1
      fi
    done
    fails=0
    for exe in "${exes[@]}"; do
      name="$(basename "$exe")"
      mode="${name##*_}$tag"
      log="$out/assistant_$mode.log"
      envs=()
      [[ "${ASSISTANT_SIMD:-0}" == 1 ]] && envs=(GGML_RS_SIMD=1 LM_GGML_SCHED_DEBUG=1 WSP_GGML_SCHED_DEBUG=1)
      if ! env "${envs[@]}" "$exe" --whisper-model "$wmodel" --wav "$wav" --llama-model "$lmodel" -t "$threads" \
          --max-tokens "$max_tokens" -p "$n_prompt" -n "$n_gen" --check-loggers ${ASSISTANT_ARGS:-} \
          --whisper-out "$out/whisper_$mode.bin" --llama-out "$out/llama_$mode.bin" >"$log" 2>&1; then
        cat "$log"
        echo "FAIL: $name exited with an error" >&2
        fails=$((fails + 1))
        continue
      fi
      cat "$log"
      ok=1
      same whisper "$out/whisper_stock.bin" "$out/whisper_$mode.bin" "$mode transcript" || ok=0
      same llama "$out/llama_stock.bin" "$out/llama_$mode.bin" "$mode answer" || ok=0
      line="$(grep '^ASSISTANT ' "$log")"
      get() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
      # each registry holds its own host's devices: both hosts register only their CPU backend
      # (+ this library's SIMD with GGML_RS_SIMD=1)
      want=CPU
      [[ "${ASSISTANT_SIMD:-0}" == 1 ]] && want=CPU,SIMD
      for p in wsp lm; do
        devs="$(get ${p}_devices)"
        if [[ "$(tr ',' '\n' <<<"$devs" | sort | paste -sd,)" != "$want" ]]; then
          echo "FAIL: $mode: the ${p}_ registry lists '$devs', want $want" >&2
          ok=0
        fi
      done
      if [[ "${ASSISTANT_SIMD:-0}" == 1 ]]; then
        for h in whisper llama; do
          n="$(get ${h}_splits)" k="$(get ${h}_simd_splits)"
          if [[ -n "${GGML_RS_SIMD_DECLINED:-}" && "$h" == llama && -n "$n" && -n "$k" && "$k" -gt 0 && "$k" -le "$n" ]]; then
            # 2026: ggml-cpu keeps the ops SIMD declines (host_cui_llama_simd checks, node by node,
            # that its other splits hold only those)
            echo "OK: $mode: $k of $n $h scheduler splits ran on SIMD, the others on ggml-cpu (declined: $GGML_RS_SIMD_DECLINED)"
          elif [[ -z "$n" || "$n" == 0 || "$n" != "$k" ]]; then
            echo "FAIL: $mode: $h scheduler splits on SIMD: ${k:-?} of ${n:-?} (want all, and some)" >&2
            ok=0
          else
            echo "OK: $mode: all $n $h scheduler splits ran on SIMD"
          fi
        done
      fi
      if [[ "${ASSISTANT_ARGS:-}" == *--rounds* || "${ASSISTANT_ARGS:-}" == *--cycles* ]]; then
        conc="$(grep '^CONCURRENT ' "$log")"
        if [[ -z "$conc" ]]; then
          echo "FAIL: $mode: no CONCURRENT line (ASSISTANT_ARGS: $ASSISTANT_ARGS)" >&2
          ok=0
        else
          echo "OK: $mode: ${conc#CONCURRENT }"
        fi
      fi
      if ((ok)); then
        echo "OK: assistant $mode: transcript, llama tokens and logits bit-identical to the stock pair"
      else
        fails=$((fails + 1))
      fi
    done
    ((fails == 0)) || exit 1
    ;;
  *)
    echo "run-assistant.sh: unknown action '$what'" >&2
    exit 2
    ;;
esac
