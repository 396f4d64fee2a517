#!/usr/bin/env bash
# The AVX2 Q4_1 tile's bounds on this CPU (docs/measured.md): ports.c (the tile's instructions
# in registers, no loads) and replica.c (the tile on the library's chunk layout, in C), each
# compiled with clang -O2 (GCC's code for the replica is ~30 % slower) and run twice; on CPUs with
# AVX-512 VNNI also replica512.c (the 512-bit panel tile, with SmolLM2's 18 and 48 blocks per row).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
out="${TMPDIR:-/tmp}/ggml-rs-tile-bound"
mkdir -p "$out"
cc=$(command -v clang || command -v gcc)
"$cc" -O2 ports.c -o "$out/ports"
"$cc" -O2 -mavx2 -mfma -mf16c replica.c -o "$out/replica"
for _ in 1 2; do "$out/ports"; "$out/replica"; done
if grep -qw avx512_vnni /proc/cpuinfo; then
  for nb in 18 48; do
    "$cc" -O2 -DNB=$nb -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx2 -mfma replica512.c -o "$out/replica512_$nb"
    "$out/replica512_$nb"
  done
fi
