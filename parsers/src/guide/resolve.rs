//! Citations to HUDOC itemids. (Resolution proper follows below.)

use serde::Serialize;

/// The outcome of resolving one citation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// resolved / ambiguous / unresolved.
    pub status: String,
}

/// Reads RFC 4180 CSV (quoted fields with `""` escapes and embedded newlines) into records.
pub fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        any = true;
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    field.push('"');
                    chars.next();
                } else {
                    quoted = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            '"' => quoted = true,
            ',' => record.push(std::mem::take(&mut field)),
            '\r' => {}
            '\n' => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
                any = false;
            }
            _ => field.push(c),
        }
    }
    if any {
        record.push(field);
        records.push(record);
    }
    records
}
