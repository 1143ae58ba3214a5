//! The published ECtHR release (Santosh et al. 2024) as an input.
//!
//! Files `training`, `validation`, `testing` (= `seen`, byte-identical), `unseen_article` (seen guide,
//! unseen query) and `unseen` (unseen guides), one row per query–judgment pair:
//! `{"split", "judgment_id", "query", "paragraphs"}`. The guide is not a field: it is the query's
//! prefix up to the first ` .` (or the first `.` followed by two spaces: the Environment guide's
//! queries read `Environment.    Other. …`), mapped to the Court's guide ids.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use lexbench_core::{GuideId, ItemId};
use serde::Deserialize;

use crate::error::{Error, Result};
use crate::pairs::{Pair, QrelSource, query_id_for};
use crate::settings::Assignment;

/// The release's files and the lexbench split each becomes.
pub const RELEASE_FILES: [(&str, &str); 5] = [
    ("training.jsonl", "train"),
    ("validation.jsonl", "val"),
    ("testing.jsonl", "test"),
    ("unseen_article.jsonl", "unseen_query"),
    ("unseen.jsonl", "unseen_guide"),
];

/// The release's guide titles → the Court's guide ids.
const TITLES: [(&str, &str); 28] = [
    ("Article 1 of Protocol No. 1", "guide_art_1_protocol_1_eng"),
    ("Article 1 of Protocol No. 7", "guide_art_1_protocol_7_eng"),
    ("Article 10. Freedom of expression", "guide_art_10_eng"),
    (
        "Article 11. Freedom of assembly and association",
        "guide_art_11_eng",
    ),
    ("Article 12. Right to marry", "guide_art_12_eng"),
    ("Article 15. Derogation in time of emergency", "guide_art_15_eng"),
    ("Article 17. Prohibition of abuse of rights", "guide_art_17_eng"),
    (
        "Article 18. Limitation on use of restrictions on rights",
        "guide_art_18_eng",
    ),
    ("Article 2 of Protocol No. 1", "guide_art_2_protocol_1_eng"),
    ("Article 2 of Protocol No. 4", "guide_art_2_protocol_4_eng"),
    ("Article 2. Right to life", "guide_art_2_eng"),
    ("Article 3 of Protocol No. 1", "guide_art_3_protocol_1_eng"),
    ("Article 3 of Protocol No. 4", "guide_art_3_protocol_4_eng"),
    ("Article 3. Prohibition of torture", "guide_art_3_eng"),
    ("Article 4 of Protocol No. 7", "guide_art_4_protocol_7_eng"),
    (
        "Article 4. Prohibition of slavery and forced labour",
        "guide_art_4_eng",
    ),
    (
        "Article 46. Binding force and execution of judgments",
        "guide_art_46_eng",
    ),
    ("Article 5. Right to liberty and security", "guide_art_5_eng"),
    (
        "Article 6. Right to a fair trial (civil limb)",
        "guide_art_6_civil_eng",
    ),
    (
        "Article 6. Right to a fair trial (criminal limb)",
        "guide_art_6_criminal_eng",
    ),
    ("Article 7. No punishment without law", "guide_art_7_eng"),
    (
        "Article 8. Right to respect for private and family life, home and correspondence",
        "guide_art_8_eng",
    ),
    ("Data protection", "guide_data_protection_eng"),
    ("European Union law in the Courts case-law", "guide_eu_law_eng"),
    ("Mass protests", "guide_mass_protests_eng"),
    ("Rights of LGBTI persons", "guide_lgbti_rights_eng"),
    ("Social rights", "guide_social_rights_eng"),
    ("Environment", "guide_environment_eng"),
];

/// The guide title at the start of a release query.
pub fn guide_title(query: &str) -> &str {
    let space_dot = query.find(" .");
    let dot_spaces = query.find(".  ");
    let end = match (space_dot, dot_spaces) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) => a,
        (None, Some(b)) => b,
        (None, None) => query.len(),
    };
    query[..end].trim()
}

/// The guide id of a release query: from the known titles, else a slug of the title.
pub fn guide_of(query: &str) -> Result<GuideId> {
    let title = guide_title(query);
    if let Some((_, id)) = TITLES.iter().find(|(t, _)| *t == title) {
        return Ok(GuideId::new(*id)?);
    }
    let slug: String = title
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let slug = slug
        .split('_')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("_");
    Ok(GuideId::new(format!("guide_{slug}_eng"))?)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    split: String,
    judgment_id: String,
    query: String,
    paragraphs: Vec<u32>,
}

/// The release read as pairs, with the release's own assignment of pairs to splits.
#[derive(Debug, Clone)]
pub struct Release {
    /// The pairs, in file order (`training` first).
    pub pairs: Vec<Pair>,
    /// The release's splits.
    pub assignment: Assignment,
    /// Rows that repeat an earlier (split, query, judgment), merged into it.
    pub merged_rows: usize,
}

/// Reads the release folder.
pub fn read_release(dir: &Path) -> Result<Release> {
    let mut pairs: Vec<Pair> = Vec::new();
    let mut assignment: Assignment = BTreeMap::new();
    let mut index: BTreeMap<(String, String, ItemId), usize> = BTreeMap::new();
    let mut merged_rows = 0;
    for (file, split) in RELEASE_FILES {
        let path = dir.join(file);
        let text = lexbench_core::text::read_text(&path)?;
        let bad = |line: usize, message: String| Error::Input {
            path: path.clone(),
            line,
            message,
        };
        let mut rows = 0;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let row: Row = serde_json::from_str(line).map_err(|e| bad(i + 1, e.to_string()))?;
            let stem = file.trim_end_matches(".jsonl");
            if row.split != stem {
                return Err(bad(i + 1, format!("row says split {:?} in {file}", row.split)));
            }
            let item: ItemId = row.judgment_id.parse().map_err(|e| bad(i + 1, format!("{e}")))?;
            if row.paragraphs.is_empty() || row.paragraphs.contains(&0) {
                return Err(bad(i + 1, "paragraph list is empty or holds 0".into()));
            }
            rows += 1;
            let key = (split.to_owned(), row.query.clone(), item.clone());
            let query = query_id_for(&row.query);
            let topic = lexbench_core::TopicId::pair(&query, &item);
            let guide = guide_of(&row.query)?;
            let sources: Vec<QrelSource> = row
                .paragraphs
                .iter()
                .map(|&p| QrelSource {
                    topic: topic.clone(),
                    paragraph: p,
                    guide: guide.clone(),
                    path: Vec::new(),
                    raw: row.query.clone(),
                    span: None,
                    how: None,
                    read: lexbench_core::records::ReadKind::Direct,
                    item: item.clone(),
                    judgment_sha256: None,
                    guide_sha256: None,
                    release_row: Some(format!("{file}:{}", i + 1)),
                })
                .collect();
            if let Some(&at) = index.get(&key) {
                merged_rows += 1;
                pairs[at].relevant.extend(row.paragraphs.iter().copied());
                pairs[at].sources.extend(sources);
                continue;
            }
            index.insert(key, pairs.len());
            assignment.entry(split.to_owned()).or_default().push(pairs.len());
            pairs.push(Pair {
                query,
                text: row.query,
                guide,
                item,
                relevant: row.paragraphs.iter().copied().collect::<BTreeSet<u32>>(),
                sources,
            });
        }
        if rows == 0 {
            return Err(bad(0, "no rows".into()));
        }
    }
    Ok(Release {
        pairs,
        assignment,
        merged_rows,
    })
}

#[cfg(test)]
mod tests {
    //! Properties: guide titles are cut where the release's format puts them, including the
    //! Environment guide's irregular form.
    use super::*;

    #[test]
    fn titles() {
        assert_eq!(
            guide_title("Article 6. Right to a fair trial (criminal limb) .    General guarantees. "),
            "Article 6. Right to a fair trial (criminal limb)"
        );
        assert_eq!(
            guide_title("Environment.    Other. 1.   Exposure to pollution"),
            "Environment"
        );
        assert_eq!(
            guide_title("Article 1 of Protocol No. 1 .  Peaceful enjoyment"),
            "Article 1 of Protocol No. 1"
        );
        assert_eq!(
            guide_of("Mass protests .  Freedom").unwrap().as_str(),
            "guide_mass_protests_eng"
        );
        assert_eq!(
            guide_of("Brand new guide .  X").unwrap().as_str(),
            "guide_brand_new_guide_eng"
        );
    }
}
