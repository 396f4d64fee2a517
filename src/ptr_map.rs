//! A flat open-addressing map keyed by tensor address, shared by the scheduler's tensor table, the
//! graph allocator's plan and the graph utilities: each looks tensors up thousands of times per
//! graph. Like ggml's hash set, but growable (no fixed `graph_size` limit). A leaf: it knows
//! addresses, not tensors, so every layer above can use it without importing the scheduler.

/// Open addressing with linear probing over tensor addresses (never 0).
pub struct PtrMap<V: Copy + Default> {
    keys: Vec<usize>,
    vals: Vec<V>,
    len: usize,
    /// occupied slots, so that `clear` costs the entries made, not the table's size (the
    /// scheduler clears it on every `sched_reset`, i.e. every decoded token)
    used: Vec<u32>,
}

impl<V: Copy + Default> Default for PtrMap<V> {
    fn default() -> Self {
        Self::with_capacity(16)
    }
}

impl<V: Copy + Default> PtrMap<V> {
    pub fn with_capacity(n: usize) -> Self {
        let cap = (n.max(8) * 2).next_power_of_two();
        PtrMap { keys: vec![0; cap], vals: vec![V::default(); cap], len: 0, used: Vec::new() }
    }

    #[inline]
    fn slot(&self, k: usize) -> usize {
        // addresses are 16-byte aligned at least: drop those bits, then spread
        let h = ((k >> 4) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> 32) as usize & (self.keys.len() - 1)
    }

    #[inline]
    pub fn get(&self, k: usize) -> Option<V> {
        let mask = self.keys.len() - 1;
        let mut i = self.slot(k);
        loop {
            let kk = self.keys[i];
            if kk == k {
                return Some(self.vals[i]);
            }
            if kk == 0 {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    pub fn contains_key(&self, k: usize) -> bool {
        k != 0 && self.get(k).is_some()
    }

    /// Inserts or overwrites; returns the previous value.
    pub fn insert(&mut self, k: usize, v: V) -> Option<V> {
        debug_assert!(k != 0);
        if (self.len + 1) * 2 > self.keys.len() {
            self.grow();
        }
        let mask = self.keys.len() - 1;
        let mut i = self.slot(k);
        loop {
            let kk = self.keys[i];
            if kk == k {
                return Some(std::mem::replace(&mut self.vals[i], v));
            }
            if kk == 0 {
                self.keys[i] = k;
                self.vals[i] = v;
                self.len += 1;
                self.used.push(i as u32);
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let cap = self.keys.len() * 2;
        let old_k = std::mem::replace(&mut self.keys, vec![0; cap]);
        let old_v = std::mem::replace(&mut self.vals, vec![V::default(); cap]);
        self.len = 0;
        self.used.clear();
        for (k, v) in old_k.into_iter().zip(old_v) {
            if k != 0 {
                self.insert(k, v);
            }
        }
    }

    pub fn clear(&mut self) {
        for &i in &self.used {
            self.keys[i as usize] = 0;
        }
        self.used.clear();
        self.len = 0;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::PtrMap;

    #[test]
    fn insert_get_overwrite_grow_clear() {
        let mut m: PtrMap<u32> = PtrMap::with_capacity(2);
        for i in 1..2000usize {
            assert_eq!(m.insert(i * 16, i as u32), None);
        }
        assert_eq!(m.len(), 1999);
        for i in 1..2000usize {
            assert_eq!(m.get(i * 16), Some(i as u32));
        }
        assert_eq!(m.get(5), None);
        assert_eq!(m.insert(32, 7), Some(2));
        assert_eq!(m.get(32), Some(7));
        m.clear();
        assert!(m.is_empty());
        assert_eq!(m.get(32), None);
        assert!(!m.contains_key(0));
    }
}
