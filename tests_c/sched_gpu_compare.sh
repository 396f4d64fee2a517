#!/usr/bin/env bash
# sched_gpu_compare.sh STOCK_EXE OURS_EXE EXPECTED_DIFF
# sched_gpu_compare.sh STOCK_EXE OURS_EXE --identical
# Both programs print the trace of the scheduler's calls into a fake GPU (tests_c/sched_gpu.c) and
# check their own outputs. With EXPECTED_DIFF, `diff -U0 stock ours` (without its two header lines)
# must be that file's content exactly: the deliberate differences of docs/sched-states.md "GPU
# traits", nothing more, nothing less (a missing file means none). With --identical, ours runs with
# GGML_RS_ALLOC=host (the host's ggml-alloc places the tensors, as stock's) and must print stock's
# trace byte for byte.
set -uo pipefail
stock="$1" ours="$2" expected="$3"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$stock" >"$tmp/stock.txt" 2>"$tmp/stock.err"; rs=$?
if [[ "$expected" == --identical ]]; then
  GGML_RS_ALLOC=host "$ours" >"$tmp/ours.txt" 2>"$tmp/ours.err"; ro=$?
  : >"$tmp/expected.diff"
else
  "$ours" >"$tmp/ours.txt" 2>"$tmp/ours.err"; ro=$?
  if [[ -f "$expected" ]]; then cp "$expected" "$tmp/expected.diff"; else : >"$tmp/expected.diff"; fi
fi
fail=0
if [[ $rs -ne 0 ]]; then echo "stock exited $rs"; tail -20 "$tmp/stock.txt" "$tmp/stock.err"; fail=1; fi
if [[ $ro -ne 0 ]]; then echo "ours exited $ro"; tail -20 "$tmp/ours.txt" "$tmp/ours.err"; fail=1; fi
diff -U0 "$tmp/stock.txt" "$tmp/ours.txt" | tail -n +3 >"$tmp/actual.diff"
if ! cmp -s "$tmp/expected.diff" "$tmp/actual.diff"; then
  echo "sched_gpu_compare: ours vs stock (diff -U0 stock ours):"
  cat "$tmp/actual.diff"
  echo "sched_gpu_compare: expected ($expected):"
  cat "$tmp/expected.diff"
  fail=1
fi
if [[ $fail -eq 0 ]]; then
  echo "sched_gpu_compare: $(wc -l <"$tmp/ours.txt") lines; differences from stock's trace: $(grep -c '^@@' "$tmp/actual.diff") hunk(s), as expected"
fi
exit $fail
