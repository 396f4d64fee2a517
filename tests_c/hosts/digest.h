// FNV-1a (64 bit), the drivers' fingerprint of what they compute: llama_run hashes every logits
// vector with it (the LMDRV1 file holds those hashes), and both drivers fold everything their output
// file holds into one digest (llama_report::digest, whisper_report::digest), so a program that runs
// a host several times (assistant.cpp's concurrent rounds and load/free cycles) can compare runs
// without writing files. Standard types only, so both prefixes' TUs can include it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>

struct fnv1a64 {
    uint64_t h = 1469598103934665603ULL;
    void add(const void * data, size_t n) {
        const unsigned char * p = static_cast<const unsigned char *>(data);
        for (size_t i = 0; i < n; ++i) {
            h ^= p[i];
            h *= 1099511628211ULL;
        }
    }
};

inline uint64_t fnv1a(const void * data, size_t n) {
    fnv1a64 f;
    f.add(data, n);
    return f.h;
}

// Bytes bound for a driver's output file: hashed always, written when the file is open.
struct digest_writer {
    FILE * f = nullptr;
    fnv1a64 digest;
    void put(const void * data, size_t size, size_t count) {
        digest.add(data, size * count);
        if (f) fwrite(data, size, count, f);
    }
};
