//! Zero-shot ColBERT: late interaction (MaxSim) over a checkpoint's token states, ranking each
//! topic's candidates (its pool, or the whole corpus).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use lexbench_core::dataset::DatasetDir;
use lexbench_core::trec::{Hit, trec_order};
use lexbench_core::{DocId, Run};
use serde::{Deserialize, Serialize};

use super::neural::{NeuralOutput, candidates, hidden_size, to_json, write_output};
use super::read_inputs;
use crate::encoder::seeded::{SEED, seeded_normal};
use crate::error::Result;

/// Settings of a ColBERT run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColBertParams {
    /// The system's name.
    pub system: String,
    /// ColBERT's settings.
    pub colbert: crate::scorers::colbert::ColBertConfig,
    /// Documents kept per topic.
    pub top_k: usize,
}

/// Zero-shot ColBERT: late interaction (MaxSim) over the checkpoint's token states. A checkpoint without
/// ColBERT's `linear.weight` (all-MiniLM-L6-v2) gets a seeded Gaussian projection to `dim`: a random
/// projection preserves inner products approximately (Johnson–Lindenstrauss), so MaxSim stays
/// meaningful before any training. Topics sharing a candidate set (one judgment) are scored against
/// its documents encoded once.
pub fn run_colbert(
    data: &Path,
    dataset: &str,
    split: &str,
    model_dir: &Path,
    params: &ColBertParams,
    device: &candle_core::Device,
) -> Result<NeuralOutput> {
    use crate::scorers::colbert::{ColBert, maxsim};
    params.colbert.validate()?;
    let t0 = Instant::now();
    let dir = DatasetDir::in_data(data, dataset)?;
    let inputs = read_inputs(&dir, split)?;
    let device = device.clone();
    let h = hidden_size(model_dir)?;
    let dim = params.colbert.dim;
    let w = candle_core::Tensor::from_vec(
        seeded_normal(dim, h, 1.0 / (h as f64).sqrt(), SEED),
        (dim, h),
        &device,
    )?;
    let vb = candle_nn::VarBuilder::from_tensors(
        [("linear.weight".to_owned(), w)].into(),
        candle_core::DType::F32,
        &device,
    );
    let colbert = ColBert::from_dir(model_dir, &device, params.colbert.clone(), vb)?;
    let text_of: BTreeMap<&DocId, &str> = inputs.corpus.iter().map(|d| (&d.doc, d.text.as_str())).collect();
    // Group topics by candidate set.
    let mut groups: BTreeMap<Vec<&DocId>, Vec<usize>> = BTreeMap::new();
    for (i, t) in inputs.topics.iter().enumerate() {
        groups.entry(candidates(&inputs, &t.topic)).or_default().push(i);
    }
    let mut run = Run::new(params.system.clone());
    let mut encoded = 0;
    for (docs, topics) in &groups {
        let texts: Vec<&str> = docs
            .iter()
            .map(|d| text_of.get(d).copied().unwrap_or(""))
            .collect();
        let dvecs = colbert.encode_docs(&texts)?;
        encoded += texts.len();
        let qs: Vec<&str> = topics.iter().map(|&i| inputs.topics[i].text.as_str()).collect();
        let qvecs = colbert.encode_queries(&qs)?;
        for (&i, q) in topics.iter().zip(&qvecs) {
            let mut hits = Vec::with_capacity(docs.len());
            for (d, dv) in docs.iter().zip(&dvecs) {
                hits.push(Hit {
                    doc: (*d).clone(),
                    score: f64::from(maxsim(q, dv)?),
                });
            }
            hits.sort_by(trec_order);
            hits.truncate(params.top_k);
            run.topics.insert(inputs.topics[i].topic.clone(), hits);
        }
    }
    let timings = [("encode_and_rank_s".to_owned(), t0.elapsed().as_secs_f64())].into();
    let config = to_json(params, model_dir)?;
    write_output(
        data,
        dataset,
        split,
        model_dir,
        &params.system,
        config,
        &inputs,
        run,
        encoded,
        timings,
    )
}
