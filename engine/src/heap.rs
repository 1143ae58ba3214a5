//! The process's allocator policy (glibc's `mallopt`), for programs to set at their start:
//! the `lexbench` binary does (`src/main.rs`), the benches do at theirs; no library function
//! calls it. [`HugePages`] is the global allocator those programs declare: glibc's, with large
//! blocks in transparent huge pages.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU8, Ordering};

/// glibc's allocator (the system's), with two changes for blocks of a page or more: they start on a
/// cache line (64 bytes, where glibc gives 16), and every whole 2 MiB piece of them is advised to the
/// kernel as a transparent huge page (`madvise(MADV_HUGEPAGE)`) before anyone touches it.
///
/// Why (bench/LOG.md, the encoder's products on one thread of a KVM guest of an Intel Xeon): the
/// encoder's and the trainer's tensors are megabytes each, and a matrix product walks its output and
/// its inputs rows apart (1.5–6 KiB), a new 4 KiB page every row or two. Where a TLB miss walks two
/// page tables (a virtual machine), writing a product's output on 4 KiB pages cost 10–17 % of the
/// product's time. And a row of the output that does not start on a cache line splits every
/// 64-byte vector store across two lines (1–6 % more). Where the kernel's THP mode is `madvise`
/// (Debian's and Ubuntu's default) large blocks otherwise get 4 KiB pages; with `always` they
/// already get huge ones and the advice changes nothing; with `never` the kernel ignores it; outside
/// Linux it is not given. Pieces of a block that do not fill a whole aligned 2 MiB are left as they
/// are.
///
/// The cost is at first touch: a huge page is cleared whole, and in a guest that hands free 2 MiB
/// blocks back to its host (free-page reporting) it is more often memory the host faults in again. A
/// training-step run of 3.8 GB took 4 s longer to start on such a guest (bench/LOG.md, "Pages"): a run
/// of minutes gains more than that, a command of seconds may not (`LEXBENCH_HUGE_PAGES=0`).
///
/// Where a block lies does not change any result (the kernels' arithmetic does not depend on
/// addresses: `tests/cli/same_bits.rs`). `LEXBENCH_HUGE_PAGES=0` turns both changes off (read once,
/// at the first block of a page or more): the allocator is then glibc's alone.
pub struct HugePages;

/// The huge page size of x86-64 and of 4 KiB-page AArch64 kernels.
const HUGE_PAGE: usize = 2 << 20;

/// Blocks of at least this many bytes start on a cache line and are advised.
const LARGE: usize = 4096;

/// A cache line of x86-64 (and one AVX-512 vector).
const LINE: usize = 64;

/// 0: not read yet; 1: on; 2: off.
static STATE: AtomicU8 = AtomicU8::new(0);

/// Whether the changes are on (`LEXBENCH_HUGE_PAGES` read at the first call).
fn enabled() -> bool {
    let mut state = STATE.load(Ordering::Relaxed);
    if state == 0 {
        // Not `std::env`, which allocates (this runs inside the allocator).
        // SAFETY: the name is a NUL-terminated C string; getenv only reads the environment, and
        // the value it returns is a NUL-terminated string that outlives this read.
        let off = unsafe {
            let v = libc::getenv(c"LEXBENCH_HUGE_PAGES".as_ptr());
            !v.is_null() && matches!(std::ffi::CStr::from_ptr(v).to_bytes(), b"0" | b"off" | b"no")
        };
        state = if off { 2 } else { 1 };
        STATE.store(state, Ordering::Relaxed);
    }
    state == 1
}

/// The layout glibc is asked for: a block of a page or more starts on a cache line. A function of
/// the caller's layout alone once [`enabled`] is settled (it is, before the first such block), so
/// `dealloc` recomputes what `alloc` asked for.
fn adjusted(layout: Layout) -> Layout {
    if layout.size() >= LARGE && layout.align() < LINE && enabled() {
        Layout::from_size_align(layout.size(), LINE).unwrap_or(layout)
    } else {
        layout
    }
}

/// Advises the whole `HUGE_PAGE` pieces of `len` bytes at `p`.
fn advise_huge(p: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        if p.is_null() || len < HUGE_PAGE || !enabled() {
            return;
        }
        let start = (p as usize).next_multiple_of(HUGE_PAGE);
        let end = (p as usize + len) / HUGE_PAGE * HUGE_PAGE;
        if end > start {
            // SAFETY: [start, end) lies inside the block just allocated (mapped, ours); the advice
            // changes how its pages are backed, never their contents. An error (THP not built in)
            // leaves the block as it is, which is what no advice would have.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (p, len);
}

// SAFETY: every block comes from `System` with the layout `adjusted` gives (a valid layout: the
// caller's size, an alignment at least the caller's) and goes back to it with the same; `realloc`
// of a large block is a fresh block, a copy of the bytes both hold and the old block freed. The
// advice only touches memory of the block returned.
unsafe impl GlobalAlloc for HugePages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: `adjusted` keeps the caller's non-zero size.
        let p = unsafe { System.alloc(adjusted(layout)) };
        advise_huge(p, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let asked = adjusted(layout);
        if asked.align() == layout.align() {
            // SAFETY: as above (glibc's calloc, which skips clearing fresh memory).
            let p = unsafe { System.alloc_zeroed(asked) };
            advise_huge(p, layout.size());
            return p;
        }
        // System's aligned `alloc_zeroed` clears the block before it returns, faulting its pages in
        // before the advice: the block is advised first, then cleared.
        // SAFETY: as above; `p` holds `layout.size()` writable bytes when not null.
        unsafe {
            let p = self.alloc(layout);
            if !p.is_null() {
                std::ptr::write_bytes(p, 0, layout.size());
            }
            p
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if (layout.size() < LARGE && new_size < LARGE) || !enabled() {
            // SAFETY: forwarded (small blocks, or the changes off: glibc's own realloc).
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        // SAFETY: the caller guarantees `new_size` with `layout`'s alignment is a valid layout;
        // `ptr` holds `layout.size()` bytes, the new block `new_size`; they do not overlap.
        unsafe {
            let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
            let q = self.alloc(new_layout);
            if !q.is_null() {
                std::ptr::copy_nonoverlapping(ptr, q, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            q
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the block was allocated with `adjusted(layout)` (see above).
        unsafe { System.dealloc(ptr, adjusted(layout)) }
    }
}

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
