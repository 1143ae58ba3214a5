//! The inverted index, the statistics trait and exact Okapi BM25 scoring with a top-k heap.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex, PoisonError};

use lexbench_core::{DocId, Hit};
use rustc_hash::FxHashMap;

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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
///
/// Building analyses contiguous chunks of the corpus on all cores and merges their vocabularies in
/// chunk order, so term ids are those of a one-thread build (first occurrence in the corpus), and with
/// them the order in which [`Bm25Index::search`] adds term scores, hence every bit of a score.
#[derive(Debug)]
pub struct Bm25Index {
    analyzer: Analyzer,
    /// The queries' chain where it is not the documents' ([`Bm25Index::with_query_analyzer`]).
    query_analyzer: Option<Analyzer>,
    vocab: FxHashMap<String, TermId>,
    /// Every lower-cased token seen in the corpus → its term (`None`: a stop word), so that each
    /// distinct surface form is stemmed once, at build time; queries read it too.
    surface: FxHashMap<String, Option<TermId>>,
    ids: Vec<DocId>,
    /// Document number → its place among `ids` sorted as strings (ties in the top-k heap).
    id_rank: Vec<u32>,
    position: HashMap<DocId, u32>,
    docs: Vec<DocTerms>,
    /// term → the documents containing it, by document number.
    postings: Vec<Postings>,
    total_len: u64,
    /// The length norms of the last (k1, b) searched with, keyed by their bits.
    norms: Mutex<Option<LengthNorms>>,
    /// [`Bm25Index::search`]'s accumulator between searches (all zeros).
    scratch: Mutex<Option<Scratch>>,
}

/// One term's postings: document numbers, ascending, and the term's frequency in each; apart, so that
/// adding precomputed scores reads only the numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Postings {
    docs: Vec<u32>,
    tfs: Vec<u32>,
}

impl Postings {
    fn with_capacity(n: usize) -> Self {
        Self {
            docs: Vec::with_capacity(n),
            tfs: Vec::with_capacity(n),
        }
    }

    fn len(&self) -> usize {
        self.docs.len()
    }
}

/// Every document's [`length_norm`] for one (k1, b) under corpus statistics.
#[derive(Debug)]
struct LengthNorms {
    key: (u64, u64),
    norms: Arc<[f64]>,
}

/// One worker's share of a build: the analysis of a contiguous chunk of documents, with term ids local
/// to the chunk (numbered by first occurrence in it).
#[derive(Debug, Default)]
struct Chunk {
    /// The chunk's terms, by local id.
    terms: Vec<String>,
    /// Lower-cased token → local term id (`None`: a stop word).
    surface: FxHashMap<String, Option<TermId>>,
    /// The documents, with local term ids.
    docs: Vec<DocTerms>,
}

/// The worker count for `work` units on this machine, at least 1.
fn threads_for(work: usize) -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(work)
        .max(1)
}

/// Text bytes below which a build is not worth a thread of its own.
const MIN_CHUNK_BYTES: usize = 64 << 10;

/// Reusable per-thread search state: the score of every document and those touched by the query.
#[derive(Debug)]
struct Scratch {
    acc: Vec<f64>,
    touched: Vec<u32>,
    /// The touched documents' scores as [`total_order_key`]s, to find the k-th largest.
    keys: Vec<i64>,
    /// The candidates for the top k.
    ranked: Vec<Ranked>,
    /// The candidates of [`Bm25Index::take_top_scan`], packed.
    packed: Vec<u128>,
}

impl Scratch {
    fn new(num_docs: usize) -> Self {
        Self {
            acc: vec![0.0; num_docs],
            touched: Vec::new(),
            keys: Vec::new(),
            ranked: Vec::new(),
            packed: Vec::new(),
        }
    }
}

impl Bm25Index {
    /// Analyses and indexes `docs` (id, text). A repeated id keeps its first text.
    pub fn build<'a, I>(analyzer: Analyzer, docs: I) -> Self
    where
        I: IntoIterator<Item = (&'a DocId, &'a str)>,
    {
        Self::build_with_threads(analyzer, docs, None)
    }

    /// [`Bm25Index::build`] on `threads` workers (`None`: one per core, fewer for a small corpus).
    /// The index does not depend on the number: a test builds with several and compares.
    fn build_with_threads<'a, I>(analyzer: Analyzer, docs: I, threads: Option<usize>) -> Self
    where
        I: IntoIterator<Item = (&'a DocId, &'a str)>,
    {
        // First text wins, decided in corpus order before anything is split.
        let mut ids = Vec::new();
        let mut position = HashMap::new();
        let mut texts: Vec<&str> = Vec::new();
        for (id, text) in docs {
            if position.contains_key(id) {
                continue;
            }
            position.insert(id.clone(), ids.len() as u32);
            ids.push(id.clone());
            texts.push(text);
        }
        let bytes: usize = texts.iter().map(|t| t.len()).sum();
        let threads = threads
            .unwrap_or_else(|| threads_for(bytes / MIN_CHUNK_BYTES))
            .clamp(1, texts.len().max(1));
        let chunks = split_by_bytes(&texts, bytes, threads);
        let analysed: Vec<Chunk> = if chunks.len() <= 1 {
            vec![analyse_chunk(&analyzer, &texts)]
        } else {
            std::thread::scope(|s| {
                let analyzer = &analyzer;
                let handles: Vec<_> = chunks
                    .iter()
                    .map(|c| s.spawn(move || analyse_chunk(analyzer, c)))
                    .collect();
                handles.into_iter().map(join).collect()
            })
        };

        // Global ids in chunk order: a term new to chunk c gets the next id at its first occurrence
        // in c, exactly as if the chunks had been read one after the other.
        let mut vocab: FxHashMap<String, TermId> = FxHashMap::default();
        let mut surface: FxHashMap<String, Option<TermId>> = FxHashMap::default();
        let mut docs: Vec<DocTerms> = Vec::with_capacity(texts.len());
        for chunk in analysed {
            let global: Vec<TermId> = chunk
                .terms
                .into_iter()
                .map(|term| {
                    let next = vocab.len() as TermId;
                    *vocab.entry(term).or_insert(next)
                })
                .collect();
            let identity = global.iter().enumerate().all(|(l, g)| l as TermId == *g);
            for (token, t) in chunk.surface {
                surface
                    .entry(token)
                    .or_insert_with(|| t.map(|t| global[t as usize]));
            }
            for mut doc in chunk.docs {
                if !identity {
                    for (t, _) in &mut doc.terms {
                        *t = global[*t as usize];
                    }
                    doc.terms.sort_unstable();
                }
                docs.push(doc);
            }
        }

        let mut df = vec![0usize; vocab.len()];
        for doc in &docs {
            for (t, _) in &doc.terms {
                df[*t as usize] += 1;
            }
        }
        let mut postings: Vec<Postings> = df.into_iter().map(Postings::with_capacity).collect();
        let mut total_len = 0u64;
        for (n, doc) in docs.iter().enumerate() {
            for (t, c) in &doc.terms {
                let p = &mut postings[*t as usize];
                p.docs.push(n as u32);
                p.tfs.push(*c);
            }
            total_len += u64::from(doc.len);
        }
        let mut by_id: Vec<u32> = (0..ids.len() as u32).collect();
        by_id.sort_unstable_by(|a, b| ids[*a as usize].as_str().cmp(ids[*b as usize].as_str()));
        let mut id_rank = vec![0u32; ids.len()];
        for (rank, d) in by_id.into_iter().enumerate() {
            id_rank[d as usize] = rank as u32;
        }
        Bm25Index {
            analyzer,
            query_analyzer: None,
            vocab,
            surface,
            ids,
            id_rank,
            position,
            docs,
            postings,
            total_len,
            norms: Mutex::new(None),
            scratch: Mutex::new(None),
        }
    }

    /// The analyzer documents (and, unless [`Bm25Index::with_query_analyzer`] set another, queries)
    /// go through.
    pub fn analyzer(&self) -> &Analyzer {
        &self.analyzer
    }

    /// Queries go through `analyzer` instead of the documents' chain (a cross-lingual dataset: a
    /// French query analysed as French, its terms looked up among the English paragraphs' terms). A
    /// chain of the documents' language changes nothing.
    pub fn with_query_analyzer(mut self, analyzer: Analyzer) -> Self {
        self.query_analyzer = (analyzer.language() != self.analyzer.language()).then_some(analyzer);
        self
    }

    /// The analyzer queries go through.
    pub fn query_analyzer(&self) -> &Analyzer {
        self.query_analyzer.as_ref().unwrap_or(&self.analyzer)
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
        let mut ids = Vec::new();
        let mut buf = String::new();
        if let Some(qa) = &self.query_analyzer {
            // Another language's chain: the documents' surface forms say nothing about its terms.
            qa.for_each_token(query, &mut buf, |token| {
                ids.extend(qa.term(token).and_then(|term| self.vocab.get(&term).copied()));
            });
            ids.sort_unstable();
            return run_lengths(&ids);
        }
        self.analyzer.for_each_token(query, &mut buf, |token| {
            // A token the corpus never had is analysed here, not cached: `&self` stays read-only.
            let t = match self.surface.get(token) {
                Some(t) => *t,
                None => self
                    .analyzer
                    .term(token)
                    .and_then(|term| self.vocab.get(&term).copied()),
            };
            ids.extend(t);
        });
        ids.sort_unstable();
        run_lengths(&ids)
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
        if terms.is_empty() || k == 0 {
            return Vec::new();
        }
        let norms = self.length_norms(params);
        // The accumulator of the previous search, unless another thread is using it. A search that
        // panics does not give it back, so a half-reset one is never reused.
        let cached = self.scratch.lock().unwrap_or_else(PoisonError::into_inner).take();
        let mut scratch = cached.unwrap_or_else(|| Scratch::new(self.docs.len()));
        let hits = self.search_terms(&terms, &norms, &mut scratch, k);
        *self.scratch.lock().unwrap_or_else(PoisonError::into_inner) = Some(scratch);
        hits
    }

    /// [`Bm25Index::search`] for each of `queries`, on all cores: the result for `queries[i]` is at
    /// `i`, bit for bit what `search(queries[i], params, k)` returns. It holds one `f64` per posting of
    /// each distinct (term, query frequency) of the batch while it runs (at most the index's postings
    /// count once per query frequency in use).
    pub fn search_batch(&self, queries: &[&str], params: &Bm25Params, k: usize) -> Vec<Vec<Hit>> {
        self.search_batch_with_threads(queries, params, k, threads_for(queries.len()))
    }

    /// [`Bm25Index::search_batch`] on `threads` workers (at least one).
    ///
    /// Each distinct (term, query frequency) of the batch is scored once for every document of its
    /// postings, with `search`'s expression and norms; the queries then only add those numbers, in
    /// `search`'s term order, so every sum is `search`'s bit for bit. Both steps take their items one
    /// at a time from a shared counter.
    fn search_batch_with_threads(
        &self,
        queries: &[&str],
        params: &Bm25Params,
        k: usize,
        threads: usize,
    ) -> Vec<Vec<Hit>> {
        if queries.is_empty() || k == 0 {
            return vec![Vec::new(); queries.len()];
        }
        // Each query as slots into `pairs`, in term id order.
        let mut slots: FxHashMap<(TermId, u32), u32> = FxHashMap::default();
        let mut pairs: Vec<(TermId, u32)> = Vec::new();
        let plans: Vec<Vec<u32>> = queries
            .iter()
            .map(|q| {
                self.query_terms(q)
                    .into_iter()
                    .map(|pair| {
                        *slots.entry(pair).or_insert_with(|| {
                            pairs.push(pair);
                            (pairs.len() - 1) as u32
                        })
                    })
                    .collect()
            })
            .collect();
        let norms = self.length_norms(params);
        let n = self.docs.len() as u64;
        let impacts: Vec<Vec<f64>> = par_map(
            &pairs,
            threads,
            || (),
            |(), &(t, qtf)| {
                let postings = &self.postings[t as usize];
                let w = idf(n, postings.len() as u64) * f64::from(qtf);
                postings
                    .docs
                    .iter()
                    .zip(&postings.tfs)
                    .map(|(&d, &tf)| {
                        // `search_terms`'s expression, operation for operation.
                        let tf = f64::from(tf);
                        w * tf / (tf + norms[d as usize])
                    })
                    .collect()
            },
        );
        par_map(
            &plans,
            threads,
            || Scratch::new(self.docs.len()),
            |scratch, plan| {
                // Plain locals, so the loop keeps them in registers. No first-touch test in the loop:
                // the touched documents are the non-zero slots afterwards (every term score is > 0).
                let acc = scratch.acc.as_mut_slice();
                for &slot in plan {
                    let docs = &self.postings[pairs[slot as usize].0 as usize].docs;
                    for (&d, &c) in docs.iter().zip(&impacts[slot as usize]) {
                        acc[d as usize] += c;
                    }
                }
                if plan.is_empty() {
                    return Vec::new();
                }
                self.take_top_scan(scratch, k)
            },
        )
    }

    /// The length norms for `params` under corpus statistics, computed once per (k1, b) and kept
    /// until another pair is asked for.
    fn length_norms(&self, params: &Bm25Params) -> Arc<[f64]> {
        let key = (params.k1.to_bits(), params.b.to_bits());
        let mut cache = self.norms.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = cache.as_ref()
            && c.key == key
        {
            return Arc::clone(&c.norms);
        }
        let avgdl = self.corpus_stats().avg_doc_len();
        let norms: Arc<[f64]> = self
            .docs
            .iter()
            .map(|d| length_norm(f64::from(d.len), avgdl, params.k1, params.b))
            .collect();
        *cache = Some(LengthNorms {
            key,
            norms: Arc::clone(&norms),
        });
        norms
    }

    /// Scores the corpus for `terms` (non-empty) in `scratch` (all zeros on entry and on return) and
    /// keeps the best `k` (≥ 1).
    fn search_terms(
        &self,
        terms: &[(TermId, u32)],
        norms: &[f64],
        scratch: &mut Scratch,
        k: usize,
    ) -> Vec<Hit> {
        let n = self.docs.len() as u64;
        let Scratch { acc, touched, .. } = &mut *scratch;
        for (t, qtf) in terms {
            let postings = &self.postings[*t as usize];
            let w = idf(n, postings.len() as u64) * f64::from(*qtf);
            for (&d, &tf) in postings.docs.iter().zip(&postings.tfs) {
                let slot = &mut acc[d as usize];
                if *slot == 0.0 {
                    touched.push(d);
                }
                // The operations of term_score(w, …) with the same norm: bit-identical to `score`.
                let tf = f64::from(tf);
                *slot += w * tf / (tf + norms[d as usize]);
            }
        }
        self.take_top(scratch, k)
    }

    /// The best `k` documents of `scratch`'s scores in trec_eval order, and `scratch` back to all zeros.
    fn take_top(&self, scratch: &mut Scratch, k: usize) -> Vec<Hit> {
        let Scratch {
            acc,
            touched,
            keys,
            ranked,
            ..
        } = scratch;
        // Every term score is > 0 (idf > 0, tf ≥ 1), so a slot is 0 exactly until its first touch and
        // `touched` holds each matching document once, in no particular order.
        //
        // Only scores at or above the k-th largest can be among the k best (ties at it included), so
        // a selection on the bare scores finds that threshold, and only the documents that reach it are
        // sorted in trec_eval order. `Ranked`'s order is total and strict (ids are unique), so its k
        // first elements are one set however they are found: these are what the bounded heap of
        // `top_k` keeps.
        let threshold = if touched.len() > k {
            keys.clear();
            keys.extend(touched.iter().map(|&d| total_order_key(acc[d as usize])));
            let at = keys.len() - k;
            *keys.select_nth_unstable(at).1
        } else {
            i64::MIN
        };
        ranked.clear();
        for d in touched.drain(..) {
            let score = std::mem::take(&mut acc[d as usize]);
            if total_order_key(score) >= threshold {
                ranked.push(Ranked {
                    score,
                    id_rank: self.id_rank[d as usize],
                    doc: d,
                });
            }
        }
        ranked.sort_unstable();
        ranked.truncate(k);
        ranked
            .iter()
            .map(|r| Hit {
                doc: self.ids[r.doc as usize].clone(),
                score: r.score,
            })
            .collect()
    }

    /// [`Bm25Index::take_top`] for an accumulator whose touched documents were not recorded: one scan
    /// of `scratch.acc` (left all zeros) finds the matching documents, each packed with its order in
    /// one integer, so that selecting the k best and sorting them compares integers only.
    ///
    /// Every score is > 0, so its bits, read as an integer, order as the scores do (and give the
    /// score back). The packing `bits << 64 | id_rank << 32 | doc` orders by score, then by id
    /// (trec_eval's tie-break: the larger id first), and is unique: the k largest are the k first
    /// of trec_eval order, the set `take_top` finds.
    fn take_top_scan(&self, scratch: &mut Scratch, k: usize) -> Vec<Hit> {
        let Scratch { acc, packed, .. } = scratch;
        packed.clear();
        for (d, slot) in acc.iter_mut().enumerate() {
            if *slot != 0.0 {
                let bits = std::mem::take(slot).to_bits();
                let id_rank = self.id_rank[d];
                packed.push(u128::from(bits) << 64 | u128::from(id_rank) << 32 | d as u128);
            }
        }
        if packed.len() > k {
            let at = packed.len() - k;
            packed.select_nth_unstable(at);
            packed.drain(..at);
        }
        packed.sort_unstable_by(|a, b| b.cmp(a));
        packed
            .iter()
            .map(|&p| Hit {
                doc: self.ids[p as u32 as usize].clone(),
                score: f64::from_bits((p >> 64) as u64),
            })
            .collect()
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
        // A max-heap of "worse first" entries: the root is the worst document kept. The k best of a
        // strict total order are one set whatever the order candidates come in.
        let mut heap: BinaryHeap<Ranked> = BinaryHeap::with_capacity(k.min(self.docs.len()) + 1);
        for (d, score) in scored {
            let cand = Ranked {
                score,
                id_rank: self.id_rank[d as usize],
                doc: d,
            };
            if heap.len() < k {
                heap.push(cand);
            } else if let Some(mut worst) = heap.peek_mut()
                && cand < *worst
            {
                // Replaces the root and sifts it down once (`PeekMut`'s drop).
                *worst = cand;
            }
        }
        heap.into_sorted_vec()
            .into_iter()
            .map(|r| Hit {
                doc: self.ids[r.doc as usize].clone(),
                score: r.score,
            })
            .collect()
    }
}

/// An integer whose order is [`f64::total_cmp`]'s order of `x` (the transform `total_cmp` itself
/// applies before comparing), so that selecting on it is cheap.
fn total_order_key(x: f64) -> i64 {
    let bits = x.to_bits() as i64;
    bits ^ ((((bits >> 63) as u64) >> 1) as i64)
}

/// Sorted term ids → (term id, count) runs.
fn run_lengths(sorted: &[TermId]) -> Vec<(TermId, u32)> {
    let mut out: Vec<(TermId, u32)> = Vec::new();
    for &t in sorted {
        match out.last_mut() {
            Some((last, c)) if *last == t => *c += 1,
            _ => out.push((t, 1)),
        }
    }
    out
}

/// `texts` cut into at most `parts` contiguous, non-empty runs of about `total / parts` bytes each.
fn split_by_bytes<'t, 'a>(texts: &'t [&'a str], total: usize, parts: usize) -> Vec<&'t [&'a str]> {
    let mut out = Vec::with_capacity(parts);
    let (mut start, mut acc) = (0, 0usize);
    for (i, t) in texts.iter().enumerate() {
        acc += t.len();
        // Cut after document i once the runs so far hold their share of the bytes.
        if out.len() + 1 < parts && acc * parts >= total * (out.len() + 1) {
            out.push(&texts[start..=i]);
            start = i + 1;
        }
    }
    if start < texts.len() {
        out.push(&texts[start..]);
    }
    out
}

/// Analyses one chunk: each distinct lower-cased token goes through stop words and stemming once,
/// each document's term ids are counted by sorting them.
fn analyse_chunk(analyzer: &Analyzer, texts: &[&str]) -> Chunk {
    let mut chunk = Chunk::default();
    let mut local: FxHashMap<String, TermId> = FxHashMap::default();
    let (mut buf, mut ids) = (String::new(), Vec::new());
    for text in texts {
        ids.clear();
        let Chunk { terms, surface, .. } = &mut chunk;
        analyzer.for_each_token(text, &mut buf, |token| {
            let t = match surface.get(token) {
                Some(t) => *t,
                None => {
                    let t = analyzer.term(token).map(|term| {
                        let next = terms.len() as TermId;
                        *local.entry(term).or_insert_with_key(|term| {
                            terms.push(term.clone());
                            next
                        })
                    });
                    surface.insert(token.to_owned(), t);
                    t
                }
            };
            ids.extend(t);
        });
        let len = ids.len() as u32;
        ids.sort_unstable();
        chunk.docs.push(DocTerms {
            terms: run_lengths(&ids),
            len,
        });
    }
    chunk
}

/// `f` applied to each of `items` on up to `threads` workers, each with its own `state()`, which take
/// the items one at a time from a shared counter; the results in item order.
fn par_map<T, R, S>(
    items: &[T],
    threads: usize,
    state: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &T) -> R + Sync,
) -> Vec<R>
where
    T: Sync,
    R: Send,
{
    let threads = threads.min(items.len());
    if threads <= 1 {
        let mut s = state();
        return items.iter().map(|item| f(&mut s, item)).collect();
    }
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut s = state();
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, AtomicOrdering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        done.push((i, f(&mut s, item)));
                    }
                    done
                })
            })
            .collect();
        handles.into_iter().flat_map(join).collect()
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// A worker's result; a worker's panic goes on in the caller.
fn join<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
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
#[derive(Debug, Clone, Copy)]
struct Ranked {
    score: f64,
    /// The document's place among the index's ids sorted as strings: comparing places is comparing
    /// ids, without reading them.
    id_rank: u32,
    doc: u32,
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        // Higher score first; on equal scores the larger doc id first (trec_eval's comp_sim_docno).
        other
            .score
            .total_cmp(&self.score)
            .then_with(|| other.id_rank.cmp(&self.id_rank))
    }
}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Ranked {}

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

#[cfg(test)]
mod tests;
