//! `heap::keep_freed_memory` keeps the heap at its peak: a block larger than 2 GiB freed at the
//! top of the heap is not given back to the kernel (a training step frees about that much when it
//! ends, and a trimmed heap is faulted in again, page by page, by the next step).
//!
//! Without the test harness, so that it runs on the main thread: only the main thread's allocations
//! come from glibc's `brk` heap, which is what trimming shrinks. The block is never written, so it
//! costs address space, not memory.

use lexbench_engine::heap::{heap_break, keep_freed_memory};

fn main() {
    // Over `i32::MAX` (the threshold the function first set, which trims a top chunk this large),
    // with room for the allocator's own bookkeeping.
    const SIZE: usize = (1 << 31) + (256 << 20);
    keep_freed_memory();
    let Some(before) = heap_break() else {
        println!("allocator: keep_freed_memory only changes glibc's allocator; nothing to check here");
        return;
    };
    let mut block: Vec<u8> = Vec::new();
    if let Err(e) = block.try_reserve_exact(SIZE) {
        panic!("reserving {SIZE} bytes of address space failed ({e}): this check needs it");
    }
    let held = heap_break().unwrap_or(0);
    assert!(
        held >= before + SIZE,
        "the {SIZE}-byte block did not come from the brk heap (break {before:#x} → {held:#x}): \
         keep_freed_memory should have turned mmap off"
    );
    drop(block);
    let after = heap_break().unwrap_or(0);
    assert_eq!(
        after,
        held,
        "freeing {SIZE} bytes at the top of the heap trimmed it by {} bytes: keep_freed_memory \
         should keep freed memory",
        held.saturating_sub(after)
    );
    println!("allocator: a {SIZE}-byte block freed at the top of the heap stays mapped (ok)");
}
