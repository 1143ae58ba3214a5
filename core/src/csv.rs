//! CSV as RFC 4180 writes it, the one reader of every CSV file lexbench takes in (BSARD's articles and
//! questions, HUDOC's metadata tables, the guide-page tables of the fixtures).
//!
//! - Fields are separated by `,` and records by a line break (`\n` or `\r\n`).
//! - A field that starts with `"` is quoted: inside it, `""` is one `"`, and commas and line breaks
//!   are text (a line break inside quotes is kept as written).
//! - A `"` inside an unquoted field, or text after a quoted field's closing quote, is kept as text
//!   (files in the wild do this; RFC 4180 does not say what it means).
//! - A leading byte-order mark is removed ([`crate::text`]); a quote that is never closed is an error
//!   naming the file and the line the quoted field starts on ([`LineError::UnterminatedQuote`]).
//!
//! Each [`Record`] carries the line it starts on, so a caller's error about a record names its line
//! even after a multi-line field. A blank line is a record with one empty field.
//!
//! ```
//! use std::path::Path;
//! let rows = lexbench_core::csv::parse("id,text\r\n1,\"a, \"\"b\"\"\nc\"\r\n2,d\r\n", Path::new("x.csv"))?;
//! assert_eq!(rows[1].fields, ["1", "a, \"b\"\nc"]);
//! assert_eq!((rows[2].line, rows[2].fields.len()), (4, 2));
//! # Ok::<(), lexbench_core::Error>(())
//! ```

use std::path::Path;

use crate::error::{Error, LineError, Result};

/// One CSV record and the 1-based line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The line of the file the record starts on.
    pub line: usize,
    /// Its fields, unquoted.
    pub fields: Vec<String>,
}

/// Reads the CSV file at `path` ([`crate::text::read_text`], then [`parse`]).
pub fn read(path: &Path) -> Result<Vec<Record>> {
    let text = crate::text::read_text(path)?;
    parse(&text, path)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// At the start of a field.
    FieldStart,
    /// In an unquoted field.
    Unquoted,
    /// In a quoted field.
    Quoted,
    /// After a quoted field's closing quote.
    Closed,
}

/// Parses CSV text read from `path` (named in errors only) into records.
pub fn parse(text: &str, path: &Path) -> Result<Vec<Record>> {
    let text = crate::text::strip_bom(text, path);
    let mut records = Vec::new();
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut state = State::FieldStart;
    // `line`: the current line; `start`: where the current record began; `quote`: where the open
    // quoted field began; `any`: the current record has at least one character.
    let (mut line, mut start, mut quote) = (1, 1, 1);
    let mut any = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        any = true;
        if state == State::Quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    field.push('"');
                    chars.next();
                }
                '"' => state = State::Closed,
                '\n' => {
                    line += 1;
                    field.push(c);
                }
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' if state == State::FieldStart => {
                state = State::Quoted;
                quote = line;
            }
            ',' => {
                fields.push(std::mem::take(&mut field));
                state = State::FieldStart;
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                fields.push(std::mem::take(&mut field));
                records.push(Record {
                    line: start,
                    fields: std::mem::take(&mut fields),
                });
                line += 1;
                start = line;
                state = State::FieldStart;
                any = false;
            }
            _ => {
                field.push(c);
                state = State::Unquoted;
            }
        }
    }
    if state == State::Quoted {
        return Err(Error::Line {
            path: path.to_owned(),
            line: quote,
            error: LineError::UnterminatedQuote,
        });
    }
    if any {
        fields.push(field);
        records.push(Record { line: start, fields });
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    //! Properties (RFC 4180 and what real files add): doubled quotes, separators and line breaks
    //! inside quotes, CRLF, a byte-order mark, empty fields and blank lines, lenient stray quotes,
    //! the starting line of every record, and an unterminated quote reported at the line it opens.
    use super::*;

    fn rows(text: &str) -> Vec<(usize, Vec<String>)> {
        parse(text, Path::new("t.csv"))
            .unwrap()
            .into_iter()
            .map(|r| (r.line, r.fields))
            .collect()
    }

    fn v(fields: &[&str]) -> Vec<String> {
        fields.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn quoting_rules() {
        assert_eq!(
            rows("a,b\n\"x, y\",\"he said \"\"hi\"\"\"\n\"multi\nline\",z\n"),
            vec![
                (1, v(&["a", "b"])),
                (2, v(&["x, y", "he said \"hi\""])),
                (3, v(&["multi\nline", "z"])),
            ]
        );
        // Empty quoted field, a field that is one quote, empty fields.
        assert_eq!(rows("\"\",\"\"\"\",,\n"), vec![(1, v(&["", "\"", "", ""]))]);
        // Stray quotes are text.
        assert_eq!(rows("ab\"c,\"d\"e\n"), vec![(1, v(&["ab\"c", "de"]))]);
    }

    #[test]
    fn crlf_bom_blank_lines_and_no_final_newline() {
        assert_eq!(
            rows("\u{feff}id,t\r\n1,\"a\r\nb\"\r\n\r\n2,c"),
            vec![
                (1, v(&["id", "t"])),
                (2, v(&["1", "a\r\nb"])),
                (4, v(&[""])),
                (5, v(&["2", "c"])),
            ]
        );
        // A carriage return not before a line feed is text.
        assert_eq!(rows("a\rb\n"), vec![(1, v(&["a\rb"]))]);
        assert!(rows("").is_empty());
    }

    #[test]
    fn unterminated_quote_names_file_and_line() {
        let err = parse("a,b\n1,2\n3,\"open\nstill open\n", Path::new("q.csv")).unwrap_err();
        assert_eq!(
            err.line_error(),
            Some((3, &LineError::UnterminatedQuote)),
            "{err}"
        );
        assert!(err.to_string().starts_with("q.csv:3: "), "{err}");
    }
}
