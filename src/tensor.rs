//! Tensor facts the backend layer needs: byte sizes, layouts and range checks.

use crate::abi::{type_traits, Rev, Tensor, MAX_DIMS};
use crate::error::Result;
use crate::{bail, ensure};

/// `ggml_nbytes` of the revision: bytes spanned by the tensor's data, with the same (wrapping)
/// arithmetic as ggml so that checks agree with the host to the byte.
pub fn nbytes<R: Rev>(t: &Tensor<R>) -> Result<usize> {
    let Some((blck, tsize)) = type_traits::<R>(t.type_) else {
        bail!("tensor '{}' has unknown type {}", t.name(), t.type_);
    };
    if R::NBYTES_ZERO_FOR_EMPTY && t.ne.iter().any(|&n| n <= 0) {
        return Ok(0);
    }
    let ne = |i: usize| t.ne[i] as usize;
    let mut n = if blck == 1 {
        let mut n = tsize;
        for i in 0..MAX_DIMS {
            n = n.wrapping_add(ne(i).wrapping_sub(1).wrapping_mul(t.nb[i]));
        }
        n
    } else {
        let mut n = ne(0).wrapping_mul(t.nb[0]) / blck;
        for i in 1..MAX_DIMS {
            n = n.wrapping_add(ne(i).wrapping_sub(1).wrapping_mul(t.nb[i]));
        }
        n
    };
    if t.ne.iter().any(|&x| x < 0) {
        // a negative dimension is garbage, not a size; refuse rather than wrap around
        n = 0;
    }
    Ok(n)
}

/// Same type, shape and strides: what a byte copy between two tensors requires.
pub fn same_layout<R: Rev>(a: &Tensor<R>, b: &Tensor<R>) -> bool {
    a.type_ == b.type_ && a.ne == b.ne && a.nb == b.nb
}

/// Checks `offset + size <= nbytes(t)` without overflow.
pub fn check_range<R: Rev>(t: &Tensor<R>, offset: usize, size: usize, what: &str) -> Result<()> {
    let n = nbytes(t)?;
    let end = offset.checked_add(size);
    ensure!(
        end.is_some_and(|e| e <= n),
        "tensor '{}' {} out of bounds: offset {} + size {} > {} bytes",
        t.name(),
        what,
        offset,
        size,
        n
    );
    Ok(())
}

/// `ggml_is_view_op`: VIEW, RESHAPE, PERMUTE, TRANSPOSE (numbered differently per revision).
pub fn is_view_op<R: Rev>(op: i32) -> bool {
    let o = &R::OPS;
    op == o.view || op == o.reshape || op == o.permute || op == o.transpose
}
