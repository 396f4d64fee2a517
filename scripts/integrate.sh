#!/usr/bin/env bash
# integrate.sh -- put ggml-backend-rs into an installed llama.rn 0.4.4 or whisper.rn 0.4.3 (the
# contract's revisions), or cui-llama.rn 1.12.2, llama.rn 0.12.9 or whisper.rn 0.7.4 (the 2026 one).
#
#   scripts/integrate.sh [--dist DIR] PATH/node_modules/<llama.rn|cui-llama.rn|whisper.rn>
#   scripts/integrate.sh --revert PATH/node_modules/<llama.rn|cui-llama.rn|whisper.rn>
#
# Apply: the package's Android CMakeLists.txt and iOS podspec stop compiling ggml-backend.cpp and
# ggml-backend-reg.cpp and link this library (prebuilt per ABI / SDK, taken from --dist DIR,
# default <repo>/dist, laid out as scripts/cross.sh writes it: DIR/<rust-target>/libggml_backend_rs.a).
# The package's cpp/ggml-backend.{cpp,h}, ggml-backend-reg.cpp and ggml-backend-impl.h leave cpp/
# (quoted includes look in the including file's folder first, so a copy left there would win over
# ours); our generated headers go to <pkg>/ggml-backend-rs/include, on the include path.
# whisper.rn: its prebuilt android/src/main/jniLibs and ios/rnwhisper.xcframework hold the stock
# backend, so the patch makes the build-from-source path unconditional (android/build.gradle and
# the podspec).
#
# The 2026 packages need the library built for their revision (cargo --features lm-2026 /
# wsp-2026, headers include/<p>-2026): an Android library that lacks that revision's exports is
# refused. They keep cpp/ggml-backend-meta.cpp and ggml-backend-dl.cpp (host code). llama.rn >= 0.12
# downloads prebuilt natives (stock backend inside) in postinstall; the patch makes both builds
# compile from source (RNLLAMA_BUILD_FROM_SOURCE / rnllamaBuildFromSource, RNWHISPER_BUILD_FROM_SOURCE
# forced on), so the download is unused: install with RNLLAMA_SKIP_POSTINSTALL=1 to skip it.
#
# Every original is kept in <pkg>/.ggml-backend-rs/orig (with a marker); applying again patches
# from those originals, so it changes nothing (byte for byte) given the same inputs, and --revert
# puts them back byte for byte and removes everything added. Any unknown package, version or build
# file that lacks an expected line is refused with one line and a non-zero status before anything
# is written.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

die() { echo "integrate.sh: $*" >&2; exit 1; }
note() { echo "integrate.sh: $*"; }

mode=apply
dist="$ROOT/dist"
pkg=""
while (($#)); do
  case "$1" in
    --revert) mode=revert ;;
    --dist) (($# >= 2)) || die "--dist needs a directory"; dist="$2"; shift ;;
    --dist=*) dist="${1#--dist=}" ;;
    -h|--help) sed -n '2,5p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) [[ -z "$pkg" ]] || die "one package path only (got '$pkg' and '$1')"; pkg="$1" ;;
  esac
  shift
done
[[ -n "$pkg" ]] || die "usage: integrate.sh [--dist DIR] [--revert] PATH/node_modules/<llama.rn|cui-llama.rn|whisper.rn>"
[[ -f "$pkg/package.json" ]] || die "$pkg: no package.json"
command -v python3 >/dev/null 2>&1 || die "python3 is needed (it edits the build files)"
pkg="$(cd "$pkg" && pwd)"

read -r name version < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(d.get("name", "?") or "?", d.get("version", "?") or "?")' "$pkg/package.json") ||
  die "$pkg/package.json: cannot read name/version"

# kind: which edits (the python table below); incdir: our headers for the package's revision;
# marker: an export only that revision's library has ("" = none checked)
case "$name@$version" in
  llama.rn@0.4.4)   prefix=lm;  kind=lm;   incdir=lm;  EDITED=(android/src/main/CMakeLists.txt llama-rn.podspec) ;;
  whisper.rn@0.4.3) prefix=wsp; kind=wsp;  incdir=wsp; EDITED=(android/src/main/CMakeLists.txt whisper-rn.podspec android/build.gradle) ;;
  cui-llama.rn@1.12.2|llama.rn@0.12.9)
                    prefix=lm;  kind=lm26; incdir=lm-2026
                    EDITED=(android/src/main/rnllama/CMakeLists.txt android/build.gradle llama-rn.podspec) ;;
  whisper.rn@0.7.4) prefix=wsp; kind=wsp26; incdir=wsp-2026; EDITED=(android/src/main/CMakeLists.txt whisper-rn.podspec) ;;
  *) die "unsupported package $name@$version (supported: llama.rn 0.4.4 / 0.12.9, cui-llama.rn 1.12.2, whisper.rn 0.4.3 / 0.7.4)" ;;
esac
case "$kind" in
  lm26|wsp26) marker_sym="${prefix}_ggml_backend_sched_reserve_size" ;;
  *) marker_sym="" ;;
esac
REMOVED=(cpp/ggml-backend.cpp cpp/ggml-backend-reg.cpp cpp/ggml-backend.h cpp/ggml-backend-impl.h)
STATE="$pkg/.ggml-backend-rs"
PAYLOAD="$pkg/ggml-backend-rs"
MARKER="ggml-backend-rs integrate 1: $name $version"

marked=0
if [[ -f "$STATE/marker" ]]; then
  [[ "$(cat "$STATE/marker")" == "$MARKER" ]] ||
    die "$STATE/marker says '$(head -n1 "$STATE/marker")' but the package is $name@$version; reinstall the package"
  for f in "${EDITED[@]}" "${REMOVED[@]}"; do
    [[ -f "$STATE/orig/$f" ]] || die "$STATE/orig/$f missing: backup incomplete; reinstall the package"
  done
  marked=1
fi

# ---------------------------------------------------------------------------------------------
if [[ "$mode" == revert ]]; then
  ((marked)) || die "$pkg is not patched by integrate.sh (no $STATE/marker)"
  for f in "${EDITED[@]}" "${REMOVED[@]}"; do
    cp -p "$STATE/orig/$f" "$pkg/$f"
  done
  rm -rf "$PAYLOAD" "$STATE"
  note "reverted $name $version in $pkg"
  exit 0
fi

# ---------------------------------------------------------------------------------------------
# Apply. Everything is prepared in a stage first; the package is touched only once all of it
# succeeded.
if ((!marked)); then
  [[ ! -e "$PAYLOAD" ]] || die "$PAYLOAD exists but the package is not marked as patched; remove it first"
  for f in "${EDITED[@]}" "${REMOVED[@]}"; do
    [[ -f "$pkg/$f" ]] || die "$pkg/$f not found (not a pristine $name $version)"
  done
fi
for h in ggml-backend.h ggml-backend-impl.h; do
  [[ -f "$ROOT/include/$incdir/$h" ]] || die "$ROOT/include/$incdir/$h missing (run cargo build)"
done

stage="$(mktemp -d "${TMPDIR:-/tmp}/ggml-backend-rs-integrate.XXXXXX")"
trap 'rm -rf "$stage"' EXIT

# The build files, edited from the originals (the backup when already patched).
edit_args=()
for f in "${EDITED[@]}"; do
  if ((marked)); then src="$STATE/orig/$f"; else src="$pkg/$f"; fi
  edit_args+=("$f" "$src" "$stage/edited/$f")
done
python3 - "$kind" "${edit_args[@]}" <<'PY' || exit 1
import os, sys

prefix = sys.argv[1]
triples = sys.argv[2:]

NOTE = "ggml-backend-rs (added by its scripts/integrate.sh; --revert removes it)"

def cmake_block(libdir):
    return (
        "set(@D@ ${CMAKE_SOURCE_DIR}/../../../cpp)\n"
        "\n"
        "# " + NOTE + ": ggml's backend layer\n"
        "# (ggml-backend.cpp, ggml-backend-reg.cpp) is the prebuilt static library of this ABI, and its\n"
        "# headers replace cpp/ggml-backend.h and cpp/ggml-backend-impl.h.\n"
        "set(GGML_BACKEND_RS_DIR ${CMAKE_SOURCE_DIR}/../../../ggml-backend-rs)\n"
        "set(GGML_BACKEND_RS_LIB ${GGML_BACKEND_RS_DIR}/android/${ANDROID_ABI}/libggml_backend_rs.a)\n"
        "if (NOT EXISTS ${GGML_BACKEND_RS_LIB})\n"
        "    message(FATAL_ERROR \"ggml-backend-rs: no library for ANDROID_ABI '${ANDROID_ABI}' \"\n"
        "        \"(${GGML_BACKEND_RS_LIB}): build it and run integrate.sh again, or leave this ABI out \"\n"
        "        \"(reactNativeArchitectures in the app's gradle.properties)\")\n"
        "endif ()\n"
        "include_directories(BEFORE ${GGML_BACKEND_RS_DIR}/include)\n"
    ).replace("@D@", libdir)

def cmake_edits(libdir):
    return [
        ("set(@D@ ${CMAKE_SOURCE_DIR}/../../../cpp)\n".replace("@D@", libdir), cmake_block(libdir)),
        ("    ${@D@}/ggml-backend.cpp\n    ${@D@}/ggml-backend-reg.cpp\n".replace("@D@", libdir), ""),
        ("    target_link_libraries(${target_name} ${LOG_LIB} android)\n",
         "    target_link_libraries(${target_name} ${GGML_BACKEND_RS_LIB} ${LOG_LIB} android)\n"),
    ]

XCF = "ggml-backend-rs/ios/ggml_backend_rs.xcframework"
PODSPEC_CHECK = (
    "package = JSON.parse(File.read(File.join(__dir__, \"package.json\")))\n"
    "\n"
    "# " + NOTE + ":\n"
    "# ggml's backend layer is the prebuilt static library (device + simulator slices).\n"
    "unless File.exist?(File.join(__dir__, \"" + XCF + "/Info.plist\"))\n"
    "  raise \"ggml-backend-rs: no #{__dir__}/" + XCF + " (it needs the aarch64-apple-ios and \" \\\n"
    "        \"aarch64-apple-ios-sim builds): build them and run integrate.sh again\"\n"
    "end\n"
    "# Mach-O linkers refuse a weak reference nothing defines: the library reaches every host symbol\n"
    "# (both prefixes' ggml core, optional backends) weakly, so each absent one is allowed by name.\n"
    "ggml_backend_rs_ldflags = File.read(File.join(__dir__, \"ggml-backend-rs/ios/host-weak.ldflags\")).split.join(\" \")\n"
)
PODSPEC_EDITS = [
    ("package = JSON.parse(File.read(File.join(__dir__, \"package.json\")))\n", PODSPEC_CHECK),
    ("  s.platforms    = { :ios => \"11.0\", :tvos => \"11.0\" }\n",
     "  s.platforms    = { :ios => \"11.0\" } # ggml-backend-rs: no tvOS build of the library\n"),
    ("  s.dependency \"React-Core\"\n",
     "  s.dependency \"React-Core\"\n"
     "\n"
     "  # ggml-backend-rs: the library replaces cpp/ggml-backend.cpp and ggml-backend-reg.cpp (gone\n"
     "  # from cpp/, with their headers; ours are on HEADER_SEARCH_PATHS).\n"
     "  s.vendored_frameworks = \"" + XCF + "\"\n"
     "  s.preserve_paths = \"ggml-backend-rs/include/*.h\"\n"
     "  s.user_target_xcconfig = { \"OTHER_LDFLAGS\" => \"$(inherited) #{ggml_backend_rs_ldflags}\" }\n"),
    ("    \"OTHER_LDFLAGS\" => base_ld_flags,\n",
     "    \"OTHER_LDFLAGS\" => base_ld_flags + \" \" + ggml_backend_rs_ldflags,\n"
     "    \"HEADER_SEARCH_PATHS\" => \"$(inherited) \\\"$(PODS_TARGET_SRCROOT)/ggml-backend-rs/include\\\"\",\n"),
]

EDITS = {
    ("lm", "android/src/main/CMakeLists.txt"): cmake_edits("RNLLAMA_LIB_DIR"),
    ("lm", "llama-rn.podspec"): PODSPEC_EDITS,
    ("wsp", "android/src/main/CMakeLists.txt"): cmake_edits("RNWHISPER_LIB_DIR"),
    ("wsp", "whisper-rn.podspec"): PODSPEC_EDITS + [
        ("  if ENV[\"RNWHISPER_BUILD_FROM_SOURCE\"] == \"1\"\n",
         "  if true # ggml-backend-rs: always from source (ios/rnwhisper.xcframework has the stock backend)\n"),
        # ios/**/*.h would also pick up the stock ggml-backend.h / -impl.h inside that xcframework.
        ("    s.source_files = \"ios/**/*.{h,m,mm}\", \"cpp/**/*.{h,cpp,hpp,c,m,mm}\"\n",
         "    s.source_files = \"ios/**/*.{h,m,mm}\", \"cpp/**/*.{h,cpp,hpp,c,m,mm}\"\n"
         "    s.exclude_files = \"ios/rnwhisper.xcframework/**/*\" # ggml-backend-rs: its stock headers\n"),
    ],
    ("wsp", "android/build.gradle"): [
        ("  if (rnwhisperBuildFromSource == \"true\") {\n",
         "  if (true) { // ggml-backend-rs: always from source (the prebuilt jniLibs have the stock backend)\n"),
    ],
}

# --- the 2026 revision ---------------------------------------------------------------------------
def cmake26_block(set_line, srcdir):
    return (
        set_line +
        "\n"
        "# " + NOTE + ": ggml's backend layer\n"
        "# (ggml-backend.cpp, ggml-backend-reg.cpp) is the prebuilt static library of this ABI, and its\n"
        "# headers replace cpp/ggml-backend.h and cpp/ggml-backend-impl.h.\n"
        "set(GGML_BACKEND_RS_DIR " + srcdir + "/ggml-backend-rs)\n"
        "set(GGML_BACKEND_RS_LIB ${GGML_BACKEND_RS_DIR}/android/${ANDROID_ABI}/libggml_backend_rs.a)\n"
        "if (NOT EXISTS ${GGML_BACKEND_RS_LIB})\n"
        "    message(FATAL_ERROR \"ggml-backend-rs: no library for ANDROID_ABI '${ANDROID_ABI}' \"\n"
        "        \"(${GGML_BACKEND_RS_LIB}): build it and run integrate.sh again, or leave this ABI out \"\n"
        "        \"(reactNativeArchitectures in the app's gradle.properties)\")\n"
        "endif ()\n"
        "include_directories(BEFORE ${GGML_BACKEND_RS_DIR}/include)\n"
    )

def podspec26(xcf_stock, from_source_line):
    return [
        ("package = JSON.parse(File.read(File.join(__dir__, \"package.json\")))\n", PODSPEC_CHECK),
        ("  s.platforms    = { :ios => \"13.0\", :tvos => \"13.0\" }\n",
         "  s.platforms    = { :ios => \"13.0\" } # ggml-backend-rs: no tvOS build of the library\n"),
        ("  header_search_paths = ['$(inherited)']\n",
         "  header_search_paths = ['$(inherited)', '\"$(PODS_TARGET_SRCROOT)/ggml-backend-rs/include\"'] # ggml-backend-rs: ours first\n"),
        (from_source_line,
         "  if true # ggml-backend-rs: always from source (" + xcf_stock + " has the stock backend)\n"),
        ("  s.dependency \"React-callinvoker\"\n",
         "  # ggml-backend-rs: the library replaces cpp/ggml-backend.cpp and ggml-backend-reg.cpp (gone\n"
         "  # from cpp/, with their headers; ours are on HEADER_SEARCH_PATHS).\n"
         "  s.vendored_frameworks = \"" + XCF + "\"\n"
         "  s.preserve_paths = \"ggml-backend-rs/include/*.h\"\n"
         "  s.user_target_xcconfig = { \"OTHER_LDFLAGS\" => \"$(inherited) #{ggml_backend_rs_ldflags}\" }\n"
         "\n"
         "  s.dependency \"React-callinvoker\"\n"),
        ("    \"OTHER_LDFLAGS\" => base_ld_flags,\n",
         "    \"OTHER_LDFLAGS\" => base_ld_flags + \" \" + ggml_backend_rs_ldflags,\n"),
    ]

EDITS.update({
    ("lm26", "android/src/main/rnllama/CMakeLists.txt"): [
        ("set(RNLLAMA_LIB_DIR ${CMAKE_CURRENT_SOURCE_DIR}/../../../../cpp)\n",
         cmake26_block("set(RNLLAMA_LIB_DIR ${CMAKE_CURRENT_SOURCE_DIR}/../../../../cpp)\n",
                       "${CMAKE_CURRENT_SOURCE_DIR}/../../../..")),
        ("    ${RNLLAMA_LIB_DIR}/ggml-backend.cpp\n", ""),
        ("    ${RNLLAMA_LIB_DIR}/ggml-backend-reg.cpp\n", ""),
        ("    target_link_libraries(${target_name} PRIVATE ${LOG_LIB} android)\n",
         "    target_link_libraries(${target_name} PRIVATE ${GGML_BACKEND_RS_LIB} ${LOG_LIB} android)\n"),
    ],
    ("lm26", "android/build.gradle"): [
        ("def isRNLlamaBuildFromSource = (project.findProperty(\"rnllamaBuildFromSource\") ?: \"false\").toString() == \"true\"\n",
         "def isRNLlamaBuildFromSource = true // ggml-backend-rs: always from source (the prebuilt jniLibs have the stock backend)\n"),
    ],
    ("lm26", "llama-rn.podspec"): podspec26("ios/rnllama.xcframework",
                                            "  if ENV[\"RNLLAMA_BUILD_FROM_SOURCE\"] == \"1\"\n") + [
        # ios/**/*.h would also pick up the stock headers inside a downloaded ios/rnllama.xcframework
        ("    s.exclude_files = \"cpp/ggml-opencl/*.{c,cpp}\", ",
         "    s.exclude_files = \"ios/rnllama.xcframework/**/*\", \"cpp/ggml-opencl/*.{c,cpp}\", "),
    ],
    ("wsp26", "android/src/main/CMakeLists.txt"): [
        ("set(RNWHISPER_LIB_DIR ${CMAKE_SOURCE_DIR}/../../../cpp)\n",
         cmake26_block("set(RNWHISPER_LIB_DIR ${CMAKE_SOURCE_DIR}/../../../cpp)\n", "${CMAKE_SOURCE_DIR}/../../..")),
        ("    ${RNWHISPER_LIB_DIR}/ggml-backend.cpp\n", ""),
        ("    ${RNWHISPER_LIB_DIR}/ggml-backend-reg.cpp\n", ""),
        ("    target_compile_definitions(${target_name} PRIVATE _GNU_SOURCE)\n",
         "    target_compile_definitions(${target_name} PRIVATE _GNU_SOURCE)\n"
         "    target_link_libraries(${target_name} ${GGML_BACKEND_RS_LIB}) # ggml-backend-rs\n"),
    ],
    ("wsp26", "whisper-rn.podspec"): podspec26("ios/rnwhisper.xcframework",
                                               "  if ENV[\"RNWHISPER_BUILD_FROM_SOURCE\"] == \"1\"\n") + [
        ("    s.exclude_files = \"cpp/ggml-metal/*.m\"\n",
         "    s.exclude_files = \"cpp/ggml-metal/*.m\", \"ios/rnwhisper.xcframework/**/*\" # ggml-backend-rs: its stock headers\n"),
    ],
})

out = []
for i in range(0, len(triples), 3):
    rel, src, dst = triples[i:i + 3]
    with open(src, "rb") as fh:
        text = fh.read().decode("utf-8")
    for old, new in EDITS[(prefix, rel)]:
        n = text.count(old)
        if n != 1:
            what = "not found" if n == 0 else "found %d times" % n
            print("integrate.sh: %s: expected line %s: %r" % (rel, what, old.splitlines()[0].strip()),
                  file=sys.stderr)
            sys.exit(1)
        text = text.replace(old, new)
    out.append((dst, text))
for dst, text in out:
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with open(dst, "wb") as fh:
        fh.write(text.encode("utf-8"))
PY

# The payload: our headers, the Android libraries per ABI, the iOS xcframework.
P="$stage/payload"
mkdir -p "$P/include"
cp "$ROOT/include/$incdir/"*.h "$P/include/"

# ABI -> Rust target. Both packages build these ABIs when the app asks for them (llama.rn drops
# the 32-bit ones itself); an ABI without a library fails at CMake configure with a message.
ANDROID_ABIS=("arm64-v8a aarch64-linux-android" "x86_64 x86_64-linux-android"
              "armeabi-v7a armv7-linux-androideabi" "x86 i686-linux-android")
found=()
missing=()
for e in "${ANDROID_ABIS[@]}"; do
  read -r abi triple <<<"$e"
  lib="$dist/$triple/libggml_backend_rs.a"
  if [[ -f "$lib" && -n "$marker_sym" ]] && nm -g --defined-only "$lib" >"$stage/nm.txt" 2>/dev/null &&
     ! grep -q " T $marker_sym\$" "$stage/nm.txt"; then
    die "$lib has no $marker_sym: not built for $name $version's revision (cargo build --features lm-2026,wsp-2026)"
  fi
  if [[ -f "$lib" ]]; then
    mkdir -p "$P/android/$abi"
    cp "$lib" "$P/android/$abi/libggml_backend_rs.a"
    found+=("android/$abi")
  else
    missing+=("android/$abi ($triple)")
  fi
done

ios_dev="$dist/aarch64-apple-ios/libggml_backend_rs.a"
ios_sim="$dist/aarch64-apple-ios-sim/libggml_backend_rs.a" sim_id=ios-arm64-simulator sim_archs=arm64
# scripts/cross.sh's fat simulator archive (arm64 + x86_64 for Intel Macs), when it made one
if [[ -f "$dist/ios-simulator/libggml_backend_rs.a" ]]; then
  ios_sim="$dist/ios-simulator/libggml_backend_rs.a" sim_id=ios-arm64_x86_64-simulator sim_archs="arm64 x86_64"
fi
if [[ -f "$ios_dev" && -f "$ios_sim" ]]; then
  X="$P/ios/ggml_backend_rs.xcframework"
  mkdir -p "$X/ios-arm64" "$X/$sim_id"
  cp "$ios_dev" "$X/ios-arm64/libggml_backend_rs.a"
  cp "$ios_sim" "$X/$sim_id/libggml_backend_rs.a"
  # scripts/cross.sh writes the -Wl,-U flags of the host symbols the library references weakly.
  weak="$dist/aarch64-apple-ios/host-weak.ldflags"
  [[ -f "$weak" ]] && cmp -s "$weak" "$dist/aarch64-apple-ios-sim/host-weak.ldflags" ||
    die "$weak missing or different from the simulator's (run scripts/cross.sh for both iOS targets)"
  cp "$weak" "$P/ios/host-weak.ldflags"
  slice() { # identifier architectures [variant]
    printf '\t\t<dict>\n\t\t\t<key>LibraryIdentifier</key>\n\t\t\t<string>%s</string>\n' "$1"
    printf '\t\t\t<key>LibraryPath</key>\n\t\t\t<string>libggml_backend_rs.a</string>\n'
    printf '\t\t\t<key>SupportedArchitectures</key>\n\t\t\t<array>\n'
    printf '\t\t\t\t<string>%s</string>\n' $2
    printf '\t\t\t</array>\n'
    printf '\t\t\t<key>SupportedPlatform</key>\n\t\t\t<string>ios</string>\n'
    if [[ -n "${3:-}" ]]; then
      printf '\t\t\t<key>SupportedPlatformVariant</key>\n\t\t\t<string>%s</string>\n' "$3"
    fi
    printf '\t\t</dict>\n'
  }
  {
    printf '<?xml version="1.0" encoding="UTF-8"?>\n'
    printf '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
    printf '<plist version="1.0">\n<dict>\n\t<key>AvailableLibraries</key>\n\t<array>\n'
    slice ios-arm64 arm64
    slice "$sim_id" "$sim_archs" simulator
    printf '\t</array>\n\t<key>CFBundlePackageType</key>\n\t<string>XFWK</string>\n'
    printf '\t<key>XCFrameworkFormatVersion</key>\n\t<string>1.0</string>\n</dict>\n</plist>\n'
  } >"$X/Info.plist"
  found+=("ios (device + simulator)")
else
  [[ -f "$ios_dev" ]] || missing+=("ios device (aarch64-apple-ios)")
  [[ -f "$ios_sim" ]] || missing+=("ios simulator (aarch64-apple-ios-sim)")
fi
((${#found[@]})) ||
  die "no libraries in $dist (expected $dist/<rust-target>/libggml_backend_rs.a; run scripts/cross.sh or pass --dist)"

# Commit.
if ((!marked)); then
  rm -rf "$STATE"    # a leftover without a marker is an interrupted first run: the package is pristine
  for f in "${EDITED[@]}" "${REMOVED[@]}"; do
    mkdir -p "$(dirname "$STATE/orig/$f")"
    cp -p "$pkg/$f" "$STATE/orig/$f"
  done
  printf '%s\n' "$MARKER" >"$STATE/marker"
fi
changed=0
for f in "${EDITED[@]}"; do
  if ! cmp -s "$stage/edited/$f" "$pkg/$f"; then
    cat "$stage/edited/$f" >"$pkg/$f"    # keeps the file's mode
    changed=1
  fi
done
for f in "${REMOVED[@]}"; do
  if [[ -e "$pkg/$f" ]]; then rm -f "$pkg/$f"; changed=1; fi
done
if [[ ! -d "$PAYLOAD" ]] || ! diff -r -q "$P" "$PAYLOAD" >/dev/null 2>&1; then
  rm -rf "$PAYLOAD"
  cp -R "$P" "$PAYLOAD"
  changed=1
fi

if ((changed)); then note "patched $name $version in $pkg"; else note "$name $version in $pkg: already patched, no change"; fi
note "libraries: ${found[*]}"
for m in ${missing[@]+"${missing[@]}"}; do
  note "no library for $m: that build fails with a message saying so"
done
