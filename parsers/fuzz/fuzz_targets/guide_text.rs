//! The guide parser on extracted text (`guide::parse_text`: pages separated by form feeds → running
//! headers removed → table of contents → headings located in the body → queries → citations), the
//! input taken as UTF-8 with invalid bytes replaced. Asserts, when it accepts: one detail and one
//! text per query, citation offsets inside the heading's text and delimiting the citation's raw
//! string (`lexbench_parsers_fuzz::guide`).
#![no_main]

use lexbench_core::ids::GuideId;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let id = GuideId::new("guide_fuzz_eng").expect("valid id");
    if let Ok(g) = lexbench_parsers::guide::parse_text("fuzz.txt", id, &text) {
        lexbench_parsers_fuzz::guide(&g);
    }
});
