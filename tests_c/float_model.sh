#!/usr/bin/env bash
# The float-model report of our ggml-backend.h (cbindgen/ggml-backend.h.in), as the SIMD backend's
# contract reads it (src/simd/fidelity.rs): a file compiled without fast math reports 0; GCC's
# fast math sets the macro bit (and the reassociation bit); clang's -ffast-math /
# -ffp-model=fast with -fno-finite-math-only (the packages' arm64 flags) define no macro and are
# caught by the reassociation bit alone.
#   float_model.sh <repo root> <host include dir (ggml.h)> <work dir>
set -uo pipefail
root="$1"; inc="$2"; work="$3"
mkdir -p "$work"
fail=0
check() { # compiler, expected value (a grep -E pattern), flags...
    local cc="$1" want="$2"; shift 2
    command -v "$cc" >/dev/null || { echo "float_model: $cc not found, skipped: $*"; return; }
    local exe="$work/fm_${cc}_$(echo "$*" | tr -c 'a-z0-9' _)"
    if ! "$cc" "$@" -DLM_GGML_RS_NO_LINK_ANCHORS -I"$root/include/lm" -I"$inc" "$root/tests_c/float_model.c" -o "$exe"; then
        echo "FAIL: $cc $* does not compile"; fail=1; return
    fi
    local got; got="$("$exe")"
    if [[ "$got" =~ ^($want)$ ]]; then echo "ok   $cc $*: $got"; else echo "FAIL: $cc $*: $got, expected $want"; fail=1; fi
}
for cc in gcc clang; do
    check "$cc" 0 -O2
    check "$cc" 0 -O3 -mavx2 -mfma -mf16c
    check "$cc" '[13]' -O0 -ffast-math
done
check gcc 3 -O3 -ffast-math -fno-finite-math-only
check g++ 3 -x c++ -O2 -ffast-math -fno-finite-math-only -Wall -Wextra -Werror
check gcc 3 -O2 -fassociative-math -fno-signed-zeros -fno-trapping-math
check clang 3 -O3 -ffast-math
check clang 2 -O3 -ffast-math -fno-finite-math-only
check clang 3 -O3 -ffp-model=fast
check clang 2 -O3 -ffp-model=fast -fno-finite-math-only
check clang 0 -x c++ -O2 -Wall -Wextra -Werror
exit $fail
