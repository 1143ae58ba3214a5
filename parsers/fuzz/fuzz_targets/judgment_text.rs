//! The plain-text judgment entry point (`judgment::parse_text`, one printed paragraph `N. text` or
//! heading per line; invalid UTF-8 replaced, hard-wrapped text joined) on arbitrary bytes.
//! Asserts, when it accepts: at least one paragraph (its contract), main numbers strictly increase,
//! opinions number from 1 (`lexbench_parsers_fuzz::judgment`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(j) = lexbench_parsers::judgment::parse_text(data, "fuzz.txt", None) {
        assert!(!j.paragraphs.is_empty(), "an accepted text judgment has paragraphs");
        lexbench_parsers_fuzz::judgment(&j);
    }
});
