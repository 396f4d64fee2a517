// The llama drivers' output (LMDRV1, described in llama_run.cpp), written by the driver half on
// both llama.h APIs (llama_run.cpp with and without LLAMA_RUN_API_2026) and hashed into the run's
// digest. Standard types only.
#pragma once

#include "digest.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

// Writes the file when `path` is not empty; always sets `digest`. False (after a message) on an
// I/O error.
inline bool llama_output_write(const std::string & path, const std::vector<int32_t> & prompt, int32_t n_gen,
                               int32_t n_vocab, const std::vector<int> & generated, const std::vector<uint64_t> & hashes,
                               const float * last_logits, uint64_t & digest) {
    digest_writer out;
    if (!path.empty()) {
        out.f = fopen(path.c_str(), "wb");
        if (!out.f) {
            fprintf(stderr, "llama: cannot write %s\n", path.c_str());
            return false;
        }
    }
    const char magic[8] = {'L', 'M', 'D', 'R', 'V', '1', 0, 0};
    const int32_t hdr[3] = {(int32_t) prompt.size(), n_gen, n_vocab};
    out.put(magic, 1, 8);
    out.put(hdr, sizeof(int32_t), 3);
    out.put(prompt.data(), sizeof(int32_t), prompt.size());
    out.put(generated.data(), sizeof(int), generated.size());
    out.put(hashes.data(), sizeof(uint64_t), hashes.size());
    out.put(last_logits, sizeof(float), n_vocab);
    digest = out.digest.h;
    if (out.f && fclose(out.f) != 0) {
        fprintf(stderr, "llama: write error on %s\n", path.c_str());
        return false;
    }
    return true;
}
