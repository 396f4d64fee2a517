/*
 * A program without ggml-cpu linked (ggml's core and this library) that registers a backend with a
 * CPU device later, as a GGML_BACKEND_DL build does when ggml_backend_load_all() loads
 * libggml-cpu.so: the SIMD backend, which stood in as the CPU device, leaves the lists, and the
 * program has the devices stock would list. The registered "CPU" here is a stand-in of its own (a
 * reg with one CPU-type device), so the test needs no module on disk.
 *   stand_in_<p>              registers before any lookup: one device (ours), and the "links no
 *                             ggml-cpu" warning is never said
 *   stand_in_<p> lookup-first looks first: SIMD is the CPU device and the warning is said once;
 *                             after the registration SIMD is gone from the lists, its device
 *                             still answers to whoever holds it
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "ggml-backend.h"
#include "ggml-backend-impl.h"
#include "ggml-simd.h"

#include "test_prefix.h"

static int n_checks, n_failed;
#define CHECK(cond) do { n_checks++; if (!(cond)) { n_failed++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)

static int n_no_cpu_warnings;
static void on_log(enum G(log_level) level, const char * text, void * user) {
    (void) user;
    if (level == C(LOG_LEVEL_WARN) && strstr(text, "links no")) n_no_cpu_warnings++;
    if (level >= C(LOG_LEVEL_WARN)) fprintf(stderr, "[log %d] %s", (int) level, text);
}

static struct G(backend_device) mod_dev;
static struct G(backend_reg) mod_reg;
static const char * dev_name(GB(dev_t) d) { (void) d; return "CPU"; }
static const char * dev_desc(GB(dev_t) d) { (void) d; return "a loaded CPU backend"; }
static void dev_memory(GB(dev_t) d, size_t * free, size_t * total) { (void) d; *free = *total = 0; }
static enum GB(dev_type) dev_type(GB(dev_t) d) { (void) d; return C(BACKEND_DEVICE_TYPE_CPU); }
static const char * reg_name(GB(reg_t) r) { (void) r; return "CPU"; }
static size_t reg_count(GB(reg_t) r) { (void) r; return 1; }
static GB(dev_t) reg_device(GB(reg_t) r, size_t i) { (void) r; return i == 0 ? &mod_dev : NULL; }

static GB(reg_t) module_reg(void) {
    mod_dev.iface.get_name = dev_name;
    mod_dev.iface.get_description = dev_desc;
    mod_dev.iface.get_memory = dev_memory;
    mod_dev.iface.get_type = dev_type;
    mod_dev.reg = &mod_reg;
#if defined(TEST_API_REG_VERSION)
    mod_reg.api_version = 1;
#endif
    mod_reg.iface.get_name = reg_name;
    mod_reg.iface.get_device_count = reg_count;
    mod_reg.iface.get_device = reg_device;
    return &mod_reg;
}

int main(int argc, char ** argv) {
    int lookup_first = argc > 1 && strcmp(argv[1], "lookup-first") == 0;
    G(log_set)(on_log, NULL);
    GB(dev_t) simd = NULL;
    if (lookup_first) {
        CHECK(GB(dev_count)() == 1);
        simd = GB(dev_get)(0);
        CHECK(simd != NULL && strcmp(GB(dev_name)(simd), "SIMD") == 0);
        CHECK(GB(dev_type)(simd) == C(BACKEND_DEVICE_TYPE_CPU));
        CHECK(n_no_cpu_warnings == 1);
    }
    GB(register)(module_reg());
    CHECK(GB(reg_count)() == 1);
    CHECK(GB(dev_count)() == 1);
    CHECK(GB(dev_get)(0) == &mod_dev);
    CHECK(GB(dev_by_type)(C(BACKEND_DEVICE_TYPE_CPU)) == &mod_dev);
    CHECK(GB(reg_by_name)("SIMD") == NULL);
    CHECK(GB(dev_by_name)("SIMD") == NULL);
    CHECK(n_no_cpu_warnings == (lookup_first ? 1 : 0));
    if (simd) {
        /* whoever held SIMD's device keeps a working one */
        CHECK(strcmp(GB(dev_name)(simd), "SIMD") == 0);
        GB(t) be = GB(dev_init)(simd, NULL);
        CHECK(be != NULL && GB(is_simd)(be));
        if (be) GB(free)(be);
    }
    printf("stand_in (%s): %d checks, %d failed\n", lookup_first ? "lookup first" : "register first", n_checks, n_failed);
    return n_failed != 0;
}
