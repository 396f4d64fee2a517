#!/usr/bin/env bash
# Miri over the Rust unit tests of the scheduler and the graph allocator (issue 43): the pure-Rust
# parts, run by Miri's interpreter with Stacked Borrows, so that a reference to C memory held
# across a write, a dangling pointer or an out-of-bounds read in them is an error, not luck.
#
#   bash scripts/miri.sh            (installs nightly's miri component with rustup if missing)
#
# What runs: the lib tests whose names hold `sched` (sched::arena, sched::tensor_map), `alloc`
# (alloc::tests: graphs placed into real CPU buffers; abi::rev2026's alloc_deps) and `ptr_map`
# (the map both key tensors by).
# What Miri cannot run, and what stands in: Miri executes no C or C++. The only foreign calls these
# tests reach are the C++ try/catch trampolines of src/host_try.cpp around a buffer type's
# alloc_buffer and a buffer's free_buffer; under cfg(miri) src/host_try.rs calls the function
# directly (the tests' buffer type is our own Rust CPU one, which throws nothing). Everything else
# that calls C (the host's ggml through weak symbols, dlopen'ed backends, the SIMD kernels' host
# comparisons) is outside these tests and is covered by valgrind.sh and tsan.sh over the C tests.
# Skipped: the other lib tests (abi::types, simd::*: revision tables and the SIMD backend, not
# the boundary under test), listed at the end.
# MIRIFLAGS: -Zmiri-permissive-provenance, because the allocator's plan keys tensors by address
# (`usize`, revision-free) and turns them back into pointers; Miri then warns on every
# integer-to-pointer cast (exposed provenance), which this flag accepts rather than prints.
#
# Exit status: non-zero when Miri reports undefined behaviour or a test fails. Not part of
# scripts/test.sh (a few minutes on 2 cores; the lead decides).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if ! cargo +nightly miri --version >/dev/null 2>&1; then
    echo "miri.sh: installing the miri component of the nightly toolchain"
    rustup toolchain install nightly --profile minimal --component miri,rust-src
fi

export MIRIFLAGS="${MIRIFLAGS:--Zmiri-permissive-provenance}"
FILTERS=(sched alloc ptr_map)
echo "miri.sh: $(cargo +nightly miri --version), MIRIFLAGS=$MIRIFLAGS"
status=0
start=$SECONDS
for f in "${FILTERS[@]}"; do
    echo "miri.sh: cargo +nightly miri test --lib $f"
    cargo +nightly miri test --lib "$f" || status=1
done
echo "miri.sh: ran in $((SECONDS - start)) s: the lib tests matching: ${FILTERS[*]}"
echo "miri.sh: skipped (not the scheduler or the allocator):"
skipped=$(cargo +nightly miri test --lib -- --list 2>/dev/null | sed -n 's/: test$//p' \
    | grep -v -e sched -e alloc -e ptr_map | sed 's/^/  /' || true)
echo "${skipped:-  (the list of tests could not be read)}"
[ "$status" = 0 ] && echo "miri.sh: no undefined behaviour found" || echo "miri.sh: FAILED"
exit "$status"
