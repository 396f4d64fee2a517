/*
 * Layout probe: prints sizeof/offsetof of every struct field ggml-backend-rs reads or writes,
 * plus the enum values and type traits it relies on, compiled against a host's headers
 * (-DLAYOUT_LM or -DLAYOUT_WSP; add -DLAYOUT_REV2026 for the 2026 headers of cui-llama.rn 1.12.2 /
 * llama.rn 0.12.9 / whisper.rn 0.7.4, and -DLAYOUT_CAPS_MMAP where dev_caps has mmap_support:
 * cui-llama.rn 1.12.2 and whisper.rn 0.7.4, not llama.rn 0.12.9). tests/layout.rs compiles and runs it against each host's own
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
#elif defined(LAYOUT_GGML)
/* upstream ggml v0.20.0 (unprefixed; with LAYOUT_REV2026 LAYOUT_CAPS_MMAP): laid out as LAYOUT_LM's 2026 */
#    define S(x) ggml_##x
#    define E(x) GGML_##x
#else
#    error "define LAYOUT_LM, LAYOUT_WSP or LAYOUT_GGML"
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
#if defined(LAYOUT_WSP) || defined(LAYOUT_REV2026)
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
    VAL("op.flash_attn_ext", E(OP_FLASH_ATTN_EXT));
#if defined(LAYOUT_WSP) || defined(LAYOUT_REV2026)
    VAL("op.set_rows", E(OP_SET_ROWS));
    VAL("op.glu", E(OP_GLU));
#else
    VAL("op.set_rows", -1);
    VAL("op.glu", -1);
#endif
#if !defined(LAYOUT_REV2026)
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
#endif
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
#if defined(LAYOUT_WSP) || defined(LAYOUT_REV2026)
    VAL("const.BACKEND_API_VERSION", E(BACKEND_API_VERSION));
#endif
#if defined(LAYOUT_REV2026)
    /* The 2026 revision (cui-llama.rn 1.12.2, llama.rn 0.12.9, whisper.rn 0.7.4): the slots that
     * moved or appeared, every enum the library may switch on, in full. */
    OFF("BufferI", backend_buffer_i, set_tensor_2d);
    OFF("BufferI", backend_buffer_i, get_tensor_2d);
    OFF("BackendI", backend_i, set_tensor_2d_async);
    OFF("BackendI", backend_i, get_tensor_2d_async);
    OFF("BackendI", backend_i, graph_optimize);
    OFF("Reg", backend_reg, api_version);
    OFF("DevProps", backend_dev_props, device_id);
#    if defined(LAYOUT_CAPS_MMAP)
    /* cui-llama.rn 1.12.2 and whisper.rn 0.7.4 only; llama.rn 0.12.9 has no such field */
    OFF("DevCaps", backend_dev_caps, mmap_support);
#    endif
    OFF("CGraph", cgraph, uid);
    SIZE("MetaSplitState", backend_meta_split_state);
    VAL("const.META_MAX_DEVICES", E(BACKEND_META_MAX_DEVICES));
    VAL("const.SPLIT_AXIS_MIRRORED", E(BACKEND_SPLIT_AXIS_MIRRORED));
    VAL("const.SPLIT_AXIS_PARTIAL", E(BACKEND_SPLIT_AXIS_PARTIAL));
    VAL("const.SPLIT_AXIS_NONE", E(BACKEND_SPLIT_AXIS_NONE));
    VAL("const.SPLIT_AXIS_UNKNOWN", E(BACKEND_SPLIT_AXIS_UNKNOWN));
    VAL("const.TENSOR_FLAG_PARAM", E(TENSOR_FLAG_PARAM));
    VAL("const.TENSOR_FLAG_LOSS", E(TENSOR_FLAG_LOSS));
    VAL("const.TENSOR_FLAG_COMPUTE", E(TENSOR_FLAG_COMPUTE));
    VAL("const.DEFAULT_GRAPH_SIZE", E(DEFAULT_GRAPH_SIZE));
    VAL("const.DEV_TYPE_CPU", E(BACKEND_DEVICE_TYPE_CPU));
    VAL("const.DEV_TYPE_GPU", E(BACKEND_DEVICE_TYPE_GPU));
    VAL("const.DEV_TYPE_IGPU", E(BACKEND_DEVICE_TYPE_IGPU));
    VAL("const.DEV_TYPE_META", E(BACKEND_DEVICE_TYPE_META));
    VAL("const.USAGE_ANY", E(BACKEND_BUFFER_USAGE_ANY));
    VAL("const.USAGE_WEIGHTS", E(BACKEND_BUFFER_USAGE_WEIGHTS));
    VAL("op26.none", E(OP_NONE));
    VAL("op26.dup", E(OP_DUP));
    VAL("op26.add", E(OP_ADD));
    VAL("op26.add_id", E(OP_ADD_ID));
    VAL("op26.add1", E(OP_ADD1));
    VAL("op26.acc", E(OP_ACC));
    VAL("op26.sub", E(OP_SUB));
    VAL("op26.mul", E(OP_MUL));
    VAL("op26.div", E(OP_DIV));
    VAL("op26.sqr", E(OP_SQR));
    VAL("op26.sqrt", E(OP_SQRT));
    VAL("op26.log", E(OP_LOG));
    VAL("op26.sin", E(OP_SIN));
    VAL("op26.cos", E(OP_COS));
    VAL("op26.sum", E(OP_SUM));
    VAL("op26.sum_rows", E(OP_SUM_ROWS));
    VAL("op26.cumsum", E(OP_CUMSUM));
    VAL("op26.mean", E(OP_MEAN));
    VAL("op26.argmax", E(OP_ARGMAX));
    VAL("op26.count_equal", E(OP_COUNT_EQUAL));
    VAL("op26.repeat", E(OP_REPEAT));
    VAL("op26.repeat_back", E(OP_REPEAT_BACK));
    VAL("op26.concat", E(OP_CONCAT));
    VAL("op26.silu_back", E(OP_SILU_BACK));
    VAL("op26.norm", E(OP_NORM));
    VAL("op26.rms_norm", E(OP_RMS_NORM));
    VAL("op26.rms_norm_back", E(OP_RMS_NORM_BACK));
    VAL("op26.group_norm", E(OP_GROUP_NORM));
    VAL("op26.l2_norm", E(OP_L2_NORM));
    VAL("op26.mul_mat", E(OP_MUL_MAT));
    VAL("op26.mul_mat_id", E(OP_MUL_MAT_ID));
    VAL("op26.out_prod", E(OP_OUT_PROD));
    VAL("op26.scale", E(OP_SCALE));
    VAL("op26.set", E(OP_SET));
    VAL("op26.cpy", E(OP_CPY));
    VAL("op26.cont", E(OP_CONT));
    VAL("op26.reshape", E(OP_RESHAPE));
    VAL("op26.view", E(OP_VIEW));
    VAL("op26.permute", E(OP_PERMUTE));
    VAL("op26.transpose", E(OP_TRANSPOSE));
    VAL("op26.get_rows", E(OP_GET_ROWS));
    VAL("op26.get_rows_back", E(OP_GET_ROWS_BACK));
    VAL("op26.set_rows", E(OP_SET_ROWS));
    VAL("op26.diag", E(OP_DIAG));
    VAL("op26.diag_mask_inf", E(OP_DIAG_MASK_INF));
    VAL("op26.diag_mask_zero", E(OP_DIAG_MASK_ZERO));
    VAL("op26.soft_max", E(OP_SOFT_MAX));
    VAL("op26.soft_max_back", E(OP_SOFT_MAX_BACK));
    VAL("op26.rope", E(OP_ROPE));
    VAL("op26.rope_back", E(OP_ROPE_BACK));
    VAL("op26.clamp", E(OP_CLAMP));
    VAL("op26.conv_transpose_1d", E(OP_CONV_TRANSPOSE_1D));
    VAL("op26.im2col", E(OP_IM2COL));
    VAL("op26.im2col_back", E(OP_IM2COL_BACK));
    VAL("op26.im2col_3d", E(OP_IM2COL_3D));
    VAL("op26.col2im_1d", E(OP_COL2IM_1D));
    VAL("op26.conv_2d", E(OP_CONV_2D));
    VAL("op26.conv_3d", E(OP_CONV_3D));
    VAL("op26.conv_2d_dw", E(OP_CONV_2D_DW));
    VAL("op26.conv_transpose_2d", E(OP_CONV_TRANSPOSE_2D));
    VAL("op26.pool_1d", E(OP_POOL_1D));
    VAL("op26.pool_2d", E(OP_POOL_2D));
    VAL("op26.pool_2d_back", E(OP_POOL_2D_BACK));
    VAL("op26.upscale", E(OP_UPSCALE));
    VAL("op26.pad", E(OP_PAD));
    VAL("op26.pad_reflect_1d", E(OP_PAD_REFLECT_1D));
    VAL("op26.roll", E(OP_ROLL));
    VAL("op26.arange", E(OP_ARANGE));
    VAL("op26.timestep_embedding", E(OP_TIMESTEP_EMBEDDING));
    VAL("op26.argsort", E(OP_ARGSORT));
    VAL("op26.top_k", E(OP_TOP_K));
    VAL("op26.leaky_relu", E(OP_LEAKY_RELU));
    VAL("op26.tri", E(OP_TRI));
    VAL("op26.fill", E(OP_FILL));
    VAL("op26.flash_attn_ext", E(OP_FLASH_ATTN_EXT));
    VAL("op26.flash_attn_back", E(OP_FLASH_ATTN_BACK));
    VAL("op26.ssm_conv", E(OP_SSM_CONV));
    VAL("op26.ssm_scan", E(OP_SSM_SCAN));
    VAL("op26.win_part", E(OP_WIN_PART));
    VAL("op26.win_unpart", E(OP_WIN_UNPART));
    VAL("op26.get_rel_pos", E(OP_GET_REL_POS));
    VAL("op26.add_rel_pos", E(OP_ADD_REL_POS));
    VAL("op26.rwkv_wkv6", E(OP_RWKV_WKV6));
    VAL("op26.gated_linear_attn", E(OP_GATED_LINEAR_ATTN));
    VAL("op26.rwkv_wkv7", E(OP_RWKV_WKV7));
    VAL("op26.solve_tri", E(OP_SOLVE_TRI));
    VAL("op26.gated_delta_net", E(OP_GATED_DELTA_NET));
    VAL("op26.lightning_indexer", E(OP_LIGHTNING_INDEXER));
    VAL("op26.dsv4_hc_comb", E(OP_DSV4_HC_COMB));
    VAL("op26.dsv4_hc_pre", E(OP_DSV4_HC_PRE));
    VAL("op26.dsv4_hc_post", E(OP_DSV4_HC_POST));
    VAL("op26.unary", E(OP_UNARY));
    VAL("op26.map_custom1", E(OP_MAP_CUSTOM1));
    VAL("op26.map_custom2", E(OP_MAP_CUSTOM2));
    VAL("op26.map_custom3", E(OP_MAP_CUSTOM3));
    VAL("op26.custom", E(OP_CUSTOM));
    VAL("op26.cross_entropy_loss", E(OP_CROSS_ENTROPY_LOSS));
    VAL("op26.cross_entropy_loss_back", E(OP_CROSS_ENTROPY_LOSS_BACK));
    VAL("op26.opt_step_adamw", E(OP_OPT_STEP_ADAMW));
    VAL("op26.opt_step_sgd", E(OP_OPT_STEP_SGD));
    VAL("op26.glu", E(OP_GLU));
    VAL("op26.count", E(OP_COUNT));
    VAL("unary26.abs", E(UNARY_OP_ABS));
    VAL("unary26.sgn", E(UNARY_OP_SGN));
    VAL("unary26.neg", E(UNARY_OP_NEG));
    VAL("unary26.step", E(UNARY_OP_STEP));
    VAL("unary26.tanh", E(UNARY_OP_TANH));
    VAL("unary26.elu", E(UNARY_OP_ELU));
    VAL("unary26.relu", E(UNARY_OP_RELU));
    VAL("unary26.sigmoid", E(UNARY_OP_SIGMOID));
    VAL("unary26.gelu", E(UNARY_OP_GELU));
    VAL("unary26.gelu_quick", E(UNARY_OP_GELU_QUICK));
    VAL("unary26.silu", E(UNARY_OP_SILU));
    VAL("unary26.hardswish", E(UNARY_OP_HARDSWISH));
    VAL("unary26.hardsigmoid", E(UNARY_OP_HARDSIGMOID));
    VAL("unary26.exp", E(UNARY_OP_EXP));
    VAL("unary26.expm1", E(UNARY_OP_EXPM1));
    VAL("unary26.softplus", E(UNARY_OP_SOFTPLUS));
    VAL("unary26.gelu_erf", E(UNARY_OP_GELU_ERF));
    VAL("unary26.xielu", E(UNARY_OP_XIELU));
    VAL("unary26.floor", E(UNARY_OP_FLOOR));
    VAL("unary26.ceil", E(UNARY_OP_CEIL));
    VAL("unary26.round", E(UNARY_OP_ROUND));
    VAL("unary26.trunc", E(UNARY_OP_TRUNC));
    VAL("unary26.count", E(UNARY_OP_COUNT));
    VAL("glu26.reglu", E(GLU_OP_REGLU));
    VAL("glu26.geglu", E(GLU_OP_GEGLU));
    VAL("glu26.swiglu", E(GLU_OP_SWIGLU));
    VAL("glu26.swiglu_oai", E(GLU_OP_SWIGLU_OAI));
    VAL("glu26.geglu_erf", E(GLU_OP_GEGLU_ERF));
    VAL("glu26.geglu_quick", E(GLU_OP_GEGLU_QUICK));
    VAL("glu26.count", E(GLU_OP_COUNT));
    VAL("type26.f32", E(TYPE_F32));
    VAL("type26.f16", E(TYPE_F16));
    VAL("type26.q4_0", E(TYPE_Q4_0));
    VAL("type26.q4_1", E(TYPE_Q4_1));
    VAL("type26.q5_0", E(TYPE_Q5_0));
    VAL("type26.q5_1", E(TYPE_Q5_1));
    VAL("type26.q8_0", E(TYPE_Q8_0));
    VAL("type26.q8_1", E(TYPE_Q8_1));
    VAL("type26.q2_k", E(TYPE_Q2_K));
    VAL("type26.q3_k", E(TYPE_Q3_K));
    VAL("type26.q4_k", E(TYPE_Q4_K));
    VAL("type26.q5_k", E(TYPE_Q5_K));
    VAL("type26.q6_k", E(TYPE_Q6_K));
    VAL("type26.q8_k", E(TYPE_Q8_K));
    VAL("type26.iq2_xxs", E(TYPE_IQ2_XXS));
    VAL("type26.iq2_xs", E(TYPE_IQ2_XS));
    VAL("type26.iq3_xxs", E(TYPE_IQ3_XXS));
    VAL("type26.iq1_s", E(TYPE_IQ1_S));
    VAL("type26.iq4_nl", E(TYPE_IQ4_NL));
    VAL("type26.iq3_s", E(TYPE_IQ3_S));
    VAL("type26.iq2_s", E(TYPE_IQ2_S));
    VAL("type26.iq4_xs", E(TYPE_IQ4_XS));
    VAL("type26.i8", E(TYPE_I8));
    VAL("type26.i16", E(TYPE_I16));
    VAL("type26.i32", E(TYPE_I32));
    VAL("type26.i64", E(TYPE_I64));
    VAL("type26.f64", E(TYPE_F64));
    VAL("type26.iq1_m", E(TYPE_IQ1_M));
    VAL("type26.bf16", E(TYPE_BF16));
    VAL("type26.tq1_0", E(TYPE_TQ1_0));
    VAL("type26.tq2_0", E(TYPE_TQ2_0));
    VAL("type26.mxfp4", E(TYPE_MXFP4));
    VAL("type26.nvfp4", E(TYPE_NVFP4));
    VAL("type26.q1_0", E(TYPE_Q1_0));
    VAL("type26.q2_0", E(TYPE_Q2_0));
    VAL("type26.count", E(TYPE_COUNT));
    /* ggml_op_can_inplace (now exported from ggml-alloc.c), in switch order */
    {
        static const int inplace26[] = {
            E(OP_FILL), E(OP_SCALE), E(OP_DIAG_MASK_ZERO), E(OP_DIAG_MASK_INF), E(OP_ADD), E(OP_ADD_ID),
            E(OP_ADD1), E(OP_SUB), E(OP_MUL), E(OP_DIV), E(OP_SQR), E(OP_SQRT), E(OP_LOG), E(OP_UNARY),
            E(OP_ROPE), E(OP_ROPE_BACK), E(OP_SILU_BACK), E(OP_RMS_NORM), E(OP_RMS_NORM_BACK),
#ifdef LAYOUT_B11118
            E(OP_CLAMP), /* llama.cpp b11118 (llama.rn 0.13.0-rc.5) */
#endif
            E(OP_SOFT_MAX), E(OP_SOFT_MAX_BACK),
        };
        char key[32];
        for (size_t k = 0; k < sizeof inplace26 / sizeof inplace26[0]; k++) {
            snprintf(key, sizeof key, "inplace26.%zu", k);
            VAL(key, inplace26[k]);
        }
    }
#endif
    return 0;
}
