#!/usr/bin/env bash
# Loads the Android shared libraries scripts/cross.sh built (dist/<target>/libggml_backend_rs.so)
# into glibc programs and calls them (tests_c/android/): x86_64-linux-android natively,
# aarch64-linux-android under qemu-user. Per prefix: registry and device enumeration, CPU buffers
# and tensor I/O, a scheduler graph on the SIMD device against reference values (two programs),
# bad input, and a panic injected into an export. A bionic shim (libc.so/libm.so/libdl.so/liblog.so
# over glibc) stands in for the device's libraries: this proves the .so links, its symbols resolve
# and our code runs on that ABI, not how bionic's loader or libc behave.
#   bash scripts/android-load.sh [TARGET...]   (default: both; each needs its .so in dist/)
#   JOBS (default: 2)
# If the aarch64 toolchain (qemu-user, cross g++) cannot be installed, the aarch64 run says SKIPPED
# (unless GGML_RS_AARCH64_REQUIRED=1), like scripts/test-aarch64*.sh.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS="${JOBS:-2}"
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(x86_64-linux-android aarch64-linux-android)
bash scripts/fetch-hosts.sh >/dev/null

for t in "${TARGETS[@]}"; do
    so="$ROOT/dist/$t/libggml_backend_rs.so"
    [ -f "$so" ] || { echo "android-load.sh: $so missing: run scripts/cross.sh $t first" >&2; exit 1; }
    dir="build-android-${t%%-*}"
    cfg=()
    case "$t" in
        x86_64-linux-android)
            [ "$(uname -m)" = x86_64 ] || { echo "android-load.sh: $t: SKIPPED (not an x86_64 machine)"; continue; }
            ;;
        aarch64-linux-android)
            if [ "$(uname -m)" != aarch64 ]; then
                # (in a subshell: the toolchain script exits when it cannot install)
                ( source scripts/aarch64-toolchain.sh
                  aarch64_toolchain "aarch64-linux-gnu-g++ clang ninja" g++-aarch64-linux-gnu clang ninja-build cmake
                  echo ok ) | tail -n1 | grep -qx ok || { echo "android-load.sh: $t: SKIPPED"; continue; }
                cfg=(-DCMAKE_TOOLCHAIN_FILE="$ROOT/scripts/aarch64-clang.cmake")
            fi
            ;;
        *) echo "android-load.sh: unknown target $t" >&2; exit 1 ;;
    esac
    echo "== android-load: $t ($dir)"
    cmake -S tests_c/android -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cfg[@]}" -DGGML_RS_ANDROID_SO="$so" >/dev/null
    cmake --build "$dir" -j "$JOBS" >/dev/null
    ctest --test-dir "$dir" --output-on-failure
done
