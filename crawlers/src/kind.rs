//! What a fetched body was asked to be, and the check that it is: a `text/html` login page or a
//! gzip-compressed file answered with `200` under a CSV's URL is refused, not stored under the CSV's
//! name (issue 29).
//!
//! The checks use what the site says (`Content-Type`, `Content-Encoding`) where it says it, and what
//! the body's first bytes are: `%PDF-` for a PDF, `PK\x03\x04` for a DOCX (a zip), `{` or `[` for
//! JSON, and, for text, no markup start, no gzip magic (`1f 8b`), no NUL. The client negotiates no
//! compression (no `Accept-Encoding`), so any `Content-Encoding` other than `identity`, or a body
//! starting with gzip's magic, is an answer that was not asked for.

/// The kind of body a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// Anything (no check).
    Any,
    /// A CSV file (BSARD's files): text, not markup, not compressed.
    Csv,
    /// A PDF (guides, Justel): `%PDF-` within the first 1,024 bytes, where readers look for it.
    Pdf,
    /// A DOCX (HUDOC's conversion endpoint): a zip. A body that is neither a zip nor recognisably
    /// something else (HTML, PDF, gzip) is kept; the judgment parser then reports it, naming the
    /// itemid.
    Docx,
    /// An HTML body (HUDOC's HTML conversion): not a zip, PDF or gzip stream.
    Html,
    /// A JSON document (HUDOC's search pages): starts with `{` or `[`.
    Json,
}

/// Media types a CSV mirror may send (generic binary types included: many file hosts send them).
const CSV_TYPES: &[&str] = &[
    "text/csv",
    "text/plain",
    "application/csv",
    "text/comma-separated-values",
    "text/x-csv",
    "application/x-csv",
    "application/vnd.ms-excel",
    "application/octet-stream",
    "binary/octet-stream",
];

/// The media type of a `Content-Type` value, lowercased, without parameters.
fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// The body after a UTF-8 byte-order mark and leading ASCII whitespace.
fn start(body: &[u8]) -> &[u8] {
    let b = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let skip = b.iter().take_while(|c| c.is_ascii_whitespace()).count();
    &b[skip..]
}

/// Does the body start like an HTML (or XML) document?
pub fn looks_like_html(body: &[u8]) -> bool {
    let s = start(body);
    let head = s[..s.len().min(16)].to_ascii_lowercase();
    [
        &b"<!doctype"[..],
        b"<html",
        b"<head",
        b"<body",
        b"<!--",
        b"<?xml",
        b"<script",
        b"<title",
        b"<meta",
    ]
    .iter()
    .any(|p| head.starts_with(p))
}

fn preview(body: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(&body[..body.len().min(24)]))
}

impl BodyKind {
    fn what(self) -> &'static str {
        match self {
            BodyKind::Any => "a body",
            BodyKind::Csv => "a CSV",
            BodyKind::Pdf => "a PDF",
            BodyKind::Docx => "a DOCX",
            BodyKind::Html => "an HTML page",
            BodyKind::Json => "JSON",
        }
    }

    /// Checks a non-empty body against the kind asked for.
    ///
    /// # Errors
    /// Why the body is not what was asked for (`not a CSV (text/html): it starts with "<!DOCTYPE
    /// html>…"`), to be reported as a failed fetch.
    pub fn check(
        self,
        content_type: Option<&str>,
        content_encoding: Option<&str>,
        body: &[u8],
    ) -> Result<(), String> {
        if self == BodyKind::Any {
            return Ok(());
        }
        let what = self.what();
        let ct = content_type.map(media_type);
        let shown = ct.as_deref().unwrap_or("no content type");
        let not = |why: String| Err(format!("not {what} ({shown}): {why}"));
        if let Some(enc) = content_encoding.map(str::trim)
            && !enc.is_empty()
            && !enc.eq_ignore_ascii_case("identity")
        {
            return not(format!(
                "the body is encoded (Content-Encoding {enc}), which the crawler did not ask for"
            ));
        }
        if body.starts_with(&[0x1f, 0x8b]) {
            return not("a gzip-compressed body (magic 1f 8b) that was not asked for".into());
        }
        let is_zip = body.starts_with(b"PK\x03\x04");
        let is_pdf = body[..body.len().min(1024)].windows(5).any(|w| w == b"%PDF-");
        match self {
            BodyKind::Any => Ok(()),
            BodyKind::Pdf if is_pdf => Ok(()),
            BodyKind::Pdf => not(format!("it starts with {}", preview(body))),
            BodyKind::Csv => {
                if let Some(t) = &ct
                    && !CSV_TYPES.contains(&t.as_str())
                {
                    return not(format!("the site says {t}, not text/csv"));
                }
                if start(body).starts_with(b"<") || is_zip || body.starts_with(b"%PDF-") {
                    return not(format!("it starts with {}", preview(body)));
                }
                if body[..body.len().min(8192)].contains(&0) {
                    return not("it holds NUL bytes: binary, not text".into());
                }
                Ok(())
            }
            BodyKind::Docx => {
                if is_zip {
                    return Ok(());
                }
                let markup = ct
                    .as_deref()
                    .is_some_and(|t| matches!(t, "text/html" | "application/xhtml+xml" | "application/json"));
                if markup || looks_like_html(body) || body.starts_with(b"%PDF-") {
                    return not(format!("it starts with {}", preview(body)));
                }
                Ok(())
            }
            BodyKind::Html => {
                if is_zip || body.starts_with(b"%PDF-") {
                    return not(format!("it starts with {}", preview(body)));
                }
                Ok(())
            }
            BodyKind::Json => {
                if matches!(start(body).first(), Some(b'{' | b'[')) {
                    Ok(())
                } else {
                    not(format!("it starts with {}", preview(body)))
                }
            }
        }
    }

    /// The kind a file name asks for, by its extension (`.csv`, `.pdf`, `.json`, `.docx`); [`Any`]
    /// otherwise.
    ///
    /// [`Any`]: BodyKind::Any
    pub fn of_file_name(name: &str) -> Self {
        let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
        match ext.as_deref() {
            Some("csv") => BodyKind::Csv,
            Some("pdf") => BodyKind::Pdf,
            Some("json") => BodyKind::Json,
            Some("docx") => BodyKind::Docx,
            _ => BodyKind::Any,
        }
    }
}

#[cfg(test)]
mod tests {
    //! Properties: each kind accepts its own bodies (with the content types sites send) and refuses
    //! HTML pages, gzip streams (by magic or by an unasked `Content-Encoding`) and the other kinds'
    //! magic numbers, saying what it got.
    use super::*;

    #[test]
    fn bodies_are_what_was_asked_for() {
        use BodyKind::*;
        let csv = b"id,article\n1,x\n";
        let html = b"\n  <!DOCTYPE html><html><body>Sign in</body></html>";
        let gz = b"\x1f\x8b\x08\x00\x00\x00\x00\x00";
        let zip = b"PK\x03\x04\x14\x00";
        let pdf = b"%PDF-1.7\n%\xe2\xe3";
        let ok = [
            (Csv, Some("text/csv; charset=utf-8"), None, &csv[..]),
            (Csv, Some("text/plain"), Some("identity"), csv),
            (Csv, Some("application/octet-stream"), None, csv),
            (Csv, None, None, b"\xEF\xBB\xBFid,a\n"),
            (Pdf, Some("application/octet-stream"), None, pdf),
            (Pdf, None, None, b"\r\n%PDF-1.4"),
            (
                Docx,
                Some("application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
                None,
                zip,
            ),
            (Docx, None, None, b"docx body"),
            (Html, Some("text/html"), None, html),
            (Json, Some("application/json"), None, b" {\"resultcount\": 0}"),
            (Any, Some("text/html"), Some("br"), gz),
        ];
        for (kind, ct, enc, body) in ok {
            assert_eq!(kind.check(ct, enc, body), Ok(()), "{kind:?} {ct:?} {body:?}");
        }
        let refused = [
            (
                Csv,
                Some("text/html; charset=utf-8"),
                None,
                &html[..],
                "not a CSV (text/html): the site says text/html",
            ),
            (
                Csv,
                None,
                None,
                html,
                "not a CSV (no content type): it starts with",
            ),
            (
                Csv,
                Some("text/csv"),
                None,
                gz,
                "gzip-compressed body (magic 1f 8b)",
            ),
            (Csv, Some("text/csv"), Some("gzip"), csv, "Content-Encoding gzip"),
            (
                Csv,
                Some("application/gzip"),
                None,
                gz,
                "not a CSV (application/gzip)",
            ),
            (Csv, None, None, zip, "it starts with"),
            (Csv, None, None, pdf, "it starts with"),
            (Csv, None, None, b"id\0x", "NUL bytes"),
            (
                Pdf,
                Some("text/html"),
                None,
                html,
                "not a PDF (text/html): it starts with",
            ),
            (
                Pdf,
                Some("application/pdf"),
                None,
                gz,
                "not a PDF (application/pdf): a gzip",
            ),
            (
                Docx,
                Some("text/html"),
                None,
                b"Just a moment",
                "not a DOCX (text/html)",
            ),
            (Docx, None, None, html, "not a DOCX"),
            (Docx, None, None, gz, "not a DOCX"),
            (Html, None, None, pdf, "not an HTML page"),
            (Json, Some("text/html"), None, html, "not JSON (text/html)"),
        ];
        for (kind, ct, enc, body, needle) in refused {
            let e = kind.check(ct, enc, body).expect_err(needle);
            assert!(e.contains(needle), "{e}");
        }
        assert_eq!(BodyKind::of_file_name("articles_fr.CSV"), Csv);
        assert_eq!(BodyKind::of_file_name("README"), Any);
    }
}
