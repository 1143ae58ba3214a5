//! Inputs found by the fuzz targets in `core/fuzz` (`scripts/fuzz`), kept as regression tests, the
//! (minimised) input embedded as bytes.
//!
//! Properties checked:
//! - `byte_lines` (2026-11-25, smoke run): a file starting with two byte-order marks loses exactly
//!   one, as the `text` module documents ("a U+FEFF anywhere else is left alone"): line 1 is
//!   `"\u{feff}"`, and `ByteLines` and `Lines` agree on every line. The fuzz target first assumed
//!   no BOM could be left on line 1; the reader was right, the target's invariant was corrected.
//! - `trec_run` (2026-11-25, 30-minute run): a topic id starting with U+FEFF on a later line was
//!   accepted, and the run written back began with it, so reading that file dropped it as a byte-order
//!   mark (the topic changed). Ids may not hold U+FEFF: the line is refused, naming file and line.

#[path = "../src/testing/scratch.rs"]
mod scratch;

use lexbench_core::text::{BOM, ByteLines, Lines};

#[test]
fn a_second_leading_bom_is_text() {
    // crash-621f8dee25e4b7c1af7889561cdc8a6179b7472d without its first byte (0xff: no line cap).
    let bytes: &[u8] = b"\xef\xbb\xbf\xef\xbb\xbf\n\xef\xbb\xbf\n\xef\xbb\xbfd\n";
    let got: Vec<(usize, String)> = ByteLines::new(bytes, None, true)
        .map(|(n, l)| (n, l.expect("UTF-8").to_owned()))
        .collect();
    let want: Vec<(usize, String)> = vec![(1, BOM.to_string()), (2, BOM.to_string()), (3, format!("{BOM}d"))];
    assert_eq!(got, want);

    let dir = scratch::scratch_root().join(format!("lexbench-fuzz-regressions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("two-boms.txt");
    std::fs::write(&p, bytes).unwrap();
    let mut r = Lines::open(&p, None).unwrap();
    let mut from_file = Vec::new();
    while let Some((n, l)) = r.next_line().unwrap() {
        from_file.push((n, l.expect("UTF-8").to_owned()));
    }
    assert_eq!(from_file, want);
}

#[test]
fn an_id_holding_a_byte_order_mark_is_refused() {
    use lexbench_core::trec::{ReadOptions, Run};
    // crash-2f33cca58f3155b72582561df362ac129e784691: a blank line, a line of spaces, then a run line
    // whose topic starts with U+FEFF.
    let bytes: &[u8] =
        b"\n  \t\n\xef\xbb\xbf001-176768 Q0 001-157018:45 1 12.345678 m000.00001 bm20 \x0c\n\x0c\n\x0c\n\x0c";
    let dir = scratch::scratch_root().join(format!("lexbench-fuzz-bom-id-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("run.trec");
    std::fs::write(&p, bytes).unwrap();
    let opts = ReadOptions {
        extra_run_fields: true,
        ..ReadOptions::default()
    };
    let err = Run::read(&p, &opts).unwrap_err().to_string();
    assert!(err.contains("run.trec:3"), "{err}");
    assert!(lexbench_core::TopicId::new("\u{feff}x").is_err());
    assert!(lexbench_core::DocId::new("a\u{feff}").is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}
