// Smoke test for the whisper.rn (wsp_) host core linked with ggml-backend-rs.
#include <stdio.h>
#include <stdint.h>

#include "ggml.h"
#include "ggml-backend.h"

int main(void) {
    struct wsp_ggml_init_params params = {
        /*.mem_size   =*/ 1024 * 1024,
        /*.mem_buffer =*/ NULL,
        /*.no_alloc   =*/ false,
    };
    struct wsp_ggml_context * ctx = wsp_ggml_init(params);
    if (!ctx) {
        fprintf(stderr, "wsp_ggml_init failed\n");
        return 1;
    }
    struct wsp_ggml_tensor * t = wsp_ggml_new_tensor_1d(ctx, WSP_GGML_TYPE_F32, 16);
    if (!t || wsp_ggml_nbytes(t) != 16 * sizeof(float)) {
        fprintf(stderr, "unexpected tensor\n");
        wsp_ggml_free(ctx);
        return 1;
    }
    wsp_ggml_free(ctx);
    printf("OK\n");
    return 0;
}
