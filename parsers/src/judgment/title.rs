//! Whether two sources' titles of one judgment name the same case.
//!
//! The same judgment's title differs between sources in ways that say nothing about which case it
//! is: `CASE OF SCHÜTH v. GERMANY` (a DOCX), `CASE OF SCHUTH v. GERMANY` (a mirror without accents),
//! `CASE OF VAN MECHELEN AND OTHERS` (a plain text whose title runs onto a second line),
//! `CASE OF THE ASSOCIATION FOR …` against `CASE OF ASSOCIATION FOR …`. Titles are compared on
//! their **words**: accents and case folded (NFKD, combining marks dropped, upper case), split at
//! anything that is not a letter or digit, and the words every title shares (`CASE`, `OF`, `THE`,
//! `AND`, `OTHERS`, `V`) left out. Two titles agree when the words of one are all among the words
//! of the other; a title with no word left says nothing and agrees with any.
//!
//! So `SCHÜTH v. GERMANY` and `DE TOMMASO v. ITALY` disagree (another judgment's text under this
//! judgment's name), and so do `X v. Y (No. 2)` and `X v. Y (No. 3)`: two judgments of one case.
//!
//! ```
//! use lexbench_parsers::judgment::title::agree;
//! assert!(agree("CASE OF SCHÜTH v. GERMANY", "Schuth v. Germany"));
//! assert!(agree("CASE OF VAN MECHELEN AND OTHERS", "CASE OF VAN MECHELEN AND OTHERS v. THE NETHERLANDS"));
//! assert!(!agree("CASE OF SCHÜTH v. GERMANY", "CASE OF DE TOMMASO v. ITALY"));
//! assert!(!agree("CASE OF X v. Y (No. 2)", "CASE OF X v. Y (No. 3)"));
//! ```

use std::collections::BTreeSet;

use unicode_normalization::{UnicodeNormalization, char::is_combining_mark};

/// Words every title may hold or lack without naming another case.
const SHARED: [&str; 6] = ["CASE", "OF", "THE", "AND", "OTHERS", "V"];

/// The words of a title the comparison reads (see the module documentation).
pub fn words(title: &str) -> BTreeSet<String> {
    let folded: String = title
        .nfkd()
        .filter(|c| !is_combining_mark(*c))
        .flat_map(char::to_uppercase)
        .collect();
    folded
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !SHARED.contains(w))
        .map(str::to_owned)
        .collect()
}

/// Whether two titles of one judgment name the same case (see the module documentation).
pub fn agree(a: &str, b: &str) -> bool {
    let (a, b) = (words(a), words(b));
    a.is_subset(&b) || b.is_subset(&a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_agree_across_accents_case_line_breaks_and_articles_only() {
        assert!(agree("CASE OF SCHÜTH v. GERMANY", "CASE OF SCHUTH V. GERMANY"));
        assert!(agree(
            "CASE OF THE ASSOCIATION FOR EUROPEAN INTEGRATION AND HUMAN RIGHTS AND EKIMDZHIEV v. BULGARIA",
            "CASE OF ASSOCIATION FOR EUROPEAN INTEGRATION AND HUMAN RIGHTS AND EKIMDZHIEV v. BULGARIA"
        ));
        assert!(agree("", "CASE OF A v. B"));
        assert!(agree("CASE OF", "CASE OF A v. B"));
        assert!(
            agree("CASE OF Ａ v. B", "CASE OF A v. B"),
            "NFKD folds full-width letters"
        );
        assert!(!agree("CASE OF SCHÜTH v. GERMANY", "CASE OF DE TOMMASO v. ITALY"));
        assert!(!agree("CASE OF X v. Y (No. 2)", "CASE OF X v. Y (No. 3)"));
        assert!(!agree("CASE OF A v. B", "CASE OF A v. C"));
    }

    /// Every plain text, HUDOC JSON and DOCX of the fixtures that the segmented corpus also holds
    /// agrees with the corpus's title (the comparison drops no real judgment of these sources).
    #[test]
    fn every_fixture_title_agrees_with_the_segmented_corpus() {
        use crate::judgment;
        let dir = lexbench_core::testing::fixtures_dir().join("hudoc");
        let corpus_path = dir.join("lexclipr/judgments.jsonl");
        let bytes = std::fs::read(&corpus_path).unwrap();
        let corpus: std::collections::BTreeMap<String, String> =
            judgment::segmented::parse(&bytes, "judgments.jsonl")
                .unwrap()
                .into_iter()
                .filter_map(|e| Some((e.judgment.item?.to_string(), e.judgment.title)))
                .collect();
        let mut compared = 0;
        for (folder, ext) in [("text", "txt"), ("flat", "json"), ("docx", "docx")] {
            for entry in std::fs::read_dir(dir.join(folder)).unwrap() {
                let path = entry.unwrap().path();
                let Some(item) = path.file_stem().and_then(|s| s.to_str()) else {
                    continue;
                };
                let (Some(theirs), true) = (corpus.get(item), path.extension().is_some_and(|e| e == ext))
                else {
                    continue;
                };
                let bytes = judgment::read_file(&path).unwrap();
                let Ok(j) = judgment::parse(&bytes, item, None) else {
                    continue;
                };
                assert!(
                    agree(&j.title, theirs),
                    "{}: {:?} against the corpus's {theirs:?}",
                    path.display(),
                    j.title
                );
                compared += usize::from(!j.title.is_empty());
            }
        }
        assert!(compared >= 60, "only {compared} titles compared");
    }
}
