//! The records stages exchange through files (JSON Lines unless said otherwise).
//!
//! Field order is the serialisation order; maps are `BTreeMap`s so output is deterministic. Optional
//! fields are omitted when absent. Unknown fields are rejected when reading, so a typo in a hand-written
//! file is an error rather than a silently ignored value.

use serde::{Deserialize, Serialize};

use crate::ids::{ArticleId, DocId, GuideId, ItemId, QueryId, TopicId};

/// Where a record came from: enough to find the raw bytes again and to know which code read them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// The URL the raw bytes were fetched from, if they were fetched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// sha256 (lower-case hex) of the raw bytes: their name in the raw store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// When the bytes were fetched (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetched_at: Option<String>,
    /// The program that produced the record, with its version (`lexbench-parsers 0.1.0 docx`).
    pub producer: String,
}

/// One line of `raw/manifest.jsonl`: a fetch and what it returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestEntry {
    /// The URL requested.
    pub url: String,
    /// When the response was received (RFC 3339, UTC).
    pub fetched_at: String,
    /// HTTP status.
    pub status: u16,
    /// The `Content-Type` header, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// sha256 of the body, or `None` when there was no body (e.g. HUDOC's `204 No Content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Body length in bytes.
    pub bytes: u64,
    /// What the request was for (`hudoc-search`, `hudoc-docx 001-175180`, `guide guide_art_1_eng`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    /// The `ETag` header, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// The `Last-Modified` header, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Why the fetch failed, when it did (the body, if any, is not stored then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ManifestEntry {
    /// Did this fetch succeed (a 2xx answer, with or without a body)?
    pub fn is_success(&self) -> bool {
        self.error.is_none() && (200..300).contains(&self.status)
    }
}

/// One HUDOC search result: the metadata of a document.
///
/// Dates are normalised to ISO `YYYY-MM-DD` (HUDOC sends both `2024-03-15T00:00:00.0Z` and
/// `15/03/2024 00:00:00`). Columns lexbench does not name are kept in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HudocMeta {
    /// The document's itemid.
    pub itemid: ItemId,
    /// `CASE OF X v. Y`.
    #[serde(default)]
    pub docname: String,
    /// Application numbers (HUDOC joins them with `;`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub appno: Vec<String>,
    /// `HEJUD` (English judgment), `HEDEC`, …
    #[serde(default)]
    pub doctype: String,
    /// `ENG`, `FRE`, …
    #[serde(default)]
    pub languageisocode: String,
    /// The document's date (`kpdate`), ISO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kpdate: Option<String>,
    /// The judgment's date, ISO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judgementdate: Option<String>,
    /// Importance level 1..4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<u8>,
    /// Articles (`8;8-1;P1-1`), split.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub article: Vec<String>,
    /// `ECLI:CE:ECHR:2005:0512JUD004622199`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecli: Option<String>,
    /// `GRANDCHAMBER`, `CHAMBER`, `COMMITTEE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doctypebranch: Option<String>,
    /// A language placeholder without a body.
    #[serde(default)]
    pub isplaceholder: bool,
    /// Every other column as HUDOC sent it.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub extra: std::collections::BTreeMap<String, serde_json::Value>,
}

/// The part of a judgment a paragraph belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    /// "INTRODUCTION" (judgments since 2017 or so).
    Introduction,
    /// "PROCEDURE".
    Procedure,
    /// "THE FACTS" (circumstances of the case).
    Facts,
    /// "RELEVANT LEGAL FRAMEWORK" / "RELEVANT DOMESTIC LAW" / international material.
    RelevantLaw,
    /// "THE LAW": the Court's assessment.
    Law,
    /// "FOR THESE REASONS, THE COURT …": the operative provisions.
    Operative,
    /// A paragraph the parser could not place.
    Unknown,
}

/// A numbered paragraph of a judgment (or of a separate opinion).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Paragraph {
    /// The printed number (`§ 127` → 127).
    pub num: u32,
    /// The section it belongs to.
    pub section: Section,
    /// The paragraph's text, sub-paragraphs and quotations included, without the leading number.
    pub text: String,
}

/// A separate opinion annexed to a judgment, with its own numbering.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Opinion {
    /// Its heading (`CONCURRING OPINION OF JUDGE X`).
    pub title: String,
    /// Its paragraphs, numbered from 1 (unnumbered opinions get consecutive numbers).
    pub paragraphs: Vec<Paragraph>,
}

/// Something a parser noticed and did not silently fix: a gap in numbering, a duplicate number, …
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Warning {
    /// A stable machine-readable code (`numbering_gap`, `duplicate_number`, …).
    pub code: String,
    /// A human-readable explanation.
    pub message: String,
    /// Where: a paragraph number, a page, a line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// A parsed judgment: the main judgment's paragraphs `1..N`, separate opinions kept apart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Judgment {
    /// The HUDOC itemid; `None` for a file parsed outside the store whose itemid is unknown.
    pub item: Option<ItemId>,
    /// The case title (`CASE OF X v. Y`).
    pub title: String,
    /// The judgment's date (ISO 8601, `YYYY-MM-DD`) when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// The main judgment's numbered paragraphs in document order.
    pub paragraphs: Vec<Paragraph>,
    /// Separate opinions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub opinions: Vec<Opinion>,
    /// What the parser noticed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
    /// Where the bytes came from.
    pub provenance: Provenance,
}

/// A heading of a case-law guide, with the headings under it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuideSection {
    /// The printed number (`I`, `A`, `1`, `a`, `i`), if the heading has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<String>,
    /// The heading's title, without its number.
    pub title: String,
    /// Depth in the hierarchy, from 1.
    pub level: u8,
    /// The page the table of contents gives, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// Sub-headings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<GuideSection>,
}

/// A parsed case-law guide.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Guide {
    /// The guide's id (`guide_art_1_eng`).
    pub id: GuideId,
    /// Its title (`Guide on Article 1 of the European Convention on Human Rights`).
    pub title: String,
    /// The "Last update" date printed in it (ISO 8601), if found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated: Option<String>,
    /// The heading hierarchy.
    pub sections: Vec<GuideSection>,
    /// What the parser noticed (e.g. the table of contents and the body disagree).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
    /// Where the bytes came from.
    pub provenance: Provenance,
}

/// Flags printed after a case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CitationFlags {
    /// `[GC]`: a Grand Chamber judgment or decision.
    pub grand_chamber: bool,
    /// `(dec.)`: a decision, not a judgment.
    pub decision: bool,
    /// `Commission decision` / `Commission report`: a text of the former European Commission of
    /// Human Rights, cited at case level.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub commission: bool,
}

/// How a citation's paragraphs were tied to its case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadKind {
    /// The pinpoint is part of the citation (`Smith v. UK, 1999, § 127`).
    #[default]
    Direct,
    /// A bare pinpoint later in the sentence that names the case (`In Siliadin v. France, 2005, the
    /// Court considered … (§§ 126-127).`).
    Deferred,
    /// A bare pinpoint in a later sentence that names no other case.
    PreviousSentence,
    /// `ibid.`: the previous citation's case.
    Ibid,
}

impl ReadKind {
    /// Every kind, in the order above.
    pub const ALL: [ReadKind; 4] = [Self::Direct, Self::Deferred, Self::PreviousSentence, Self::Ibid];

    /// `true` for [`ReadKind::Direct`] (the default, not written).
    pub fn is_direct(&self) -> bool {
        *self == Self::Direct
    }

    /// The name used in JSON and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Direct => "direct",
            Self::Deferred => "deferred",
            Self::PreviousSentence => "previous_sentence",
            Self::Ibid => "ibid",
        }
    }
}

/// How a citation was resolved to a HUDOC item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    /// Case name and year matched HUDOC metadata uniquely.
    TitleAndYear,
    /// Through the guide's "List of cited cases" (application numbers, exact date).
    CitedCasesList,
    /// Through an application number.
    ApplicationNumber,
    /// `ibid.`: the previous citation's case.
    Ibid,
    /// Case name matched only after loosening (qualifiers such as `(merits)` or `and Others` dropped):
    /// lower confidence.
    FuzzyName,
    /// A curated override.
    Manual,
}

/// A pinpoint citation: `Assanidze v. Georgia [GC], 2004, §§ 146-147`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Citation {
    /// The text as printed.
    pub raw: String,
    /// The case name (`Assanidze v. Georgia`).
    pub case_name: String,
    /// The year printed in the citation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub year: Option<u16>,
    /// `[GC]`, `(dec.)`.
    pub flags: CitationFlags,
    /// The cited paragraph numbers, ranges expanded (`§§ 146-147` → `[146, 147]`).
    pub paragraphs: Vec<u32>,
    /// How the paragraphs were tied to the case (not written when `direct`).
    #[serde(default, skip_serializing_if = "ReadKind::is_direct")]
    pub read: ReadKind,
    /// The judgment it points to, once resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<ItemId>,
    /// How it was resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub how: Option<Resolution>,
}

/// A query made from a guide's heading path, with the citations written under it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuideQuery {
    /// The query's id.
    pub id: QueryId,
    /// The guide it comes from.
    pub guide: GuideId,
    /// The heading path, title first, each heading with its printed number.
    pub path: Vec<String>,
    /// The query text (the release's string form, see DATA.md §3).
    pub text: String,
    /// The pinpoint citations under the path's deepest heading.
    pub citations: Vec<Citation>,
}

/// One line of `parsed/ecthr/guides.jsonl`: a parsed guide with its queries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuideFile {
    /// The guide and its heading tree.
    pub guide: Guide,
    /// One query per heading path, with the citations under it.
    pub queries: Vec<GuideQuery>,
    /// For each query, each citation's byte span `[start, end)` in the text under its heading
    /// (parallel to `queries[i].citations`; empty when unknown).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<Vec<[usize; 2]>>,
}

/// A statutory article (BSARD).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Article {
    /// The dataset's article id.
    pub id: ArticleId,
    /// The code it belongs to (`Code civil`).
    pub code: String,
    /// Its place in the hierarchy below the code: book, part/title, chapter, section, subsection.
    pub path: Vec<String>,
    /// Its position within the code (0-based), the sequential view.
    pub position: u32,
    /// The article's text.
    pub text: String,
}

/// A topic's candidate pool: the documents a run may rank for it (ECtHR: the paragraphs of the
/// topic's judgment; BSARD: the whole corpus, usually left implicit). One line of `pools.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pool {
    /// The topic.
    pub topic: TopicId,
    /// Its candidate documents.
    pub docs: Vec<DocId>,
}

/// A split: a named list of topics over shared data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Split {
    /// The dataset (`ecthr`, `bsard`).
    pub dataset: String,
    /// The split (`train`, `val`, `test`, `unseen_query`, `unseen_guide`).
    pub name: String,
    /// Its topics, sorted.
    pub topics: Vec<TopicId>,
}

#[cfg(test)]
mod tests {
    //! Properties: records round-trip through JSON, and unknown fields are rejected.
    use super::*;

    #[test]
    fn judgment_round_trip() {
        let j = Judgment {
            item: Some("001-175180".parse().unwrap()),
            title: "CASE OF X v. Y".into(),
            date: Some("2017-06-27".into()),
            paragraphs: vec![Paragraph {
                num: 1,
                section: Section::Procedure,
                text: "The case originated in an application".into(),
            }],
            opinions: vec![],
            warnings: vec![],
            provenance: Provenance {
                producer: "test".into(),
                ..Provenance::default()
            },
        };
        let s = serde_json::to_string(&j).unwrap();
        assert!(!s.contains("opinions"), "empty lists are omitted: {s}");
        assert_eq!(serde_json::from_str::<Judgment>(&s).unwrap(), j);
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let err = serde_json::from_str::<Pool>(r#"{"topic":"q1","docs":[],"extra":1}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
    }
}
