// llama.rn prompt + greedy generation shared by llama_driver.cpp and assistant.cpp (see
// llama_run.h), with its own llama_batch / llama_decode loop and a fixed number of threads.
// Written for both llama.h APIs: with LLAMA_RUN_API_2026 (defined by the CMake targets of the
// 2026 hosts, cui-llama.rn 1.12.2 / llama.rn 0.12.9 / llama.rn 0.13: llama_vocab,
// llama_model_load_from_file, llama_init_from_model, the flash-attention type) the 2026 one,
// else llama.rn 0.4.4's; the session, prompt, greedy loop and output file are the same, so the
// drivers and the assistant are too.
//
// Output file (little endian, for bitwise comparison between builds):
//   char[8]   "LMDRV1\0\0"
//   int32     n_prompt, n_gen, n_vocab
//   int32     prompt token ids [n_prompt]
//   int32     generated token ids [n_gen] (n_gen: the tokens generated, fewer than asked when
//             an end-of-generation token ended the answer; that token is not among them)
//   uint64    FNV-1a of the raw bytes of every logits vector
//             [n_gen + 1]: after the prompt, then after each generated token
//   float     the full final logits vector [n_vocab] (after decoding the last
//             generated token)

#include "llama_run.h"
#include "digest.h"
#include "llama_output.h"
#include "log_lines.h"

#include "llama.h"

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

const char * const k_llama_system_prompt =
    "You are a helpful voice assistant. The user's words come from a speech recognizer and may be "
    "garbled; answer briefly.";

namespace {

const char * k_paragraph =
    "The old lighthouse stood at the edge of the cliff for more than two hundred "
    "years, watching ships pass through the narrow channel below. Every evening the "
    "keeper climbed the spiral staircase, trimmed the wick and polished the great "
    "lens until it shone like a second moon. Fishermen said that its beam could be "
    "seen from forty miles away on a clear night, and many of them owed their lives "
    "to that steady light. When the harbour authority finally replaced the lamp "
    "with an automatic beacon, the keeper packed his few belongings, locked the "
    "door behind him and walked slowly down the hill to the village, where the "
    "children were waiting to hear one more story about storms, wrecks and the "
    "strange lights that sometimes danced on the water after midnight. ";

struct log_state : log_lines {
    double compute_buffer_mib = 0.0;
};

void log_cb(enum lm_ggml_log_level level, const char * text, void * ud) {
    auto * st = static_cast<log_state *>(ud);
    st->feed(level == LM_GGML_LOG_LEVEL_ERROR, text, [st](const std::string & line) {
        // e.g. "llama_new_context_with_model:        CPU compute buffer size =   102.25 MiB"
        size_t p = line.find("compute buffer size =");
        if (p != std::string::npos) {
            st->compute_buffer_mib += atof(line.c_str() + p + strlen("compute buffer size ="));
        }
    });
}

llama_token argmax(const float * logits, int n_vocab) {
    int best = 0;
    for (int i = 1; i < n_vocab; ++i) {
        if (logits[i] > logits[best]) best = i;
    }
    return best;
}

bool tokenize(const llama_model * model, const std::string & text, bool parse_special, std::vector<llama_token> & out) {
    out.assign(text.size() + 16, 0);
#ifdef LLAMA_RUN_API_2026
    int n = llama_tokenize(llama_model_get_vocab(model), text.c_str(), (int) text.size(), out.data(), (int) out.size(),
#else
    int n = llama_tokenize(model, text.c_str(), (int) text.size(), out.data(), (int) out.size(),
#endif
                           /*add_special*/ true, parse_special);
    if (n < 0) {
        fprintf(stderr, "llama: tokenize failed\n");
        return false;
    }
    out.resize(n);
    return true;
}

// The paragraph repeated until long enough, cut to n_prompt tokens.
bool paragraph_tokens(const llama_model * model, int n_prompt, std::vector<llama_token> & prompt) {
    std::string text;
    for (;;) {
        text += k_paragraph;
        std::vector<llama_token> toks;
        if (!tokenize(model, text, false, toks)) return false;
        if ((int) toks.size() >= n_prompt) {
            prompt.assign(toks.begin(), toks.begin() + n_prompt);
            return true;
        }
    }
}

bool chat_text(const llama_model * model, const std::string & user, std::string & out) {
    const llama_chat_message msgs[2] = {{"system", k_llama_system_prompt}, {"user", user.c_str()}};
    std::vector<char> buf(2 * (strlen(k_llama_system_prompt) + user.size()) + 256);
#ifdef LLAMA_RUN_API_2026
    const char * tmpl = llama_model_chat_template(model, nullptr);
    if (!tmpl) {
        fprintf(stderr, "llama: the model has no chat template\n");
        return false;
    }
    int n = llama_chat_apply_template(tmpl, msgs, 2, /*add_ass*/ true, buf.data(), (int32_t) buf.size());
#else
    int n = llama_chat_apply_template(model, nullptr, msgs, 2, /*add_ass*/ true, buf.data(), (int32_t) buf.size());
#endif
    if (n > (int) buf.size()) {
        buf.resize(n);
#ifdef LLAMA_RUN_API_2026
        n = llama_chat_apply_template(tmpl, msgs, 2, true, buf.data(), (int32_t) buf.size());
#else
        n = llama_chat_apply_template(model, nullptr, msgs, 2, true, buf.data(), (int32_t) buf.size());
#endif
    }
    if (n < 0) {
        fprintf(stderr, "llama: the model has no chat template llama.cpp knows\n");
        return false;
    }
    out.assign(buf.data(), n);
    return true;
}

} // namespace

struct llama_session {
    llama_job job;
    log_state ls;
    llama_model * model = nullptr;
    llama_context * ctx = nullptr;
};

llama_session * llama_session_open(const llama_job & job) {
    auto * s = new llama_session;
    s->job = job;
    s->ls.verbose = job.verbose;
    llama_log_set(log_cb, &s->ls);
    llama_backend_init();

    llama_model_params mparams = llama_model_default_params();
    mparams.n_gpu_layers = 0;
#ifdef LLAMA_RUN_API_2026
    mparams.use_extra_bufts = job.repack;
    s->model = llama_model_load_from_file(job.model_path.c_str(), mparams);
#else
    s->model = llama_load_model_from_file(job.model_path.c_str(), mparams);
#endif
    if (!s->model) {
        fprintf(stderr, "llama: failed to load %s\n", job.model_path.c_str());
        llama_session_close(s);
        return nullptr;
    }
    llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = job.n_ctx;
    cparams.n_batch = job.n_ctx;
    cparams.n_ubatch = job.n_ubatch;
    cparams.n_threads = job.n_threads;
    cparams.n_threads_batch = job.n_threads;
#ifdef LLAMA_RUN_API_2026
    cparams.flash_attn_type = job.flash_attn < 0   ? LLAMA_FLASH_ATTN_TYPE_AUTO
                              : job.flash_attn > 0 ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                                                   : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    s->ctx = llama_init_from_model(s->model, cparams);
#else
    s->ctx = llama_new_context_with_model(s->model, cparams);
#endif
    if (!s->ctx) {
        fprintf(stderr, "llama: failed to create context\n");
        llama_session_close(s);
        return nullptr;
    }
    return s;
}

bool llama_session_run(llama_session * s, const llama_prompt & p, llama_report & rep) {
    const llama_job & job = s->job;
#ifdef LLAMA_RUN_API_2026
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(s->model));
#else
    const int n_vocab = llama_n_vocab(s->model);
#endif
    rep = llama_report();
    // a session runs more than once (the assistant's rounds): every run starts from an empty cache
#ifdef LLAMA_RUN_API_2026
    llama_memory_clear(llama_get_memory(s->ctx), true);
#else
    llama_kv_cache_clear(s->ctx);
#endif

    std::vector<llama_token> prompt;
    if (p.fixed_paragraph) {
        if (!paragraph_tokens(s->model, job.n_prompt, prompt)) return false;
    } else {
        std::string text = p.text;
        if (p.chat && !chat_text(s->model, p.text, text)) return false;
        if (!tokenize(s->model, text, /*parse_special*/ p.chat, prompt)) return false;
        if ((int) prompt.size() > job.n_prompt) prompt.resize(job.n_prompt);
    }
    const int n_prompt = (int) prompt.size();
    if (n_prompt < 1 || n_prompt + job.n_gen + 1 > job.n_ctx) {
        fprintf(stderr, "llama: %d prompt + %d generated tokens do not fit a context of %d\n", n_prompt, job.n_gen,
                job.n_ctx);
        return false;
    }

    llama_batch batch = llama_batch_init(n_prompt, 0, 1);
    std::vector<uint64_t> hashes;

    // Prompt evaluation (one batch; logits for the last token only).
    batch.n_tokens = n_prompt;
    for (int i = 0; i < n_prompt; ++i) {
        batch.token[i] = prompt[i];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = (i == n_prompt - 1);
    }
    auto t0 = std::chrono::steady_clock::now();
    if (llama_decode(s->ctx, batch) != 0) {
        fprintf(stderr, "llama: prompt decode failed\n");
        llama_batch_free(batch);
        return false;
    }
    auto t1 = std::chrono::steady_clock::now();
    const float * logits = llama_get_logits_ith(s->ctx, n_prompt - 1);
    hashes.push_back(fnv1a(logits, sizeof(float) * n_vocab));
    if (!job.prompt_logits_path.empty()) {
        // the logits after the prompt, raw floats (the SIMD backend's end-to-end check)
        FILE * pf = fopen(job.prompt_logits_path.c_str(), "wb");
        if (!pf || fwrite(logits, sizeof(float), n_vocab, pf) != (size_t) n_vocab || fclose(pf) != 0) {
            fprintf(stderr, "llama: cannot write %s\n", job.prompt_logits_path.c_str());
            llama_batch_free(batch);
            return false;
        }
    }
    llama_token tok = argmax(logits, n_vocab);

    // The per-token logits hash is this test's bit-identity check, not generation: a byte-wise
    // FNV-1a over n_vocab floats (~0.25 ms per token for SmolLM2's 49152, a twentieth of a SIMD
    // decode step) is timed apart and left out of gen_ms, as an app does no such thing.
    std::chrono::steady_clock::duration checking{};
    auto t2 = std::chrono::steady_clock::now();
    for (int i = 0; i < job.n_gen; ++i) {
#ifdef LLAMA_RUN_API_2026
        if (p.stop_at_eog && llama_vocab_is_eog(llama_model_get_vocab(s->model), tok)) {
#else
        if (p.stop_at_eog && llama_token_is_eog(s->model, tok)) {
#endif
            // the end of the turn: an app stops here, and so does the answer
            rep.eog_token = tok;
            break;
        }
        rep.generated.push_back(tok);
        if (job.text) {
            char buf[256];
#ifdef LLAMA_RUN_API_2026
            int n = llama_token_to_piece(llama_model_get_vocab(s->model), tok, buf, sizeof(buf), 0, false);
#else
            int n = llama_token_to_piece(s->model, tok, buf, sizeof(buf), 0, false);
#endif
            if (n > 0) rep.text.append(buf, n);
        }
        batch.n_tokens = 1;
        batch.token[0] = tok;
        batch.pos[0] = n_prompt + i;
        batch.n_seq_id[0] = 1;
        batch.seq_id[0][0] = 0;
        batch.logits[0] = true;
        if (llama_decode(s->ctx, batch) != 0) {
            fprintf(stderr, "llama: decode failed at step %d\n", i);
            llama_batch_free(batch);
            return false;
        }
        logits = llama_get_logits_ith(s->ctx, 0);
        auto h0 = std::chrono::steady_clock::now();
        hashes.push_back(fnv1a(logits, sizeof(float) * n_vocab));
        checking += std::chrono::steady_clock::now() - h0;
        tok = argmax(logits, n_vocab);
    }
    auto t3 = std::chrono::steady_clock::now();
    llama_batch_free(batch);

    rep.prompt_tokens.assign(prompt.begin(), prompt.end());
    rep.n_prompt = n_prompt;
    rep.n_gen = (int) rep.generated.size();
    rep.prompt_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    rep.gen_ms = std::chrono::duration<double, std::milli>(t3 - t2 - checking).count();
    rep.compute_buffer_mib = s->ls.compute_buffer_mib;
    rep.sched_splits = s->ls.splits;
    rep.simd_splits = s->ls.simd_splits;

    return llama_output_write(job.out_path, prompt, rep.n_gen, n_vocab, rep.generated, hashes, logits, rep.digest);
}

int llama_session_lines_logged(const llama_session * s) {
    return s->ls.lines;
}

int llama_session_probe_logger(llama_session * s) {
    const int before = s->ls.lines;
    (void) lm_ggml_backend_buffer_get_size(nullptr);
    return s->ls.lines - before;
}

std::string llama_registry_devices() {
    std::string names;
    for (size_t i = 0; i < lm_ggml_backend_dev_count(); ++i) {
        if (i) names += ',';
        names += lm_ggml_backend_dev_name(lm_ggml_backend_dev_get(i));
    }
    return names;
}

void llama_session_close(llama_session * s) {
    if (!s) return;
    if (s->ctx) llama_free(s->ctx);
#ifdef LLAMA_RUN_API_2026
    if (s->model) llama_model_free(s->model);
#else
    if (s->model) llama_free_model(s->model);
#endif
    llama_backend_free();
    // the logger keeps a pointer to s->ls: hand it back to llama's default first
    llama_log_set(nullptr, nullptr);
    delete s;
}

void llama_report_print(const char * tag, const char * mode, const llama_report & rep) {
    struct rusage ru = {};
    getrusage(RUSAGE_SELF, &ru);
    printf("%s mode=%s n_prompt=%d n_gen=%d prompt_ms=%.3f gen_ms=%.3f "
           "prompt_tps=%.3f gen_tps=%.3f compute_buffer_mib=%.2f peak_rss_kb=%ld stop=%s\n",
           tag, mode, rep.n_prompt, rep.n_gen, rep.prompt_ms, rep.gen_ms, 1000.0 * rep.n_prompt / rep.prompt_ms,
           rep.n_gen > 0 ? 1000.0 * rep.n_gen / rep.gen_ms : 0.0, rep.compute_buffer_mib, (long) ru.ru_maxrss,
           rep.eog_token >= 0 ? "eog" : "limit");
    fflush(stdout);
}
