/* What stock's ggml-backend-reg.cpp includes under LM_GGML_USE_VULKAN, for tests_c/accel_faults.cpp:
   the registration function, defined by the test (a backend that fails at start-up). */
#pragma once
#include "ggml-backend.h"
#ifdef __cplusplus
extern "C" {
#endif
lm_ggml_backend_reg_t lm_ggml_backend_vk_reg(void);
#ifdef __cplusplus
}
#endif
