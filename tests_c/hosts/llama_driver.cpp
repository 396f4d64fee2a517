// Real-model driver for llama.rn's llama.cpp (llama.h API, symbols not
// renamed; ggml underneath is lm_-prefixed).
//
// Loads a GGUF model, feeds a fixed English prompt truncated to exactly
// N_PROMPT tokens (no chat template), then generates N_GEN tokens greedily
// (argmax over the logits, lowest id on ties; EOS does not stop it), using its
// own llama_batch / llama_decode loop with a fixed number of threads.
//
// Output file (little endian, for bitwise comparison between link modes):
//   char[8]   "LMDRV1\0\0"
//   int32     n_prompt, n_gen, n_vocab
//   int32     prompt token ids [n_prompt]
//   int32     generated token ids [n_gen]
//   uint64    FNV-1a of the raw bytes of every logits vector
//             [n_gen + 1]: after the prompt, then after each generated token
//   float     the full final logits vector [n_vocab] (after decoding the last
//             generated token)
//
// stdout: the generated text with --text, and one machine-readable line
//   RESULT mode=<mode> n_prompt=.. n_gen=.. prompt_ms=.. gen_ms=..
//          prompt_tps=.. gen_tps=.. compute_buffer_mib=..
//
// usage: llama_driver -m MODEL -o OUT [-p N_PROMPT=100] [-n N_GEN=32]
//                     [-t THREADS=2] [-c N_CTX=1024] [-u N_UBATCH=512] [--text] [-v]

#include "llama.h"

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#ifndef GGML_RS_HOST_MODE
#define GGML_RS_HOST_MODE "unknown"
#endif

static const char * k_paragraph =
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

struct log_state {
    bool verbose = false;
    double compute_buffer_mib = 0.0;
    std::string pending;
};

static void log_cb(enum lm_ggml_log_level level, const char * text, void * ud) {
    auto * st = static_cast<log_state *>(ud);
    if (st->verbose || level == LM_GGML_LOG_LEVEL_ERROR) {
        fputs(text, stderr);
    }
    st->pending += text;
    size_t nl;
    while ((nl = st->pending.find('\n')) != std::string::npos) {
        std::string line = st->pending.substr(0, nl);
        st->pending.erase(0, nl + 1);
        // e.g. "llama_new_context_with_model:        CPU compute buffer size =   102.25 MiB"
        size_t p = line.find("compute buffer size =");
        if (p != std::string::npos) {
            st->compute_buffer_mib += atof(line.c_str() + p + strlen("compute buffer size ="));
        }
    }
}

static uint64_t fnv1a(const void * data, size_t n) {
    const unsigned char * p = static_cast<const unsigned char *>(data);
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static llama_token argmax(const float * logits, int n_vocab) {
    int best = 0;
    for (int i = 1; i < n_vocab; ++i) {
        if (logits[i] > logits[best]) best = i;
    }
    return best;
}

static void usage(const char * argv0) {
    fprintf(stderr,
            "usage: %s -m MODEL -o OUT [-p N_PROMPT] [-n N_GEN] [-t THREADS] [-c N_CTX] [-u N_UBATCH] [--text] [--prompt-logits FILE] [-v]\n",
            argv0);
    exit(2);
}

int main(int argc, char ** argv) {
    std::string model_path, out_path, prompt_logits_path;
    int n_prompt = 100, n_gen = 32, n_threads = 2, n_ctx = 1024, n_ubatch = 512;
    bool print_text = false;
    log_state ls;

    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> const char * {
            if (i + 1 >= argc) usage(argv[0]);
            return argv[++i];
        };
        if (a == "-m") model_path = next();
        else if (a == "-o") out_path = next();
        else if (a == "-p") n_prompt = atoi(next());
        else if (a == "-n") n_gen = atoi(next());
        else if (a == "-t") n_threads = atoi(next());
        else if (a == "-c") n_ctx = atoi(next());
        else if (a == "-u") n_ubatch = atoi(next());
        else if (a == "--text") print_text = true;
        else if (a == "--prompt-logits") prompt_logits_path = next();
        else if (a == "-v") ls.verbose = true;
        else usage(argv[0]);
    }
    if (model_path.empty() || n_prompt < 1 || n_gen < 1 || n_prompt + n_gen + 1 > n_ctx || n_ubatch < 1) usage(argv[0]);

    llama_log_set(log_cb, &ls);
    llama_backend_init();

    llama_model_params mparams = llama_model_default_params();
    mparams.n_gpu_layers = 0;
    llama_model * model = llama_load_model_from_file(model_path.c_str(), mparams);
    if (!model) {
        fprintf(stderr, "llama_driver: failed to load %s\n", model_path.c_str());
        return 1;
    }

    llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = n_ctx;
    cparams.n_batch = n_ctx;
    cparams.n_ubatch = n_ubatch;
    cparams.n_threads = n_threads;
    cparams.n_threads_batch = n_threads;
    llama_context * ctx = llama_new_context_with_model(model, cparams);
    if (!ctx) {
        fprintf(stderr, "llama_driver: failed to create context\n");
        return 1;
    }
    const int n_vocab = llama_n_vocab(model);

    // Prompt: the paragraph repeated until long enough, cut to n_prompt tokens.
    std::string text;
    std::vector<llama_token> prompt;
    for (;;) {
        text += k_paragraph;
        std::vector<llama_token> toks(text.size() + 16);
        int n = llama_tokenize(model, text.c_str(), (int) text.size(), toks.data(),
                               (int) toks.size(), /*add_special*/ true, /*parse_special*/ false);
        if (n < 0) {
            fprintf(stderr, "llama_driver: tokenize failed\n");
            return 1;
        }
        if (n >= n_prompt) {
            prompt.assign(toks.begin(), toks.begin() + n_prompt);
            break;
        }
    }

    llama_batch batch = llama_batch_init(n_prompt, 0, 1);
    std::vector<llama_token> generated;
    std::vector<uint64_t> hashes;
    std::vector<float> final_logits;

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
    if (llama_decode(ctx, batch) != 0) {
        fprintf(stderr, "llama_driver: prompt decode failed\n");
        return 1;
    }
    auto t1 = std::chrono::steady_clock::now();
    const float * logits = llama_get_logits_ith(ctx, n_prompt - 1);
    hashes.push_back(fnv1a(logits, sizeof(float) * n_vocab));
    if (!prompt_logits_path.empty()) {
        // the logits after the prompt, raw floats (the SIMD backend's end-to-end check)
        FILE * pf = fopen(prompt_logits_path.c_str(), "wb");
        if (!pf || fwrite(logits, sizeof(float), n_vocab, pf) != (size_t) n_vocab || fclose(pf) != 0) {
            fprintf(stderr, "llama_driver: cannot write %s\n", prompt_logits_path.c_str());
            return 1;
        }
    }
    llama_token tok = argmax(logits, n_vocab);

    std::string out_text;
    auto t2 = std::chrono::steady_clock::now();
    for (int i = 0; i < n_gen; ++i) {
        generated.push_back(tok);
        if (print_text) {
            char buf[256];
            int n = llama_token_to_piece(model, tok, buf, sizeof(buf), 0, false);
            if (n > 0) out_text.append(buf, n);
        }
        batch.n_tokens = 1;
        batch.token[0] = tok;
        batch.pos[0] = n_prompt + i;
        batch.n_seq_id[0] = 1;
        batch.seq_id[0][0] = 0;
        batch.logits[0] = true;
        if (llama_decode(ctx, batch) != 0) {
            fprintf(stderr, "llama_driver: decode failed at step %d\n", i);
            return 1;
        }
        logits = llama_get_logits_ith(ctx, 0);
        hashes.push_back(fnv1a(logits, sizeof(float) * n_vocab));
        tok = argmax(logits, n_vocab);
    }
    auto t3 = std::chrono::steady_clock::now();
    final_logits.assign(logits, logits + n_vocab);

    const double prompt_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    const double gen_ms = std::chrono::duration<double, std::milli>(t3 - t2).count();

    if (!out_path.empty()) {
        FILE * f = fopen(out_path.c_str(), "wb");
        if (!f) {
            fprintf(stderr, "llama_driver: cannot write %s\n", out_path.c_str());
            return 1;
        }
        const char magic[8] = {'L', 'M', 'D', 'R', 'V', '1', 0, 0};
        int32_t hdr[3] = {n_prompt, n_gen, n_vocab};
        fwrite(magic, 1, 8, f);
        fwrite(hdr, sizeof(int32_t), 3, f);
        fwrite(prompt.data(), sizeof(llama_token), prompt.size(), f);
        fwrite(generated.data(), sizeof(llama_token), generated.size(), f);
        fwrite(hashes.data(), sizeof(uint64_t), hashes.size(), f);
        fwrite(final_logits.data(), sizeof(float), final_logits.size(), f);
        if (fclose(f) != 0) {
            fprintf(stderr, "llama_driver: write error on %s\n", out_path.c_str());
            return 1;
        }
    }

    if (print_text) {
        printf("%s\n", out_text.c_str());
    }
    printf("RESULT mode=%s n_prompt=%d n_gen=%d prompt_ms=%.3f gen_ms=%.3f "
           "prompt_tps=%.3f gen_tps=%.3f compute_buffer_mib=%.2f\n",
           GGML_RS_HOST_MODE, n_prompt, n_gen, prompt_ms, gen_ms,
           1000.0 * n_prompt / prompt_ms, 1000.0 * n_gen / gen_ms, ls.compute_buffer_mib);
    fflush(stdout);

    llama_batch_free(batch);
    llama_free(ctx);
    llama_free_model(model);
    llama_backend_free();
    return 0;
}
