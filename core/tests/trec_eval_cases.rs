//! Cases of the shapes of trec_eval's own test suite (its `test/` folder runs `qrels.test` against
//! `results.test` and `results.trunc` with `-c`, `-l`, `-q`, …). Those files cannot be fetched here,
//! so these are our own small cases, every value worked by hand in the comments.
//!
//! Properties checked:
//! - (a) a run whose lines carry fields after the sixth column, read with
//!   [`ReadOptions::extra_run_fields`] (trec_eval's reader: "Any field following run_id is ignored",
//!   `get_trec_results.c`), is the same run and gives exactly the same numbers as the run without
//!   them; the lines are counted; read strictly (the default) the first such line is an error;
//! - (b) `-c`: a qrels topic missing from the run counts in the mean with 0 on every measure;
//! - (c) graded qrels (0–3) with `min_rel = 2` (trec_eval's `-l2`): the counting measures use the
//!   threshold for R and for the documents found; nDCG keeps the grades as gains and does not change;
//!   a topic whose documents are all below the threshold scores 0 except on nDCG;
//! - (d) tied scores are ordered by doc id descending (a tie between a relevant and a non-relevant
//!   document decides AP in case (c)).
//!
//! Cross-check: the values of (b) and (c) were also computed with pytrec_eval-terrier 0.5.11 (which
//! embeds trec_eval 9's C code), e.g. for (c):
//! `pytrec_eval.RelevanceEvaluator(qrels, {"map", "P.5", "recall.10", "Rprec", "recip_rank",
//! "ndcg_cut.5", "ndcg"}, relevance_level=2).evaluate(run)`; it agrees to the last printed digit
//! (quoted next to each case). The tests do not depend on Python.

#[path = "../src/testing/scratch.rs"]
mod scratch;

use std::path::PathBuf;

use lexbench_core::eval::{EvalParams, evaluate_with};
use lexbench_core::{Error, LineError, Measure, Qrels, ReadOptions, Run, TopicId, evaluate};

const EPS: f64 = 1e-12;

fn write(name: &str, text: &str) -> PathBuf {
    let dir = scratch::scratch_root().join(format!("lexbench-te-cases-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn qrels(name: &str, text: &str) -> Qrels {
    Qrels::read(&write(name, text), &ReadOptions::default()).unwrap()
}

fn run(name: &str, text: &str) -> Run {
    Run::read(&write(name, text), &ReadOptions::default()).unwrap()
}

fn lenient() -> ReadOptions {
    ReadOptions {
        extra_run_fields: true,
        ..ReadOptions::default()
    }
}

fn measures(s: &str) -> Vec<Measure> {
    Measure::parse_list(s).unwrap()
}

fn topic(t: &str) -> TopicId {
    TopicId::new(t).unwrap()
}

fn assert_all_close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() < EPS,
            "{what}[{i}]: got {g}, want {w} (all: {got:?})"
        );
    }
}

// ---------------------------------------------------------------------------------------------------
// (a) Extra fields after the sixth column.

/// The run of case (c) twice over: plain, and with fields after the tag on 4 of its 10 lines (one
/// field, three fields, a tab-separated field, a field after trailing spaces). Line 3 has trailing
/// blanks only: no extra field.
const PLAIN_RUN: &str = "\
g1 Q0 a 1 0.9 sysA
g1 Q0 x 2 0.8 sysA
g1 Q0 c 3 0.5 sysA
g1 Q0 e 4 0.5 sysA
g1 Q0 d 5 0.4 sysA
g1 Q0 b 6 0.3 sysA
g1 Q0 y 7 0.2 sysA
g2 Q0 q 1 2.0 sysA
g2 Q0 p 2 1.0 sysA
g2 Q0 s 3 0.5 sysA
";
const DECORATED_RUN: &str = "\
g1 Q0 a 1 0.9 sysA 1
g1 Q0 x 2 0.8 sysA
g1 Q0 c 3 0.5 sysA   \t
g1 Q0 e 4 0.5 sysA extra fields here
g1 Q0 d 5 0.4 sysA
g1 Q0 b 6 0.3 sysA\tbm25
g1 Q0 y 7 0.2 sysA
g2 Q0 q 1 2.0 sysA    2.0
g2 Q0 p 2 1.0 sysA
g2 Q0 s 3 0.5 sysA
";

#[test]
fn extra_fields_are_ignored_when_allowed_and_give_identical_numbers() {
    let q = qrels("a.qrels", GRADED_QRELS);
    let plain = run("a-plain.run", PLAIN_RUN);
    let (decorated, notes) = Run::read_with_notes(&write("a-dec.run", DECORATED_RUN), &lenient()).unwrap();
    // The same run: same tag (the sixth column, never an extra field), same hits and scores.
    assert_eq!(decorated, plain);
    assert_eq!(decorated.tag, "sysA");
    // Lines 1, 4, 6 and 8 carry extra fields; line 3's trailing blanks are not a field.
    assert_eq!(notes.lines_with_extra_fields, 4);
    assert_eq!(notes.first_line_with_extra_fields, Some(1));
    let ms = measures("AP,RPrec,P@5,R@10,RR,nDCG@5,nDCG");
    for min_rel in [1, 2] {
        let p = EvalParams::new(min_rel).unwrap();
        let a = evaluate_with(&plain, &q, &ms, None, &p).unwrap();
        let b = evaluate_with(&decorated, &q, &ms, None, &p).unwrap();
        // Bit for bit, not within a tolerance.
        assert_eq!(a, b, "min_rel {min_rel}");
    }
    // A plain run read leniently has nothing to report.
    let (_, notes) = Run::read_with_notes(&write("a-plain2.run", PLAIN_RUN), &lenient()).unwrap();
    assert_eq!(notes.lines_with_extra_fields, 0);
    assert_eq!(notes.first_line_with_extra_fields, None);
}

#[test]
fn extra_fields_are_an_error_by_default_naming_file_and_line() {
    let p = write("a-strict.run", DECORATED_RUN);
    let err = Run::read(&p, &ReadOptions::default()).unwrap_err();
    assert!(
        matches!(
            err.line_error(),
            Some((
                1,
                LineError::Columns {
                    expected: 6,
                    found: 7,
                    ..
                }
            ))
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with(&format!("{}:1: expected 6 columns", p.display())),
        "{err}"
    );
    // Lenient reading still refuses too few columns, and still checks the six it reads.
    let short = write("a-short.run", "g1 Q0 a 1 0.9\n");
    assert!(matches!(
        Run::read(&short, &lenient()).unwrap_err().line_error(),
        Some((1, LineError::Columns { found: 5, .. }))
    ));
    let bad = write("a-bad.run", "g1 Q0 a 1 0.9 t\ng1 Q0 b 2 high t extra\n");
    assert!(matches!(
        Run::read(&bad, &lenient()).unwrap_err().line_error(),
        Some((2, LineError::NotANumber { column: "score", .. }))
    ));
    // A duplicate on lines with extra fields is reported with both lines, as without them.
    let dup = write("a-dup.run", "g1 Q0 a 1 0.9 t x\ng1 Q0 a 2 0.8 t y\n");
    assert!(matches!(
        Run::read(&dup, &lenient()).unwrap_err().line_error(),
        Some((2, LineError::DuplicateDoc { first_line: 1, .. }))
    ));
    // Qrels are never lenient: a fifth column is an error whatever the option says.
    let q = write("a-five-columns.qrels", "g1 0 a 1 extra\n");
    assert!(matches!(
        Qrels::read(&q, &lenient()).unwrap_err(),
        Error::Line {
            line: 1,
            error: LineError::Columns { found: 5, .. },
            ..
        }
    ));
}

// ---------------------------------------------------------------------------------------------------
// (b) -c: a qrels topic missing from the run.

#[test]
fn complete_averaging_counts_a_topic_missing_from_the_run() {
    // qrels: t1 {d1:1, d2:1}, t2 {d5:1}, t3 {d7:1}. The run has t1, t2 and t9 (not in the qrels).
    let q = qrels("b.qrels", "t1 0 d1 1\nt1 0 d2 1\nt2 0 d5 1\nt3 0 d7 1\n");
    let r = run(
        "b.run",
        "t1 Q0 d1 1 3 r\nt1 Q0 d3 2 2 r\nt1 Q0 d2 3 1 r\nt2 Q0 d4 1 2 r\nt2 Q0 d5 2 1 r\nt9 Q0 d1 1 1 r\n",
    );
    let ev = evaluate(&r, &q, &measures("AP,P@5,RR"), None).unwrap();
    // t1: d1 (rel), d3, d2 (rel). AP = (1/1 + 2/3)/2 = 5/6; P@5 = 2/5; RR = 1.
    // t2: d4, d5 (rel).            AP = (1/2)/1 = 1/2;   P@5 = 1/5; RR = 1/2.
    // t3: not in the run. trec_eval -c evaluates it against a one-document ranking of a bogus docno
    //     (`ceci_nest_pas_un_docno`, trec_eval.c), so 0 on every measure, and counts it.
    // t9: not in the qrels: ignored.
    // pytrec_eval (topics of the run only): t1 map 0.8333…, P_5 0.4, recip_rank 1; t2 0.5, 0.2, 0.5.
    assert_all_close(&ev.per_topic[&topic("t1")], &[5.0 / 6.0, 0.4, 1.0], "t1");
    assert_all_close(&ev.per_topic[&topic("t2")], &[0.5, 0.2, 0.5], "t2");
    assert_eq!(ev.per_topic[&topic("t3")], vec![0.0; 3]);
    // Means over the 3 qrels topics (-c): AP = (5/6 + 1/2 + 0)/3 = 4/9; P@5 = (2/5 + 1/5 + 0)/3 = 1/5;
    // RR = (1 + 1/2 + 0)/3 = 1/2. (Without -c trec_eval would divide by 2: AP 2/3, P@5 3/10, RR 3/4;
    // lexbench always averages as -c does.)
    assert_eq!(ev.per_topic.len(), 3);
    assert_all_close(&ev.mean, &[4.0 / 9.0, 0.2, 0.5], "means");
    assert_eq!(ev.missing_topics, vec![topic("t3")]);
    assert_eq!(ev.ignored_topics, vec![topic("t9")]);
}

// ---------------------------------------------------------------------------------------------------
// (c) Graded qrels with min_rel = 2, and (d) a tie.

/// g1: grades 3, 2, 1, 0, 2, 3, 1 (f and g are never retrieved). g2: only grade-1 documents relevant
/// at the default threshold.
const GRADED_QRELS: &str = "\
g1 0 a 3
g1 0 b 2
g1 0 c 1
g1 0 d 0
g1 0 e 2
g1 0 f 3
g1 0 g 1
g2 0 p 1
g2 0 q 1
g2 0 r 0
";

#[test]
fn graded_qrels_with_min_rel_2() {
    let q = qrels("c.qrels", GRADED_QRELS);
    let r = run("c.run", PLAIN_RUN);
    let ms = measures("P@5,R@10,AP,RPrec,RR,nDCG@5,nDCG");
    let ev = evaluate_with(&r, &q, &ms, None, &EvalParams::new(2).unwrap()).unwrap();
    assert_eq!(ev.params.min_rel, 2);
    // g1 ranking (score desc; c and e tie at 0.5 and the doc id decides, descending: e before c,
    // whatever the file order — c is listed first):
    //   rank  1 a (3)  2 x (unjudged)  3 e (2)  4 c (1)  5 d (0)  6 b (2)  7 y (unjudged)
    // min_rel 2: relevant = a, b, e, f → R = 4; found at ranks 1, 3, 6.
    //   P@5   = |{1, 3}| / 5               = 2/5 = 0.4
    //   R@10  = 3 / 4                      = 0.75
    //   AP    = (1/1 + 2/3 + 3/6) / 4      = 13/24 = 0.541666…   (c before e would give (1 + 2/4 + 3/6)/4 = 1/2)
    //   RPrec = |{1, 3}| in top R=4 / 4    = 1/2
    //   RR    = 1/1                        = 1
    //   nDCG@5: gains are the grades whatever min_rel (trec_eval m_ndcg.c / m_ndcg_cut.c):
    //     DCG@5  = 3/log2 2 + 2/log2 4 + 1/log2 5                         = 4.430676558073393
    //     IDCG@5 = 3/log2 2 + 3/log2 3 + 2/log2 4 + 2/log2 5 + 1/log2 6   = 7.1409951840957
    //     nDCG@5 = 0.6204564551368581
    //   nDCG (no cut): DCG + 2/log2 7 (b), IDCG + 1/log2 7 (the last grade 1)  = 0.686001347921956
    // pytrec_eval relevance_level=2, g1: P_5 0.4, recall_10 0.75, map 0.5416666666666666, Rprec 0.5,
    //   recip_rank 1.0, ndcg_cut_5 0.6204564551368581, ndcg 0.686001347921956.
    let dcg5 = 3.0 + 2.0 / 2.0 + 1.0 / 5f64.log2();
    let idcg5 = 3.0 + 3.0 / 3f64.log2() + 2.0 / 2.0 + 2.0 / 5f64.log2() + 1.0 / 6f64.log2();
    let ndcg = (dcg5 + 2.0 / 7f64.log2()) / (idcg5 + 1.0 / 7f64.log2());
    let g1 = [0.4, 0.75, 13.0 / 24.0, 0.5, 1.0, dcg5 / idcg5, ndcg];
    assert_all_close(&ev.per_topic[&topic("g1")], &g1, "g1, min_rel 2");
    assert!((dcg5 / idcg5 - 0.6204564551368581).abs() < EPS);
    assert!((ndcg - 0.686001347921956).abs() < EPS);
    // g2 ranking: q (1), p (1), s (unjudged). min_rel 2: R = 0, so P@5 = R@10 = AP = RPrec = RR = 0;
    // nDCG still sees gains 1 and 1 at ranks 1 and 2, the ideal ranking too: nDCG@5 = nDCG = 1.
    // pytrec_eval relevance_level=2, g2: P_5 0, recall_10 0, map 0, Rprec 0, recip_rank 0, ndcg 1.
    assert_eq!(
        ev.per_topic[&topic("g2")],
        vec![0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    );
    let mean: Vec<f64> = g1
        .iter()
        .zip([0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0])
        .map(|(a, b)| (a + b) / 2.0)
        .collect();
    assert_all_close(&ev.mean, &mean, "means, min_rel 2");

    // The same files at the default threshold (min_rel 1): g1's relevant = a, b, c, e, f, g → R = 6,
    // found at ranks 1, 3, 4, 6.
    //   P@5 = 3/5; R@10 = 4/6; AP = (1/1 + 2/3 + 3/4 + 4/6)/6 = 37/72; RPrec = 4 in top 6 / 6 = 2/3;
    //   RR = 1; nDCG unchanged.
    // g2: R = 2, q and p at ranks 1 and 2: P@5 = 2/5, R@10 = AP = RPrec = RR = nDCG = 1.
    // pytrec_eval relevance_level=1, g1: P_5 0.6, recall_10 0.6666666666666666,
    //   map 0.5138888888888888, Rprec 0.6666666666666666, recip_rank 1.0, ndcg_cut_5 0.62045…
    let ev1 = evaluate(&r, &q, &ms, None).unwrap();
    assert_eq!(ev1.params, EvalParams::default());
    let g1_default = [0.6, 4.0 / 6.0, 37.0 / 72.0, 4.0 / 6.0, 1.0, dcg5 / idcg5, ndcg];
    assert_all_close(&ev1.per_topic[&topic("g1")], &g1_default, "g1, min_rel 1");
    assert_all_close(
        &ev1.per_topic[&topic("g2")],
        &[0.4, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        "g2, min_rel 1",
    );
}

#[test]
fn min_rel_zero_counts_every_judged_document_and_negative_is_refused() {
    // trec_eval -l0: a judged grade ≥ 0 is relevant; documents absent from the qrels never are.
    // g1 at min_rel 0: R = 7 (a…g); found at ranks 1 (a), 3 (e), 4 (c), 5 (d), 6 (b).
    //   P@5 = 4/5; R@10 = 5/7; RR = 1.
    let q = qrels("z.qrels", GRADED_QRELS);
    let r = run("z.run", PLAIN_RUN);
    let ev = evaluate_with(
        &r,
        &q,
        &measures("P@5,R@10,RR"),
        None,
        &EvalParams::new(0).unwrap(),
    )
    .unwrap();
    assert_all_close(
        &ev.per_topic[&topic("g1")],
        &[0.8, 5.0 / 7.0, 1.0],
        "g1, min_rel 0",
    );
    // Negative: trec_eval would count documents outside the qrels as relevant retrieved (recall > 1).
    let err = EvalParams::new(-1).unwrap_err();
    assert!(err.to_string().contains("min_rel -1"), "{err}");
    let bad = EvalParams { min_rel: -1 };
    assert!(evaluate_with(&r, &q, &measures("AP"), None, &bad).is_err());
}
