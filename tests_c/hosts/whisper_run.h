// The whisper.rn part of the drivers, callable from more than one program: whisper_driver.cpp
// (whisper.rn alone) and assistant.cpp (whisper.rn and llama.rn in one process) run the same
// code, so the assistant's transcript is produced exactly as the stock whisper driver's.
//
// Only standard types cross this header: a program that also runs llama.rn includes it without
// whisper.h, whose wsp_ggml headers must not meet llama.rn's lm_ggml ones in one translation unit.
#pragma once

#include <cstdint>
#include <string>

struct whisper_job {
    std::string model_path;
    std::string wav_path;
    std::string out_path;        // driver output file (WSDRV1), empty = none
    std::string transcript_path; // the transcript text alone, empty = none
    int n_threads = 2;
    int max_tokens = 0;          // whisper_full_params.max_tokens: tokens per segment, 0 = no limit
    bool verbose = false;
};

struct whisper_report {
    std::string transcript;
    int n_segments = 0;
    int n_tokens = 0;
    double encode_ms = 0, decode_ms = 0, batchd_ms = 0, total_ms = 0;
    double compute_buffer_mb = 0;
    int lines_logged = 0;        // lines the wsp logger (whisper_log_set) received
    // scheduler splits printed with WSP_GGML_SCHED_DEBUG=1, and how many of them ran on SIMD
    int sched_splits = 0, simd_splits = 0;
    // FNV-1a of the bytes of the driver's output file (written or not): runs compare by it
    uint64_t digest = 0;
};

struct whisper_session;

// Loads the model and the WAV; NULL (after a message on stderr) on failure.
whisper_session * whisper_session_open(const whisper_job & job);
// Transcribes the WAV and writes the job's output files; false on failure.
bool whisper_session_run(whisper_session * s, whisper_report & rep);
// Lines the wsp logger has received so far (the model load and everything after).
int whisper_session_lines_logged(const whisper_session * s);
// The wsp_ggml_backend registry's devices, by name, comma-separated: with both hosts in one
// process each prefix must still see only its own host's devices.
std::string whisper_registry_devices();
void whisper_session_close(whisper_session * s);

// The machine-readable line the scripts read (tag: RESULT in the drivers), with the process's
// peak RSS (getrusage ru_maxrss) so far:
//   <tag> mode=.. n_segments=.. n_tokens=.. encode_ms=.. decode_ms=.. batchd_ms=.. total_ms=..
//          compute_buffer_mb=.. peak_rss_kb=..
void whisper_report_print(const char * tag, const char * mode, const whisper_report & rep);

// Calls one wsp_ggml_backend function with bad input (this library logs it and returns "no"; stock
// would crash, so never with a stock build) and returns how many lines that added to this
// session's logger: the assistant checks each prefix's log line reaches its own host's logger.
int whisper_session_probe_logger(whisper_session * s);
