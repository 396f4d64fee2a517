#!/usr/bin/env python3
"""SIMD against stock where users run it: a phone is rarely idle. The same llama driver work
(prompt tok/s and generation tok/s) with 0, 1 and 2 busy processes beside it, stock and SIMD
(GGML_RS_SIMD=1 on the library build) interleaved round by round, each figure's median with its
min-max, and SIMD's speed relative to stock (> 1 = faster) with the min-max of the per-round
ratios. A busy process is a plain spin loop (`python3 -c 'while 1: pass'`), started before a load
level's rounds and killed after them; on a 2-core machine two of them take both cores.

usage: tools/ab/bench-load.py [-r ROUNDS=2] [--loads 0,1,2] [--models smollm2,gemma]
                              [-p PROMPT=100] [-n GEN=32] [-t THREADS=2] [--extra "ARGS"]
                              STOCK_DRIVER LIBRARY_DRIVER
  the drivers are tests_c/hosts llama drivers of one package (e.g. the 2026 build's
  llama_driver_stock and llama_driver_static, or llama_driver_fastmath_* for the package's own
  fast-math flags); -p 512 -n 128 is llama-bench's pp512 and tg128 at a depth of 512 to 640.
  Prints a Markdown table; timing only (the test command checks the outputs). Build the drivers
  with -DGGML_RS_HOST_CODE_OPT=-O3 (the model code around ggml as the packages ship it; the test
  command's -O1 slows it alike for stock and SIMD, which lowers the ratios a little).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = {
    "smollm2": os.path.join(ROOT, ".cache", "models", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    "gemma": os.path.join(ROOT, ".cache", "models", "gemma-3-270m-q4_k_m.gguf"),
}


def run(exe, model, a, simd):
    env = dict(os.environ)
    env.pop("GGML_RS_SIMD", None)
    if simd:
        env["GGML_RS_SIMD"] = "1"
    args = [exe, "-m", model, "-p", str(a.p), "-n", str(a.n), "-t", str(a.t), "-c", str(max(1024, a.p + a.n + 16)),
            "-o", os.devnull] + a.extra.split()
    out = subprocess.run(args, capture_output=True, text=True, env=env)
    lines = [l for l in out.stdout.splitlines() if l.startswith("RESULT")]
    if out.returncode != 0 or not lines:
        sys.exit("bench-load: %s failed (exit %d):\n%s" % (exe, out.returncode, out.stderr[-2000:]))
    kv = dict(x.split("=", 1) for x in lines[-1].split()[1:])
    return float(kv["prompt_tps"]), float(kv["gen_tps"])


def spread(v):
    return "%.1f (%.1f-%.1f)" % (statistics.median(v), min(v), max(v))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-r", type=int, default=2)
    ap.add_argument("--loads", default="0,1,2")
    ap.add_argument("--models", default="smollm2,gemma")
    ap.add_argument("-p", type=int, default=100)
    ap.add_argument("-n", type=int, default=32)
    ap.add_argument("-t", type=int, default=2)
    ap.add_argument("--extra", default="")
    ap.add_argument("stock")
    ap.add_argument("ours")
    a = ap.parse_args()
    rows = []
    for load in [int(x) for x in a.loads.split(",")]:
        busy = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(load)]
        try:
            time.sleep(0.5 if load else 0)
            for m in a.models.split(","):
                res = {"stock": [], "simd": []}
                for _ in range(a.r):
                    res["stock"].append(run(a.stock, MODELS[m], a, False))
                    res["simd"].append(run(a.ours, MODELS[m], a, True))
                for k, what in ((0, "prompt"), (1, "generation")):
                    s = [x[k] for x in res["stock"]]
                    o = [x[k] for x in res["simd"]]
                    ratios = [y / x for x, y in zip(s, o)]
                    rows.append((m, what, load, spread(s), spread(o), "%.2fx (%.2f-%.2f)" % (statistics.median(ratios), min(ratios), max(ratios))))
                print("bench-load: %s, %d busy: done" % (m, load), file=sys.stderr, flush=True)
        finally:
            for b in busy:
                b.kill()
                b.wait()
    print("model | work (-p %d -n %d, -t %d) | busy processes | stock tok/s | SIMD tok/s | SIMD / stock" % (a.p, a.n, a.t))
    print("---|---|---|---|---|---")
    for r in rows:
        print("%s | %s | %d | %s | %s | %s" % r)


if __name__ == "__main__":
    main()
