//! Plain-text judgments into [`Block`]s: one block per non-empty line.
//!
//! The texts this reads (HUDOC judgments as a text extractor or a corpus gives them) print one
//! paragraph per line (`12. The applicant …`), headings on lines of their own (`THE LAW`,
//! `A. Alleged violation …`), quotations on their own lines after the paragraph that introduces them,
//! and the separate opinions after the operative provisions. Nothing else is kept of the original
//! formatting: no styles, no `SEQ` fields, no classes, so the segmenter decides from the text alone,
//! exactly as it does for an unstyled DOCX or for HTML.
//!
//! Rules: the text is UTF-8; a leading byte-order mark is dropped
//! ([`lexbench_core::text::strip_bom`]); lines end with `\n` or `\r\n` (a lone `\r` is white space
//! inside the line); a line holding only white space is no block. Invalid UTF-8 is replaced (the
//! caller warns, naming the first line concerned) rather than refused: one mis-encoded character
//! should not cost a judgment.
//!
//! **Hard-wrapped text.** Old HUDOC texts are wrapped at about 70 characters, so one paragraph spans
//! many lines and a line `2. ten days …` of a quoted list looks as much like a paragraph as the
//! judgment's own. A text is taken as hard-wrapped when it has at least [`WRAPPED_MIN_LINES`] lines
//! and none longer than [`WRAPPED_MAX_WIDTH`] characters (a judgment printed a paragraph per line
//! always has longer ones); its lines are then joined back into paragraphs: a line continues the
//! block before it unless that block's last line was short (ended its paragraph: more than
//! [`WRAPPED_SLACK`] characters below the widest line), or the line starts a paragraph itself (a
//! number `N.`, an indent, or capitals only, as headings are). [`TextBlocks::wrapped_at`] reports the
//! width, and the caller warns.

use std::path::Path;

use super::segment::{Block, normalize, upper_ratio};

/// A text with fewer lines is never taken as hard-wrapped.
pub const WRAPPED_MIN_LINES: usize = 40;
/// A hard-wrapped text has no line longer than this (characters).
pub const WRAPPED_MAX_WIDTH: usize = 100;
/// A line of a hard-wrapped text shorter than the widest line by more than this ends its paragraph.
pub const WRAPPED_SLACK: usize = 15;

/// What the reader found: the blocks, and the first line (from 1) holding bytes that are not UTF-8.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextBlocks {
    /// One block per non-empty line, in order.
    pub blocks: Vec<Block>,
    /// The first line with invalid UTF-8 (replaced by U+FFFD), if any.
    pub invalid_utf8_line: Option<usize>,
    /// The width the text is hard-wrapped at, when it is (its lines were joined into paragraphs).
    pub wrapped_at: Option<usize>,
}

/// Whether `line` starts a block of its own in a hard-wrapped text: `N.`, an indent, or capitals.
fn starts_block(line: &str) -> bool {
    let norm = normalize(line);
    let numbered = norm
        .split_once(". ")
        .is_some_and(|(n, _)| !n.is_empty() && n.len() <= 3 && n.bytes().all(|b| b.is_ascii_digit()));
    numbered || line.starts_with(char::is_whitespace) || upper_ratio(&norm) >= 0.8
}

/// Text bytes into blocks (see the module documentation). `source` names the document in the
/// byte-order-mark log line.
pub fn blocks(bytes: &[u8], source: &str) -> TextBlocks {
    let invalid_utf8_line = std::str::from_utf8(bytes)
        .err()
        .map(|e| bytes[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count() + 1);
    let text = String::from_utf8_lossy(bytes);
    let text = lexbench_core::text::strip_bom(&text, Path::new(source));
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.trim_end_matches(['\u{feff}', ' ', '\t', '\r']))
        .filter(|l| !l.trim().is_empty())
        .collect();
    let width = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let wrapped_at = (lines.len() >= WRAPPED_MIN_LINES && width <= WRAPPED_MAX_WIDTH).then_some(width);
    let mut blocks: Vec<Block> = Vec::with_capacity(lines.len());
    let mut last_full = false;
    for l in lines {
        match blocks.last_mut() {
            Some(b) if wrapped_at.is_some() && last_full && !starts_block(l) => {
                b.text.push(' ');
                b.text.push_str(l.trim_start());
            }
            _ => blocks.push(Block {
                text: l.to_string(),
                ..Block::default()
            }),
        }
        last_full = l.chars().count() + WRAPPED_SLACK >= width;
    }
    TextBlocks {
        blocks,
        invalid_utf8_line,
        wrapped_at,
    }
}

#[cfg(test)]
mod tests {
    //! Properties: one block per non-empty line, whatever the line ends; a byte-order mark is not
    //! text; invalid UTF-8 is replaced and its line reported; a hard-wrapped text's lines are joined
    //! back into paragraphs.
    use super::*;

    fn texts(t: &TextBlocks) -> Vec<&str> {
        t.blocks.iter().map(|b| b.text.as_str()).collect()
    }

    #[test]
    fn one_block_per_non_empty_line() {
        let t = blocks(b"\xef\xbb\xbfPROCEDURE\r\n\r\n1. One.\r\n  \n2. Two.", "t");
        assert_eq!(texts(&t), ["PROCEDURE", "1. One.", "2. Two."]);
        assert_eq!(t.invalid_utf8_line, None);
        assert!(t.blocks.iter().all(|b| b.style.is_none() && !b.seq));
    }

    #[test]
    fn invalid_utf8_is_replaced_and_its_line_reported() {
        let t = blocks(b"THE LAW\n1. Caf\xe9.\n", "t");
        assert_eq!(texts(&t), ["THE LAW", "1. Caf\u{fffd}."]);
        assert_eq!(t.invalid_utf8_line, Some(2));
    }

    #[test]
    fn hard_wrapped_lines_are_joined_into_paragraphs() {
        let mut text = String::from("PROCEDURE\n");
        for n in 1..=20 {
            text.push_str(&format!(
                "{n}. The case was referred to the Court by the European\nCommission on 13 April 1994, within the three-month period\nlaid down.\n"
            ));
        }
        text.push_str(" 1. five days where the fine and the sums whose payment\nis ordered do not exceed 3,000 francs;\n");
        let t = blocks(text.as_bytes(), "t");
        assert_eq!(t.wrapped_at, Some(58));
        assert_eq!(t.blocks.len(), 22);
        assert_eq!(
            t.blocks[1].text,
            "1. The case was referred to the Court by the European Commission on 13 April 1994, within the three-month period laid down."
        );
        assert_eq!(
            t.blocks[21].text,
            " 1. five days where the fine and the sums whose payment is ordered do not exceed 3,000 francs;"
        );
        // Short texts and texts with long lines are read a line per block.
        assert_eq!(
            blocks(b"1. The case was referred\nto the Court.\n", "t")
                .blocks
                .len(),
            2
        );
    }
}
