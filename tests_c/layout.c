/*
 * Layout probe: prints sizeof/offsetof of every struct field ggml-backend-rs reads or writes,
 * plus the enum values and type traits it relies on, compiled against a host's headers
 * (-DLAYOUT_LM or -DLAYOUT_WSP). tests/layout.rs compiles and runs it against each host's own
 * headers and against our generated ones, and compares every line with the Rust mirrors.
 */
#include <stddef.h>
#include <stdio.h>

#include "ggml.h"
#include "ggml-backend.h"
#include "ggml-backend-impl.h"
#include "ggml-impl.h"

#if defined(LAYOUT_LM)
#    define S(x) lm_ggml_##x
#    define E(x) LM_GGML_##x
#elif defined(LAYOUT_WSP)
#    define S(x) wsp_ggml_##x
#    define E(x) WSP_GGML_##x
#else
#    error "define LAYOUT_LM or LAYOUT_WSP"
#endif

#define SIZE(name, t) printf("%s.size %zu\n", name, sizeof(struct S(t)))
#define OFF(name, t, f) printf("%s.%s %zu\n", name, #f, offsetof(struct S(t), f))
#define VAL(name, v) printf("%s %lld\n", name, (long long) (v))

int main(void) {
    SIZE("Tensor", tensor);
    OFF("Tensor", tensor, type);
    OFF("Tensor", tensor, buffer);
    OFF("Tensor", tensor, ne);
    OFF("Tensor", tensor, nb);
    OFF("Tensor", tensor, op);
    OFF("Tensor", tensor, op_params);
    OFF("Tensor", tensor, flags);
    OFF("Tensor", tensor, src);
    OFF("Tensor", tensor, view_src);
    OFF("Tensor", tensor, view_offs);
    OFF("Tensor", tensor, data);
    OFF("Tensor", tensor, name);
    OFF("Tensor", tensor, extra);

    SIZE("HashSet", hash_set);
    OFF("HashSet", hash_set, size);
    OFF("HashSet", hash_set, used);
    OFF("HashSet", hash_set, keys);

    SIZE("CGraph", cgraph);
    OFF("CGraph", cgraph, size);
    OFF("CGraph", cgraph, n_nodes);
    OFF("CGraph", cgraph, n_leafs);
    OFF("CGraph", cgraph, nodes);
    OFF("CGraph", cgraph, grads);
    OFF("CGraph", cgraph, grad_accs);
    OFF("CGraph", cgraph, leafs);
#if defined(LAYOUT_WSP)
    OFF("CGraph", cgraph, use_counts);
#endif
    OFF("CGraph", cgraph, visited_hash_set);
    OFF("CGraph", cgraph, order);

    SIZE("BufferTypeI", backend_buffer_type_i);
    OFF("BufferTypeI", backend_buffer_type_i, get_name);
    OFF("BufferTypeI", backend_buffer_type_i, alloc_buffer);
    OFF("BufferTypeI", backend_buffer_type_i, get_alignment);
    OFF("BufferTypeI", backend_buffer_type_i, get_max_size);
    OFF("BufferTypeI", backend_buffer_type_i, get_alloc_size);
    OFF("BufferTypeI", backend_buffer_type_i, is_host);
    SIZE("BufferType", backend_buffer_type);
    OFF("BufferType", backend_buffer_type, iface);
    OFF("BufferType", backend_buffer_type, device);
    OFF("BufferType", backend_buffer_type, context);

    SIZE("BufferI", backend_buffer_i);
    OFF("BufferI", backend_buffer_i, free_buffer);
    OFF("BufferI", backend_buffer_i, get_base);
    OFF("BufferI", backend_buffer_i, init_tensor);
    OFF("BufferI", backend_buffer_i, memset_tensor);
    OFF("BufferI", backend_buffer_i, set_tensor);
    OFF("BufferI", backend_buffer_i, get_tensor);
    OFF("BufferI", backend_buffer_i, cpy_tensor);
    OFF("BufferI", backend_buffer_i, clear);
    OFF("BufferI", backend_buffer_i, reset);
    SIZE("Buffer", backend_buffer);
    OFF("Buffer", backend_buffer, iface);
    OFF("Buffer", backend_buffer, buft);
    OFF("Buffer", backend_buffer, context);
    OFF("Buffer", backend_buffer, size);
    OFF("Buffer", backend_buffer, usage);

    SIZE("BackendI", backend_i);
    OFF("BackendI", backend_i, get_name);
    OFF("BackendI", backend_i, free);
    OFF("BackendI", backend_i, set_tensor_async);
    OFF("BackendI", backend_i, get_tensor_async);
    OFF("BackendI", backend_i, cpy_tensor_async);
    OFF("BackendI", backend_i, synchronize);
    OFF("BackendI", backend_i, graph_plan_create);
    OFF("BackendI", backend_i, graph_plan_free);
    OFF("BackendI", backend_i, graph_plan_update);
    OFF("BackendI", backend_i, graph_plan_compute);
    OFF("BackendI", backend_i, graph_compute);
    OFF("BackendI", backend_i, event_record);
    OFF("BackendI", backend_i, event_wait);
    SIZE("Backend", backend);
    OFF("Backend", backend, guid);
    OFF("Backend", backend, iface);
    OFF("Backend", backend, device);
    OFF("Backend", backend, context);

    SIZE("Event", backend_event);
    OFF("Event", backend_event, device);
    OFF("Event", backend_event, context);

    SIZE("DevCaps", backend_dev_caps);
    OFF("DevCaps", backend_dev_caps, async);
    OFF("DevCaps", backend_dev_caps, host_buffer);
    OFF("DevCaps", backend_dev_caps, buffer_from_host_ptr);
    OFF("DevCaps", backend_dev_caps, events);
    SIZE("DevProps", backend_dev_props);
    OFF("DevProps", backend_dev_props, name);
    OFF("DevProps", backend_dev_props, description);
    OFF("DevProps", backend_dev_props, memory_free);
    OFF("DevProps", backend_dev_props, memory_total);
    OFF("DevProps", backend_dev_props, type);
    OFF("DevProps", backend_dev_props, caps);

    SIZE("DeviceI", backend_device_i);
    OFF("DeviceI", backend_device_i, get_name);
    OFF("DeviceI", backend_device_i, get_description);
    OFF("DeviceI", backend_device_i, get_memory);
    OFF("DeviceI", backend_device_i, get_type);
    OFF("DeviceI", backend_device_i, get_props);
    OFF("DeviceI", backend_device_i, init_backend);
    OFF("DeviceI", backend_device_i, get_buffer_type);
    OFF("DeviceI", backend_device_i, get_host_buffer_type);
    OFF("DeviceI", backend_device_i, buffer_from_host_ptr);
    OFF("DeviceI", backend_device_i, supports_op);
    OFF("DeviceI", backend_device_i, supports_buft);
    OFF("DeviceI", backend_device_i, offload_op);
    OFF("DeviceI", backend_device_i, event_new);
    OFF("DeviceI", backend_device_i, event_free);
    OFF("DeviceI", backend_device_i, event_synchronize);
    SIZE("Device", backend_device);
    OFF("Device", backend_device, iface);
    OFF("Device", backend_device, reg);
    OFF("Device", backend_device, context);

    SIZE("RegI", backend_reg_i);
    OFF("RegI", backend_reg_i, get_name);
    OFF("RegI", backend_reg_i, get_device_count);
    OFF("RegI", backend_reg_i, get_device);
    OFF("RegI", backend_reg_i, get_proc_address);
    SIZE("Reg", backend_reg);
    OFF("Reg", backend_reg, iface);
    OFF("Reg", backend_reg, context);

    SIZE("GraphCopy", backend_graph_copy);
    OFF("GraphCopy", backend_graph_copy, buffer);
    OFF("GraphCopy", backend_graph_copy, ctx_allocated);
    OFF("GraphCopy", backend_graph_copy, ctx_unallocated);
    OFF("GraphCopy", backend_graph_copy, graph);

    VAL("const.MAX_DIMS", E(MAX_DIMS));
    VAL("const.MAX_SRC", E(MAX_SRC));
    VAL("const.MAX_OP_PARAMS", E(MAX_OP_PARAMS));
    VAL("const.MAX_NAME", E(MAX_NAME));
    VAL("const.TENSOR_ALIGNMENT", TENSOR_ALIGNMENT);
    VAL("const.TYPE_COUNT", E(TYPE_COUNT));
    VAL("op.none", E(OP_NONE));
    VAL("op.dup", E(OP_DUP));
    VAL("op.add", E(OP_ADD));
    VAL("op.sub", E(OP_SUB));
    VAL("op.mul", E(OP_MUL));
    VAL("op.div", E(OP_DIV));
    VAL("op.sqr", E(OP_SQR));
    VAL("op.sqrt", E(OP_SQRT));
    VAL("op.norm", E(OP_NORM));
    VAL("op.rms_norm", E(OP_RMS_NORM));
    VAL("op.mul_mat", E(OP_MUL_MAT));
    VAL("op.scale", E(OP_SCALE));
    VAL("op.cpy", E(OP_CPY));
    VAL("op.cont", E(OP_CONT));
    VAL("op.reshape", E(OP_RESHAPE));
    VAL("op.view", E(OP_VIEW));
    VAL("op.permute", E(OP_PERMUTE));
    VAL("op.transpose", E(OP_TRANSPOSE));
    VAL("op.get_rows", E(OP_GET_ROWS));
    VAL("op.soft_max", E(OP_SOFT_MAX));
    VAL("op.rope", E(OP_ROPE));
    VAL("op.im2col", E(OP_IM2COL));
    VAL("op.unary", E(OP_UNARY));
    /* ggml-alloc.c's ggml_op_can_inplace, in the order of src/abi/{lm,wsp}.rs INPLACE_OPS */
    {
        static const int inplace[] = {
            E(OP_SCALE), E(OP_DIAG_MASK_ZERO), E(OP_DIAG_MASK_INF), E(OP_ADD), E(OP_ADD1), E(OP_SUB),
            E(OP_MUL), E(OP_DIV), E(OP_SQR), E(OP_SQRT), E(OP_LOG), E(OP_UNARY), E(OP_ROPE),
            E(OP_RMS_NORM), E(OP_SOFT_MAX),
#if defined(LAYOUT_WSP)
            E(OP_ROPE_BACK), E(OP_SILU_BACK), E(OP_RMS_NORM_BACK), E(OP_SOFT_MAX_BACK),
#endif
        };
        char key[32];
        for (size_t k = 0; k < sizeof inplace / sizeof inplace[0]; k++) {
            snprintf(key, sizeof key, "inplace.%zu", k);
            VAL(key, inplace[k]);
        }
    }
    VAL("const.UNARY_GELU", E(UNARY_OP_GELU));
    VAL("const.UNARY_SILU", E(UNARY_OP_SILU));
    VAL("const.TENSOR_FLAG_INPUT", E(TENSOR_FLAG_INPUT));
    VAL("const.TENSOR_FLAG_OUTPUT", E(TENSOR_FLAG_OUTPUT));
    VAL("const.STATUS_ALLOC_FAILED", E(STATUS_ALLOC_FAILED));
    VAL("const.STATUS_FAILED", E(STATUS_FAILED));
    VAL("const.STATUS_SUCCESS", E(STATUS_SUCCESS));
    VAL("const.STATUS_ABORTED", E(STATUS_ABORTED));
    VAL("const.USAGE_COMPUTE", E(BACKEND_BUFFER_USAGE_COMPUTE));
    VAL("const.DEV_TYPE_ACCEL", E(BACKEND_DEVICE_TYPE_ACCEL));
    VAL("const.LOG_LEVEL_ERROR", E(LOG_LEVEL_ERROR));
#if defined(LAYOUT_WSP)
    VAL("const.BACKEND_API_VERSION", E(BACKEND_API_VERSION));
#endif
    return 0;
}
