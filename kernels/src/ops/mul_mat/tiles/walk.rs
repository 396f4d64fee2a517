//! The register-tile walk every SIMD level shares: which tiles of a [`DstView`] are computed in
//! which order. Each ISA folder implements [`Tiles`] with its kernels.

use super::operands::DstView;
use std::ops::Range;

/// A register-tile kernel for the SIMD levels: the outputs of weight rows `i..i + R` against
/// activation rows `j..j + C`, computed together.
pub(super) trait Tiles {
    /// One weight row as the kernel reads it. Looked up once per row pair, not once per tile:
    /// per-tile lookups (slicing, block casts, array building) were a fifth of whisper's F16
    /// product instructions.
    type Row: Copy;
    fn w_row(&self, i: usize) -> Self::Row;
    /// # Safety
    /// The CPU must have the features the implementing kernel is compiled for.
    unsafe fn tile<const R: usize, const C: usize>(&self, w: [Self::Row; R], j: usize) -> [[f32; C]; R];
    /// Bytes of one activation row as the kernel reads it (sizes the walk's cache block).
    fn act_row_bytes(&self) -> usize;
    /// Which tile shapes the walk instantiates, a per-level choice of code size against the
    /// work of the rare shapes (each output's arithmetic is the same in every shape, so the
    /// choice never changes a bit). [`TileShapes::All`] unless a level says otherwise.
    const SHAPES: TileShapes = TileShapes::All;
}

/// The tile shapes a [`Tiles`] level's walk uses (see [`Tiles::SHAPES`]). Every shape is a
/// fully unrolled kernel instance per format, inlined into the level's entry: the choice is what
/// an app pays in code size for the ragged edges.
pub(super) enum TileShapes {
    /// Weight rows in pairs, then an odd row alone (`R` = 2, 1); activation rows in fours, then
    /// the ragged edge as one tile (`C` = 4, 3, 2, 1): the least work (x86, where the code size
    /// is not budgeted).
    All,
    /// Only `R = 2` x `C` = 4 or 1, plus 1 x 1 for a view of one weight row: ragged activation
    /// edges (3 or 2 rows) as one-row tiles, and an odd last weight row computed together with
    /// its predecessor (that row's outputs are computed twice, to the same bits). 3 instances
    /// instead of 8 (NEON: the Android library's size budget). Views of an even number of
    /// weight rows whose batch is 1 or a multiple of 4 walk exactly as with `All`; the ragged
    /// ones do a little more work (tools/qemu-count: docs/size.md).
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    Few,
}

/// Fills `dst` tile by tile: weight rows in pairs and activation rows in fours, then the ragged
/// edges, over blocks of [`COL_BLOCK`] activation rows so that a block stays in cache while every
/// weight row of the chunk passes over it (one pass of all activations per row pair reloaded
/// them from L3 when they outgrow L2: whisper's 1500x1500 attention products). Four weight rows
/// per tile when decoding measured slower: the interleaved streams defeat the hardware
/// prefetcher even with software prefetch. Inlined into each level's `#[target_feature]` entry,
/// so the kernels compile with that level's instructions.
///
/// # Safety
/// As [`Tiles::tile`].
#[inline(always)]
pub(super) unsafe fn walk_tiles<K: Tiles>(k: &K, dst: &mut DstView<'_>) {
    let rows = dst.weight_rows();
    // SAFETY: passed on from this function's contract.
    unsafe { walk_tiles_rows(k, dst, rows) }
}

/// [`walk_tiles`] over the weight rows `rows` of `dst` only (a level may compute the others
/// with a tile shape of its own).
///
/// # Safety
/// As [`Tiles::tile`].
#[inline(always)]
pub(super) unsafe fn walk_tiles_rows<K: Tiles>(k: &K, dst: &mut DstView<'_>, rows: Range<usize>) {
    debug_assert!(rows.start >= dst.weight_rows().start && rows.end <= dst.weight_rows().end);
    let acts = dst.act_rows();
    let block = col_block(k.act_row_bytes());
    let mut j0 = acts.start;
    while j0 < acts.end {
        let j1 = (j0 + block).min(acts.end);
        let mut i = rows.start;
        // SAFETY (walk_cols): passed on from this function's contract.
        if matches!(K::SHAPES, TileShapes::All) {
            while i + 2 <= rows.end {
                unsafe { walk_cols::<K, 2>(k, dst, i, j0..j1) };
                i += 2;
            }
            if i < rows.end {
                unsafe { walk_cols::<K, 1>(k, dst, i, j0..j1) };
            }
        } else if rows.len() >= 2 {
            // pairs, the odd last row with its predecessor (recomputed to the same bits); one
            // call of each walk_cols instance: each is inlined, so a second call would be a
            // second copy of its kernels
            loop {
                let r = i.min(rows.end - 2);
                unsafe { walk_cols::<K, 2>(k, dst, r, j0..j1) };
                if r + 2 == rows.end {
                    break;
                }
                i += 2;
            }
        } else if i < rows.end {
            unsafe { walk_cols::<K, 1>(k, dst, i, j0..j1) };
        }
        j0 = j1;
    }
}

/// Activation rows per cache block of [`walk_tiles`]: 8, or 4 when 8 rows would not leave room
/// in L1 for the weight rows streaming past them. Whisper's KQV (rows of 1500 f32, 6 KB) read
/// its 48 KB blocks from L2 once per weight-row pair, at L2's bandwidth.
fn col_block(row_bytes: usize) -> usize {
    if 8 * row_bytes <= L1_ACT_BYTES {
        8
    } else {
        4
    }
}

/// L1 data bytes a cache block of activation rows may take (of 32-64 KiB on the cores we run on).
const L1_ACT_BYTES: usize = 20 * 1024;

/// Fewest activation rows for which a level unpacks a chunk's quantized weights into a panel
/// before walking it (AVX2 and NEON `Panel`s): the unpacking costs about what one four-row tile
/// column does.
pub(super) const PANEL_MIN_ACTS: usize = 8;

/// # Safety
/// As [`Tiles::tile`].
#[inline(always)]
unsafe fn walk_cols<K: Tiles, const R: usize>(k: &K, dst: &mut DstView<'_>, i: usize, cols: Range<usize>) {
    let mut w = [k.w_row(i); R];
    for (r, w) in w.iter_mut().enumerate().skip(1) {
        *w = k.w_row(i + r);
    }
    let mut j = cols.start;
    // SAFETY (tile calls): passed on from this function's contract.
    if matches!(K::SHAPES, TileShapes::All) {
        while j + 4 <= cols.end {
            put_tile(dst, i, j, unsafe { k.tile::<R, 4>(w, j) });
            j += 4;
        }
        match cols.end - j {
            3 => put_tile(dst, i, j, unsafe { k.tile::<R, 3>(w, j) }),
            2 => put_tile(dst, i, j, unsafe { k.tile::<R, 2>(w, j) }),
            1 => put_tile(dst, i, j, unsafe { k.tile::<R, 1>(w, j) }),
            _ => {}
        }
        return;
    }
    // TileShapes::Few: a one-row view (R = 1) takes 1 x 1 tiles only
    if R == 2 {
        while j + 4 <= cols.end {
            put_tile(dst, i, j, unsafe { k.tile::<R, 4>(w, j) });
            j += 4;
        }
    }
    while j < cols.end {
        put_tile(dst, i, j, unsafe { k.tile::<R, 1>(w, j) });
        j += 1;
    }
}

/// F16 / F32 weight rows `w(i)` against activation rows `a(j)` of element type `A` (already in
/// ggml's partner precision: f32, or F16 as half bits); each level implements [`Tiles`] for it
/// with its float kernel.
pub(super) struct FloatTiles<'a, W, A> {
    pub(super) w: W,
    /// The view's activation rows (`first..`), sliced once per chunk rather than once per tile.
    a: Vec<&'a [A]>,
    first: usize,
}

impl<'a, W, A> FloatTiles<'a, W, A> {
    /// Weight rows `w(i)` against activation rows `a(j)` for `j` in `acts` (a view's
    /// [`DstView::act_rows`]).
    pub(super) fn new(w: W, acts: Range<usize>, a: impl Fn(usize) -> &'a [A]) -> Self {
        FloatTiles { w, first: acts.start, a: acts.map(a).collect() }
    }

    /// Bytes of one activation row.
    pub(super) fn act_row_bytes(&self) -> usize {
        self.a.first().map_or(0, |r| std::mem::size_of_val(*r))
    }

    /// Activation rows `j..j + C`.
    #[inline(always)]
    pub(super) fn acts<const C: usize>(&self, j: usize) -> [&'a [A]; C] {
        let j = j - self.first;
        let mut a = [self.a[j]; C];
        a.copy_from_slice(&self.a[j..j + C]);
        a
    }
}

/// Stores a finished tile: output (weight row `i + r`, activation `j + c`).
#[inline(always)]
pub(super) fn put_tile<const R: usize, const C: usize>(dst: &mut DstView<'_>, i: usize, j: usize, out: [[f32; C]; R]) {
    let r0 = dst.rows.start;
    for (c, col) in (j..j + C).enumerate() {
        let row = dst.row_mut(col);
        for r in 0..R {
            row[i + r - r0] = out[r][c];
        }
    }
}

