// A voice assistant: whisper.rn and llama.rn in ONE process on ONE copy of ggml-backend-rs, as an
// app shipping both React Native packages does. Both models are loaded, whisper transcribes the
// WAV, the transcript becomes the user turn of SmolLM2's chat template (system turn:
// k_llama_system_prompt; or the bare transcript with --plain) and SmolLM2 answers greedily.
//
// The two halves are the single-host drivers' own code (whisper_run.cpp, llama_run.cpp), so the
// output files are comparable byte for byte with the stock whisper_driver's and the stock
// llama_driver's run one after the other on the same transcript (tests_c/hosts/run-assistant.sh).
//
// Both prefixes' registries, schedulers and loggers live in the one library here; --check-loggers
// (not for stock builds: it hands both prefixes' backend API a NULL buffer) requires each
// prefix's bad-input log line to reach its own host's logger and only that one.
//
// stdout: "transcript: ...", "answer: ..." and the machine-readable lines
//   WHISPER mode=.. (whisper_report_print)   LLAMA mode=.. (llama_report_print)
//   ASSISTANT mode=.. peak_rss_kb=.. loggers=<ok|FAIL|unchecked> whisper_splits=.. whisper_simd_splits=..
//             llama_splits=.. llama_simd_splits=..   (splits: printed with <P>GGML_SCHED_DEBUG=1)
//             wsp_devices=<name,..> lm_devices=<name,..>   (each prefix's registry)
//
// usage: assistant --whisper-model M --wav WAV --llama-model M [--whisper-out F] [--llama-out F]
//                  [-t THREADS=2] [--max-tokens N=0] [-p N_PROMPT_MAX=256] [-n N_GEN=32]
//                  [-c N_CTX=1024] [--plain] [--check-loggers] [-v]

#include "llama_run.h"
#include "whisper_run.h"

#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#ifndef GGML_RS_HOST_MODE
#define GGML_RS_HOST_MODE "unknown"
#endif

static void usage(const char * argv0) {
    fprintf(stderr,
            "usage: %s --whisper-model M --wav WAV --llama-model M [--whisper-out F] [--llama-out F] [-t THREADS] "
            "[--max-tokens N] [-p N_PROMPT_MAX] [-n N_GEN] [-c N_CTX] [--plain] [--check-loggers] [-v]\n",
            argv0);
    exit(2);
}

// Each prefix's bad-input line must reach its own host logger, once, and not the other's.
static bool loggers_separate(whisper_session * ws, llama_session * ls) {
    const int w0 = whisper_session_lines_logged(ws), l0 = llama_session_lines_logged(ls);
    const int w_from_wsp = whisper_session_probe_logger(ws);
    const int l_from_wsp = llama_session_lines_logged(ls) - l0;
    const int l_from_lm = llama_session_probe_logger(ls);
    const int w_from_lm = whisper_session_lines_logged(ws) - w0 - w_from_wsp;
    const bool ok = w_from_wsp == 1 && l_from_wsp == 0 && l_from_lm == 1 && w_from_lm == 0;
    if (!ok) {
        fprintf(stderr,
                "assistant: loggers mixed up: a wsp_ bad input gave %d line(s) to whisper's logger and %d to "
                "llama's; an lm_ one %d to llama's and %d to whisper's (want 1 0 1 0)\n",
                w_from_wsp, l_from_wsp, l_from_lm, w_from_lm);
    }
    return ok;
}

int main(int argc, char ** argv) {
    whisper_job wjob;
    llama_job ljob;
    ljob.n_prompt = 256;
    ljob.text = true;
    llama_prompt prompt;
    prompt.fixed_paragraph = false;
    prompt.chat = true;
    bool check_loggers = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> const char * {
            if (i + 1 >= argc) usage(argv[0]);
            return argv[++i];
        };
        if (a == "--whisper-model") wjob.model_path = next();
        else if (a == "--wav") wjob.wav_path = next();
        else if (a == "--llama-model") ljob.model_path = next();
        else if (a == "--whisper-out") wjob.out_path = next();
        else if (a == "--llama-out") ljob.out_path = next();
        else if (a == "-t") wjob.n_threads = ljob.n_threads = atoi(next());
        else if (a == "--max-tokens") wjob.max_tokens = atoi(next());
        else if (a == "-p") ljob.n_prompt = atoi(next());
        else if (a == "-n") ljob.n_gen = atoi(next());
        else if (a == "-c") ljob.n_ctx = atoi(next());
        else if (a == "--plain") prompt.chat = false;
        else if (a == "--check-loggers") check_loggers = true;
        else if (a == "-v") wjob.verbose = ljob.verbose = true;
        else usage(argv[0]);
    }
    if (wjob.model_path.empty() || wjob.wav_path.empty() || ljob.model_path.empty() || wjob.max_tokens < 0 ||
        ljob.n_prompt < 1 || ljob.n_gen < 1)
        usage(argv[0]);

    // Both models resident, as in the app; then listen, then answer.
    whisper_session * ws = whisper_session_open(wjob);
    if (!ws) return 1;
    llama_session * ls = llama_session_open(ljob);
    if (!ls) {
        whisper_session_close(ws);
        return 1;
    }
    whisper_report wrep;
    llama_report lrep;
    bool ok = whisper_session_run(ws, wrep);
    if (ok) {
        prompt.text = wrep.transcript;
        ok = llama_session_run(ls, prompt, lrep);
    }
    const char * loggers = "unchecked";
    if (ok && check_loggers) loggers = loggers_separate(ws, ls) ? "ok" : "FAIL";
    if (ok) {
        printf("transcript: %s\n", wrep.transcript.c_str());
        printf("answer: %s\n", lrep.text.c_str());
        whisper_report_print("WHISPER", GGML_RS_HOST_MODE, wrep);
        llama_report_print("LLAMA", GGML_RS_HOST_MODE, lrep);
        struct rusage ru = {};
        getrusage(RUSAGE_SELF, &ru);
        printf("ASSISTANT mode=%s peak_rss_kb=%ld loggers=%s whisper_splits=%d whisper_simd_splits=%d "
               "llama_splits=%d llama_simd_splits=%d wsp_devices=%s lm_devices=%s\n",
               GGML_RS_HOST_MODE, (long) ru.ru_maxrss, loggers, wrep.sched_splits, wrep.simd_splits, lrep.sched_splits,
               lrep.simd_splits, whisper_registry_devices().c_str(), llama_registry_devices().c_str());
        fflush(stdout);
    }
    llama_session_close(ls);
    whisper_session_close(ws);
    return ok && loggers[0] != 'F' ? 0 : 1;
}
