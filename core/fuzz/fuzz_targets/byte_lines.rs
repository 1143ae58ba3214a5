//! The in-memory line splitter under the run reader (`text::ByteLines`) on arbitrary bytes. The
//! first byte picks the line cap (`0xff`: none, else that many bytes), the rest is the file.
//!
//! Asserts:
//! - line numbers are 1, 2, 3, … (strictly increasing, no gap); there is one line per `\n` plus an
//!   unterminated last one;
//! - a line handed back as text contains no `\n` and fits the cap; line 1 starts with a byte-order
//!   mark only when the file starts with two (exactly one is removed, `text` module docs);
//! - it gives exactly what the file reader `text::Lines` gives on the same bytes (their documented
//!   contract), and the same again over `text::split_at_lines` chunks of the buffer, 2 to 4 of
//!   them, with line numbers offset by the chunks before (how the run reader uses it).
#![no_main]

use lexbench_core::LineError;
use lexbench_core::text::{BOM, ByteLines, Lines, split_at_lines};
use libfuzzer_sys::fuzz_target;

type Line = (usize, Result<String, LineError>);

fuzz_target!(|data: &[u8]| {
    let Some((&first, bytes)) = data.split_first() else { return };
    let cap = (first != 0xff).then_some(usize::from(first));

    let whole: Vec<Line> = ByteLines::new(bytes, cap, true)
        .map(|(n, l)| (n, l.map(str::to_owned)))
        .collect();
    let newlines = bytes.iter().filter(|&&b| b == b'\n').count();
    let want_lines = newlines + usize::from(!bytes.is_empty() && bytes.last() != Some(&b'\n'));
    assert_eq!(whole.len(), want_lines, "one line per terminator plus an unterminated last one");
    for (i, (n, line)) in whole.iter().enumerate() {
        assert_eq!(*n, i + 1, "line numbers count from 1 without gaps");
        if let Ok(text) = line {
            assert!(!text.contains('\n'));
            assert!(cap.is_none_or(|c| text.len() <= c), "line {n} longer than the cap");
            let two_boms = bytes.starts_with("\u{feff}\u{feff}".as_bytes());
            assert!(*n != 1 || !text.starts_with(BOM) || two_boms, "BOM left on line 1");
        }
    }

    let path = lexbench_core_fuzz::write("lines.txt", bytes);
    let mut reader = Lines::open(&path, cap).expect("open the scratch file");
    let mut from_file: Vec<Line> = Vec::new();
    while let Some((n, l)) = reader.next_line().expect("read the scratch file") {
        from_file.push((n, l.map(str::to_owned)));
    }
    assert_eq!(whole, from_file, "ByteLines and Lines disagree");

    for parts in 2..=4 {
        let mut got: Vec<Line> = Vec::new();
        let mut offset = 0;
        for (c, chunk) in split_at_lines(bytes, parts).into_iter().enumerate() {
            let mut last = 0;
            for (n, l) in ByteLines::new(chunk, cap, c == 0) {
                got.push((offset + n, l.map(str::to_owned)));
                last = n;
            }
            offset += last;
        }
        assert_eq!(got, whole, "{parts} chunks");
    }
});
