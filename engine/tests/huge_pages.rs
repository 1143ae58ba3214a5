//! `heap::HugePages`, the global allocator of `lexbench` and the benches: a block of a page or more
//! starts on a cache line, and the whole 2 MiB pieces of a large block (fresh, grown by `realloc`,
//! zeroed) are advised to transparent huge pages, which the kernel records as the `hg` flag of the
//! mapping holding them (`/proc/self/smaps`, proc(5)); the values are kept through `realloc`.

use lexbench_engine::heap::HugePages;

#[global_allocator]
static ALLOCATOR: HugePages = HugePages;

const HUGE_PAGE: usize = 2 << 20;

/// The `VmFlags` of the mapping that holds `addr`, from `/proc/self/smaps`.
fn vm_flags(addr: usize) -> Vec<String> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("/proc/self/smaps is readable on Linux");
    let mut inside = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((lo, hi)) = first.split_once('-')
            && let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
        {
            inside = (lo..hi).contains(&addr);
            continue;
        }
        if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
            return flags.split_whitespace().map(str::to_owned).collect();
        }
    }
    panic!("no mapping of /proc/self/smaps holds {addr:#x}");
}

/// The first address of a whole 2 MiB piece of the block.
fn first_huge_piece(block: &[u8]) -> usize {
    (block.as_ptr() as usize).next_multiple_of(HUGE_PAGE)
}

#[test]
#[cfg(target_os = "linux")]
fn large_blocks_are_advised_to_huge_pages_and_keep_their_values() {
    if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
        println!("huge pages: this kernel has no transparent huge pages; no advice to check");
        return;
    }
    if std::env::var_os("LEXBENCH_HUGE_PAGES").is_some() {
        println!("huge pages: LEXBENCH_HUGE_PAGES is set for this run; the default is what this checks");
        return;
    }
    let mut block = vec![0u8; 16 << 20];
    assert_eq!(
        block.as_ptr() as usize % 64,
        0,
        "a 16 MiB block starts on a cache line"
    );
    let piece = first_huge_piece(&block);
    assert!(
        vm_flags(piece).iter().any(|f| f == "hg"),
        "a zeroed 16 MiB block's mapping is not advised to huge pages: {:?}",
        vm_flags(piece)
    );
    for (i, b) in block.iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    // Grown in place or moved: either way the new block's pieces are advised, its values kept.
    block.reserve_exact(40 << 20);
    let grown = (block.as_ptr() as usize).next_multiple_of(HUGE_PAGE);
    assert!(
        vm_flags(grown).iter().any(|f| f == "hg"),
        "the block grown by realloc is not advised: {:?}",
        vm_flags(grown)
    );
    assert!(
        block.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8),
        "realloc kept the values"
    );
    let fresh: Vec<f32> = Vec::with_capacity(8 << 20);
    let piece = (fresh.as_ptr() as usize).next_multiple_of(HUGE_PAGE);
    assert!(fresh.capacity() * 4 >= HUGE_PAGE * 2);
    assert!(
        vm_flags(piece).iter().any(|f| f == "hg"),
        "an uninitialised 32 MiB block is not advised"
    );
}

/// Blocks of a page or more start on a cache line, however they come (fresh, zeroed, grown from a
/// small block); smaller ones are glibc's as they are.
#[test]
fn blocks_of_a_page_or_more_start_on_a_cache_line() {
    if std::env::var_os("LEXBENCH_HUGE_PAGES").is_some() {
        println!("huge pages: LEXBENCH_HUGE_PAGES is set for this run; the default is what this checks");
        return;
    }
    let mut held = Vec::new();
    for size in [4096usize, 4100, 5000, 65_536, 1 << 20, (3 << 20) + 12] {
        let fresh: Vec<u8> = Vec::with_capacity(size);
        let zeroed = vec![0u16; size / 2];
        assert_eq!(fresh.as_ptr() as usize % 64, 0, "{size} bytes, fresh");
        assert_eq!(zeroed.as_ptr() as usize % 64, 0, "{size} bytes, zeroed");
        assert!(zeroed.iter().all(|&v| v == 0));
        let mut grown: Vec<u8> = (0..100u8).collect();
        grown.reserve_exact(size);
        assert_eq!(grown.as_ptr() as usize % 64, 0, "{size} bytes, grown from 100");
        assert!(
            grown.iter().enumerate().all(|(i, &b)| b == i as u8),
            "growing kept the values"
        );
        held.push((fresh, zeroed, grown));
    }
}

/// `LEXBENCH_HUGE_PAGES=0`: no block is advised (checked in a child process, where the variable is
/// set before the allocator first reads it).
#[test]
#[cfg(target_os = "linux")]
fn the_advice_is_off_with_lexbench_huge_pages_0() {
    if std::env::var_os("HUGE_PAGES_CHILD").is_some() {
        let block = vec![0u8; 16 << 20];
        let piece = first_huge_piece(&block);
        assert!(
            !vm_flags(piece).iter().any(|f| f == "hg"),
            "LEXBENCH_HUGE_PAGES=0, yet the block's mapping is advised: {:?}",
            vm_flags(piece)
        );
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([
            "--exact",
            "the_advice_is_off_with_lexbench_huge_pages_0",
            "--nocapture",
        ])
        .env("HUGE_PAGES_CHILD", "1")
        .env("LEXBENCH_HUGE_PAGES", "0")
        .output()
        .expect("the test binary runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "the child run failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
