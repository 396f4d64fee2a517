// Real-model driver for whisper.rn's whisper.cpp (whisper.h API; ggml
// underneath is wsp_-prefixed).
//
// Loads a whisper.cpp ggml-format model, reads a 16 kHz mono 16-bit PCM WAV
// and transcribes it with whisper_full: greedy, fixed thread count, no
// timestamps, language "en", temperature 0 and no temperature fallback.
//
// Output file (little endian, for bitwise comparison between link modes):
//   char[8]  "WSDRV1\0\0"
//   int32    n_segments
//   per segment:
//     int32  n_tokens
//     per token: int32 id, int32 tid, float p, float plog, float pt, float ptsum
//     int32  text length, then the segment text bytes
//
// stdout: the transcript with --text, and one machine-readable line
//   RESULT mode=<mode> n_segments=.. n_tokens=.. encode_ms=.. decode_ms=..
//          batchd_ms=.. total_ms=.. compute_buffer_mb=..
//
// usage: whisper_driver -m MODEL -f WAV -o OUT [-t THREADS=2] [--text] [-v]

#include "whisper.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#ifndef GGML_RS_HOST_MODE
#define GGML_RS_HOST_MODE "unknown"
#endif

struct log_state {
    bool verbose = false;
    double compute_buffer_mb = 0.0;
    std::string pending;
};

static void log_cb(enum wsp_ggml_log_level level, const char * text, void * ud) {
    auto * st = static_cast<log_state *>(ud);
    if (st->verbose || level == WSP_GGML_LOG_LEVEL_ERROR) {
        fputs(text, stderr);
    }
    st->pending += text;
    size_t nl;
    while ((nl = st->pending.find('\n')) != std::string::npos) {
        std::string line = st->pending.substr(0, nl);
        st->pending.erase(0, nl + 1);
        // e.g. "whisper_init_state: compute buffer (encode) =    1.23 MB"
        size_t p = line.find("compute buffer (");
        if (p != std::string::npos) {
            size_t eq = line.find('=', p);
            if (eq != std::string::npos) st->compute_buffer_mb += atof(line.c_str() + eq + 1);
        }
    }
}

static bool read_file(const std::string & path, std::vector<uint8_t> & data) {
    FILE * f = fopen(path.c_str(), "rb");
    if (!f) return false;
    uint8_t buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) data.insert(data.end(), buf, buf + n);
    fclose(f);
    return true;
}

static uint32_t rd32(const uint8_t * p) { return p[0] | (p[1] << 8) | (p[2] << 16) | ((uint32_t) p[3] << 24); }
static uint16_t rd16(const uint8_t * p) { return (uint16_t) (p[0] | (p[1] << 8)); }

// Minimal RIFF/WAVE reader: PCM 16-bit, mono, 16 kHz only.
static bool read_wav(const std::string & path, std::vector<float> & pcm) {
    std::vector<uint8_t> d;
    if (!read_file(path, d) || d.size() < 12 || memcmp(d.data(), "RIFF", 4) || memcmp(d.data() + 8, "WAVE", 4)) {
        fprintf(stderr, "whisper_driver: %s is not a WAV file\n", path.c_str());
        return false;
    }
    size_t off = 12;
    bool fmt_ok = false;
    while (off + 8 <= d.size()) {
        const uint32_t sz = rd32(d.data() + off + 4);
        const uint8_t * body = d.data() + off + 8;
        if (off + 8 + (size_t) sz > d.size()) break;
        if (!memcmp(d.data() + off, "fmt ", 4) && sz >= 16) {
            const uint16_t fmt = rd16(body), ch = rd16(body + 2), bits = rd16(body + 14);
            const uint32_t rate = rd32(body + 4);
            if (fmt != 1 || ch != 1 || bits != 16 || rate != WHISPER_SAMPLE_RATE) {
                fprintf(stderr, "whisper_driver: %s: need PCM16 mono %d Hz (got fmt %u, %u ch, %u bits, %u Hz)\n",
                        path.c_str(), WHISPER_SAMPLE_RATE, fmt, ch, bits, rate);
                return false;
            }
            fmt_ok = true;
        } else if (!memcmp(d.data() + off, "data", 4) && fmt_ok) {
            const size_t n = sz / 2;
            pcm.resize(n);
            for (size_t i = 0; i < n; ++i) pcm[i] = (float) (int16_t) rd16(body + 2 * i) / 32768.0f;
            return true;
        }
        off += 8 + sz + (sz & 1);
    }
    fprintf(stderr, "whisper_driver: %s: no fmt/data chunk\n", path.c_str());
    return false;
}

static void usage(const char * argv0) {
    fprintf(stderr, "usage: %s -m MODEL -f WAV -o OUT [-t THREADS] [--text] [-v]\n", argv0);
    exit(2);
}

int main(int argc, char ** argv) {
    std::string model_path, wav_path, out_path;
    int n_threads = 2;
    bool print_text = false;
    log_state ls;

    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> const char * {
            if (i + 1 >= argc) usage(argv[0]);
            return argv[++i];
        };
        if (a == "-m") model_path = next();
        else if (a == "-f") wav_path = next();
        else if (a == "-o") out_path = next();
        else if (a == "-t") n_threads = atoi(next());
        else if (a == "--text") print_text = true;
        else if (a == "-v") ls.verbose = true;
        else usage(argv[0]);
    }
    if (model_path.empty() || wav_path.empty()) usage(argv[0]);

    whisper_log_set(log_cb, &ls);

    std::vector<float> pcm;
    if (!read_wav(wav_path, pcm)) return 1;

    whisper_context_params cparams = whisper_context_default_params();
    cparams.use_gpu = false;
    cparams.flash_attn = false;
    whisper_context * ctx = whisper_init_from_file_with_params(model_path.c_str(), cparams);
    if (!ctx) {
        fprintf(stderr, "whisper_driver: failed to load %s\n", model_path.c_str());
        return 1;
    }

    whisper_full_params wparams = whisper_full_default_params(WHISPER_SAMPLING_GREEDY);
    wparams.n_threads = n_threads;
    wparams.translate = false;
    wparams.no_context = true;
    wparams.no_timestamps = true;
    wparams.single_segment = false;
    wparams.print_special = false;
    wparams.print_progress = false;
    wparams.print_realtime = false;
    wparams.print_timestamps = false;
    wparams.token_timestamps = false;
    wparams.language = "en";
    wparams.detect_language = false;
    wparams.temperature = 0.0f;
    wparams.temperature_inc = 0.0f; // no temperature fallback
    wparams.greedy.best_of = 1;

    whisper_reset_timings(ctx);
    auto t0 = std::chrono::steady_clock::now();
    if (whisper_full(ctx, wparams, pcm.data(), (int) pcm.size()) != 0) {
        fprintf(stderr, "whisper_driver: whisper_full failed\n");
        return 1;
    }
    auto t1 = std::chrono::steady_clock::now();
    const double total_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    const whisper_timings * tm = whisper_get_timings(ctx);

    const int n_seg = whisper_full_n_segments(ctx);
    int n_tok_total = 0;
    std::string transcript;
    FILE * f = nullptr;
    if (!out_path.empty()) {
        f = fopen(out_path.c_str(), "wb");
        if (!f) {
            fprintf(stderr, "whisper_driver: cannot write %s\n", out_path.c_str());
            return 1;
        }
        const char magic[8] = {'W', 'S', 'D', 'R', 'V', '1', 0, 0};
        fwrite(magic, 1, 8, f);
        int32_t ns = n_seg;
        fwrite(&ns, sizeof(ns), 1, f);
    }
    for (int s = 0; s < n_seg; ++s) {
        const int32_t n_tok = whisper_full_n_tokens(ctx, s);
        n_tok_total += n_tok;
        const char * text = whisper_full_get_segment_text(ctx, s);
        transcript += text ? text : "";
        if (!f) continue;
        fwrite(&n_tok, sizeof(n_tok), 1, f);
        for (int i = 0; i < n_tok; ++i) {
            const whisper_token_data td = whisper_full_get_token_data(ctx, s, i);
            const int32_t ids[2] = {td.id, td.tid};
            const float ps[4] = {td.p, td.plog, td.pt, td.ptsum};
            fwrite(ids, sizeof(int32_t), 2, f);
            fwrite(ps, sizeof(float), 4, f);
        }
        const int32_t len = text ? (int32_t) strlen(text) : 0;
        fwrite(&len, sizeof(len), 1, f);
        if (len) fwrite(text, 1, len, f);
    }
    if (f && fclose(f) != 0) {
        fprintf(stderr, "whisper_driver: write error on %s\n", out_path.c_str());
        return 1;
    }

    if (print_text) printf("%s\n", transcript.c_str());
    printf("RESULT mode=%s n_segments=%d n_tokens=%d encode_ms=%.3f decode_ms=%.3f batchd_ms=%.3f "
           "total_ms=%.3f compute_buffer_mb=%.2f\n",
           GGML_RS_HOST_MODE, n_seg, n_tok_total, tm ? tm->encode_ms : -1.0f, tm ? tm->decode_ms : -1.0f,
           tm ? tm->batchd_ms : -1.0f, total_ms, ls.compute_buffer_mb);
    fflush(stdout);

    whisper_free(ctx);
    return 0;
}
