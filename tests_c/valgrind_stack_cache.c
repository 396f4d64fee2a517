/* Checks scripts/valgrind.supp's helgrind suppression for glibc's thread-stack cache, both ways.
 *
 * Thread M creates thread L and joins it, so L's stack goes to glibc's cache; then the main thread,
 * which has no helgrind-visible ordering with M (only an atomic flag), creates a thread that reuses
 * that stack: glibc zeroes its DTV (get_cached_stack), and helgrind reports a race it cannot see
 * the lock for. scripts/valgrind.sh runs this under helgrind with the suppressions:
 *   no argument: the suppression must hide that report (0 errors);
 *   "race":      L also increments an unguarded global, a real race, which must still be reported.
 * Built by scripts/valgrind.sh with the system C compiler; not part of the library's tests. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

static atomic_int phase;
static __thread long tls_word;
static long shared_counter;
static int plant_race;

static void * leaf(void * p) {
    tls_word = 1;
    if (plant_race) {
        shared_counter++;
    }
    return p;
}

static void * middle(void * p) {
    pthread_t t;
    pthread_create(&t, NULL, leaf, NULL);
    pthread_join(t, NULL);
    atomic_store(&phase, 1);
    while (atomic_load(&phase) != 2) {
        usleep(1000);
    }
    return p;
}

int main(int argc, char ** argv) {
    plant_race = argc > 1 && strcmp(argv[1], "race") == 0;
    pthread_t m, c;
    pthread_create(&m, NULL, middle, NULL);
    while (atomic_load(&phase) != 1) {
        usleep(1000);
    }
    pthread_create(&c, NULL, leaf, NULL);
    pthread_join(c, NULL);
    atomic_store(&phase, 2);
    pthread_join(m, NULL);
    return 0;
}
