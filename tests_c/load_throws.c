/*
 * A dynamically loaded backend whose wsp_ggml_backend_init throws a C++ exception (a GPU driver
 * failing at start-up; stock's loader lets it terminate the app): backend_load and load_all leave
 * it out with one warning, and the program goes on with the backends it had.
 * LOAD_THROWS_DIR holds the module as libggml-vulkan.so (load_all's name for the Vulkan backend).
 * It is also the folder of a build configured with -DGGML_BACKEND_DIR (the string
 * cmake/ggml-rs-upstream.cmake compiles into libggml, defined here as it would be there):
 * load_all without a folder searches it first, as stock does.
 */
#include <stdio.h>
#include <string.h>

#include "ggml.h"
#include "ggml-backend.h"

#include "test_prefix.h"

__attribute__((visibility("default"))) const char ggml_rs_backend_dir[] = LOAD_THROWS_DIR;

static int n_checks, n_failed;
#define CHECK(cond) do { n_checks++; if (!(cond)) { n_failed++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)

static int n_threw;
static void on_log(enum G(log_level) level, const char * text, void * user) {
    (void) user;
    if (level == C(LOG_LEVEL_WARN) && strstr(text, "ggml_backend_init threw a C++ exception") && strstr(text, "libggml-vulkan.so")) n_threw++;
    if (level >= C(LOG_LEVEL_WARN)) fprintf(stderr, "[log %d] %s", (int) level, text);
}

int main(void) {
    G(log_set)(on_log, NULL);
    size_t n_regs = GB(reg_count)(), n_devs = GB(dev_count)();
    CHECK(GB(load)(LOAD_THROWS_DIR "/libggml-vulkan.so") == NULL);
    CHECK(n_threw == 1);
    GB(load_all_from_path)(LOAD_THROWS_DIR);
    CHECK(n_threw == 2);
    GB(load_all)();   /* no folder: GGML_BACKEND_DIR's is searched first */
    CHECK(n_threw == 3);
    CHECK(GB(reg_count)() == n_regs && GB(dev_count)() == n_devs);
    /* and the app computes on what it had */
    GB(t) be = GB(init_best)();
    CHECK(be != NULL);
    if (be) GB(free)(be);
    printf("load_throws: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed != 0;
}
