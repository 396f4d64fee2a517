// whisper.rn transcription shared by whisper_driver.cpp and assistant.cpp (see whisper_run.h).
//
// Greedy, fixed thread count, no timestamps, language "en", temperature 0 and no temperature
// fallback, so a run is deterministic and two builds can be compared bit for bit.
//
// Output file (little endian):
//   char[8]  "WSDRV1\0\0"
//   int32    n_segments
//   per segment:
//     int32  n_tokens
//     per token: int32 id, int32 tid, float p, float plog, float pt, float ptsum
//     int32  text length, then the segment text bytes

#include "whisper_run.h"
#include "digest.h"
#include "log_lines.h"

#include "whisper.h"

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct log_state : log_lines {
    double compute_buffer_mb = 0.0;
};

void log_cb(enum wsp_ggml_log_level level, const char * text, void * ud) {
    auto * st = static_cast<log_state *>(ud);
    st->feed(level == WSP_GGML_LOG_LEVEL_ERROR, text, [st](const std::string & line) {
        // e.g. "whisper_init_state: compute buffer (encode) =    1.23 MB"
        size_t p = line.find("compute buffer (");
        if (p != std::string::npos) {
            size_t eq = line.find('=', p);
            if (eq != std::string::npos) st->compute_buffer_mb += atof(line.c_str() + eq + 1);
        }
    });
}

bool read_file(const std::string & path, std::vector<uint8_t> & data) {
    FILE * f = fopen(path.c_str(), "rb");
    if (!f) return false;
    uint8_t buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) data.insert(data.end(), buf, buf + n);
    fclose(f);
    return true;
}

uint32_t rd32(const uint8_t * p) { return p[0] | (p[1] << 8) | (p[2] << 16) | ((uint32_t) p[3] << 24); }
uint16_t rd16(const uint8_t * p) { return (uint16_t) (p[0] | (p[1] << 8)); }

// Minimal RIFF/WAVE reader: PCM 16-bit, mono, 16 kHz only.
bool read_wav(const std::string & path, std::vector<float> & pcm) {
    std::vector<uint8_t> d;
    if (!read_file(path, d) || d.size() < 12 || memcmp(d.data(), "RIFF", 4) || memcmp(d.data() + 8, "WAVE", 4)) {
        fprintf(stderr, "whisper: %s is not a WAV file\n", path.c_str());
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
                fprintf(stderr, "whisper: %s: need PCM16 mono %d Hz (got fmt %u, %u ch, %u bits, %u Hz)\n",
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
    fprintf(stderr, "whisper: %s: no fmt/data chunk\n", path.c_str());
    return false;
}

} // namespace

struct whisper_session {
    whisper_job job;
    log_state ls;
    std::vector<float> pcm;
    whisper_context * ctx = nullptr;
};

whisper_session * whisper_session_open(const whisper_job & job) {
    auto * s = new whisper_session;
    s->job = job;
    s->ls.verbose = job.verbose;
    whisper_log_set(log_cb, &s->ls);
    if (job.model_path.empty() || !read_wav(job.wav_path, s->pcm)) {
        whisper_session_close(s);
        return nullptr;
    }
    whisper_context_params cparams = whisper_context_default_params();
    cparams.use_gpu = false;
    cparams.flash_attn = false;
    s->ctx = whisper_init_from_file_with_params(job.model_path.c_str(), cparams);
    if (!s->ctx) {
        fprintf(stderr, "whisper: failed to load %s\n", job.model_path.c_str());
        whisper_session_close(s);
        return nullptr;
    }
    return s;
}

bool whisper_session_run(whisper_session * s, whisper_report & rep) {
    const whisper_job & job = s->job;
    whisper_full_params wparams = whisper_full_default_params(WHISPER_SAMPLING_GREEDY);
    wparams.n_threads = job.n_threads;
    wparams.translate = false;
    wparams.no_context = true;
    wparams.no_timestamps = true;
    wparams.single_segment = false;
    wparams.print_special = false;
    wparams.print_progress = false;
    wparams.print_realtime = false;
    wparams.print_timestamps = false;
    wparams.token_timestamps = false;
    wparams.max_tokens = job.max_tokens;
    wparams.language = "en";
    wparams.detect_language = false;
    wparams.temperature = 0.0f;
    wparams.temperature_inc = 0.0f; // no temperature fallback
    wparams.greedy.best_of = 1;

    whisper_reset_timings(s->ctx);
    auto t0 = std::chrono::steady_clock::now();
    if (whisper_full(s->ctx, wparams, s->pcm.data(), (int) s->pcm.size()) != 0) {
        fprintf(stderr, "whisper: whisper_full failed\n");
        return false;
    }
    auto t1 = std::chrono::steady_clock::now();
    rep = whisper_report();
    rep.total_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    if (const whisper_timings * tm = whisper_get_timings(s->ctx)) {
        rep.encode_ms = tm->encode_ms;
        rep.decode_ms = tm->decode_ms;
        rep.batchd_ms = tm->batchd_ms;
    } else {
        rep.encode_ms = rep.decode_ms = rep.batchd_ms = -1.0;
    }

    rep.n_segments = whisper_full_n_segments(s->ctx);
    // the output file's bytes, hashed into rep.digest whether or not a file is written
    digest_writer out;
    if (!job.out_path.empty()) {
        out.f = fopen(job.out_path.c_str(), "wb");
        if (!out.f) {
            fprintf(stderr, "whisper: cannot write %s\n", job.out_path.c_str());
            return false;
        }
    }
    const char magic[8] = {'W', 'S', 'D', 'R', 'V', '1', 0, 0};
    out.put(magic, 1, 8);
    const int32_t ns = rep.n_segments;
    out.put(&ns, sizeof(ns), 1);
    for (int seg = 0; seg < rep.n_segments; ++seg) {
        const int32_t n_tok = whisper_full_n_tokens(s->ctx, seg);
        rep.n_tokens += n_tok;
        const char * text = whisper_full_get_segment_text(s->ctx, seg);
        rep.transcript += text ? text : "";
        out.put(&n_tok, sizeof(n_tok), 1);
        for (int i = 0; i < n_tok; ++i) {
            const whisper_token_data td = whisper_full_get_token_data(s->ctx, seg, i);
            const int32_t ids[2] = {td.id, td.tid};
            const float ps[4] = {td.p, td.plog, td.pt, td.ptsum};
            out.put(ids, sizeof(int32_t), 2);
            out.put(ps, sizeof(float), 4);
        }
        const int32_t len = text ? (int32_t) strlen(text) : 0;
        out.put(&len, sizeof(len), 1);
        if (len) out.put(text, 1, len);
    }
    rep.digest = out.digest.h;
    if (out.f && fclose(out.f) != 0) {
        fprintf(stderr, "whisper: write error on %s\n", job.out_path.c_str());
        return false;
    }
    if (!job.transcript_path.empty()) {
        FILE * tf = fopen(job.transcript_path.c_str(), "wb");
        if (!tf || fwrite(rep.transcript.data(), 1, rep.transcript.size(), tf) != rep.transcript.size() ||
            fclose(tf) != 0) {
            fprintf(stderr, "whisper: cannot write %s\n", job.transcript_path.c_str());
            return false;
        }
    }
    rep.compute_buffer_mb = s->ls.compute_buffer_mb;
    rep.lines_logged = s->ls.lines;
    rep.sched_splits = s->ls.splits;
    rep.simd_splits = s->ls.simd_splits;
    return true;
}

int whisper_session_lines_logged(const whisper_session * s) {
    return s->ls.lines;
}

int whisper_session_probe_logger(whisper_session * s) {
    const int before = s->ls.lines;
    (void) wsp_ggml_backend_buffer_get_size(nullptr);
    return s->ls.lines - before;
}

std::string whisper_registry_devices() {
    std::string names;
    for (size_t i = 0; i < wsp_ggml_backend_dev_count(); ++i) {
        if (i) names += ',';
        names += wsp_ggml_backend_dev_name(wsp_ggml_backend_dev_get(i));
    }
    return names;
}

void whisper_session_close(whisper_session * s) {
    if (!s) return;
    if (s->ctx) whisper_free(s->ctx);
    // the logger keeps a pointer to s->ls: hand it back to whisper's default first
    whisper_log_set(nullptr, nullptr);
    delete s;
}

void whisper_report_print(const char * tag, const char * mode, const whisper_report & rep) {
    struct rusage ru = {};
    getrusage(RUSAGE_SELF, &ru);
    printf("%s mode=%s n_segments=%d n_tokens=%d encode_ms=%.3f decode_ms=%.3f batchd_ms=%.3f "
           "total_ms=%.3f compute_buffer_mb=%.2f peak_rss_kb=%ld\n",
           tag, mode, rep.n_segments, rep.n_tokens, rep.encode_ms, rep.decode_ms, rep.batchd_ms, rep.total_ms,
           rep.compute_buffer_mb, (long) ru.ru_maxrss);
    fflush(stdout);
}
