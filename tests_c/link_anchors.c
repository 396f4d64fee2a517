/*
 * A host linked from plain static archives keeps its backends (the link anchors of our
 * ggml-backend.h). Linked as a user links archives, in dependency order and with no flag:
 *     link_anchors.o  lib<p>_core_nocpu.a  liblink_anchors_cpu_<p>.a  libggml_backend_rs.a
 * where liblink_anchors_cpu_<p>.a holds a stand-in for ggml-cpu's registration that nothing but
 * the anchor references. Built twice:
 *   anchored        (-D<P>GGML_USE_CPU, as the packages compile): the member is linked, the
 *                   registry calls it, no warning
 *   LINK_ANCHORS_OFF (-D<P>GGML_RS_NO_LINK_ANCHORS): the member is left in its archive (as a
 *                   weak reference leaves it) and the registry says so in one WARN line naming the fix
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"

#include "test_prefix.h"

static int n_checks, n_failed;
#define CHECK(cond) do { n_checks++; if (!(cond)) { n_failed++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)

static int n_warn_cpu;
static void on_log(enum G(log_level) level, const char * text, void * ud) {
    (void) ud;
    fprintf(stderr, "[log %d] %s", (int) level, text);
    if (level == C(LOG_LEVEL_WARN) && strstr(text, "links no " PREFIX "_ggml_backend_cpu_reg") &&
        strstr(text, "GGML_USE_CPU") && strstr(text, "--whole-archive")) {
        n_warn_cpu++;
    }
}

int main(void) {
    G(log_set)(on_log, NULL);
    /* the stand-in registration says whether the registry called it, in the environment (the
     * program must not reference it: that would pull it into the link without the anchor) */
    size_t n = GB(dev_count)();
    const char * called = getenv("GGML_RS_TEST_ANCHORED_CPU_REG");
#if defined(LINK_ANCHORS_OFF)
    CHECK(called == NULL);
    CHECK(n_warn_cpu == 1);
#else
    CHECK(called != NULL && strcmp(called, "called") == 0);
    CHECK(n_warn_cpu == 0);
#endif
    (void) n;
    printf("link_anchors_%s%s: %d checks, %d failed\n", PREFIX,
#if defined(LINK_ANCHORS_OFF)
           "_off",
#else
           "",
#endif
           n_checks, n_failed);
    printf("%d passed, %d failed\n", n_checks - n_failed, n_failed);
    return n_failed ? 1 : 0;
}
