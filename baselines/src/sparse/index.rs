//! The inverted index, the statistics trait and exact Okapi BM25 scoring with a top-k heap.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use lexbench_core::{DocId, Hit};

use super::analyzer::Analyzer;
use super::params::Bm25Params;

/// A term's number in an index's vocabulary.
pub type TermId = u32;

/// The collection statistics BM25 needs, kept apart from the scorer so that the same scorer can use
/// corpus-wide or pool-local statistics (tantivy's `Bm25StatisticsProvider` idea).
pub trait Bm25Statistics {
    /// N: the number of documents.
    fn num_docs(&self) -> u64;
    /// The mean document length in terms.
    fn avg_doc_len(&self) -> f64;
    /// The number of documents containing `term`.
    fn doc_freq(&self, term: TermId) -> u64;
}

/// IDF as Lucene (≥ 8), Anserini and bm25s (`method="lucene"`) compute it:
/// `ln(1 + (N − df + 0.5) / (df + 0.5))`. Always positive, unlike Robertson's original
/// `ln((N − df + 0.5) / (df + 0.5))`, which turns negative for terms in more than half the documents
/// (and would reward *missing* a common term inside a small pool).
pub fn idf(num_docs: u64, doc_freq: u64) -> f64 {
    let (n, df) = (num_docs as f64, doc_freq as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// One term's contribution: `idf · tf / (tf + k1 · (1 − b + b · dl / avgdl))`, with the exact document
/// length `dl` (Lucene quantises it to one byte; we do not). This is Lucene's and bm25s's `lucene`
/// formula; it omits the constant `(k1 + 1)` numerator factor of Robertson's, which does not change any
/// ranking.
pub fn term_score(idf: f64, tf: f64, doc_len: f64, avg_doc_len: f64, k1: f64, b: f64) -> f64 {
    idf * tf / (tf + length_norm(doc_len, avg_doc_len, k1, b))
}

/// The document-length part of [`term_score`]'s denominator: `k1 · (1 − b + b · dl / avgdl)`.
pub fn length_norm(doc_len: f64, avg_doc_len: f64, k1: f64, b: f64) -> f64 {
    let norm = if avg_doc_len > 0.0 {
        1.0 - b + b * doc_len / avg_doc_len
    } else {
        1.0
    };
    k1 * norm
}

/// One analysed document: its terms with frequencies (sorted by term id) and its length.
#[derive(Debug, Clone, Default)]
struct DocTerms {
    terms: Vec<(TermId, u32)>,
    len: u32,
}

impl DocTerms {
    fn tf(&self, term: TermId) -> u32 {
        self.terms
            .binary_search_by_key(&term, |(t, _)| *t)
            .map_or(0, |i| self.terms[i].1)
    }
}

/// An in-memory BM25 index: the vocabulary, per-document term frequencies and lengths, and postings.
#[derive(Debug)]
pub struct Bm25Index {
    analyzer: Analyzer,
    vocab: HashMap<String, TermId>,
    ids: Vec<DocId>,
    position: HashMap<DocId, u32>,
    docs: Vec<DocTerms>,
    /// term → (document number, tf), by document number.
    postings: Vec<Vec<(u32, u32)>>,
    total_len: u64,
}

impl Bm25Index {
    /// Analyses and indexes `docs` (id, text). A repeated id keeps its first text.
    pub fn build<'a, I>(analyzer: Analyzer, docs: I) -> Self
    where
        I: IntoIterator<Item = (&'a DocId, &'a str)>,
    {
        let mut idx = Bm25Index {
            analyzer,
            vocab: HashMap::new(),
            ids: Vec::new(),
            position: HashMap::new(),
            docs: Vec::new(),
            postings: Vec::new(),
            total_len: 0,
        };
        let mut counts: HashMap<TermId, u32> = HashMap::new();
        for (id, text) in docs {
            if idx.position.contains_key(id) {
                continue;
            }
            let n = idx.ids.len() as u32;
            counts.clear();
            let mut len = 0u32;
            let (analyzer, vocab, postings) = (&idx.analyzer, &mut idx.vocab, &mut idx.postings);
            analyzer.for_each_term(text, |term| {
                let next = vocab.len() as TermId;
                let t = *vocab.entry(term).or_insert(next);
                if t == next {
                    postings.push(Vec::new());
                }
                *counts.entry(t).or_insert(0) += 1;
                len += 1;
            });
            let mut terms: Vec<(TermId, u32)> = counts.iter().map(|(t, c)| (*t, *c)).collect();
            terms.sort_unstable();
            for (t, c) in &terms {
                idx.postings[*t as usize].push((n, *c));
            }
            idx.total_len += u64::from(len);
            idx.docs.push(DocTerms { terms, len });
            idx.position.insert(id.clone(), n);
            idx.ids.push(id.clone());
        }
        idx
    }

    /// The analyzer documents and queries go through.
    pub fn analyzer(&self) -> &Analyzer {
        &self.analyzer
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Number of distinct terms.
    pub fn vocabulary_len(&self) -> usize {
        self.vocab.len()
    }

    /// The document number of `id`, if indexed.
    pub fn doc_number(&self, id: &DocId) -> Option<u32> {
        self.position.get(id).copied()
    }

    /// The query's terms that occur in the index, each with its multiplicity in the query (a term
    /// asked twice counts twice, as in bm25s, rank_bm25 and a Lucene `BooleanQuery`), sorted.
    pub fn query_terms(&self, query: &str) -> Vec<(TermId, u32)> {
        let mut q: HashMap<TermId, u32> = HashMap::new();
        self.analyzer.for_each_term(query, |term| {
            if let Some(t) = self.vocab.get(&term) {
                *q.entry(*t).or_insert(0) += 1;
            }
        });
        let mut v: Vec<_> = q.into_iter().collect();
        v.sort_unstable();
        v
    }

    /// Corpus-wide statistics.
    pub fn corpus_stats(&self) -> CorpusStats<'_> {
        CorpusStats(self)
    }

    /// Statistics of the documents `pool` (document numbers) for the terms `terms`: N is the pool size,
    /// avgdl the pool's mean length, df counted inside the pool.
    pub fn pool_stats(&self, pool: &[u32], terms: &[(TermId, u32)]) -> PoolStats {
        let mut df = HashMap::with_capacity(terms.len());
        let mut total = 0u64;
        for &d in pool {
            let doc = &self.docs[d as usize];
            total += u64::from(doc.len);
            for (t, _) in terms {
                if doc.tf(*t) > 0 {
                    *df.entry(*t).or_insert(0u64) += 1;
                }
            }
        }
        PoolStats {
            num_docs: pool.len() as u64,
            avg_doc_len: if pool.is_empty() {
                0.0
            } else {
                total as f64 / pool.len() as f64
            },
            df,
        }
    }

    /// The BM25 score of document `doc` for `terms` under `stats`.
    pub fn score(
        &self,
        doc: u32,
        terms: &[(TermId, u32)],
        stats: &dyn Bm25Statistics,
        params: &Bm25Params,
    ) -> f64 {
        let d = &self.docs[doc as usize];
        let (n, avgdl) = (stats.num_docs(), stats.avg_doc_len());
        terms
            .iter()
            .map(|(t, qtf)| {
                let tf = d.tf(*t);
                if tf == 0 {
                    return 0.0;
                }
                // The same expression as `search`, so both paths round identically.
                let w = idf(n, stats.doc_freq(*t)) * f64::from(*qtf);
                term_score(w, f64::from(tf), f64::from(d.len), avgdl, params.k1, params.b)
            })
            .sum()
    }

    /// Ranks the whole corpus for `query` with corpus statistics: the best `k` documents that contain at
    /// least one query term, in trec_eval order (score descending, ties by doc id descending).
    pub fn search(&self, query: &str, params: &Bm25Params, k: usize) -> Vec<Hit> {
        let terms = self.query_terms(query);
        let stats = self.corpus_stats();
        let (n, avgdl) = (stats.num_docs(), stats.avg_doc_len());
        let mut acc = vec![0.0f64; self.docs.len()];
        let mut touched: Vec<u32> = Vec::new();
        // Length norms once per search, in one contiguous array (the postings loop stays in cache).
        let norms: Vec<f64> = if terms.is_empty() {
            Vec::new()
        } else {
            self.docs
                .iter()
                .map(|d| length_norm(f64::from(d.len), avgdl, params.k1, params.b))
                .collect()
        };
        for (t, qtf) in &terms {
            let postings = &self.postings[*t as usize];
            let w = idf(n, postings.len() as u64) * f64::from(*qtf);
            for &(d, tf) in postings {
                let slot = &mut acc[d as usize];
                if *slot == 0.0 {
                    touched.push(d);
                }
                // The operations of term_score(w, …) with the same norm: bit-identical to `score`.
                let tf = f64::from(tf);
                *slot += w * tf / (tf + norms[d as usize]);
            }
        }
        // Every term score is > 0 (idf > 0, tf ≥ 1), so a slot is 0 exactly until its first touch and
        // `touched` holds each matching document once; the heap does not need them in order.
        self.top_k(touched.into_iter().map(|d| (d, acc[d as usize])), k)
    }

    /// Ranks the documents of `pool` (document numbers) for `query`, every pool document included
    /// (those without a query term score 0), with statistics from `stats` (see [`IdfScope`]).
    pub fn search_pool(
        &self,
        query: &str,
        pool: &[u32],
        params: &Bm25Params,
        scope: IdfScope,
        k: usize,
    ) -> Vec<Hit> {
        let terms = self.query_terms(query);
        let pool_stats;
        let stats: &dyn Bm25Statistics = match scope {
            IdfScope::Pool => {
                pool_stats = self.pool_stats(pool, &terms);
                &pool_stats
            }
            IdfScope::Corpus => &CorpusStats(self),
        };
        self.top_k(pool.iter().map(|&d| (d, self.score(d, &terms, stats, params))), k)
    }

    /// The best `k` of `scored` by a bounded heap, returned in trec_eval order.
    fn top_k(&self, scored: impl Iterator<Item = (u32, f64)>, k: usize) -> Vec<Hit> {
        if k == 0 {
            return Vec::new();
        }
        // A max-heap of "worse first" entries: the root is the worst document kept.
        let mut heap: BinaryHeap<Ranked<'_>> = BinaryHeap::with_capacity(k.min(self.docs.len()) + 1);
        for (d, score) in scored {
            let cand = Ranked {
                score,
                id: &self.ids[d as usize],
            };
            if heap.len() < k {
                heap.push(cand);
            } else if let Some(worst) = heap.peek()
                && cand < *worst
            {
                heap.pop();
                heap.push(cand);
            }
        }
        heap.into_sorted_vec()
            .into_iter()
            .map(|r| Hit {
                doc: r.id.clone(),
                score: r.score,
            })
            .collect()
    }
}

/// Which documents IDF and avgdl are computed over when ranking a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IdfScope {
    /// The pool's own documents (ECtHR default): each topic is scored as if its judgment were indexed
    /// alone, so a topic's scores do not change when other judgments enter or leave the dataset.
    #[default]
    Pool,
    /// The whole corpus.
    Corpus,
}

/// A candidate in the top-k heap, ordered so that "less" means "ranks earlier" in trec_eval order.
struct Ranked<'a> {
    score: f64,
    id: &'a DocId,
}

impl Ord for Ranked<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        // Higher score first; on equal scores the larger doc id first (trec_eval's comp_sim_docno).
        other
            .score
            .total_cmp(&self.score)
            .then_with(|| other.id.as_str().cmp(self.id.as_str()))
    }
}
impl PartialOrd for Ranked<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Ranked<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Ranked<'_> {}

/// Corpus-wide statistics of an index.
#[derive(Debug, Clone, Copy)]
pub struct CorpusStats<'a>(&'a Bm25Index);

impl Bm25Statistics for CorpusStats<'_> {
    fn num_docs(&self) -> u64 {
        self.0.docs.len() as u64
    }
    fn avg_doc_len(&self) -> f64 {
        if self.0.docs.is_empty() {
            0.0
        } else {
            self.0.total_len as f64 / self.0.docs.len() as f64
        }
    }
    fn doc_freq(&self, term: TermId) -> u64 {
        self.0.postings.get(term as usize).map_or(0, |p| p.len() as u64)
    }
}

/// Statistics of one pool, for the query terms they were computed for.
#[derive(Debug, Clone)]
pub struct PoolStats {
    num_docs: u64,
    avg_doc_len: f64,
    df: HashMap<TermId, u64>,
}

impl Bm25Statistics for PoolStats {
    fn num_docs(&self) -> u64 {
        self.num_docs
    }
    fn avg_doc_len(&self) -> f64 {
        self.avg_doc_len
    }
    fn doc_freq(&self, term: TermId) -> u64 {
        self.df.get(&term).copied().unwrap_or(0)
    }
}
