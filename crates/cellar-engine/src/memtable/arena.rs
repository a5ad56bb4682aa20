//! The memtable's memory: skiplist nodes, with their keys and values, are carved from large
//! blocks and freed all at once when the memtable is dropped.
//!
//! Why not one heap allocation per entry: each insert then paid for three allocations (node,
//! key, value), and the flush thread, which drops the memtable, freed every entry one by one
//! after another thread had allocated it (docs/design/arena-memtable.md).

// Raw blocks of memory handed out as node storage; nothing else in the engine allocates so.
#![allow(unsafe_code)]

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;

use parking_lot::Mutex;

/// Size of the shared blocks most entries are carved from.
const BLOCK_BYTES: usize = 1 << 20;
/// Entries larger than this get a block of their own, so that a large value neither wastes
/// the rest of a shared block nor needs a larger one.
const OWN_BLOCK_MIN_BYTES: usize = BLOCK_BYTES / 4;
/// Alignment of every allocation: node headers hold `u64`s and pointers.
pub(super) const ALIGN: usize = 8;

/// One block from the global allocator, freed on drop.
struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl Block {
    fn new(bytes: usize) -> Block {
        let layout = match Layout::from_size_align(bytes.max(ALIGN), ALIGN) {
            Ok(l) => l,
            // Only for sizes near isize::MAX, far above any entry the batch checks admit.
            Err(_) => handle_alloc_error(Layout::new::<u64>()),
        };
        // SAFETY: `layout` has a non-zero size.
        let raw = unsafe { alloc(layout) };
        match NonNull::new(raw) {
            Some(ptr) => Block { ptr, layout },
            None => handle_alloc_error(layout),
        }
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc(self.layout)` and is freed here only, once.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

struct Blocks {
    all: Vec<Block>,
    /// The next free byte of the current shared block, and how many bytes follow it.
    cursor: Option<NonNull<u8>>,
    left: usize,
}

impl Blocks {
    /// A new block of `bytes`, kept until the arena drops.
    fn add(&mut self, bytes: usize) -> NonNull<u8> {
        let block = Block::new(bytes);
        let ptr = block.ptr;
        self.all.push(block);
        ptr
    }
}

/// A bump allocator. Allocations are never freed one by one: the memory lives until the
/// arena is dropped.
pub(super) struct Arena {
    blocks: Mutex<Blocks>,
}

// SAFETY: the blocks are plain memory owned by the arena; the cursor is only read and moved
// under the mutex, and what a caller writes into its allocation is the caller's to
// synchronize (the skiplist publishes nodes with release stores).
unsafe impl Send for Arena {}
// SAFETY: as above; `alloc` takes `&self` and serializes on the mutex.
unsafe impl Sync for Arena {}

impl Arena {
    pub(super) fn new() -> Arena {
        Arena {
            blocks: Mutex::new(Blocks {
                all: Vec::new(),
                cursor: None,
                left: 0,
            }),
        }
    }

    /// `bytes` of uninitialized memory aligned to [`ALIGN`], valid until the arena drops.
    pub(super) fn alloc(&self, bytes: usize) -> NonNull<u8> {
        let bytes = bytes.max(1).next_multiple_of(ALIGN);
        let mut b = self.blocks.lock();
        if bytes >= OWN_BLOCK_MIN_BYTES {
            return b.add(bytes);
        }
        let ptr = match b.cursor {
            Some(p) if b.left >= bytes => p,
            _ => {
                b.left = BLOCK_BYTES;
                b.add(BLOCK_BYTES)
            }
        };
        // SAFETY: `bytes <= left`, so the cursor moves to at most one past the block's end.
        b.cursor = Some(unsafe { ptr.add(bytes) });
        b.left -= bytes;
        ptr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_aligned_and_disjoint() {
        let a = Arena::new();
        let sizes = [
            1,
            7,
            8,
            24,
            100,
            OWN_BLOCK_MIN_BYTES,
            3 * BLOCK_BYTES,
            5,
            1000,
        ];
        let mut spans = Vec::new();
        for (i, &n) in sizes.iter().enumerate() {
            let p = a.alloc(n);
            assert_eq!(p.as_ptr() as usize % ALIGN, 0, "allocation {i}");
            // SAFETY: the allocation is `n` bytes long and ours alone.
            unsafe { std::ptr::write_bytes(p.as_ptr(), i as u8, n) };
            spans.push((p.as_ptr() as usize, n, i as u8));
        }
        for &(start, n, fill) in &spans {
            // SAFETY: as above; every byte was written, and no later allocation overlapped.
            let bytes = unsafe { std::slice::from_raw_parts(start as *const u8, n) };
            assert!(
                bytes.iter().all(|&b| b == fill),
                "allocation {fill} overwritten"
            );
        }
    }
}
