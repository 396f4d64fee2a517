#!/usr/bin/env bash
# The SIMD tests (the kernels' crate and the library's SIMD backend) cross-compiled for aarch64
# and run under qemu-user, twice: on qemu's "max" CPU (dot product and FP16 arithmetic: the `sdot`
# and half-precision F16 kernels run) and on a Cortex-A53 (Armv8.0, neither: the base-NEON integer
# kernels and f32 F16 products run).
# scripts/test.sh runs it on x86_64 machines. If the toolchain cannot be installed (no network
# to the Rust or Debian servers) it says SKIPPED and exits 0, unless GGML_RS_AARCH64_REQUIRED=1.
#   JOBS      (default: 2)      cargo build jobs
#   FILTER    (default: simd)   test name filter passed to the library's test binary
#   KERNEL_FILTER (default: none)  the same for the kernels' crate (kernels/)
#   CPUS      (default: "max cortex-a53")  qemu -cpu models to run the tests on
# Extra arguments go to the test binary (e.g. --nocapture).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS="${JOBS:-2}"
FILTER="${FILTER:-simd}"
CPUS="${CPUS:-max cortex-a53}"
source scripts/aarch64-toolchain.sh
aarch64_toolchain ""

# Build once, then run the test binaries directly under each CPU model: the kernels' crate
# (every test, KERNEL_FILTER) and the library's (FILTER: its SIMD backend).
KERNEL_FILTER="${KERNEL_FILTER:-}"
# (the kernels' repacked ARM layouts too: arm-repack, which the 2026 features ask for)
cargo test --release --workspace --exclude ggml-backend-rs-phone --features ggml-rs-kernels/arm-repack --lib --target "$TARGET" -j "$JOBS" --no-run
mapfile -t BINS < <(cargo test --release --workspace --exclude ggml-backend-rs-phone --features ggml-rs-kernels/arm-repack --lib --target "$TARGET" -j "$JOBS" --no-run --message-format=json 2>/dev/null \
    | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p')
((${#BINS[@]} == 2)) || { echo "expected 2 test binaries (library, kernels), found ${#BINS[@]}" >&2; exit 1; }
for cpu in $CPUS; do
    # qemu's "max" CPU has FEAT_DotProd and FEAT_FP16, the Armv8.0 cores neither; others: unchecked
    case "$cpu" in
        max) expect=1 ;;
        cortex-a53|cortex-a57|cortex-a72) expect=0 ;;
        *) expect= ;;
    esac
    for bin in "${BINS[@]}"; do
        filter="$FILTER"
        [[ "$(basename "$bin")" == ggml_rs_kernels-* ]] && filter="$KERNEL_FILTER"
        echo "== qemu-aarch64 -cpu $cpu (expect dotprod and fp16: ${expect:-?}): $bin $filter"
        GGML_RS_EXPECT_DOTPROD="$expect" GGML_RS_EXPECT_FP16="$expect" \
            qemu-aarch64 -cpu "$cpu" -L /usr/aarch64-linux-gnu "$bin" $filter "$@"
    done
done

# The phone build's kernels: without `neon-nodot` (phone/Cargo.toml) the integer products are
# declined on a CPU without `sdot` and computed with it.
KBIN="$(cargo test --release -p ggml-rs-kernels --no-default-features --features compute --lib --target "$TARGET" -j "$JOBS" \
    --no-run --message-format=json 2>/dev/null | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p')"
for cpu in $CPUS; do
    echo "== qemu-aarch64 -cpu $cpu, kernels without neon-nodot: $KBIN integer_products_declined"
    qemu-aarch64 -cpu "$cpu" -L /usr/aarch64-linux-gnu "$KBIN" integer_products_declined "$@"
done
