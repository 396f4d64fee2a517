/*
 * A TCG plugin for qemu-user counting the guest instructions executed and the memory accesses
 * (loads + stores) among them: a work count, not a time (an emulated instruction says nothing of a real core's
 * cycles, cache misses or of how many instructions it retires per cycle).
 *
 *   qemu-aarch64 -plugin .cache/qemu/libcount.so[,out=FILE] PROGRAM ARGS
 *
 * prints (to FILE, else to stderr) one line at exit:  QEMU_COUNT insns=N mem=N
 * (One counter for both directions: Debian's qemu 7.2 fires an inline callback registered for
 * QEMU_PLUGIN_MEM_R on stores and one for _W on loads, so split counts would be mislabeled.)
 * The counters are inline additions shared by all guest threads without atomics, so run the
 * program single-threaded (qemu-user runs guest threads in parallel; concurrent additions could
 * be lost). Built by tools/qemu-count/build.sh against the plugin API header of the qemu the
 * machine runs (Debian's source package).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

static uint64_t insns, mem;
static char out_path[512];

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb * tb) {
    (void) id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    /* one addition per executed block for the instructions, one per executed access */
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &insns, n);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn * insn = qemu_plugin_tb_get_insn(tb, i);
        qemu_plugin_register_vcpu_mem_inline(insn, QEMU_PLUGIN_MEM_RW, QEMU_PLUGIN_INLINE_ADD_U64, &mem, 1);
    }
}

static void report_at_exit(qemu_plugin_id_t id, void * p) {
    (void) id;
    (void) p;
    char line[160];
    snprintf(line, sizeof line, "QEMU_COUNT insns=%llu mem=%llu\n", (unsigned long long) insns, (unsigned long long) mem);
    FILE * f = out_path[0] ? fopen(out_path, "w") : NULL;
    if (f) {
        fputs(line, f);
        fclose(f);
    } else {
        fputs(line, stderr);
    }
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t * info, int argc, char ** argv) {
    (void) info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) {
            snprintf(out_path, sizeof out_path, "%s", argv[i] + 4);
        } else {
            fprintf(stderr, "qemu-count: unknown argument '%s' (want out=FILE)\n", argv[i]);
            return -1;
        }
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, report_at_exit, NULL);
    return 0;
}
