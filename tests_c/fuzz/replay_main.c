/*
 * Replays fuzz inputs without libFuzzer: every file named on the command line (directories are
 * walked one level deep) is fed once to LLVMFuzzerTestOneInput. Built with any compiler as
 * fuzz_replay_<p>; ctest runs it over the committed corpus (tests_c/fuzz/corpus) and
 * scripts/valgrind.sh runs it under memcheck.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size);

static int run_file(const char * path) {
    FILE * f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    uint8_t * buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            buf = realloc(buf, cap);
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        if (got == 0) {
            break;
        }
        n += got;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

static int cmp(const void * a, const void * b) {
    return strcmp(*(char * const *) a, *(char * const *) b);
}

int main(int argc, char ** argv) {
    int files = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            bad++;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad += run_file(argv[i]);
            files++;
            continue;
        }
        DIR * d = opendir(argv[i]);
        if (!d) {
            perror(argv[i]);
            bad++;
            continue;
        }
        char ** names = NULL;
        size_t nn = 0;
        struct dirent * e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') {
                continue;
            }
            names = realloc(names, (nn + 1) * sizeof(char *));
            size_t len = strlen(argv[i]) + strlen(e->d_name) + 2;
            names[nn] = malloc(len);
            snprintf(names[nn], len, "%s/%s", argv[i], e->d_name);
            nn++;
        }
        closedir(d);
        qsort(names, nn, sizeof(char *), cmp);
        for (size_t k = 0; k < nn; k++) {
            bad += run_file(names[k]);
            files++;
            free(names[k]);
        }
        free(names);
    }
    printf("fuzz replay: %d inputs, %d unreadable\n", files, bad);
    return bad || files == 0 ? 1 : 0;
}
