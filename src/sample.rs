//! The embedded sample (`sample/`, written by `scripts/make_sample.py`): fictional judgments, guides and
//! HUDOC metadata in the real formats, compiled into the binary so `lexbench pipeline` runs anywhere.

use lexbench_crawlers::date::Date;
use lexbench_crawlers::fake_hudoc::{FakeConfig, FakeItem};

/// (itemid, DOCX bytes) of the fictional judgments.
pub const JUDGMENTS: [(&str, &[u8]); 6] = [
    ("001-990101", include_bytes!("../sample/hudoc/001-990101.docx")),
    ("001-990102", include_bytes!("../sample/hudoc/001-990102.docx")),
    ("001-990103", include_bytes!("../sample/hudoc/001-990103.docx")),
    ("001-990104", include_bytes!("../sample/hudoc/001-990104.docx")),
    ("001-990105", include_bytes!("../sample/hudoc/001-990105.docx")),
    ("001-990106", include_bytes!("../sample/hudoc/001-990106.docx")),
];

/// (guide id, PDF bytes).
pub const GUIDES: [(&str, &[u8]); 2] = [
    (
        "guide_fictional_assembly_expression_eng",
        include_bytes!("../sample/guides/guide_fictional_assembly_expression_eng.pdf"),
    ),
    (
        "guide_fictional_liberty_eng",
        include_bytes!("../sample/guides/guide_fictional_liberty_eng.pdf"),
    ),
];

/// (file name, CSV text) of the fictional BSARD-format statute book and questions.
pub const BSARD: [(&str, &str); 3] = [
    ("articles_fr.csv", include_str!("../sample/bsard/articles_fr.csv")),
    (
        "questions_fr_train.csv",
        include_str!("../sample/bsard/questions_fr_train.csv"),
    ),
    (
        "questions_fr_test.csv",
        include_str!("../sample/bsard/questions_fr_test.csv"),
    ),
];

/// The sample's HUDOC search answer.
const SEARCH: &str = include_str!("../sample/hudoc/search.json");

/// The sample's split configuration.
pub const SPLIT_CONFIG: &str = include_str!("../sample/split_config.json");

/// The sample's kpdate range.
pub const SINCE: Date = Date { y: 2019, m: 1, d: 1 };
/// The sample's kpdate range.
pub const UNTIL: Date = Date {
    y: 2022,
    m: 12,
    d: 31,
};

/// The sample as what the local HUDOC stand-in serves.
pub fn fake_config() -> anyhow::Result<FakeConfig> {
    let search: serde_json::Value = serde_json::from_str(SEARCH)?;
    let mut items = Vec::new();
    for row in search["results"].as_array().into_iter().flatten() {
        let c = &row["columns"];
        let itemid = c["itemid"].as_str().unwrap_or_default().to_owned();
        let kpdate = c["kpdate"]
            .as_str()
            .and_then(Date::parse_hudoc)
            .ok_or_else(|| anyhow::anyhow!("sample/hudoc/search.json: {itemid} has no valid kpdate"))?;
        let docx = JUDGMENTS
            .iter()
            .find(|(i, _)| *i == itemid)
            .map(|(_, b)| b.to_vec());
        items.push(FakeItem {
            docname: c["docname"].as_str().unwrap_or_default().to_owned(),
            doctype: c["doctype"].as_str().unwrap_or_default().to_owned(),
            lang: c["languageisocode"].as_str().unwrap_or_default().to_owned(),
            itemid,
            kpdate,
            placeholder: false,
            docx,
            html: None,
            columns: c.as_object().cloned().unwrap_or_default(),
        });
    }
    Ok(FakeConfig {
        items,
        guides: GUIDES
            .iter()
            .map(|(id, b)| ((*id).to_owned(), b.to_vec()))
            .collect(),
        files: BSARD
            .iter()
            .map(|(name, text)| {
                (
                    format!("/bsard/{name}"),
                    ("text/csv".to_owned(), text.as_bytes().to_vec()),
                )
            })
            .collect(),
        ..FakeConfig::default()
    })
}
