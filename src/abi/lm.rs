//! llama.rn 0.4.4 (`lm_`): ggml of December 2024.

use super::{Reg, Rev, Status, STATUS_SUCCESS};
use crate::buffer::CpuStatics;
use crate::host::HostFns;
use crate::registry::Registry;
use once_cell::sync::Lazy;

/// Marker for the llama.rn 0.4.4 revision.
pub struct Lm;

static STATICS: Lazy<CpuStatics<Lm>> = Lazy::new(CpuStatics::new);
static REGISTRY: Lazy<Registry<Lm>> = Lazy::new(Registry::new);
static HOST: Lazy<HostFns<Lm>> = Lazy::new(|| HostFns::load(crate::host::sym_lm, crate::host::LOG_LM));

impl Rev for Lm {
    const PREFIX: &'static str = "lm_";
    const ENV_PREFIX: &'static str = "LM_";
    const CASE_INSENSITIVE_NAMES: bool = false;
    const BACKEND_API_VERSION: i32 = 0;
    const TYPE_COUNT: i32 = 36;
    const REMOVED_TYPES: &'static [i32] = &[4, 5];
    const NBYTES_ZERO_FOR_EMPTY: bool = false;
    const VIEW_OPS: [i32; 4] = [34, 33, 35, 36];

    type InitRet = ();
    type RegHeader = ();
    type UseCounts = ();

    fn init_ret(_status: Status) {}
    fn init_status(_ret: ()) -> Status {
        STATUS_SUCCESS
    }
    fn reg_header() {}
    fn reg_api_version(_reg: &Reg<Self>) -> Option<i32> {
        None
    }
    fn statics() -> &'static CpuStatics<Self> {
        &STATICS
    }
    fn registry() -> &'static Registry<Self> {
        &REGISTRY
    }
    fn host() -> &'static HostFns<Self> {
        &HOST
    }
}
