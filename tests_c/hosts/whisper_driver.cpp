// Real-model driver for whisper.rn's whisper.cpp (whisper.h API; ggml underneath is
// wsp_-prefixed): loads a whisper.cpp ggml-format model, reads a 16 kHz mono 16-bit PCM WAV and
// transcribes it (whisper_run.cpp: greedy, deterministic; the output file format is described
// there).
//
// stdout: the transcript with --text, and one machine-readable line
//   RESULT mode=<mode> n_segments=.. n_tokens=.. encode_ms=.. decode_ms=..
//          batchd_ms=.. total_ms=.. compute_buffer_mb=.. peak_rss_kb=..
//
// usage: whisper_driver -m MODEL -f WAV -o OUT [-t THREADS=2] [--max-tokens N=0]
//                       [--transcript FILE] [--text] [-v]
//   --max-tokens   at most N tokens per segment (0: whisper's own limit)
//   --transcript   also write the transcript text alone to FILE (the stock half of the
//                  assistant's reference: it becomes llama_driver's --prompt-file)

#include "whisper_run.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#ifndef GGML_RS_HOST_MODE
#define GGML_RS_HOST_MODE "unknown"
#endif

static void usage(const char * argv0) {
    fprintf(stderr, "usage: %s -m MODEL -f WAV -o OUT [-t THREADS] [--max-tokens N] [--transcript FILE] [--text] [-v]\n",
            argv0);
    exit(2);
}

int main(int argc, char ** argv) {
    whisper_job job;
    bool print_text = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> const char * {
            if (i + 1 >= argc) usage(argv[0]);
            return argv[++i];
        };
        if (a == "-m") job.model_path = next();
        else if (a == "-f") job.wav_path = next();
        else if (a == "-o") job.out_path = next();
        else if (a == "-t") job.n_threads = atoi(next());
        else if (a == "--max-tokens") job.max_tokens = atoi(next());
        else if (a == "--transcript") job.transcript_path = next();
        else if (a == "--text") print_text = true;
        else if (a == "-v") job.verbose = true;
        else usage(argv[0]);
    }
    if (job.model_path.empty() || job.wav_path.empty() || job.max_tokens < 0) usage(argv[0]);

    whisper_session * s = whisper_session_open(job);
    if (!s) return 1;
    whisper_report rep;
    const bool ok = whisper_session_run(s, rep);
    whisper_session_close(s);
    if (!ok) return 1;
    if (print_text) printf("%s\n", rep.transcript.c_str());
    whisper_report_print("RESULT", GGML_RS_HOST_MODE, rep);
    return 0;
}
