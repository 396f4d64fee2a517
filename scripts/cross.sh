#!/usr/bin/env bash
# Cross builds for the phones llama.rn and whisper.rn ship on, and checks of what they produce.
#   bash scripts/cross.sh [TARGET...]      (default: all four)
#     aarch64-linux-android x86_64-linux-android aarch64-apple-ios aarch64-apple-ios-sim x86_64-apple-ios
# (x86_64-apple-ios is the Intel-Mac simulator; with aarch64-apple-ios-sim it also makes the fat
# simulator archive dist/ios-simulator/libggml_backend_rs.a, arm64 + x86_64, for the xcframework)
# For each target: the release static library into dist/<target>/libggml_backend_rs.a and, for
# Android, the shared library dist/<target>/libggml_backend_rs.so (stripped, as an app packages
# it); the headers are the generated include/{lm,wsp}/. Then it checks each archive (object format
# and CPU, iOS vs simulator platform, every export of both prefixes, no undefined symbol outside
# the platform libc / unwinder / the host's weak ggml) and each .so (ELF machine, SONAME, NEEDED
# only libc/libm/libdl/liblog, LOAD segments aligned for 16 KB pages, exactly the exports of both
# prefixes, the unwinder inside, no undefined symbol but bionic's and the host's weak ggml), and
# prints a table, and prints sizes next to the stock ggml-backend.cpp + ggml-backend-reg.cpp.
# Exit status 1 when a check fails.
#
# No NDK or Apple SDK is needed: src/host.c includes only compiler-provided headers, so a bare
# `clang --target=...` builds it, and an archive needs no linker. The Android .so is linked by
# the NDK's clang when ANDROID_NDK_HOME is set (not tried here: no NDK on this machine), otherwise
# without an NDK (scripts/android-toolchain.sh): `zig cc` from PyPI's ziglang wheel (clang + lld),
# empty stub libc/libm/libdl/liblog with the device's SONAMEs, a __dso_handle object, and LLVM's
# libunwind compiled from the sources in that wheel (Rust's unwinding, which the panic guard needs).
#   JOBS         (default: 2)     cargo build jobs
#   ANDROID_API  (default: 23)    llama.rn's and whisper.rn's minSdkVersion
#   IOS_MIN      (default: 11.0)  the podspecs' iOS platform (the simulator: 14.0, Rust's minimum)
#   CROSS_SIZES  (default: 1)     0 skips the size tables (else: dist/sizes.tsv, dist/size-parts.tsv)
#   CROSS_NOSIMD_TARGETS (default: the two Android targets)  also build these without SIMD
#   CROSS_STD_SIZE (default: android)  which targets get std built for size, as shipped (see
#                                 build()): android = the two Android targets, 1 = all, 0 = none
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
ALL=(aarch64-linux-android x86_64-linux-android aarch64-apple-ios aarch64-apple-ios-sim x86_64-apple-ios)
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=("${ALL[@]}")
JOBS="${JOBS:-2}"
ANDROID_API="${ANDROID_API:-23}"
IOS_MIN="${IOS_MIN:-11.0}"
IOS_SIM_MIN=14.0
WORK="$ROOT/target/cross"
mkdir -p "$WORK/empty-sdk" "$WORK/bin"
source "$ROOT/scripts/android-toolchain.sh"

# --- 1. tools ---------------------------------------------------------------------------------
apt_install() {
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
need=()
command -v clang >/dev/null || need+=(clang)
command -v file >/dev/null || need+=(file)
# C++ headers for compiling the stock files (size comparison): libc++ (the phones' C++ library)
# over glibc's C headers of the same CPU, standing in for bionic's
libcxx() { ls -d /usr/lib/llvm-*/include/c++/v1 2>/dev/null | sort -V | tail -n1; }
[ -n "$(libcxx)" ] || need+=(libc++-dev)
[ -d /usr/aarch64-linux-gnu/include ] || need+=(libc6-dev-arm64-cross)
if ((${#need[@]})); then echo "cross.sh: apt-get install ${need[*]}"; apt_install "${need[@]}"; fi
# Rust's objects carry LLVM bitcode newer than Debian's LLVM tools read: use rustc's own
rustup component list --installed | grep '^llvm-tools' >/dev/null || rustup component add llvm-tools
LLVM_BIN="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"
ln -sf "$LLVM_BIN/llvm-readobj" "$WORK/bin/llvm-readelf"
NM="$LLVM_BIN/llvm-nm" AR="$LLVM_BIN/llvm-ar" OBJDUMP="$LLVM_BIN/llvm-objdump"
READELF="$WORK/bin/llvm-readelf" STRIP="$LLVM_BIN/llvm-strip" SIZE="$LLVM_BIN/llvm-size" LLD="$LLVM_BIN/rust-lld"

# std for a target: the rustup component, or, when it cannot be downloaded, built from rust-src
declare -A STD_FROM
for t in "${TARGETS[@]}"; do
    if rustup target list --installed | grep -x "$t" >/dev/null || rustup target add "$t" 2>/dev/null; then
        STD_FROM[$t]=rustup
    else
        echo "cross.sh: rust-std for $t not downloadable; building std from rust-src (-Zbuild-std)"
        rustup component list --installed | grep '^rust-src' >/dev/null || rustup component add rust-src
        STD_FROM[$t]=rust-src
    fi
done

clang_triple() {
    case "$1" in
        *-linux-android) echo "${1%%-*}-linux-android$ANDROID_API" ;;
        aarch64-apple-ios) echo "arm64-apple-ios$IOS_MIN" ;;
        aarch64-apple-ios-sim) echo "arm64-apple-ios$IOS_SIM_MIN-simulator" ;;
        x86_64-apple-ios) echo "x86_64-apple-ios$IOS_SIM_MIN-simulator" ;;
    esac
}

# std built for size for this target? (CROSS_STD_SIZE: android, 1 or 0)
std_for_size() {
    case "${CROSS_STD_SIZE:-android}" in
        1) return 0 ;;
        android) [[ "$1" == *-android ]] ;;
        *) return 1 ;;
    esac
}

# --- 2. build ---------------------------------------------------------------------------------
declare -A SO_STATE
# build TARGET VARIANT: VARIANT "full" (default features) into dist/<target>/, "no-simd" (the
# drop-in without the SIMD compute backend: --no-default-features) into dist/<target>/no-simd/
build() {
    local t="$1" v="$2" tu="${1//-/_}" env=() std=() feat=() types=staticlib dir="dist/$1" linker="" how=""
    env=("CC_$tu=clang" "AR_$tu=$AR")
    case "$t" in
        *-android) env+=("CFLAGS_$tu=--target=$(clang_triple "$t")") ;;
        *-ios-sim|x86_64-apple-ios) env+=("SDKROOT=$WORK/empty-sdk" "IPHONEOS_DEPLOYMENT_TARGET=$IOS_SIM_MIN") ;;
        # cc wants an SDK directory for -isysroot (it would ask xcrun); host.c needs nothing from it
        *-ios) env+=("SDKROOT=$WORK/empty-sdk" "IPHONEOS_DEPLOYMENT_TARGET=$IOS_MIN") ;;
    esac
    # Android: the phone build, fat LTO over the whole program with std (what only one prefix,
    # revision or crate uses is dropped, std's generics exist once; docs/size.md has what each
    # step saves), rooted at the crate phone/ (profile `phone`: the root at opt-level 3,
    # whose LTO pipeline the kernels need; the library's functions at z, the kernels at 3). LTO is
    # set here, not in Cargo.toml: with the library's manifest crate types (rlib too) Cargo would
    # compile it for a later LTO, leaving a static library with bitcode no nm reads.
    # iOS: the library itself without LTO (Cargo.toml's release-small: opt-level z, one codegen
    # unit; the kernels at 3 as in release): phone/ needs the library built as a dependency, which
    # Cargo does with all its manifest crate types, and a cdylib for iOS needs Apple's linker.
    local profile=release-small pkg=() lib=ggml_backend_rs lto=() soname=()
    if [[ "$t" == *-android ]]; then
        profile=phone pkg=(-p ggml-backend-rs-phone) lib=ggml_backend_rs_phone
        lto=(--config "profile.$profile.lto=\"fat\"")
        soname=(-- -C link-arg=-Wl,-soname,libggml_backend_rs.so)
    fi
    [ "$v" = no-simd ] && { feat=(--no-default-features); dir="dist/$t/no-simd"; }
    local out="target"
    # (own target dir: RUSTC_BOOTSTRAP would otherwise rebuild the shared build-script deps each time)
    [ "${STD_FROM[$t]}" = rust-src ] && { env+=(RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=target/build-std); std=(-Zbuild-std=std,panic_unwind); out=target/build-std; }
    if std_for_size "$t"; then
        # std built for size, as shipped: without its backtrace symbolizer (backtrace-trace-only:
        # the default panic hook prints unsymbolized frames, to a stderr phones discard; catching is
        # unchanged), core/alloc's small algorithms, opt-level z for every dependency
        # (matrixmultiply keeps Cargo.toml's opt-level 3: a package's own override wins over "*"),
        # panic locations without file, line and column (-Zlocation-detail=none: one shared
        # Location instead of a relocated one per bounds check; the guard's log line never printed
        # them, only the panic's message, which stays), and `{:?}` formatting compiled to nothing
        # (-Zfmt-debug=none: no Debug impls nor the unicode tables of str's; our log lines name
        # things with Display or `name()`, never Debug; a panic message may lose a Debug value)
        rustup component list --installed | grep '^rust-src' >/dev/null || rustup component add rust-src
        env+=(RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=target/build-std-size "RUSTFLAGS=${RUSTFLAGS:-} -Zlocation-detail=none -Zfmt-debug=none")
        std=(-Zbuild-std=std,panic_unwind -Zbuild-std-features=panic-unwind,optimize_for_size,backtrace-trace-only
             --config "profile.$profile.package.\"*\".opt-level=\"z\"")
        out=target/build-std-size
    fi
    if [[ "$t" == *-android ]]; then
        # the shared library from the same compile
        types=staticlib,cdylib
        local ndk="${ANDROID_NDK_HOME:-${ANDROID_NDK_ROOT:-}}"
        local ndk_clang="$ndk/toolchains/llvm/prebuilt/linux-x86_64/bin/$(clang_triple "$t")-clang"
        if [ -n "$ndk" ] && [ -x "$ndk_clang" ]; then
            env+=("CC_$tu=$ndk_clang")
            linker="$ndk_clang" how="linked by the NDK's clang"
        else
            # no NDK: zig's clang + lld, stub bionic libraries, libunwind from source
            android_toolchain "$t" "$WORK/android/$t"
            linker="$WORK/android/$t/zig-cc" how="linked by zig cc (no NDK)"
        fi
        env+=("CARGO_TARGET_${tu^^}_LINKER=$linker")
    fi
    echo "== cargo: $t $v (std $(std_for_size "$t" && echo "built for size" || echo "from ${STD_FROM[$t]}"), profile $profile${lto[*]:+, fat LTO})"
    env "${env[@]}" cargo rustc "${pkg[@]}" "${std[@]}" "${lto[@]}" "${feat[@]}" --profile "$profile" --lib --crate-type "$types" --target "$t" -j "$JOBS" --quiet "${soname[@]}"
    mkdir -p "$dir"
    cp "$out/$t/$profile/lib$lib.a" "$dir/libggml_backend_rs.a"
    rm -f "$dir/libggml_backend_rs.so"
    [ -n "$how" ] || return 0
    # as an app packages it (the Android Gradle plugin strips native libraries); the unstripped
    # one stays in target/
    "$STRIP" --strip-all "$out/$t/$profile/lib$lib.so" -o "$dir/libggml_backend_rs.so"
    SO_STATE[$t]="$how"
}
# the drop-in without SIMD: for these targets (the budget is Android's; iOS on request)
NOSIMD_TARGETS=" ${CROSS_NOSIMD_TARGETS-aarch64-linux-android x86_64-linux-android} "
variants() { if [[ "$NOSIMD_TARGETS" == *" $1 "* ]]; then echo full no-simd; else echo full; fi; }
for t in "${TARGETS[@]}"; do for v in $(variants "$t"); do build "$t" "$v"; done; done

# --- 3. checks --------------------------------------------------------------------------------
# The exports every build must carry: both prefixes of src/ffi/exports.list (build.rs generates
# the export layers from it), cross-checked with the Linux .so when one is built.
# (a line's revision tags: `all` or a comma list of lm, wsp, lm26, wsp26; the default build is lm + wsp)
awk '!/^[ \t]*(#|$)/ { s = $0; sub(/^[ \t]*[a-z0-9,]+[ \t]+[a-z]+[ \t]+/, "", s); sub(/[ \t]*\(.*/, "", s);
     n = split($1, t, ","); lm = ($1 == "all"); wsp = ($1 == "all");
     for (i = 1; i <= n; i++) { if (t[i] == "lm") lm = 1; if (t[i] == "wsp") wsp = 1 }
     if (lm) print "lm_ggml_backend_" s; if (wsp) print "wsp_ggml_backend_" s }' \
    src/ffi/exports.list | sort -u >"$WORK/expected.txt"
if [ -f target/release/libggml_backend_rs.so ]; then
    "$NM" -D --defined-only target/release/libggml_backend_rs.so | awk '$3 ~ /^(lm|wsp)_/ {print $3}' \
        | sort -u | diff -q - "$WORK/expected.txt" >/dev/null \
        || { echo "cross.sh: target/release/libggml_backend_rs.so exports differ from src/ffi/exports.list" >&2; exit 1; }
fi
# What the phones' libc, libm, libdl and pthread provide, approximated by the names glibc exports
# (bionic and libSystem implement the same POSIX/C names), plus each platform's own below.
"$NM" -D --defined-only "$(gcc -print-file-name=libc.so.6)" "$(gcc -print-file-name=libm.so.6)" 2>/dev/null \
    | awk 'NF == 3 {sub(/@.*/, "", $3); print $3}' | sort -u >"$WORK/glibc.txt"
# bionic-only names Rust's std and libc crate use; the unwinder is the NDK's libunwind.a
ANDROID_EXTRA='^(__errno|__system_property_get|android_set_abort_message|__android_log_.*|_Unwind_.*)$'
# the C++ runtime names src/host_try.cpp references weakly (its try/catch around the registry's
# calls into backends): resolved by the app's C++ runtime when it has one, NULL otherwise
CXX_WEAK='__gxx_personality_v0|__cxa_begin_catch|__cxa_end_catch|__cxa_current_exception_type|_ZSt9terminatev'
ANDROID_EXTRA="${ANDROID_EXTRA%)\$}|$CXX_WEAK)\$"
# libSystem (libc, libm, libdyld, libdispatch, libunwind, mach, copyfile, CommonCrypto's RNG)
APPLE_EXTRA='^(___gxx_personality_v0|___cxa_begin_catch|___cxa_end_catch|___cxa_current_exception_type|__ZSt9terminatev|___error|___assert_rtn|___stack_chk_.*|___sincosf_stret|__NSGet.*|__dyld_.*|__tlv_.*|__exit|__Unwind_.*|_mach_.*|_dispatch_.*|_copyfile_.*|_fcopyfile|_fclonefileat|_f?setattrlist|_pthread_.*_np|_getpeereid|_sysctlbyname|_memset_pattern(4|8|16)|_CCRandomGenerateBytes|_[a-z_0-9]+\$DARWIN_EXTSN)$'

# The Android shared library: ELF machine, SONAME, NEEDED only the device's libc/libm/libdl/liblog,
# every LOAD segment aligned for 16 KB pages, exactly the exports of both prefixes, the unwinder
# inside, no undefined symbol but bionic's and the host's ggml (weak). Sets SO_STATE[$t].
check_so() {
    local t="$1" so="$2" bad=0 m want=AArch64 needed align exports und host weak_bad others
    [ "${t%%-*}" = x86_64 ] && want="Advanced Micro Devices X86-64"
    local hdr dyn
    hdr=$("$READELF" -h "$so") dyn=$("$READELF" -d "$so")
    m=$(sed -n 's/^ *Machine: *//p' <<<"$hdr")
    [ "$m" = "$want" ] && grep -qE 'Type: +DYN ' <<<"$hdr" || { bad=1; echo "cross.sh: $so: machine '$m', want '$want' (or not a shared object)" >&2; }
    grep -q '(SONAME) *Library soname: \[libggml_backend_rs.so\]' <<<"$dyn" || { bad=1; echo "cross.sh: $so: no SONAME libggml_backend_rs.so" >&2; }
    needed=$(sed -n 's/.*(NEEDED) *Shared library: \[\(.*\)\]/\1/p' <<<"$dyn" | sort | tr '\n' ' ')
    for m in $needed; do [[ " libc.so libm.so libdl.so liblog.so " == *" $m "* ]] || { bad=1; echo "cross.sh: $so: NEEDED $m" >&2; }; done
    [[ " $needed" == *" libc.so "* ]] || { bad=1; echo "cross.sh: $so: libc.so not NEEDED" >&2; }
    align=$("$READELF" -l "$so" | awk '$1 == "LOAD" {print $NF}' | sort -u | tr '\n' ' ')
    [ "$align" = "0x4000 " ] || { bad=1; echo "cross.sh: $so: LOAD alignment $align (want 16384)" >&2; }
    "$NM" -D --defined-only "$so" | awk '{print $NF}' | sort -u >"$WORK/$t.so.exports"
    cmp -s "$WORK/$t.so.exports" "$WORK/expected.txt" || { bad=1; echo "cross.sh: $so: dynamic exports differ from src/ffi/exports.list: $(diff "$WORK/expected.txt" "$WORK/$t.so.exports" | grep '^[<>]' | head -5 | tr '\n' ' ')" >&2; }
    exports=$(comm -12 "$WORK/$t.so.exports" "$WORK/expected.txt" | wc -l)
    "$NM" -D --undefined-only "$so" | awk '{sub(/@.*/, "", $2); print $1, $2}' | sort -k2 >"$WORK/$t.so.undef"
    und=$(wc -l <"$WORK/$t.so.undef")
    host=$(awk '$2 ~ /^(lm|wsp)_ggml_/' "$WORK/$t.so.undef" | wc -l)
    weak_bad=$(awk '$2 ~ /^(lm|wsp)_ggml_/ && $1 != "w"' "$WORK/$t.so.undef" | wc -l)
    # bionic-only names (the unwinder is inside: no _Unwind_* may be left)
    awk '$2 !~ /^(lm|wsp)_ggml_/ {print $2}' "$WORK/$t.so.undef" | comm -23 - "$WORK/glibc.txt" \
        | grep -vE "^(__errno|__system_property_get|android_set_abort_message|__android_log_.*|$CXX_WEAK)\$" >"$WORK/$t.so.others" || true
    others=$(wc -l <"$WORK/$t.so.others")
    ((weak_bad == 0 && others == 0)) || { bad=1; echo "cross.sh: $so: undefined: $weak_bad host symbols not weak; not bionic's: $(tr '\n' ' ' <"$WORK/$t.so.others")" >&2; }
    SO_STATE[$t]="$( ((bad)) && echo FAIL || echo ok ) ${SO_STATE[$t]:-}: ELF ${want##* }, SONAME, NEEDED ${needed% }, LOAD align ${align% }, $exports exports, $und undefined ($host host, weak)"
    return "$bad"
}
is_sim() { [ "${1##*-}" = sim ] || [ "$1" = x86_64-apple-ios ]; }
macho_arch() { [ "${1%%-*}" = x86_64 ] && echo x86_64 || echo arm64; }
tbd_target() { is_sim "$1" && echo "$(macho_arch "$1")-ios-simulator" || echo arm64-ios; }
FAIL=0
declare -A ROW
check() {
    local t="$1" a="${2:-dist/$1/libggml_backend_rs.a}" u="" fmt="" plat="" exp="" und="" bad=0 m
    local nm="$WORK/$t.nm"
    "$NM" -g "$a" 2>/dev/null >"$nm"
    case "$t" in *-apple-*) u=_ ;; esac
    # object format and CPU of every member
    # host.c's object (cc's libggml_rs_host.a, bundled by rustc as <hash>-host.o)
    m="$("$AR" t "$a" | awk '/-host\.o$/ && !n++')"
    "$AR" x --output "$WORK" "$a" "$m"
    m="$WORK/$m"
    case "$t" in
        *-android)
            local want=AArch64; [ "${t%%-*}" = x86_64 ] && want="Advanced Micro Devices X86-64"
            fmt=$("$READELF" -h "$a" 2>/dev/null | sed -n 's/^ *Machine: *//p' | sort | uniq -c | awk '{$1=$1; print}')
            [ "$(echo "$fmt" | wc -l)" = 1 ] && [[ "$fmt" == *" $want" ]] || bad=1
            fmt="ELF64 ${want##* } x$(echo "$fmt" | cut -d' ' -f1)"
            # bionic's errno is __errno (glibc's: __errno_location)
            if grep -q ' U __errno$' "$nm" && ! grep -q ' U __errno_location$' "$nm"; then plat="bionic"; else plat="NOT bionic"; bad=1; fi
            ;;
        *-apple-*)
            fmt=$("$OBJDUMP" --macho --private-header "$a" 2>/dev/null | awk '$1 == "MH_MAGIC_64" {print $2, $5}' | sort | uniq -c | awk '{$1=$1; print}')
            local cpu=ARM64; [ "${t%%-*}" = x86_64 ] && cpu=X86_64
            [ "$(echo "$fmt" | wc -l)" = 1 ] && [[ "$fmt" == *" $cpu OBJECT" ]] || bad=1
            fmt="Mach-O $cpu x$(echo "$fmt" | cut -d' ' -f1)"
            # the platform of each object: LC_VERSION_MIN_IPHONEOS or LC_BUILD_VERSION's platform
            local p
            p=$("$OBJDUMP" --macho --private-headers "$a" 2>/dev/null | awk '
                /cmd LC_VERSION_MIN_IPHONEOS/ {print "IOS"} /cmd LC_VERSION_MIN_/ && !/IPHONEOS/ {print "OTHER"}
                /cmd LC_BUILD_VERSION/ {b = 1} b && $1 == "platform" {print toupper($2); b = 0}' | sort | uniq -c | awk '{$1=$1; print}')
            local want=IOS; is_sim "$t" && want=IOSSIMULATOR
            [ "$(echo "$p" | wc -l)" = 1 ] && [[ "$p" == *" $want" ]] || bad=1
            plat="$(echo "$p" | tr '\n' ' ')"
            ;;
    esac
    fmt="$fmt; $(file -b "$m" | cut -d, -f1 | tr -d '|')"
    # every export of both prefixes, defined as code
    awk -v u="$u" '$2 == "T" && substr($3, 1, length(u)) == u {print substr($3, length(u) + 1)}' "$nm" \
        | grep -E '^(lm|wsp)_' | sort -u >"$WORK/$t.exports"
    local missing extra
    missing=$(comm -23 "$WORK/expected.txt" "$WORK/$t.exports" | wc -l)
    extra=$(comm -13 "$WORK/expected.txt" "$WORK/$t.exports" | wc -l)
    exp="$(comm -12 "$WORK/expected.txt" "$WORK/$t.exports" | wc -l)/$(wc -l <"$WORK/expected.txt")"
    ((missing == 0 && extra == 0)) || { bad=1; exp="$exp, missing $missing, extra $extra"; }
    # undefined after the archive's own definitions: host ggml (must be weak), platform libs, else bad
    awk 'NF == 3 && $2 !~ /^[Uwv]$/ {print $3}' "$nm" | sort -u >"$WORK/$t.def"
    awk 'NF == 2 && $1 ~ /^[Uwv]$/ {print $2}' "$nm" | sort -u | comm -23 - "$WORK/$t.def" >"$WORK/$t.undef"
    local host weak_bad plat_re others
    host=$(grep -cE "^${u}(lm|wsp)_ggml_" "$WORK/$t.undef" || true)
    case "$t" in
        *-android) weak_bad=$(grep -cE ' U (lm|wsp)_ggml_' "$nm" || true); plat_re="$ANDROID_EXTRA" ;;
        *) weak_bad=$("$NM" -m "$a" 2>/dev/null | grep -cE '\(undefined\) external _(lm|wsp)_ggml_' || true); plat_re="$APPLE_EXTRA" ;;
    esac
    grep -vE "^${u}(lm|wsp)_ggml_" "$WORK/$t.undef" | sed "s/^$u//" | sort -u | comm -23 - "$WORK/glibc.txt" \
        | sed "s/^/$u/" | grep -vE "$plat_re" >"$WORK/$t.others" || true
    others=$(wc -l <"$WORK/$t.others")
    und="$(wc -l <"$WORK/$t.undef") undefined: $host host (weak, $weak_bad not weak), $others unknown"
    ((weak_bad == 0 && others == 0)) || bad=1
    if ((others)); then echo "cross.sh: $t: undefined outside libc/libm/libdl/pthread/unwinder: $(tr '\n' ' ' <"$WORK/$t.others")" >&2; fi
    # Mach-O needs a definition even for weak references at link time: the flags an iOS app adds
    # for the host symbols it does not link (ld64's -U)
    if [ -n "$u" ]; then
        grep -E "^_(lm|wsp)_ggml_|^_($CXX_WEAK)\$" "$WORK/$t.undef" | sed 's/^/-Wl,-U,/' >"dist/$t/host-weak.ldflags"
        # a libSystem stub with the platform names above, for the test links of step 4 (it proves
        # the archive links as Mach-O with those flags, not what the real libSystem exports)
        { printf -- "--- !tapi-tbd\ntbd-version: 4\ntargets: [ %s ]\ninstall-name: '/usr/lib/libSystem.B.dylib'\nexports:\n  - targets: [ %s ]\n    symbols: [ " \
              "$(tbd_target "$t")" "$(tbd_target "$t")"
          { echo dyld_stub_binder; grep -vE "^_(lm|wsp)_ggml_" "$WORK/$t.undef"; } | paste -sd, - | sed 's/,/, /g'
          printf " ]\n...\n"; } >"$WORK/$t.libSystem.tbd"
    fi
    local so="dist/$t/libggml_backend_rs.so"
    if [ -f "$so" ] && [ -z "${2:-}" ]; then
        check_so "$t" "$so" || bad=1
    fi
    ((bad)) && FAIL=1
    ROW[$t]="$( ((bad)) && echo FAIL || echo ok )|$fmt|$plat|$exp|$und|${SO_STATE[$t]:-n/a (static only on iOS)}"
}
# The checks must tell the targets apart: each archive checked as its sibling has to fail (run
# first: the real checks below overwrite what these leave in target/cross/).
built() { [[ " ${TARGETS[*]} " == *" $1 "* ]]; }
for pair in aarch64-linux-android:x86_64-linux-android aarch64-apple-ios:aarch64-apple-ios-sim aarch64-apple-ios-sim:x86_64-apple-ios; do
    x="${pair%:*}" y="${pair#*:}"
    built "$x" && built "$y" || continue
    for swap in "$x $y" "$y $x"; do
        set -- $swap
        if ( FAIL=0; check "$2" "dist/$1/libggml_backend_rs.a" 2>/dev/null; exit "$FAIL" ); then
            echo "cross.sh: the checks accept the $1 archive as $2" >&2; FAIL=1
        fi
        if [ -f "dist/$1/libggml_backend_rs.so" ] && ( check_so "$2" "dist/$1/libggml_backend_rs.so" 2>/dev/null ); then
            echo "cross.sh: the checks accept the $1 shared library as $2" >&2; FAIL=1
        fi
    done
done
for t in "${TARGETS[@]}"; do check "$t"; done
# the no-SIMD builds: the same checks (a subshell: check's own bookkeeping is per target)
for t in "${TARGETS[@]}"; do
    [[ "$(variants "$t")" == *no-simd* ]] || continue
    d="dist/$t/no-simd" r="ok"
    ( FAIL=0; check "$t" "$d/libggml_backend_rs.a" >/dev/null; exit "$FAIL" ) || r="FAIL (archive)"
    if [ -f "$d/libggml_backend_rs.so" ]; then check_so "$t" "$d/libggml_backend_rs.so" || r="FAIL (.so)"; fi
    [ "$r" = ok ] || FAIL=1
    ROW["$t no-simd"]="$r|no-simd build: archive and .so checked as above|||||${SO_STATE[$t]:-}"
done
# The fat simulator archive (arm64 + x86_64 in one universal file, as lipo -create makes it; no
# lipo here, so written directly: a big-endian fat header, then each archive 2^14-aligned) for the
# xcframework's one simulator slice, checked: both architectures, each slice byte-identical to
# its thin archive, one set of host-weak flags.
if built aarch64-apple-ios-sim && built x86_64-apple-ios; then
    mkdir -p dist/ios-simulator
    python3 - dist/ios-simulator/libggml_backend_rs.a dist/aarch64-apple-ios-sim/libggml_backend_rs.a dist/x86_64-apple-ios/libggml_backend_rs.a <<'PY'
import struct, sys
out, slices = sys.argv[1], [(0x0100000C, 0, sys.argv[2]), (0x01000007, 3, sys.argv[3])]  # ARM64 ALL, X86_64 ALL
data = [open(f, "rb").read() for _, _, f in slices]
align, off, arch = 14, 4096, []
for (cpu, sub, _), d in zip(slices, data):
    off = (off + (1 << align) - 1) & ~((1 << align) - 1)
    arch.append((cpu, sub, off, len(d), align)); off += len(d)
with open(out, "wb") as fh:
    fh.write(struct.pack(">II", 0xCAFEBABE, len(arch)))
    for a in arch: fh.write(struct.pack(">iiIII", *a))
    for a, d in zip(arch, data): fh.seek(a[2]); fh.write(d)
PY
    fat_ok=1
    [ "$("$OBJDUMP" --macho --universal-headers dist/ios-simulator/libggml_backend_rs.a | awk '$1 == "cputype" {print $2}' | sort | tr '\n' ' ')" = "CPU_TYPE_ARM64 CPU_TYPE_X86_64 " ] || fat_ok=0
    for t in aarch64-apple-ios-sim x86_64-apple-ios; do
        "$OBJDUMP" --macho --arch="$(macho_arch "$t")" --archive-headers dist/ios-simulator/libggml_backend_rs.a >"$WORK/fat.$t" 2>&1 || fat_ok=0
        "$OBJDUMP" --macho --archive-headers "dist/$t/libggml_backend_rs.a" 2>&1 | diff -q - <(sed 's|dist/ios-simulator/libggml_backend_rs.a|dist/'"$t"'/libggml_backend_rs.a|; s/ (architecture [a-z0-9_]*)//' "$WORK/fat.$t") >/dev/null || fat_ok=0
    done
    python3 - dist/ios-simulator/libggml_backend_rs.a dist/aarch64-apple-ios-sim/libggml_backend_rs.a dist/x86_64-apple-ios/libggml_backend_rs.a <<'PY' || fat_ok=0
import struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack(">II", b[:8])[1]
got = [b[o:o + z] for _, _, o, z, _ in (struct.unpack(">iiIII", b[8 + 20 * i:28 + 20 * i]) for i in range(n))]
assert got == [open(f, "rb").read() for f in sys.argv[2:]]
PY
    cmp -s dist/aarch64-apple-ios-sim/host-weak.ldflags dist/x86_64-apple-ios/host-weak.ldflags || fat_ok=0
    cp dist/aarch64-apple-ios-sim/host-weak.ldflags dist/ios-simulator/
    ((fat_ok)) && echo "cross.sh: dist/ios-simulator/libggml_backend_rs.a: fat arm64 + x86_64 simulator archive, slices identical to the thin ones" \
        || { echo "cross.sh: the fat simulator archive is wrong" >&2; FAIL=1; }
fi
git diff --quiet -- include/ || { echo "cross.sh: the cross builds changed include/ (headers must not depend on the target)" >&2; FAIL=1; }

printf '\n%-22s | %-4s | %s\n' target ok 'format; host.c object | platform | exports | undefined | .so'
for t in "${TARGETS[@]}"; do
    printf '%-22s | %s\n' "$t" "${ROW[$t]//|/ | }"
    [ -z "${ROW["$t no-simd"]:-}" ] || printf '%-22s | %s\n' "  (no-simd)" "${ROW["$t no-simd"]//|/ | }"
done

# --- 4. sizes ---------------------------------------------------------------------------------
# Like with like: the archive as shipped (debug info stripped) holds Rust's std, which an app
# link mostly drops, so the figure that matters is what a final link keeps: a shared object
# linked from the archive with --gc-sections / -dead_strip, rooted at the API (-u), next to the
# same link of the stock two files compiled for the same target. The stock objects' C++ library
# calls stay undefined there (the app has libc++ anyway); Rust's std code is inside our figure.
kib() { awk -v b="$1" 'BEGIN {printf "%.0f", b / 1024}'; }
# bytes of the loaded sections (code, read-only data, unwind tables, data, relocations; not bss)
text_data() { "$SIZE" -A "$1" | awk 'NR > 2 && $3 > 0 && $1 !~ /bss|common/ {s += $2} END {print s + 0}'; }
roots() { # -u flags for a symbol list (Mach-O names get their underscore)
    local u="$1"; shift
    grep -hE "$@" | sed "s/^/-u $u/" | tr '\n' ' '
}
link_kept() { # target, output, archive/objects..., then "--" and -u roots: text+data bytes kept
    local t="$1" out="$2"; shift 2
    local inputs=() r
    while [ "$1" != -- ]; do inputs+=("$1"); shift; done
    shift
    local min="$IOS_MIN"
    is_sim "$t" && min="$IOS_SIM_MIN"
    case "$t" in
        *-android) "$LLD" -flavor gnu -shared --gc-sections --exclude-libs=ALL -z undefs -m "$([ "${t%%-*}" = x86_64 ] && echo elf_x86_64 || echo aarch64linux)" \
                       "$@" "${inputs[@]}" -o "$out" 2>"$out.log" ;;
        *) r="$out.exports"; printf '%s\n' "$@" | awk '$1 != "-u"' >"$r"
           "$LLD" -flavor darwin -arch "$(macho_arch "$t")" -platform_version "$(is_sim "$t" && echo ios-simulator || echo ios)" "$min" "$min" \
               -dylib -dead_strip -exported_symbols_list "$r" "$@" "${inputs[@]}" "$WORK/$t.libSystem.tbd" \
               $(sed 's/^-Wl,//; s/,/ /g' "dist/$t/host-weak.ldflags") -o "$out" 2>"$out.log" ;;
    esac || { echo "cross.sh: $t: test link failed: $out.log" >&2; grep -m5 error "$out.log" >&2; echo LINK-FAILED; return 0; }
    text_data "$out"
}
PKG="$ROOT/.cache/hosts"
stock_objs() { # compile the stock two files of package $2 for target $1 with the package's flags
    local t="$1" pkg="$2" dir="$WORK/stock/$1/$2" std=c++11 inc=() f
    mkdir -p "$dir"
    [ "$pkg" = wsp ] && std=c++17
    case "$t" in
        aarch64-*) inc=(-isystem /usr/aarch64-linux-gnu/include) ;;
        x86_64-*) inc=(-isystem /usr/include/x86_64-linux-gnu -isystem /usr/include) ;;
    esac
    for f in ggml-backend ggml-backend-reg; do
        [ -f "$dir/$f.o" ] && [ "$dir/$f.o" -nt "$PKG/$pkg/package/cpp/$f.cpp" ] && continue
        # android/src/main/CMakeLists.txt's flags; C++ headers: libc++ over glibc's C headers
        clang++ --target="$(clang_triple "$t")" -std=$std -O3 -DNDEBUG -fvisibility=hidden -fvisibility-inlines-hidden \
            -ffunction-sections -fdata-sections -pthread -nostdinc -nostdinc++ -isystem "$(libcxx)" \
            -isystem "$(clang -print-resource-dir)/include" "${inc[@]}" -I "$PKG/$pkg/package/cpp" -I "$PKG/$pkg/package/cpp/ggml-cpu" \
            -c "$PKG/$pkg/package/cpp/$f.cpp" -o "$dir/$f.o"
    done
    echo "$dir/ggml-backend.o $dir/ggml-backend-reg.o"
}
# What each part costs in a kept link: symbol sizes of the unstripped link by origin (demangled
# names), the unwind tables, and what no symbol covers (mostly constant data); into
# dist/size-parts.tsv (target variant part kib).
size_parts() { # target variant linked-file
    local t="$1" v="$2" f="$3" total tables
    total=$(text_data "$f")
    tables=$("$SIZE" -A "$f" | awk '$1 ~ /^(\.eh_frame|\.eh_frame_hdr|\.gcc_except_table|__eh_frame|__unwind_info|__gcc_except_tab)$/ {s += $2} END {print s + 0}')
    "$NM" -S -C --radix=d --defined-only "$f" 2>/dev/null | awk -v t="$t" -v v="$v" -v total="$total" -v tables="$tables" '
        NF >= 4 && $3 !~ /^[bBuU]$/ {
            n = $0; sub(/^[^ ]+ [^ ]+ [^ ]+ /, "", n); sz = $2 + 0
            if (n ~ /ggml_backend_rs::simd|ggml_rs_kernels|matrixmultiply/) p = "SIMD backend (src/simd, kernels/, matrixmultiply)"
            else if (n ~ /ggml_backend_rs::(sched|alloc|graph)/) p = "scheduler and graph allocator"
            else if (n ~ /ggml_backend_rs|^(lm|wsp)_ggml_backend_|ggml_rs_/) p = "backend layer and exports"
            else if (n ~ /_Unwind_|__unw_|libunwind|^unw_/) p = "unwinder (libunwind)"
            else if (n ~ /addr2line|gimli|miniz_oxide|rustc_demangle|[^a-z]object::|backtrace/) p = "Rust std: backtrace printer"
            else if (n ~ /std::|core::|alloc::|hashbrown|panic_unwind|__rust|__rdl|__rg_|compiler_builtins|parking_lot|once_cell|lock_api/) p = "Rust std, core, alloc, parking_lot"
            else p = "other symbols"
            seen[p] += sz; sum += sz
        }
        END {
            for (p in seen) printf "%s\t%s\t%s\t%.0f\n", t, v, p, seen[p] / 1024
            printf "%s\t%s\t%s\t%.0f\n", t, v, "unwind tables (.eh_frame, .gcc_except_table)", tables / 1024
            printf "%s\t%s\t%s\t%.0f\n", t, v, "unattributed (constant data, relocations, PLT, dynamic symbols)", (total - tables - sum) / 1024
            printf "%s\t%s\t%s\t%.0f\n", t, v, "total kept", total / 1024
        }' | sort -t$'\t' -k1,2 -k4,4nr >>dist/size-parts.tsv
}
if [ "${CROSS_SIZES:-1}" = 1 ]; then
    have_stock=0
    [ -f "$PKG/lm/package/cpp/ggml-backend.cpp" ] && [ -f "$PKG/wsp/package/cpp/ggml-backend.cpp" ] && have_stock=1
    echo
    echo "sizes in KiB (kept: loaded sections of a --gc-sections / -dead_strip link rooted at the API; .a: file, and without debug info and embedded bitcode; .so: the stripped file)"
    printf '%-22s | %-7s | %9s | %9s | %-26s | %6s | %s\n' target variant ".a" "stripped" "kept: lm / wsp / both" ".so" "kept, 1 call"
    printf 'target\tvariant\tlm_kib\twsp_kib\tboth_kib\tso_kib\n' >dist/sizes.tsv
    printf 'target\tvariant\tpart\tkib\n' >dist/size-parts.tsv
    for t in "${TARGETS[@]}"; do
      u=""
      case "$t" in *-apple-*) u=_ ;; esac
      for v in $(variants "$t"); do
        d="dist/$t"; [ "$v" = no-simd ] && d="dist/$t/no-simd"
        a="$d/libggml_backend_rs.a"
        # debug info and the LLVM bitcode rustup's std objects embed (linkers ignore both)
        case "$t" in
            *-apple-*) "$STRIP" --strip-debug --remove-section=__LLVM,__bitcode --remove-section=__LLVM,__cmdline "$a" -o "$WORK/$t.stripped.a" ;;
            *) "$STRIP" --strip-debug --remove-section=.llvmbc --remove-section=.llvmcmd "$a" -o "$WORK/$t.stripped.a" ;;
        esac
        o="$WORK/link-$t-$v"
        lm=$(link_kept "$t" "$o-lm" "$a" -- $(roots "$u" '^lm_' "$WORK/expected.txt"))
        wsp=$(link_kept "$t" "$o-wsp" "$a" -- $(roots "$u" '^wsp_' "$WORK/expected.txt"))
        both=$(link_kept "$t" "$o-both" "$a" -- $(roots "$u" '' "$WORK/expected.txt"))
        one=$(link_kept "$t" "$o-one" "$a" -- -u "${u}lm_ggml_backend_cpu_buffer_type")
        [[ "$lm $wsp $both $one" != *LINK-FAILED* ]] || { FAIL=1; lm=0 wsp=0 both=0 one=0; }
        so="-"; [ -f "$d/libggml_backend_rs.so" ] && so=$(kib "$(stat -c %s "$d/libggml_backend_rs.so")")
        printf '%-22s | %-7s | %9s | %9s | %-26s | %6s | %s\n' "$t" "$v" "$(kib "$(stat -c %s "$a")")" \
            "$(kib "$(stat -c %s "$WORK/$t.stripped.a")")" "$(kib "$lm") / $(kib "$wsp") / $(kib "$both")" "$so" "$(kib "$one")"
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$v" "$(kib "$lm")" "$(kib "$wsp")" "$(kib "$both")" "$so" >>dist/sizes.tsv
        [[ "$both" == LINK-FAILED ]] || size_parts "$t" "$v" "$o-both"
      done
      if ((have_stock)) && [[ "$t" == *-android ]]; then
          o="$WORK/link-$t"
          slm=$(stock_objs "$t" lm) swsp=$(stock_objs "$t" wsp)
          # stock exports: what each package's two objects define of the backend API
          s1=$(link_kept "$t" "$o-slm" $slm -- $("$NM" -g --defined-only $slm | awk '{print $3}' | grep -E '^lm_ggml_backend_' | sed 's/^/-u /'))
          s2=$(link_kept "$t" "$o-swsp" $swsp -- $("$NM" -g --defined-only $swsp | awk '{print $3}' | grep -E '^wsp_ggml_backend_' | sed 's/^/-u /'))
          printf '%-22s | %-7s | %9s | %9s | %-26s | %6s |\n' "$t" stock - - "$(kib "$s1") / $(kib "$s2") / $(kib $((s1 + s2)))" -
          printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$t" stock "$(kib "$s1")" "$(kib "$s2")" "$(kib $((s1 + s2)))" - >>dist/sizes.tsv
      fi
    done
    # the budgets (issues 18, 35): aarch64-linux-android, both prefixes kept, as shipped (std built
    # for size); past them the run fails. With rustup's std (CROSS_STD_SIZE=0) they are only shown.
    while IFS=$'\t' read -r t v lm wsp both so; do
        [ "$t" = aarch64-linux-android ] || continue
        case "$v" in full) max=708 ;; no-simd) max=350 ;; *) continue ;; esac
        if ((both <= max)); then echo "cross.sh: size: $t $v keeps $both KiB, within the budget of $max KiB"
        elif std_for_size "$t"; then echo "cross.sh: size: $t $v keeps $both KiB, budget $max KiB: over by $((both - max)) KiB (dist/size-parts.tsv says where it goes)" >&2; FAIL=1
        else echo "cross.sh: size: $t $v keeps $both KiB with rustup's std (budget $max KiB, for std built for size: not checked)"; fi
    done <dist/sizes.tsv
    echo "(dist/sizes.tsv, dist/size-parts.tsv)"
fi
echo
((FAIL == 0)) && echo "cross.sh: all checks passed" || { echo "cross.sh: a check FAILED (table above)" >&2; exit 1; }
