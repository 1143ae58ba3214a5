//! Training and validation data read from a built dataset: topics with their positives and
//! candidates, over the dataset's corpus, by index.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use lexbench_core::dataset::CorpusDoc;
use lexbench_core::trec::{Qrels, ReadOptions};
use lexbench_core::{DocId, TopicId};

use crate::error::{Error, Result};
use crate::rank::SplitInputs;

/// One topic of a split.
#[derive(Debug, Clone, PartialEq)]
pub struct Topic {
    /// Its id.
    pub topic: TopicId,
    /// The query text.
    pub text: String,
    /// Relevant documents (grade ≥ 1), corpus indices, sorted.
    pub positives: Vec<usize>,
    /// Candidate documents (corpus indices): the topic's pool, or `None` for the whole corpus.
    pub pool: Option<Vec<usize>>,
}

/// A split of a dataset, by corpus index.
#[derive(Debug, Clone)]
pub struct SplitData {
    /// The dataset's identity hash (from its manifest; recorded with trained models).
    pub dataset_hash: String,
    /// The language its manifest declares (BM25 negatives and curriculum views analyse with it).
    pub language: Option<lexbench_core::dataset::Language>,
    /// The corpus.
    pub docs: Vec<CorpusDoc>,
    /// Doc id → corpus index.
    pub index: HashMap<DocId, usize>,
    /// The split's topics, in the split's order.
    pub topics: Vec<Topic>,
    /// The split's qrels, as read.
    pub qrels: Qrels,
}

impl SplitData {
    /// Reads `split` of `DATA/datasets/<dataset>` (checked against its manifest). With `need_qrels`,
    /// a topic without relevant documents is an error (it cannot be trained on).
    pub fn load(data: &Path, dataset: &str, split: &str, need_positives: bool) -> Result<Self> {
        Self::load_with(data, dataset, split, need_positives, false)
    }

    /// [`SplitData::load`]; with `skip_without_text`, topics whose pool is empty or missing or whose
    /// relevant paragraphs are not in the corpus are left out instead of being errors (a release
    /// imported with only some judgments' text).
    pub fn load_with(
        data: &Path,
        dataset: &str,
        split: &str,
        need_positives: bool,
        skip_without_text: bool,
    ) -> Result<Self> {
        Self::from_inputs(
            &SplitInputs::read(data, dataset, split)?,
            need_positives,
            skip_without_text,
        )
    }

    /// Appends the topics and qrels of `other`, another split of the same dataset (QABISAR's stage 2
    /// joins the validation questions to the training ones). A different dataset or a topic in both
    /// is an error.
    pub fn append(&mut self, other: SplitData) -> Result<()> {
        if other.dataset_hash != self.dataset_hash || other.docs.len() != self.docs.len() {
            return Err(Error::internal(
                "appending a split of another dataset (or another version of it)",
            ));
        }
        if let Some(t) = other
            .topics
            .iter()
            .find(|t| self.topics.iter().any(|s| s.topic == t.topic))
        {
            return Err(Error::data(
                "joined splits",
                format!("topic {} is in both", t.topic),
            ));
        }
        self.topics.extend(other.topics);
        for (topic, judged) in other.qrels.topics {
            self.qrels.topics.entry(topic).or_default().extend(judged);
        }
        Ok(())
    }

    /// [`SplitData::load_with`] over a split already read (the ranking layer's [`SplitInputs`]); the
    /// split's qrels are read here.
    pub fn from_inputs(inputs: &SplitInputs, need_positives: bool, skip_without_text: bool) -> Result<Self> {
        let dir = &inputs.dir;
        let qrels_path = dir.qrels(&inputs.split);
        let qrels = Qrels::read(&qrels_path, &ReadOptions::default())?;
        let index: HashMap<DocId, usize> = inputs
            .corpus
            .iter()
            .enumerate()
            .map(|(i, d)| (d.doc.clone(), i))
            .collect();
        let lookup = |d: &DocId, path: &Path, what: &str| -> Result<usize> {
            index.get(d).copied().ok_or_else(|| Error::Format {
                path: path.to_owned(),
                message: format!("{what} {d} is not in corpus.jsonl"),
            })
        };
        let mut topics = Vec::with_capacity(inputs.topics.len());
        'topics: for t in &inputs.topics {
            let mut positives = BTreeSet::new();
            if let Some(judged) = qrels.topics.get(&t.topic) {
                for (d, &rel) in judged {
                    if rel >= 1 {
                        match lookup(d, &qrels_path, "relevant document") {
                            Ok(i) => positives.insert(i),
                            Err(_) if skip_without_text => continue 'topics,
                            Err(e) => return Err(e),
                        };
                    }
                }
            }
            if skip_without_text {
                let pool_empty = inputs
                    .pools
                    .as_ref()
                    .is_some_and(|p| p.get(&t.topic).is_none_or(|p| p.docs.is_empty()));
                if pool_empty || positives.is_empty() {
                    continue;
                }
            }
            if need_positives && positives.is_empty() {
                return Err(Error::Format {
                    path: qrels_path.clone(),
                    message: format!("topic {} has no relevant document to train on", t.topic),
                });
            }
            let pool = match &inputs.pools {
                Some(pools) => {
                    let p = pools.get(&t.topic).ok_or_else(|| Error::Format {
                        path: dir.pools(),
                        message: format!("topic {} has no pool", t.topic),
                    })?;
                    Some(
                        p.docs
                            .iter()
                            .map(|d| lookup(d, &dir.pools(), "pool document"))
                            .collect::<Result<Vec<_>>>()?,
                    )
                }
                None => None,
            };
            topics.push(Topic {
                topic: t.topic.clone(),
                text: t.text.clone(),
                positives: positives.into_iter().collect(),
                pool,
            });
        }
        let mut qrels = qrels;
        if skip_without_text {
            let kept: BTreeSet<&TopicId> = topics.iter().map(|t| &t.topic).collect();
            qrels.topics.retain(|t, _| kept.contains(t));
        }
        Ok(Self {
            dataset_hash: inputs.manifest.dataset_hash(),
            language: inputs.manifest.language,
            docs: inputs.corpus.clone(),
            index,
            topics,
            qrels,
        })
    }

    /// The candidates of topic `t`: its pool or every document.
    pub fn candidates(&self, t: usize) -> Vec<usize> {
        match &self.topics[t].pool {
            Some(p) => p.clone(),
            None => (0..self.docs.len()).collect(),
        }
    }

    /// Whether the dataset ranks pools (ECtHR) rather than the corpus (BSARD).
    pub fn pooled(&self) -> bool {
        self.topics.iter().any(|t| t.pool.is_some())
    }
}
