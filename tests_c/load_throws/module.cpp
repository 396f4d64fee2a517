// A dynamically loadable "backend" whose registration throws, as a GPU driver failing at start-up
// does (tests_c/load_throws.c loads it). Exports whisper.rn's DL protocol names: the score says it
// is usable here, the init throws.
#include <stdexcept>

extern "C" __attribute__((visibility("default"))) int wsp_ggml_backend_score(void) { return 1; }
extern "C" __attribute__((visibility("default"))) void * wsp_ggml_backend_init(void) {
    throw std::runtime_error("vkCreateInstance failed: ERROR_INCOMPATIBLE_DRIVER");
}
