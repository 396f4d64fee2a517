# Sourced by scripts/test-aarch64*.sh and tools/qemu-count/count-*.sh: installs the aarch64 cross
# toolchain (Rust target, cross gcc/libc for build.rs's host.c and linking, qemu-user, plus the
# commands and Debian packages the caller passes) and exports cargo's cross settings. If it
# cannot be installed (no network to the Rust or Debian servers) the caller says SKIPPED and exits
# 0, unless GGML_RS_AARCH64_REQUIRED=1. aarch64_build (below) then builds for it.
#   aarch64_toolchain "<commands that must exist>" <extra Debian packages...>
TARGET=aarch64-unknown-linux-gnu

aarch64_toolchain() {
    local need_cmds="aarch64-linux-gnu-gcc qemu-aarch64 $1" missing=0 c
    shift
    for c in $need_cmds; do command -v "$c" >/dev/null || missing=1; done
    [ -d /usr/aarch64-linux-gnu/lib ] || missing=1
    if ! { rustup target list --installed | grep -qx "$TARGET" || rustup target add "$TARGET"; } \
        || { ((missing)) && ! aarch64_apt qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross "$@"; }; then
        [ "${GGML_RS_AARCH64_REQUIRED:-0}" = 1 ] && { echo "$(basename "$0"): could not install the aarch64 toolchain" >&2; exit 1; }
        echo "$(basename "$0"): SKIPPED: could not install the aarch64 toolchain (rustup target / apt)"
        exit 0
    fi
    export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc
    export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
}

# Cross-builds the library for $TARGET and, into <build dir>, the named CMake targets with the
# host ggml cores compiled by clang for $HOST_FLAGS (scripts/aarch64-clang.cmake); <host tests>
# (ON/OFF) adds the real hosts' drivers. Reads ROOT, JOBS and HOST_FLAGS from the caller, and
# optionally AARCH64_FEATURES (cargo features, e.g. lm-2026,wsp-2026 for the 2026 hosts: the
# library then builds in target/features, the feature builds' shared target dir,
# scripts/lib/cargo-features.sh) and the array
# AARCH64_CMAKE_ARGS (extra configure arguments, e.g. -DGGML_RS_REV2026=ON). AARCH64_PHONE=1
# builds the phone build instead: the root crate phone/ (ggml-backend-rs-phone, profile phone)
# with fat LTO into target/phone, its libraries copied to target/phone/$TARGET/phone-lib under the
# library's names, which CMake links.
#   aarch64_build <build dir> <ON|OFF> <cmake targets...>
aarch64_build() {
    local dir="$1" host_tests="$2" tdir="$ROOT/target" feat=() libdir
    shift 2
    if [[ -n "${AARCH64_FEATURES:-}" ]]; then
        tdir="$ROOT/target/features"
        feat=(--features "$AARCH64_FEATURES")
    fi
    if [[ "${AARCH64_PHONE:-0}" = 1 ]]; then
        # The phone crate is the LTO root (opt-level 3's pipeline; the library keeps its opt-level z
        # per function). Its features are its defaults (simd): AARCH64_FEATURES is ignored here.
        # Explicit crate types: with the manifest's the LTO'd .a could hold bitcode. Building it
        # also builds the library with all its manifest crate types (cdylib too: needs the linker
        # that aarch64_toolchain exports).
        tdir="$ROOT/target/phone" libdir="$ROOT/target/phone/$TARGET/phone-lib"
        CARGO_TARGET_DIR="$tdir" cargo rustc -p ggml-backend-rs-phone --profile phone --lib \
            --crate-type staticlib,cdylib --config 'profile.phone.lto="fat"' --target "$TARGET" -j "$JOBS"
        # CMake expects the library's names (the .so for the *_shared targets)
        mkdir -p "$libdir"
        cp "$tdir/$TARGET/phone/libggml_backend_rs_phone.a" "$libdir/libggml_backend_rs.a"
        cp "$tdir/$TARGET/phone/libggml_backend_rs_phone.so" "$libdir/libggml_backend_rs.so"
    else
        CARGO_TARGET_DIR="$tdir" cargo build --release --target "$TARGET" -j "$JOBS" "${feat[@]}"
        libdir="$tdir/$TARGET/release"
    fi
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_TOOLCHAIN_FILE="$ROOT/scripts/aarch64-clang.cmake" \
        -DGGML_RS_CARGO_BUILD=OFF -DGGML_RS_LIB_DIR="$libdir" \
        -DGGML_RS_HOST_TESTS="$host_tests" "-DGGML_RS_HOST_CPU_FLAGS=$HOST_FLAGS" \
        -DGGML_RS_HOST_CODE_OPT=-O3 \
        ${AARCH64_CMAKE_ARGS[@]+"${AARCH64_CMAKE_ARGS[@]}"}
    cmake --build "$dir" -j "$JOBS" --target "$@"
}

aarch64_apt() {
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq && $sudo apt-get install -y "$@"
}
