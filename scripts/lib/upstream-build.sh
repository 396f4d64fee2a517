# Building llama.cpp through tests_c/upstream/CMakeLists.txt, stock or on the library, for the stages
# that compare the two (test-upstream.sh, test-vulkan.sh). Source it with ROOT, JOBS, SRC_STOCK,
# SRC_RS, LIB_A and LIB_SO set; BUILD_NICE (default 0) lowers the builds' priority.
#   configure DIR SHARED(ON|OFF) RS(ON|OFF) TESTS(ON|OFF) [cmake args...]
#   build DIR TARGETS...
#   has_sym BINARY NAME         BINARY defines NAME (text symbol)

# ggml's CMake builds for -march=native; on an x86 VM whose /proc/cpuinfo lists AMX (Sapphire
# Rapids guests) its AMX kernels get compiled and die with SIGILL in stock and ours alike (the
# guest cannot execute the tile instructions). Both builds leave AMX out there: GCC keeps explicit
# -mno-* flags over what -march=native implies.
NO_AMX=()
if grep -qw amx_tile /proc/cpuinfo 2>/dev/null; then
  NO_AMX=("-DCMAKE_C_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16" "-DCMAKE_CXX_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16")
fi
configure() {
  local dir="$1" shared="$2" rs="$3" tests="$4"
  shift 4
  set -- ${NO_AMX[@]+"${NO_AMX[@]}"} "$@"
  local src="$SRC_STOCK" lib
  if [[ "$rs" == ON ]]; then
    src="$SRC_RS"
    lib="$LIB_A"
    [[ "$shared" == ON ]] && lib="$LIB_SO"
    # what a user adds to upstream's configure line (README, docs/upstream.md)
    set -- "-DCMAKE_PROJECT_INCLUDE=$ROOT/cmake/ggml-rs-upstream.cmake" "-DGGML_RS_LIB=$lib" "$@"
  fi
  cmake -S "$ROOT/tests_c/upstream" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS="$shared" \
    -DLLAMA_SRC="$src" -DGGML_RS_UPSTREAM_TESTS="$tests" \
    -DGGML_CCACHE=OFF "$@" >"$dir.configure.log" 2>&1 || { tail -20 "$dir.configure.log"; return 1; }
}
build() {
  local dir="$1"
  shift
  nice -n "${BUILD_NICE:-0}" cmake --build "$dir" -j "$JOBS" --target "$@" >"$dir.build.log" 2>&1 ||
    { tail -30 "$dir.build.log"; return 1; }
}
# (grep -c, not -q: an early exit of grep would fail nm with SIGPIPE under pipefail)
has_sym() { [[ "$(nm "$1" | grep -c " T $2\$")" -gt 0 ]]; }
