// Real-model driver for llama.rn's llama.cpp (llama.h API, symbols not renamed; ggml underneath
// is lm_-prefixed): loads a GGUF model, evaluates a prompt and generates N_GEN tokens greedily
// (llama_run.cpp: deterministic; the output file format is described there).
//
// The prompt is a fixed English paragraph cut to exactly N_PROMPT tokens (no chat template), or
// with --prompt-file the file's text, its tokens capped at N_PROMPT (--chat: as the user turn of
// the model's chat template, and the answer ends at the first end-of-generation token, as apps
// end it, N_GEN being a cap (--no-eog-stop: exactly N_GEN tokens); the stock half of the
// assistant's reference).
//
// stdout: the generated text with --text, and one machine-readable line
//   RESULT mode=<mode> n_prompt=.. n_gen=.. prompt_ms=.. gen_ms=..
//          prompt_tps=.. gen_tps=.. compute_buffer_mib=.. peak_rss_kb=.. stop=<eog|limit>
//
// usage: llama_driver -m MODEL -o OUT [-p N_PROMPT=100] [-n N_GEN=32]
//                     [-t THREADS=2] [-c N_CTX=1024] [-u N_UBATCH=512] [--text] [-v]
//                     [--prompt-logits FILE] [--prompt-file FILE [--chat [--no-eog-stop]]]
//                     [--flash-attn on|off|auto]   (2026 llama.cpp only; default auto)
//                     [--no-repack]   (2026 llama.cpp only: weights in plain CPU buffers, not
//                                      repacked into ggml-cpu's CPU_REPACK ones; llama.cpp's
//                                      --no-repack, llama_model_params.use_extra_bufts = false)

#include "llama_run.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#ifndef GGML_RS_HOST_MODE
#define GGML_RS_HOST_MODE "unknown"
#endif

static void usage(const char * argv0) {
    fprintf(stderr,
            "usage: %s -m MODEL -o OUT [-p N_PROMPT] [-n N_GEN] [-t THREADS] [-c N_CTX] [-u N_UBATCH] [--text] "
            "[--prompt-logits FILE] [--prompt-file FILE [--chat [--no-eog-stop]]] [--flash-attn on|off|auto] [--no-repack] [-v]\n",
            argv0);
    exit(2);
}

static bool read_text(const std::string & path, std::string & out) {
    FILE * f = fopen(path.c_str(), "rb");
    if (!f) return false;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
    return fclose(f) == 0;
}

int main(int argc, char ** argv) {
    llama_job job;
    llama_prompt prompt;
    std::string prompt_file;
    bool no_eog_stop = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> const char * {
            if (i + 1 >= argc) usage(argv[0]);
            return argv[++i];
        };
        if (a == "-m") job.model_path = next();
        else if (a == "-o") job.out_path = next();
        else if (a == "-p") job.n_prompt = atoi(next());
        else if (a == "-n") job.n_gen = atoi(next());
        else if (a == "-t") job.n_threads = atoi(next());
        else if (a == "-c") job.n_ctx = atoi(next());
        else if (a == "-u") job.n_ubatch = atoi(next());
        else if (a == "--text") job.text = true;
        else if (a == "--prompt-logits") job.prompt_logits_path = next();
        else if (a == "--prompt-file") prompt_file = next();
        else if (a == "--chat") prompt.chat = prompt.stop_at_eog = true;
        else if (a == "--no-eog-stop") no_eog_stop = true;
        else if (a == "-v") job.verbose = true;
        else if (a == "--no-repack") job.repack = false;
        else if (a == "--flash-attn") {
            std::string v = next();
            job.flash_attn = v == "on" ? 1 : v == "off" ? 0 : v == "auto" ? -1 : -2;
            if (job.flash_attn == -2) usage(argv[0]);
        }
        else usage(argv[0]);
    }
    if (job.model_path.empty() || job.n_prompt < 1 || job.n_gen < 1 || job.n_prompt + job.n_gen + 1 > job.n_ctx ||
        job.n_ubatch < 1 || (prompt.chat && prompt_file.empty()))
        usage(argv[0]);
    if (no_eog_stop) prompt.stop_at_eog = false;
    if (!prompt_file.empty()) {
        prompt.fixed_paragraph = false;
        if (!read_text(prompt_file, prompt.text)) {
            fprintf(stderr, "llama_driver: cannot read %s\n", prompt_file.c_str());
            return 1;
        }
    }

    llama_session * s = llama_session_open(job);
    if (!s) return 1;
    llama_report rep;
    const bool ok = llama_session_run(s, prompt, rep);
    if (ok) {
        if (job.text) printf("%s\n", rep.text.c_str());
        llama_report_print("RESULT", GGML_RS_HOST_MODE, rep);
    }
    llama_session_close(s);
    return ok ? 0 : 1;
}
