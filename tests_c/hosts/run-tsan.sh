#!/usr/bin/env bash
# host_assistant_tsan (tests_c/hosts/assistant.cmake, run by scripts/tsan.sh): ThreadSanitizer over
# this library while whisper.rn and llama.rn compute at the same time.
#
#   run-tsan.sh <outdir> <tsan_control> <assistant_tsan> -- <assistant args>
#
# 1. The positive control (tsan_control.c races inside the library on purpose) must produce a
#    report whose stack names a library frame (a demangled `ggml_backend_rs::` function, symbolized
#    by llvm-symbolizer): otherwise the stage could not see a race of ours and fails.
# 2. assistant_tsan with <assistant args> --rounds 2 --cycles 2 (one thread per host, whisper and
#    SmolLM2 on two threads at once, then two load/compute/free cycles), computing with ggml-cpu,
#    then with GGML_RS_SIMD=1 (the library's own worker pool): outputs equal across runs as
#    assistant.cpp checks, and no report may name a library frame. Reports in the hosts' code alone
#    (uninstrumented here, so only through intercepted calls such as memcpy) are listed, not failed.
# Reports: <outdir>/{control,cpu,simd}.<pid>.
set -uo pipefail

out="$1" control="$2" assistant="$3"
shift 3
[[ "${1:-}" == "--" ]] && shift
mkdir -p "$out"
rm -f "$out"/control.* "$out"/cpu.* "$out"/simd.*

symbolizer="$(command -v llvm-symbolizer || ls /usr/lib/llvm-*/bin/llvm-symbolizer 2>/dev/null | tail -n1)"
if [[ -z "$symbolizer" ]]; then
  echo "FAIL: no llvm-symbolizer (apt-get install llvm): reports could not name the library's frames" >&2
  exit 1
fi
opts="halt_on_error=0 exitcode=0 history_size=4 external_symbolizer_path=$symbolizer"

# reports <prefix>: how many reports, and how many name a library frame
count() { cat "$out/$1".* 2>/dev/null | grep -c '^WARNING: ThreadSanitizer' || true; }
ours() {
  local f n=0
  for f in "$out/$1".*; do
    [[ -e "$f" ]] || continue
    # one report per WARNING block; a block is ours when a frame is in the library's crate
    n=$((n + $(awk '/^WARNING: ThreadSanitizer/ { if (b) c++; b = 0 } /ggml_backend_rs::/ { b = 1 }
                    END { if (b) c++; print c + 0 }' "$f")))
  done
  echo "$n"
}

fails=0
TSAN_OPTIONS="$opts log_path=$out/control" "$control" >"$out/control.log" 2>&1 ||
  { cat "$out/control.log"; echo "FAIL: tsan_control exited with an error" >&2; exit 1; }
if (($(ours control) == 0)); then
  cat "$out"/control.* 2>/dev/null | head -n 40
  echo "FAIL: the planted race in the library was not reported with library frames" >&2
  exit 1
fi
echo "OK: control: the planted race was reported in the library's frames ($(count control) report(s))"

for mode in cpu simd; do
  envs=()
  [[ $mode == simd ]] && envs=(GGML_RS_SIMD=1)
  if ! env "${envs[@]}" TSAN_OPTIONS="$opts log_path=$out/$mode" "$assistant" "$@" --rounds 2 --cycles 2 \
      >"$out/$mode.log" 2>&1; then
    cat "$out/$mode.log"
    echo "FAIL: assistant_tsan ($mode) exited with an error" >&2
    fails=$((fails + 1))
    continue
  fi
  grep -E '^(ROUND|CYCLE|CONCURRENT) ' "$out/$mode.log"
  n="$(count "$mode")" k="$(ours "$mode")"
  if ((k > 0)); then
    for f in "$out/$mode".*; do [[ -e "$f" ]] && head -n 60 "$f"; done
    echo "FAIL: $mode: $k of $n ThreadSanitizer report(s) name a library frame" >&2
    fails=$((fails + 1))
  else
    echo "OK: $mode: both hosts at once, no ThreadSanitizer report in the library's frames ($n report(s) in all)"
  fi
done
((fails == 0))
