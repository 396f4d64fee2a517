#!/usr/bin/env bash
# The AVX2 Q4_1 tile's bounds on this CPU (README, "Measured"): ports.c (the tile's instructions
# in registers, no loads) and replica.c (the tile on the library's chunk layout, in C), each
# compiled with clang -O2 (GCC's code for the replica is ~30 % slower) and run twice.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
out="${TMPDIR:-/tmp}/ggml-rs-tile-bound"
mkdir -p "$out"
cc=$(command -v clang || command -v gcc)
"$cc" -O2 ports.c -o "$out/ports"
"$cc" -O2 -mavx2 -mfma -mf16c replica.c -o "$out/replica"
for _ in 1 2; do "$out/ports"; "$out/replica"; done
