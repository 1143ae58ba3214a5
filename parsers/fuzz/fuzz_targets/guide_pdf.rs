//! The guide parser on PDF bytes (`guide::parse_pdf`: lopdf's outline, pdf-extract's page texts,
//! then the text pipeline). Asserts, when it accepts, what `guide_text` asserts
//! (`lexbench_parsers_fuzz::guide`).
//!
//! pdf-extract has known `unwrap` panics, which `guide::pdf::read` catches (`catch_unwind`) and
//! turns into an error naming the file: that is the documented behaviour, not a crash. libfuzzer-sys
//! installs a panic hook that aborts at once, before any `catch_unwind` runs, so this target
//! replaces it with one that only records the message; a panic that escapes the parser (anything
//! outside that `catch_unwind`, e.g. lopdf's outline reader or the guide pipeline) is printed and
//! aborts, which the fuzzer reports as a crash.
#![no_main]

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};

use lexbench_core::ids::GuideId;
use libfuzzer_sys::fuzz_target;

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

fuzz_target!(
    init: {
        std::panic::set_hook(Box::new(|info| {
            let msg = info.to_string();
            LAST_PANIC.with(|p| *p.borrow_mut() = Some(msg));
        }));
    },
    |data: &[u8]| {
        let id = GuideId::new("guide_fuzz_eng").expect("valid id");
        let parsed = catch_unwind(AssertUnwindSafe(|| {
            lexbench_parsers::guide::parse_pdf("fuzz.pdf", id, data)
        }));
        match parsed {
            Ok(Ok(g)) => lexbench_parsers_fuzz::guide(&g),
            Ok(Err(_)) => {}
            Err(_) => {
                let msg = LAST_PANIC.with(|p| p.borrow_mut().take()).unwrap_or_default();
                eprintln!("panic escaped guide::parse_pdf: {msg}");
                std::process::abort();
            }
        }
    }
);
