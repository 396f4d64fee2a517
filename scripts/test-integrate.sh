#!/usr/bin/env bash
# test-integrate.sh <lm|wsp|cui|lm12|wsp7> [--lib PATH] [--work DIR] -- scripts/integrate.sh on the
# npm tarball (.cache/npm) of llama.rn 0.4.4 (lm), whisper.rn 0.4.3 (wsp), cui-llama.rn 1.12.2
# (cui), llama.rn 0.12.9 (lm12) or whisper.rn 0.7.4 (wsp7), extracted into DIR/<tag>:
#   1. patch, then check the build files, cpp/ and the copied payload;
#      the podspec is evaluated in ruby (tests_c/integrate/podspec_eval.rb);
#   2. patch again: byte for byte no change; refusals (unknown version, a build file without an
#      expected line, no libraries, --revert of an unpatched package) change nothing;
#   3. build the patched package with its own android/src/main/CMakeLists.txt on Linux
#      (-DANDROID_ABI=x86_64, host compiler, -O0 appended to its flags: a compile-and-link check,
#      nothing runs it; GGML_RS_INTEGRATE_O3=1 keeps its -O3): every library target compiled and linked with
#      -Wl,--no-undefined against PATH (the Linux x86_64 libggml_backend_rs.a stands in for the
#      x86_64-linux-android one); configure for arm64-v8a (every target links its ABI's library)
#      and for armeabi-v7a (no library: configure must stop with the message);
#   4. revert: diff -r against a pristine extraction shows nothing.
# Stand-ins (the Linux build has no NDK): <android/log.h>, <android/asset_manager*.h> and stub
# liblog.so / libandroid.so from tests_c/integrate; jni.h from the installed JDK; -D_GNU_SOURCE
# for C (glibc), -include cmath for C++ (libstdc++); the arm64-v8a and iOS "libraries" are small
# marker files (never linked; they only check where each lands).
# The 2026 packages (cui, lm12, wsp7) need PATH built with --features lm-2026,wsp-2026 and our
# include/<p>-2026 headers. Their Android builds are React Native module builds (fbjni, ReactAndroid,
# JSI) that cannot compile without an NDK and React Native: step 3 configures them (stub
# ReactAndroid / fbjni packages from tests_c/integrate/cmake) and checks the generated build:
# no ggml-backend.cpp / -reg.cpp compiled, every library target linked with its ABI's library,
# an ABI without one stopped at configure. A library without the 2026 exports is refused.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${1:-}"
shift || true
lib="$ROOT/target/release/libggml_backend_rs.a"
work="$ROOT/build/integrate"
while (($#)); do
  case "$1" in
    --lib) lib="$2"; shift ;;
    --work) work="$2"; shift ;;
    *) echo "test-integrate.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

tag="$prefix"
rev26=0
case "$tag" in
  lm)  tgz="$ROOT/.cache/npm/llama.rn-0.4.4.tgz"; podspec=llama-rn.podspec; libdir=RNLLAMA_LIB_DIR
       x86_targets=(rnllama rnllama_x86_64); arm64_targets=8 ;;
  wsp) tgz="$ROOT/.cache/npm/whisper.rn-0.4.3.tgz"; podspec=whisper-rn.podspec; libdir=RNWHISPER_LIB_DIR
       x86_targets=(rnwhisper rnwhisper_x86_64); arm64_targets=2 ;;
  cui|lm12)
       prefix=lm; rev26=1; podspec=llama-rn.podspec; libdir=RNLLAMA_LIB_DIR
       if [[ "$tag" == cui ]]; then tgz="$ROOT/.cache/npm/cui-llama.rn-1.12.2.tgz"; else tgz="$ROOT/.cache/npm/llama.rn-0.12.9.tgz"; fi
       cmake_rel=android/src/main/rnllama/CMakeLists.txt
       x86_targets=(rnllama rnllama_x86_64); arm64_targets=7 ;;
  wsp7) prefix=wsp; rev26=1; podspec=whisper-rn.podspec; libdir=RNWHISPER_LIB_DIR
       tgz="$ROOT/.cache/npm/whisper.rn-0.7.4.tgz"; cmake_rel=android/src/main/CMakeLists.txt
       x86_targets=(rnwhisper rnwhisper_x86_64); arm64_targets=3 ;;
  *) echo "usage: test-integrate.sh <lm|wsp|cui|lm12|wsp7> [--lib PATH] [--work DIR]" >&2; exit 2 ;;
esac
incdir="$prefix"
((rev26)) && incdir="$prefix-2026"

fail() { echo "test-integrate[$tag]: FAIL: $*" >&2; exit 1; }
ok() { echo "test-integrate[$tag]: ok: $*"; }
[[ -s "$tgz" ]] || fail "$tgz missing (run scripts/fetch-hosts.sh)"
[[ -s "$lib" ]] || fail "$lib missing (cargo build --release)"
INTEGRATE=(bash "$ROOT/scripts/integrate.sh")

W="$work/$tag"
rm -rf "$W"
mkdir -p "$W/pristine" "$W/pkg" "$W/dist"
tar xzf "$tgz" -C "$W/pristine"
tar xzf "$tgz" -C "$W/pkg"
PKG="$W/pkg/package"
MAIN="$PKG/android/src/main"
if [[ "$tag" == cui || "$tag" == lm12 ]]; then
  # what postinstall (install/download-native-artifacts.js) leaves when RNLLAMA_SKIP_POSTINSTALL is
  # not set: prebuilt natives with the stock backend, and their headers; the patch must ignore them
  for r in "$W/pristine/package" "$PKG"; do
    mkdir -p "$r/android/src/main/jniLibs/arm64-v8a" "$r/ios/rnllama.xcframework/ios-arm64/rnllama.framework/Headers"
    printf 'prebuilt stand-in\n' >"$r/android/src/main/jniLibs/arm64-v8a/librnllama.so"
    cp "$r/cpp/ggml-backend.h" "$r/ios/rnllama.xcframework/ios-arm64/rnllama.framework/Headers/ggml-backend.h"
  done
fi

# Stand-in dist/: the real Linux library as x86_64-linux-android; marker files elsewhere.
D="$W/dist"
for t in x86_64-linux-android aarch64-linux-android aarch64-apple-ios aarch64-apple-ios-sim; do
  mkdir -p "$D/$t"
done
cp "$lib" "$D/x86_64-linux-android/libggml_backend_rs.a"
for t in aarch64-linux-android aarch64-apple-ios aarch64-apple-ios-sim; do
  printf 'stand-in for %s\n' "$t" >"$D/$t/libggml_backend_rs.a"
done
for t in aarch64-apple-ios aarch64-apple-ios-sim; do
  printf -- '-Wl,-U,_%s_ggml_backend_metal_reg\n-Wl,-U,_%s_ggml_init\n' "$prefix" "$prefix" >"$D/$t/host-weak.ldflags"
done

# expect_refusal <what> <dir to stay unchanged> <integrate args...>: non-zero, one line, no change.
expect_refusal() {
  local what="$1" dir="$2"
  shift 2
  rm -rf "$W/before"
  cp -a "$dir" "$W/before"
  if "${INTEGRATE[@]}" "$@" >"$W/refusal.out" 2>"$W/refusal.err"; then
    fail "$what: integrate.sh succeeded"
  fi
  [[ ! -s "$W/refusal.out" && "$(wc -l <"$W/refusal.err")" -eq 1 ]] ||
    fail "$what: expected one line on stderr, got: $(cat "$W/refusal.out" "$W/refusal.err")"
  diff -r "$W/before" "$dir" >/dev/null || fail "$what: the package changed"
  ok "refused $what: $(cat "$W/refusal.err")"
}

# --- 1. patch --------------------------------------------------------------------------------
"${INTEGRATE[@]}" --dist "$D" "$PKG" >"$W/apply1.out"
grep -q "patched" "$W/apply1.out" || fail "first apply: $(cat "$W/apply1.out")"
CM="$MAIN/CMakeLists.txt"
((rev26)) && CM="$PKG/$cmake_rel"
if grep -n "ggml-backend\(-reg\)\?\.cpp" "$CM" | grep -v "^[0-9]*:#"; then
  fail "$CM still lists a ggml-backend source"
fi
grep -q "^include_directories(BEFORE \${GGML_BACKEND_RS_DIR}/include)$" "$CM" || fail "our include dir not in $CM"
grep -q '^set(GGML_BACKEND_RS_LIB ${GGML_BACKEND_RS_DIR}/android/${ANDROID_ABI}/libggml_backend_rs.a)$' "$CM" ||
  fail "no per-ABI library in $CM"
case "$tag" in
  lm|wsp)
    [[ "$(grep -c 'target_link_libraries(${target_name} ${GGML_BACKEND_RS_LIB} ${LOG_LIB} android)' "$CM")" -eq 1 &&
       "$(grep -c 'target_link_libraries' "$CM")" -eq 1 ]] || fail "the one target_link_libraries of $CM does not link the library" ;;
  cui|lm12)
    [[ "$(grep -c 'target_link_libraries(${target_name} PRIVATE ${GGML_BACKEND_RS_LIB} ${LOG_LIB} android)' "$CM")" -eq 1 ]] ||
      fail "the library target of $CM does not link the library"
    grep -q '^def isRNLlamaBuildFromSource = true // ggml-backend-rs' "$PKG/android/build.gradle" ||
      fail "build.gradle: not forced to build from source" ;;
  wsp7)
    [[ "$(grep -c 'target_link_libraries(${target_name} ${GGML_BACKEND_RS_LIB}) # ggml-backend-rs' "$CM")" -eq 1 ]] ||
      fail "the library target of $CM does not link the library" ;;
esac
if ((rev26)); then
  # host code of the 2026 revision stays: the meta backend and the dlopen helpers
  [[ -f "$PKG/cpp/ggml-backend-meta.cpp" && -f "$PKG/cpp/ggml-backend-dl.cpp" && -f "$PKG/cpp/ggml-backend-dl.h" ]] ||
    fail "cpp/ggml-backend-meta.cpp / -dl.cpp / -dl.h must stay"
  left="$(find "$PKG/cpp" -name 'ggml-backend*' ! -name 'ggml-backend-meta.cpp' ! -name 'ggml-backend-dl.*')"
else
  left="$(find "$PKG/cpp" -name 'ggml-backend*')"
fi
[[ -z "$left" ]] || fail "left in cpp/: $left"
for h in "$ROOT/include/$incdir/"*.h; do
  cmp -s "$h" "$PKG/ggml-backend-rs/include/$(basename "$h")" || fail "payload header $(basename "$h") differs"
done
cmp -s "$lib" "$PKG/ggml-backend-rs/android/x86_64/libggml_backend_rs.a" || fail "x86_64 library not copied"
cmp -s "$D/aarch64-linux-android/libggml_backend_rs.a" "$PKG/ggml-backend-rs/android/arm64-v8a/libggml_backend_rs.a" ||
  fail "arm64-v8a library not copied"
[[ ! -e "$PKG/ggml-backend-rs/android/armeabi-v7a" && ! -e "$PKG/ggml-backend-rs/android/x86" ]] ||
  fail "a 32-bit ABI dir without a library"
X="$PKG/ggml-backend-rs/ios/ggml_backend_rs.xcframework"
cmp -s "$D/aarch64-apple-ios/libggml_backend_rs.a" "$X/ios-arm64/libggml_backend_rs.a" || fail "iOS device slice"
cmp -s "$D/aarch64-apple-ios-sim/libggml_backend_rs.a" "$X/ios-arm64-simulator/libggml_backend_rs.a" || fail "iOS simulator slice"
python3 - "$X" <<'PY' || fail "xcframework Info.plist"
import os, plistlib, sys
x = sys.argv[1]
with open(os.path.join(x, "Info.plist"), "rb") as fh:
    p = plistlib.load(fh)
assert p["CFBundlePackageType"] == "XFWK", p
libs = {(l["SupportedPlatform"], l.get("SupportedPlatformVariant")): l for l in p["AvailableLibraries"]}
assert set(libs) == {("ios", None), ("ios", "simulator")}, libs
for l in libs.values():
    assert l["SupportedArchitectures"] == ["arm64"], l
    assert os.path.isfile(os.path.join(x, l["LibraryIdentifier"], l["LibraryPath"])), l
PY
PS="$PKG/$podspec"
grep -q '^  s.vendored_frameworks = "ggml-backend-rs/ios/ggml_backend_rs.xcframework"$' "$PS" || fail "podspec: no xcframework"
if ((rev26)); then
  grep -q "^  header_search_paths = \['\$(inherited)', '\"\$(PODS_TARGET_SRCROOT)/ggml-backend-rs/include\"'\]" "$PS" ||
    fail "podspec: our include dir not first in header_search_paths"
  grep -q '^  if true # ggml-backend-rs' "$PS" || fail "podspec: not forced to build from source"
else
grep -q 'HEADER_SEARCH_PATHS" => "$(inherited) \\"$(PODS_TARGET_SRCROOT)/ggml-backend-rs/include\\""' "$PS" ||
  fail "podspec: our include dir not on HEADER_SEARCH_PATHS"
fi
! grep -q tvos "$PS" || fail "podspec still declares tvOS"
if [[ "$tag" == wsp ]]; then
  grep -q '^  if true # ggml-backend-rs' "$PS" || fail "podspec: not forced to build from source"
  grep -q '^  if (true) { // ggml-backend-rs' "$PKG/android/build.gradle" || fail "build.gradle: not forced to build from source"
fi
# The podspec as CocoaPods would read it (tests_c/integrate/podspec_eval.rb records what it sets).
command -v ruby >/dev/null 2>&1 || fail "ruby missing (apt-get install ruby): it evaluates the podspec"
ruby "$ROOT/tests_c/integrate/podspec_eval.rb" "$PS" >"$W/podspec.json" || fail "patched podspec does not evaluate"
python3 - "$W/podspec.json" "$prefix" "$rev26" <<'PY' || fail "patched podspec attributes"
import json, sys
d = json.load(open(sys.argv[1]))
m = d["source_files_matched"]
assert any(f.startswith("cpp/") and f.endswith(".cpp") for f in m), "no cpp/ sources compiled"
bad = [f for f in m if "ggml-backend" in f and not f.split("/")[-1].startswith(("ggml-backend-meta.", "ggml-backend-dl."))]
assert not bad, "source_files still match %s" % bad
assert d["vendored_frameworks"] == "ggml-backend-rs/ios/ggml_backend_rs.xcframework", d["vendored_frameworks"]
hsp = d["pod_target_xcconfig"]["HEADER_SEARCH_PATHS"]
if sys.argv[3] == "1":
    # ours before the package's cpp/ (2026 podspecs build the list; from source is forced)
    assert hsp.startswith('$(inherited) "$(PODS_TARGET_SRCROOT)/ggml-backend-rs/include" "$(PODS_TARGET_SRCROOT)/cpp"'), hsp
    assert not any("xcframework" in f for f in m), "source_files match a prebuilt xcframework"
    assert "-DRN%sBUILD_FROM_SOURCE" % ("LLAMA_" if sys.argv[2] == "lm" else "WHISPER_") in d["compiler_flags"], d["compiler_flags"]
else:
    assert hsp == '$(inherited) "$(PODS_TARGET_SRCROOT)/ggml-backend-rs/include"', hsp
assert d["platforms"] in ({"ios": "11.0"}, {"ios": "13.0"}), d["platforms"]
weak = "-Wl,-U,_%s_ggml_backend_metal_reg -Wl,-U,_%s_ggml_init" % (sys.argv[2], sys.argv[2])
assert d["pod_target_xcconfig"]["OTHER_LDFLAGS"].endswith(" " + weak), d["pod_target_xcconfig"]
assert d["user_target_xcconfig"] == {"OTHER_LDFLAGS": "$(inherited) " + weak}, d.get("user_target_xcconfig")
PY
mkdir -p "$W/podspec-nolib"
cp "$PS" "$PKG/package.json" "$W/podspec-nolib/"
if ruby "$ROOT/tests_c/integrate/podspec_eval.rb" "$W/podspec-nolib/$podspec" >/dev/null 2>"$W/podspec-nolib.err"; then
  fail "podspec evaluates without the xcframework"
fi
grep -q "ggml-backend-rs: no .*ggml_backend_rs.xcframework" "$W/podspec-nolib.err" || fail "podspec without the xcframework: $(cat "$W/podspec-nolib.err")"
rm -rf "$W/podspec-nolib"
ok "podspec (evaluated in ruby): sources without ggml-backend*, our xcframework, include dir and weak-symbol link flags, iOS only; no xcframework -> pod install stops with the message"
ok "patched: no ggml-backend sources, cpp/ has no ggml-backend*, our headers + per-ABI/SDK libraries in place"

# --- 2. again: no change; refusals ------------------------------------------------------------
cp -a "$PKG" "$W/snapshot"
"${INTEGRATE[@]}" --dist "$D" "$PKG" >"$W/apply2.out"
grep -q "no change" "$W/apply2.out" || fail "second apply: $(cat "$W/apply2.out")"
diff -r "$W/snapshot" "$PKG" >/dev/null || fail "second apply changed the package"
rm -rf "$W/snapshot"
ok "second apply: byte for byte no change"

cp -a "$W/pristine/package" "$W/badver"
sed -i 's/"version": "[0-9.]*"/"version": "9.9.9"/' "$W/badver/package.json"
expect_refusal "an unknown version" "$W/badver" --dist "$D" "$W/badver"
cp -a "$W/pristine/package" "$W/badline"
if ((rev26)); then
  sed -i '/^    \${[A-Z_]*}\/ggml-backend-reg\.cpp$/d' "$W/badline/$cmake_rel"
  cmp -s "$W/badline/$cmake_rel" "$W/pristine/package/$cmake_rel" && fail "badline: sed changed nothing"
  # a library without the 2026 exports (the contract revisions' build) is refused
  if [[ -n "${OLD_LIB:-}" && -s "$OLD_LIB" ]]; then
    mkdir -p "$W/olddist/x86_64-linux-android"
    cp "$OLD_LIB" "$W/olddist/x86_64-linux-android/libggml_backend_rs.a"
    expect_refusal "a library of the old revision" "$W/pristine" --dist "$W/olddist" "$W/pristine/package"
    rm -rf "$W/olddist"
  fi
else
sed -i 's/target_link_libraries(${target_name} ${LOG_LIB} android)/target_link_libraries(${target_name} android)/' \
  "$W/badline/android/src/main/CMakeLists.txt"
fi
expect_refusal "a CMakeLists.txt without the expected line" "$W/badline" --dist "$D" "$W/badline"
mkdir -p "$W/nodist"
expect_refusal "an empty dist" "$W/pristine" --dist "$W/nodist" "$W/pristine/package"
expect_refusal "--revert of an unpatched package" "$W/pristine" --revert "$W/pristine/package"
rm -rf "$W/badver" "$W/badline" "$W/before"

# --- 3. build with the package's own CMakeLists.txt ---------------------------------------
if ((rev26)); then
  # configure the package's own CMakeLists.txt (rnllama/ standalone for the llama packages: the
  # library the JNI wrapper links; whisper.rn's top level with stub ReactAndroid / fbjni packages)
  S="$W/stubs"
  mkdir -p "$S/lib"
  cc -shared -fPIC -O1 -DSTUB_LIBLOG -o "$S/lib/liblog.so" "$ROOT/tests_c/integrate/stubs.c"
  src_dir="$(dirname "$CM")"
  configure26() { # build-dir abi
    cmake -S "$src_dir" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DANDROID_ABI="$2" \
      -DLOG_LIB="$S/lib/liblog.so" -DREACT_NATIVE_MINOR_VERSION=76 \
      -DCMAKE_PREFIX_PATH="$ROOT/tests_c/integrate/cmake"
  }
  for abi in x86_64 arm64-v8a; do
    B="$W/build-$abi"
    configure26 "$B" "$abi" >"$W/configure-$abi.log" 2>&1 || { tail -n 30 "$W/configure-$abi.log"; fail "configure $abi"; }
    ninja -C "$B" -t commands >"$W/commands-$abi.txt"
    if grep -q "ggml-backend\(-reg\)\?\.cpp" "$W/commands-$abi.txt"; then fail "$abi: the build compiles a ggml-backend source"; fi
    grep -q "ggml-backend-meta\.cpp" "$W/commands-$abi.txt" || fail "$abi: the build does not compile ggml-backend-meta.cpp (host code)"
    n=0
    m=0
    for so in $(sed -n 's/^build \(lib[a-z0-9_]*\.so\): CXX_SHARED_LIBRARY_LINKER.*/\1/p' "$B/build.ninja"); do
      n=$((n + 1))
      if ninja -C "$B" -t commands "$so" | tail -n1 | grep -q "ggml-backend-rs/android/$abi/libggml_backend_rs.a"; then
        m=$((m + 1))
      fi
    done
    want=$arm64_targets
    [[ "$abi" == x86_64 ]] && want=${#x86_targets[@]}
    [[ "$n" -eq "$want" && "$m" -eq "$n" ]] ||
      fail "$abi: $n library targets (expected $want), $m link the $abi library"
    ok "$abi (configure): all $n library targets link ggml-backend-rs/android/$abi, no ggml-backend.cpp / -reg.cpp compiled"
    rm -rf "$B"
  done
  if configure26 "$W/build-armv7" armeabi-v7a >"$W/configure-armv7.log" 2>&1; then fail "armeabi-v7a configured without a library"; fi
  grep -q "ggml-backend-rs: no library for ANDROID_ABI 'armeabi-v7a'" "$W/configure-armv7.log" ||
    fail "armeabi-v7a: not our message: $(tail -n 5 "$W/configure-armv7.log")"
  ok "armeabi-v7a (no library): configure stops with the ggml-backend-rs message"
  rm -rf "$W/build-armv7"
else
jni_h="$(ls /usr/lib/jvm/*/include/jni.h 2>/dev/null | head -n1 || true)"
[[ -n "$jni_h" ]] || fail "no JDK jni.h under /usr/lib/jvm (install default-jdk-headless)"
jni_inc="$(dirname "$jni_h")"
S="$W/stubs"
mkdir -p "$S/lib"
cc -shared -fPIC -O1 -DSTUB_LIBLOG -o "$S/lib/liblog.so" "$ROOT/tests_c/integrate/stubs.c"
cc -shared -fPIC -O1 -DSTUB_LIBANDROID -o "$S/lib/libandroid.so" "$ROOT/tests_c/integrate/stubs.c"
# -include cmath: both packages' C++ uses sqrt / INFINITY / M_PI without <cmath>, which NDK's libc++
# headers bring in on the way and libstdc++'s do not.
cxx_flags="-I$ROOT/tests_c/integrate -I$jni_inc -I$jni_inc/linux -include cmath"
# (tests_c/integrate/unoptimized.sh: -O0 after the package's -O3, unless GGML_RS_INTEGRATE_O3=1)
launch=()
[[ "${GGML_RS_INTEGRATE_O3:-0}" == 1 ]] || launch+=("$ROOT/tests_c/integrate/unoptimized.sh")
if command -v ccache >/dev/null 2>&1; then launch+=(ccache); fi
launcher=()
if ((${#launch[@]})); then
  l="$(IFS=';'; echo "${launch[*]}")"
  launcher=("-DCMAKE_C_COMPILER_LAUNCHER=$l" "-DCMAKE_CXX_COMPILER_LAUNCHER=$l")
fi
configure() { # build-dir abi
  cmake -S "$MAIN" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DANDROID_ABI="$2" \
    -DLOG_LIB="$S/lib/liblog.so" -DCMAKE_C_FLAGS="-D_GNU_SOURCE" -DCMAKE_CXX_FLAGS="$cxx_flags" \
    -DCMAKE_SHARED_LINKER_FLAGS="-L$S/lib -Wl,--no-undefined" ${launcher[@]+"${launcher[@]}"}
}
B="$W/build-x86_64"
configure "$B" x86_64 >"$W/configure-x86_64.log" 2>&1 || { cat "$W/configure-x86_64.log"; fail "configure x86_64"; }
ninja -C "$B" -t commands >"$W/commands.txt"
if grep -q "ggml-backend\(-reg\)\?\.cpp" "$W/commands.txt"; then fail "the build compiles a ggml-backend source"; fi
cmake --build "$B" -j "${JOBS:-2}" >"$W/build-x86_64.log" 2>&1 || { tail -n 40 "$W/build-x86_64.log"; fail "build x86_64"; }
for t in "${x86_targets[@]}"; do
  so="$B/lib$t.so"
  [[ -f "$so" ]] || fail "$so not built"
  ninja -C "$B" -t commands "lib$t.so" | tail -n1 | grep -q "ggml-backend-rs/android/x86_64/libggml_backend_rs.a" ||
    fail "lib$t.so is not linked with the x86_64 library"
  nm "$so" >"$W/nm.txt"    # (to a file: nm | grep -q would fail on SIGPIPE under pipefail)
  grep -q " [tT] ${prefix}_ggml_backend_sched_new$" "$W/nm.txt" || fail "lib$t.so has no ${prefix}_ggml_backend_sched_new"
  grep -q "_ZN15ggml_backend_rs" "$W/nm.txt" || fail "lib$t.so has no code of this library"
done
ok "x86_64: ${x86_targets[*]} compiled from the package's CMakeLists.txt and linked (--no-undefined) with this library"

B8="$W/build-arm64"
configure "$B8" arm64-v8a >"$W/configure-arm64.log" 2>&1 || { cat "$W/configure-arm64.log"; fail "configure arm64-v8a"; }
n=0
m=0
for so in $(sed -n 's/^build \(lib[a-z0-9_]*\.so\): CXX_SHARED_LIBRARY_LINKER.*/\1/p' "$B8/build.ninja"); do
  n=$((n + 1))
  if ninja -C "$B8" -t commands "$so" | tail -n1 | grep -q "ggml-backend-rs/android/arm64-v8a/libggml_backend_rs.a"; then
    m=$((m + 1))
  fi
done
[[ "$n" -eq "$arm64_targets" && "$m" -eq "$n" ]] ||
  fail "arm64-v8a: $n library targets (expected $arm64_targets), $m link the arm64-v8a library"
ok "arm64-v8a (configure only): all $n library targets link ggml-backend-rs/android/arm64-v8a"
if configure "$W/build-armv7" armeabi-v7a >"$W/configure-armv7.log" 2>&1; then fail "armeabi-v7a configured without a library"; fi
grep -q "ggml-backend-rs: no library for ANDROID_ABI 'armeabi-v7a'" "$W/configure-armv7.log" ||
  fail "armeabi-v7a: not our message: $(tail -n 5 "$W/configure-armv7.log")"
ok "armeabi-v7a (no library): configure stops with the ggml-backend-rs message"
rm -rf "$B8" "$W/build-armv7"
fi

# --- 4. revert ---------------------------------------------------------------------------------
"${INTEGRATE[@]}" --revert "$PKG" >/dev/null
diff -r "$W/pristine/package" "$PKG" || fail "revert: the package differs from a pristine extraction"
ok "reverted: diff -r with a pristine extraction is empty"
expect_refusal "a second --revert" "$PKG" --revert "$PKG"
rm -rf "$W"    # kept on failure, for a look
echo "test-integrate[$tag]: PASS"
