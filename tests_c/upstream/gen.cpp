// Greedy generation through upstream llama.cpp's public API, printing what the identity tests
// compare: every token id and, per decode step, an FNV-1a hash of all the logits of the last row.
//   gen-upstream -m model.gguf [-p prompt] [-n tokens] [-t threads] [-ngl N] [--rpc host:port[,..]]
//                [-fa on|off|auto] [-b n_batch] [--cycles N]
// The output has no timings, so stock's and ours are compared with cmp.
// -fa sets flash attention (default: llama.cpp's, auto); -b the batch and micro-batch size
// (default: the prompt's length, one batch); --cycles N first creates, uses (one prompt decode) and
// frees N contexts, printing each non-CPU device's free memory (ggml_backend_dev_memory) and the
// process's resident memory (Linux) before the first, while each context lives and after each is
// freed. The compute buffer sizes llama.cpp logs go to stderr.
#include "ggml-backend.h"
#include "llama.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
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
    } else if (strstr(text, "compute buffer size")) {
        fputs(text, stderr);
    }
}

// each non-CPU device's free memory, one line per device
static void print_dev_memory(const char * when, int cycle) {
    for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        if (ggml_backend_dev_type(d) == GGML_BACKEND_DEVICE_TYPE_CPU) continue;
        size_t free = 0, total = 0;
        ggml_backend_dev_memory(d, &free, &total);
        printf("memory %s %d %s free %zu total %zu\n", when, cycle, ggml_backend_dev_name(d), free, total);
    }
    // the process's resident memory: where a device's memory is host memory (lavapipe) and the
    // driver reports no budget, this is what shows memory a freed context kept
    size_t pages = 0, resident = 0;
    FILE * f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%zu %zu", &pages, &resident) != 2) resident = 0;
        fclose(f);
        printf("rss %s %d %zu\n", when, cycle, resident * 4096);
    }
}

int main(int argc, char ** argv) {
    std::string model, prompt = "The capital of France is", rpc;
    int n_predict = 16, n_threads = 2, ngl = 0, n_batch = 0, cycles = 0;
    enum llama_flash_attn_type fa = llama_context_default_params().flash_attn_type;
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
        else if (a == "-b") n_batch = atoi(next());
        else if (a == "--cycles") cycles = atoi(next());
        else if (a == "-fa") {
            std::string v = next();
            if (v == "on") fa = LLAMA_FLASH_ATTN_TYPE_ENABLED;
            else if (v == "off") fa = LLAMA_FLASH_ATTN_TYPE_DISABLED;
            else if (v == "auto") fa = LLAMA_FLASH_ATTN_TYPE_AUTO;
            else { fprintf(stderr, "-fa takes on, off or auto\n"); return 2; }
        }
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
    cp.n_batch = n_batch > 0 ? n_batch : n_prompt;
    if (n_batch > 0) cp.n_ubatch = n_batch;
    cp.n_threads = cp.n_threads_batch = n_threads;
    cp.no_perf = true;
    cp.flash_attn_type = fa;
    if (cycles > 0) {
        print_dev_memory("baseline", 0);
        for (int c = 1; c <= cycles; c++) {
            llama_context * cx = llama_init_from_model(m, cp);
            if (!cx) { fprintf(stderr, "failed to create context %d\n", c); return 1; }
            std::vector<llama_token> t = toks;
            for (size_t i = 0; i < t.size(); i += cp.n_batch) {
                int n = (int) std::min<size_t>(cp.n_batch, t.size() - i);
                if (llama_decode(cx, llama_batch_get_one(t.data() + i, n)) != 0) {
                    fprintf(stderr, "decode failed in cycle %d\n", c);
                    return 1;
                }
            }
            llama_synchronize(cx);
            print_dev_memory("live", c);
            llama_free(cx);
            print_dev_memory("freed", c);
        }
    }
    llama_context * ctx = llama_init_from_model(m, cp);
    if (!ctx) { fprintf(stderr, "failed to create the context\n"); return 1; }

    const int n_vocab = llama_vocab_n_tokens(vocab);
    // a prompt longer than the batch: every chunk but the last decoded here, the last at step 0
    size_t last = 0;
    while (toks.size() - last > cp.n_batch) {
        if (llama_decode(ctx, llama_batch_get_one(toks.data() + last, cp.n_batch)) != 0) {
            fprintf(stderr, "decode failed at prompt token %zu\n", last);
            return 1;
        }
        last += cp.n_batch;
    }
    llama_batch batch = llama_batch_get_one(toks.data() + last, toks.size() - last);
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
