//! The layout before 2026 (llama.rn 0.4.4's and whisper.rn 0.4.3's): none of the slots and fields
//! ggml added in 2026, stamped into `lm.rs`'s and `wsp.rs`'s `impl Rev`.

/// The `Rev` items of the layouts before 2026, which have none of the 2026 slots and fields.
macro_rules! layout_before_2026 {
    () => {
        const SPLIT_INPUTS_SOFT_LIMIT: usize = 10;
        const DEV_TYPE_ACCEL: $crate::abi::DevType = 2;
        const GRAPH_COPY_KEEPS_FLAGS: bool = false;
        const ALLOC_HONOURS_MAX_SIZE: bool = false;
        const CPU_ORDER: $crate::abi::CpuOrder =
            $crate::abi::CpuOrder::BEFORE_2026;
        const DEV_TYPE_IGPU: Option<$crate::abi::DevType> = None;
        type Buffer2d = ();
        const BUFFER_2D_NONE: () = ();
        type Backend2d = ();
        const BACKEND_2D_NONE: () = ();
        type GraphOptimize = ();
        const GRAPH_OPTIMIZE_NONE: () = ();
        type GraphUid = ();
        const GRAPH_UID_NONE: () = ();
        type DeviceId = ();
        type CapsExtra = ();
        const DEVICE_ID_NONE: () = ();
        fn caps_extra(_mmap_support: bool) {}
        fn buffer_2d(_i: &$crate::abi::BufferI<Self>) -> Option<&$crate::abi::Buffer2d<Self>> {
            None
        }
        fn backend_2d(_i: &$crate::abi::BackendI<Self>) -> Option<&$crate::abi::Backend2d<Self>> {
            None
        }
        fn graph_optimize(_i: &$crate::abi::BackendI<Self>) -> Option<$crate::abi::GraphOptimizer<Self>> {
            None
        }
        fn set_graph_uid(_g: &mut $crate::abi::CGraph<Self>, _uid: u64) {}
    };
}
pub(crate) use layout_before_2026;
