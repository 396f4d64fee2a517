// Smoke test for the llama.rn (lm_) host core linked with ggml-backend-rs.
#include <stdio.h>
#include <stdint.h>

#include "ggml.h"
#include "ggml-backend.h"

int main(void) {
    struct lm_ggml_init_params params = {
        /*.mem_size   =*/ 1024 * 1024,
        /*.mem_buffer =*/ NULL,
        /*.no_alloc   =*/ false,
    };
    struct lm_ggml_context * ctx = lm_ggml_init(params);
    if (!ctx) {
        fprintf(stderr, "lm_ggml_init failed\n");
        return 1;
    }
    struct lm_ggml_tensor * t = lm_ggml_new_tensor_1d(ctx, LM_GGML_TYPE_F32, 16);
    if (!t || lm_ggml_nbytes(t) != 16 * sizeof(float)) {
        fprintf(stderr, "unexpected tensor\n");
        lm_ggml_free(ctx);
        return 1;
    }
    lm_ggml_free(ctx);
    printf("OK\n");
    return 0;
}
