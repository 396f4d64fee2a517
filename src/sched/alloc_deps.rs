//! The allocation dependencies backends add while the scheduler optimizes its splits (b11118's
//! `graph_optimize` params): the scheduler adds one dependency node per `MAX_SRC` kept tensors
//! after each `until` node in the allocator's graph (split.rs).

use crate::abi::{AllocDepSink, Rev, Tensor, MAX_SRC};

/// Per `until` node, in the order first asked, the tensors to keep alive until it has run.
pub struct AllocDeps<R: Rev> {
    pub until: Vec<(*mut Tensor<R>, Vec<*mut Tensor<R>>)>,
    /// calls with a NULL tensor that were dropped
    pub rejected: usize,
    index: std::collections::HashMap<usize, usize>,
}

impl<R: Rev> Default for AllocDeps<R> {
    fn default() -> Self {
        AllocDeps { until: Vec::new(), rejected: 0, index: std::collections::HashMap::new() }
    }
}

impl<R: Rev> AllocDeps<R> {
    /// Stock's `add_alloc_dep`: `tensor` joins `until`'s list once.
    pub fn add(&mut self, tensor: *mut Tensor<R>, until: *mut Tensor<R>) {
        let next = self.until.len();
        let i = *self.index.entry(until as usize).or_insert(next);
        if i == next {
            self.until.push((until, Vec::new()));
        }
        let keep = &mut self.until[i].1;
        if !keep.contains(&tensor) {
            keep.push(tensor);
        }
    }
    pub fn clear(&mut self) {
        self.until.clear();
        self.rejected = 0;
        self.index.clear();
    }
    pub fn is_empty(&self) -> bool {
        self.until.is_empty()
    }
    /// The tensors to keep until node `node` has run.
    pub fn of(&self, node: *mut Tensor<R>) -> Option<&[*mut Tensor<R>]> {
        self.index.get(&(node as usize)).map(|&i| self.until[i].1.as_slice())
    }
    /// Dependency nodes stock adds to the allocator's graph: one per `MAX_SRC` kept tensors.
    pub fn n_nodes(&self) -> usize {
        self.until.iter().map(|(_, keep)| keep.len().div_ceil(MAX_SRC)).sum()
    }
}

impl<R: Rev> AllocDepSink<R> for AllocDeps<R> {
    fn add(&mut self, tensor: *mut Tensor<R>, until: *mut Tensor<R>) {
        AllocDeps::add(self, tensor, until)
    }
    fn reject(&mut self) {
        self.rejected += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::GgmlB11118;

    #[test]
    fn alloc_deps_keep_each_tensor_once_per_until_node() {
        let mut ts: Vec<Tensor<GgmlB11118>> = (0..14).map(|_| Tensor::with_layout(0, [1; 4], [4; 4])).collect();
        let p: Vec<*mut Tensor<GgmlB11118>> = ts.iter_mut().map(|t| t as *mut _).collect();
        let mut deps = AllocDeps::<GgmlB11118>::default();
        assert!(deps.is_empty() && deps.n_nodes() == 0);
        for &t in &p[1..13] {
            deps.add(t, p[0]);
        }
        deps.add(p[1], p[0]); // again: kept once
        deps.add(p[2], p[13]);
        assert_eq!(deps.of(p[0]).map(<[_]>::len), Some(12));
        assert_eq!(deps.of(p[13]), Some(&[p[2]][..]));
        assert_eq!(deps.of(p[5]), None);
        // 12 kept tensors: ceil(12 / MAX_SRC) nodes, + 1 for p[13]
        assert_eq!(deps.n_nodes(), 12usize.div_ceil(MAX_SRC) + 1);
        deps.clear();
        assert!(deps.is_empty() && deps.of(p[0]).is_none());
    }
}
