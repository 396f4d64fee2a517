// A voice assistant: whisper.rn and llama.rn in ONE process on ONE copy of ggml-backend-rs, as an
// app shipping both React Native packages does. Both models are loaded, whisper transcribes the
// WAV, the transcript becomes the user turn of SmolLM2's chat template (system turn:
// k_llama_system_prompt; or the bare transcript with --plain) and SmolLM2 answers greedily until
// its first end-of-generation token (the end of its turn; N_GEN caps it; --no-eog-stop: exactly
// N_GEN tokens), as the stock llama_driver --chat does.
//
// The two halves are the single-host drivers' own code (whisper_run.cpp, llama_run.cpp), so the
// output files are comparable byte for byte with the stock whisper_driver's and the stock
// llama_driver's run one after the other on the same transcript (tests_c/hosts/run-assistant.sh).
//
// Both hosts at once (--rounds, --cycles): after the sequential run above, --rounds N runs whisper
// and SmolLM2 N more times on two threads at the same time (each computing with its own -t
// threads), and --cycles N closes both sessions and then, N times, loads both models, runs them at
// the same time and frees them. Every such run must give the sequential run's outputs bit for bit
// (the drivers' digests), and the peak RSS of each cycle (VmHWM, reset through
// /proc/self/clear_refs) and the RSS after each free (after malloc_trim) must stay flat: after
// --warmup-cycles (default 4), no cycle more than --rss-slack-kb (default 8192) above the highest
// warm-up figure. The warm-up is glibc's: each cycle's two threads are new, each gets a malloc
// arena, and an arena keeps part of what was freed in it (with MALLOC_ARENA_MAX=1 every cycle is
// flat from the first). The output files are those of the last run of each host that wrote them
// (the rounds rewrite them; the cycles do not).
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
//   ROUND i whisper=<same|DIFF> llama=<same|DIFF> whisper_ms=.. llama_ms=.. wall_ms=..
//   CYCLE i whisper=<same|DIFF> llama=<same|DIFF> peak_rss_kb=.. rss_after_free_kb=.. threads=..
//           wall_ms=..
//   CONCURRENT rounds=N rounds_same=N cycles=N cycles_same=N peak_rss_kb=<warm-up max>..<max later>
//              rss_after_free_kb=<warm-up max>..<max later> rss=<flat|GROWS|unchecked>
//
// usage: assistant --whisper-model M --wav WAV --llama-model M [--whisper-out F] [--llama-out F]
//                  [-t THREADS=2] [--max-tokens N=0] [-p N_PROMPT_MAX=256] [-n N_GEN=32]
//                  [-c N_CTX=1024] [--plain] [--no-eog-stop] [--check-loggers] [--rounds N=0] [--cycles N=0]
//                  [--warmup-cycles N=4] [--rss-slack-kb KB=8192] [-v]

#include "llama_run.h"
#include "whisper_run.h"

#include <malloc.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#ifndef GGML_RS_HOST_MODE
#define GGML_RS_HOST_MODE "unknown"
#endif

static void usage(const char * argv0) {
    fprintf(stderr,
            "usage: %s --whisper-model M --wav WAV --llama-model M [--whisper-out F] [--llama-out F] [-t THREADS] "
            "[--max-tokens N] [-p N_PROMPT_MAX] [-n N_GEN] [-c N_CTX] [--plain] [--no-eog-stop] [--check-loggers] [--rounds N] "
            "[--cycles N] [--warmup-cycles N] [--rss-slack-kb KB] [-v]\n",
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

static double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Runs whisper and SmolLM2 at the same time, each on its own thread, as an app transcribing while
// it generates; true when both succeeded.
static bool run_both(whisper_session * ws, llama_session * ls, const llama_prompt & prompt, whisper_report & w,
                     llama_report & l) {
    bool w_ok = false, l_ok = false;
    std::thread tw([&] { w_ok = whisper_session_run(ws, w); });
    std::thread tl([&] { l_ok = llama_session_run(ls, prompt, l); });
    tw.join();
    tl.join();
    return w_ok && l_ok;
}

// A run gave the sequential run's outputs: the driver's output bytes (and whisper's text).
static bool same_run(const whisper_report & a, const whisper_report & b) {
    return a.digest == b.digest && a.transcript == b.transcript;
}

static bool same_run(const llama_report & a, const llama_report & b) {
    return a.digest == b.digest;
}

static const char * same_as(bool same) {
    return same ? "same" : "DIFF";
}

// A kB field of /proc/self/status (VmHWM, VmRSS); -1 when unreadable.
static long status_kb(const char * field) {
    FILE * f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kb = -1;
    const size_t n = strlen(field);
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, field, n) == 0 && line[n] == ':') {
            kb = atol(line + n + 1);
            break;
        }
    }
    fclose(f);
    return kb;
}

// Resets VmHWM to the current RSS, so that each cycle's peak is its own (Linux >= 4.0).
static bool reset_peak_rss() {
    FILE * f = fopen("/proc/self/clear_refs", "w");
    if (!f) return false;
    const bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

int main(int argc, char ** argv) {
    whisper_job wjob;
    llama_job ljob;
    ljob.n_prompt = 256;
    ljob.text = true;
    llama_prompt prompt;
    prompt.fixed_paragraph = false;
    prompt.chat = true;
    prompt.stop_at_eog = true;
    bool check_loggers = false;
    int rounds = 0, cycles = 0;
    long rss_slack_kb = 8192;
    int warmup_cycles = 4;
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
        else if (a == "--no-eog-stop") prompt.stop_at_eog = false;
        else if (a == "--check-loggers") check_loggers = true;
        else if (a == "--rounds") rounds = atoi(next());
        else if (a == "--cycles") cycles = atoi(next());
        else if (a == "--rss-slack-kb") rss_slack_kb = atol(next());
        else if (a == "--warmup-cycles") warmup_cycles = atoi(next());
        else if (a == "-v") wjob.verbose = ljob.verbose = true;
        else usage(argv[0]);
    }
    if (wjob.model_path.empty() || wjob.wav_path.empty() || ljob.model_path.empty() || wjob.max_tokens < 0 ||
        ljob.n_prompt < 1 || ljob.n_gen < 1 || rounds < 0 || cycles < 0 || rss_slack_kb < 0 || warmup_cycles < 1)
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
    // Both hosts at once on the open sessions, then load/compute/free cycles of both.
    bool concurrent_ok = true;
    int rounds_same = 0;
    for (int r = 1; ok && r <= rounds; ++r) {
        whisper_report w;
        llama_report l;
        const auto t0 = std::chrono::steady_clock::now();
        if (!run_both(ws, ls, prompt, w, l)) {
            fprintf(stderr, "assistant: round %d failed\n", r);
            concurrent_ok = false;
            break;
        }
        const bool w_same = same_run(w, wrep), l_same = same_run(l, lrep);
        rounds_same += w_same && l_same;
        printf("ROUND %d whisper=%s llama=%s whisper_ms=%.1f llama_ms=%.1f wall_ms=%.1f\n", r, same_as(w_same),
               same_as(l_same), w.total_ms, l.prompt_ms + l.gen_ms, ms_since(t0));
        fflush(stdout);
    }
    llama_session_close(ls);
    whisper_session_close(ws);

    int cycles_same = 0;
    std::vector<long> peak_kb, after_kb;
    whisper_job cwjob = wjob;
    llama_job cljob = ljob;
    cwjob.out_path.clear();
    cwjob.transcript_path.clear();
    cljob.out_path.clear();
    cljob.prompt_logits_path.clear();
    for (int c = 1; ok && concurrent_ok && c <= cycles; ++c) {
        if (!reset_peak_rss()) {
            fprintf(stderr, "assistant: cannot reset the peak RSS (/proc/self/clear_refs)\n");
            concurrent_ok = false;
            break;
        }
        const auto t0 = std::chrono::steady_clock::now();
        whisper_session * cws = whisper_session_open(cwjob);
        llama_session * cls = cws ? llama_session_open(cljob) : nullptr;
        whisper_report w;
        llama_report l;
        const bool run_ok = cws && cls && run_both(cws, cls, prompt, w, l);
        llama_session_close(cls);
        whisper_session_close(cws);
        if (!run_ok) {
            fprintf(stderr, "assistant: cycle %d failed\n", c);
            concurrent_ok = false;
            break;
        }
        const bool w_same = same_run(w, wrep), l_same = same_run(l, lrep);
        cycles_same += w_same && l_same;
        peak_kb.push_back(status_kb("VmHWM"));
        // what stays resident once glibc has handed its free pages back (it keeps them cached in
        // each thread's arena otherwise, and the cycles' threads are new each time)
        malloc_trim(0);
        after_kb.push_back(status_kb("VmRSS"));
        printf("CYCLE %d whisper=%s llama=%s peak_rss_kb=%ld rss_after_free_kb=%ld threads=%ld wall_ms=%.1f\n", c,
               same_as(w_same), same_as(l_same), peak_kb.back(), after_kb.back(), status_kb("Threads"), ms_since(t0));
        fflush(stdout);
    }
    if (ok && (rounds || cycles)) {
        // flat: after the warm-up cycles (glibc gives each new thread an arena and keeps some of
        // what it frees there, up to its arena limit), no cycle above the warm-up's highest figures
        // plus the slack; a leak of any model or compute buffer grows every cycle by far more
        const char * rss = "unchecked";
        long peak_w = -1, peak_max = -1, after_w = -1, after_max = -1;
        if ((int) peak_kb.size() >= warmup_cycles + 2) {
            for (size_t i = 0; i < peak_kb.size(); ++i) {
                long & peak = (int) i < warmup_cycles ? peak_w : peak_max;
                long & after = (int) i < warmup_cycles ? after_w : after_max;
                peak = peak_kb[i] > peak ? peak_kb[i] : peak;
                after = after_kb[i] > after ? after_kb[i] : after;
            }
            const bool flat = peak_w > 0 && after_w > 0 && peak_max <= peak_w + rss_slack_kb &&
                              after_max <= after_w + rss_slack_kb;
            rss = flat ? "flat" : "GROWS";
        }
        printf("CONCURRENT rounds=%d rounds_same=%d cycles=%d cycles_same=%d peak_rss_kb=%ld..%ld "
               "rss_after_free_kb=%ld..%ld rss=%s\n",
               rounds, rounds_same, cycles, cycles_same, peak_w, peak_max, after_w, after_max, rss);
        fflush(stdout);
        if (rounds_same != rounds || cycles_same != cycles || rss[0] == 'G') concurrent_ok = false;
    }
    return ok && concurrent_ok && loggers[0] != 'F' ? 0 : 1;
}