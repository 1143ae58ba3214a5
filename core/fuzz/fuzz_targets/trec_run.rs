//! The run reader (`Run::read_with_notes`) on arbitrary file contents, strict (the default, as for a
//! leaderboard submission) and with `extra_run_fields` (as `lexbench eval` and trec_eval read).
//!
//! Asserts, for a run read successfully:
//! - it has hits, every score finite, no document twice within a topic, a tag of at most
//!   `MAX_TAG_BYTES` bytes without whitespace;
//! - strict acceptance implies lenient acceptance of the same run with no extra-field lines; a
//!   lenient read that saw no extra field equals the strict read;
//! - `Run::write` then `Run::read` gives the same hits in trec_eval order.
#![no_main]

use std::collections::HashSet;

use lexbench_core::trec::{MAX_TAG_BYTES, ReadOptions, Run};
use libfuzzer_sys::fuzz_target;

fn check(run: &Run) {
    assert!(!run.is_empty(), "an accepted run has hits");
    assert!(run.tag.len() <= MAX_TAG_BYTES && !run.tag.chars().any(char::is_whitespace));
    for (topic, hits) in &run.topics {
        let mut seen = HashSet::new();
        for h in hits {
            assert!(h.score.is_finite(), "{topic} {}: score {}", h.doc, h.score);
            assert!(seen.insert(&h.doc), "{topic}: {} twice", h.doc);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let path = lexbench_core_fuzz::write("run.trec", data);
    let strict = Run::read_with_notes(&path, &ReadOptions::default());
    let lenient = Run::read_with_notes(
        &path,
        &ReadOptions {
            extra_run_fields: true,
            ..ReadOptions::default()
        },
    );
    if let Ok((run, notes)) = &strict {
        check(run);
        assert_eq!(notes.lines_with_extra_fields, 0);
        let Ok((l, ln)) = &lenient else {
            panic!("strict read accepted, lenient read refused: {lenient:?}");
        };
        assert_eq!(l, run);
        assert_eq!(ln.lines_with_extra_fields, 0);
    }
    if let Ok((run, notes)) = &lenient {
        check(run);
        assert_eq!(notes.lines_with_extra_fields == 0, notes.first_line_with_extra_fields.is_none());
        if notes.lines_with_extra_fields == 0 {
            assert!(strict.is_ok(), "lenient read saw no extra field, strict read refused: {strict:?}");
        }
        let mut sorted = run.clone();
        sorted.sort();
        let out = lexbench_core_fuzz::scratch("written.trec");
        sorted.write(&out).expect("an accepted run can be written");
        let mut back = Run::read(&out, &ReadOptions::default()).expect("a written run reads back");
        back.sort();
        assert_eq!(back.topics, sorted.topics, "write → read round trip");
    }
});
