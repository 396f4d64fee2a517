/* Stock's registry as a host built with ggml-vulkan has it (tests_c/accel_faults.cpp, stock
   column): the package's own ggml-backend-reg.cpp, compiled with LM_GGML_USE_VULKAN so that it
   registers lm_ggml_backend_vk_reg() (the test's faulty backend) ahead of the CPU. */
#define LM_GGML_USE_VULKAN 1
#include "ggml-backend-reg.cpp"
