/*
 * The fake accelerator of the scheduler tests (sched.c, fidelity.c): "FAKE" runs MUL and ADD only
 * (and NONE / VIEW), in a buffer type the CPU cannot use (host memory labelled non-host), and
 * computes with a CPU backend of its own. Include after the G / GB / C prefix macros and the
 * tensor_t typedef; call fake_setup() and set cpu_worker before use.
 */
#include <stdint.h>

static GB(t) cpu_worker; /* FAKE computes with a CPU backend of its own */
static int fake_computed_nodes;

static const char * fake_buft_name(GB(buffer_type_t) b) { (void) b; return "FAKE"; }
static size_t fake_buft_align(GB(buffer_type_t) b) { (void) b; return 32; }
static bool fake_buft_is_host(GB(buffer_type_t) b) { (void) b; return false; }
static GB(buffer_t) fake_buft_alloc(GB(buffer_type_t) buft, size_t size);
/* FAKE's largest buffer (0: no limit, as a buffer type without get_max_size), like iOS Metal's */
static size_t fake_max_size;
static size_t fake_buft_max(GB(buffer_type_t) b) { (void) b; return fake_max_size ? fake_max_size : SIZE_MAX; }
/* the sizes of the buffers FAKE allocated, in order (compute buffers: one per chunk) */
static size_t fake_allocs[64];
static int fake_n_allocs;

static struct G(backend_buffer_type) fake_buft = {
    { fake_buft_name, fake_buft_alloc, fake_buft_align, fake_buft_max, NULL, fake_buft_is_host },
    NULL, NULL,
};

static GB(buffer_t) fake_buft_alloc(GB(buffer_type_t) buft, size_t size) {
    /* host memory behind a non-host buffer type: reuse the CPU buffer's vtable, re-label it */
    GB(buffer_t) b = GB(buft_alloc_buffer)(GB(cpu_buffer_type)(), size);
    if (b) b->buft = buft;
    if (fake_n_allocs < 64) fake_allocs[fake_n_allocs++] = size;
    return b;
}

static const char * fake_name(GB(t) be) { (void) be; return "FAKE"; }
static void fake_free(GB(t) be) { free(be); }
static enum G(status) fake_compute(GB(t) be, struct G(cgraph) * g) {
    (void) be;
    for (int i = 0; i < G(graph_n_nodes)(g); i++) {
        enum G(op) op = G(graph_node)(g, i)->op;
        if (op != C(OP_MUL) && op != C(OP_ADD) && op != C(OP_NONE) && op != C(OP_VIEW)) {
            fprintf(stderr, "FAKE asked to compute op %s\n", G(op_name)(op));
            return C(STATUS_FAILED);
        }
        fake_computed_nodes++;
    }
    return GB(graph_compute)(cpu_worker, g);
}

static const char * fake_dev_name(GB(dev_t) d) { (void) d; return "FAKE"; }
static void fake_dev_memory(GB(dev_t) d, size_t * f, size_t * t) { (void) d; *f = 1; *t = 2; }
static enum GB(dev_type) fake_dev_type(GB(dev_t) d) { (void) d; return C(BACKEND_DEVICE_TYPE_GPU); }
static GB(buffer_type_t) fake_dev_buft(GB(dev_t) d) { (void) d; return &fake_buft; }
static bool fake_supports_op(GB(dev_t) d, const tensor_t * op) {
    (void) d;
    return op->op == C(OP_MUL) || op->op == C(OP_ADD) || op->op == C(OP_NONE) || op->op == C(OP_VIEW);
}
static bool fake_supports_buft(GB(dev_t) d, GB(buffer_type_t) b) { (void) d; return b == &fake_buft; }
static bool fake_offload; /* does FAKE ask for the ops whose weights are in host memory? */
static bool fake_offload_op(GB(dev_t) d, const tensor_t * op) { (void) d; (void) op; return fake_offload; }

static struct G(backend_device) fake_dev;
static GB(t) fake_init(void) {
    static G(guid) guid = {1, 2, 3};
    GB(t) be = calloc(1, sizeof(*be));
    be->guid = &guid;
    be->iface.get_name = fake_name;
    be->iface.free = fake_free;
    be->iface.graph_compute = fake_compute;
    be->device = &fake_dev;
    return be;
}

static void fake_setup(void) {
    memset(&fake_dev, 0, sizeof(fake_dev));
    fake_dev.iface.get_name = fake_dev_name;
    fake_dev.iface.get_description = fake_dev_name;
    fake_dev.iface.get_memory = fake_dev_memory;
    fake_dev.iface.get_type = fake_dev_type;
    fake_dev.iface.get_buffer_type = fake_dev_buft;
    fake_dev.iface.supports_op = fake_supports_op;
    fake_dev.iface.supports_buft = fake_supports_buft;
    fake_dev.iface.offload_op = fake_offload_op;
    fake_buft.device = &fake_dev;
}

