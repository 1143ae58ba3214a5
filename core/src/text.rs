//! Text input: how every reader of a user file turns bytes into text.
//!
//! Files come from editors, spreadsheets and other tools, so three things are settled once, here, for
//! every format lexbench reads (TREC runs and qrels, JSON Lines, CSV, JSON, TOML, guide text):
//! - **A leading byte-order mark** (U+FEFF, which Windows editors and "CSV UTF-8" exports write) is
//!   not text: it is removed, with a warning naming the file, so it never becomes part of the first
//!   topic id, column name or key (`\u{feff}t1` would silently be another topic). A U+FEFF anywhere
//!   else is left alone.
//! - **Bytes that are not UTF-8** are an error naming the file and the line
//!   ([`LineError::NotUtf8`]), never a bare "stream did not contain valid UTF-8".
//! - **Over-long lines**: a line reader may cap a line's length ([`Lines::open`]); a longer line is
//!   reported at its line ([`LineError::LineTooLong`]) and skipped without being held in memory, so
//!   a 200 MB "line" costs no more than a short one.
//!
//! [`read_text`] reads a whole file, [`read_text_at_most`] one whose size is bounded, and [`Lines`]
//! reads line by line.
//!
//! ```
//! # let dir = std::env::temp_dir().join(format!("lexbench-text-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir).unwrap();
//! let p = dir.join("bom.txt");
//! std::fs::write(&p, "\u{feff}t1 0 d1 1\n")?;
//! assert_eq!(lexbench_core::text::read_text(&p)?, "t1 0 d1 1\n");
//!
//! std::fs::write(&p, b"ok\ncaf\xe9\n")?;
//! let err = lexbench_core::text::read_text(&p).unwrap_err();
//! assert_eq!(err.line_error().map(|(line, _)| line), Some(2));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::error::{Error, LineError, Result};
use crate::io::open_reader;

/// The byte-order mark, as a character.
pub const BOM: char = '\u{feff}';
const BOM_BYTES: &[u8] = "\u{feff}".as_bytes();

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_owned(),
        source,
    }
}

pub(crate) fn warn_bom(path: &Path) {
    tracing::warn!(
        "{}: ignoring the UTF-8 byte-order mark at the start of the file",
        path.display()
    );
}

/// The most characters of a value an error message echoes ([`shown`]).
pub const SHOWN_CHARS: usize = 40;

/// A value as an error message echoes it: quoted as `{:?}` does, and when it is longer than
/// [`SHOWN_CHARS`] characters, its first ones, `…` and its length, so that a 10,000-character id
/// costs one line of the message, not a screenful (`"001-1111…" (10000 characters)`).
///
/// ```
/// use lexbench_core::text::shown;
/// assert_eq!(shown("001-57574"), r#""001-57574""#);
/// let long = "x".repeat(50);
/// assert_eq!(shown(&long), format!("\"{}…\" (50 characters)", "x".repeat(40)));
/// ```
pub fn shown(value: &str) -> String {
    let count = value.chars().count();
    if count <= SHOWN_CHARS {
        return format!("{value:?}");
    }
    let head: String = value.chars().take(SHOWN_CHARS).collect();
    let quoted = format!("{head:?}");
    format!("{}…\" ({count} characters)", &quoted[..quoted.len() - 1])
}

/// Removes a leading byte-order mark from `text`, read from `path` (named in the warning).
pub fn strip_bom<'a>(text: &'a str, path: &Path) -> &'a str {
    match text.strip_prefix(BOM) {
        Some(rest) => {
            warn_bom(path);
            rest
        }
        None => text,
    }
}

/// The text of `bytes`, read from `path`: UTF-8 checked (the error names the line and the byte), a
/// leading byte-order mark removed.
pub fn text_from_bytes(bytes: Vec<u8>, path: &Path) -> Result<String> {
    let mut text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let before = &e.as_bytes()[..at];
        let line_start = before.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        Error::Line {
            path: path.to_owned(),
            line: before.iter().filter(|b| **b == b'\n').count() + 1,
            error: LineError::NotUtf8 {
                byte: at - line_start + 1,
            },
        }
    })?;
    if text.starts_with(BOM) {
        warn_bom(path);
        text.drain(..BOM.len_utf8());
    }
    Ok(text)
}

/// The largest file [`read_text`] reads whole: 256 MiB. It reads the project's JSON files
/// (manifests, splits, graphs, sidecars), CSV and TOML; the largest of them, a BSARD-size corpus in
/// CSV, is about 30 MB.
pub const MAX_TEXT_BYTES: usize = 256 << 20;

/// Reads a whole text file ([`text_from_bytes`]) of at most [`MAX_TEXT_BYTES`] (a larger one is
/// [`Error::TooLarge`]).
pub fn read_text(path: &Path) -> Result<String> {
    read_text_at_most(path, MAX_TEXT_BYTES)
}

/// [`Error::TooLarge`] when the file system says `path` holds more than `max_bytes` bytes; nothing
/// when it does not say (a pipe) or cannot be asked (the reader that opens it reports that).
pub fn check_size(path: &Path, max_bytes: usize) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.len() > max_bytes as u64 => Err(Error::TooLarge {
            path: path.to_owned(),
            max_bytes,
        }),
        _ => Ok(()),
    }
}

/// Reads a whole text file of at most `max_bytes` bytes ([`text_from_bytes`]); a larger file is
/// [`Error::TooLarge`], found without reading more than `max_bytes + 1` bytes of it.
pub fn read_text_at_most(path: &Path, max_bytes: usize) -> Result<String> {
    text_from_bytes(read_bytes_at_most(path, max_bytes)?, path)
}

/// Reads a whole file of at most `max_bytes` bytes. A larger file is [`Error::TooLarge`]: found from
/// its size before reading when the file system tells it, and otherwise (a pipe, a file growing while
/// it is read) after reading at most `max_bytes + 1` bytes, so memory stays bounded either way.
pub fn read_bytes_at_most(path: &Path, max_bytes: usize) -> Result<Vec<u8>> {
    let file = File::open(path).map_err(io_err(path))?;
    let too_large = || Error::TooLarge {
        path: path.to_owned(),
        max_bytes,
    };
    let known = file.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
    if known.is_some_and(|len| len > max_bytes as u64) {
        return Err(too_large());
    }
    // The size the file system gave (capped), so that the usual read needs no reallocation.
    let mut bytes = Vec::with_capacity(known.map_or(0, |len| len as usize + 1));
    file.take(max_bytes as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err(path))?;
    if bytes.len() > max_bytes {
        return Err(too_large());
    }
    Ok(bytes)
}

/// [`read_bytes_at_most`] for a line-oriented file: a file whose size the file system does not give
/// (a pipe, a device such as `/dev/zero` or `/dev/urandom`) is checked line by line while it is read,
/// so a line that is over `max_line` bytes or not UTF-8 stops the read at once with
/// [`Error::Line`] naming it, instead of after `max_bytes` of input. A regular file is read whole
/// (its lines are checked by the caller's parser).
pub fn read_line_bytes_at_most(path: &Path, max_bytes: usize, max_line: usize) -> Result<Vec<u8>> {
    let mut file = File::open(path).map_err(io_err(path))?;
    if file.metadata().is_ok_and(|m| m.is_file()) {
        drop(file);
        return read_bytes_at_most(path, max_bytes);
    }
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    let (mut checked, mut lines) = (0usize, 0usize);
    loop {
        let n = match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err(path)(e)),
        };
        bytes.extend_from_slice(&chunk[..n]);
        if bytes.len() > max_bytes {
            return Err(Error::TooLarge {
                path: path.to_owned(),
                max_bytes,
            });
        }
        let at = |line: usize, error: LineError| Error::Line {
            path: path.to_owned(),
            line,
            error,
        };
        if let Some(end) = memchr::memrchr(b'\n', &bytes[checked..]).map(|i| checked + i + 1) {
            let mut last = 0;
            for (n, line) in ByteLines::new(&bytes[checked..end], Some(max_line), checked == 0) {
                line.map_err(|e| at(lines + n, e))?;
                last = n;
            }
            lines += last;
            checked = end;
        }
        if bytes.len() - checked > max_line + 2 {
            return Err(at(lines + 1, LineError::LineTooLong { max: max_line }));
        }
    }
    Ok(bytes)
}

/// Whether `c` is a default-ignorable code point (Unicode's `Default_Ignorable_Code_Point`,
/// DerivedCoreProperties.txt, Unicode 15.1): characters that render as nothing where a font has no
/// glyph for them — the soft hyphen, zero-width spaces and joiners, bidirectional marks, variation
/// selectors, the Hangul fillers, tags. Two texts that differ only in them look the same.
pub fn is_default_ignorable(c: char) -> bool {
    matches!(
        c as u32,
        0x00AD
            | 0x034F
            | 0x061C
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF0..=0xFFF8
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}

/// `text` without its default-ignorable code points ([`is_default_ignorable`]).
pub fn without_ignorables(text: &str) -> String {
    text.chars().filter(|c| !is_default_ignorable(*c)).collect()
}

/// `n` bytes for a message: `64 MiB`, `16 KiB`, `1 GiB` when exact, the byte count otherwise.
pub fn human_bytes(n: usize) -> String {
    for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
            return format!("{} {unit}", n >> shift);
        }
    }
    format!("{n} bytes")
}

/// A text file read line by line, for the line-oriented formats (TREC, JSON Lines).
///
/// Each line comes without its terminator (`\n` or `\r\n`), the first without a byte-order mark. A
/// line that is not UTF-8 or is longer than the cap is handed back as a [`LineError`] for that line,
/// and reading can go on with the next one: a reader that stops at the first problem turns it into
/// [`Error::Line`], a validator collects them.
#[derive(Debug)]
pub struct Lines {
    reader: BufReader<File>,
    path: PathBuf,
    buf: Vec<u8>,
    line_no: usize,
    max_len: Option<usize>,
    /// The rest of an over-long line is still to be skipped (done at the next call, so that a reader
    /// that stops at the error never reads on: `/dev/zero` as a file is one endless line).
    skip_pending: bool,
    /// Bytes read so far, and the most that may be read ([`Lines::at_most`]).
    consumed: u64,
    max_total: Option<u64>,
}

impl Lines {
    /// Opens `path`; `max_len` caps a line's length in bytes (terminator excluded).
    pub fn open(path: &Path, max_len: Option<usize>) -> Result<Self> {
        Ok(Self {
            reader: open_reader(path)?,
            path: path.to_owned(),
            buf: Vec::new(),
            line_no: 0,
            max_len,
            skip_pending: false,
            consumed: 0,
            max_total: None,
        })
    }

    /// Reads at most `max_bytes` of the file: past that, [`Error::TooLarge`]. For files whose size is
    /// not known beforehand (a pipe, a device), where [`check_size`] can not help.
    pub fn at_most(mut self, max_bytes: usize) -> Self {
        self.max_total = Some(max_bytes as u64);
        self
    }

    /// What may still be read before the cap (one byte more, to notice the excess).
    fn budget(&self) -> u64 {
        self.max_total
            .map_or(u64::MAX, |m| (m + 1).saturating_sub(self.consumed))
    }

    fn over_budget(&self) -> Result<()> {
        match self.max_total {
            Some(m) if self.consumed > m => Err(Error::TooLarge {
                path: self.path.clone(),
                max_bytes: m as usize,
            }),
            _ => Ok(()),
        }
    }

    /// The file being read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The next line: `None` at the end of the file, else its 1-based number and its text or what is
    /// wrong with it. I/O errors are `Err`.
    pub fn next_line(&mut self) -> Result<Option<(usize, Result<&str, LineError>)>> {
        self.buf.clear();
        if self.skip_pending {
            // The rest of the previous, over-long line, skipped unread.
            self.skip_pending = false;
            let budget = self.budget();
            let n = (&mut self.reader)
                .take(budget)
                .skip_until(b'\n')
                .map_err(io_err(&self.path))?;
            self.consumed += n as u64;
            self.over_budget()?;
        }
        // Two bytes beyond the cap: room for a "\r\n" after a line of exactly `max` bytes.
        let limit = self.max_len.map_or(u64::MAX, |m| m as u64 + 2).min(self.budget());
        let n = (&mut self.reader)
            .take(limit)
            .read_until(b'\n', &mut self.buf)
            .map_err(io_err(&self.path))?;
        self.consumed += n as u64;
        self.over_budget()?;
        if n == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        let complete = self.buf.last() == Some(&b'\n');
        if complete {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
        }
        if let Some(max) = self.max_len
            && self.buf.len() > max
        {
            if !complete {
                // The rest of the line is skipped unread by the next call, which starts on the
                // next line; a reader that stops here reads no further.
                self.skip_pending = true;
            }
            return Ok(Some((self.line_no, Err(LineError::LineTooLong { max }))));
        }
        let mut shift = 0;
        if self.line_no == 1 && self.buf.starts_with(BOM_BYTES) {
            warn_bom(&self.path);
            shift = BOM_BYTES.len();
        }
        let line = match std::str::from_utf8(&self.buf[shift..]) {
            Ok(s) => Ok(s),
            Err(e) => Err(LineError::NotUtf8 {
                byte: shift + e.valid_up_to() + 1,
            }),
        };
        Ok(Some((self.line_no, line)))
    }
}

/// The lines of a buffer already in memory, by exactly [`Lines`]' rules (terminator `\n` or
/// `\r\n` removed, the cap counted without it, UTF-8 checked per line, a byte-order mark removed from
/// the first line when `first_of_file`). Line numbers count from 1 in the buffer: a caller that
/// splits a file into chunks (at line ends) adds the lines of the chunks before.
#[derive(Debug, Clone)]
pub struct ByteLines<'a> {
    rest: &'a [u8],
    line_no: usize,
    max_len: Option<usize>,
    first_of_file: bool,
}

impl<'a> ByteLines<'a> {
    /// The lines of `bytes`; `max_len` caps a line's length in bytes (terminator excluded).
    pub fn new(bytes: &'a [u8], max_len: Option<usize>, first_of_file: bool) -> Self {
        Self {
            rest: bytes,
            line_no: 0,
            max_len,
            first_of_file,
        }
    }

    /// True when `bytes` starts with a byte-order mark (the caller warns, naming the file).
    pub fn has_bom(bytes: &[u8]) -> bool {
        bytes.starts_with(BOM_BYTES)
    }
}

impl<'a> Iterator for ByteLines<'a> {
    type Item = (usize, Result<&'a str, LineError>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        self.line_no += 1;
        let (mut line, complete) = match memchr::memchr(b'\n', self.rest) {
            Some(i) => {
                let line = &self.rest[..i];
                self.rest = &self.rest[i + 1..];
                (line, true)
            }
            None => (std::mem::take(&mut self.rest), false),
        };
        if complete && let Some(l) = line.strip_suffix(b"\r") {
            line = l;
        }
        if let Some(max) = self.max_len
            && line.len() > max
        {
            return Some((self.line_no, Err(LineError::LineTooLong { max })));
        }
        let mut shift = 0;
        if self.line_no == 1 && self.first_of_file && line.starts_with(BOM_BYTES) {
            shift = BOM_BYTES.len();
        }
        let text = match std::str::from_utf8(&line[shift..]) {
            Ok(s) => Ok(s),
            Err(e) => Err(LineError::NotUtf8 {
                byte: shift + e.valid_up_to() + 1,
            }),
        };
        Some((self.line_no, text))
    }
}

/// Splits `bytes` into at most `parts` consecutive chunks of about equal size, each ending just after
/// a `\n` (the last at the end of the buffer), for parsing a line-oriented file on several cores.
pub fn split_at_lines(bytes: &[u8], parts: usize) -> Vec<&[u8]> {
    let mut out = Vec::with_capacity(parts.max(1));
    let mut rest = bytes;
    for left in (1..=parts.max(1)).rev() {
        if rest.is_empty() {
            break;
        }
        if left == 1 {
            out.push(rest);
            break;
        }
        let target = rest.len() / left;
        let end = match memchr::memchr(b'\n', &rest[target..]) {
            Some(i) => target + i + 1,
            None => rest.len(),
        };
        let (chunk, tail) = rest.split_at(end);
        out.push(chunk);
        rest = tail;
    }
    out
}

#[cfg(test)]
mod tests {
    //! Properties: the cap counts the line's bytes without its terminator and skips exactly the
    //! over-long line; invalid UTF-8 is located by line and byte; a BOM is removed from the first
    //! line only.
    use super::*;

    fn lines(name: &str, bytes: &[u8], max: Option<usize>) -> Vec<(usize, Result<String, LineError>)> {
        let dir = crate::testing::scratch_root().join(format!("lexbench-core-text-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        let mut r = Lines::open(&p, max).unwrap();
        let mut out = Vec::new();
        while let Some((n, l)) = r.next_line().unwrap() {
            out.push((n, l.map(str::to_owned)));
        }
        out
    }

    #[test]
    fn the_cap_excludes_the_terminator_and_skips_only_the_long_line() {
        let got = lines("cap", b"abcd\r\nabcde\nab\nabcdefghij\nz", Some(4));
        assert_eq!(
            got,
            vec![
                (1, Ok("abcd".into())),
                (2, Err(LineError::LineTooLong { max: 4 })),
                (3, Ok("ab".into())),
                (4, Err(LineError::LineTooLong { max: 4 })),
                (5, Ok("z".into())),
            ]
        );
        // The last line, unterminated and too long.
        assert_eq!(
            lines("cap-end", b"ab\nabcdefgh", Some(4))[1],
            (2, Err(LineError::LineTooLong { max: 4 }))
        );
    }

    /// [`ByteLines`] over a whole file, and over any split of it at line ends (line numbers
    /// offset by the chunks before), gives what [`Lines`] gives.
    #[test]
    fn byte_lines_equal_lines_whole_and_split() {
        let cases: [(&[u8], Option<usize>); 5] = [
            (b"abcd\r\nabcde\nab\nabcdefghij\nz", Some(4)),
            (b"ab\nabcdefgh", Some(4)),
            (b"\xef\xbb\xbfa\xef\xbb\xbf\nb\xffc\n\xef\xbb\xbfd\n", None),
            (b"\n\n x \r\n\r\r\nlast\r", Some(3)),
            (b"\xef\xbb\xbfabc\nd", Some(4)),
        ];
        for (i, (bytes, max)) in cases.into_iter().enumerate() {
            let want = lines(&format!("bl{i}"), bytes, max);
            let whole: Vec<_> = ByteLines::new(bytes, max, true)
                .map(|(n, l)| (n, l.map(str::to_owned)))
                .collect();
            assert_eq!(whole, want, "case {i}");
            for parts in 1..=4 {
                let mut got = Vec::new();
                let mut offset = 0;
                for (c, chunk) in split_at_lines(bytes, parts).into_iter().enumerate() {
                    let mut last = 0;
                    for (n, l) in ByteLines::new(chunk, max, c == 0) {
                        got.push((offset + n, l.map(str::to_owned)));
                        last = n;
                    }
                    offset += last;
                }
                assert_eq!(got, want, "case {i}, {parts} parts");
            }
        }
        assert!(split_at_lines(b"", 3).is_empty());
        assert_eq!(split_at_lines(b"a\nb\nc\n", 2), vec![&b"a\nb\n"[..], &b"c\n"[..]]);
    }

    #[test]
    fn invalid_utf8_and_bom_are_located() {
        let got = lines(
            "utf8",
            b"\xef\xbb\xbfa\xef\xbb\xbf\nb\xffc\n\xef\xbb\xbfd\n",
            None,
        );
        assert_eq!(
            got,
            vec![
                (1, Ok("a\u{feff}".into())),
                (2, Err(LineError::NotUtf8 { byte: 2 })),
                (3, Ok("\u{feff}d".into())),
            ]
        );
        let dir = std::env::temp_dir();
        let err = text_from_bytes(b"one\ntw\xc3".to_vec(), &dir.join("x.txt")).unwrap_err();
        assert_eq!(
            err.line_error(),
            Some((2, &LineError::NotUtf8 { byte: 3 })),
            "{err}"
        );
    }
}
