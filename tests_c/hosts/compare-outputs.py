#!/usr/bin/env python3
"""Explain how two driver outputs differ (llama_driver / whisper_driver files).

usage: compare-outputs.py <llama|whisper> <reference.bin> <other.bin>
Prints the first differing prompt/generated token, logits step, final-logit
index (with both values and the max abs difference), or whisper segment/token.
"""

import struct
import sys


def read_llama(path):
    d = open(path, "rb").read()
    if d[:6] != b"LMDRV1":
        raise ValueError("%s: not a llama_driver output" % path)
    n_prompt, n_gen, n_vocab = struct.unpack_from("<3i", d, 8)
    off = 20
    prompt = struct.unpack_from("<%di" % n_prompt, d, off); off += 4 * n_prompt
    gen = struct.unpack_from("<%di" % n_gen, d, off); off += 4 * n_gen
    hashes = struct.unpack_from("<%dQ" % (n_gen + 1), d, off); off += 8 * (n_gen + 1)
    logits = struct.unpack_from("<%df" % n_vocab, d, off)
    raw = d[off:off + 4 * n_vocab]
    return dict(n_vocab=n_vocab, prompt=prompt, gen=gen, hashes=hashes, logits=logits, raw=raw)


def first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def compare_llama(ra, rb):
    a, b = read_llama(ra), read_llama(rb)
    i = first_diff(a["prompt"], b["prompt"])
    if i is not None:
        print("prompt token %d differs: %s vs %s" % (i, a["prompt"][i:i + 1], b["prompt"][i:i + 1]))
    i = first_diff(a["hashes"], b["hashes"])
    if i is not None:
        print("logits first differ at step %d (0 = after the prompt, k = after generated token k-1)" % i)
    i = first_diff(a["gen"], b["gen"])
    if i is not None:
        print("generated token %d differs: %s vs %s" % (i, a["gen"][i:i + 1], b["gen"][i:i + 1]))
    else:
        print("generated tokens identical (%d)" % len(a["gen"]))
    if a["raw"] != b["raw"]:
        la, lb = a["logits"], b["logits"]
        n = 0
        first = None
        maxd = 0.0
        for k, (x, y) in enumerate(zip(la, lb)):
            if struct.pack("<f", x) != struct.pack("<f", y):
                n += 1
                if first is None:
                    first = k
                if x == x and y == y:
                    maxd = max(maxd, abs(x - y))
        print("final logits: %d of %d differ; first at index %d: %r vs %r; max |diff| %g"
              % (n, len(la), first, la[first], lb[first], maxd))
    else:
        print("final logits identical")


def read_whisper(path):
    d = open(path, "rb").read()
    if d[:6] != b"WSDRV1":
        raise ValueError("%s: not a whisper_driver output" % path)
    (n_seg,) = struct.unpack_from("<i", d, 8)
    off = 12
    segs = []
    for _ in range(n_seg):
        (n_tok,) = struct.unpack_from("<i", d, off); off += 4
        toks = []
        for _ in range(n_tok):
            tid, ttid = struct.unpack_from("<2i", d, off)
            ps = struct.unpack_from("<4f", d, off + 8)
            raw = d[off:off + 24]
            off += 24
            toks.append((tid, ttid, ps, raw))
        (ln,) = struct.unpack_from("<i", d, off); off += 4
        text = d[off:off + ln].decode("utf-8", "replace"); off += ln
        segs.append((toks, text))
    return segs


def compare_whisper(ra, rb):
    a, b = read_whisper(ra), read_whisper(rb)
    if len(a) != len(b):
        print("segment count differs: %d vs %d" % (len(a), len(b)))
    for s, (sa, sb) in enumerate(zip(a, b)):
        ta, tb = sa[0], sb[0]
        for i, (x, y) in enumerate(zip(ta, tb)):
            if x[3] != y[3]:
                print("segment %d token %d differs: id %d vs %d, (p, plog, pt, ptsum) %r vs %r"
                      % (s, i, x[0], y[0], x[2], y[2]))
                return
        if len(ta) != len(tb):
            print("segment %d token count differs: %d vs %d" % (s, len(ta), len(tb)))
            return
        if sa[1] != sb[1]:
            print("segment %d text differs: %r vs %r" % (s, sa[1][:80], sb[1][:80]))
            return
    print("no token-level difference found (files differ elsewhere)")


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("llama", "whisper"):
        print(__doc__, file=sys.stderr)
        return 2
    (compare_llama if sys.argv[1] == "llama" else compare_whisper)(sys.argv[2], sys.argv[3])
    return 0


if __name__ == "__main__":
    sys.exit(main())
