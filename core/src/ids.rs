//! Typed identifiers, validated when parsed.
//!
//! Every id that crosses a crate boundary is a newtype: an itemid can not be passed where a query id is
//! expected, and a malformed id is rejected where it is read, not three stages later. All ids serialise
//! as plain strings (JSON, TREC columns) and order the same way their strings do, except
//! [`ParagraphId`], which orders by item and then numerically by paragraph number.

use std::fmt;
use std::str::FromStr;

use compact_str::CompactString;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, Result};

/// Is `s` usable as a single whitespace-separated column of a TREC file? Control characters (a NUL
/// byte, an escape) are refused too: no real id holds one, trec_eval would cut the id at a NUL, and
/// reports would print them. So is U+FEFF (a byte-order mark, or a zero-width no-break space): at the
/// start of a file's first line a reader takes it for a byte-order mark and drops it, so an id holding
/// it would not survive being written and read back (found by the `trec_run` fuzz target).
fn is_token(s: &str) -> bool {
    if s.is_ascii() {
        // ASCII whitespace and control characters are exactly the bytes ≤ 0x20 and 0x7f.
        return !s.is_empty() && s.bytes().all(|b| b > b' ' && b != 0x7f);
    }
    // Other Unicode spaces (U+00A0, U+2003, …) are part of an id, as trec_eval reads them: its
    // columns are separated by spaces and tabs only, and so are ours ([`crate::trec`]).
    !s.is_empty()
        && !s
            .chars()
            .any(|c| c.is_ascii_whitespace() || c.is_control() || c == '\u{feff}')
}

fn invalid(kind: &'static str, value: &str, reason: &'static str) -> Error {
    Error::InvalidId {
        kind,
        value: value.to_owned(),
        reason,
    }
}

/// The longest dataset, split or system name, in bytes.
pub const MAX_NAME_LEN: usize = 64;

/// Checks a name that becomes one folder or file name under the data directory: a dataset
/// (`DATA/datasets/<name>`), a split (`qrels/<split>.tsv`) or a system (`runs/…/<system>.trec`).
///
/// A name is 1 to [`MAX_NAME_LEN`] ASCII letters, digits, `-`, `_` and `.`, starting with a letter
/// or digit: never empty, never a path (`/`, `\`), never `.`, `..` or a hidden name, so that no name
/// can reach outside its folder or replace a sibling (`--name ""` would otherwise be
/// `DATA/datasets` itself). `kind` says which name it is in the error ("dataset name").
pub fn check_name<'a>(kind: &'static str, value: &'a str) -> Result<&'a str> {
    let reason = if value.is_empty() {
        Some("it is empty")
    } else if value.len() > MAX_NAME_LEN {
        Some("it is longer than 64 bytes")
    } else if value.contains(['/', '\\']) {
        Some("it is a path; give a name (letters, digits, '-', '_', '.')")
    } else if !value.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        Some("it must start with a letter or digit")
    } else if !value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        Some("only ASCII letters, digits, '-', '_' and '.' are allowed")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(invalid(kind, value, reason)),
        None => Ok(value),
    }
}

/// Implements `new`, `as_str`, `Display`, `FromStr`, `Borrow<str>`, `AsRef<str>` and string serde
/// for a newtype with a `fn validate(&str) -> Result<()>`: over a `String` (`string_id!(Name)`) or,
/// for the ids that runs hold by the million, over a [`CompactString`] (`string_id!(Name, compact)`:
/// ids of up to 24 bytes are stored inline, so creating, cloning and dropping one allocates nothing).
macro_rules! string_id {
    ($name:ident) => {
        impl $name {
            /// Validates and wraps `s`.
            pub fn new(s: impl Into<String>) -> Result<Self> {
                let s = s.into();
                Self::validate(&s)?;
                Ok(Self(s))
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Self::new(s).map_err(serde::de::Error::custom)
            }
        }

        string_id!(@common $name);
    };
    ($name:ident, compact) => {
        impl $name {
            /// Validates and wraps `s` (copied: inline when it is at most 24 bytes long).
            pub fn new(s: impl AsRef<str>) -> Result<Self> {
                let s = s.as_ref();
                Self::validate(s)?;
                Ok(Self(CompactString::new(s)))
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                struct Visit;
                impl serde::de::Visitor<'_> for Visit {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("a string")
                    }
                    // Borrowed or transient, the text is copied once, without a `String` between.
                    fn visit_str<E: serde::de::Error>(self, s: &str) -> std::result::Result<$name, E> {
                        $name::new(s).map_err(E::custom)
                    }
                }
                d.deserialize_str(Visit)
            }
        }

        string_id!(@common $name);
    };
    (@common $name:ident) => {
        impl $name {
            /// The id as it is written in files.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl FromStr for $name {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self> {
                Self::new(s)
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }
    };
}

/// A HUDOC document id such as `001-175180`: a three-digit collection prefix (`001` = English
/// judgments and decisions), a hyphen, and the document number (1 to 7 digits; older items such as
/// `001-57574` have five).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ItemId(String);

impl ItemId {
    fn validate(s: &str) -> Result<()> {
        let Some((prefix, number)) = s.split_once('-') else {
            return Err(invalid("itemid", s, "expected NNN-NNNNNN (e.g. 001-175180)"));
        };
        let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
        if prefix.len() != 3 || !digits(prefix) {
            return Err(invalid("itemid", s, "the prefix must be three digits"));
        }
        if number.is_empty() || number.len() > 7 || !digits(number) {
            return Err(invalid("itemid", s, "the document number must be 1 to 7 digits"));
        }
        Ok(())
    }
}
string_id!(ItemId);

/// A case-law guide id as the Court names its PDFs, normalised to lower case: `guide_art_1_eng`,
/// `guide_terrorism_eng`. (The Court's own spelling varies in case, `Guide_Art_8_ENG`; [`GuideId::new`]
/// folds it.)
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GuideId(String);

impl GuideId {
    fn validate(s: &str) -> Result<()> {
        if s.is_empty() {
            return Err(invalid("guide id", s, "empty"));
        }
        if !s
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        {
            return Err(invalid(
                "guide id",
                s,
                "only lower-case ASCII letters, digits, '_' and '-' are allowed",
            ));
        }
        Ok(())
    }

    /// Folds the Court's varying case (`Guide_Art_8_ENG`) before validating.
    pub fn normalised(s: &str) -> Result<Self> {
        Self::new(s.trim().to_ascii_lowercase())
    }
}
string_id!(GuideId);

/// A query id: one whitespace-free token (it is a column of TREC files).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QueryId(String);

impl QueryId {
    fn validate(s: &str) -> Result<()> {
        if is_token(s) {
            Ok(())
        } else {
            Err(invalid(
                "query id",
                s,
                "must be a non-empty token without whitespace or control characters",
            ))
        }
    }
}
string_id!(QueryId);

/// A topic: the unit a run ranks documents for and qrels judge. For BSARD a topic is a question; for
/// ECtHR it is a query–judgment pair, because each topic ranks the paragraphs of one judgment (written
/// `{query}/{itemid}`, see [`TopicId::pair`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicId(String);

impl TopicId {
    fn validate(s: &str) -> Result<()> {
        if is_token(s) {
            Ok(())
        } else {
            Err(invalid(
                "topic id",
                s,
                "must be a non-empty token without whitespace or control characters",
            ))
        }
    }

    /// The topic of a query over a whole corpus (BSARD).
    pub fn query(q: &QueryId) -> Self {
        Self(q.0.clone())
    }

    /// The topic of a query restricted to one judgment's paragraphs (ECtHR): `{query}/{itemid}`.
    pub fn pair(q: &QueryId, item: &ItemId) -> Self {
        Self(format!("{q}/{item}"))
    }
}
string_id!(TopicId);

/// A retrievable unit's id as it appears in runs and qrels: a paragraph (`001-175180:127`), an
/// article (`1234`), or any other whitespace-free token. Ids of up to 24 bytes (every paragraph and
/// article id) are held inline: a run of a million hits allocates nothing for them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DocId(CompactString);

impl DocId {
    fn validate(s: &str) -> Result<()> {
        if is_token(s) {
            Ok(())
        } else {
            Err(invalid(
                "doc id",
                s,
                "must be a non-empty token without whitespace or control characters",
            ))
        }
    }
}
string_id!(DocId, compact);

/// A paragraph of a judgment: the judgment's itemid and the paragraph's printed number (`§ 127`).
/// Written `001-175180:127`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ParagraphId {
    /// The judgment.
    pub item: ItemId,
    /// The printed paragraph number, from 1.
    pub num: u32,
}

impl ParagraphId {
    /// The paragraph `num` of `item`.
    pub fn new(item: ItemId, num: u32) -> Self {
        Self { item, num }
    }

    /// This paragraph as a run/qrels document id.
    pub fn doc_id(&self) -> DocId {
        use std::fmt::Write;
        let mut s = CompactString::default();
        write!(s, "{self}").expect("writing to a string cannot fail");
        DocId(s)
    }
}

impl fmt::Display for ParagraphId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.item, self.num)
    }
}

impl FromStr for ParagraphId {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let (item, num) = s
            .split_once(':')
            .ok_or_else(|| invalid("paragraph id", s, "expected ITEMID:NUM (e.g. 001-175180:127)"))?;
        let num: u32 = num.parse().map_err(|_| {
            invalid(
                "paragraph id",
                s,
                "the paragraph number is not a positive integer",
            )
        })?;
        if num == 0 {
            return Err(invalid("paragraph id", s, "paragraph numbers start at 1"));
        }
        Ok(Self {
            item: item.parse()?,
            num,
        })
    }
}

impl TryFrom<&DocId> for ParagraphId {
    type Error = Error;
    fn try_from(d: &DocId) -> Result<Self> {
        d.as_str().parse()
    }
}

impl Serialize for ParagraphId {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ParagraphId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A statutory article (BSARD): the dataset's article id, a whitespace-free token (BSARD uses integers).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ArticleId(String);

impl ArticleId {
    fn validate(s: &str) -> Result<()> {
        if is_token(s) {
            Ok(())
        } else {
            Err(invalid(
                "article id",
                s,
                "must be a non-empty token without whitespace or control characters",
            ))
        }
    }

    /// This article as a run/qrels document id.
    pub fn doc_id(&self) -> DocId {
        DocId(CompactString::new(&self.0))
    }
}
string_id!(ArticleId);

#[cfg(test)]
mod tests {
    //! Properties: ids accept exactly their documented shapes, and round-trip through strings and JSON.
    use super::*;

    #[test]
    fn item_ids() {
        assert!(ItemId::new("001-175180").is_ok());
        assert!(ItemId::new("001-57574").is_ok());
        for bad in [
            "",
            "001",
            "001-",
            "01-175180",
            "001-17518x",
            "001-12345678",
            " 001-1",
        ] {
            assert!(ItemId::new(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn tokens_hold_no_whitespace_or_control_character() {
        assert!(DocId::new("001-175180:3").is_ok());
        assert!(TopicId::new("q/001-1").is_ok());
        for bad in ["", "a b", "a\tb", "a\0b", "a\u{1b}b", "a\u{85}b"] {
            assert!(DocId::new(bad).is_err(), "{bad:?} accepted");
            assert!(TopicId::new(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn guide_ids_fold_case() {
        assert_eq!(
            GuideId::normalised("Guide_Art_8_ENG").unwrap().as_str(),
            "guide_art_8_eng"
        );
        assert!(GuideId::new("Guide_Art_8_ENG").is_err());
    }

    #[test]
    fn paragraph_ids_round_trip() {
        let p: ParagraphId = "001-175180:127".parse().unwrap();
        assert_eq!(p.num, 127);
        assert_eq!(p.to_string(), "001-175180:127");
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(json, "\"001-175180:127\"");
        assert_eq!(serde_json::from_str::<ParagraphId>(&json).unwrap(), p);
        for bad in ["001-175180", "001-175180:0", "001-175180:x", "x:1"] {
            assert!(bad.parse::<ParagraphId>().is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn paragraph_ids_order_numerically() {
        let a: ParagraphId = "001-1:9".parse().unwrap();
        let b: ParagraphId = "001-1:10".parse().unwrap();
        assert!(a < b);
    }

    #[test]
    fn names_are_single_safe_components() {
        for good in [
            "ecthr",
            "ecthr-release",
            "unseen_query",
            "bm25",
            "e5-small.v2",
            "0a",
        ] {
            assert_eq!(check_name("dataset name", good).unwrap(), good);
        }
        let long = "a".repeat(MAX_NAME_LEN + 1);
        for bad in [
            "",
            ".",
            "..",
            "../raw",
            "/abs/path",
            "a/b",
            "a\\b",
            ".hidden",
            "-x",
            "a b",
            "é",
            "a\u{202e}b",
            long.as_str(),
        ] {
            let err = check_name("dataset name", bad).unwrap_err();
            assert!(
                err.to_string().starts_with("invalid dataset name"),
                "{bad:?}: {err}"
            );
        }
    }

    #[test]
    fn topic_pairs() {
        let q = QueryId::new("art1-q3").unwrap();
        let i = ItemId::new("001-175180").unwrap();
        assert_eq!(TopicId::pair(&q, &i).as_str(), "art1-q3/001-175180");
        assert!(TopicId::new("a b").is_err());
        assert!(serde_json::from_str::<TopicId>("\"\"").is_err());
    }
}
