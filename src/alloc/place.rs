//! Offsets for the blocks of one arena. Two placements are computed and the smaller kept:
//! ggml-alloc's online best fit replayed over the same take/give-back order (so we never need
//! more than stock), and an offline one that knows every lifetime up front (largest blocks
//! first, each at the lowest offset free during its whole life), which usually packs tighter.
//! `bound` is what no placement can beat: the most bytes alive at once.

use super::plan::Block;

/// Peak of the live bytes over the event order.
pub fn bound(blocks: &[Block], events: &[(u32, bool)], in_arena: impl Fn(u32) -> bool) -> usize {
    let (mut live, mut peak) = (0usize, 0usize);
    for &(b, take) in events {
        if !in_arena(b) {
            continue;
        }
        let size = blocks[b as usize].size;
        if take {
            live += size;
            peak = peak.max(live);
        } else {
            live -= size;
        }
    }
    peak
}

/// ggml-alloc's dynamic allocator: free ranges sorted by offset, the last one unbounded; a
/// request takes the smallest range that fits among all but the last, else the last.
pub fn best_fit(blocks: &[Block], events: &[(u32, bool)], in_arena: impl Fn(u32) -> bool, offsets: &mut [usize]) -> usize {
    const OPEN: usize = usize::MAX / 2;
    let mut free: Vec<(usize, usize)> = vec![(0, OPEN)];
    let mut top = 0usize;
    for &(b, take) in events {
        if !in_arena(b) {
            continue;
        }
        let size = blocks[b as usize].size;
        if take {
            let last = free.len() - 1;
            let mut pick = None;
            let mut pick_size = usize::MAX;
            for (i, &(_, s)) in free[..last].iter().enumerate() {
                if s >= size && s <= pick_size {
                    pick = Some(i);
                    pick_size = s;
                }
            }
            // the open range always fits a request smaller than half the address space
            let i = pick.unwrap_or(last);
            let off = free[i].0;
            free[i].0 += size;
            free[i].1 -= size;
            if free[i].1 == 0 {
                free.remove(i);
            }
            offsets[b as usize] = off;
            top = top.max(off + size);
        } else {
            give_back(&mut free, offsets[b as usize], size);
        }
    }
    top
}

fn give_back(free: &mut Vec<(usize, usize)>, off: usize, size: usize) {
    for i in 0..free.len() {
        let (o, s) = free[i];
        if o + s == off {
            free[i].1 += size;
            if i + 1 < free.len() && free[i].0 + free[i].1 == free[i + 1].0 {
                free[i].1 += free[i + 1].1;
                free.remove(i + 1);
            }
            return;
        }
        if off + size == o {
            free[i] = (off, s + size);
            if i > 0 && free[i - 1].0 + free[i - 1].1 == off {
                free[i - 1].1 += free[i].1;
                free.remove(i);
            }
            return;
        }
    }
    let at = free.iter().position(|&(o, _)| o >= off).unwrap_or(free.len());
    free.insert(at, (off, size));
}

/// Offline placement: blocks by decreasing size, each at the lowest offset where it overlaps no
/// already placed block that is alive at the same time.
pub fn by_size(blocks: &[Block], members: &[u32], offsets: &mut [usize]) -> usize {
    let mut order: Vec<u32> = members.to_vec();
    order.sort_by(|&a, &b| {
        let (x, y) = (&blocks[a as usize], &blocks[b as usize]);
        y.size.cmp(&x.size).then(x.start.cmp(&y.start))
    });
    let mut placed: Vec<u32> = Vec::with_capacity(order.len());
    let mut near: Vec<(usize, usize)> = Vec::new();
    let mut top = 0usize;
    for &b in &order {
        let blk = &blocks[b as usize];
        near.clear();
        near.extend(placed.iter().filter(|&&p| blocks[p as usize].overlaps(blk)).map(|&p| (offsets[p as usize], blocks[p as usize].size)));
        near.sort_unstable();
        let mut off = 0usize;
        for &(o, s) in &near {
            if off + blk.size <= o {
                break;
            }
            off = off.max(o + s);
        }
        offsets[b as usize] = off;
        top = top.max(off + blk.size);
        placed.push(b);
    }
    top
}

/// Checks that no two blocks alive at the same time share a byte (tests, and a guard before a
/// placement is used).
pub fn disjoint(blocks: &[Block], members: &[u32], offsets: &[usize]) -> bool {
    let mut v: Vec<u32> = members.iter().copied().filter(|&b| blocks[b as usize].size > 0).collect();
    v.sort_by_key(|&b| offsets[b as usize]);
    for (i, &a) in v.iter().enumerate() {
        let (oa, ba) = (offsets[a as usize], &blocks[a as usize]);
        for &b in &v[i + 1..] {
            let ob = offsets[b as usize];
            if ob >= oa + ba.size {
                break;
            }
            if ba.overlaps(&blocks[b as usize]) {
                return false;
            }
        }
    }
    true
}
