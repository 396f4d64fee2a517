#!/usr/bin/env bash
# Real-model identity tests (registered by tests_c/hosts/CMakeLists.txt).
#
#   run-identical.sh <llama|whisper> <outdir> reference <stock-driver> -- <driver args>
#       Runs the stock driver once and keeps its output as <outdir>/<host>_stock.bin
#       (GGML_RS_STOCK_TWICE=1: twice, and requires both outputs to be identical);
#       a failed comparison runs stock again to tell whether stock is deterministic.
#   run-identical.sh <llama|whisper> <outdir> compare <driver>... -- <driver args>
#       Runs every driver (llama_driver_static, ..._shared, ...) and compares
#       its output bitwise (cmp) with <outdir>/<host>_stock.bin; on a
#       difference prints the first differing token / logit (compare-outputs.py),
#       on a crash a gdb backtrace.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
host="$1"; out="$2"; what="$3"; shift 3
exes=()
while (($#)) && [[ "$1" != "--" ]]; do exes+=("$1"); shift; done
[[ "${1:-}" == "--" ]] && shift
args=("$@")

mkdir -p "$out"

# Inputs present?
for ((i = 0; i < ${#args[@]}; i++)); do
  if [[ "${args[i]}" == -m || "${args[i]}" == -f ]]; then
    f="${args[i+1]}"
    if [[ ! -s "$f" ]]; then
      echo "FAIL: $f missing -- run scripts/fetch-models.sh" >&2
      exit 1
    fi
  fi
done

# run <exe> <outfile> -> prints the driver's stdout; exit status of the driver
run() {
  local exe="$1" file="$2" log="$2.log" rc
  rm -f "$file"
  "$exe" "${args[@]}" -o "$file" >"$log" 2>&1
  rc=$?
  cat "$log"
  if ((rc != 0)); then
    echo "FAIL: $(basename "$exe") exited with status $rc" >&2
    if ((rc >= 128)) && command -v gdb >/dev/null 2>&1; then
      echo "--- gdb backtrace ($(basename "$exe")) ---" >&2
      timeout 600 gdb -q -batch -ex run -ex "thread apply all bt 30" \
        --args "$exe" "${args[@]}" -o "$file.gdb" 2>&1 | grep -v '^\[New Thread\|^\[Thread .* exited' | tail -n 120 >&2
    fi
  fi
  return $rc
}

# the compute buffer total a driver reported in its log (MiB for llama, MB for whisper)
compute_buffer() { sed -n 's/.*compute_buffer_mi\{0,1\}b=\([0-9.]*\).*/\1/p' "$1" | tail -n 1; }

describe() { python3 "$HERE/compare-outputs.py" "$host" "$1" "$2" >&2 || true; }

case "$what" in
  reference)
    exe="${exes[0]}"
    ref="$out/${host}_stock.bin"
    run "$exe" "$out/${host}_stock.1.bin" || exit 1
    # Stock's determinism is what makes a difference ours: checked by a second stock run when a
    # comparison fails (compare, below), or here with GGML_RS_STOCK_TWICE=1 (one run less per
    # case in the test command)
    echo "$exe" >"$out/${host}_stock.exe"
    if [[ "${GGML_RS_STOCK_TWICE:-0}" == 1 ]]; then
      run "$exe" "$out/${host}_stock.2.bin" || exit 1
      if ! cmp "$out/${host}_stock.1.bin" "$out/${host}_stock.2.bin"; then
        echo "FAIL: stock $host driver is not deterministic (two runs differ)" >&2
        describe "$out/${host}_stock.1.bin" "$out/${host}_stock.2.bin"
        exit 1
      fi
      echo "OK: stock $host driver deterministic"
    fi
    cp "$out/${host}_stock.1.bin" "$ref"
    echo "OK: stock $host reference ($(stat -c %s "$ref") bytes of output)"
    ;;
  compare)
    ref="$out/${host}_stock.bin"
    if [[ ! -s "$ref" ]]; then
      echo "FAIL: no stock reference $ref (host_${host}_stock must run first)" >&2
      exit 1
    fi
    fails=0
    for exe in "${exes[@]}"; do
      name="$(basename "$exe")"
      mode="${name##*_}"
      file="$out/${host}_${mode}.bin"
      if ! run "$exe" "$file"; then
        fails=$((fails + 1))
        continue
      fi
      if cmp "$ref" "$file"; then
        echo "OK: $host $mode output bit-identical to stock"
      else
        echo "FAIL: $host $mode output differs from stock" >&2
        describe "$ref" "$file"
        fails=$((fails + 1))
        # is it ours? stock once more: a stock that differs from itself makes no difference ours
        stock_exe="$(cat "$out/${host}_stock.exe" 2>/dev/null)"
        if [[ -x "$stock_exe" ]] && run "$stock_exe" "$out/${host}_stock.again.bin" >/dev/null; then
          if cmp -s "$ref" "$out/${host}_stock.again.bin"; then
            echo "FAIL: ... and stock is deterministic (a second stock run equals the reference): the difference is ours" >&2
          else
            echo "FAIL: ... but stock is NOT deterministic (a second stock run differs from the reference)" >&2
            describe "$ref" "$out/${host}_stock.again.bin"
          fi
        fi
      fi
      # compute buffers never larger than stock's (issue 35): the driver's report line
      # (compute_buffer_mib= / compute_buffer_mb=, the host's own log summed) of both runs
      ours_cb="$(compute_buffer "$file.log")" stock_cb="$(compute_buffer "$out/${host}_stock.1.bin.log")"
      if [[ -z "$ours_cb" || -z "$stock_cb" ]]; then
        echo "FAIL: $host $mode: no compute buffer size in the driver's report" >&2
        fails=$((fails + 1))
      elif awk -v o="$ours_cb" -v s="$stock_cb" 'BEGIN { exit !(o + 0 <= s + 0) }'; then
        echo "OK: $host $mode compute buffers $ours_cb <= stock's $stock_cb"
      else
        echo "FAIL: $host $mode compute buffers $ours_cb larger than stock's $stock_cb" >&2
        fails=$((fails + 1))
      fi
    done
    ((fails == 0)) || exit 1
    ;;
  *)
    echo "run-identical.sh: unknown action '$what'" >&2
    exit 2
    ;;
esac
