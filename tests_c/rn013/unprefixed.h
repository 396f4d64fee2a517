/* tests_c/hosts/llama_run.cpp names a few ggml symbols with llama.rn 0.12's lm_ prefix; llama.rn
 * 0.13 (llama.cpp b11118) vendors ggml unprefixed. Force-included (-include) into the rn013
 * drivers so the shared driver sources stay as they are. */
#define lm_ggml_log_level ggml_log_level
#define LM_GGML_LOG_LEVEL_ERROR GGML_LOG_LEVEL_ERROR
#define lm_ggml_backend_buffer_get_size ggml_backend_buffer_get_size
#define lm_ggml_backend_dev_count ggml_backend_dev_count
#define lm_ggml_backend_dev_name ggml_backend_dev_name
#define lm_ggml_backend_dev_get ggml_backend_dev_get
