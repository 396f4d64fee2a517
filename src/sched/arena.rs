//! Tensors the scheduler creates for one graph (input copies, dependency views), owned here and
//! released when the next graph is split, as stock does with its per-graph context.

use crate::abi::*;
use crate::ptr_map::PtrMap;

pub struct Arena<R: Rev> {
    // boxed: graphs hold these tensors' addresses while the Vec grows
    #[allow(clippy::vec_box)]
    tensors: Vec<Box<Tensor<R>>>,
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
        self.tensors.clear();
        self.owned.clear();
    }

    /// The tensors made for the current graph.
    pub fn tensors(&self) -> impl Iterator<Item = *const Tensor<R>> + '_ {
        self.tensors.iter().map(|b| &**b as *const Tensor<R>)
    }

    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    pub fn owns(&self, t: *const Tensor<R>) -> bool {
        self.owned.contains_key(t as usize)
    }

    fn push(&mut self, t: Tensor<R>) -> *mut Tensor<R> {
        let mut b = Box::new(t);
        let p: *mut Tensor<R> = &mut *b;
        self.tensors.push(b);
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
