//! Tensors the scheduler creates for one graph (input copies, dependency views), owned here and
//! released when the next graph is split, as stock does with its per-graph context.

use crate::abi::*;
use crate::ptr_map::PtrMap;

pub struct Arena<R: Rev> {
    /// Boxed (graphs hold these tensors' addresses while the Vec grows) and kept as raw pointers:
    /// the graphs and C write them through those addresses, which a `Box` or `&mut` taken here
    /// would retire (Stacked Borrows; Miri checks it, `scripts/miri.sh`).
    tensors: Vec<*mut Tensor<R>>,
    owned: PtrMap<bool>,
}

/// Writes `name` into a tensor's fixed-size name field, truncated like `snprintf`.
pub fn set_name<R: Rev>(t: &mut Tensor<R>, name: &str) {
    t.name = [0; MAX_NAME];
    for (dst, &b) in t.name.iter_mut().zip(name.as_bytes().iter().take(MAX_NAME - 1)) {
        *dst = b as std::ffi::c_char;
    }
}

fn blank<R: Rev>(src: &Tensor<R>) -> Tensor<R> {
    Tensor::with_layout(src.type_, src.ne, src.nb)
}

impl<R: Rev> Arena<R> {
    pub fn new() -> Self {
        Arena { tensors: Vec::new(), owned: PtrMap::default() }
    }

    pub fn clear(&mut self) {
        for p in self.tensors.drain(..) {
            // SAFETY: made by `push` (Box::into_raw), freed once, here.
            drop(unsafe { Box::from_raw(p) });
        }
        self.owned.clear();
    }

    /// The tensors made for the current graph.
    pub fn tensors(&self) -> impl Iterator<Item = *const Tensor<R>> + '_ {
        self.tensors.iter().map(|&p| p as *const Tensor<R>)
    }

    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    pub fn owns(&self, t: *const Tensor<R>) -> bool {
        self.owned.contains_key(t as usize)
    }

    fn push(&mut self, t: Tensor<R>) -> *mut Tensor<R> {
        let p = Box::into_raw(Box::new(t));
        self.tensors.push(p);
        self.owned.insert(p as usize, true);
        p
    }

    /// `ggml_dup_tensor_layout`: same type, shape and strides, unallocated.
    pub fn dup_layout(&mut self, src: &Tensor<R>, name: &str) -> *mut Tensor<R> {
        let mut t = blank(src);
        set_name(&mut t, name);
        self.push(t)
    }

    /// `ggml_view_tensor`: a view of all of `src` (following `src`'s own view source), named "<src> (view)".
    pub fn view_of(&mut self, live: &crate::abi::vtable::Live, src: *mut Tensor<R>) -> *mut Tensor<R> {
        let s = live.obj(src).expect("view of a live tensor");
        let mut t = blank(s);
        let (mut vsrc, mut offs) = (src, 0usize);
        if !s.view_src.is_null() {
            vsrc = s.view_src;
            offs = s.view_offs;
        }
        t.view_src = vsrc;
        t.view_offs = offs;
        if let Some(v) = live.obj(vsrc) {
            if !v.data.is_null() {
                t.data = (v.data as usize + offs) as *mut std::ffi::c_void;
            }
        }
        set_name(&mut t, &format!("{} (view)", s.name()));
        self.push(t)
    }
}

impl<R: Rev> Drop for Arena<R> {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::lm::Lm;
    use crate::abi::vtable::Live;

    fn live() -> Live {
        // SAFETY: the tests follow only the tensors of their own arena and locals.
        unsafe { Live::vouch() }
    }

    #[test]
    fn copies_keep_the_layout_and_stay_put_while_the_arena_grows() {
        let live = live();
        let mut src = Tensor::<Lm>::with_layout(1, [8, 4, 2, 1], [2, 16, 64, 128]);
        set_name(&mut src, "x");
        let mut arena = Arena::<Lm>::new();
        let first = arena.dup_layout(&src, "x#0");
        let more: Vec<_> = (0..100).map(|i| arena.dup_layout(&src, &format!("x#{}", i + 1))).collect();
        let t = live.obj(first).unwrap();
        assert_eq!((t.type_, t.ne, t.nb), (1, [8, 4, 2, 1], [2, 16, 64, 128]));
        assert!(t.data.is_null() && t.buffer.is_null() && t.view_src.is_null());
        assert_eq!(t.name(), "x#0");
        assert_eq!(live.obj(more[99]).unwrap().name(), "x#100");
        assert!(arena.owns(first) && arena.owns(more[50]));
        assert!(!arena.owns(&src));
        assert_eq!(arena.tensors().count(), 101);
    }

    #[test]
    fn views_follow_their_source_to_its_data() {
        let live = live();
        let mut bytes = [0u8; 256];
        let mut base = Tensor::<Lm>::with_layout(0, [64, 1, 1, 1], [4, 256, 256, 256]);
        base.data = bytes.as_mut_ptr() as *mut std::ffi::c_void;
        set_name(&mut base, "base");
        let mut arena = Arena::<Lm>::new();
        let v = arena.view_of(&live, &mut base);
        let vt = live.obj(v).unwrap();
        assert_eq!((vt.view_src, vt.view_offs, vt.data), (&mut base as *mut _, 0, base.data));
        assert_eq!(vt.name(), "base (view)");
        // a view of a view is a view of the first source, at the first view's offset
        let mut inner = Tensor::<Lm>::with_layout(0, [16, 1, 1, 1], [4, 64, 64, 64]);
        inner.view_src = &mut base;
        inner.view_offs = 32;
        let w = arena.view_of(&live, &mut inner);
        let wt = live.obj(w).unwrap();
        assert_eq!((wt.view_src, wt.view_offs), (&mut base as *mut _, 32));
        assert_eq!(wt.data as usize, bytes.as_ptr() as usize + 32);
    }

    #[test]
    fn names_are_truncated_like_snprintf_and_clear_forgets() {
        let mut t = Tensor::<Lm>::with_layout(0, [1, 1, 1, 1], [4, 4, 4, 4]);
        set_name(&mut t, &"n".repeat(200));
        assert_eq!(t.name().len(), MAX_NAME - 1);
        let mut arena = Arena::<Lm>::new();
        let p = arena.dup_layout(&t, "copy");
        arena.clear();
        assert!(arena.is_empty() && !arena.owns(p));
    }
}
