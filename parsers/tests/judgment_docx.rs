//! The DOCX judgment parser on the real HUDOC fixtures (`../shared/fixtures/hudoc/docx/`).
//!
//! Properties checked:
//! - one YAML snapshot per fixture (`insta::glob!`): paragraph count, numbers, section runs, warnings,
//!   opinions (titles, counts, numbers) and per paragraph its number, section, length, text hash and
//!   first 32 characters — structure only, never whole texts;
//! - on every fixture the main numbering is 1..N without gaps, or every gap has a `numbering_gap`
//!   warning at the paragraph after it; numbers strictly increase; no paragraph text is empty;
//! - the known counts: 001-175180 has 122 paragraphs, 001-83979 has 41, 001-177406 has 167;
//! - the hard cases the fixtures were chosen for: Garib's own table of contents (`TOC3` `1.` entries),
//!   Nagmetov's quoted Chamber paragraphs 40-63 inside § 45, separate opinions restarting at 1 (also
//!   with `SEQ` fields), typed numbers in Lopes de Sousa Fernandes' opinion with numbered headings
//!   among them, the extracts of D.L. v. Bulgaria, the just-satisfaction judgment Sargsyan (operative
//!   `1. Holds` not a paragraph, unstyled headings), the 2007 `Ju*` styles of 001-83979, and
//!   sub-paragraphs and quotations staying with the paragraph that contains them.
#![allow(missing_docs, clippy::unwrap_used)]

mod judgment_common;

use judgment_common::{complete, docx_fixtures, name, parse_fixture, summary};
use lexbench_core::{Judgment, Section};

fn para(j: &Judgment, num: u32) -> &str {
    &j.paragraphs
        .iter()
        .find(|p| p.num == num)
        .unwrap_or_else(|| panic!("no paragraph {num}"))
        .text
}

fn nums(ps: &[lexbench_core::Paragraph]) -> Vec<u32> {
    ps.iter().map(|p| p.num).collect()
}

fn has_warning(j: &Judgment, code: &str, at: &str) -> bool {
    j.warnings
        .iter()
        .any(|w| w.code == code && w.at.as_deref() == Some(at))
}

#[test]
fn snapshot_every_docx_fixture() {
    insta::glob!("../../../shared/fixtures/hudoc/docx", "*.docx", |path| {
        let file = name(path);
        let j = parse_fixture(&file);
        insta::assert_yaml_snapshot!(summary(&j));
    });
}

#[test]
fn numbering_is_complete_or_every_gap_is_explained() {
    for path in docx_fixtures() {
        let file = name(&path);
        let j = parse_fixture(&file);
        assert!(!j.paragraphs.is_empty(), "{file}: no paragraphs");
        assert!(!j.title.is_empty(), "{file}: no title");
        let mut expected = 1;
        for p in &j.paragraphs {
            assert!(p.num >= expected, "{file}: § {} after § {}", p.num, expected - 1);
            if p.num > expected {
                assert!(
                    has_warning(&j, "numbering_gap", &format!("§ {}", p.num)),
                    "{file}: gap before § {} without a warning",
                    p.num
                );
            }
            assert!(!p.text.trim().is_empty(), "{file}: § {} is empty", p.num);
            expected = p.num + 1;
        }
        for (k, o) in j.opinions.iter().enumerate() {
            assert_eq!(
                o.paragraphs.first().map(|p| p.num),
                Some(1),
                "{file}: opinion {k}"
            );
        }
        if complete(&j.paragraphs) {
            assert!(
                !j.warnings
                    .iter()
                    .any(|w| w.code == "numbering_gap" && !w.message.starts_with("opinion"))
            );
        }
    }
}

#[test]
fn known_paragraph_counts() {
    for (file, n) in [
        ("001-175180.docx", 122),
        ("001-83979.docx", 41),
        ("001-177406.docx", 167),
    ] {
        let j = parse_fixture(file);
        assert_eq!(j.paragraphs.len(), n, "{file}");
        assert!(complete(&j.paragraphs), "{file}");
        assert_eq!(
            j.item.as_ref().map(|i| i.as_str()),
            Some(file.trim_end_matches(".docx"))
        );
    }
}

#[test]
fn garib_table_of_contents_is_skipped() {
    let j = parse_fixture("001-177406.docx");
    // The judgment's own table of contents lists `1.  Relevant provisions <tab> 7` etc. before
    // PROCEDURE; none of it may become a paragraph or paragraph text.
    assert!(para(&j, 1).starts_with("The case originated in an application"));
    assert_eq!(j.paragraphs[0].section, Section::Procedure);
    assert!(j.warnings.iter().any(|w| w.code == "table_of_contents"));
    assert!(
        j.paragraphs
            .iter()
            .all(|p| !p.text.contains("Relevant provisions 7"))
    );
    assert_eq!(nums(&j.paragraphs), (1..=167).collect::<Vec<_>>());
    // The separate opinions are not read from the table of contents either.
    assert_eq!(j.opinions.len(), 3);
    assert!(
        j.opinions[1]
            .title
            .starts_with("DISSENTING OPINION OF JUDGE PINTO DE ALBUQUERQUE")
    );
}

#[test]
fn nagmetov_quoted_chamber_paragraphs_stay_inside_45() {
    let j = parse_fixture("CASE_OF_NAGMETOV_v._RUSSIA.docx");
    assert_eq!(nums(&j.paragraphs), (1..=93).collect::<Vec<_>>());
    let p45 = para(&j, 45);
    assert!(p45.starts_with("In its judgment of 5 November"), "{p45:.80}");
    assert!(p45.contains("\n40. The Court notes that the Government"));
    assert!(p45.contains("\n63. There has therefore been a violation"));
    assert!(para(&j, 46).starts_with("Before the Grand Chamber"));
    let w = j
        .warnings
        .iter()
        .find(|w| w.code == "suspected_quoted_numbering" && w.at.as_deref() == Some("§ 45"))
        .unwrap();
    assert!(w.message.contains("40, 41, 46, 47"), "{}", w.message);
    // Two opinions, each numbered from 1 by its own SEQ fields.
    assert_eq!(j.opinions.len(), 2);
    assert_eq!(nums(&j.opinions[0].paragraphs), (1..=21).collect::<Vec<_>>());
    assert_eq!(nums(&j.opinions[1].paragraphs), (1..=47).collect::<Vec<_>>());
}

#[test]
fn opinions_restart_at_one_and_stay_apart() {
    let j = parse_fixture("001-176769.docx");
    assert_eq!(nums(&j.paragraphs), (1..=134).collect::<Vec<_>>());
    let counts: Vec<usize> = j.opinions.iter().map(|o| o.paragraphs.len()).collect();
    assert_eq!(counts, [26, 14, 15]);
    assert!(j.opinions[0].title.starts_with("JOINT CONCURRING OPINION"));
    // The main judgment's last paragraph does not swallow the operative provisions or the opinions.
    assert!(!para(&j, 134).contains("OPINION"));
    assert!(!para(&j, 134).contains("Holds"));
}

#[test]
fn lopes_de_sousa_fernandes_typed_numbers_and_numbered_headings() {
    let j = parse_fixture("001-179556.docx");
    assert_eq!(nums(&j.paragraphs), (1..=252).collect::<Vec<_>>());
    // Sub-paragraphs (i)…(vi) belong to § 57, quoted `2.`, `3.` of an expert panel to § 53.
    assert!(para(&j, 57).contains("\n(i) meningitis was a complication"));
    assert!(para(&j, 53).contains("\n2. In our view, too long a period"));
    assert!(para(&j, 56).starts_with("In an order of 28 December 2001"));
    // The first opinion numbers its paragraphs by typed text and has numbered headings
    // (`1.  The foundational statements (§§ 3-4)`) and its own table of contents.
    let o = &j.opinions[0];
    assert!(o.title.contains("PINTO DE ALBUQUERQUE"));
    assert_eq!(nums(&o.paragraphs), (1..=94).collect::<Vec<_>>());
    assert!(o.paragraphs[0].text.starts_with("I agree with the majority"));
    assert!(o.paragraphs[2].text.starts_with("In modern times"));
    assert!(
        o.paragraphs
            .iter()
            .all(|p| !p.text.contains("The foundational statements (§§ 3-4)"))
    );
}

#[test]
fn dl_v_bulgaria_extracts_keep_their_numbers() {
    let j = parse_fixture("CASE_OF_D.L._v._BULGARIA.docx");
    let n = nums(&j.paragraphs);
    assert_eq!(&n[..39], (1..=39).collect::<Vec<_>>().as_slice());
    assert_eq!(n[39], 59);
    assert_eq!(&n[40..], (64..=116).collect::<Vec<_>>().as_slice());
    assert!(j.warnings.iter().any(|w| w.code == "extracts"));
    assert!(has_warning(&j, "numbering_gap", "§ 59"));
    assert!(has_warning(&j, "numbering_gap", "§ 64"));
    assert_eq!(j.opinions.len(), 1);
    assert_eq!(j.opinions[0].paragraphs.len(), 17);
}

#[test]
fn sargsyan_just_satisfaction() {
    let j = parse_fixture("CASE_OF_SARGSYAN_v._AZERBAIJAN.docx");
    // Unstyled throughout, numbers as SEQ fields and fldSimple; operative `1.  Holds` is no paragraph.
    assert_eq!(nums(&j.paragraphs), (1..=65).collect::<Vec<_>>());
    assert_eq!(j.date.as_deref(), Some("2017-12-12"));
    assert_eq!(j.paragraphs[6].section, Section::Procedure);
    assert_eq!(j.paragraphs[7].section, Section::Law);
    // Paragraph 8 quotes Article 41; the unstyled headings after it (`A.  Damage`) are dropped.
    assert!(para(&j, 8).contains("“If the Court finds"));
    assert!(!para(&j, 8).contains("Damage\n"));
    assert!(!para(&j, 65).contains("Holds"));
    assert_eq!(j.opinions.len(), 1);
    assert_eq!(j.opinions[0].title, "CONCURRING OPINION OF JUDGE HÜSEYNOV");
}

#[test]
fn uysal_and_osal_2007_ju_styles() {
    let j = parse_fixture("001-83979.docx");
    assert_eq!(j.date.as_deref(), Some("2007-12-13"));
    let sections: Vec<Section> = [1, 3, 4, 16, 17, 41]
        .iter()
        .map(|&n| j.paragraphs[n as usize - 1].section)
        .collect();
    use Section::*;
    assert_eq!(sections, [Procedure, Procedure, Facts, Facts, Law, Law]);
    // An unnumbered JuPara after § 33 belongs to it; JuQuot quotations to the paragraph before.
    assert!(para(&j, 33).ends_with("There has accordingly been a breach of Article 6 § 1."));
    assert!(para(&j, 26).contains("\n“In the determination of"));
    assert!(j.opinions.is_empty());
}

#[test]
fn sub_paragraphs_and_quotes_belong_to_their_paragraph() {
    let j = parse_fixture("001-175180.docx");
    assert!(para(&j, 8).contains("\n(a) for the Government"));
    assert!(para(&j, 8).contains("\n(b) for the applicants"));
    let p33 = para(&j, 33);
    assert!(p33.contains("\n35. The impugned judgment"), "{p33:.200}");
    assert!(
        para(&j, 34).starts_with("On 21 September 2010"),
        "{:.80}",
        para(&j, 34)
    );
    // The Vehabović opinion is unnumbered with typed point numbers: numbered 1.. with a warning.
    assert!(j.warnings.iter().any(|w| w.code == "opinion_numbering_mixed"));
    assert_eq!(j.opinions[2].paragraphs.len(), 8);
}
