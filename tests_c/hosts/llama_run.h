// The llama.rn part of the drivers, callable from more than one program: llama_driver.cpp
// (llama.rn alone) and assistant.cpp (whisper.rn and llama.rn in one process) run the same code,
// so the assistant's answer is produced exactly as the stock llama driver's.
//
// Only standard types cross this header: a program that also runs whisper.rn includes it without
// llama.h, whose lm_ggml headers must not meet whisper.rn's wsp_ggml ones in one translation unit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct llama_job {
    std::string model_path;
    std::string out_path;           // driver output file (LMDRV1), empty = none
    std::string prompt_logits_path; // raw logits after the prompt, empty = none
    int n_prompt = 100;             // fixed paragraph: exactly this many tokens; given text: at most
    int n_gen = 32;
    int n_threads = 2;
    int n_ctx = 1024;
    int n_ubatch = 512;
    bool text = false;              // detokenize the generated tokens into llama_report::text
    bool verbose = false;
    int flash_attn = -1;            // 2026 llama.cpp only: -1 auto (its default), 0 off, 1 on
    bool repack = true;             // 2026 llama.cpp only: false = llama_model_params.use_extra_bufts
                                    // off, no weight repacking (ggml-cpu's CPU_REPACK buffers)
};

// What to feed as the prompt.
struct llama_prompt {
    bool fixed_paragraph = true;    // the driver's English paragraph cut to n_prompt tokens
    std::string text;               // otherwise this text, its tokens capped at n_prompt
    bool chat = false;              // wrap `text` in the model's chat template (system + user turn)
    // End the answer at the first end-of-generation token (llama's vocab EOG check: SmolLM2's
    // <|im_end|> end of turn, EOS, ...), as apps do; job.n_gen is then a cap. The EOG token itself
    // is neither kept nor decoded. Off: exactly job.n_gen tokens (the benchmarks' fixed length).
    bool stop_at_eog = false;
};

struct llama_report {
    std::string text;
    std::vector<int> prompt_tokens;
    std::vector<int> generated;
    int n_prompt = 0, n_gen = 0;    // n_gen: tokens generated (< job.n_gen when an EOG ended it)
    int eog_token = -1;             // the end-of-generation token that ended it, -1: the cap did
    double prompt_ms = 0, gen_ms = 0;
    double compute_buffer_mib = 0;
    // scheduler splits printed with LM_GGML_SCHED_DEBUG=1, and how many of them ran on SIMD
    int sched_splits = 0, simd_splits = 0;
    // FNV-1a of the bytes of the driver's output file (written or not): runs compare by it
    uint64_t digest = 0;
};

struct llama_session;

// Loads the model and makes a context; NULL (after a message on stderr) on failure.
llama_session * llama_session_open(const llama_job & job);
// Clears the context's cache, evaluates the prompt, generates job.n_gen tokens greedily (argmax,
// lowest id on ties; with prompt.stop_at_eog it stops earlier at an end-of-generation token) and
// writes the job's output files; false on failure.
bool llama_session_run(llama_session * s, const llama_prompt & prompt, llama_report & rep);
// Lines the lm logger (llama_log_set) has received so far.
int llama_session_lines_logged(const llama_session * s);
// Calls one lm_ggml_backend function with bad input (logged by this library; stock would crash,
// so never with a stock build) and returns how many lines that added to this session's logger.
int llama_session_probe_logger(llama_session * s);
// The lm_ggml_backend registry's devices, by name, comma-separated: with both hosts in one
// process each prefix must still see only its own host's devices.
std::string llama_registry_devices();
void llama_session_close(llama_session * s);

// The system turn of the chat prompt (llama_prompt::chat).
extern const char * const k_llama_system_prompt;

// The machine-readable line the scripts read (tag: RESULT in the drivers), with the process's
// peak RSS (getrusage ru_maxrss) so far:
//   <tag> mode=.. n_prompt=.. n_gen=.. prompt_ms=.. gen_ms=.. prompt_tps=.. gen_tps=..
//          compute_buffer_mib=.. peak_rss_kb=.. stop=<eog|limit>
// (n_gen: the tokens generated; gen_tps 0 when none were)
void llama_report_print(const char * tag, const char * mode, const llama_report & rep);
