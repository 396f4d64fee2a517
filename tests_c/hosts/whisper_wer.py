#!/usr/bin/env python3
"""Word error rate of a transcript against the sentence that was spoken.

  whisper_wer.py SENTENCE_FILE TRANSCRIPT_FILE [--max RATE]

Both texts are normalised the same way (lower case, punctuation and hyphens to spaces, apostrophes
inside words kept), then WER = (substitutions + deletions + insertions) / words of the sentence,
from the word-level edit distance. Prints one line:
  WER <percent> % (<errors> errors in <n> words)
and with --max exits 1 when the rate is above RATE (a fraction: 0.10 = 10 %).
"""

import argparse
import re
import sys


def words(text):
    text = text.lower().replace("\u2019", "'")
    text = re.sub(r"[^\w']+", " ", text)
    return [w.strip("'") for w in text.split() if w.strip("'")]


def edit_distance(ref, hyp):
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sentence")
    ap.add_argument("transcript")
    ap.add_argument("--max", type=float, default=None)
    a = ap.parse_args()
    with open(a.sentence, encoding="utf-8") as f:
        ref = words(f.read())
    with open(a.transcript, encoding="utf-8", errors="replace") as f:
        hyp = words(f.read())
    if not ref:
        print("WER n/a (the sentence has no words)")
        return 0
    errors = edit_distance(ref, hyp)
    rate = errors / len(ref)
    print("WER %.1f %% (%d errors in %d words)" % (100 * rate, errors, len(ref)))
    if a.max is not None and rate > a.max:
        print("FAIL: word error rate %.1f %% above %.1f %%" % (100 * rate, 100 * a.max), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
