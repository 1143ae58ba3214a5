//! Query–judgment pairs: the unit the ECtHR settings split, and where each relevance label came from.

use std::collections::BTreeSet;

use lexbench_core::records::ReadKind;
use lexbench_core::{GuideId, ItemId, QueryId, Resolution, TopicId};
use serde::{Deserialize, Serialize};

/// Where one relevant paragraph's label came from: one line of `audit.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QrelSource {
    /// The topic.
    pub topic: TopicId,
    /// The relevant paragraph's number.
    pub paragraph: u32,
    /// The guide the citation is in.
    pub guide: GuideId,
    /// The heading path the citation is under.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<String>,
    /// The citation as printed.
    pub raw: String,
    /// Its byte span in the heading's text, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<[usize; 2]>,
    /// How the citation was resolved to the judgment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub how: Option<Resolution>,
    /// How the paragraph was tied to the case in the guide's text (not written when `direct`).
    #[serde(default, skip_serializing_if = "ReadKind::is_direct")]
    pub read: ReadKind,
    /// The judgment.
    pub item: ItemId,
    /// sha256 of the judgment's source object in the raw store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judgment_sha256: Option<String>,
    /// sha256 of the guide's source object in the raw store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guide_sha256: Option<String>,
    /// For a pair imported from the published release: `file:line`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_row: Option<String>,
}

/// A query–judgment pair: a topic of the ECtHR dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    /// The query.
    pub query: QueryId,
    /// The query text systems see.
    pub text: String,
    /// The guide the query comes from.
    pub guide: GuideId,
    /// The judgment whose paragraphs are ranked.
    pub item: ItemId,
    /// The relevant paragraphs' printed numbers.
    pub relevant: BTreeSet<u32>,
    /// One source per (relevant paragraph, citation).
    pub sources: Vec<QrelSource>,
}

impl Pair {
    /// The pair's topic id (`{query}/{itemid}`).
    pub fn topic(&self) -> TopicId {
        TopicId::pair(&self.query, &self.item)
    }
}

/// Whitespace collapsed and case folded: two query texts that are equal after this are the same query
/// for the leak certificate.
pub fn fold(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// A text as the BSARD leak check compares it beside its NFC form ([`crate::bsard::check_disjoint`]):
/// without its default-ignorable code points (zero-width spaces and joiners, bidirectional marks,
/// variation selectors: [`lexbench_core::text::is_default_ignorable`], which render as nothing), NFKC (compatibility forms such as full-width letters, ligatures and no-break spaces become their
/// plain letters and spaces), case-folded (lower case, with `ß` as `ss` and a final `ς` as `σ`, as
/// Unicode's full case folding has them), NFKC again, and white space collapsed. Two questions
/// equal after this are the same question written another way.
pub fn fold_unicode(text: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let folded: String = text
        .chars()
        .filter(|c| !lexbench_core::text::is_default_ignorable(*c))
        .nfkc()
        .flat_map(|c| {
            let lower: Vec<char> = match c {
                'ß' | 'ẞ' => vec!['s', 's'],
                'ς' => vec!['σ'],
                c => c.to_lowercase().collect(),
            };
            lower
        })
        .nfkc()
        .collect();
    folded.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` in Unicode normalisation form C (a letter and its combining accent composed into one).
pub fn nfc(text: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    text.nfc().collect()
}

/// A query id derived from its text: `q` + the first 12 hex digits of sha256(text). Stable across
/// builds, distinct for distinct texts in practice (48 bits for a few thousand queries).
pub fn query_id_for(text: &str) -> QueryId {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(text.as_bytes());
    let hex: String = d.iter().take(6).map(|b| format!("{b:02x}")).collect();
    // A `q` followed by hex digits is always a valid query id.
    QueryId::new(format!("q{hex}")).unwrap_or_else(|_| unreachable!("q + hex is a token"))
}
