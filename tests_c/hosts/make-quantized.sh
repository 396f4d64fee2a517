#!/usr/bin/env bash
# Make whisper base quantized to q5_1 and q8_0 from ggml-base.bin (scripts/fetch-models.sh base)
# with whisper_quantize (tests_c/hosts/whisper_quantize.cpp: whisper.cpp's quantize, on the host's
# own wsp_ ggml). The CMake fixture test quantize_whisper_base and scripts/bench.sh run it.
#
#   make-quantized.sh <whisper_quantize> <models dir> [type...]   (default: q5_1 q8_0)
#
# Each <models dir>/ggml-base-<type>.bin has a .stamp: the tool's source, the input model's own
# stamp (its converter and sources) and the type. It is remade only when that changes, so the
# default and the 2026 build share one file (both hosts' quantizers give the same bytes for these
# types: docs/quantized-models.md).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tool="$1" dir="$2"
shift 2
(($#)) || set -- q5_1 q8_0

in="$dir/ggml-base.bin"
if [[ ! -s "$in" ]]; then
  echo "FAIL: $in missing -- run scripts/fetch-models.sh base" >&2
  exit 1
fi
if [[ -s "$in.stamp" ]]; then in_id="$(cat "$in.stamp")"; else in_id="$(sha256sum "$in" | cut -d' ' -f1)"; fi
src_id="$(sha256sum "$HERE/whisper_quantize.cpp" | cut -d' ' -f1)"

for type in "$@"; do
  out="$dir/ggml-base-$type.bin"
  stamp="$(printf '%s\n' "$src_id" "$in_id" "$type" | sha256sum | cut -d' ' -f1)"
  if [[ -s "$out" && "$(cat "$out.stamp" 2>/dev/null)" == "$stamp" ]]; then
    echo "make-quantized: $(basename "$out") up to date ($(sha256sum "$out" | cut -c1-16))"
    continue
  fi
  t0=$SECONDS
  "$tool" "$in" "$out" "$type"
  echo "$stamp" >"$out.stamp"
  echo "make-quantized: $(basename "$out") made in $((SECONDS - t0)) s ($(sha256sum "$out" | cut -c1-16))"
done
