//! The end-to-end tests of the `lexbench` command line and of the root library's stages, in one test
//! binary (one link instead of one per file). Each module opens with the properties it checks;
//! [`common`] runs the binary.

mod common;

mod args;
mod colbert_lengths;
mod crawl;
mod curriculum;
mod data_safety;
mod datasets;
mod dense;
mod eval;
mod experiment;
mod experiment_slurm;
mod export;
mod export_libraries;
mod guide_editions;
mod hf_models;
mod hier_dense;
mod hostile;
mod hub_fetch;
mod import_texts;
#[cfg(unix)]
mod kills;
mod lexclipr;
mod lib_stages;
mod model_errors;
mod model_folders;
mod open_corpus;
mod parse_guide;
mod parse_judgment;
mod parse_store;
mod pipeline;
mod probe3_models;
mod probe3_readers;
mod probe4;
mod rank_folder;
mod reproduce;
mod reproducible;
mod run_submit;
mod same_bits;
mod submit_model;
mod train;
mod train_prefixes;
mod trained_cross;
mod trained_lengths;
