#!/usr/bin/env bash
# Upstream llama.cpp as llama-cpp-python's sdist vendors it, on this library, against the same
# sources built stock. scripts/test.sh runs it as a stage (GGML_RS_SKIP_UPSTREAM=1 skips it).
#   GGML_RS_UPSTREAM=0.3.36 (default: llama.cpp 0c1e57098, ggml 0.25.3, ggml-rpc protocol 7, cargo
#                           feature ggml-0253) or 0.3.35 (ggml v0.20.0, protocol 5, ggml-2026)
#
# Default (bounded, static link): the library with that version's feature (target/<feature>), then
# llama.cpp built by its own CMake twice through tests_c/upstream/CMakeLists.txt, stock and with the
# one option a user adds, -DCMAKE_PROJECT_INCLUDE=cmake/ggml-rs-upstream.cmake (the library in place
# of ggml-backend.cpp / ggml-backend-reg.cpp, our headers in place of ggml-backend.h /
# ggml-backend-impl.h), and checked:
#   - ours compiles no ggml-backend.cpp and exports the library's unprefixed ABI;
#   - llama.cpp's backend-level tests (test-backend-ops, -alloc, -opt, -gguf, -barrier,
#     -quantize-fns, -rope; linked to ggml alone): the same pass/fail set as stock;
#   - test-backend-ops in test mode on the CPU backend (-b CPU: every case computed through our
#     graph_copy / compare_graph_backend against a second CPU backend) for a few op families;
#   - SmolLM2-135M greedy generation (tests_c/upstream/gen.cpp: tokens + every step's logits
#     hash): ours bit-identical to stock;
#   - ggml-rpc across two processes on 127.0.0.1: our rpc-server + our client with all layers on
#     RPC, bit-identical to stock server + stock client; malformed requests from a test client
#     (tests_c/upstream/rpc_malformed.py): our server answers and survives as stock's;
#   - the scheduler with pipeline copies (tests_c/upstream/sched_copies.c: two backends,
#     parallel = true, an input no node uses): ours prints what stock prints (buffer sizes, each
#     input's place, outputs).
# To keep the bounded stage short, ours links stock's libllama.a (llama.cpp's own objects, which
# only call the backend API; the 2026 hosts' tests do the same) instead of compiling llama again.
#
# --full (or GGML_RS_TEST_UPSTREAM_FULL=1) adds (GGML_RS_UPSTREAM_PARTS picks some of its parts:
# rpc, models, tools, ctest, shared): llama compiled against our headers with
# llama.cpp's whole own ctest (LLAMA_BUILD_TESTS) stock vs ours; RPC with part of the layers
# (-ngl 10), two servers, the mixed pairs (stock client <-> our server, ours <-> stock server);
# the shared-library build (BUILD_SHARED_LIBS=ON) with the same generation and RPC checks; the
# faults (server killed during a generation, restarted).
#
# Every run is bounded (timeout); servers listen on 127.0.0.1 only and are killed on exit.
# Ends with `upstream: N passed, M failed` and each step's wall time.
#   JOBS (default 2)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS="${JOBS:-2}"
FULL="${GGML_RS_TEST_UPSTREAM_FULL:-0}"
[[ "${1:-}" == --full ]] && FULL=1
UPSTREAM="${GGML_RS_UPSTREAM:-0.3.36}"
OUT="$ROOT/target/upstream/$UPSTREAM"
MODEL="$ROOT/.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPT="The capital of France is"
NGEN=24
mkdir -p "$OUT/runs"

CHECK_PREFIX=upstream
# check, step, checks_summary
source "$ROOT/scripts/lib/checks.sh"

SERVERS=()
cleanup() {
  local pid
  for pid in "${SERVERS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${SERVERS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT

# --- sources, library, model ------------------------------------------------------------------
mapfile -t trees < <(bash scripts/fetch-upstream.sh "$UPSTREAM")
SRC_STOCK="${trees[0]}"
SRC_RS="${trees[1]}"
FEATURE="${trees[2]}"
HEADERS="${trees[3]}"
echo "upstream: llama-cpp-python $UPSTREAM, the library's feature $FEATURE"
[[ -f "$MODEL" ]] || bash scripts/fetch-models.sh >/dev/null
source "$ROOT/scripts/lib/cargo-features.sh"
step "cargo build --features $FEATURE" \
  cargo_features_build "$FEATURE" "$ROOT/target/$FEATURE" -j "$JOBS" -q
LIB_A="$ROOT/target/$FEATURE/release/libggml_backend_rs.a"
LIB_SO="$ROOT/target/$FEATURE/release/libggml_backend_rs.so"

# configure, build, has_sym
source "$ROOT/scripts/lib/upstream-build.sh"
GGML_TESTS=(test-backend-ops test-alloc test-opt test-gguf test-barrier test-quantize-fns test-rope)

S="$OUT/stock-static"
R="$OUT/rs-static"
mkdir -p "$S" "$R"
build_stock_static() { configure "$S" OFF OFF OFF && build "$S" gen-upstream rpc-server sched-copies "${GGML_TESTS[@]}"; }
build_rs_static() {
  configure "$R" OFF ON OFF -DGGML_RS_LLAMA_LIB="$S/llama.cpp/src/libllama.a" &&
    build "$R" gen-upstream rpc-server sched-copies "${GGML_TESTS[@]}"
}
step "stock static: configure + build" build_stock_static
step "ours static: configure + build" build_rs_static

# --- the unprefixed build ------------------------------------------------------------------------
linked_ours() { # binary: the scheduler is ours (the library's SIMD registry is there), stock's is not
  has_sym "$1" ggml_backend_simd_reg && has_sym "$1" ggml_backend_sched_reserve_size
}
stock_only() { ! has_sym "$1" ggml_backend_simd_reg && has_sym "$1" ggml_backend_sched_reserve_size; }
check "unprefixed ABI linked in ours (gen-upstream)" linked_ours "$R/gen-upstream"
check "unprefixed ABI linked in ours (rpc-server)" linked_ours "$R/rpc-server"
check "stock links ggml-backend.cpp (no library)" stock_only "$S/gen-upstream"
# linked as a CMake user links: no -u, --whole-archive or --no-as-needed (the link anchors keep the
# CPU and RPC registrations)
no_link_flags() { ! grep -E -- '-u,ggml_|--whole-archive|--no-as-needed' "$1/build.ninja" >/dev/null; }
check "ours links with no extra linker flag" no_link_flags "$R"
not_compiled() { ! grep -E 'ggml-backend(-reg)?\.cpp\.o' "$1/build.ninja" >/dev/null; }
check "ggml-backend.cpp / -reg.cpp not compiled in ours" not_compiled "$R"
swapped() { cmp -s "$SRC_RS/ggml/include/ggml-backend.h" "$ROOT/include/$1/ggml-backend.h" && cmp -s "$SRC_RS/ggml/src/ggml-backend-impl.h" "$ROOT/include/$1/ggml-backend-impl.h"; }
check "our headers in place of the tree's (cmake/ggml-rs-upstream.cmake)" swapped "$HEADERS"

# --- llama.cpp's backend-level tests ---------------------------------------------------------------
ctest_set() { # dir -> "name:Passed|Failed" lines
  (cd "$1" && timeout 900 ctest --timeout 300 -j 1 >"$1.ctest.log" 2>&1) || true
  grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' "$1.ctest.log" |
    sed -E 's/^.*Test +#[0-9]+: ([^ ]+) [. ]*(\*\*\*)?([A-Za-z]+).*/\1:\3/' | sort
}
ctest_both() { ctest_set "$1" >"$3"; ctest_set "$2" >"$4"; }
step "ctest (7 ggml tests) stock + ours" ctest_both "$S" "$R" "$OUT/ctest-stock.txt" "$OUT/ctest-rs.txt"
echo "upstream: ctest stock: $(grep -c ':Passed' "$OUT/ctest-stock.txt") passed of $(wc -l <"$OUT/ctest-stock.txt"); ours: $(grep -c ':Passed' "$OUT/ctest-rs.txt") passed of $(wc -l <"$OUT/ctest-rs.txt")"
check "ctest: ours = stock (pass/fail per test)" cmp -s "$OUT/ctest-stock.txt" "$OUT/ctest-rs.txt"
check "ctest: ours all passed" bash -c "[[ -s '$OUT/ctest-rs.txt' ]] && ! grep -qv ':Passed' '$OUT/ctest-rs.txt'"

# test-backend-ops compares a backend against the CPU and skips the CPU itself unless asked for it
backend_ops() { # dir op
  local log="$OUT/runs/backend-ops-$(basename "$1")-$2.log"
  # (FLASH_ATTN_EXT's 5141 cases take ~5 min on an idle core and more under load)
  timeout 1800 "$1/test-backend-ops" test -b CPU -o "$2" >"$log" 2>&1 && grep -q '1/1 backends passed' "$log"
}
# ~25 s on 2 cores; the full run adds the slow families (up to minutes each)
BACKEND_OPS=(SET_ROWS ADD)
[[ "$FULL" == 1 ]] && BACKEND_OPS+=(ROPE SOFT_MAX CPY GET_ROWS MUL_MAT FLASH_ATTN_EXT)
# GGML_RS_UPSTREAM_OPS: the families to run instead (e.g. to re-run one part of the full stage)
[[ -n "${GGML_RS_UPSTREAM_OPS:-}" ]] && read -ra BACKEND_OPS <<<"$GGML_RS_UPSTREAM_OPS"
backend_ops_all() {
  local op ok=0
  for op in "${BACKEND_OPS[@]}"; do
    if backend_ops "$R" "$op"; then
      echo "upstream: test-backend-ops -b CPU -o $op: $(grep -Eo '[0-9]+/[0-9]+ tests passed' "$OUT/runs/backend-ops-rs-static-$op.log")"
    else
      echo "upstream: test-backend-ops -b CPU -o $op FAILED (see $OUT/runs/backend-ops-rs-static-$op.log)"
      ok=1
    fi
  done
  return $ok
}
backend_ops_ok=0
step "test-backend-ops -b CPU (ours)" backend_ops_all || backend_ops_ok=1
check "test-backend-ops test -b CPU (${BACKEND_OPS[*]})" test "$backend_ops_ok" = 0

# --- generation ------------------------------------------------------------------------------
gen() { # dir out [args...]
  local dir="$1" out="$2"
  shift 2
  timeout 300 "$dir/gen-upstream" -m "$MODEL" -p "$PROMPT" -n "$NGEN" -t 2 "$@" >"$out" 2>"$out.err"
}
same() { # a b: identical outputs that hold a generation (device lines name the server's port)
  grep -q 'logits digest' "$1" && cmp -s <(grep -v '^device' "$1") <(grep -v '^device' "$2")
}
gen_both() { gen "$S" "$OUT/runs/gen-stock.txt" || true; gen "$R" "$OUT/runs/gen-rs.txt" || true; }
step "generation stock + ours" gen_both
check "generation: ours bit-identical to stock (tokens + logits)" same "$OUT/runs/gen-stock.txt" "$OUT/runs/gen-rs.txt"
grep -E '^text:|digest' "$OUT/runs/gen-rs.txt" | sed 's/^/upstream:   /' || true

# --- the scheduler with pipeline copies ------------------------------------------------------------
"$S/sched-copies" >"$OUT/runs/sched-copies-stock.txt" 2>&1 || true
"$R/sched-copies" >"$OUT/runs/sched-copies-rs.txt" 2>&1 || true
check "pipeline copies (n_copies > 1): ours = stock (sizes, places, outputs)" \
  bash -c "grep -q 'round 2: out sum' '$OUT/runs/sched-copies-stock.txt' && cmp -s '$OUT/runs/sched-copies-stock.txt' '$OUT/runs/sched-copies-rs.txt'"
grep -E 'n_copies|round 0: backend' "$OUT/runs/sched-copies-rs.txt" | sed 's/^/upstream:   /' || true

# --- ggml-rpc across processes ------------------------------------------------------------------
source "$ROOT/scripts/lib/ports.sh"
PORT_BASE=$(rpc_port_base)
next_port=$PORT_BASE
start_server() { # dir -> sets SERVER_PID, SERVER_EP
  local dir="$1" port
  port=$next_port
  next_port=$((next_port + 1))
  # loopback only
  # SERVER_VMEM (KiB): the server's address space capped (ulimit -v), so it refuses large buffers
  (if [[ -n "${SERVER_VMEM:-}" ]]; then ulimit -v "$SERVER_VMEM"; fi
   exec timeout 900 "$dir/rpc-server" -H 127.0.0.1 -p "$port" -t 2) >"$OUT/runs/server-$port.log" 2>&1 &
  SERVER_PID=$!
  SERVERS+=("$SERVER_PID")
  SERVER_EP="127.0.0.1:$port"
  local i
  for i in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      return 0
    fi
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.2
  done
  echo "upstream: rpc-server on $SERVER_EP did not come up" >&2
  return 1
}
stop_server() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
rpc_run() { # client-dir server-dir out ngl
  local client="$1" server="$2" out="$3" ngl="$4"
  start_server "$server" || return 1
  gen "$client" "$out" --rpc "$SERVER_EP" -ngl "$ngl" || true
  stop_server "$SERVER_PID"
}
rpc_t0=$SECONDS
rpc_run "$S" "$S" "$OUT/runs/rpc99-stock-stock.txt" 99
rpc_run "$R" "$R" "$OUT/runs/rpc99-rs-rs.txt" 99
times+=("$(printf '%-40s %4d s' "RPC -ngl 99 stock + ours" $((SECONDS - rpc_t0)))")
check "RPC device seen by the client" grep -q '^device .*RPC' "$OUT/runs/rpc99-rs-rs.txt"
check "RPC -ngl 99: our server + client bit-identical to stock's" same "$OUT/runs/rpc99-stock-stock.txt" "$OUT/runs/rpc99-rs-rs.txt"

# malformed requests from a test client (tests_c/upstream/rpc_malformed.py: bogus buffers and
# devices, impossible sizes, removed / unknown types, reads past a buffer, double frees, broken
# graphs; a dead server is restarted): our server answers and survives exactly as stock's does
malformed() { # dir out
  timeout 300 python3 "$ROOT/tests_c/upstream/rpc_malformed.py" "$next_port" "$1/rpc-server" -t 2 >"$2" 2>&1 || true
  next_port=$((next_port + 1))
}
malformed "$S" "$OUT/runs/rpc-malformed-stock.txt"
malformed "$R" "$OUT/runs/rpc-malformed-rs.txt"
check "RPC malformed requests: our server = stock's (answers, survival)" bash -c "
  grep -q 'command without its payload' '$OUT/runs/rpc-malformed-stock.txt' && cmp -s '$OUT/runs/rpc-malformed-stock.txt' '$OUT/runs/rpc-malformed-rs.txt'"
echo "upstream: RPC malformed requests: $(grep -c 'server alive' "$OUT/runs/rpc-malformed-rs.txt") survived, $(grep -c 'server DEAD' "$OUT/runs/rpc-malformed-rs.txt") killed the server (stock: $(grep -c 'server DEAD' "$OUT/runs/rpc-malformed-stock.txt"))"

# --- full ------------------------------------------------------------------------------------
# The full stage in parts (GGML_RS_UPSTREAM_PARTS="rpc models tools ctest shared", default all of them)
cfg_build() { configure "$1" "$2" "$3" "$4" && shift 4 && build "$@"; }
part_rpc() {
  t0=$SECONDS
  rpc_run "$S" "$R" "$OUT/runs/rpc99-stock-rs.txt" 99
  rpc_run "$R" "$S" "$OUT/runs/rpc99-rs-stock.txt" 99
  check "RPC -ngl 99: stock client <-> our server = stock pair" same "$OUT/runs/rpc99-stock-stock.txt" "$OUT/runs/rpc99-stock-rs.txt"
  check "RPC -ngl 99: our client <-> stock server = stock pair" same "$OUT/runs/rpc99-stock-stock.txt" "$OUT/runs/rpc99-rs-stock.txt"
  rpc_run "$S" "$S" "$OUT/runs/rpc10-stock-stock.txt" 10
  rpc_run "$R" "$R" "$OUT/runs/rpc10-rs-rs.txt" 10
  check "RPC -ngl 10 (part on RPC): ours = stock" same "$OUT/runs/rpc10-stock-stock.txt" "$OUT/runs/rpc10-rs-rs.txt"
  two_servers() { # client server out
    start_server "$2" || return 1
    local p1=$SERVER_PID e1=$SERVER_EP
    start_server "$2" || return 1
    gen "$1" "$3" --rpc "$e1,$SERVER_EP" -ngl 99 || true
    stop_server "$p1"
    stop_server "$SERVER_PID"
  }
  two_servers "$S" "$S" "$OUT/runs/rpc2-stock.txt"
  two_servers "$R" "$R" "$OUT/runs/rpc2-rs.txt"
  check "RPC two servers -ngl 99: ours = stock" same "$OUT/runs/rpc2-stock.txt" "$OUT/runs/rpc2-rs.txt"
  times+=("$(printf '%-40s %4d s' "RPC mixed / partial / two servers" $((SECONDS - t0)))")

  # faults: the server dies during a long generation; the client must end (no hang, no crash
  # signal) and ours must do no worse than stock
  fault_run() { # client server out
    start_server "$2" || return 1
    local pid=$SERVER_PID rc=0 server
    server="$(pgrep -P "$pid")" # the rpc-server under its timeout: SIGKILL does not pass through timeout
    (sleep 1.5; kill -9 "$server" 2>/dev/null) &
    timeout 120 "$1/gen-upstream" -m "$MODEL" -p "$PROMPT" -n 400 -t 2 --rpc "$SERVER_EP" -ngl 99 >"$3" 2>"$3.err" || rc=$?
    echo "$rc" >"$3.rc"
    wait "$pid" 2>/dev/null || true
  }
  fault_run "$S" "$S" "$OUT/runs/fault-stock.txt"
  fault_run "$R" "$R" "$OUT/runs/fault-rs.txt"
  echo "upstream: fault (server killed mid-generation): stock client rc $(cat "$OUT/runs/fault-stock.txt.rc"), ours rc $(cat "$OUT/runs/fault-rs.txt.rc")"
  # restart: a new server on the killed one's port serves a new client bit-identically
  restart_run() { # client server out
    start_server "$2" || return 1
    local port="${SERVER_EP##*:}"
    kill -9 "$(pgrep -P "$SERVER_PID")" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    next_port="$port"
    rpc_run "$1" "$2" "$3" 99
  }
  restart_run "$R" "$R" "$OUT/runs/restart-rs.txt"
  check "restart: a new server on the same port, ours = stock pair" same "$OUT/runs/rpc99-stock-stock.txt" "$OUT/runs/restart-rs.txt"
  # refusal: a server that cannot allocate the model's 92 MB buffer (address space capped at
  # 60 MB): the client fails to load as stock's does, and the server keeps serving
  refuse_run() { # client server out
    SERVER_VMEM=60000 start_server "$2" || return 1
    local rc=0
    timeout 120 "$1/gen-upstream" -m "$MODEL" -p "$PROMPT" -n 4 -t 2 --rpc "$SERVER_EP" -ngl 99 >"$3" 2>"$3.err" || rc=$?
    echo "$rc" >"$3.rc"
    if kill -0 "$SERVER_PID" 2>/dev/null; then echo alive >"$3.server"; else echo gone >"$3.server"; fi
    stop_server "$SERVER_PID"
  }
  refuse_run "$S" "$S" "$OUT/runs/refuse-stock.txt"
  refuse_run "$R" "$R" "$OUT/runs/refuse-rs.txt"
  echo "upstream: refusal (server capped at 60 MB): stock client rc $(cat "$OUT/runs/refuse-stock.txt.rc"), server $(cat "$OUT/runs/refuse-stock.txt.server"); ours rc $(cat "$OUT/runs/refuse-rs.txt.rc"), server $(cat "$OUT/runs/refuse-rs.txt.server")"
  check "refusal: our client fails like stock's, our server keeps serving" bash -c "
    [[ \$(cat '$OUT/runs/refuse-rs.txt.rc') == \$(cat '$OUT/runs/refuse-stock.txt.rc') && \$(cat '$OUT/runs/refuse-rs.txt.rc') != 0 ]] &&
    [[ \$(cat '$OUT/runs/refuse-rs.txt.server') == alive && \$(cat '$OUT/runs/refuse-stock.txt.server') == alive ]] &&
    grep -q 'unable to allocate' '$OUT/runs/refuse-rs.txt.err'"
  check "fault: our client ends like stock's (no hang: rc != 124)" bash -c "[[ \$(cat '$OUT/runs/fault-rs.txt.rc') != 124 && \$(cat '$OUT/runs/fault-rs.txt.rc') == \$(cat '$OUT/runs/fault-stock.txt.rc') ]]"

}
part_models() {
  # Gemma 3 270M, and both models with the library's SIMD backend (GGML_RS_SIMD=1) beside ggml-cpu
  GEMMA="$ROOT/.cache/models/gemma-3-270m-q4_k_m.gguf"
  gen "$S" "$OUT/runs/gen-gemma-stock.txt" -m "$GEMMA" || true
  gen "$R" "$OUT/runs/gen-gemma-rs.txt" -m "$GEMMA" || true
  check "Gemma 3 270M generation: ours = stock" same "$OUT/runs/gen-gemma-stock.txt" "$OUT/runs/gen-gemma-rs.txt"
  GGML_RS_SIMD=1 gen "$R" "$OUT/runs/gen-simd-rs.txt" || true
  GGML_RS_SIMD=1 gen "$R" "$OUT/runs/gen-gemma-simd-rs.txt" -m "$GEMMA" || true
  check "SmolLM2 with GGML_RS_SIMD=1: ours = stock" same "$OUT/runs/gen-stock.txt" "$OUT/runs/gen-simd-rs.txt"
  check "Gemma 3 270M with GGML_RS_SIMD=1: ours = stock" same "$OUT/runs/gen-gemma-stock.txt" "$OUT/runs/gen-gemma-simd-rs.txt"
  grep -h 'SIMD: contract' "$OUT/runs/gen-simd-rs.txt.err" | head -1 | sed 's/^/upstream:   /' || true

}
part_tools() {
  # upstream's own CMake and tools, as the README builds them: the one option
  # -DCMAKE_PROJECT_INCLUDE=cmake/ggml-rs-upstream.cmake on llama.cpp's configure line, stock vs
  # ours: llama-completion (greedy text), llama-perplexity (every chunk's figure and the final
  # estimate, to the last printed digit), ggml-rpc-server with the other side's client, its file
  # cache (-c: a second run served from it) and a server exposing two devices (-d CPU,CPU)
  ST="$OUT/stock-tools"
  RT="$OUT/rs-tools"
  TOOLS=(llama-completion llama-perplexity ggml-rpc-server)
  tools_build() { # dir src [cmake args...]
    local dir="$1" src="$2"
    shift 2
    cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_RPC=ON \
      -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DGGML_CCACHE=OFF ${NO_AMX[@]+"${NO_AMX[@]}"} "$@" \
      >"$dir.configure.log" 2>&1 || { tail -20 "$dir.configure.log"; return 1; }
    build "$dir" "${TOOLS[@]}"
  }
  step "stock tools (upstream CMake): build" tools_build "$ST" "$SRC_STOCK"
  step "ours tools (upstream CMake + include): build" tools_build "$RT" "$SRC_RS" \
    "-DCMAKE_PROJECT_INCLUDE=$ROOT/cmake/ggml-rs-upstream.cmake" "-DGGML_RS_LIB=$LIB_A"
  check "upstream tools: ours compiles no ggml-backend.cpp" not_compiled "$RT"
  check "upstream tools: llama-completion linked on the library" linked_ours "$RT/bin/llama-completion"
  completion() { # dir out [args...]
    local dir="$1" out="$2"
    shift 2
    timeout 300 "$dir/bin/llama-completion" -m "$MODEL" -p "$PROMPT" -n "$NGEN" -t 2 --temp 0 -s 1 -no-cnv \
      --no-warmup "$@" >"$out" 2>"$out.err" </dev/null
  }
  completion "$ST" "$OUT/runs/completion-stock.txt" || true
  completion "$RT" "$OUT/runs/completion-rs.txt" || true
  check "llama-completion: ours = stock (text)" bash -c "grep -q 'Paris' '$OUT/runs/completion-stock.txt' && cmp -s '$OUT/runs/completion-stock.txt' '$OUT/runs/completion-rs.txt'"
  # a text of the project's own docs, long enough for 6 chunks of 128 tokens
  # (cat inside braces: head closing the pipe early must not stop the script under pipefail)
  { cat "$ROOT"/docs/*.md || true; } | head -c 60000 >"$OUT/runs/ppl-text.txt"
  perplexity() { # dir out
    timeout 600 "$1/bin/llama-perplexity" -m "$MODEL" -f "$OUT/runs/ppl-text.txt" -c 128 --chunks 6 -t 2 -b 128 \
      >"$2" 2>&1 </dev/null || true
    grep -Eo '\[[0-9]+\][0-9.]+|Final estimate: PPL = [0-9.]+ \+/- [0-9.]+' "$2" >"$2.figures" || true
  }
  perplexity "$ST" "$OUT/runs/ppl-stock.txt"
  perplexity "$RT" "$OUT/runs/ppl-rs.txt"
  echo "upstream: llama-perplexity ours: $(tail -1 "$OUT/runs/ppl-rs.txt.figures"); stock: $(tail -1 "$OUT/runs/ppl-stock.txt.figures")"
  check "llama-perplexity: ours = stock (every chunk, final estimate)" bash -c "grep -q 'Final estimate' '$OUT/runs/ppl-stock.txt.figures' && cmp -s '$OUT/runs/ppl-stock.txt.figures' '$OUT/runs/ppl-rs.txt.figures'"
  # ggml-rpc-server of upstream's tools: started like start_server, by its upstream name
  tool_server() { # dir [server args...] -> SERVER_PID, SERVER_EP
    local dir="$1" port=$next_port
    shift
    next_port=$((next_port + 1))
    (exec timeout 900 "$dir/bin/ggml-rpc-server" -H 127.0.0.1 -p "$port" -t 2 "$@") >"$OUT/runs/server-$port.log" 2>&1 &
    SERVER_PID=$!
    SERVERS+=("$SERVER_PID")
    SERVER_EP="127.0.0.1:$port"
    local i
    for i in $(seq 1 100); do
      (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.2
    done
    return 1
  }
  tool_rpc() { # client-dir server-dir out [server args...]
    local client="$1" server="$2" out="$3"
    shift 3
    tool_server "$server" "$@" || return 1
    completion "$client" "$out" --rpc "$SERVER_EP" -ngl 99 || true
    stop_server "$SERVER_PID"
  }
  tool_rpc "$ST" "$ST" "$OUT/runs/tools-rpc-stock-stock.txt"
  tool_rpc "$ST" "$RT" "$OUT/runs/tools-rpc-stock-rs.txt"
  check "ggml-rpc-server: ours with a stock client = stock pair" bash -c "grep -q 'Paris' '$OUT/runs/tools-rpc-stock-stock.txt' && cmp -s '$OUT/runs/tools-rpc-stock-stock.txt' '$OUT/runs/tools-rpc-stock-rs.txt'"
  # the server's file cache: two clients in a row on one server with -c (the second run's tensors
  # come from the cache), in a cache folder of its own
  cache_run() { # client server out
    export LLAMA_CACHE="$OUT/runs/rpc-cache-$(basename "$2")"
    rm -rf "$LLAMA_CACHE"
    tool_server "$2" -c || return 1
    completion "$1" "$3.1" --rpc "$SERVER_EP" -ngl 99 || true
    completion "$1" "$3.2" --rpc "$SERVER_EP" -ngl 99 || true
    stop_server "$SERVER_PID"
    find "$LLAMA_CACHE" -type f 2>/dev/null | wc -l >"$3.files"
    unset LLAMA_CACHE
  }
  cache_run "$ST" "$ST" "$OUT/runs/rpc-cache-stock.txt"
  cache_run "$RT" "$RT" "$OUT/runs/rpc-cache-rs.txt"
  echo "upstream: RPC cache files: stock $(cat "$OUT/runs/rpc-cache-stock.txt.files"), ours $(cat "$OUT/runs/rpc-cache-rs.txt.files")"
  check "ggml-rpc-server -c: both runs of ours = stock's first run" bash -c "
    cmp -s '$OUT/runs/tools-rpc-stock-stock.txt' '$OUT/runs/rpc-cache-rs.txt.1' && cmp -s '$OUT/runs/tools-rpc-stock-stock.txt' '$OUT/runs/rpc-cache-rs.txt.2' &&
    cmp -s '$OUT/runs/rpc-cache-stock.txt.files' '$OUT/runs/rpc-cache-rs.txt.files'"
  tool_rpc "$ST" "$ST" "$OUT/runs/tools-rpc2dev-stock.txt" -d CPU,CPU
  tool_rpc "$RT" "$RT" "$OUT/runs/tools-rpc2dev-rs.txt" -d CPU,CPU
  check "ggml-rpc-server -d CPU,CPU (two devices): ours = stock" bash -c "grep -q 'Paris' '$OUT/runs/tools-rpc2dev-stock.txt' && cmp -s '$OUT/runs/tools-rpc2dev-stock.txt' '$OUT/runs/tools-rpc2dev-rs.txt'"

}
part_ctest() {
  # llama compiled against our headers, with llama.cpp's own whole test suite
  SF="$OUT/stock-static-tests"
  RF="$OUT/rs-static-tests"
  mkdir -p "$SF" "$RF"
  step "stock static + tests: build" cfg_build "$SF" OFF OFF ON "$SF" all
  step "ours static + tests: build" cfg_build "$RF" OFF ON ON "$RF" all
  step "llama.cpp ctest stock + ours" ctest_both "$SF" "$RF" "$OUT/ctest-full-stock.txt" "$OUT/ctest-full-rs.txt"
  echo "upstream: full ctest stock: $(grep -c ':Passed' "$OUT/ctest-full-stock.txt") passed of $(wc -l <"$OUT/ctest-full-stock.txt"); ours: $(grep -c ':Passed' "$OUT/ctest-full-rs.txt") passed of $(wc -l <"$OUT/ctest-full-rs.txt")"
  check "full ctest: ours = stock (pass/fail per test)" cmp -s "$OUT/ctest-full-stock.txt" "$OUT/ctest-full-rs.txt"
  gen "$RF" "$OUT/runs/gen-rs-full.txt" || true
  check "generation, llama compiled on our headers = stock" same "$OUT/runs/gen-stock.txt" "$OUT/runs/gen-rs-full.txt"

}
part_shared() {
  # shared libraries
  SS="$OUT/stock-shared"
  RS="$OUT/rs-shared"
  mkdir -p "$SS" "$RS"
  step "stock shared: build" cfg_build "$SS" ON OFF OFF "$SS" gen-upstream rpc-server
  step "ours shared: build" cfg_build "$RS" ON ON OFF "$RS" gen-upstream rpc-server
  check "ours shared links with no extra linker flag" no_link_flags "$RS"
  gen "$SS" "$OUT/runs/gen-stock-shared.txt" || true
  gen "$RS" "$OUT/runs/gen-rs-shared.txt" || true
  check "shared: stock shared = stock static" same "$OUT/runs/gen-stock.txt" "$OUT/runs/gen-stock-shared.txt"
  check "shared: ours = stock" same "$OUT/runs/gen-stock-shared.txt" "$OUT/runs/gen-rs-shared.txt"
  rpc_run "$SS" "$SS" "$OUT/runs/rpc99-stock-shared.txt" 99
  rpc_run "$RS" "$RS" "$OUT/runs/rpc99-rs-shared.txt" 99
  check "shared: RPC -ngl 99 ours = stock" same "$OUT/runs/rpc99-stock-shared.txt" "$OUT/runs/rpc99-rs-shared.txt"
}
if [[ "$FULL" == 1 ]]; then
  for part in ${GGML_RS_UPSTREAM_PARTS:-rpc models tools ctest shared}; do
    "part_$part"
  done
fi

checks_summary
