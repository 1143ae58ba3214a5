//! The process's allocator policy (glibc's `mallopt`), for programs to set at their start:
//! the `lexbench` binary does (`src/main.rs`), the benches do at theirs; no library function
//! calls it.
#![allow(unsafe_code)]

/// Makes glibc's allocator keep and reuse freed memory instead of handing every large block back to
/// the kernel. candle allocates a fresh buffer for every op; with glibc's defaults each buffer over
/// the mmap threshold (at most 32 MB) is a new mapping, so every op pays page faults and the kernel
/// zeroes every page again (a profile of a MiniLM training step spent about 40 % of its time in
/// page faults). Here no block is served by mmap and the heap is never trimmed: memory stays at its
/// peak and is reused. Called once (later calls do nothing); no effect outside glibc. A policy of
/// the whole process, so the program decides: the `lexbench` binary calls it at its start
/// (`src/main.rs`), the benches at theirs; nothing in the libraries does (loading a model leaves the
/// host process's allocator as it was).
///
/// "Never" is `M_TRIM_THRESHOLD = -1` (mallopt(3): "disables trimming completely"). A threshold of
/// `i32::MAX`, as this function first set, still trims once 2 GiB lie free at the top of the heap.
/// A MiniLM training step of 56 sequences peaks near that size and a cross-encoder's validation pass
/// through the training network beyond it: such runs gave the heap back and faulted it in again
/// (docs/performance.md; `tests/allocator.rs` fails with that threshold).
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: mallopt only changes allocator parameters; both values are valid for these
            // options (-1 is the documented "never trim"), and changing them while other threads
            // allocate is supported by glibc.
            unsafe {
                libc::mallopt(libc::M_MMAP_MAX, 0);
                libc::mallopt(libc::M_TRIM_THRESHOLD, -1);
            }
        });
    }
}

/// The current end of glibc's `brk` heap (the program break), where the main thread's allocations
/// live once [`keep_freed_memory`] has turned mmap off; `None` outside Linux with glibc. For
/// checking that the heap is not trimmed (`tests/allocator.rs`).
pub fn heap_break() -> Option<usize> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: sbrk(0) only reads the current program break.
        Some(unsafe { libc::sbrk(0) } as usize)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}
