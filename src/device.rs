//! Devices: the generic entry points over a device's vtable.

use crate::abi::*;
use crate::error::Result;

/// Stock zeroes the props before the device fills them; devices may leave fields untouched.
pub fn get_props<R: Rev>(d: &Device<R>, out: &mut DevProps<R>) -> Result<()> {
    *out = DevProps {
        name: std::ptr::null(),
        description: std::ptr::null(),
        memory_free: 0,
        memory_total: 0,
        type_: 0,
        device_id: R::DEVICE_ID_NONE,
        caps: DevCaps::default(),
        caps_extra: R::caps_extra(false),
    };
    d.props(out)
}
