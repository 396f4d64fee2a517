// Quantizes a whisper.cpp ggml-format model (f16 / f32) to q5_1 or q8_0 with the host's own ggml
// (wsp_-prefixed: whisper.rn's ggml.c / ggml-quants.c, linked from the stock core), following
// whisper.cpp's examples/quantize + examples/common-ggml.cpp (ggml_common_quantize_0), which the
// npm packages do not ship:
//   - header, mel filters and vocabulary copied; the ftype field becomes
//     QNT_VERSION * QNT_VERSION_FACTOR + the new ftype;
//   - every 2-D tensor quantized row by row with <p>ggml_quantize_chunk (no importance matrix),
//     except the conv biases and both positional embeddings; other tensors copied unchanged.
//
// usage: whisper_quantize IN.bin OUT.bin q5_1|q8_0
// Writes OUT.bin.tmp and renames it at the end; prints one summary line.

#include "ggml.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace {

bool copy_bytes(std::ifstream & in, std::ofstream & out, size_t n) {
    std::vector<char> buf(n);
    if (n && !in.read(buf.data(), (std::streamsize) n)) return false;
    out.write(buf.data(), (std::streamsize) n);
    return true;
}

template <typename T> bool copy_value(std::ifstream & in, std::ofstream & out, T & v) {
    if (!in.read(reinterpret_cast<char *>(&v), sizeof(v))) return false;
    out.write(reinterpret_cast<const char *>(&v), sizeof(v));
    return true;
}

int fail(const char * what) {
    fprintf(stderr, "whisper_quantize: %s\n", what);
    return 1;
}

}  // namespace

int main(int argc, char ** argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s IN.bin OUT.bin q5_1|q8_0\n", argv[0]);
        return 2;
    }
    const std::string type_name = argv[3];
    wsp_ggml_type qtype;
    wsp_ggml_ftype ftype;
    if (type_name == "q5_1") {
        qtype = WSP_GGML_TYPE_Q5_1;
        ftype = WSP_GGML_FTYPE_MOSTLY_Q5_1;
    } else if (type_name == "q8_0") {
        qtype = WSP_GGML_TYPE_Q8_0;
        ftype = WSP_GGML_FTYPE_MOSTLY_Q8_0;
    } else {
        return fail("type must be q5_1 or q8_0");
    }

    // ggml_init fills the f16 conversion tables
    {
        wsp_ggml_init_params params = {0, nullptr, false};
        wsp_ggml_free(wsp_ggml_init(params));
    }

    std::ifstream in(argv[1], std::ios::binary);
    if (!in) return fail("cannot open the input model");
    const std::string tmp = std::string(argv[2]) + ".tmp";
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return fail("cannot create the output model");

    uint32_t magic = 0;
    if (!copy_value(in, out, magic) || magic != WSP_GGML_FILE_MAGIC) return fail("not a ggml-format model");

    // hparams: n_vocab, n_audio_{ctx,state,head,layer}, n_text_{ctx,state,head,layer}, n_mels, ftype
    int32_t hp[11];
    if (!in.read(reinterpret_cast<char *>(hp), sizeof(hp))) return fail("truncated hparams");
    const int32_t ftype_src = hp[10] % WSP_GGML_QNT_VERSION_FACTOR;
    if (ftype_src != WSP_GGML_FTYPE_ALL_F32 && ftype_src != WSP_GGML_FTYPE_MOSTLY_F16)
        return fail("the input model must be f32 or f16");
    hp[10] = WSP_GGML_QNT_VERSION * WSP_GGML_QNT_VERSION_FACTOR + (int32_t) ftype;
    out.write(reinterpret_cast<const char *>(hp), sizeof(hp));

    // mel filters
    int32_t n_mel = 0, n_fft = 0;
    if (!copy_value(in, out, n_mel) || !copy_value(in, out, n_fft) ||
        !copy_bytes(in, out, (size_t) n_mel * n_fft * sizeof(float)))
        return fail("truncated mel filters");

    // vocabulary
    int32_t n_vocab = 0;
    if (!copy_value(in, out, n_vocab)) return fail("truncated vocabulary");
    for (int32_t i = 0; i < n_vocab; ++i) {
        uint32_t len = 0;
        if (!copy_value(in, out, len) || !copy_bytes(in, out, len)) return fail("truncated vocabulary");
    }

    // tensors (whisper.cpp's quantize: these stay as they are)
    const std::regex keep(
        "encoder\\.conv1\\.bias|encoder\\.conv2\\.bias|encoder\\.positional_embedding|decoder\\.positional_embedding");
    size_t n_tensors = 0, n_quantized = 0, bytes_in = 0, bytes_out = 0;
    std::vector<uint16_t> f16;
    std::vector<float> f32;
    std::vector<uint8_t> q;
    for (;;) {
        int32_t n_dims = 0, name_len = 0, ttype = 0;
        in.read(reinterpret_cast<char *>(&n_dims), sizeof(n_dims));
        if (in.eof()) break;
        in.read(reinterpret_cast<char *>(&name_len), sizeof(name_len));
        in.read(reinterpret_cast<char *>(&ttype), sizeof(ttype));
        int32_t ne[4] = {1, 1, 1, 1};
        if (!in || n_dims < 1 || n_dims > 4 || name_len < 1 || name_len > 4096) return fail("bad tensor header");
        in.read(reinterpret_cast<char *>(ne), sizeof(int32_t) * n_dims);
        std::string name(name_len, '\0');
        in.read(&name[0], name_len);
        if (!in) return fail("truncated tensor header");
        int64_t n = 1;
        for (int i = 0; i < n_dims; ++i) n *= ne[i];

        const bool quantize = n_dims == 2 && !std::regex_match(name, keep);
        if (quantize && ttype != WSP_GGML_TYPE_F32 && ttype != WSP_GGML_TYPE_F16)
            return fail("a 2-D tensor is neither f32 nor f16");
        const int32_t ttype_out = quantize ? (int32_t) qtype : ttype;
        out.write(reinterpret_cast<const char *>(&n_dims), sizeof(n_dims));
        out.write(reinterpret_cast<const char *>(&name_len), sizeof(name_len));
        out.write(reinterpret_cast<const char *>(&ttype_out), sizeof(ttype_out));
        out.write(reinterpret_cast<const char *>(ne), sizeof(int32_t) * n_dims);
        out.write(name.data(), name_len);

        const size_t elem = ttype == WSP_GGML_TYPE_F32 ? sizeof(float) : sizeof(uint16_t);
        bytes_in += (size_t) n * elem;
        ++n_tensors;
        if (!quantize) {
            if (!copy_bytes(in, out, (size_t) n * elem)) return fail("truncated tensor data");
            bytes_out += (size_t) n * elem;
            continue;
        }
        f32.resize(n);
        if (ttype == WSP_GGML_TYPE_F16) {
            f16.resize(n);
            if (!in.read(reinterpret_cast<char *>(f16.data()), n * sizeof(uint16_t))) return fail("truncated tensor data");
            for (int64_t i = 0; i < n; ++i) f32[i] = wsp_ggml_fp16_to_fp32(f16[i]);
        } else if (!in.read(reinterpret_cast<char *>(f32.data()), n * sizeof(float))) {
            return fail("truncated tensor data");
        }
        q.resize(n * sizeof(float));
        const size_t size = wsp_ggml_wsp_quantize_chunk(qtype, f32.data(), q.data(), 0, n / ne[0], ne[0], nullptr);
        out.write(reinterpret_cast<const char *>(q.data()), (std::streamsize) size);
        bytes_out += size;
        ++n_quantized;
    }
    out.close();
    if (!out) return fail("write error");
    if (std::rename(tmp.c_str(), argv[2]) != 0) return fail("cannot rename the output model");
    printf("whisper_quantize: %s: %zu tensors, %zu quantized to %s, %.1f MB -> %.1f MB\n", argv[2], n_tensors,
           n_quantized, wsp_ggml_type_name(qtype), bytes_in / 1e6, bytes_out / 1e6);
    return 0;
}
