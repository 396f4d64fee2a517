/* Prints the float model that the host files including our ggml-backend.h report at start-up
   (cbindgen/ggml-backend.h.in): bit 0 a fast-math macro, bit 1 a compiler that reassociates.
   Built and run by float_model.sh with several compilers and flag sets. */
#include <stdio.h>
#include "ggml-backend.h"

int main(void) {
    printf("%d\n", lm_ggml_rs_host_float_model);
    return 0;
}
