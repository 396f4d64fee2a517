#!/usr/bin/env python3
"""Speak a sentence with espeak-ng and write it as 16 kHz mono PCM16 WAV, and the sentence
itself beside it (OUT with .txt instead of .wav: what the word error rate is measured against).

espeak-ng writes 22050 Hz; the resampling to whisper's 16 kHz is done here
(FFT band-limited resampling with numpy), so only espeak-ng is needed.

usage: make-speech-wav.py OUT [--text "..." | --question]
  default     the op-level tests' sentence (TEXT)
  --question  the voice assistant's default question (QUESTION)
"""

import argparse
import io
import os
import shutil
import subprocess
import sys
import wave

import numpy as np

TEXT = ("The quick brown fox jumps over the lazy dog. "
        "A small test of the speech recognition pipeline, "
        "running on a tiny model with random weights.")
# The voice assistant's question: whisper base transcribes espeak-ng's reading of it word for word.
QUESTION = "Can you tell me three good reasons to drink more water every day?"
RATE = 16000


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--text", default=None)
    ap.add_argument("--question", action="store_true")
    a = ap.parse_args()
    a.text = a.text if a.text is not None else QUESTION if a.question else TEXT
    if not a.text.strip():
        print("make-speech-wav: nothing to say (empty text)", file=sys.stderr)
        return 2

    espeak = shutil.which("espeak-ng")
    if not espeak:
        print("make-speech-wav: espeak-ng not found (apt-get install espeak-ng)", file=sys.stderr)
        return 1
    raw = subprocess.run([espeak, "-v", "en", "-s", "150", "--stdout", a.text],
                         check=True, stdout=subprocess.PIPE).stdout
    with wave.open(io.BytesIO(raw)) as w:
        ch, width, rate, n = w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()
        frames = w.readframes(n)
    if width != 2:
        print("make-speech-wav: unexpected sample width %d" % width, file=sys.stderr)
        return 1
    x = np.frombuffer(frames, dtype="<i2").astype(np.float64)
    if ch > 1:
        x = x.reshape(-1, ch).mean(axis=1)
    n = x.shape[0]
    if rate != RATE:
        m = int(round(n * RATE / rate))
        spec = np.fft.rfft(x)
        keep = m // 2 + 1
        out = np.zeros(keep, dtype=complex)
        k = min(keep, spec.shape[0])
        out[:k] = spec[:k]
        x = np.fft.irfft(out, m) * (m / n)
    y = np.clip(np.round(x), -32768, 32767).astype("<i2")

    tmp = a.out + ".tmp"
    with wave.open(tmp, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(y.tobytes())
    os.replace(tmp, a.out)
    with open(os.path.splitext(a.out)[0] + ".txt", "w", encoding="utf-8") as f:
        f.write(a.text + "\n")
    print("make-speech-wav: wrote %s (%.2f s at %d Hz)" % (a.out, len(y) / RATE, RATE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
