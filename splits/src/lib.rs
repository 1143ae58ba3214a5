//! # lexbench-splits
//!
//! Assembling datasets from parsed records: citation resolution (case name + year → HUDOC itemid, with
//! an audit trail), candidate pools (ECtHR: the paragraphs of one judgment per topic; BSARD: the whole
//! corpus), qrels, the settings *seen guide/seen query*, *seen guide/unseen query* and *unseen guide*,
//! statistics, and a diff against the published release.
//!
//! Status: not built yet (see the dataset-builder issue).
