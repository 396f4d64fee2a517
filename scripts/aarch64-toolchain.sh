# Sourced by scripts/test-aarch64*.sh: installs the aarch64 cross toolchain (Rust target, cross
# gcc/libc for build.rs's host.c and linking, qemu-user, plus the commands and Debian packages the
# caller passes) and exports cargo's cross settings. If it cannot be installed (no network to the
# Rust or Debian servers) the caller says SKIPPED and exits 0, unless GGML_RS_AARCH64_REQUIRED=1.
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

aarch64_apt() {
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq && $sudo apt-get install -y "$@"
}
