#!/usr/bin/env bash
# sched_gpu_compare.sh STOCK_EXE OURS_EXE: both print the trace of the scheduler's calls into a fake
# GPU (tests_c/sched_gpu.c) and check their own outputs; ours' printout must be stock's byte for byte.
set -uo pipefail
stock="$1" ours="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$stock" >"$tmp/stock.txt" 2>"$tmp/stock.err"; rs=$?
"$ours" >"$tmp/ours.txt" 2>"$tmp/ours.err"; ro=$?
fail=0
if [[ $rs -ne 0 ]]; then echo "stock exited $rs"; tail -20 "$tmp/stock.err"; fail=1; fi
if [[ $ro -ne 0 ]]; then echo "ours exited $ro"; tail -20 "$tmp/ours.err"; fail=1; fi
if ! diff -u --label stock --label ours "$tmp/stock.txt" "$tmp/ours.txt"; then
  echo "sched_gpu_compare: ours' trace differs from stock's (above)"
  fail=1
fi
if [[ $fail -eq 0 ]]; then
  echo "sched_gpu_compare: $(wc -l <"$tmp/ours.txt") lines, identical to stock's"
fi
exit $fail
