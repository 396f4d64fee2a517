#!/usr/bin/env bash
# The SIMD backend against stock ggml-cpu under thread contention, as phones meet it:
#   over    : each host alone with more threads than cores (-t OVER, default 2 x nproc)
#   concur  : llama measured while whisper computes without pause (and whisper while llama does),
#             each with -t THREADS (default 2), both hosts in the same mode (stock or SIMD)
# Hosts and models as scripts/bench.sh, shorter llama runs (SmolLM2-135M Q4_1, -p PROMPT=64 prompt
# tokens + -n GEN=16 generated: an oversubscribed stock run of bench.sh's 256 + 64 takes minutes
# on a busy 2-core machine); the whisper model of .cache/models on the espeak-ng sentence. The two hosts run as two processes
# (the pools of one process are independent of each other, so the contention is the same).
# Runs are interleaved stock, SIMD, stock, ... after one warm-up round; medians, and SIMD's speed
# relative to stock (>1 = faster). Needs a build with the drivers (scripts/bench.sh builds them).
#
# usage: scripts/bench-threads.sh [-r RUNS=5] [-t THREADS=2] [--over N] [-p PROMPT=64] [-n GEN=16]
#                                 [--cases "over concur"]
# env:   BUILD_DIR (default build); WARMUP=0 skips the warm-up round; GGML_RS_SIMD_* variables
#        pass through to the SIMD runs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD_DIR="${BUILD_DIR:-build}"
RUNS=5
THREADS=2
OVER=$((2 * $(nproc)))
CASES="over concur"
PROMPT=64
GEN=16
while (($#)); do
  case "$1" in
    -r) RUNS="$2"; shift 2 ;;
    -t) THREADS="$2"; shift 2 ;;
    --over) OVER="$2"; shift 2 ;;
    -p) PROMPT="$2"; shift 2 ;;
    -n) GEN="$2"; shift 2 ;;
    --cases) CASES="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bench-threads: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

python3 - "$BUILD_DIR/tests_c/hosts" "$ROOT/.cache/models" "$RUNS" "$THREADS" "$OVER" "$PROMPT" "$GEN" $CASES <<'EOF'
import os, statistics, subprocess, sys, tempfile

bindir, models, runs, threads, over, n_prompt, n_gen, cases = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7], sys.argv[8:]
tmp = tempfile.mkdtemp(prefix="ggml-rs-bench-threads-")
wmodel = next((os.path.join(models, m) for m in ("ggml-base.bin", "ggml-tiny-random.bin") if os.path.exists(os.path.join(models, m))), None)


def cmd(host, mode, t):
    exe = os.path.join(bindir, "%s_driver_%s" % (host, "stock" if mode == "stock" else "static"))
    if host == "llama":
        args = ["-m", os.path.join(models, "SmolLM2-135M-Instruct.Q4_1.gguf"), "-p", n_prompt, "-n", n_gen]
    else:
        args = ["-m", wmodel, "-f", os.path.join(models, "speech-16k.wav")]
    env = dict(os.environ)
    if mode == "simd":
        env["GGML_RS_SIMD"] = "1"
    return [exe] + args + ["-t", str(t), "-o", os.path.join(tmp, "%s_%s_%d.bin" % (host, mode, os.getpid()))], env


def result(p, what):
    out, err = p.communicate()
    if p.returncode != 0:
        sys.exit("bench-threads: %s failed (%d):\n%s" % (what, p.returncode, err[-2000:]))
    line = [l for l in out.splitlines() if l.startswith("RESULT ")][-1]
    return {k: float(v) for k, v in (kv.split("=", 1) for kv in line.split()[1:]) if v.replace(".", "", 1).isdigit()}


def run(host, mode, t, background=None):
    """One run of `host`; with `background`, the other host loops in `mode` meanwhile."""
    bg = None
    if background:
        c, env = cmd(background, mode, threads)
        loop = "while :; do \"$@\" >/dev/null 2>&1 || exit 1; done"
        bg = subprocess.Popen(["bash", "-c", loop, "bg"] + c, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        c, env = cmd(host, mode, t)
        p = subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return result(p, " ".join(c))
    finally:
        if bg:
            os.killpg(bg.pid, 9)
            bg.wait()


plan = []  # (label, host, threads, background)
if "over" in cases:
    plan += [("over  llama   -t %s" % over, "llama", over, None), ("over  whisper -t %s" % over, "whisper", over, None)]
if "concur" in cases:
    plan += [("concur llama   -t %s (+ whisper looping)" % threads, "llama", threads, "whisper"),
             ("concur whisper -t %s (+ llama looping)" % threads, "whisper", threads, "llama")]
samples = {(label, m): [] for label, *_ in plan for m in ("stock", "simd")}
first = 0 if os.environ.get("WARMUP", "1") != "0" else 1
for r in range(first, runs + 1):  # round 0 = warm-up
    for label, host, t, bg in plan:
        for m in ("stock", "simd"):
            res = run(host, m, t, bg)
            if r > 0:
                samples[(label, m)].append(res)
    if r > 0:
        print("bench-threads: round %d/%d done" % (r, runs), file=sys.stderr)

print("%-44s %-12s %10s %10s %8s" % ("case", "figure", "stock", "SIMD", "SIMD/x"))
for label, host, t, bg in plan:
    keys = [("prompt_tps", True), ("gen_tps", True)] if host == "llama" else [("encode_ms", False), ("total_ms", False)]
    for key, higher in keys:
        a = statistics.median(s[key] for s in samples[(label, "stock")])
        b = statistics.median(s[key] for s in samples[(label, "simd")])
        ratio = b / a if higher else a / b
        print("%-44s %-12s %10.1f %10.1f %7.2fx" % (label, key, a, b, ratio))
print("(medians of %d interleaved runs; x > 1: SIMD faster; whisper model %s; nproc %d)" % (runs, os.path.basename(wmodel), os.cpu_count()))
EOF
