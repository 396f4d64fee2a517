# The bookkeeping of the stage scripts that compare builds (test-upstream.sh, test-vulkan.sh):
# `check NAME command...` counts and prints a check, `step NAME command...` times a step (its
# status is the command's: callers test it, or set -e stops the script), `checks_summary` prints
# the wall times, the failed checks and `<prefix>: N passed, M failed`, and fails if any did.
# Source it with CHECK_PREFIX set (e.g. upstream).
pass=0
fail=0
failed=()
times=()
check() {
  local name="$1"
  shift
  if "$@"; then
    pass=$((pass + 1))
    echo "$CHECK_PREFIX: ok   $name"
  else
    fail=$((fail + 1))
    failed+=("$name")
    echo "$CHECK_PREFIX: FAIL $name"
  fi
}
step() {
  local name="$1" t0=$SECONDS rc=0
  shift
  "$@" || rc=$?
  times+=("$(printf '%-40s %4d s' "$name" $((SECONDS - t0)))")
  return $rc
}
checks_summary() {
  local f
  echo "$CHECK_PREFIX: wall times:"
  printf "$CHECK_PREFIX:   %s\n" "${times[@]}"
  for f in "${failed[@]}"; do echo "$CHECK_PREFIX: failed: $f"; done
  echo "$CHECK_PREFIX: $pass passed, $fail failed"
  ((fail == 0))
}
