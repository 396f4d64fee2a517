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

/// One chunk of ggml-alloc's 2026 dynamic allocator: its free ranges by offset (the last one the
/// chunk's unbounded or max-size tail) and its high-water mark.
struct Chunk {
    free: Vec<(usize, usize)>,
    top: usize,
}

/// ggml-alloc's best fit as the 2026 revision runs it: the arena is split into chunks of at most
/// `max_chunk` bytes (a larger tensor gets a chunk of its own size; the 16th chunk is unbounded),
/// each a buffer of its own, so that a backend with a buffer size limit (iOS Metal) can hold a
/// compute buffer larger than that limit. Same choices as its `dyn_tallocr_alloc`: the tightest
/// inner free range of any chunk (a later chunk's fitting range wins ties and even looser fits,
/// as its per-chunk best resets), else the chunk tail that grows the chunk least or wastes least,
/// else a new chunk. With `max_chunk` unbounded this is [`best_fit`]. Offsets are within the
/// chunk (`chunk_of`); returns each chunk's size.
pub fn best_fit_chunked(
    blocks: &[Block],
    events: &[(u32, bool)],
    in_arena: impl Fn(u32) -> bool,
    max_chunk: usize,
    offsets: &mut [usize],
    chunk_of: &mut [u8],
) -> Vec<usize> {
    const OPEN: usize = usize::MAX / 2;
    let max_chunk = max_chunk.min(OPEN);
    let mut chunks: Vec<Chunk> = Vec::new();
    let new_chunk = |chunks: &mut Vec<Chunk>, min_size: usize| {
        let size = if chunks.len() == super::MAX_CHUNKS - 1 { OPEN } else { min_size.max(max_chunk) };
        chunks.push(Chunk { free: vec![(0, size)], top: 0 });
        chunks.len() - 1
    };
    for &(b, take) in events {
        if !in_arena(b) {
            continue;
        }
        let size = blocks[b as usize].size;
        if take {
            let mut pick: Option<(usize, usize)> = None;
            for (c, ch) in chunks.iter().enumerate() {
                let mut best = usize::MAX;
                let last = ch.free.len().saturating_sub(1);
                for (i, &(_, s)) in ch.free[..last].iter().enumerate() {
                    if s >= size && s <= best {
                        pick = Some((c, i));
                        best = s;
                    }
                }
            }
            if pick.is_none() {
                let mut best_reuse = i128::MIN;
                for (c, ch) in chunks.iter().enumerate() {
                    let Some(&(o, s)) = ch.free.last() else { continue };
                    let reuse = ch.top as i128 - o as i128 - size as i128;
                    let better_reuse = best_reuse < 0 && reuse > best_reuse;
                    let better_fit = reuse >= 0 && reuse < best_reuse;
                    if s >= size && (better_reuse || better_fit) {
                        pick = Some((c, ch.free.len() - 1));
                        best_reuse = reuse;
                    }
                }
            }
            // the 16th chunk is unbounded, so a 17th is never asked for
            let (c, i) = pick.unwrap_or_else(|| (new_chunk(&mut chunks, size), 0));
            let ch = &mut chunks[c];
            let off = ch.free[i].0;
            ch.free[i].0 += size;
            ch.free[i].1 -= size;
            if ch.free[i].1 == 0 {
                ch.free.remove(i);
            }
            ch.top = ch.top.max(off + size);
            offsets[b as usize] = off;
            chunk_of[b as usize] = c as u8;
        } else {
            let c = chunk_of[b as usize] as usize;
            give_back(&mut chunks[c].free, offsets[b as usize], size);
        }
    }
    if chunks.is_empty() {
        return vec![0];
    }
    chunks.iter().map(|c| c.top).collect()
}
