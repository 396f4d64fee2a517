// Greedy generation through upstream llama.cpp's public API, printing what the identity tests
// compare: every token id and, per decode step, an FNV-1a hash of all the logits of the last row.
//   gen-upstream -m model.gguf [-p prompt] [-n tokens] [-t threads] [-ngl N] [--rpc host:port[,..]]
// The output has no timings, so stock's and ours are compared with cmp.
#include "ggml-backend.h"
#include "llama.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static uint64_t fnv(const void * p, size_t n, uint64_t h = 1469598103934665603ull) {
    const unsigned char * b = (const unsigned char *) p;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ b[i]) * 1099511628211ull;
    }
    return h;
}

static void quiet(enum ggml_log_level level, const char * text, void *) {
    if (level == GGML_LOG_LEVEL_ERROR || level == GGML_LOG_LEVEL_WARN) {
        fputs(text, stderr);
    }
}

int main(int argc, char ** argv) {
    std::string model, prompt = "The capital of France is", rpc;
    int n_predict = 16, n_threads = 2, ngl = 0;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto next = [&]() -> const char * {
            if (i + 1 >= argc) { fprintf(stderr, "%s needs a value\n", a.c_str()); exit(2); }
            return argv[++i];
        };
        if (a == "-m") model = next();
        else if (a == "-p") prompt = next();
        else if (a == "-n") n_predict = atoi(next());
        else if (a == "-t") n_threads = atoi(next());
        else if (a == "-ngl") ngl = atoi(next());
        else if (a == "--rpc") rpc = next();
        else { fprintf(stderr, "unknown argument %s\n", a.c_str()); return 2; }
    }
    if (model.empty()) { fprintf(stderr, "usage: gen-upstream -m model.gguf [...]\n"); return 2; }
    if (!getenv("GEN_VERBOSE")) {
        llama_log_set(quiet, nullptr);
    }
    ggml_backend_load_all();
    if (!rpc.empty()) {
        // as llama.cpp's common/arg.cpp does for --rpc
        ggml_backend_reg_t rpc_reg = ggml_backend_reg_by_name("RPC");
        if (!rpc_reg) { fprintf(stderr, "no RPC backend\n"); return 1; }
        typedef ggml_backend_reg_t (*add_server_t)(const char *);
        add_server_t add = (add_server_t) ggml_backend_reg_get_proc_address(rpc_reg, "ggml_backend_rpc_add_server");
        if (!add) { fprintf(stderr, "no ggml_backend_rpc_add_server\n"); return 1; }
        size_t pos = 0;
        while (pos <= rpc.size()) {
            size_t end = rpc.find(',', pos);
            if (end == std::string::npos) end = rpc.size();
            ggml_backend_reg_t reg = add(rpc.substr(pos, end - pos).c_str());
            if (!reg) { fprintf(stderr, "cannot add RPC server %s\n", rpc.c_str()); return 1; }
            ggml_backend_register(reg);
            pos = end + 1;
        }
    }
    for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        printf("device %zu: %s (%s)\n", i, ggml_backend_dev_name(d), ggml_backend_dev_description(d));
    }

    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = ngl;
    llama_model * m = llama_model_load_from_file(model.c_str(), mp);
    if (!m) { fprintf(stderr, "failed to load %s\n", model.c_str()); return 1; }
    const llama_vocab * vocab = llama_model_get_vocab(m);

    int n_prompt = -llama_tokenize(vocab, prompt.c_str(), prompt.size(), nullptr, 0, true, true);
    std::vector<llama_token> toks(n_prompt);
    if (llama_tokenize(vocab, prompt.c_str(), prompt.size(), toks.data(), toks.size(), true, true) < 0) {
        fprintf(stderr, "tokenize failed\n");
        return 1;
    }
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = n_prompt + n_predict + 8;
    cp.n_batch = n_prompt;
    cp.n_threads = cp.n_threads_batch = n_threads;
    cp.no_perf = true;
    llama_context * ctx = llama_init_from_model(m, cp);
    if (!ctx) { fprintf(stderr, "failed to create the context\n"); return 1; }

    const int n_vocab = llama_vocab_n_tokens(vocab);
    llama_batch batch = llama_batch_get_one(toks.data(), toks.size());
    uint64_t all = fnv("", 0);
    std::string text;
    llama_token tok = 0;
    for (int step = 0; step < n_predict; step++) {
        if (llama_decode(ctx, batch) != 0) { fprintf(stderr, "decode failed at step %d\n", step); return 1; }
        const float * logits = llama_get_logits_ith(ctx, -1);
        uint64_t h = fnv(logits, sizeof(float) * n_vocab);
        all = fnv(&h, sizeof h, all);
        int best = 0;
        for (int i = 1; i < n_vocab; i++) {
            if (logits[i] > logits[best]) best = i;
        }
        tok = best;
        char piece[256];
        int n = llama_token_to_piece(vocab, tok, piece, sizeof piece, 0, true);
        std::string p = n > 0 ? std::string(piece, n) : "";
        text += p;
        printf("step %2d token %6d logits %016llx\n", step, tok, (unsigned long long) h);
        if (llama_vocab_is_eog(vocab, tok)) break;
        batch = llama_batch_get_one(&tok, 1);
    }
    printf("text: %s\n", text.c_str());
    printf("logits digest %016llx\n", (unsigned long long) all);
    llama_free(ctx);
    llama_model_free(m);
    return 0;
}
