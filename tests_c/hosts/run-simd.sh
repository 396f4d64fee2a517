#!/usr/bin/env bash
# End-to-end check of the library's SIMD backend inside the real hosts (issue: SIMD backend).
#
#   run-simd.sh llama   <outdir> <stock-driver> <driver> -- <driver args>
#   run-simd.sh whisper <outdir> <stock-driver> <driver> -- <driver args>
#
# Runs the stock host (ggml-cpu) and the host built on this library with GGML_RS_SIMD=1 (SIMD
# registered as an ACCEL device next to ggml-cpu, so llama.cpp / whisper.cpp offload to it), with
# <P>GGML_SCHED_DEBUG=1, and checks:
#   - every split of every graph the scheduler printed runs on SIMD (so every compute node does);
#   - llama: the first 16 greedy tokens equal stock's and the NMSE of the logits after the prompt
#     is at most $GGML_RS_NMSE_GATE (default 1e-4, the target; on AVX2 SIMD reproduces ggml-cpu's
#     float order and the logits are bit-identical). The portable kernels follow ggml's scalar
#     rules instead, and since ggml-cpu quantizes activations before every matrix product, any
#     ulp of difference upstream flips quantization steps: their test sets a looser gate;
#   - whisper: the transcript's token ids equal stock's.
# GGML_RS_SIMD_DECLINED=OP,OP,... (the 2026 revision: SET_ROWS,GLU,FLASH_ATTN, as the debug
# printout names them): splits on another backend are allowed when every node in them is one of
# these ops, which SIMD declines so that ggml-cpu computes them (the printout then lists nodes).
# GGML_RS_SIMD_BITWISE=1: the whole output file must equal stock's byte for byte (every token,
# logit and probability).
# The fidelity check's log line (src/simd/fidelity.rs) must say that every kind of node it
# computed both ways was bit-identical, or, when set, match GGML_RS_SIMD_EXPECT_LOG (grep -E);
# with GGML_RS_SIMD_EXACT=0 (no check) there is no line to look for.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
host="$1"; out="$2"; stock="$3"; simd="$4"; shift 4
[[ "${1:-}" == "--" ]] && shift
mkdir -p "$out"

if [[ "$host" == llama ]]; then P=LM_; else P=WSP_; fi
# an unprefixed host (llama.rn 0.13, upstream) reads GGML_SCHED_DEBUG: GGML_RS_SIMD_ENV_PREFIX=
P="${GGML_RS_SIMD_ENV_PREFIX-$P}"

extra=()
[[ "$host" == llama ]] && extra=(--prompt-logits "$out/stock_prompt.f32")
"$stock" "$@" -o "$out/stock.bin" "${extra[@]}" >"$out/stock.log" 2>&1 || { cat "$out/stock.log"; echo "FAIL: stock driver"; exit 1; }

[[ "$host" == llama ]] && extra=(--prompt-logits "$out/simd_prompt.f32")
level=1
[[ -n "${GGML_RS_SIMD_DECLINED:-}" ]] && level=2
env GGML_RS_SIMD=1 "${P}GGML_SCHED_DEBUG=$level" "$simd" "$@" -v -o "$out/simd.bin" "${extra[@]}" >"$out/simd.log" 2>&1 \
  || { tail -n 50 "$out/simd.log"; echo "FAIL: driver with GGML_RS_SIMD=1"; exit 1; }
grep '^RESULT' "$out/stock.log" "$out/simd.log"

python3 - "$host" "$out" "$HERE" "${GGML_RS_NMSE_GATE:-1e-4}" <<'PY'
import importlib.util, struct, sys
host, out, here = sys.argv[1:4]
gate = float(sys.argv[4])
spec = importlib.util.spec_from_file_location("cmpout", here + "/compare-outputs.py")
cmpout = importlib.util.module_from_spec(spec); spec.loader.exec_module(cmpout)
fail = []
import os, re
declined = set(x for x in os.environ.get("GGML_RS_SIMD_DECLINED", "").split(",") if x)
splits, not_simd, bad_ops, cur, ops_off = [], [], set(), None, {}
for l in open(out + "/simd.log", errors="replace"):
    if "## SPLIT" in l:
        splits.append(l)
        cur = None if ": SIMD #" in l else l.strip()
        if cur: not_simd.append(cur)
        continue
    m = re.match(r"node #\s*\d+ \(\s*([A-Z_0-9]+)\)", l)
    if m and cur:
        ops_off[m.group(1)] = ops_off.get(m.group(1), 0) + 1
        if m.group(1) not in declined: bad_ops.add(m.group(1))
print("scheduler splits printed: %d, not on SIMD: %d%s" % (len(splits), len(not_simd),
      " (nodes there: %s)" % ", ".join("%s %d" % kv for kv in sorted(ops_off.items())) if ops_off else ""))
if not splits: fail.append("no scheduler debug output (GGML_SCHED_DEBUG)")
if not_simd and not declined: fail.append("splits not on SIMD, e.g. " + not_simd[0])
if not_simd and declined and not ops_off: fail.append("no node list for the splits not on SIMD")
if bad_ops: fail.append("ops off SIMD that it should compute: " + ", ".join(sorted(bad_ops)))
if os.environ.get("GGML_RS_SIMD_BITWISE") == "1":
    same = open(out + "/stock.bin", "rb").read() == open(out + "/simd.bin", "rb").read()
    print("whole output bit-identical to stock: %s" % same)
    if not same: fail.append("output differs from stock (GGML_RS_SIMD_BITWISE=1)")
if host == "llama":
    a, b = cmpout.read_llama(out + "/stock.bin"), cmpout.read_llama(out + "/simd.bin")
    n = min(16, len(a["gen"]))
    same = a["gen"][:n] == b["gen"][:n]
    print("first %d generated tokens identical: %s" % (n, same))
    if not same: fail.append("generated tokens differ: %r vs %r" % (a["gen"][:n], b["gen"][:n]))
    pa = open(out + "/stock_prompt.f32", "rb").read(); pb = open(out + "/simd_prompt.f32", "rb").read()
    x = struct.unpack("<%df" % (len(pa) // 4), pa); y = struct.unpack("<%df" % (len(pb) // 4), pb)
    num = sum((u - v) ** 2 for u, v in zip(x, y)); den = sum(u * u for u in x)
    nmse = num / den
    print("prompt logits NMSE vs stock: %.3g (target 1e-4: %s; gate %g)%s" % (nmse, "met" if nmse <= 1e-4 else "NOT met", gate, ", bit-identical" if pa == pb else ""))
    if not nmse <= gate: fail.append("prompt logits NMSE %.3g > %g" % (nmse, gate))
else:
    a, b = cmpout.read_whisper(out + "/stock.bin"), cmpout.read_whisper(out + "/simd.bin")
    ids = lambda segs: [[t[0] for t in s[0]] for s in segs]
    same = ids(a) == ids(b)
    print("transcript token ids identical: %s (%d segments, %d tokens)" % (same, len(a), sum(len(s[0]) for s in a)))
    if not same: fail.append("transcript tokens differ")
for f in fail: print("FAIL:", f)
sys.exit(1 if fail else 0)
PY
status=$?
if [[ "${GGML_RS_SIMD_EXACT:-1}" != 0 ]]; then
  want="kinds of node computed on small graphs by SIMD and by this host.s ggml-cpu: all bit-identical"
  want="${GGML_RS_SIMD_EXPECT_LOG:-$want}"
  line="$(grep -m1 '^SIMD: .*kinds of node' "$out/simd.log")"
  echo "fidelity check: ${line:-no line}"
  grep -qE -- "$want" <<<"$line" || { echo "FAIL: the fidelity check's line does not match '$want'"; status=1; }
fi
exit $status
