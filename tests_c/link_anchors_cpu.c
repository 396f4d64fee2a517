/*
 * Stand-in for ggml-cpu's registration, alone in a static archive (tests_c/link_anchors.c): it
 * records that the registry called it and registers nothing.
 */
#include <stdlib.h>

#if defined(TEST_PREFIX_LM)
#    define CPU_REG lm_ggml_backend_cpu_reg
#else
#    define CPU_REG wsp_ggml_backend_cpu_reg
#endif

void * CPU_REG(void);
void * CPU_REG(void) {
    setenv("GGML_RS_TEST_ANCHORED_CPU_REG", "called", 1);
    return NULL;
}
