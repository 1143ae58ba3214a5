//! rank_bm25's `BM25Okapi` (rank_bm25 0.2.2), reproduced operation for operation, with the
//! tokenisation of the only public BM25 script on the ECtHR data (LexCLiPR,
//! `src/models/vector_db/inference/bm25_inference.py`: `text.lower().split()`, one `BM25Okapi` per
//! judgment). The named variant [`super::Bm25Variant::RankBm25Okapi`] of `lexbench run bm25`.
//!
//! What rank_bm25 computes (`rank_bm25.py`, `BM25` and `BM25Okapi`), and so this module:
//! - `avgdl = Σ len(d) / N` over the documents given (a judgment's paragraphs);
//! - `idf(t) = ln(N − n(t) + 0.5) − ln(n(t) + 0.5)` (Robertson's, negative for a term in more than
//!   half the documents); a negative idf is replaced by `ε · mean idf` (ε = 0.25, the mean over every
//!   term of the documents, negative values included, summed in first-occurrence order); an idf of
//!   exactly 0 stays 0;
//! - `score(d) = Σ_{q in query tokens} idf(q) · tf · (k1 + 1) / (tf + k1 · (1 − b + b · dl / avgdl))`
//!   with a repeated query token counted each time and a token outside the documents adding 0; the
//!   terms are added in the query's order, each with numpy's order of operations, so scores agree
//!   with rank_bm25's bit for bit (golden test).
//!
//! Two inputs rank_bm25 does not define are ours: documents whose tokens are all absent (`avgdl = 0`,
//! where rank_bm25 divides by zero) score 0.

use rustc_hash::FxHashMap;

/// rank_bm25's `BM25Okapi` defaults: k1 1.5, b 0.75, ε 0.25.
pub const RANK_BM25_K1: f64 = 1.5;
/// See [`RANK_BM25_K1`].
pub const RANK_BM25_B: f64 = 0.75;
/// The share of the mean idf that replaces a negative idf (rank_bm25's `epsilon`).
pub const RANK_BM25_EPSILON: f64 = 0.25;

/// Python's `str.isspace()` for one character, which `str.split()` splits on: Unicode's
/// White_Space characters ([`char::is_whitespace`]) and the four information separators
/// U+001C–U+001F (bidirectional class B or S), which Python counts and Unicode does not.
pub fn is_python_whitespace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `text.lower().split()`: full Unicode lower-casing (final sigma in context, as both
/// Python and [`str::to_lowercase`] apply it), then the maximal runs of non-whitespace
/// ([`is_python_whitespace`]). Punctuation stays attached: `"Court."` → `"court."`.
pub fn lower_split(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(is_python_whitespace)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

/// One tokenised document: its term frequencies, terms in first-occurrence order (the order of
/// rank_bm25's per-document `frequencies` dict), and its length in tokens.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OkapiDoc {
    terms: Vec<(String, u32)>,
    index: FxHashMap<String, usize>,
    len: usize,
}

impl OkapiDoc {
    /// A document of `tokens`.
    pub fn new(tokens: Vec<String>) -> Self {
        let mut doc = Self {
            len: tokens.len(),
            ..Self::default()
        };
        for t in tokens {
            match doc.index.get(&t) {
                Some(&i) => doc.terms[i].1 += 1,
                None => {
                    doc.index.insert(t.clone(), doc.terms.len());
                    doc.terms.push((t, 1));
                }
            }
        }
        doc
    }

    /// A document of `text`, tokenised by [`lower_split`].
    pub fn from_text(text: &str) -> Self {
        Self::new(lower_split(text))
    }

    /// Tokens in the document.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the document has no token.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The distinct terms, in first-occurrence order.
    pub fn terms(&self) -> impl Iterator<Item = &str> {
        self.terms.iter().map(|(t, _)| t.as_str())
    }

    /// The frequency of `term` (0 when absent).
    pub fn tf(&self, term: &str) -> u32 {
        self.index.get(term).map_or(0, |&i| self.terms[i].1)
    }
}

/// `BM25Okapi(corpus, k1, b, epsilon)` over a list of documents (a pool or a corpus).
#[derive(Debug, Clone)]
pub struct RankBm25Okapi<'a> {
    docs: Vec<&'a OkapiDoc>,
    idf: FxHashMap<&'a str, f64>,
    avgdl: f64,
    average_idf: f64,
    k1: f64,
    b: f64,
}

impl<'a> RankBm25Okapi<'a> {
    /// Indexes `docs` as `BM25Okapi.__init__` does.
    pub fn new(docs: Vec<&'a OkapiDoc>, k1: f64, b: f64, epsilon: f64) -> Self {
        // `_initialize`: document frequencies, first occurrence across the documents fixing the order.
        let mut nd: FxHashMap<&'a str, u64> = FxHashMap::default();
        let mut order: Vec<&'a str> = Vec::new();
        let mut total: u64 = 0;
        for d in &docs {
            total += d.len as u64;
            for (t, _) in &d.terms {
                let n = nd.entry(t.as_str()).or_insert_with(|| {
                    order.push(t.as_str());
                    0
                });
                *n += 1;
            }
        }
        let n_docs = docs.len() as f64;
        let avgdl = if docs.is_empty() {
            0.0
        } else {
            total as f64 / n_docs
        };
        // `_calc_idf`.
        let mut idf: FxHashMap<&'a str, f64> = FxHashMap::default();
        let mut idf_sum = 0.0;
        let mut negative = Vec::new();
        for &t in &order {
            let freq = nd[t] as f64;
            let v = (n_docs - freq + 0.5).ln() - (freq + 0.5).ln();
            idf.insert(t, v);
            idf_sum += v;
            if v < 0.0 {
                negative.push(t);
            }
        }
        let average_idf = if order.is_empty() {
            0.0
        } else {
            idf_sum / order.len() as f64
        };
        let eps = epsilon * average_idf;
        for t in negative {
            idf.insert(t, eps);
        }
        Self {
            docs,
            idf,
            avgdl,
            average_idf,
            k1,
            b,
        }
    }

    /// The idf of `term` after the ε floor (0 for a term outside the documents).
    pub fn idf(&self, term: &str) -> f64 {
        self.idf.get(term).copied().unwrap_or(0.0)
    }

    /// The mean idf before the floor (rank_bm25's `average_idf`).
    pub fn average_idf(&self) -> f64 {
        self.average_idf
    }

    /// The mean document length.
    pub fn avgdl(&self) -> f64 {
        self.avgdl
    }

    /// `get_scores(query)`: one score per document, in the documents' order.
    pub fn get_scores(&self, query: &[String]) -> Vec<f64> {
        let mut scores = vec![0.0f64; self.docs.len()];
        if self.avgdl == 0.0 {
            return scores;
        }
        for q in query {
            let idf = self.idf(q);
            for (s, d) in scores.iter_mut().zip(&self.docs) {
                let tf = f64::from(d.tf(q));
                let dl = d.len as f64;
                // numpy's order: `q_freq * (k1 + 1) / (q_freq + k1 * (1 - b + b * doc_len / avgdl))`.
                let denom = tf + self.k1 * (1.0 - self.b + self.b * dl / self.avgdl);
                *s += idf * (tf * (self.k1 + 1.0) / denom);
            }
        }
        scores
    }
}

#[cfg(test)]
mod tests {
    //! Properties checked:
    //! - scores equal rank_bm25 0.2.2's `BM25Okapi(...).get_scores(...)` bit for bit on raw texts
    //!   (case, punctuation, Unicode whitespace, a final sigma), with `text.lower().split()`
    //!   tokens, for the defaults and two other (k1, b) — reference:
    //!   `python3 scripts/rank_bm25_reference.py > baselines/tests/data/rank_bm25_golden.json`;
    //! - the tokeniser splits where Python's `str.split()` does on every code point, and lower-cases
    //!   every code point as Python's `str.lower()` (the same golden file), except code points
    //!   unassigned in Python's Unicode (14.0 for Python 3.11) that Rust's newer Unicode cases;
    //! - on a hand-checkable corpus, the formula: Robertson's idf, the ε · mean-idf floor for a term in
    //!   more than half the documents, (k1 + 1) in the numerator, a repeated query token counted twice.

    use super::*;

    fn golden() -> serde_json::Value {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/rank_bm25_golden.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn scores_match_rank_bm25_bit_for_bit() {
        let g = golden();
        let docs: Vec<OkapiDoc> = g["corpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| OkapiDoc::from_text(t.as_str().unwrap()))
            .collect();
        let tokens: Vec<Vec<String>> = g["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| serde_json::from_value(d.clone()).unwrap())
            .collect();
        for (t, d) in g["corpus"].as_array().unwrap().iter().zip(&tokens) {
            assert_eq!(&lower_split(t.as_str().unwrap()), d, "tokens of {t}");
        }
        let mut checked = 0;
        for case in g["cases"].as_array().unwrap() {
            let (k1, b) = (case["k1"].as_f64().unwrap(), case["b"].as_f64().unwrap());
            let bm = RankBm25Okapi::new(docs.iter().collect(), k1, b, RANK_BM25_EPSILON);
            assert_eq!(
                bm.average_idf().to_bits(),
                case["average_idf"].as_f64().unwrap().to_bits()
            );
            let query = case["query"].as_str().unwrap();
            let want: Vec<f64> = serde_json::from_value(case["scores"].clone()).unwrap();
            let got = bm.get_scores(&lower_split(query));
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(
                    g.to_bits(),
                    w.to_bits(),
                    "{query:?} k1={k1} b={b} doc {i}: {g} vs {w}"
                );
                checked += 1;
            }
        }
        assert!(checked >= 60, "{checked}");
    }

    #[test]
    fn tokeniser_agrees_with_python_on_every_code_point() {
        let g = golden();
        let spaces: Vec<u32> = serde_json::from_value(g["python_whitespace"].clone()).unwrap();
        let ours: Vec<u32> = (0..=0x10FFFFu32)
            .filter_map(char::from_u32)
            .filter(|&c| is_python_whitespace(c))
            .map(u32::from)
            .collect();
        assert_eq!(ours, spaces);
        // Python's `chr(c).lower()` for every code point it changes.
        let lower: Vec<(u32, String)> = serde_json::from_value(g["python_lower"].clone()).unwrap();
        let mut changed: Vec<(u32, String)> = (0..=0x10FFFFu32)
            .filter_map(char::from_u32)
            .map(|c| (u32::from(c), c.to_string().to_lowercase()))
            .filter(|(c, l)| char::from_u32(*c).map(String::from).as_deref() != Some(l.as_str()))
            .collect();
        changed.sort();
        let unicode = g["unicode_version"].as_str().unwrap();
        // A newer Unicode (Rust's) may case code points Python's leaves unassigned: no text Python
        // reads as of its Unicode holds them as letters, so those are not differences.
        let unassigned: Vec<(u32, u32)> = serde_json::from_value(g["python_unassigned"].clone()).unwrap();
        let assigned = |c: u32| !unassigned.iter().any(|&(a, z)| (a..=z).contains(&c));
        let (theirs, ours): (Vec<_>, Vec<_>) = (
            lower.iter().filter(|x| !changed.contains(x)).collect(),
            changed
                .iter()
                .filter(|x| !lower.contains(x) && assigned(x.0))
                .collect(),
        );
        assert!(
            theirs.is_empty() && ours.is_empty(),
            "lower-casing differs from Python's (Unicode {unicode}): Python only {theirs:?}, Rust only {ours:?}"
        );
    }

    /// Hand-checkable: 4 documents, "court" in 3 (idf ln 1.5 − ln 3.5 < 0: floored), "torture" in 1.
    #[test]
    fn the_formula_on_a_tiny_corpus() {
        let docs: Vec<OkapiDoc> = [
            "The Court held",
            "Court. court",
            "torture court",
            "nothing here at all",
        ]
        .iter()
        .map(|t| OkapiDoc::from_text(t))
        .collect();
        // Tokens: [the, court, held], [court., court], [torture, court], [nothing, here, at, all].
        assert_eq!(docs[1].tf("court"), 1);
        assert_eq!(docs[1].tf("court."), 1);
        let bm = RankBm25Okapi::new(docs.iter().collect(), 1.5, 0.75, 0.25);
        assert_eq!(bm.avgdl(), 11.0 / 4.0);
        let idf = |n: f64| (4.0 - n + 0.5f64).ln() - (n + 0.5f64).ln();
        // Terms in first-occurrence order: the, court, held, court., torture, nothing, here, at, all.
        let raw = [1.0, 3.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0].map(idf);
        let mean = raw.iter().sum::<f64>() / 9.0;
        assert_eq!(bm.average_idf(), mean);
        assert!(idf(3.0) < 0.0);
        assert_eq!(bm.idf("court"), 0.25 * mean);
        assert_eq!(bm.idf("torture"), idf(1.0));
        assert_eq!(bm.idf("unknown"), 0.0);
        let part = |idf: f64, tf: f64, dl: f64| idf * (tf * 2.5 / (tf + 1.5 * (0.25 + 0.75 * dl / 2.75)));
        let s = bm.get_scores(&lower_split("TORTURE court court"));
        let want = [
            0.0 + part(0.25 * mean, 1.0, 3.0) + part(0.25 * mean, 1.0, 3.0),
            0.0 + part(0.25 * mean, 1.0, 2.0) + part(0.25 * mean, 1.0, 2.0),
            part(idf(1.0), 1.0, 2.0) + part(0.25 * mean, 1.0, 2.0) + part(0.25 * mean, 1.0, 2.0),
            0.0,
        ];
        assert_eq!(s, want);
        assert!(s[2] > s[1] && s[1] > s[0] && s[0] > s[3], "{s:?}");
    }
}
