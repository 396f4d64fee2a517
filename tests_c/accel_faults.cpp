/*
 * Accelerators that fail at start-up (issue 45), stock vs ours: this program defines the host's
 * `lm_ggml_backend_vk_reg` (a "Vulkan" backend our registry finds through its weak reference, and
 * stock's registers under LM_GGML_USE_VULKAN) whose one device, FAULTY, fails in one way per case:
 *
 *   reg_throws        lm_ggml_backend_vk_reg() throws std::runtime_error
 *   count_throws      get_device_count throws
 *   get_device_throws get_device throws std::out_of_range ("map::at", as OpenCL on Adreno)
 *   null_device       get_device returns NULL
 *   no_memory         get_memory reports total 0 (its buffers fail: a device with nothing to give)
 *   alloc_fails       its buffer type's alloc_buffer returns NULL
 *   init_null         init_backend returns NULL
 *   init_throws       init_backend throws std::runtime_error
 *   register_null     (no fault; the backend has no device) the app registers a NULL reg, as
 *                     llama.cpp does after ggml-rpc failed to reach a server: no log line,
 *                     nothing registered
 *
 * Each case runs in a child process (fork) that goes as far as it can: list the devices, take
 * init_best(), allocate and compute a small graph (c = a * b + a, checked), and reports each step
 * on a pipe; the parent adds how the child ended (exit / signal) and compares the line with the
 * expected one of this build: ours (static / shared: GGML_RS_TEST_MODE) or stock (the host's own
 * ggml-backend.cpp / -reg.cpp). The whole table is printed; any difference fails the test.
 */
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-backend-impl.h"
#include "ggml-cpu.h"

#include <signal.h>
#include <stdexcept>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#if defined(GGML_RS_TEST_MODE_stock)
static const bool STOCK = true;
#else
static const bool STOCK = false;
#endif

static std::string g_fault;
static int g_out = -1; /* the pipe to the parent */

static void say(const std::string & s) {
    std::string line = s + " ";
    if (write(g_out, line.data(), line.size()) < 0) _exit(99);
}

/* ---------------------------------------------------------------- log lines (warn / error) */

static int g_warn, g_err;
static void on_log(enum lm_ggml_log_level level, const char * text, void * ud) {
    (void) ud;
    if (level == LM_GGML_LOG_LEVEL_WARN) g_warn++;
    if (level == LM_GGML_LOG_LEVEL_ERROR) g_err++;
    if (level >= LM_GGML_LOG_LEVEL_WARN) fprintf(stderr, "[log %d] %s", (int) level, text);
}

/* ---------------------------------------------------------------- the faulty backend */

static struct lm_ggml_backend_buffer_type faulty_buft;
static struct lm_ggml_backend_device faulty_dev;
static struct lm_ggml_backend_reg faulty_reg;

static const char * buft_name(lm_ggml_backend_buffer_type_t) { return "FAULTY"; }
static size_t buft_align(lm_ggml_backend_buffer_type_t) { return 32; }
static lm_ggml_backend_buffer_t buft_alloc(lm_ggml_backend_buffer_type_t buft, size_t size) {
    if (g_fault == "alloc_fails" || g_fault == "no_memory") return NULL;
    /* host memory behind a buffer type of its own (as fake_accel.h) */
    lm_ggml_backend_buffer_t b = lm_ggml_backend_buft_alloc_buffer(lm_ggml_backend_cpu_buffer_type(), size);
    if (b) b->buft = buft;
    return b;
}
static bool buft_is_host(lm_ggml_backend_buffer_type_t) { return false; }

static const char * backend_name(lm_ggml_backend_t) { return "FAULTY"; }
static void backend_free(lm_ggml_backend_t be) { delete be; }

static const char * dev_name(lm_ggml_backend_dev_t) { return "FAULTY"; }
static void dev_memory(lm_ggml_backend_dev_t, size_t * free, size_t * total) {
    bool none = g_fault == "no_memory";
    *free = none ? 0 : (size_t) 1 << 30;
    *total = none ? 0 : (size_t) 1 << 30;
}
static enum lm_ggml_backend_dev_type dev_type(lm_ggml_backend_dev_t) { return LM_GGML_BACKEND_DEVICE_TYPE_GPU; }
static lm_ggml_backend_t dev_init(lm_ggml_backend_dev_t dev, const char *) {
    if (g_fault == "init_null") return NULL;
    if (g_fault == "init_throws") throw std::runtime_error("vkCreateDevice failed");
    static lm_ggml_guid guid = {0xfa, 0x17};
    lm_ggml_backend_t be = new lm_ggml_backend();
    memset(be, 0, sizeof(*be));
    be->guid = &guid;
    be->iface.get_name = backend_name;
    be->iface.free = backend_free;
    be->device = dev;
    return be;
}
static lm_ggml_backend_buffer_type_t dev_buft(lm_ggml_backend_dev_t) { return &faulty_buft; }
static bool dev_supports_op(lm_ggml_backend_dev_t, const struct lm_ggml_tensor *) { return true; }
static bool dev_supports_buft(lm_ggml_backend_dev_t, lm_ggml_backend_buffer_type_t b) { return b == &faulty_buft; }

static const char * reg_name(lm_ggml_backend_reg_t) { return "Vulkan"; }
static size_t reg_count(lm_ggml_backend_reg_t) {
    if (g_fault == "count_throws") throw std::runtime_error("vkEnumeratePhysicalDevices failed");
    /* register_null: a backend without devices (as ggml-vulkan without a usable driver) */
    return g_fault == "register_null" ? 0 : 1;
}
static lm_ggml_backend_dev_t reg_device(lm_ggml_backend_reg_t, size_t i) {
    if (g_fault == "get_device_throws") {
        return (lm_ggml_backend_dev_t) (uintptr_t) std::string("map::at").at(i + 100); /* throws std::out_of_range */
    }
    if (g_fault == "null_device") return NULL;
    return &faulty_dev;
}

extern "C" lm_ggml_backend_reg_t lm_ggml_backend_vk_reg(void) {
    if (g_fault == "reg_throws") throw std::runtime_error("vk::Instance creation failed");
    faulty_buft.iface.get_name = buft_name;
    faulty_buft.iface.alloc_buffer = buft_alloc;
    faulty_buft.iface.get_alignment = buft_align;
    faulty_buft.iface.is_host = buft_is_host;
    faulty_buft.device = &faulty_dev;
    faulty_dev.iface.get_name = dev_name;
    faulty_dev.iface.get_description = dev_name;
    faulty_dev.iface.get_memory = dev_memory;
    faulty_dev.iface.get_type = dev_type;
    faulty_dev.iface.init_backend = dev_init;
    faulty_dev.iface.get_buffer_type = dev_buft;
    faulty_dev.iface.supports_op = dev_supports_op;
    faulty_dev.iface.supports_buft = dev_supports_buft;
    faulty_dev.reg = &faulty_reg;
    faulty_reg.iface.get_name = reg_name;
    faulty_reg.iface.get_device_count = reg_count;
    faulty_reg.iface.get_device = reg_device;
    return &faulty_reg;
}

/* ---------------------------------------------------------------- one case (the child) */

static int run_case(void) {
    lm_ggml_log_set(on_log, NULL);
    if (g_fault == "register_null") {
        lm_ggml_backend_dev_count(); /* the registry first, then the app's NULL */
        lm_ggml_backend_register(NULL);
    }
    std::string devs;
    for (size_t i = 0; i < lm_ggml_backend_dev_count(); i++) {
        devs += (i ? "," : "") + std::string(lm_ggml_backend_dev_name(lm_ggml_backend_dev_get(i)));
    }
    say("devices=" + devs);
    lm_ggml_backend_t be = lm_ggml_backend_init_best();
    if (!be) {
        say("best=NULL");
        return 0;
    }
    say(std::string("best=") + lm_ggml_backend_name(be));
    if (g_fault == "init_throws" && !STOCK) {
        /* the app's own dev_init of the device: NULL, not a terminate (its warning is not counted) */
        int w = g_warn;
        lm_ggml_backend_t direct = lm_ggml_backend_dev_init(&faulty_dev, NULL);
        say(direct ? "dev_init=backend" : "dev_init=NULL");
        g_warn = w;
    }

    const int n = 8;
    struct lm_ggml_init_params ip = { 8 * lm_ggml_tensor_overhead() + lm_ggml_graph_overhead(), NULL, true };
    struct lm_ggml_context * ctx = lm_ggml_init(ip);
    struct lm_ggml_tensor * a = lm_ggml_new_tensor_1d(ctx, LM_GGML_TYPE_F32, n);
    struct lm_ggml_tensor * b = lm_ggml_new_tensor_1d(ctx, LM_GGML_TYPE_F32, n);
    struct lm_ggml_tensor * c = lm_ggml_add(ctx, lm_ggml_mul(ctx, a, b), a);
    struct lm_ggml_cgraph * g = lm_ggml_new_graph(ctx);
    lm_ggml_build_forward_expand(g, c);
    lm_ggml_backend_buffer_t buf = lm_ggml_backend_alloc_ctx_tensors(ctx, be);
    if (!buf) {
        say("alloc=NULL");
        return 0;
    }
    float av[n], bv[n], cv[n];
    for (int i = 0; i < n; i++) { av[i] = (float) (i + 1); bv[i] = 0.5f * (float) i - 1.0f; }
    lm_ggml_backend_tensor_set(a, av, 0, sizeof(av));
    lm_ggml_backend_tensor_set(b, bv, 0, sizeof(bv));
    if (lm_ggml_backend_graph_compute(be, g) != LM_GGML_STATUS_SUCCESS) {
        say("compute=failed");
        return 0;
    }
    lm_ggml_backend_tensor_get(c, cv, 0, sizeof(cv));
    bool ok = true;
    for (int i = 0; i < n; i++) ok = ok && cv[i] == av[i] * bv[i] + av[i];
    say(ok ? "compute=ok" : "compute=WRONG");
    say("warn=" + std::to_string(g_warn) + " err=" + std::to_string(g_err));
    lm_ggml_backend_buffer_free(buf);
    lm_ggml_backend_free(be);
    lm_ggml_free(ctx);
    return 0;
}

/* ---------------------------------------------------------------- the table (the parent) */

struct Case {
    const char * fault;
    const char * ours;
    const char * stock;
};

#define OURS_CPU "devices=CPU best=CPU compute=ok warn=1 err=0"
static const Case CASES[] = {
    { "reg_throws",        OURS_CPU, "SIGABRT" },
    { "count_throws",      OURS_CPU, "SIGABRT" },
    { "get_device_throws", OURS_CPU, "SIGABRT" },
    { "null_device",       OURS_CPU, "SIGSEGV" },
    { "no_memory",         OURS_CPU, "devices=FAULTY,CPU best=FAULTY alloc=NULL" },
    { "alloc_fails",       OURS_CPU, "devices=FAULTY,CPU best=FAULTY alloc=NULL" },
    { "init_null",         "devices=FAULTY,CPU best=CPU compute=ok warn=1 err=0", "devices=FAULTY,CPU best=NULL" },
    { "init_throws",       "devices=FAULTY,CPU best=CPU dev_init=NULL compute=ok warn=1 err=0", "devices=FAULTY,CPU SIGABRT" },
    { "register_null",     "devices=CPU best=CPU compute=ok warn=0 err=0", "devices=CPU best=CPU compute=ok warn=0 err=0" },
};

static std::string run_child(const char * self, const char * fault) {
    int fds[2];
    if (pipe(fds) != 0) return "pipe failed";
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        /* a fresh process image: the registry is built once per process */
        char fd_arg[16];
        snprintf(fd_arg, sizeof(fd_arg), "%d", fds[1]);
        execl("/proc/self/exe", self, "--case", fault, fd_arg, (char *) NULL);
        _exit(98);
    }
    close(fds[1]);
    std::string out;
    char buf[256];
    ssize_t r;
    while ((r = read(fds[0], buf, sizeof(buf))) > 0) out.append(buf, (size_t) r);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        out += sig == SIGABRT ? "SIGABRT" : sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : "signal " + std::to_string(sig);
    } else if (WEXITSTATUS(status) != 0) {
        out += "exit " + std::to_string(WEXITSTATUS(status));
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
}

int main(int argc, char ** argv) {
    if (argc == 4 && strcmp(argv[1], "--case") == 0) {
        g_fault = argv[2];
        g_out = atoi(argv[3]);
        return run_case();
    }
    if (argc == 2) { /* one case by hand, its log on stderr */
        g_fault = argv[1];
        g_out = 1;
        int r = run_case();
        printf("\n");
        return r;
    }
    printf("accel_faults (%s): a backend that fails at start-up\n", GGML_RS_TEST_MODE);
    printf("%-18s | %s\n", "fault", "outcome");
    int bad = 0;
    for (const Case & c : CASES) {
        std::string got = run_child(argv[0], c.fault);
        const char * want = STOCK ? c.stock : c.ours;
        bool ok = got == want;
        bad += !ok;
        printf("%-18s | %s%s%s\n", c.fault, got.c_str(), ok ? "" : "   <-- expected: ", ok ? "" : want);
    }
    printf(bad ? "accel_faults: %d case(s) differ\n" : "accel_faults: all cases as expected\n", bad);
    return bad ? 1 : 0;
}
