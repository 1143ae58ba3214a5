//! HUDOC DOCX (a zip of WordprocessingML parts) into [`Block`]s: one per `<w:p>` of
//! `word/document.xml`, with its style id (`<w:pStyle w:val="ECHRPara"/>`), whether it holds a `SEQ`
//! field (complex field `<w:instrText> SEQ level0 \*arabic </w:instrText>` or `<w:fldSimple
//! w:instr=" SEQ level0 \*arabic ">`; the cached result, the printed number, is ordinary run text), and
//! whether it sits in a table.
//!
//! Only run text (`<w:t>`) counts; `<w:tab/>` becomes a tab (not inside `<w:tabs>`, the tab stops of a
//! paragraph's properties), `<w:br/>`/`<w:cr/>` a line break, `<w:noBreakHyphen/>` a hyphen. Deleted
//! text (`<w:delText>`), field instructions and the fallback copy of drawings (`<mc:Fallback>`) are
//! skipped. Footnote texts live in another part (`word/footnotes.xml`) and are not paragraph text;
//! the reference marks carry no text either.

use std::io::{Cursor, Read};

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use super::segment::Block;
use crate::{Error, Result};

/// The largest `word/document.xml` accepted (a guard against zip bombs; real judgments are < 5 MB).
const MAX_XML: u64 = 256 * 1024 * 1024;

fn invalid(source: &str, message: impl Into<String>) -> Error {
    Error::Invalid {
        source_name: source.to_string(),
        format: "DOCX",
        message: message.into(),
    }
}

/// Reads `word/document.xml` out of the DOCX bytes.
///
/// # Errors
/// [`Error::Invalid`] when the bytes are not a zip archive, have no `word/document.xml`, or it is not
/// UTF-8.
pub fn document_xml(bytes: &[u8], source: &str) -> Result<String> {
    if !bytes.starts_with(b"PK") {
        return Err(invalid(source, "not a zip archive (no PK signature)"));
    }
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| invalid(source, format!("unreadable zip archive: {e}")))?;
    let file = zip.by_name("word/document.xml").map_err(|e| {
        invalid(
            source,
            format!("no word/document.xml in the archive ({e}): not a Word document"),
        )
    })?;
    let mut raw = Vec::new();
    file.take(MAX_XML + 1)
        .read_to_end(&mut raw)
        .map_err(|e| invalid(source, format!("cannot inflate word/document.xml: {e}")))?;
    if raw.len() as u64 > MAX_XML {
        return Err(invalid(
            source,
            format!("word/document.xml is larger than {MAX_XML} bytes"),
        ));
    }
    String::from_utf8(raw).map_err(|e| {
        invalid(
            source,
            format!(
                "word/document.xml is not UTF-8 (at byte {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// A paragraph being read.
#[derive(Default)]
struct Builder {
    block: Block,
    instr: String,
}

fn attr(e: &BytesStart<'_>, name: &str) -> Option<String> {
    e.try_get_attribute(name)
        .ok()
        .flatten()
        .map(|a| a.value.into_owned())
}

fn is_seq(instr: &str) -> bool {
    instr.split_whitespace().next() == Some("SEQ")
}

/// Parses WordprocessingML into blocks.
///
/// # Errors
/// [`Error::Invalid`] on malformed XML (with the byte offset).
pub fn blocks_from_xml(xml: &str, source: &str) -> Result<Vec<Block>> {
    let mut reader = Reader::from_str(xml);
    let mut stack: Vec<Builder> = Vec::new();
    let mut blocks = Vec::new();
    let (mut tables, mut tabs, mut fallback) = (0usize, 0usize, 0usize);
    let (mut in_t, mut in_instr) = (false, false);
    loop {
        let event = reader.read_event().map_err(|e| {
            invalid(
                source,
                format!(
                    "broken XML in word/document.xml at byte {}: {e}",
                    reader.error_position()
                ),
            )
        })?;
        let text: Option<std::borrow::Cow<'_, str>> = match &event {
            Event::Start(e) | Event::Empty(e) => {
                let empty = matches!(event, Event::Empty(_));
                match e.local_name().as_ref() {
                    "p" if !empty => stack.push(Builder {
                        block: Block {
                            in_table: tables > 0,
                            ..Block::default()
                        },
                        ..Builder::default()
                    }),
                    "tbl" if !empty => tables += 1,
                    "tabs" if !empty => tabs += 1,
                    "Fallback" if !empty => fallback += 1,
                    "t" if !empty => in_t = true,
                    "instrText" if !empty => in_instr = true,
                    "pStyle" => {
                        if let Some(b) = stack.last_mut() {
                            b.block.style = attr(e, "w:val").or_else(|| attr(e, "val"));
                        }
                    }
                    "fldSimple" => {
                        if let Some(b) = stack.last_mut() {
                            let instr = attr(e, "w:instr").unwrap_or_default();
                            b.block.seq |= is_seq(&instr);
                        }
                    }
                    "tab" if tabs == 0 && fallback == 0 => {
                        if let Some(b) = stack.last_mut() {
                            b.block.text.push('\t');
                        }
                    }
                    "br" | "cr" if fallback == 0 => {
                        if let Some(b) = stack.last_mut() {
                            b.block.text.push('\n');
                        }
                    }
                    "noBreakHyphen" if fallback == 0 => {
                        if let Some(b) = stack.last_mut() {
                            b.block.text.push('-');
                        }
                    }
                    _ => {}
                }
                None
            }
            Event::End(e) => {
                match e.local_name().as_ref() {
                    "p" => {
                        if let Some(mut b) = stack.pop() {
                            b.block.seq |= is_seq(&b.instr);
                            blocks.push(b.block);
                        }
                    }
                    "tbl" => tables = tables.saturating_sub(1),
                    "tabs" => tabs = tabs.saturating_sub(1),
                    "Fallback" => fallback = fallback.saturating_sub(1),
                    "t" => in_t = false,
                    "instrText" => {
                        in_instr = false;
                        if let Some(b) = stack.last_mut() {
                            // One field per instrText run is the norm; keep a separator anyway.
                            b.instr.push(' ');
                        }
                    }
                    _ => {}
                }
                None
            }
            Event::Text(t) => Some(t.xml10_content()),
            Event::CData(t) => Some(t.xml10_content()),
            Event::GeneralRef(r) => {
                let c = match r.resolve_char_ref() {
                    Ok(Some(c)) => Some(c),
                    _ => match &**r {
                        "amp" => Some('&'),
                        "lt" => Some('<'),
                        "gt" => Some('>'),
                        "quot" => Some('"'),
                        "apos" => Some('\''),
                        _ => None,
                    },
                };
                c.map(|c| c.to_string().into())
            }
            Event::Eof => break,
            _ => None,
        };
        if let (Some(text), Some(b)) = (text, stack.last_mut()) {
            if fallback > 0 {
                continue;
            }
            if in_t {
                b.block.text.push_str(&text);
            } else if in_instr {
                b.instr.push_str(&text);
            }
        }
    }
    // Paragraphs left open by a truncated document still count.
    while let Some(mut b) = stack.pop() {
        b.block.seq |= is_seq(&b.instr);
        blocks.push(b.block);
    }
    Ok(blocks)
}

/// DOCX bytes into blocks: [`document_xml`] then [`blocks_from_xml`].
///
/// # Errors
/// As those two.
pub fn blocks(bytes: &[u8], source: &str) -> Result<Vec<Block>> {
    blocks_from_xml(&document_xml(bytes, source)?, source)
}
