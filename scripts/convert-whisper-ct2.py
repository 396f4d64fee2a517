#!/usr/bin/env python3
"""Convert a CTranslate2 whisper model (faster-whisper's model.bin + vocabulary.txt) to
whisper.cpp's ggml model file, the format whisper.rn's whisper_model_load() reads.

  convert-whisper-ct2.py MODEL_BIN VOCABULARY_TXT OUT       convert (then checks OUT, as below)
  convert-whisper-ct2.py --check OUT                        check an existing ggml file

Input, CTranslate2 model.bin (binary version 5 or 6, little endian): u32 version; the spec name
and every later string as u16 length (counting a trailing NUL) + bytes; u32 revision; u32
variable count; per variable: name, u8 rank, rank x u32 dims, u8 dtype (0 f32, 1 i8, 2 i16,
3 i32, 4 f16, 5 bf16), u32 byte count, the row-major data; then u32 alias count and
(alias, target) pairs.

Output (whisper.cpp's legacy ggml file, little endian):
  u32 magic 0x67676d6c; 11 x i32 hparams n_vocab n_audio_ctx n_audio_state n_audio_head
  n_audio_layer n_text_ctx n_text_state n_text_head n_text_layer n_mels ftype (1: mostly f16);
  i32 n_mel, i32 n_fft (201), n_mel x n_fft f32: the mel filter bank (librosa's
  filters.mel(sr=16000, n_fft=400, n_mels=80), Slaney scale and area normalisation, computed
  here with numpy the way librosa does, in float32);
  i32 n_words, per word u32 length + bytes: the byte-level BPE tokens below <|endoftext|>, with
  GPT-2's bytes<->unicode mapping undone (whisper.cpp adds the special tokens itself);
  tensors until EOF: i32 n_dims, i32 name length, i32 type (0 f32, 1 f16), i32 ne[n_dims]
  (innermost first), the name, the data. As whisper.cpp's own converter: matrices and conv
  kernels f16, 1-D tensors, the conv biases (as n x 1) and the positional embeddings f32.

Name mapping (CTranslate2 -> whisper.cpp), per layer N:
  encoder/conv{1,2}/{weight,bias}                 encoder.conv{1,2}.{weight,bias}
  encoder/position_encodings/encodings            encoder.positional_embedding
  encoder/layer_N/self_attention/layer_norm       encoder.blocks.N.attn_ln  (gamma/beta: weight/bias)
  encoder/layer_N/self_attention/linear_0         fused q|k|v: .attn.query / .attn.key / .attn.value
  encoder/layer_N/self_attention/linear_1         encoder.blocks.N.attn.out
  encoder/layer_N/ffn/layer_norm, linear_0, _1    encoder.blocks.N.mlp_ln, mlp.0, mlp.2
  encoder/layer_norm                              encoder.ln_post
  decoder/embeddings/weight                       decoder.token_embedding.weight
  decoder/position_encodings/encodings            decoder.positional_embedding
  decoder/layer_N/self_attention/...              decoder.blocks.N.attn_ln / .attn.* as above
  decoder/layer_N/attention/layer_norm            decoder.blocks.N.cross_attn_ln
  decoder/layer_N/attention/linear_0              decoder.blocks.N.cross_attn.query
  decoder/layer_N/attention/linear_1              fused k|v: .cross_attn.key / .cross_attn.value
  decoder/layer_N/attention/linear_2              decoder.blocks.N.cross_attn.out
  decoder/layer_N/ffn/...                         decoder.blocks.N.mlp_ln, mlp.0, mlp.2
  decoder/layer_norm                              decoder.ln
whisper's key projections have no bias: the key part of a fused bias must be zero and is dropped.

The check (always run on the written file) parses it back and requires exactly the tensors, shapes
and types whisper_model_load() creates for these hparams (mirrored in expected_tensors()), the mel
bank's shape and row sums, and the vocabulary's size and first/space tokens.

Needs numpy only.
"""

import argparse
import hashlib
import os
import struct
import sys

import numpy as np

GGML_MAGIC = 0x67676D6C
SAMPLE_RATE = 16000
N_FFT = 400
CT2_DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16}


# --------------------------------------------------------------------------- CTranslate2 reader
def read_ct2(path):
    """Returns (spec name, {variable name: numpy array (a view of the file for tensors)})."""
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    buf = memoryview(raw)
    off = 0

    def take(fmt):
        nonlocal off
        v = struct.unpack_from("<" + fmt, buf, off)
        off += struct.calcsize("<" + fmt)
        return v[0] if len(v) == 1 else v

    def string():
        nonlocal off
        n = take("H")
        s = bytes(buf[off : off + n]).rstrip(b"\0").decode()
        off += n
        return s

    version = take("I")
    if version not in (5, 6):
        raise SystemExit("convert: %s: CTranslate2 binary version %d, expected 5 or 6" % (path, version))
    spec = string()
    take("I")  # spec revision
    variables = {}
    for _ in range(take("I")):
        name = string()
        rank = take("B")
        dims = [take("I") for _ in range(rank)]
        dtype = take("B")
        nbytes = take("I")
        if dtype not in CT2_DTYPES:
            raise SystemExit("convert: %s: variable %s has dtype %d (bf16 or unknown), not supported" % (path, name, dtype))
        dt = np.dtype(CT2_DTYPES[dtype]).newbyteorder("<")
        count = int(np.prod(dims)) if dims else 1
        if count * dt.itemsize != nbytes:
            raise SystemExit("convert: %s: variable %s: %d bytes for dims %s" % (path, name, nbytes, dims))
        arr = np.frombuffer(raw, dtype=dt, count=count, offset=off).reshape(dims if dims else ())
        variables[name] = arr
        off += nbytes
    for _ in range(take("I")):
        alias, target = string(), string()
        variables.setdefault(alias, variables[target])
    if off != len(raw):
        raise SystemExit("convert: %s: %d trailing bytes" % (path, len(raw) - off))
    return spec, variables


# --------------------------------------------------------------------------- mel filter bank
def hz_to_mel(f):
    """librosa.hz_to_mel, htk=False (Slaney): linear below 1 kHz, logarithmic above."""
    f = np.asanyarray(f, dtype=np.float64)
    f_sp = 200.0 / 3
    mels = f / f_sp
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0
    if mels.ndim:
        log_t = f >= min_log_hz
        mels[log_t] = min_log_mel + np.log(f[log_t] / min_log_hz) / logstep
    elif f >= min_log_hz:
        mels = min_log_mel + np.log(f / min_log_hz) / logstep
    return mels


def mel_to_hz(m):
    m = np.asanyarray(m, dtype=np.float64)
    f_sp = 200.0 / 3
    freqs = f_sp * m
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0
    log_t = m >= min_log_mel
    freqs[log_t] = min_log_hz * np.exp(logstep * (m[log_t] - min_log_mel))
    return freqs


def mel_filters(n_mels, sr=SAMPLE_RATE, n_fft=N_FFT):
    """librosa.filters.mel(sr=sr, n_fft=n_fft, n_mels=n_mels) with its defaults (fmin 0, fmax sr/2,
    htk False, norm 'slaney', dtype float32): triangles on the mel scale, each scaled to unit area.
    As librosa, the triangles are stored in float32 before the normalisation is applied."""
    n_bins = 1 + n_fft // 2
    weights = np.zeros((n_mels, n_bins), dtype=np.float32)
    fftfreqs = np.fft.rfftfreq(n=n_fft, d=1.0 / sr)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(sr / 2.0), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = np.subtract.outer(mel_f, fftfreqs)
    for i in range(n_mels):
        lower = -ramps[i] / fdiff[i]
        upper = ramps[i + 2] / fdiff[i + 1]
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    enorm = 2.0 / (mel_f[2 : n_mels + 2] - mel_f[:n_mels])
    weights *= enorm[:, np.newaxis]
    return weights


# --------------------------------------------------------------------------- vocabulary
def bytes_to_unicode():
    """GPT-2's reversible map of the 256 byte values onto printable unicode characters."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def vocab_words(path):
    """The text tokens of vocabulary.txt (one per line, below <|endoftext|>) as raw bytes."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    try:
        eot = lines.index("<|endoftext|>")
    except ValueError:
        raise SystemExit("convert: %s has no <|endoftext|> token" % path)
    byte_of = {c: b for b, c in bytes_to_unicode().items()}
    words = []
    for i, tok in enumerate(lines[:eot]):
        try:
            words.append(bytes(byte_of[c] for c in tok))
        except KeyError as e:
            raise SystemExit("convert: token %d %r: character %r is not in the byte-level alphabet" % (i, tok, e.args[0]))
    return words, len(lines)


# --------------------------------------------------------------------------- what whisper.cpp expects
def expected_tensors(hp):
    """{name: (ne tuple innermost first, ggml type 0 f32 / 1 f16)} exactly as whisper_model_load()
    creates them (whisper.rn 0.4.3's whisper.cpp, ftype 1: wtype = vtype = f16)."""
    s, a_ctx, t_ctx, mels, vocab = hp["n_audio_state"], hp["n_audio_ctx"], hp["n_text_ctx"], hp["n_mels"], hp["n_vocab"]
    F32, F16 = 0, 1
    t = {
        "encoder.positional_embedding": ((s, a_ctx), F32),
        "encoder.conv1.weight": ((3, mels, s), F16),
        "encoder.conv1.bias": ((1, s), F32),
        "encoder.conv2.weight": ((3, s, s), F16),
        "encoder.conv2.bias": ((1, s), F32),
        "encoder.ln_post.weight": ((s,), F32),
        "encoder.ln_post.bias": ((s,), F32),
        "decoder.positional_embedding": ((s, t_ctx), F32),
        "decoder.token_embedding.weight": ((s, vocab), F16),
        "decoder.ln.weight": ((s,), F32),
        "decoder.ln.bias": ((s,), F32),
    }

    def block(p, attns):
        t[p + "mlp_ln.weight"] = ((s,), F32)
        t[p + "mlp_ln.bias"] = ((s,), F32)
        t[p + "mlp.0.weight"] = ((s, 4 * s), F16)
        t[p + "mlp.0.bias"] = ((4 * s,), F32)
        t[p + "mlp.2.weight"] = ((4 * s, s), F16)
        t[p + "mlp.2.bias"] = ((s,), F32)
        for at in attns:
            t[p + at + "_ln.weight"] = ((s,), F32)
            t[p + at + "_ln.bias"] = ((s,), F32)
            for proj in ("query", "key", "value", "out"):
                t[p + at + "." + proj + ".weight"] = ((s, s), F16)
                if proj != "key":
                    t[p + at + "." + proj + ".bias"] = ((s,), F32)

    for i in range(hp["n_audio_layer"]):
        block("encoder.blocks.%d." % i, ("attn",))
    for i in range(hp["n_text_layer"]):
        block("decoder.blocks.%d." % i, ("attn", "cross_attn"))
    return t


HPARAMS = ("n_vocab", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer",
           "n_text_ctx", "n_text_state", "n_text_head", "n_text_layer", "n_mels", "ftype")


# --------------------------------------------------------------------------- conversion
def convert(model_bin, vocabulary, out):
    spec, v = read_ct2(model_bin)
    if spec != "WhisperSpec":
        raise SystemExit("convert: %s is a %s, not a WhisperSpec" % (model_bin, spec))

    def scalar(name):
        return int(v[name])

    # the architecture whisper.cpp implements: pre-norm, GELU, learned/sinusoidal positions added,
    # no ALiBi, no embedding scale
    for name, want in (("decoder/pre_norm", 1), ("decoder/activation", 3), ("decoder/alibi", 0),
                       ("decoder/scale_embeddings", 0)):
        if name in v and scalar(name) != want:
            raise SystemExit("convert: %s = %d, whisper.cpp implements %d" % (name, scalar(name), want))

    def n_layers(side):
        return len({k.split("/")[1] for k in v if k.startswith(side + "/layer_") and k.split("/")[1][6:].isdigit()})

    s_audio, mels, _k = v["encoder/conv1/weight"].shape
    hp = {
        "n_vocab": v["decoder/embeddings/weight"].shape[0],
        "n_audio_ctx": v["encoder/position_encodings/encodings"].shape[0],
        "n_audio_state": s_audio,
        "n_audio_head": scalar("encoder/num_heads"),
        "n_audio_layer": n_layers("encoder"),
        "n_text_ctx": v["decoder/position_encodings/encodings"].shape[0],
        "n_text_state": v["decoder/embeddings/weight"].shape[1],
        "n_text_head": scalar("decoder/num_heads"),
        "n_text_layer": n_layers("decoder"),
        "n_mels": mels,
        "ftype": 1,
    }
    if hp["n_text_state"] != s_audio:
        raise SystemExit("convert: n_text_state %d != n_audio_state %d (whisper.cpp asserts they match)" % (hp["n_text_state"], s_audio))
    s = s_audio

    tensors = []  # (name, numpy array in numpy order = ne reversed, ggml type)
    used = set()

    def get(name):
        used.add(name)
        return v[name]

    def put(name, arr, ttype):
        tensors.append((name, np.ascontiguousarray(arr, dtype=np.float16 if ttype == 1 else np.float32), ttype))

    def matrix(name, arr):
        put(name, arr, 1)

    def vector(name, arr):
        put(name, arr, 0)

    def norm(dst, src):
        vector(dst + ".weight", get(src + "/gamma"))
        vector(dst + ".bias", get(src + "/beta"))

    def linear(dst, src):
        matrix(dst + ".weight", get(src + "/weight"))
        vector(dst + ".bias", get(src + "/bias"))

    def no_bias(what, b):
        if np.any(b != 0):
            raise SystemExit("convert: %s has a non-zero bias (max |b| %g); whisper.cpp has none there" % (what, float(np.max(np.abs(b)))))

    def self_attn(dst, src):
        norm(dst + "attn_ln", src + "/layer_norm")
        w, b = get(src + "/linear_0/weight"), get(src + "/linear_0/bias")
        if w.shape != (3 * s, s) or b.shape != (3 * s,):
            raise SystemExit("convert: %s/linear_0: shape %s, expected fused q|k|v (%d, %d)" % (src, w.shape, 3 * s, s))
        matrix(dst + "attn.query.weight", w[:s])
        vector(dst + "attn.query.bias", b[:s])
        matrix(dst + "attn.key.weight", w[s : 2 * s])
        no_bias(src + "/linear_0 (key part)", b[s : 2 * s])
        matrix(dst + "attn.value.weight", w[2 * s :])
        vector(dst + "attn.value.bias", b[2 * s :])
        linear(dst + "attn.out", src + "/linear_1")

    def ffn(dst, src):
        norm(dst + "mlp_ln", src + "/layer_norm")
        linear(dst + "mlp.0", src + "/linear_0")
        linear(dst + "mlp.2", src + "/linear_1")

    # encoder
    vector("encoder.positional_embedding", get("encoder/position_encodings/encodings"))
    for c in ("conv1", "conv2"):
        matrix("encoder.%s.weight" % c, get("encoder/%s/weight" % c))
        vector("encoder.%s.bias" % c, get("encoder/%s/bias" % c).reshape(-1, 1))
    for i in range(hp["n_audio_layer"]):
        src, dst = "encoder/layer_%d" % i, "encoder.blocks.%d." % i
        self_attn(dst, src + "/self_attention")
        ffn(dst, src + "/ffn")
    norm("encoder.ln_post", "encoder/layer_norm")

    # decoder
    vector("decoder.positional_embedding", get("decoder/position_encodings/encodings"))
    matrix("decoder.token_embedding.weight", get("decoder/embeddings/weight"))
    for i in range(hp["n_text_layer"]):
        src, dst = "decoder/layer_%d" % i, "decoder.blocks.%d." % i
        self_attn(dst, src + "/self_attention")
        norm(dst + "cross_attn_ln", src + "/attention/layer_norm")
        linear(dst + "cross_attn.query", src + "/attention/linear_0")
        w, b = get(src + "/attention/linear_1/weight"), get(src + "/attention/linear_1/bias")
        if w.shape != (2 * s, s) or b.shape != (2 * s,):
            raise SystemExit("convert: %s/attention/linear_1: shape %s, expected fused k|v (%d, %d)" % (src, w.shape, 2 * s, s))
        matrix(dst + "cross_attn.key.weight", w[:s])
        no_bias(src + "/attention/linear_1 (key part)", b[:s])
        matrix(dst + "cross_attn.value.weight", w[s:])
        vector(dst + "cross_attn.value.bias", b[s:])
        linear(dst + "cross_attn.out", src + "/attention/linear_2")
        ffn(dst, src + "/ffn")
    norm("decoder.ln", "decoder/layer_norm")

    # every tensor of the model is used (scalars are settings; the output projection is tied to
    # the token embedding, as whisper.cpp computes it)
    unused = sorted(k for k, a in v.items() if a.ndim > 0 and k not in used and k != "decoder/projection/weight")
    if unused:
        raise SystemExit("convert: variables not converted: %s" % ", ".join(unused))
    if "decoder/projection/weight" in v and not np.array_equal(v["decoder/projection/weight"], v["decoder/embeddings/weight"]):
        raise SystemExit("convert: decoder/projection/weight is not the token embedding (untied output layer)")

    words, n_lines = vocab_words(vocabulary)
    if n_lines != hp["n_vocab"]:
        raise SystemExit("convert: %s has %d tokens, the model %d" % (vocabulary, n_lines, hp["n_vocab"]))
    filters = mel_filters(hp["n_mels"])

    tmp = out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<I", GGML_MAGIC))
        f.write(struct.pack("<11i", *(hp[k] for k in HPARAMS)))
        f.write(struct.pack("<2i", *filters.shape))
        f.write(filters.astype("<f4").tobytes())
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
    check(tmp)
    os.replace(tmp, out)
    print("convert-whisper-ct2: wrote %s (%d tensors, %d words, %.1f MB)" % (out, len(tensors), len(words), os.path.getsize(out) / 1e6))


# --------------------------------------------------------------------------- check
def check(path):
    d = np.memmap(path, dtype=np.uint8, mode="r")
    b = memoryview(d)
    off = 0

    def take(fmt):
        nonlocal off
        r = struct.unpack_from("<" + fmt, b, off)
        off += struct.calcsize("<" + fmt)
        return r

    def fail(msg):
        raise SystemExit("convert: check %s: %s" % (path, msg))

    if take("I")[0] != GGML_MAGIC:
        fail("bad magic")
    hp = dict(zip(HPARAMS, take("11i")))
    if hp["n_text_state"] != hp["n_audio_state"] or hp["ftype"] != 1:
        fail("hparams %s" % hp)
    n_mel, n_fft = take("2i")
    if (n_mel, n_fft) != (hp["n_mels"], 1 + N_FFT // 2):
        fail("mel bank %d x %d" % (n_mel, n_fft))
    filt = np.frombuffer(d, dtype="<f4", count=n_mel * n_fft, offset=off).reshape(n_mel, n_fft)
    off += 4 * n_mel * n_fft
    # Slaney normalisation: each triangle has area 1 in Hz, so its sum times the bin width is ~1
    # (within 10 %: triangles only a few bins wide are sampled coarsely)
    area = filt.sum(axis=1) * (SAMPLE_RATE / N_FFT)
    if not np.all(filt >= 0) or not np.allclose(area, 1.0, atol=0.1) or not np.array_equal(filt, mel_filters(n_mel)):
        fail("mel filter bank is not librosa's Slaney bank")
    (n_words,) = take("i")
    words = []
    for _ in range(n_words):
        (n,) = take("I")
        words.append(bytes(b[off : off + n]))
        off += n
    multilingual = hp["n_vocab"] >= 51865
    # " the" is token 264 in whisper's multilingual BPE, 262 in GPT-2's (the English-only models)
    the = 264 if multilingual else 262
    if n_words != (50257 if multilingual else 50256) or words[0] != b"!" or words[220] != b" " or words[the] != b" the":
        fail("vocabulary: %d words, [0] %r [220] %r [%d] %r" % (n_words, words[0], words[220], the, words[the]))
    want = expected_tensors(hp)
    seen = {}
    while off < len(d):
        n_dims, name_len, ttype = take("3i")
        ne = take("%di" % n_dims)
        name = bytes(b[off : off + name_len]).decode()
        off += name_len
        if name not in want:
            fail("unknown tensor %s" % name)
        if name in seen:
            fail("tensor %s twice" % name)
        if (tuple(ne), ttype) != want[name]:
            fail("tensor %s: ne %s type %d, whisper.cpp expects ne %s type %d" % (name, ne, ttype, *want[name]))
        nbytes = int(np.prod(ne)) * (2 if ttype == 1 else 4)
        data = np.frombuffer(d, dtype="<f2" if ttype == 1 else "<f4", count=nbytes // (2 if ttype == 1 else 4), offset=off)
        if not np.all(np.isfinite(data)):
            fail("tensor %s has non-finite values" % name)
        off += nbytes
        seen[name] = ne
    missing = sorted(set(want) - set(seen))
    if missing:
        fail("missing tensors: %s" % ", ".join(missing[:8]))
    if off != len(d):
        fail("truncated")
    print("convert-whisper-ct2: check ok: %s (%s, %d tensors as whisper.cpp expects, %d words, %dx%d mel bank)"
          % (os.path.basename(path), ", ".join("%s %d" % (k, hp[k]) for k in HPARAMS[:10]), len(seen), n_words, n_mel, n_fft))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", metavar="GGML_FILE", help="only check an existing ggml file")
    ap.add_argument("model_bin", nargs="?")
    ap.add_argument("vocabulary", nargs="?")
    ap.add_argument("out", nargs="?")
    a = ap.parse_args()
    if a.check:
        check(a.check)
    elif a.model_bin and a.vocabulary and a.out:
        convert(a.model_bin, a.vocabulary, a.out)
    else:
        ap.error("want MODEL_BIN VOCABULARY_TXT OUT, or --check GGML_FILE")
    return 0


if __name__ == "__main__":
    sys.exit(main())
