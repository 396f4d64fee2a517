// The host drivers' log plumbing, shared by llama_run.cpp and whisper_run.cpp (each registers its
// own prefix's ggml log callback and feeds the text here): the logger hands over fragments, the
// drivers read whole lines (the scheduler's split lines for the SIMD checks, the hosts' compute
// buffer lines for the benchmarks). Standard types only, so both prefixes' TUs can include it.
#pragma once

#include <cstdio>
#include <string>

struct log_lines {
    bool verbose = false;
    int lines = 0;
    int splits = 0, simd_splits = 0;
    std::string pending;

    // Echoes `text` to stderr when verbose or an error, then calls on_line(line) for every line
    // it completes, after counting it (and "## SPLIT" lines of <P>GGML_SCHED_DEBUG=1).
    template <class OnLine> void feed(bool is_error, const char * text, OnLine && on_line) {
        if (verbose || is_error) {
            fputs(text, stderr);
        }
        pending += text;
        size_t nl;
        while ((nl = pending.find('\n')) != std::string::npos) {
            std::string line = pending.substr(0, nl);
            pending.erase(0, nl + 1);
            lines++;
            // "## SPLIT #3: SIMD # 12 inputs: ..."
            if (line.find("## SPLIT") != std::string::npos) {
                splits++;
                if (line.find(": SIMD #") != std::string::npos) simd_splits++;
            }
            on_line(line);
        }
    }
};
