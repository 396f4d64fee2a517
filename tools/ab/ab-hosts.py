#!/usr/bin/env python3
"""Interleaved A/B runs of host drivers: the same model through several driver executables
(e.g. a saved copy of the previous build and the current one), run in turn, medians printed with
each one's speed relative to the first. How the kernel changes in docs/measured.md
were judged: on a shared machine only interleaved runs of both builds compare. Timing only:
bench.sh and the test command check that the outputs equal stock's.

usage: tools/ab/ab-hosts.py RUNS llama|whisper NAME=DRIVER [NAME=DRIVER ...]
  NAME starting with "simd" runs with GGML_RS_SIMD=1. Models from scripts/fetch-models.sh
  (.cache/models): SmolLM2-135M Q4_1, 256-token prompt + 64 generated, 2 threads; whisper base
  on the espeak-ng question, 2 threads.
example (previous build saved to /tmp/prev):
  cp build/tests_c/hosts/llama_driver_static /tmp/prev   # before rebuilding
  tools/ab/ab-hosts.py 7 llama stock=build/tests_c/hosts/llama_driver_stock \\
      simd_prev=/tmp/prev simd_new=build/tests_c/hosts/llama_driver_static
"""
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, ".cache", "models")
ARGS = {
    "llama": (["-m", os.path.join(MODELS, "SmolLM2-135M-Instruct.Q4_1.gguf"), "-p", "256", "-n", "64", "-t", "2"],
              ["prompt_ms", "gen_ms"]),
    "whisper": (["-m", os.path.join(MODELS, "ggml-base.bin"), "-f", os.path.join(MODELS, "question-16k.wav"), "-t", "2"],
                ["encode_ms", "total_ms"]),
}


def main():
    if len(sys.argv) < 4 or sys.argv[2] not in ARGS:
        sys.exit(__doc__)
    runs, (args, keys) = int(sys.argv[1]), ARGS[sys.argv[2]]
    cands = [a.split("=", 1) for a in sys.argv[3:]]
    res = {name: {} for name, _ in cands}
    for _ in range(runs):
        for name, exe in cands:
            env = dict(os.environ)
            if name.startswith("simd"):
                env["GGML_RS_SIMD"] = "1"
            out = subprocess.run([exe] + args, capture_output=True, text=True, env=env, check=True).stdout
            lines = [l for l in out.splitlines() if l.startswith("RESULT")]
            if not lines:
                sys.exit("ab-hosts: %s printed no RESULT line" % exe)
            for kv in lines[-1].split()[1:]:
                k, v = kv.split("=", 1)
                try:
                    res[name].setdefault(k, []).append(float(v))
                except ValueError:
                    pass
    print("medians of %d interleaved runs; (x: speed relative to %s, > 1 faster)" % (runs, cands[0][0]))
    for k in keys:
        base = statistics.median(res[cands[0][0]][k])
        cells = ["%s %.1f (%.3fx)" % (n, statistics.median(res[n][k]), base / statistics.median(res[n][k])) for n, _ in cands]
        print("%-10s %s" % (k, "  ".join(cells)))


if __name__ == "__main__":
    main()
