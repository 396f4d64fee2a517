#!/usr/bin/env bash
# Benchmark the two real hosts built on ggml-backend-rs against stock:
#   llama.rn 0.4.4   SmolLM2-135M Q4_1: prompt tok/s (256-token prompt) and
#                    generation tok/s (64 greedy tokens)
#   whisper.rn 0.4.3 whisper base (the real model, scripts/fetch-models.sh) on the assistant's
#                    espeak-ng question, and the random-weight tiny test model on the longer
#                    espeak-ng sentence: encode ms and total (whisper_full) ms; whisper base quantized
#                    to q5_1 (docs/quantized-models.md) on the question: encode ms and total ms
#   cui-llama.rn 1.12.2 Gemma 3 270M Q4_K_M (Q5_0 / Q4_K / Q6_K / Q8_0 weights): prompt tok/s
#                    (256-token prompt) and generation tok/s (64 tokens), from the 2026 build
#                    ($BUILD_DIR-rev2026, configured as scripts/test-rev2026.sh does): stock 2026
#                    ggml-cpu against the same host build's static / shared / SIMD modes
#                    (--no-gemma leaves it out, and with it the 2026 build)
# plus the compute buffer sizes the hosts log, the scheduler's overhead per llama decode graph
# (time in the scheduler minus time in ggml-cpu's compute, measured by --wrap probes in the
# stock and static drivers; the static one with our graph allocator and with the host's,
# GGML_RS_ALLOC=host), the compute buffer bytes of each reserved graph (ggml-alloc's best fit,
# ours, and the lower bound: GGML_RS_ALLOC_STATS=1) and, as mode "simd", the static build with GGML_RS_SIMD=1 (the
# library's SIMD backend computing instead of ggml-cpu; mode "simd-avx2" the same kept to its AVX2
# kernels with GGML_RS_SIMD_AVX2_ONLY=1, for CPUs that also have AVX-512; mode "simd-sgemm" the
# relaxed GGML_RS_SIMD_SGEMM=1, with its distance from stock's output); then the per-op table of SIMD against
# ggml-cpu (tests_c/bench_ops.c). Runs are interleaved
# (stock, static, shared, stock, ...) after one warm-up round; the table shows
# medians, and each library mode's speed relative to stock (>1 = faster).
# All runs use 2 threads by default (on a busy 2-core machine the spinning ggml
# threadpool makes timings unstable: bench on an idle machine).
#
# usage: scripts/bench.sh [-r RUNS=5] [-t THREADS=2] [--modes "static shared"] [--no-build] [--no-gemma]
# env:   BUILD_DIR (default build), JOBS (default 2)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD_DIR="${BUILD_DIR:-build}"
JOBS="${JOBS:-2}"
RUNS=5
THREADS=2
MODES="static shared simd simd-avx2"
BUILD=1
GEMMA=1
while (($#)); do
  case "$1" in
    -r) RUNS="$2"; shift 2 ;;
    -t) THREADS="$2"; shift 2 ;;
    --modes) MODES="$2"; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --no-gemma) GEMMA=0; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bench: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
((RUNS >= 1)) || { echo "bench: -r must be >= 1" >&2; exit 2; }

source scripts/provision.sh build hosts speech
if ((BUILD)); then
  bash scripts/fetch-hosts.sh >/dev/null
  bash scripts/fetch-models.sh >/dev/null
  targets=()
  for m in stock $MODES; do [[ $m == simd* ]] || targets+=("llama_driver_$m" "whisper_driver_$m"); done
  targets+=(llama_driver_static whisper_driver_static llama_driver_timed_stock llama_driver_timed_static bench_ops_lm
            whisper_quantize)
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_RS_HOST_CODE_OPT=-O3 >/dev/null
  LOG="$BUILD_DIR/bench-build.log"
  if ! cmake --build "$BUILD_DIR" -j "$JOBS" --target "${targets[@]}" >"$LOG" 2>&1; then
    tail -n 60 "$LOG" >&2
    echo "bench: build failed (full log: $LOG)" >&2
    exit 1
  fi
  if ((GEMMA)); then
    # the 2026 build for Gemma, as scripts/test-rev2026.sh configures it
    bash scripts/fetch-hosts.sh cui >/dev/null
    CARGO_TARGET_DIR="$ROOT/target/rev2026" cargo build --release --features lm-2026,wsp-2026 >"$LOG" 2>&1 \
      || { tail -n 60 "$LOG" >&2; echo "bench: 2026 library build failed" >&2; exit 1; }
    cmake -S . -B "$BUILD_DIR-rev2026" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_RS_REV2026=ON -DGGML_RS_HOST_CODE_OPT=-O3 \
      -DGGML_RS_CARGO_BUILD=OFF -DGGML_RS_LIB_DIR="$ROOT/target/rev2026/release" \
      -DGGML_RS_VALGRIND_TEST=OFF -DGGML_RS_FUZZ_TEST=OFF >/dev/null
    targets=(llama_driver_stock llama_driver_static)
    for m in $MODES; do [[ $m == simd* ]] || targets+=("llama_driver_$m"); done
    if ! cmake --build "$BUILD_DIR-rev2026" -j "$JOBS" --target "${targets[@]}" >"$LOG" 2>&1; then
      tail -n 60 "$LOG" >&2
      echo "bench: 2026 build failed (full log: $LOG)" >&2
      exit 1
    fi
  fi
fi
# whisper base q5_1 (made once, stamped; tests_c/hosts/make-quantized.sh)
bash tests_c/hosts/make-quantized.sh "$BUILD_DIR/tests_c/hosts/whisper_quantize" "$ROOT/.cache/models" q5_1 >/dev/null

python3 - "$BUILD_DIR/tests_c/hosts" "$ROOT/.cache/models" "$RUNS" "$THREADS" "$GEMMA" $MODES <<'EOF'
import os, statistics, subprocess, sys, tempfile

bindir, models, runs, threads, gemma, modes = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5] == "1", sys.argv[6:]
bindir26 = bindir.replace(os.sep + "tests_c" + os.sep + "hosts", "-rev2026" + os.sep + "tests_c" + os.sep + "hosts")
all_modes = ["stock"] + modes
llama_args = ["-m", os.path.join(models, "SmolLM2-135M-Instruct.Q4_1.gguf"), "-p", "256", "-n", "64", "-t", threads]
whisper_args = ["-m", os.path.join(models, "ggml-tiny-random.bin"),
                "-f", os.path.join(models, "speech-16k.wav"), "-t", threads]
whisper_base_args = ["-m", os.path.join(models, "ggml-base.bin"),
                     "-f", os.path.join(models, "question-16k.wav"), "-t", threads]
whisper_base_q5_1_args = ["-m", os.path.join(models, "ggml-base-q5_1.bin"),
                          "-f", os.path.join(models, "question-16k.wav"), "-t", threads]
gemma_args = ["-m", os.path.join(models, "gemma-3-270m-q4_k_m.gguf"), "-p", "256", "-n", "64", "-t", threads]
HOSTS = ("llama",) + (("gemma",) if gemma else ()) + ("whisper_base", "whisper_base_q5_1", "whisper")
ARGS = {"llama": llama_args, "whisper": whisper_args, "whisper_base": whisper_base_args,
        "whisper_base_q5_1": whisper_base_q5_1_args, "gemma": gemma_args}
# which driver each runs: gemma on the 2026 build's cui-llama.rn 1.12.2 (its stock is 2026 ggml-cpu)
DRIVER = {h: (bindir, h.split("_")[0]) for h in ARGS}
DRIVER["gemma"] = (bindir26, "llama")
LLAMA_LIKE = ("llama", "gemma")
tmp = tempfile.mkdtemp(prefix="ggml-rs-bench-")


def run(host, mode):
    simd = mode.startswith("simd")
    exe = os.path.join(DRIVER[host][0], "%s_driver_%s" % (DRIVER[host][1], "static" if simd else mode))
    args = ARGS[host]
    out = os.path.join(tmp, "%s_%s.bin" % (host, mode))
    env = dict(os.environ, GGML_RS_SIMD="1") if simd else None
    if mode == "simd-avx2":
        env["GGML_RS_SIMD_AVX2_ONLY"] = "1"
    if mode == "simd-sgemm":
        env["GGML_RS_SIMD_SGEMM"] = "1"
    p = subprocess.run([exe] + args + ["-o", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if p.returncode != 0:
        sys.exit("bench: %s failed (%d):\n%s" % (exe, p.returncode, p.stderr[-2000:]))
    line = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")][-1]
    return {k: v for k, v in (kv.split("=", 1) for kv in line.split()[1:])}, open(out, "rb").read()


def sched_overhead(mode):
    host_alloc = mode == "static-host-alloc"
    exe = os.path.join(bindir, "llama_driver_timed_%s" % ("static" if host_alloc else mode))
    args = ["-m", llama_args[1], "-p", "16", "-n", "128", "-t", threads, "-o", os.path.join(tmp, "timed.bin")]
    env = dict(os.environ, GGML_RS_ALLOC="host" if host_alloc else "rust")
    p = subprocess.run([exe] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = [l for l in p.stdout.splitlines() if l.startswith("SCHED_TIMING ")][-1]
    return float(dict(kv.split("=", 1) for kv in line.split()[1:])["median_overhead_us"])


def alloc_stats(host):
    """Per reserved graph of one static run: (stock, ours, bound) bytes, from GGML_RS_ALLOC_STATS."""
    exe = os.path.join(bindir, "%s_driver_static" % host)
    args = llama_args if host == "llama" else whisper_args
    env = dict(os.environ, GGML_RS_ALLOC_STATS="1", GGML_RS_ALLOC="rust")
    p = subprocess.run([exe] + args + ["-o", os.path.join(tmp, "stats.bin")], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=env)
    rows = []
    for l in p.stderr.splitlines():
        if l.startswith("GGML_RS_ALLOC "):
            kv = dict(x.split("=", 1) for x in l.split()[2:])
            rows.append((kv["nodes"], int(kv["stock"]), int(kv["ours"]), int(kv["bound"])))
    return rows


samples = {(h, m): [] for h in HOSTS for m in all_modes}
overhead = {"stock": [], "static": [], "static-host-alloc": []}
outputs = {}
for r in range(runs + 1):  # round 0 = warm-up
    for h in HOSTS:
        for m in all_modes:
            res, data = run(h, m)
            outputs[(h, m)] = data
            if r > 0:
                samples[(h, m)].append(res)
    for m in overhead:
        v = sched_overhead(m)
        if r > 0:
            overhead[m].append(v)
    if r > 0:
        print("bench: round %d/%d done" % (r, runs), file=sys.stderr)


def med(h, m, key):
    return statistics.median(float(s[key]) for s in samples[(h, m)])


rows = [  # host, key, label, higher is better
    ("llama", "prompt_tps", "llama   prompt tok/s (256 tok)", True),
    ("llama", "gen_tps", "llama   generation tok/s (64 tok)", True),
    ("gemma", "prompt_tps", "gemma3 270M Q4_K_M prompt tok/s (2026)", True),
    ("gemma", "gen_tps", "gemma3 270M Q4_K_M gen tok/s (2026)", True),
    ("whisper_base", "encode_ms", "whisper base encode ms", False),
    ("whisper_base", "total_ms", "whisper base total ms", False),
    ("whisper_base_q5_1", "encode_ms", "whisper base q5_1 encode ms", False),
    ("whisper_base_q5_1", "total_ms", "whisper base q5_1 total ms", False),
    ("whisper", "encode_ms", "whisper tiny encode ms", False),
    ("whisper", "total_ms", "whisper tiny total ms", False),
]
mem_rows = [
    ("llama", "compute_buffer_mib", "llama   compute buffer MiB"),
    ("whisper_base", "compute_buffer_mb", "whisper base compute buffers MB"),
    ("whisper", "compute_buffer_mb", "whisper tiny compute buffers MB"),
]

rows = [r for r in rows if r[0] in HOSTS]
w = 40
hdr = "%-*s %10s" % (w, "median of %d, %s threads" % (runs, threads), "stock")
for m in modes:
    hdr += " %10s %9s" % (m, "vs stock")
print()
print(hdr)
print("-" * len(hdr))
for h, key, label, higher in rows:
    s = med(h, "stock", key)
    line = "%-*s %10.2f" % (w, label, s)
    for m in modes:
        v = med(h, m, key)
        speed = (v / s) if higher else (s / v)
        line += " %10.2f %8.3fx" % (v, speed)
    print(line)
for h, key, label in mem_rows:
    s = med(h, "stock", key)
    line = "%-*s %10.2f" % (w, label, s)
    for m in modes:
        v = med(h, m, key)
        line += " %10.2f %8.3fx" % (v, v / s if s else float("nan"))
    print(line)
so, st = statistics.median(overhead["stock"]), statistics.median(overhead["static"])
sh = statistics.median(overhead["static-host-alloc"])
print("%-*s %10.1f %10.1f %8.3fx   (static build, our allocator; stock/static: >1 = less overhead)" % (w, "sched overhead us / llama decode graph", so, st, so / st))
print("%-*s %10.1f %10.1f %8.3fx   (static build, GGML_RS_ALLOC=host: the host's ggml-alloc)" % (w, "  same with the host's ggml-alloc", so, sh, so / sh))
print()
print("compute buffer bytes per reserved graph (static build, GGML_RS_ALLOC_STATS=1): stock = ggml-alloc's best fit")
print("replayed on the same graph, ours = what we allocate, bound = most bytes alive at once")
print("%-36s %6s %12s %12s %12s %8s %8s" % ("graph", "nodes", "stock", "ours", "bound", "ours/st", "ours/bd"))
labels = {"llama": ["llama   prompt (worst-case ubatch)", "llama   decode (1 token)", "llama   prompt (again)"],
          "whisper": ["whisper conv", "whisper encoder", "whisper cross", "whisper decoder"]}
for h in ("llama", "whisper"):
    for k, (nodes, stock_b, ours_b, bound_b) in enumerate(alloc_stats(h)):
        label = labels[h][k] if k < len(labels[h]) else "%s graph %d" % (h, k)
        print("%-36s %6s %12d %12d %12d %8.3f %8.3f" % (label, nodes, stock_b, ours_b, bound_b,
              ours_b / stock_b if stock_b else 1.0, ours_b / bound_b if bound_b else 1.0))
print()
def llama_gap(a, b):
    """How far a relaxed run's llama output is from stock's: matching generated tokens, NMSE of the last logits."""
    import struct
    n_prompt, n_gen, n_vocab = struct.unpack_from("<3i", a, 8)
    toks = lambda o: struct.unpack_from("<%di" % n_gen, o, 20 + 4 * n_prompt)
    same = next((i for i, (x, y) in enumerate(zip(toks(a), toks(b))) if x != y), n_gen)
    la = struct.unpack_from("<%df" % n_vocab, a, len(a) - 4 * n_vocab)
    lb = struct.unpack_from("<%df" % n_vocab, b, len(b) - 4 * n_vocab)
    nmse = sum((x - y) ** 2 for x, y in zip(la, lb)) / max(sum(x * x for x in la), 1e-30)
    return " (first %d of %d generated tokens equal, last logits NMSE %.3g)" % (same, n_gen, nmse)


print("vs stock: speed ratio (>1 = faster than stock) for the timings, size ratio for the buffers")
print("simd: static build with GGML_RS_SIMD=1 (the library's SIMD backend computes; bit-identical to stock on AVX2)")
if "simd-sgemm" in modes:
    print("simd-sgemm: GGML_RS_SIMD=1 GGML_RS_SIMD_SGEMM=1, batches through sgemm (relaxed: close to stock, not bit-identical)")
if "simd-avx2" in modes:
    print("simd-avx2: the same with GGML_RS_SIMD_AVX2_ONLY=1 (no AVX-512 / VNNI kernels even where the CPU has them)")
print("whisper base: the real model on the 4.1 s espeak-ng question; tiny: random weights, 9.2 s sentence")
for h in HOSTS:
    lib_modes = modes
    same = [m for m in lib_modes if outputs[(h, m)] == outputs[(h, "stock")]]
    diff = [m for m in lib_modes if m not in same]
    print("%-12s output vs stock: %s" % (h.replace("_", " "), ", ".join(["%s bit-identical" % m for m in same] +
                                                      ["%s DIFFERS%s" % (m, llama_gap(outputs[(h, "stock")], outputs[(h, m)]) if h in LLAMA_LIKE else "")
                                                       for m in diff])))
if gemma:
    print("gemma: cui-llama.rn 1.12.2 from the 2026 build; its stock is the 2026 ggml-cpu")
EOF

echo
"$BUILD_DIR/tests_c/bench_ops_lm" "$THREADS" "$RUNS"
