//! The pinpoint-citation reader (`guide::citation`) on arbitrary text (invalid UTF-8 replaced):
//! `extract` on the text as given and on its whitespace-collapsed form (what the guide parser hands
//! it), `extract_text` (collapses, then maps offsets back), and `paragraph_list` on the text after
//! the first `§`. Asserts: citations in text order, offsets on character boundaries delimiting the
//! raw string, lines counted from 1 (`lexbench_parsers_fuzz::{citations, located,
//! paragraph_list}`).
#![no_main]

use lexbench_parsers::guide::citation;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    lexbench_parsers_fuzz::citations(&text, &citation::extract(&text));
    let squashed = lexbench_parsers::guide::text::squash(&text);
    lexbench_parsers_fuzz::citations(&squashed, &citation::extract(&squashed));
    lexbench_parsers_fuzz::located(&text);
    let after = text.find('§').map_or(&text[..], |i| &text[i + '§'.len_utf8()..]);
    lexbench_parsers_fuzz::paragraph_list(after.trim_start());
});
