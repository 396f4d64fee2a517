#!/usr/bin/env python3
"""Write a tiny whisper.cpp model in the legacy ggml format, random weights.

No package registry ships a whisper.cpp model, so the real-model tests use
this one: the exact file layout whisper.cpp's whisper_model_load() reads
(magic, hparams, mel filters, vocab, then the tensors by name), tiny
dimensions so that encode + decode take seconds, and weights drawn from a
fixed seed -- the same file on every machine with the same numpy major.

Layout (all little endian):
  uint32  magic 0x67676d6c ("ggml")
  int32   n_vocab n_audio_ctx n_audio_state n_audio_head n_audio_layer
          n_text_ctx n_text_state n_text_head n_text_layer n_mels ftype
  int32   n_mel, n_fft; float32 filters[n_mel][n_fft]
  int32   n_words; n_words x (uint32 len, bytes)
  tensors until EOF: int32 n_dims, int32 name_len, int32 ttype (0 F32, 1 F16),
          int32 ne[n_dims] (ggml order, ne[0] fastest), name, data
Matrices (and the conv kernels, whisper.cpp's "vtype") are F16, biases,
norms and positional embeddings F32, as whisper.cpp expects for ftype 1.

usage: make-whisper-model.py OUT [--seed N] [--state 128] [--heads 2]
                             [--audio-layers 2] [--text-layers 2]
                             [--multilingual]
"""

import argparse
import os
import struct
import sys

import numpy as np

GGML_MAGIC = 0x67676D6C
SAMPLE_RATE = 16000
N_FFT = 400


def mel_filters(n_mels: int) -> np.ndarray:
    """Slaney-style triangular mel filterbank, shape (n_mels, 1 + N_FFT // 2)."""
    n_bins = 1 + N_FFT // 2
    fft_freqs = np.linspace(0.0, SAMPLE_RATE / 2, n_bins)

    def hz_to_mel(f):
        f = np.asarray(f, dtype=np.float64)
        f_sp = 200.0 / 3
        mels = f / f_sp
        min_log_hz = 1000.0
        min_log_mel = min_log_hz / f_sp
        logstep = np.log(6.4) / 27.0
        return np.where(f >= min_log_hz, min_log_mel + np.log(np.maximum(f, 1e-10) / min_log_hz) / logstep, mels)

    def mel_to_hz(m):
        m = np.asarray(m, dtype=np.float64)
        f_sp = 200.0 / 3
        freqs = f_sp * m
        min_log_hz = 1000.0
        min_log_mel = min_log_hz / f_sp
        logstep = np.log(6.4) / 27.0
        return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), freqs)

    mel_pts = np.linspace(hz_to_mel(0.0), hz_to_mel(SAMPLE_RATE / 2), n_mels + 2)
    hz_pts = mel_to_hz(mel_pts)
    fdiff = np.diff(hz_pts)
    ramps = hz_pts[:, None] - fft_freqs[None, :]
    weights = np.zeros((n_mels, n_bins))
    for i in range(n_mels):
        lower = -ramps[i] / fdiff[i]
        upper = ramps[i + 2] / fdiff[i + 1]
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    enorm = 2.0 / (hz_pts[2 : n_mels + 2] - hz_pts[:n_mels])
    weights *= enorm[:, None]
    return weights.astype(np.float32)


def vocab_words(n_words: int) -> list:
    """Deterministic made-up tokens: the 256 bytes, " -", " '", then syllables."""
    words = []
    for i in range(min(n_words, 256)):
        c = bytes([i])
        words.append(c if 0x20 <= i <= 0x7E else ("<%02x>" % i).encode())
    # whisper.cpp's logit filters look these up by string (suppress_blank / nst)
    words += [b" -", b" '"]
    cons = "bcdfghjklmnprstvwz"
    vows = "aeiou"
    i = len(words)
    base = i
    while len(words) < n_words:
        k = i - base
        s = ""
        n = k
        while True:
            s += cons[n % len(cons)] + vows[(n // len(cons)) % len(vows)]
            n //= len(cons) * len(vows)
            if n == 0:
                break
        if k % 2 == 0:
            s = " " + s
        words.append(s.encode())
        i += 1
    return words


def sinusoids(length: int, channels: int) -> np.ndarray:
    log_timescale_increment = np.log(10000) / (channels // 2 - 1)
    inv_timescales = np.exp(-log_timescale_increment * np.arange(channels // 2))
    scaled_time = np.arange(length)[:, None] * inv_timescales[None, :]
    return np.concatenate([np.sin(scaled_time), np.cos(scaled_time)], axis=1).astype(np.float32)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=20250101)
    ap.add_argument("--state", type=int, default=128)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--audio-layers", type=int, default=2)
    ap.add_argument("--text-layers", type=int, default=2)
    ap.add_argument("--audio-ctx", type=int, default=1500)
    ap.add_argument("--text-ctx", type=int, default=448)
    ap.add_argument("--mels", type=int, default=80)
    ap.add_argument("--multilingual", action="store_true",
                    help="n_vocab 51865 (language tokens) instead of the English-only 51864")
    a = ap.parse_args()

    n_state = a.state
    n_vocab = 51865 if a.multilingual else 51864
    # Words stored in the file: the text tokens (ids < eot); whisper.cpp adds
    # the special tokens ([_EOT_], [_SOT_], languages, timestamps) itself.
    n_words = 50257 if a.multilingual else 50256
    ftype = 1  # mostly F16

    rng = np.random.default_rng(a.seed)

    def normal(shape, std):
        return rng.standard_normal(shape, dtype=np.float64) * std

    tensors = []  # (name, numpy array in numpy order = reversed ggml ne, ttype)

    def mat(name, ne, std=None):
        # ne: ggml order (ne0 = fan-in); numpy shape reversed
        if std is None:
            std = 1.0 / np.sqrt(ne[0] * (ne[1] if len(ne) == 3 else 1))
        tensors.append((name, normal(tuple(reversed(ne)), std).astype(np.float16), 1))

    def vec(name, ne, kind):
        shape = tuple(reversed(ne))
        if kind == "one":
            data = 1.0 + normal(shape, 0.05)
        elif kind == "bias":
            data = normal(shape, 0.02)
        else:
            raise ValueError(kind)
        tensors.append((name, data.astype(np.float32), 0))

    # encoder
    tensors.append(("encoder.positional_embedding", sinusoids(a.audio_ctx, n_state), 0))
    mat("encoder.conv1.weight", (3, a.mels, n_state))
    vec("encoder.conv1.bias", (1, n_state), "bias")
    mat("encoder.conv2.weight", (3, n_state, n_state))
    vec("encoder.conv2.bias", (1, n_state), "bias")
    for i in range(a.audio_layers):
        p = "encoder.blocks.%d." % i
        vec(p + "mlp_ln.weight", (n_state,), "one")
        vec(p + "mlp_ln.bias", (n_state,), "bias")
        mat(p + "mlp.0.weight", (n_state, 4 * n_state))
        vec(p + "mlp.0.bias", (4 * n_state,), "bias")
        mat(p + "mlp.2.weight", (4 * n_state, n_state))
        vec(p + "mlp.2.bias", (n_state,), "bias")
        vec(p + "attn_ln.weight", (n_state,), "one")
        vec(p + "attn_ln.bias", (n_state,), "bias")
        mat(p + "attn.query.weight", (n_state, n_state))
        vec(p + "attn.query.bias", (n_state,), "bias")
        mat(p + "attn.key.weight", (n_state, n_state))
        mat(p + "attn.value.weight", (n_state, n_state))
        vec(p + "attn.value.bias", (n_state,), "bias")
        mat(p + "attn.out.weight", (n_state, n_state))
        vec(p + "attn.out.bias", (n_state,), "bias")
    vec("encoder.ln_post.weight", (n_state,), "one")
    vec("encoder.ln_post.bias", (n_state,), "bias")

    # decoder
    tensors.append(("decoder.positional_embedding",
                    normal((a.text_ctx, n_state), 0.02).astype(np.float32), 0))
    mat("decoder.token_embedding.weight", (n_state, n_vocab), std=0.5)
    for i in range(a.text_layers):
        p = "decoder.blocks.%d." % i
        for attn in ("attn", "cross_attn"):
            vec(p + attn + "_ln.weight", (n_state,), "one")
            vec(p + attn + "_ln.bias", (n_state,), "bias")
            mat(p + attn + ".query.weight", (n_state, n_state))
            vec(p + attn + ".query.bias", (n_state,), "bias")
            mat(p + attn + ".key.weight", (n_state, n_state))
            mat(p + attn + ".value.weight", (n_state, n_state))
            vec(p + attn + ".value.bias", (n_state,), "bias")
            mat(p + attn + ".out.weight", (n_state, n_state))
            vec(p + attn + ".out.bias", (n_state,), "bias")
        vec(p + "mlp_ln.weight", (n_state,), "one")
        vec(p + "mlp_ln.bias", (n_state,), "bias")
        mat(p + "mlp.0.weight", (n_state, 4 * n_state))
        vec(p + "mlp.0.bias", (4 * n_state,), "bias")
        mat(p + "mlp.2.weight", (4 * n_state, n_state))
        vec(p + "mlp.2.bias", (n_state,), "bias")
    vec("decoder.ln.weight", (n_state,), "one")
    vec("decoder.ln.bias", (n_state,), "bias")

    tmp = a.out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<I", GGML_MAGIC))
        f.write(struct.pack("<11i", n_vocab, a.audio_ctx, n_state, a.heads, a.audio_layers,
                            a.text_ctx, n_state, a.heads, a.text_layers, a.mels, ftype))
        filters = mel_filters(a.mels)
        f.write(struct.pack("<2i", filters.shape[0], filters.shape[1]))
        f.write(filters.astype("<f4").tobytes())
        words = vocab_words(n_words)
        f.write(struct.pack("<i", len(words)))
        for w in words:
            f.write(struct.pack("<I", len(w)))
            f.write(w)
        for name, arr, ttype in tensors:
            ne = list(reversed(arr.shape))
            nb = name.encode()
            f.write(struct.pack("<3i", len(ne), len(nb), ttype))
            f.write(struct.pack("<%di" % len(ne), *ne))
            f.write(nb)
            f.write(arr.astype("<f2" if ttype == 1 else "<f4").tobytes())
    os.replace(tmp, a.out)
    print("make-whisper-model: wrote %s (%d tensors, %.1f MB)"
          % (a.out, len(tensors), os.path.getsize(a.out) / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
