//! Invariants the parser fuzz targets assert on whatever a parser accepts (the targets themselves
//! are in `fuzz_targets/`). An `Err` is always an acceptable answer to hostile bytes; a panic, an
//! abort, a hang or an accepted record that breaks one of these is a bug.
//!
//! - [`judgment`]: the main judgment's numbers strictly increase, every opinion numbers from 1;
//! - [`guide`]: one detail and one text per query, the same number of citations in both, each
//!   citation's offsets inside its heading's text on character boundaries;
//! - [`citations`]: offsets in order, on character boundaries, paragraphs in
//!   1..=[`citation::MAX_PARAGRAPH`], and the slice they delimit is the citation's raw string (up to surrounding whitespace; whitespace runs collapsed for
//!   [`citation::extract_text`], which maps offsets back to the uncollapsed text).

use lexbench_core::records::Judgment;
use lexbench_parsers::guide::ParsedGuide;
use lexbench_parsers::guide::citation::{self, Found};

/// Checks an accepted judgment (any format).
pub fn judgment(j: &Judgment) {
    assert!(
        j.paragraphs.windows(2).all(|w| w[0].num < w[1].num),
        "main paragraph numbers must strictly increase"
    );
    for o in &j.opinions {
        assert!(
            o.paragraphs.first().is_none_or(|p| p.num == 1),
            "opinion {:?} must number from 1",
            o.title
        );
    }
}

/// Checks an accepted guide (text or PDF).
pub fn guide(g: &ParsedGuide) {
    assert_eq!(g.queries.len(), g.details.len(), "one detail per query");
    assert_eq!(g.queries.len(), g.texts.len(), "one text per query");
    for ((q, d), text) in g.queries.iter().zip(&g.details).zip(&g.texts) {
        assert_eq!(q.id, d.query);
        assert_eq!(q.citations.len(), d.citations.len(), "{}", q.id);
        for (c, cd) in q.citations.iter().zip(&d.citations) {
            let slice = text.get(cd.start..cd.end);
            assert!(slice.is_some(), "{}: {}..{} outside its text", q.id, cd.start, cd.end);
            assert_eq!(slice.map(str::trim), Some(c.raw.trim()), "{}", q.id);
        }
    }
}

fn collapsed(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Checks the citations [`citation::extract`] found in `text`.
pub fn citations(text: &str, found: &[Found]) {
    assert!(found.windows(2).all(|w| w[0].start <= w[1].start), "text order");
    for f in found {
        let slice = text.get(f.start..f.end);
        assert!(slice.is_some(), "{}..{} not a slice of the text", f.start, f.end);
        assert_eq!(slice.map(str::trim), Some(f.citation.raw.trim()));
        // Numbers are read whole and bounded (issue 29): never a cut or invented paragraph.
        assert!(
            f.citation
                .paragraphs
                .iter()
                .all(|p| (1..=citation::MAX_PARAGRAPH).contains(p)),
            "{:?}",
            f.citation.paragraphs
        );
        assert!(!f.unreadable_pinpoint || f.citation.paragraphs.is_empty());
    }
}

/// Checks [`citation::extract_text`] on `text`: offsets in the text as given, lines from 1.
pub fn located(text: &str) {
    for l in citation::extract_text(text) {
        let f = &l.found;
        let slice = text.get(f.start..f.end);
        assert!(slice.is_some(), "{}..{} not a slice of the text", f.start, f.end);
        assert_eq!(slice.map(collapsed), Some(collapsed(&f.citation.raw)));
        assert_eq!(l.line, 1 + text[..f.start].matches('\n').count());
    }
}

/// Checks [`citation::paragraph_list`]: it consumes a prefix of its input, on a character boundary.
pub fn paragraph_list(s: &str) {
    let (_, used) = citation::paragraph_list(s);
    assert!(s.is_char_boundary(used), "{used} bytes of {}", s.len());
}
