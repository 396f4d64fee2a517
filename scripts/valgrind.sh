#!/usr/bin/env bash
# Valgrind over the C tests (static link mode, both prefixes):
#   memcheck (--leak-check=full, --error-exitcode=1) over conformance, sched, fidelity, bad_input and the fuzz
#            corpus replay (fuzz_replay_<p>); conformance forks one child per section and valgrind
#            checks every child too (each prints its own ERROR SUMMARY);
#   helgrind over threads (parts B and C: 4 schedulers on 4 threads with shared weights, events
#            across two streams on two threads), with the registry built by the main thread first.
#
#   bash scripts/valgrind.sh [build dir]        (default: build; the tests are built if needed)
#
# Exit status: non-zero when any run reports an error (memory error, definite/possible leak,
# data race) or a test fails. Logs: <build dir>/valgrind/*.log. Summary lines are printed at the end.
#
# Suppressions (scripts/valgrind.supp): memcheck's "fishy size" warning for the impossible
# buffer sizes the tests request on purpose (posix_memalign fails cleanly, as intended), and
# helgrind's report on glibc's thread-stack cache (pthread_create zeroing a reused stack's DTV,
# ordered by a glibc-internal lock helgrind cannot see; all frames glibc's); valgrind's default
# suppressions for glibc/ld.so apply. Part A of threads.c (first use of the
# registry from 8 threads at once) is not run under helgrind: the library's one-time initialization
# is once_cell::Lazy and its registry lock parking_lot, both built on atomics and futexes that
# helgrind and DRD do not model, so every read of the freshly published registry is reported as a
# race against the initializing thread (28 contexts, all with once_cell::imp::initialize_or_wait on
# the other side). Part A runs functionally in ctest (threads_<p>_<mode>, 8 threads x 5 fresh
# processes) and under memcheck here.
#
# Environment: VALGRIND_PREFIXES (default "lm wsp"), VALGRIND_JOBS (build jobs, default 2).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
BUILD="$(cd "$BUILD" 2>/dev/null && pwd || echo "$BUILD")"
PREFIXES="${VALGRIND_PREFIXES:-lm wsp}"
JOBS="${VALGRIND_JOBS:-2}"
SUPP="$ROOT/scripts/valgrind.supp"

if ! command -v valgrind >/dev/null 2>&1; then
  SUDO=""
  if [[ "$(id -u)" -ne 0 ]] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
  echo "valgrind.sh: apt-get install valgrind"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends valgrind >/dev/null
fi

if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  echo "valgrind.sh: $BUILD is not a CMake build dir (configure it first: cmake -S . -B $BUILD -G Ninja)" >&2
  exit 2
fi
targets=()
for p in $PREFIXES; do
  targets+=("conformance_${p}_static" "sched_${p}_static" "fidelity_${p}_static" "bad_input_${p}_static" "threads_${p}_static" "fuzz_replay_${p}")
done
cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}" >/dev/null

LOGS="$BUILD/valgrind"
mkdir -p "$LOGS"
rm -f "$LOGS"/*.log
T="$BUILD/tests_c"
status=0
summary=()

# run <name> <tool args...> -- <command...>
run() {
  local name="$1"; shift
  local vg=()
  while [[ "$1" != "--" ]]; do vg+=("$1"); shift; done
  shift
  local log="$LOGS/$name.log"
  local start=$SECONDS rc=0
  valgrind "${vg[@]}" --error-exitcode=1 --num-callers=40 --suppressions="$SUPP" \
    --log-file="$log.%p" "$@" >"$LOGS/$name.out" 2>&1 || rc=$?
  cat "$log".* > "$log" 2>/dev/null || true
  rm -f "$log".*
  local procs errs lost
  procs=$(grep -c 'ERROR SUMMARY' "$log" || true)
  errs=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
  lost=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$log" | tr -d , | awk '{s+=$1} END {print s+0}')
  local result="ok"
  if (( rc != 0 || errs != 0 )); then
    result="FAILED (exit $rc)"
    status=1
    echo "valgrind.sh: $name: $result -- first reports:"
    grep -E '== (Invalid|Conditional|Syscall|Mismatched|Source and destination|Possible data race|Lock order|[0-9,]+ bytes in [0-9,]+ blocks are (definitely|possibly))' "$log" | head -n 10 || true
    # the first report whole (both stacks, the block's origin): a CI log must be enough to judge it
    awk '/== (Invalid|Conditional|Syscall|Mismatched|Source and destination|Possible data race|Lock order|[0-9,]+ bytes in [0-9,]+ blocks are (definitely|possibly))/ { on = 1 }
         on && /== ----------------/ { exit } on { print; if (++n >= 80) exit }' "$log" || true
    tail -n 5 "$LOGS/$name.out" || true
  fi
  summary+=("$(printf '%-22s %-9s %3d process(es), %d errors, %d bytes definitely lost, %ds: %s' \
    "$name" "${vg[0]#--tool=}" "$procs" "$errs" "$lost" $((SECONDS - start)) "$result")")
}

# The helgrind suppression for glibc's thread-stack cache must hide that report and nothing else:
# tests_c/valgrind_stack_cache.c provokes it deterministically, then plants a real race beside it.
"${CC:-cc}" -O1 -g -pthread "$ROOT/tests_c/valgrind_stack_cache.c" -o "$LOGS/stack_cache"
run "stack_cache_supp" --tool=helgrind -- "$LOGS/stack_cache"
planted=$(valgrind --tool=helgrind --suppressions="$SUPP" "$LOGS/stack_cache" race 2>&1 | grep -c 'Possible data race' || true)
if (( planted == 0 )); then
  echo "valgrind.sh: stack_cache_race: the planted race was not reported; the suppressions hide too much"
  status=1
fi
summary+=("$(printf '%-22s %-9s %d planted race report(s): %s' stack_cache_race helgrind "$planted" \
  "$( (( planted > 0 )) && echo ok || echo FAILED)")")

MEMCHECK=(--tool=memcheck --leak-check=full --show-leak-kinds=definite,possible --errors-for-leak-kinds=definite,possible)
for p in $PREFIXES; do
  run "conformance_$p" "${MEMCHECK[@]}" -- "$T/conformance_${p}_static"
  run "sched_$p"       "${MEMCHECK[@]}" -- "$T/sched_${p}_static"
  run "fidelity_$p"    "${MEMCHECK[@]}" -- "$T/fidelity_${p}_static"
  BAD_INPUT_SKIP_ABORTING=1 run "bad_input_$p" "${MEMCHECK[@]}" -- "$T/bad_input_${p}_static"
  run "fuzz_replay_$p" "${MEMCHECK[@]}" -- "$T/fuzz_replay_${p}" "$ROOT/tests_c/fuzz/corpus"
  # part A (first use from 8 threads), memory errors only
  THREADS_PARTS=A THREADS_FIRST_USE_ROUNDS=1 \
    run "threads_A_$p" "${MEMCHECK[@]}" -- "$T/threads_${p}_static"
  THREADS_PARTS=BC THREADS_ITERS=20 THREADS_EVENT_ITERS=50 \
    run "threads_BC_$p" --tool=helgrind -- "$T/threads_${p}_static"
done

echo "valgrind.sh: summary (logs in $LOGS)"
for line in "${summary[@]}"; do echo "  $line"; done
if (( status == 0 )); then
  echo "valgrind.sh: no errors"
fi
exit $status
