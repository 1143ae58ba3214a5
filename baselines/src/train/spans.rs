//! Where the values of a TOML document are: the line a configuration error names (`PATH:LINE:`),
//! found from the spans the toml crate's parser keeps ([`toml::de::DeTable`]).

use std::ops::Range;

use toml::de::{DeTable, DeValue};

/// Every value of a TOML document under its dotted key (tables and arrays too; array items as
/// `key[i]`, a quoted key with dots reads as the nested keys it looks like), with its byte range.
#[derive(Debug, Clone, Default)]
pub(crate) struct ValueSpans {
    text_lines: Vec<usize>,
    values: Vec<(String, Range<usize>)>,
}

impl ValueSpans {
    /// The values of `text`; none when it does not parse.
    pub(crate) fn of(text: &str) -> Self {
        fn walk(key: String, value: &DeValue<'_>, span: Range<usize>, out: &mut Vec<(String, Range<usize>)>) {
            match value {
                DeValue::Table(t) => {
                    for (k, v) in t.iter() {
                        walk(format!("{key}.{}", k.get_ref()), v.get_ref(), v.span(), out);
                    }
                }
                DeValue::Array(a) => {
                    for (i, v) in a.iter().enumerate() {
                        walk(format!("{key}[{i}]"), v.get_ref(), v.span(), out);
                    }
                }
                _ => {}
            }
            out.push((key, span));
        }
        let mut values = Vec::new();
        if let Ok(doc) = DeTable::parse(text) {
            for (k, v) in doc.get_ref().iter() {
                walk(k.get_ref().to_string(), v.get_ref(), v.span(), &mut values);
            }
        }
        let text_lines = text.match_indices('\n').map(|(i, _)| i).collect();
        Self { text_lines, values }
    }

    /// The 1-based line of byte `offset`.
    pub(crate) fn line(&self, offset: usize) -> usize {
        self.text_lines.partition_point(|&nl| nl < offset) + 1
    }

    /// The line of `key`'s value, or of the nearest enclosing value the document has (a defaulted
    /// key: its table); `None` when not even its first part is there.
    pub(crate) fn line_of(&self, key: &str) -> Option<usize> {
        let mut key = key;
        loop {
            if let Some((_, span)) = self.values.iter().find(|(k, _)| k == key) {
                return Some(self.line(span.start));
            }
            key = &key[..key.rfind(['.', '['])?];
        }
    }

    /// The innermost value whose range holds `span` (where a deserialisation error points): its key
    /// and whether the error is about that value as a whole (the same range).
    pub(crate) fn value_at(&self, span: &Range<usize>) -> Option<(&str, bool)> {
        self.values
            .iter()
            .filter(|(_, r)| r.start <= span.start && span.end <= r.end && !r.is_empty())
            .min_by_key(|(_, r)| r.len())
            .map(|(k, r)| (k.as_str(), r == span))
    }
}

#[cfg(test)]
mod tests {
    //! Keys are dotted paths whatever the TOML syntax (headers, inline tables, quoted dotted keys,
    //! arrays); lines are 1-based; a defaulted key falls back to its table; an error span maps to the
    //! innermost value around it.
    use super::*;

    const DOC: &str = "name = \"x\"\nlr_sweep = [1e-5,\n  inf]\n\n[peft]\nlora = { rank = 8, alpha = nan }\n[sweep]\n\"peft.lora.rank\" = [4]\n";

    #[test]
    fn keys_lines_and_spans() {
        let s = ValueSpans::of(DOC);
        assert_eq!(s.line_of("name"), Some(1));
        assert_eq!(s.line_of("lr_sweep[1]"), Some(3));
        assert_eq!(s.line_of("peft.lora.alpha"), Some(6));
        assert_eq!(s.line_of("peft.lora.dropout"), Some(6));
        assert_eq!(s.line_of("sweep.peft.lora.rank[0]"), Some(8));
        assert_eq!(s.line_of("optim.lr"), None);
        let at = DOC.find("nan").expect("nan");
        assert_eq!(s.value_at(&(at..at + 3)), Some(("peft.lora.alpha", true)));
        assert_eq!(s.value_at(&(at..at + 1)), Some(("peft.lora.alpha", false)));
        assert!(ValueSpans::of("a = [").line_of("a").is_none());
    }
}
