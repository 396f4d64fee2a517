#!/usr/bin/env bash
# ggml-vulkan (llama-cpp-python 0.3.35's vendor/llama.cpp, ggml v0.20.0) on Mesa's lavapipe
# (Vulkan executed on the CPU), driven by our scheduler, against the same sources built stock.
# An opt-in stage: scripts/test.sh does not call it (issue 45; docs/vulkan.md has the results).
#
#   1. provision: Debian 12's mesa-vulkan-drivers (lavapipe), glslc, spirv-headers, vulkan-tools,
#      libvulkan-dev if missing; the Vulkan headers of Debian 13's libvulkan-dev 1.4.309 in
#      .cache/vulkan-headers/ (ggml-vulkan 0.3.35 needs vk::LayerSettingEXT, which Debian 12's
#      1.3.239 headers lack), fetched with apt-get download through a private apt state (the
#      system's sources are left alone);
#   2. the library with the version's feature (ggml-2026 for 0.3.35; target/<feature>);
#   3. llama.cpp with -DGGML_VULKAN=ON through tests_c/upstream/CMakeLists.txt, stock and ours
#      (static; --shared adds the shared-library pair), into target/vulkan/;
#   4. with GGML_VK_VISIBLE_DEVICES=0 (ggml-vulkan skips CPU-type devices unless selected):
#      SmolLM2 generation (tests_c/upstream/gen.cpp), ours vs stock bit-identical (tokens + every
#      step's logits) for -ngl 99 / 10 / 0, flash attention on / off, a long prompt (one batch of
#      >= 32 tokens: ggml-vulkan's offload_op moves CPU-resident products to Vulkan) and the
#      same prompt in batches of 40; two devices (GGML_VK_VISIBLE_DEVICES=0,0: pipeline
#      parallelism, events); test-backend-ops -b Vulkan0 for a few op families, ours
#      vs stock the same pass counts;
#   5. no driver: VK_ICD_FILENAMES=/nonexistent, and GGML_VK_VISIBLE_DEVICES selecting none:
#      stock and ours both generate on the CPU (what each prints is kept in target/vulkan/runs);
#   6. device memory: 20 context create/use/free cycles; Vulkan0's free memory back at its
#      baseline after each, ours as stock; our compute buffers <= stock's.
# Every run is bounded (timeout). Ends with `vulkan: N passed, M failed`.
#   JOBS (default 2); --shared also builds and checks the shared libraries;
#   GGML_RS_VK_OPS="MUL_MAT ADD ..." the test-backend-ops families (default below).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS="${JOBS:-2}"
SHARED=0
[[ "${1:-}" == --shared ]] && SHARED=1
OUT="$ROOT/target/vulkan/${GGML_RS_UPSTREAM:-0.3.35}"
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
# llama-cpp-python 0.3.35 (ggml v0.20.0: the version this stage was checked with; GGML_RS_UPSTREAM=0.3.36
# for ggml 0.25.3), from scripts/fetch-upstream.sh: the trees, the library's feature
UPSTREAM="${GGML_RS_UPSTREAM:-0.3.35}"
mapfile -t trees < <(bash scripts/fetch-upstream.sh "$UPSTREAM")
SRC_STOCK="${trees[0]}"
SRC_RS="${trees[1]}"
FEATURE="${trees[2]}"
[[ -f "$MODEL" ]] || bash scripts/fetch-models.sh >/dev/null
step "cargo build --features $FEATURE" \
  env CARGO_TARGET_DIR="$ROOT/target/$FEATURE" cargo build --release --features "$FEATURE" -j "$JOBS" -q
LIB_A="$ROOT/target/$FEATURE/release/libggml_backend_rs.a"
LIB_SO="$ROOT/target/$FEATURE/release/libggml_backend_rs.so"

# configure, build, has_sym; the Vulkan builds at a low priority
BUILD_NICE=15
source "$ROOT/scripts/lib/upstream-build.sh"
VK_ARGS=(-DGGML_VULKAN=ON "-DVulkan_INCLUDE_DIR=$VK_INCLUDE")

# --- 3. builds ----------------------------------------------------------------------------------
S="$OUT/stock-static"
R="$OUT/rs-static"
mkdir -p "$S" "$R"
TARGETS=(gen-upstream test-backend-ops)
build_stock_static() { configure "$S" OFF OFF OFF "${VK_ARGS[@]}" && build "$S" "${TARGETS[@]}"; }
# ours links stock's libllama.a (llama only calls the backend API), as scripts/test-upstream.sh does
build_rs_static() { configure "$R" OFF ON OFF "${VK_ARGS[@]}" -DGGML_RS_LLAMA_LIB="$S/llama.cpp/src/libllama.a" && build "$R" "${TARGETS[@]}"; }
step "stock static: configure + build" build_stock_static
step "ours static: configure + build" build_rs_static

linked_ours() { has_sym "$1" ggml_backend_simd_reg && has_sym "$1" ggml_backend_sched_reserve_size && has_sym "$1" ggml_backend_vk_reg; }
stock_only() { ! has_sym "$1" ggml_backend_simd_reg && has_sym "$1" ggml_backend_vk_reg; }
check "ours links the library and ggml-vulkan (gen-upstream)" linked_ours "$R/gen-upstream"
check "stock links ggml-backend.cpp and ggml-vulkan" stock_only "$S/gen-upstream"

# --- 4. generation on Vulkan0 ------------------------------------------------------------------
export GGML_VK_VISIBLE_DEVICES=0
gen() { # dir out [args...]
  local dir="$1" out="$2"
  shift 2
  timeout 600 "$dir/gen-upstream" -m "$MODEL" -n "$NGEN" -t 2 "$@" >"$out" 2>"$out.err"
}
same() { grep -q 'logits digest' "$1" && cmp -s "$1" "$2"; }
has_vulkan() { grep -q '^device .*: Vulkan0' "$1"; }
gen_case() { # name args...: stock and ours with the same arguments, then the checks
  local name="$1" t0=$SECONDS
  shift
  gen "$S" "$OUT/runs/$name-stock.txt" "$@" || echo "vulkan: stock $name exited $?"
  gen "$R" "$OUT/runs/$name-rs.txt" "$@" || echo "vulkan: ours $name exited $?"
  times+=("$(printf '%-40s %4d s' "gen $name (stock + ours)" $((SECONDS - t0)))")
  check "gen $name: ours bit-identical to stock (tokens + logits)" same "$OUT/runs/$name-stock.txt" "$OUT/runs/$name-rs.txt"
  grep -E '^text:|digest' "$OUT/runs/$name-rs.txt" | sed 's/^/vulkan:   /' || true
}
gen "$S" "$OUT/runs/devices-stock.txt" -p "$PROMPT" -n 1 || true
check "stock registers Vulkan0 (llvmpipe) with GGML_VK_VISIBLE_DEVICES=0" has_vulkan "$OUT/runs/devices-stock.txt"
gen_case ngl99-fa-off -p "$PROMPT" -ngl 99 -fa off
gen_case ngl99-fa-on -p "$PROMPT" -ngl 99 -fa on
gen_case ngl10-fa-off -p "$PROMPT" -ngl 10 -fa off
gen_case ngl10-fa-on -p "$PROMPT" -ngl 10 -fa on
# one batch of ~150 tokens: with -ngl 10 / 0 the CPU-resident weights' products go to Vulkan
gen_case long-ngl10 -p "$LONG_PROMPT" -ngl 10 -n 8
gen_case long-ngl0 -p "$LONG_PROMPT" -ngl 0 -n 8
gen_case long-ngl99-b40 -p "$LONG_PROMPT" -ngl 99 -n 8 -b 40
# two devices on the one llvmpipe (Vulkan0, Vulkan1): llama.cpp turns on pipeline parallelism
# (4 copies of the split inputs, events between the backends, Vulkan -> Vulkan copies)
pipeline_on() { GEN_VERBOSE=1 GGML_VK_VISIBLE_DEVICES=0,0 timeout 300 "$1/gen-upstream" -m "$MODEL" -p "$PROMPT" -n 1 -t 2 -ngl 99 2>&1 | grep -c 'pipeline parallelism enabled' >/dev/null; }
check "two Vulkan devices: stock enables pipeline parallelism" pipeline_on "$S"
check "two Vulkan devices: ours enables pipeline parallelism" pipeline_on "$R"
GGML_VK_VISIBLE_DEVICES=0,0 gen_case two-dev-ngl99 -p "$PROMPT" -ngl 99 -fa off
GGML_VK_VISIBLE_DEVICES=0,0 gen_case two-dev-long-fa-on -p "$LONG_PROMPT" -ngl 99 -n 8 -fa on -b 40
# the offload happened: the scheduler debug shows Vulkan0 splits in a -ngl 0 run (stock's printout)
offloaded() { GGML_SCHED_DEBUG=1 GEN_VERBOSE=1 timeout 300 "$1/gen-upstream" -m "$MODEL" -p "$LONG_PROMPT" -n 1 -t 2 -ngl 0 2>&1 | grep -c 'SPLIT #[0-9]*: Vulkan0' >"$2" || true; [[ "$(cat "$2")" -gt 0 ]]; }
check "offload: stock runs Vulkan0 splits at -ngl 0 with a long prompt" offloaded "$S" "$OUT/runs/offload-stock.n"
check "offload: ours runs Vulkan0 splits at -ngl 0 with a long prompt" offloaded "$R" "$OUT/runs/offload-rs.n"
check "offload: ours as many Vulkan0 splits as stock" cmp -s "$OUT/runs/offload-stock.n" "$OUT/runs/offload-rs.n"

# every decision of the scheduler (GGML_SCHED_DEBUG=2: splits, their inputs, each node's backend),
# -ngl 10 with the long prompt. Printout differences only, normalized away: stock's `use=,c=`
# counters, op_desc (SWIGLU) vs op_name (GLU), and the node order inside a split (stock prints
# before graph_optimize reorders it, ours after), so the nodes are compared as sorted sets and the
# split headers in order.
sched_print() { # dir out
  GGML_SCHED_DEBUG=2 GEN_VERBOSE=1 timeout 300 "$1/gen-upstream" -m "$MODEL" -p "$LONG_PROMPT" -n 2 -t 2 -ngl 10 2>&1 |
    grep -E '^## SPLIT|^node #' | sed -E 's/ use=[0-9]+,c=[0-9]+//; s/\(    SWIGLU\)/(       GLU)/' >"$2" || true
}
same_decisions() {
  sched_print "$S" "$OUT/runs/sched-stock.txt"
  sched_print "$R" "$OUT/runs/sched-rs.txt"
  [[ -s "$OUT/runs/sched-rs.txt" ]] &&
    cmp -s <(grep '^## SPLIT' "$OUT/runs/sched-stock.txt") <(grep '^## SPLIT' "$OUT/runs/sched-rs.txt") &&
    cmp -s <(sed -E 's/^node #[ 0-9]+/node/' "$OUT/runs/sched-stock.txt" | sort) <(sed -E 's/^node #[ 0-9]+/node/' "$OUT/runs/sched-rs.txt" | sort)
}
check "scheduler decisions (GGML_SCHED_DEBUG=2, -ngl 10, long prompt): ours = stock" same_decisions

# --- test-backend-ops on Vulkan0 ----------------------------------------------------------------
# lavapipe compiles each pipeline with LLVM the first time it is used (Mesa's shader cache keeps
# it for later runs): MUL_MAT's F32/F16 cases take minutes each cold, so MUL_MAT is limited to the
# quantized types SmolLM2 uses (87 cases; GGML_RS_VK_MM_FILTER= runs all).
read -r -a VK_OPS <<<"${GGML_RS_VK_OPS:-MUL_MAT ADD GET_ROWS RMS_NORM SOFT_MAX}"
MM_FILTER="${GGML_RS_VK_MM_FILTER-type_a=(q4_0|q4_1|q8_0),type_b=f32}"
backend_ops() { # dir op -> the "N/M tests passed" line, or "no result"
  local log="$OUT/runs/backend-ops-$(basename "$1")-$2.log" filter=()
  [[ "$2" == MUL_MAT && -n "$MM_FILTER" ]] && filter=(-p "$MM_FILTER")
  timeout 1200 "$1/test-backend-ops" test -b Vulkan0 -o "$2" "${filter[@]}" >"$log" 2>&1 || true
  grep -Eo '[0-9]+/[0-9]+ tests passed' "$log" | tail -1 || echo "no result"
}
ops_t0=$SECONDS
for op in "${VK_OPS[@]}"; do
  a="$(backend_ops "$S" "$op")"
  b="$(backend_ops "$R" "$op")"
  echo "vulkan: test-backend-ops -b Vulkan0 -o $op: stock $a, ours $b"
  check "test-backend-ops -b Vulkan0 -o $op: ours = stock" test "$a" = "$b" -a "$b" != "no result"
done
times+=("$(printf '%-40s %4d s' "test-backend-ops ${#VK_OPS[@]} families" $((SECONDS - ops_t0)))")

# --- 5. no driver -----------------------------------------------------------------------------------
nodriver() { # name env...: stock and ours generate on the CPU, bit-identical
  local name="$1" t0=$SECONDS rcs=0 rcr=0
  shift
  env "$@" timeout 300 "$S/gen-upstream" -m "$MODEL" -p "$PROMPT" -n 8 -t 2 -ngl 99 >"$OUT/runs/$name-stock.txt" 2>"$OUT/runs/$name-stock.txt.err" || rcs=$?
  env "$@" timeout 300 "$R/gen-upstream" -m "$MODEL" -p "$PROMPT" -n 8 -t 2 -ngl 99 >"$OUT/runs/$name-rs.txt" 2>"$OUT/runs/$name-rs.txt.err" || rcr=$?
  times+=("$(printf '%-40s %4d s' "no driver: $name" $((SECONDS - t0)))")
  echo "vulkan: $name: stock rc $rcs ($(grep -c '^device' "$OUT/runs/$name-stock.txt") devices: $(grep '^device' "$OUT/runs/$name-stock.txt" | sed 's/ (.*//; s/^device [0-9]*: //' | paste -sd,)), ours rc $rcr ($(grep -c '^device' "$OUT/runs/$name-rs.txt") devices: $(grep '^device' "$OUT/runs/$name-rs.txt" | sed 's/ (.*//; s/^device [0-9]*: //' | paste -sd,))"
  check "no driver ($name): both run on the CPU, ours = stock" bash -c "
    [[ $rcs == 0 && $rcr == 0 ]] && ! grep -q Vulkan '$OUT/runs/$name-rs.txt' && cmp -s '$OUT/runs/$name-stock.txt' '$OUT/runs/$name-rs.txt'"
}
nodriver icd-nowhere VK_ICD_FILENAMES=/nonexistent GGML_VK_VISIBLE_DEVICES=
nodriver icd-nowhere-dev0 VK_ICD_FILENAMES=/nonexistent GGML_VK_VISIBLE_DEVICES=0
nodriver visible-none GGML_VK_VISIBLE_DEVICES=
nodriver visible-unset -u GGML_VK_VISIBLE_DEVICES

# --- 6. device memory over context cycles ---------------------------------------------------------
CYCLES=20
mem_t0=$SECONDS
gen "$S" "$OUT/runs/cycles-stock.txt" -p "$PROMPT" -ngl 99 -n 1 --cycles "$CYCLES" || true
gen "$R" "$OUT/runs/cycles-rs.txt" -p "$PROMPT" -ngl 99 -n 1 --cycles "$CYCLES" || true
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
echo "vulkan: memory stock: $(mem_summary "$OUT/runs/cycles-stock.txt"); ours: $(mem_summary "$OUT/runs/cycles-rs.txt")"
check "memory: stock's free device memory back at baseline after each of $CYCLES cycles" back_to_baseline "$OUT/runs/cycles-stock.txt"
check "memory: ours back at baseline after each of $CYCLES cycles" back_to_baseline "$OUT/runs/cycles-rs.txt"
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
echo "vulkan: memory stock: $(rss_summary "$OUT/runs/cycles-stock.txt")"
echo "vulkan: memory ours:  $(rss_summary "$OUT/runs/cycles-rs.txt")"
check "memory: stock's resident set flat over $CYCLES context cycles" rss_flat "$OUT/runs/cycles-stock.txt"
check "memory: ours resident set flat over $CYCLES context cycles" rss_flat "$OUT/runs/cycles-rs.txt"
# compute buffer sizes (llama.cpp's log lines, one set per context)
bufs() { grep -o '[A-Za-z0-9_]* compute buffer size = *[0-9.]* MiB' "$1" | sort -u; }
buf_le() { # stock-err ours-err: every backend's compute buffer ours <= stock
  join <(bufs "$1" | awk '{ print $1, $6 }' | sort) <(bufs "$2" | awk '{ print $1, $6 }' | sort) |
    awk '{ n++; printf "vulkan:   compute buffer %s: stock %s MiB, ours %s MiB\n", $1, $2, $3; if ($3 > $2) bad = 1 } END { exit bad || n == 0 }'
}
for c in ngl99-fa-off ngl10-fa-on long-ngl0; do
  check "compute buffers ($c): ours <= stock" buf_le "$OUT/runs/$c-stock.txt.err" "$OUT/runs/$c-rs.txt.err"
done

# --- shared libraries (--shared) ------------------------------------------------------------------
if [[ "$SHARED" == 1 ]]; then
  SS="$OUT/stock-shared"
  RS="$OUT/rs-shared"
  mkdir -p "$SS" "$RS"
  build_shared() { configure "$1" ON "$2" OFF "${VK_ARGS[@]}" && build "$1" gen-upstream; }
  step "stock shared: configure + build" build_shared "$SS" OFF
  step "ours shared: configure + build" build_shared "$RS" ON
  for c in ngl99-fa-off ngl10-fa-on; do
    args=(-p "$PROMPT" -ngl 99 -fa off)
    [[ "$c" == ngl10-fa-on ]] && args=(-p "$PROMPT" -ngl 10 -fa on)
    gen "$SS" "$OUT/runs/shared-$c-stock.txt" "${args[@]}" || true
    gen "$RS" "$OUT/runs/shared-$c-rs.txt" "${args[@]}" || true
    check "shared $c: stock shared = stock static" same "$OUT/runs/$c-stock.txt" "$OUT/runs/shared-$c-stock.txt"
    check "shared $c: ours = stock" same "$OUT/runs/shared-$c-stock.txt" "$OUT/runs/shared-$c-rs.txt"
  done
fi

checks_summary
