//! FLASH_ATTN_EXT: not computed yet; `supports` declines every node, so ggml-cpu runs them.

use super::Session;
use crate::op::Node;

pub fn supports(_n: &Node) -> bool {
    false
}

pub fn compute(_s: &Session, _n: &Node) -> bool {
    false
}
