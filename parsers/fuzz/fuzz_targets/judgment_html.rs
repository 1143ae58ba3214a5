//! The HTML entry point on arbitrary bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = lexbench_parsers::judgment::parse_html(data, "fuzz.html", None);
});
