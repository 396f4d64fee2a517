/* The ThreadSanitizer stage's positive control (scripts/tsan.sh): a data race whose accesses happen
 * inside this library, so the stage proves that a race in the library's frames is reported and
 * recognised before it trusts a clean report of the concurrent hosts. Two threads clear the same
 * CPU buffer with different values and no synchronization (lm_ggml_backend_buffer_clear writes the
 * bytes from the library's CPU buffer code). Linked like assistant_tsan: the library built with
 * -Zsanitizer=thread, the host core uninstrumented. Exit status 0 when both threads ran; the
 * verdict is the report's (tests_c/hosts/run-tsan.sh). */
#include "ggml-backend.h"

#include <pthread.h>
#include <stdio.h>

static lm_ggml_backend_buffer_t g_buf;

static void * clear_with(void * value) {
    lm_ggml_backend_buffer_clear(g_buf, (unsigned char) (size_t) value);
    return NULL;
}

int main(void) {
    g_buf = lm_ggml_backend_buft_alloc_buffer(lm_ggml_backend_cpu_buffer_type(), 1 << 16);
    if (!g_buf) {
        fprintf(stderr, "tsan_control: no CPU buffer\n");
        return 1;
    }
    pthread_t a, b;
    if (pthread_create(&a, NULL, clear_with, (void *) 1) != 0 || pthread_create(&b, NULL, clear_with, (void *) 2) != 0) {
        fprintf(stderr, "tsan_control: pthread_create failed\n");
        return 1;
    }
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    lm_ggml_backend_buffer_free(g_buf);
    puts("tsan_control: two unsynchronized clears of one buffer done");
    return 0;
}
