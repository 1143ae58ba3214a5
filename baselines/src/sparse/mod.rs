//! Exact Okapi BM25: analyzers per language, an in-memory inverted index, statistics through a trait,
//! ranking within per-topic pools or over the whole corpus. Running it over a dataset split is
//! [`crate::rank::bm25`]'s.
//!
//! - [`Analyzer`] / [`Language`]: English (stop words, Snowball English) and French (stop words,
//!   Snowball French, accents folded) chains.
//! - [`Bm25Index`]: postings and exact document lengths, built on all cores (term ids, and so every
//!   score bit, as a one-thread build gives them); [`Bm25Index::search`] ranks the corpus,
//!   [`Bm25Index::search_batch`] many queries at once on all cores (the same results bit for bit),
//!   [`Bm25Index::search_pool`] a pool, all with a bounded heap and ties broken by doc id the trec_eval
//!   way.
//! - [`Bm25Statistics`]: N, avgdl and df, from the corpus ([`CorpusStats`]) or from a pool
//!   ([`PoolStats`]); [`idf`] and [`term_score`] are Lucene's (= bm25s `method="lucene"`) formulas.
//! - [`Bm25Params`]: k1, b (0.9/0.4 by default, Anserini's; [`Bm25Params::robertson`] gives 1.2/0.75),
//!   the pool statistics scope, top-k, the analyzer, the [`Bm25Variant`].
//! - [`rank_bm25`]: rank_bm25's `BM25Okapi` over `str.lower().split()` tokens, the named variant
//!   [`Bm25Variant::RankBm25Okapi`] (the BM25 of the only public script on the ECtHR data).
//!
//! # Pool-local or corpus-wide statistics for ECtHR
//! ECtHR topics rank the paragraphs of one judgment. We default to **pool-local** statistics
//! ([`IdfScope::Pool`]): N, df and avgdl are those of the judgment's paragraphs, exactly as if each
//! judgment were indexed alone (the natural per-judgment index of the task's original setting). Two
//! reasons: a term that fills one judgment (the applicant's name, the respondent State) gets a low
//! weight there, where it does not discriminate, whatever its rarity elsewhere; and a topic's scores
//! depend only on its own judgment, so they do not move when a rebuilt dataset adds or drops other
//! judgments. `idf = "corpus"` is available for comparison. BSARD has no pools: corpus statistics.
//!
//! ```
//! use lexbench_baselines::sparse::{Analyzer, Bm25Index, Bm25Params, Language};
//! use lexbench_core::DocId;
//!
//! let docs = [(DocId::new("a")?, "The right to respect for private life"), (DocId::new("b")?, "Freedom of expression")];
//! let index = Bm25Index::build(Analyzer::new(Language::English), docs.iter().map(|(d, t)| (d, *t)));
//! let hits = index.search("private life", &Bm25Params::default(), 10);
//! assert_eq!(hits.len(), 1);
//! assert_eq!(hits[0].doc.as_str(), "a");
//! # Ok::<(), lexbench_core::Error>(())
//! ```

mod analyzer;
mod index;
mod params;
pub mod rank_bm25;

pub use analyzer::{Analyzer, ENGLISH_STOP_WORDS, FRENCH_STOP_WORDS, Language, fold_accents};
pub use index::{
    Bm25Index, Bm25Statistics, CorpusStats, IdfScope, PoolStats, TermId, idf, length_norm, term_score,
};
pub use params::{Bm25Params, Bm25Variant};

#[cfg(test)]
mod french_articles;
#[cfg(test)]
mod tests;
