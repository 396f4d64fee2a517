#!/usr/bin/env bash
# ggml-vulkan (upstream llama.cpp of llama-cpp-python 0.3.36, ggml 0.25.3; GGML_RS_UPSTREAM=0.3.35 for
# ggml v0.20.0) on Mesa's lavapipe (Vulkan executed on the CPU), driven by our scheduler, against
# the same sources built stock (issue 45; docs/vulkan.md has the results).
#
#   bash scripts/test-vulkan.sh --bounded   the part scripts/test.sh runs (CI): the DL pair below
#   bash scripts/test-vulkan.sh             the whole stage (opt-in): static pair, every case, and
#                                           the bounded cases on the DL pair
#   bash scripts/test-vulkan.sh --shared    the whole stage plus the shared pair
#   bash scripts/test-vulkan.sh --shared-only   the shared pair and the bounded cases on it
#
# The pairs (stock vs ours, each built by upstream's CMake through tests_c/upstream/CMakeLists.txt;
# ours with the one option -DCMAKE_PROJECT_INCLUDE=cmake/ggml-rs-upstream.cmake):
#   static  both built whole, static (ours links stock's libllama.a, as scripts/test-upstream.sh)
#   dl      the layout of llama.cpp's release builds and of distribution packages: shared libraries
#           with -DGGML_BACKEND_DL=ON, the backends (ggml-cpu, ggml-vulkan, ggml-rpc) modules that
#           ggml_backend_load_all() finds beside the executable. Stock is built once; ours is its
#           ggml-base and ggml built again from the same sources on the library (no backend: none
#           is linked into them), put first on LD_LIBRARY_PATH. Stock's executables, libllama and
#           modules then run on our backend layer (our loader opens stock's modules), so the two
#           differ in exactly the files the library replaces, and ggml-vulkan (its shaders: most of
#           a build) is compiled once. -DGGML_NATIVE=OFF: upstream refuses GGML_NATIVE with DL.
#   shared  shared libraries without DL, both built whole; ours' libraries first on LD_LIBRARY_PATH
#           (stock's executables and libllama)
#
#   1. provision: Debian 12's mesa-vulkan-drivers (lavapipe), glslc, spirv-headers, vulkan-tools,
#      libvulkan-dev if missing; the Vulkan headers of Debian 13's libvulkan-dev 1.4.309 in
#      .cache/vulkan-headers/ (ggml-vulkan needs vk::LayerSettingEXT, which Debian 12's 1.3.239
#      headers lack), fetched with apt-get download through a private apt state (the system's
#      sources are left alone);
#   2. the library with the version's feature (ggml-0253 for 0.3.36; target/<feature>);
#   3. the builds, into target/vulkan/<version>/;
#   4. with GGML_VK_VISIBLE_DEVICES=0 (ggml-vulkan skips CPU-type devices unless selected):
#      SmolLM2 generation (tests_c/upstream/gen.cpp), ours vs stock bit-identical (tokens + every
#      step's logits). Bounded: -ngl 99 (flash attention off) and -ngl 10 (on), test-backend-ops
#      -b Vulkan0 for two op families, the no-driver case. Whole stage: also -ngl 0, a long prompt
#      (one batch of >= 32 tokens: ggml-vulkan's offload_op moves CPU-resident products to Vulkan)
#      and the same prompt in batches of 40, two devices (GGML_VK_VISIBLE_DEVICES=0,0: pipeline
#      parallelism, events), Vulkan + RPC in one scheduler, GGML_RS_SIMD=1 with -ngl 10, the
#      scheduler's decisions, more test-backend-ops families;
#   5. no driver: VK_ICD_FILENAMES=/nonexistent, and GGML_VK_VISIBLE_DEVICES selecting none:
#      stock and ours both generate on the CPU (what each prints is kept in target/vulkan/runs);
#   6. (whole stage) device memory: 20 context create/use/free cycles; Vulkan0's free memory back
#      at its baseline after each, ours as stock; our compute buffers <= stock's.
# Every run is bounded (timeout). Ends with `vulkan: N passed, M failed`.
#   JOBS (default 2); GGML_RS_VK_OPS="MUL_MAT ADD ..." the test-backend-ops families.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS="${JOBS:-2}"
MODE=full SHARED=0
case "${1:-}" in
  --bounded) MODE=bounded ;;
  --shared) SHARED=1 ;;
  --shared-only) MODE=shared-only SHARED=1 ;;
  "") ;;
  *) echo "usage: $0 [--bounded | --shared]" >&2; exit 2 ;;
esac
UPSTREAM="${GGML_RS_UPSTREAM:-0.3.36}"
OUT="$ROOT/target/vulkan/$UPSTREAM"
MODEL="$ROOT/.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPT="The capital of France is"
# ~150 tokens: one batch well over ggml-vulkan's op-offload minimum (32)
LONG_PROMPT="You are a helpful assistant. Here is a short story about a lighthouse keeper who lived alone on a rocky island far out at sea. Every evening he climbed the narrow spiral staircase, polished the great lens, trimmed the wick and lit the lamp so that ships passing in the dark would know where the rocks were. One stormy night in late autumn a small fishing boat lost its way in the fog, and the keeper heard a faint horn calling from the water below. He took his lantern, went down to the shore and waved it back and forth until the boat turned toward the harbour. In the morning the fishermen came up the hill to thank him, and the oldest of them said"
NGEN=16
mkdir -p "$OUT/runs"

CHECK_PREFIX=vulkan
# check, step, checks_summary
source "$ROOT/scripts/lib/checks.sh"
# --- 1. provision ------------------------------------------------------------------------------
provision() {
  local need=()
  command -v glslc >/dev/null || need+=(glslc)
  [[ -f /usr/share/vulkan/icd.d/lvp_icd.x86_64.json || -n "$(ls /usr/share/vulkan/icd.d/lvp_icd.*.json 2>/dev/null)" ]] || need+=(mesa-vulkan-drivers)
  [[ -d /usr/share/cmake/SPIRV-Headers || -d /usr/lib/cmake/SPIRV-Headers || -n "$(ls -d /usr/share/*/cmake/SPIRV-Headers* /usr/lib/*/cmake/SPIRV-Headers* 2>/dev/null)" ]] || need+=(spirv-headers)
  command -v vulkaninfo >/dev/null || need+=(vulkan-tools)
  [[ -e /usr/lib/x86_64-linux-gnu/libvulkan.so || -n "$(ls /usr/lib/*/libvulkan.so 2>/dev/null)" ]] || need+=(libvulkan-dev libvulkan1)
  if ((${#need[@]})); then
    echo "vulkan: installing ${need[*]}"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >"$OUT/apt.log" 2>&1 || { tail -5 "$OUT/apt.log"; return 1; }
  fi
  # Debian 13's Vulkan headers, unpacked into .cache/vulkan-headers/root (a new folder of the cache)
  VK_HEADERS="$ROOT/.cache/vulkan-headers"
  VK_INCLUDE="$VK_HEADERS/root/usr/include"
  if [[ ! -f "$VK_INCLUDE/vulkan/vulkan.hpp" ]]; then
    mkdir -p "$VK_HEADERS/apt/lists/partial" "$VK_HEADERS/apt/cache/archives/partial"
    cat >"$VK_HEADERS/apt/trixie.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    # a private apt state: the system's sources and lists stay as they are
    local apto=(-o "Dir::Etc::SourceList=$VK_HEADERS/apt/trixie.sources" -o Dir::Etc::SourceParts=/nonexistent
      -o "Dir::State::Lists=$VK_HEADERS/apt/lists" -o "Dir::Cache=$VK_HEADERS/apt/cache" -o Dir::State::status=/dev/null)
    (cd "$VK_HEADERS" && apt-get "${apto[@]}" update -qq && apt-get "${apto[@]}" download libvulkan-dev) >"$OUT/apt-trixie.log" 2>&1 ||
      { tail -5 "$OUT/apt-trixie.log"; return 1; }
    dpkg -x "$(ls "$VK_HEADERS"/libvulkan-dev_1.4*_*.deb | head -1)" "$VK_HEADERS/root"
    rm -rf "$VK_HEADERS/apt/lists" "$VK_HEADERS/apt/cache"
  fi
  [[ -f "$VK_INCLUDE/vulkan/vulkan.hpp" ]] && grep -q LayerSettingEXT "$VK_INCLUDE/vulkan/vulkan_structs.hpp"
}
VK_INCLUDE="$ROOT/.cache/vulkan-headers/root/usr/include"
step "provision" provision

# --- 2. sources, library, model ---------------------------------------------------------------------
# from scripts/fetch-upstream.sh: the trees, the library's feature
mapfile -t trees < <(bash scripts/fetch-upstream.sh "$UPSTREAM")
SRC_STOCK="${trees[0]}"
SRC_RS="${trees[1]}"
FEATURE="${trees[2]}"
[[ -f "$MODEL" ]] || bash scripts/fetch-models.sh >/dev/null
source "$ROOT/scripts/lib/cargo-features.sh"
step "cargo build --features $FEATURE" \
  cargo_features_build "$FEATURE" "$ROOT/target/$FEATURE" -j "$JOBS" -q
LIB_A="$ROOT/target/$FEATURE/release/libggml_backend_rs.a"
LIB_SO="$ROOT/target/$FEATURE/release/libggml_backend_rs.so"

# configure, build, has_sym; the Vulkan builds at a low priority outside CI
BUILD_NICE=15
[[ "${CI:-}" == true ]] && BUILD_NICE=0
source "$ROOT/scripts/lib/upstream-build.sh"
VK_ARGS=(-DGGML_VULKAN=ON "-DVulkan_INCLUDE_DIR=$VK_INCLUDE")

# --- 3. builds ----------------------------------------------------------------------------------
# The pair the cases run on: its two directories, and the environment ours runs with.
use_pair() {
  PAIR="$1"
  case "$1" in
    static) BIN_S="$OUT/stock-static" BIN_R="$OUT/rs-static" ENV_R=() ;;
    dl) BIN_S="$OUT/stock-dl/bin" BIN_R="$OUT/stock-dl/bin" ENV_R=("LD_LIBRARY_PATH=$OUT/rs-dl/swap") ;;
    shared) BIN_S="$OUT/stock-shared" BIN_R="$OUT/stock-shared" ENV_R=("LD_LIBRARY_PATH=$OUT/rs-shared/bin") ;;
  esac
}
RUN_ENV=() # env arguments for the next runs (e.g. VK_ICD_FILENAMES=..., -u NAME)
run() { # side(stock|rs) seconds program args...: one program of the pair, bounded
  local side="$1" secs="$2" prog="$3" dir="$BIN_S" e=()
  shift 3
  [[ "$side" == rs ]] && dir="$BIN_R" e=(${ENV_R[@]+"${ENV_R[@]}"})
  timeout "$secs" env ${RUN_ENV[@]+"${RUN_ENV[@]}"} ${e[@]+"${e[@]}"} "$dir/$prog" "$@"
}

build_dl_pair() {
  local dl=(-DGGML_BACKEND_DL=ON -DGGML_NATIVE=OFF) targets=(gen-upstream test-backend-ops ggml)
  [[ "$MODE" == full ]] && targets+=(rpc-server)
  step "stock DL (ggml-vulkan module): configure + build" eval \
      'configure "$OUT/stock-dl" ON OFF OFF "${dl[@]}" "${VK_ARGS[@]}" && build "$OUT/stock-dl" "${targets[@]}"' &&
    step "ours DL (ggml-base, ggml): configure + build" eval \
      'configure "$OUT/rs-dl" ON ON OFF "${dl[@]}" -DGGML_VULKAN=OFF -DGGML_CPU=OFF && build "$OUT/rs-dl" ggml-base ggml' &&
    rm -rf "$OUT/rs-dl/swap" && mkdir -p "$OUT/rs-dl/swap" &&
    cp -P "$OUT"/rs-dl/bin/libggml-base.so* "$OUT"/rs-dl/bin/libggml.so* "$OUT/rs-dl/swap/"
}
build_shared_pair() {
  step "stock shared: configure + build" eval \
      'configure "$OUT/stock-shared" ON OFF OFF "${VK_ARGS[@]}" && build "$OUT/stock-shared" gen-upstream test-backend-ops' &&
    step "ours shared (ggml and its backends): configure + build" eval \
      'configure "$OUT/rs-shared" ON ON OFF "${VK_ARGS[@]}" && build "$OUT/rs-shared" ggml'
}
# which backend layer each side's process loads (the dynamic linker's own answer)
loads() { # side -> the resolved paths of libggml-base, libggml and the library
  if [[ "$1" == stock ]]; then ldd "$BIN_S/gen-upstream"; else env ${ENV_R[@]+"${ENV_R[@]}"} ldd "$BIN_R/gen-upstream"; fi |
    grep -E 'libggml-base|libggml\.so|libggml_backend_rs' || true
}
linked_dl() {
  local s r
  s="$(loads stock)" r="$(loads rs)"
  echo "$r" | sed 's/^/vulkan:   ours: /'
  grep -q "libggml-base.so.* => $BIN_S/libggml-base" <<<"$s" && ! grep -q libggml_backend_rs <<<"$s" &&
    grep -q "libggml-base.so.* => $OUT/rs-dl/swap/" <<<"$r" && grep -q "libggml.so.* => $OUT/rs-dl/swap/" <<<"$r" &&
    grep -q "libggml_backend_rs.so => $ROOT/target/$FEATURE" <<<"$r" &&
    ! has_sym "$OUT/rs-dl/swap/libggml-base.so" ggml_backend_sched_new && has_sym "$BIN_S/libggml-base.so" ggml_backend_sched_new &&
    [[ -f "$BIN_S/libggml-vulkan.so" && ! -e "$OUT/rs-dl/bin/libggml-vulkan.so" && ! -e "$OUT/rs-dl/bin/libggml-cpu.so" ]]
}
linked_shared() { # ours: stock's executables on our libggml-base / libggml, which load the library
  local r
  r="$(loads rs)"
  echo "$r" | sed 's/^/vulkan:   ours: /'
  grep -q "libggml-base.so.* => $OUT/rs-shared/bin/" <<<"$r" && grep -q "libggml.so.* => $OUT/rs-shared/bin/" <<<"$r" &&
    grep -q "libggml_backend_rs.so => $ROOT/target/$FEATURE" <<<"$r" && ! loads stock | grep -q libggml_backend_rs
}
loaded_modules() { # out.err of ours: our loader opened stock's modules, and said nothing of a missing ggml-cpu
  ! grep -q 'links no' "$1"
}
build_static_pair() {
  local S="$OUT/stock-static" R="$OUT/rs-static" targets=(gen-upstream test-backend-ops rpc-server)
  # ours links stock's libllama.a (llama only calls the backend API), as scripts/test-upstream.sh does
  step "stock static: configure + build" eval 'configure "$S" OFF OFF OFF "${VK_ARGS[@]}" && build "$S" "${targets[@]}"' &&
    step "ours static: configure + build" eval \
      'configure "$R" OFF ON OFF "${VK_ARGS[@]}" -DGGML_RS_LLAMA_LIB="$S/llama.cpp/src/libllama.a" && build "$R" "${targets[@]}"'
}
# (stock's static link of ggml 0.25.3 keeps no global ggml_backend_vk_reg: ggml-vulkan's other
# functions show it is linked in)
has_vulkan_code() { [[ "$(nm "$1" | grep -c ' [tT] .*ggml_vk_')" -gt 0 ]]; }
linked_static() {
  has_sym "$BIN_R/gen-upstream" ggml_backend_simd_reg && has_sym "$BIN_R/gen-upstream" ggml_backend_sched_reserve_size &&
    has_vulkan_code "$BIN_R/gen-upstream" && ! has_sym "$BIN_S/gen-upstream" ggml_backend_simd_reg && has_vulkan_code "$BIN_S/gen-upstream"
}

# --- 4. generation on Vulkan0 ------------------------------------------------------------------
export GGML_VK_VISIBLE_DEVICES=0
gen() { # side out [args...]
  local side="$1" out="$2"
  shift 2
  run "$side" 600 gen-upstream -m "$MODEL" -n "$NGEN" -t 2 "$@" >"$out" 2>"$out.err"
}
same() { grep -q 'logits digest' "$1" && cmp -s "$1" "$2"; }
# the same tokens and logits, the device list aside (GGML_RS_SIMD=1 lists SIMD as a device of ours)
same_steps() { grep -q 'logits digest' "$1" && cmp -s <(grep -v '^device' "$1") <(grep -v '^device' "$2"); }
SAME=same
has_vulkan() { grep -q '^device .*: Vulkan0' "$1"; }
runs() { echo "$OUT/runs/$PAIR-$1"; } # name -> the runs' path prefix
gen_case() { # name args...: stock and ours with the same arguments, then the checks
  local name="$1" t0=$SECONDS p
  shift
  p="$(runs "$name")"
  gen stock "$p-stock.txt" "$@" || echo "vulkan: stock $name exited $?"
  gen rs "$p-rs.txt" "$@" || echo "vulkan: ours $name exited $?"
  times+=("$(printf '%-40s %4d s' "$PAIR gen $name (stock + ours)" $((SECONDS - t0)))")
  check "$PAIR gen $name: ours bit-identical to stock (tokens + logits)" "$SAME" "$p-stock.txt" "$p-rs.txt"
  grep -E '^text:|digest' "$p-rs.txt" | sed 's/^/vulkan:   /' || true
}

# test-backend-ops on Vulkan0: lavapipe compiles each pipeline with LLVM the first time it is used
# (Mesa's shader cache keeps it for later processes), so MUL_MAT is limited to the quantized types
# SmolLM2 uses (87 cases; GGML_RS_VK_MM_FILTER= runs all: the F32 / F16 cases take minutes each cold)
MM_FILTER="${GGML_RS_VK_MM_FILTER-type_a=(q4_0|q4_1|q8_0),type_b=f32}"
backend_ops() { # side op -> the "N/M tests passed" line, or "no result"
  local log filter=()
  log="$(runs "backend-ops-$1-$2.log")"
  [[ "$2" == MUL_MAT && -n "$MM_FILTER" ]] && filter=(-p "$MM_FILTER")
  run "$1" 1200 test-backend-ops test -b Vulkan0 -o "$2" ${filter[@]+"${filter[@]}"} >"$log" 2>&1 || true
  grep -Eo '[0-9]+/[0-9]+ tests passed' "$log" | tail -1 || echo "no result"
}
backend_ops_cases() { # ops...
  local op a b t0=$SECONDS
  for op in "$@"; do
    a="$(backend_ops stock "$op")"
    b="$(backend_ops rs "$op")"
    echo "vulkan: $PAIR test-backend-ops -b Vulkan0 -o $op: stock $a, ours $b"
    check "$PAIR test-backend-ops -b Vulkan0 -o $op: ours = stock" test "$a" = "$b" -a "$b" != "no result"
  done
  times+=("$(printf '%-40s %4d s' "$PAIR test-backend-ops $# families" $((SECONDS - t0)))")
}

# --- 5. no driver -----------------------------------------------------------------------------------
nodriver() { # name env...: stock and ours generate on the CPU, bit-identical
  local name="$1" t0=$SECONDS rcs=0 rcr=0 p
  shift
  p="$(runs "$name")"
  RUN_ENV=("$@")
  run stock 300 gen-upstream -m "$MODEL" -p "$PROMPT" -n 8 -t 2 -ngl 99 >"$p-stock.txt" 2>"$p-stock.txt.err" || rcs=$?
  run rs 300 gen-upstream -m "$MODEL" -p "$PROMPT" -n 8 -t 2 -ngl 99 >"$p-rs.txt" 2>"$p-rs.txt.err" || rcr=$?
  RUN_ENV=()
  times+=("$(printf '%-40s %4d s' "$PAIR no driver: $name" $((SECONDS - t0)))")
  devices() { echo "$(grep -c '^device' "$1") devices: $(grep '^device' "$1" | sed 's/ (.*//; s/^device [0-9]*: //' | paste -sd,)"; }
  echo "vulkan: $name: stock rc $rcs ($(devices "$p-stock.txt")), ours rc $rcr ($(devices "$p-rs.txt"))"
  check "$PAIR no driver ($name): both run on the CPU, ours = stock" bash -c "
    [[ $rcs == 0 && $rcr == 0 ]] && ! grep -q Vulkan '$p-rs.txt' && cmp -s '$p-stock.txt' '$p-rs.txt'"
}

# every decision of the scheduler (GGML_SCHED_DEBUG=2: splits, their inputs, each node's backend,
# use count and compute flag), -ngl 10 with the long prompt: ours prints what stock prints
sched_print() { # side out
  (RUN_ENV=(GGML_SCHED_DEBUG=2 GEN_VERBOSE=1); run "$1" 300 gen-upstream -m "$MODEL" -p "$LONG_PROMPT" -n 2 -t 2 -ngl 10 2>&1) |
    grep -E '^## SPLIT|^node #' >"$2" || true
}
same_decisions() {
  sched_print stock "$(runs sched-stock.txt)"
  sched_print rs "$(runs sched-rs.txt)"
  [[ -s "$(runs sched-rs.txt)" ]] && cmp -s "$(runs sched-stock.txt)" "$(runs sched-rs.txt)"
}

# --- the cases ------------------------------------------------------------------------------------
# what CI runs (on the shared pair), and the whole stage's first cases
bounded_cases() {
  local p
  p="$(runs devices)"
  gen stock "$p-stock.txt" -p "$PROMPT" -n 1 || true
  check "$PAIR: stock registers Vulkan0 (llvmpipe) with GGML_VK_VISIBLE_DEVICES=0" has_vulkan "$p-stock.txt"
  gen_case ngl99-fa-off -p "$PROMPT" -ngl 99 -fa off
  gen_case ngl10-fa-on -p "$PROMPT" -ngl 10 -fa on
  backend_ops_cases ${GGML_RS_VK_OPS_BOUNDED:-ADD RMS_NORM}
  check "$PAIR scheduler decisions (GGML_SCHED_DEBUG=2, -ngl 10, long prompt): ours' printout = stock's" same_decisions
  nodriver icd-nowhere-dev0 VK_ICD_FILENAMES=/nonexistent GGML_VK_VISIBLE_DEVICES=0
}

# the whole stage's other cases (on the static pair)
SERVERS=()
stop_servers() { local pid; for pid in ${SERVERS[@]+"${SERVERS[@]}"}; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done; SERVERS=(); }
trap stop_servers EXIT
start_server() { # side port: an rpc-server of that side on 127.0.0.1 (its CPU backend: Vulkan not visible)
  local i
  (RUN_ENV=(GGML_VK_VISIBLE_DEVICES=); run "$1" 900 rpc-server -H 127.0.0.1 -p "$2" -t 2) >"$(runs "server-$1-$2.log")" 2>&1 &
  SERVERS+=($!)
  for i in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && return 0
    sleep 0.2
  done
  echo "vulkan: rpc-server ($1) on port $2 did not come up" >&2
  return 1
}
full_cases() {
  # one batch of ~150 tokens: with -ngl 10 / 0 the CPU-resident weights' products go to Vulkan
  gen_case ngl99-fa-on -p "$PROMPT" -ngl 99 -fa on
  gen_case ngl10-fa-off -p "$PROMPT" -ngl 10 -fa off
  gen_case long-ngl10 -p "$LONG_PROMPT" -ngl 10 -n 8
  gen_case long-ngl0 -p "$LONG_PROMPT" -ngl 0 -n 8
  gen_case long-ngl99-b40 -p "$LONG_PROMPT" -ngl 99 -n 8 -b 40
  # the CPU-side layers on our SIMD backend (GGML_RS_SIMD=1; stock ignores it)
  RUN_ENV=(GGML_RS_SIMD=1) SAME=same_steps
  gen_case simd-ngl10 -p "$PROMPT" -ngl 10
  gen_case simd-long-ngl10 -p "$LONG_PROMPT" -ngl 10 -n 8
  gen_case simd-long-ngl0 -p "$LONG_PROMPT" -ngl 0 -n 8
  RUN_ENV=() SAME=same
  # Vulkan and RPC in one scheduler: each side's client with its own rpc-server (the server's CPU),
  # the layers split between RPC0 and Vulkan0
  local port p
  source "$ROOT/scripts/lib/ports.sh"
  port=$(rpc_port_base 2)
  start_server stock "$port" && start_server rs $((port + 1)) &&
    gen stock "$(runs rpc-vk-stock.txt)" -p "$PROMPT" -ngl 99 --rpc "127.0.0.1:$port" &&
    gen rs "$(runs rpc-vk-rs.txt)" -p "$PROMPT" -ngl 99 --rpc "127.0.0.1:$((port + 1))" || echo "vulkan: Vulkan + RPC run failed"
  stop_servers
  check "$PAIR Vulkan + RPC: both devices used" bash -c "grep -q '^device .*RPC' '$(runs rpc-vk-rs.txt)' && grep -q '^device .*Vulkan0' '$(runs rpc-vk-rs.txt)'"
  # (the device lists differ in the RPC endpoint's port: one server per side)
  check "$PAIR Vulkan + RPC (-ngl 99): ours bit-identical to stock" same_steps "$(runs rpc-vk-stock.txt)" "$(runs rpc-vk-rs.txt)"
  # two devices on the one llvmpipe (Vulkan0, Vulkan1): llama.cpp turns on pipeline parallelism
  # (4 copies of the split inputs, events between the backends, Vulkan -> Vulkan copies)
  pipeline_on() { (RUN_ENV=(GEN_VERBOSE=1 GGML_VK_VISIBLE_DEVICES=0,0); run "$1" 300 gen-upstream -m "$MODEL" -p "$PROMPT" -n 1 -t 2 -ngl 99 2>&1) | grep -c 'pipeline parallelism enabled' >/dev/null; }
  check "two Vulkan devices: stock enables pipeline parallelism" pipeline_on stock
  check "two Vulkan devices: ours enables pipeline parallelism" pipeline_on rs
  export GGML_VK_VISIBLE_DEVICES=0,0
  gen_case two-dev-ngl99 -p "$PROMPT" -ngl 99 -fa off
  gen_case two-dev-long-fa-on -p "$LONG_PROMPT" -ngl 99 -n 8 -fa on -b 40
  export GGML_VK_VISIBLE_DEVICES=0
  # the offload happened: the scheduler debug shows Vulkan0 splits in a -ngl 0 run (stock's printout)
  offloaded() { (RUN_ENV=(GGML_SCHED_DEBUG=1 GEN_VERBOSE=1); run "$1" 300 gen-upstream -m "$MODEL" -p "$LONG_PROMPT" -n 1 -t 2 -ngl 0 2>&1) | grep -c 'SPLIT #[0-9]*: Vulkan0' >"$2" || true; [[ "$(cat "$2")" -gt 0 ]]; }
  check "offload: stock runs Vulkan0 splits at -ngl 0 with a long prompt" offloaded stock "$(runs offload-stock.n)"
  check "offload: ours runs Vulkan0 splits at -ngl 0 with a long prompt" offloaded rs "$(runs offload-rs.n)"
  check "offload: ours as many Vulkan0 splits as stock" cmp -s "$(runs offload-stock.n)" "$(runs offload-rs.n)"
  read -r -a ops <<<"${GGML_RS_VK_OPS:-MUL_MAT GET_ROWS SOFT_MAX}"
  backend_ops_cases "${ops[@]}"
  nodriver icd-nowhere VK_ICD_FILENAMES=/nonexistent GGML_VK_VISIBLE_DEVICES=
  nodriver visible-none GGML_VK_VISIBLE_DEVICES=
  nodriver visible-unset -u GGML_VK_VISIBLE_DEVICES
  memory_cases
}

# --- 6. device memory over context cycles ---------------------------------------------------------
CYCLES=20
memory_cases() {
  local mem_t0=$SECONDS c
  gen stock "$(runs cycles-stock.txt)" -p "$PROMPT" -ngl 99 -n 1 --cycles "$CYCLES" || true
  gen rs "$(runs cycles-rs.txt)" -p "$PROMPT" -ngl 99 -n 1 --cycles "$CYCLES" || true
  times+=("$(printf '%-40s %4d s' "memory: $CYCLES cycles (stock + ours)" $((SECONDS - mem_t0)))")
  back_to_baseline() { # out: every "freed" line's free memory equals the baseline's
    local base
    base="$(awk '$1 == "memory" && $2 == "baseline" { print $6; exit }' "$1")"
    [[ -n "$base" ]] && [[ "$(grep -c '^memory freed' "$1")" == "$CYCLES" ]] &&
      awk -v b="$base" '$1 == "memory" && $2 == "freed" && $6 != b { bad = 1 } END { exit bad }' "$1"
  }
  mem_summary() { # out
    awk '$1 == "memory" { v[$2] = $6; if ($2 == "baseline") b = $6 } END { printf "baseline %.1f MiB, live %.1f MiB less, after free %.1f MiB less", b / 1048576, (b - v["live"]) / 1048576, (b - v["freed"]) / 1048576 }' "$1"
  }
  echo "vulkan: memory stock: $(mem_summary "$(runs cycles-stock.txt)"); ours: $(mem_summary "$(runs cycles-rs.txt)")"
  check "memory: stock's free device memory back at baseline after each of $CYCLES cycles" back_to_baseline "$(runs cycles-stock.txt)"
  check "memory: ours back at baseline after each of $CYCLES cycles" back_to_baseline "$(runs cycles-rs.txt)"
  # lavapipe has no VK_EXT_memory_budget: ggml-vulkan then reports the heap size as free, whatever is
  # allocated, so the lines above cannot see a leak. Its device memory is the process's own: the
  # resident set after each freed context (from the second on: the first keeps one-off pipelines and
  # caches) must stay within 1 MiB of the second's.
  rss_summary() {
    awk '$1 == "rss" { v[$2 "," $3] = $4 } END { printf "resident %.1f MiB before, %.1f MiB with context 2 live, %.1f after it, %.1f after the last", v["baseline,0"] / 1048576, v["live,2"] / 1048576, v["freed,2"] / 1048576, v["freed," n] / 1048576 }' n="$CYCLES" "$1"
  }
  rss_flat() {
    [[ "$(grep -c '^rss freed' "$1")" == "$CYCLES" ]] &&
      awk '$1 == "rss" && $2 == "freed" && $3 == 2 { r = $4 } $1 == "rss" && $2 == "freed" && $3 > 2 && ($4 - r > 1048576 || r - $4 > 1048576) { bad = 1 } END { exit bad || !r }' "$1"
  }
  echo "vulkan: memory stock: $(rss_summary "$(runs cycles-stock.txt)")"
  echo "vulkan: memory ours:  $(rss_summary "$(runs cycles-rs.txt)")"
  check "memory: stock's resident set flat over $CYCLES context cycles" rss_flat "$(runs cycles-stock.txt)"
  check "memory: ours resident set flat over $CYCLES context cycles" rss_flat "$(runs cycles-rs.txt)"
  # compute buffer sizes (llama.cpp's log lines, one set per context)
  bufs() { grep -o '[A-Za-z0-9_]* compute buffer size = *[0-9.]* MiB' "$1" | sort -u; }
  buf_le() { # stock-err ours-err: every backend's compute buffer ours <= stock
    join <(bufs "$1" | awk '{ print $1, $6 }' | sort) <(bufs "$2" | awk '{ print $1, $6 }' | sort) |
      awk '{ n++; printf "vulkan:   compute buffer %s: stock %s MiB, ours %s MiB\n", $1, $2, $3; if ($3 > $2) bad = 1 } END { exit bad || n == 0 }'
  }
  for c in ngl99-fa-off ngl10-fa-on long-ngl0; do
    check "compute buffers ($c): ours <= stock" buf_le "$(runs "$c-stock.txt.err")" "$(runs "$c-rs.txt.err")"
  done
}

# --- 7. speed: the scheduler's time per generated token, ours vs stock ---------------------------
# Interleaved rounds on the pair (warm: Mesa's shader cache is filled by the cases above), each the
# wall time of -n 33 minus -n 1 (model load, shader setup and the prompt cancel), per token.
speed_cases() { # rounds ngl...
  local rounds="$1" ngl side r t0 t1 a b
  shift
  for ngl in "$@"; do
    declare -A per=()
    for r in $(seq 1 "$rounds"); do
      for side in stock rs; do
        t0=$(date +%s%N); run "$side" 600 gen-upstream -m "$MODEL" -p "$PROMPT" -n 1 -t 2 -ngl "$ngl" >/dev/null 2>&1 || true
        t1=$(date +%s%N); run "$side" 600 gen-upstream -m "$MODEL" -p "$PROMPT" -n 33 -t 2 -ngl "$ngl" >/dev/null 2>&1 || true
        a=$(( ($(date +%s%N) - t1) - (t1 - t0) ))
        per[$side]+="$(( a / 32000 )) "
      done
    done
    python3 - "$PAIR" "$ngl" "${per[stock]}" "${per[rs]}" <<'PY'
import statistics, sys
pair, ngl, s, r = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3].split()], [int(x) for x in sys.argv[4].split()]
ratios = sorted(b / a for a, b in zip(s, r))
print(f"vulkan: speed {pair} -ngl {ngl}: stock {statistics.median(s) / 1000:.1f} ms/token, ours {statistics.median(r) / 1000:.1f} ms/token, "
      f"ours/stock time {statistics.median(ratios):.3f} (min {ratios[0]:.3f}, max {ratios[-1]:.3f}, {len(s)} interleaved rounds)")
PY
    unset per
  done
}

# --- run ----------------------------------------------------------------------------------------------
if [[ "$MODE" == full ]]; then
  build_static_pair
  use_pair static
  check "static: ours links the library and ggml-vulkan, stock ggml-backend.cpp (gen-upstream)" linked_static
  bounded_cases
  full_cases
fi
if [[ "$MODE" != shared-only ]]; then
  build_dl_pair
  use_pair dl
  check "dl: stock's programs load our ggml-base / ggml (LD_LIBRARY_PATH), the modules are stock's" linked_dl
  bounded_cases
  check "dl: our loader opened stock's modules (no 'links no ggml-cpu' warning)" loaded_modules "$(runs ngl10-fa-on-rs.txt.err)"
  [[ "$MODE" == full ]] && speed_cases "${GGML_RS_VK_SPEED_ROUNDS:-5}" 99 10
fi
if [[ "$SHARED" == 1 ]]; then
  build_shared_pair
  use_pair shared
  check "shared: stock's programs load our ggml-base / ggml (LD_LIBRARY_PATH)" linked_shared
  bounded_cases
fi
checks_summary
