//! `submit`: validate a run against the dataset split it claims, evaluate it, and record an entry.

use std::path::{Path, PathBuf};

use lexbench_core::dataset::sha256_file;
use lexbench_core::run::SidecarClaims;
use lexbench_core::{ReadOptions, Run, evaluate};

use crate::board::{BASELINE, BASELINE_SIDECAR_SYSTEM, is_baseline_name};
use crate::card::{ModelCard, line_containing, line_of_key};
use crate::dataset::DatasetView;
use crate::entry::{
    DatasetRef, Entry, Harness, Provenance, RunRef, SCHEMA_VERSION, entries_dir, now_rfc3339, write_new,
};
use crate::error::{Error, Problem, Result};
use crate::validate::{Report, validate_run};

/// What the evaluator is, recorded in every entry.
pub const EVALUATOR: &str = concat!(
    "lexbench-core ",
    env!("CARGO_PKG_VERSION"),
    " (trec_eval -c semantics; R@k% cut-off max(1, ceil(k*n/100)))"
);

/// The largest run sidecar (`RUN.json`), in bytes. The sidecar is copied into the entry.
pub const MAX_SIDECAR_BYTES: usize = 64 * 1024;

/// The longest system name, in characters.
pub const MAX_NAME_CHARS: usize = 80;

/// A submission.
#[derive(Debug, Clone)]
pub struct SubmitRequest<'a> {
    /// The data directory (`DATA`).
    pub data: &'a Path,
    /// The TREC run file. A JSON sidecar beside it (`RUN` with extension `.json`) is read if present.
    pub run: &'a Path,
    /// The dataset it claims (`DATA/datasets/<dataset>`).
    pub dataset: &'a str,
    /// The split it ranks.
    pub split: &'a str,
    /// The system's name on the leaderboard.
    pub name: &'a str,
    /// A model card (TOML).
    pub card: Option<&'a Path>,
}

/// A run validated and evaluated as a submission, not yet recorded: the entry it would write (its
/// `id` and `seal` still empty) and what validation found.
#[derive(Debug, Clone)]
pub struct Assessed {
    /// The entry.
    pub entry: Entry,
    /// What validation found.
    pub report: Report,
}

/// An accepted submission.
#[derive(Debug, Clone)]
pub struct Submitted {
    /// The entry written.
    pub entry: Entry,
    /// Where.
    pub path: PathBuf,
    /// What validation found.
    pub report: Report,
}

/// Checks a system name: 1 to [`MAX_NAME_CHARS`] characters, not blank, none of them hidden
/// ([`is_hidden`]). Markup is allowed: every rendering escapes it.
pub fn check_system_name(name: &str) -> Result<()> {
    let chars = name.chars().count();
    // A name too long is quoted by its start: the message stays one readable line.
    let shown: String = if chars > MAX_NAME_CHARS {
        name.chars().take(40).chain(['…']).collect()
    } else {
        name.to_owned()
    };
    let bad = |why: String| Err(Error::Param(format!("system name {shown:?}: {why}")));
    if name.trim().is_empty() {
        return bad("must not be blank".into());
    }
    if chars > MAX_NAME_CHARS {
        return bad(format!(
            "{chars} characters; at most {MAX_NAME_CHARS} are allowed"
        ));
    }
    if let Some(c) = name.chars().find(|c| is_hidden(*c)) {
        return bad(format!(
            "U+{:04X} is a control, format or line-separator character; names hold visible text only",
            u32::from(c)
        ));
    }
    Ok(())
}

/// Is `c` a character that is not shown as itself: a control (general category Cc), a format
/// character (Cf: the bidirectional overrides and isolates such as U+202E, zero-width spaces and
/// joiners, the byte-order mark, the soft hyphen, …) or a line or paragraph separator (Zl, Zp)? Such
/// characters can make one name look like another, or reorder what follows it on the page.
pub fn is_hidden(c: char) -> bool {
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
    matches!(
        c.general_category(),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
    )
}

/// A file the submission brings (sidecar, model card) that is too large or not UTF-8 is a problem of
/// the submission, listed with the others; other errors stay errors.
fn as_problem(e: Error) -> Result<Problem> {
    use lexbench_core::Error as Core;
    match e {
        Error::Core(Core::TooLarge { path, max_bytes }) => Ok(Problem {
            path,
            line: None,
            message: format!("the file is larger than {max_bytes} bytes; at most {max_bytes} are allowed"),
        }),
        Error::Core(Core::Line { path, line, error }) => Ok(Problem {
            path,
            line: Some(line),
            message: error.to_string(),
        }),
        e => Err(e),
    }
}

/// The sidecar path of a run: `RUN` with its extension replaced by `.json`.
pub fn sidecar_path(run: &Path) -> PathBuf {
    run.with_extension("json")
}

/// Validates, evaluates and records a submission. A run that does not fit the dataset is
/// `Err(Error::Rejected)` with every problem named by file and line; nothing is written then.
///
/// The name [`BASELINE`] is reserved, in any case: it is accepted only, and exactly so spelt, for the
/// run `lexbench run bm25` wrote, recognised by its sidecar ([`crate::board::is_baseline`]); any other submission
/// under that name is `Err(Error::Param)`. So the board has one baseline, and no submission can pose
/// as it.
///
/// The entry is always self-reported ([`Provenance::SelfReported`]): nothing a run file brings (its
/// sidecar, its card) can make it verified.
pub fn submit(req: &SubmitRequest<'_>) -> Result<Submitted> {
    let Assessed { mut entry, report } = assess(req)?;
    let path = write_new(&entries_dir(req.data), &mut entry)?;
    Ok(Submitted { entry, path, report })
}

/// Records a run the harness made itself from a model (`lexbench submit --model`): validated and
/// evaluated exactly as [`submit()`] does, its entry marked verified with `harness`'s record. The
/// model card is required and checked as a model's card ([`ModelCard::check_for_model`]); the system
/// name must be the card's `name`.
pub fn submit_verified(req: &SubmitRequest<'_>, harness: Harness) -> Result<Submitted> {
    let card = req
        .card
        .ok_or_else(|| Error::Param("a model submission needs a model card (--card CARD.toml)".into()))?;
    let (parsed, text) = ModelCard::read(card)?;
    let problems = parsed.check_for_model(card, &text);
    if !problems.is_empty() {
        return Err(Error::Rejected { problems });
    }
    if parsed.name.as_deref() != Some(req.name) {
        return Err(Error::Param(format!(
            "system name {:?} is not the name the card {} gives ({:?})",
            req.name,
            card.display(),
            parsed.name.as_deref().unwrap_or_default()
        )));
    }
    let Assessed { mut entry, report } = assess(req)?;
    entry.provenance = Provenance::Verified(harness);
    let path = write_new(&entries_dir(req.data), &mut entry)?;
    Ok(Submitted { entry, path, report })
}

/// Validates and evaluates a submission as [`submit()`] does, and returns the self-reported entry it
/// would record, writing nothing (`lexbench leaderboard --recheck` compares such an entry of a
/// re-run with the recorded one).
pub fn assess(req: &SubmitRequest<'_>) -> Result<Assessed> {
    check_system_name(req.name)?;
    let view = DatasetView::load(req.data, req.dataset, req.split)?;
    let hash = view.hash();
    let mut problems = Vec::new();
    let report = match validate_run(req.run, &view) {
        Ok(r) => Some(r),
        Err(Error::Rejected { problems: p }) => {
            problems.extend(p);
            None
        }
        Err(e) => return Err(e),
    };

    // Claims of the sidecar and the card must agree with the dataset.
    let sidecar_file = sidecar_path(req.run);
    let sidecar_text = if sidecar_file.is_file() && sidecar_file != req.run {
        match lexbench_core::text::read_text_at_most(&sidecar_file, MAX_SIDECAR_BYTES) {
            Ok(text) => Some(text),
            Err(e) => {
                problems.push(as_problem(e.into())?);
                None
            }
        }
    } else {
        None
    };
    let sidecar = if let Some(text) = sidecar_text {
        let v: serde_json::Value = lexbench_core::io::json_from_str(&text, &sidecar_file)?;
        let said = SidecarClaims::of(&v);
        let claims = [
            ("dataset_hash", &said.dataset_hash, hash.as_str()),
            ("dataset", &said.dataset, req.dataset),
            ("split", &said.split, req.split),
        ];
        for (key, got, want) in claims {
            if let Some(got) = got
                && got != want
            {
                problems.push(Problem {
                    path: sidecar_file.clone(),
                    line: line_containing(&text, &format!("\"{key}\"")),
                    message: format!("the run was made for {key} {got}, but the submission is for {want}"),
                });
            }
        }
        Some(v)
    } else {
        None
    };
    if is_baseline_name(req.name) {
        let from_bm25 = sidecar
            .as_ref()
            .map(SidecarClaims::of)
            .and_then(|c| c.system)
            .as_deref()
            == Some(BASELINE_SIDECAR_SYSTEM);
        if req.name != BASELINE || !from_bm25 {
            return Err(Error::Param(format!(
                "system name {:?} is reserved for the {BASELINE} baseline: it is the run `lexbench run bm25` \
                 wrote, submitted with its sidecar ({}) as {BASELINE}; name other runs otherwise",
                req.name,
                sidecar_file.display()
            )));
        }
    }
    let card = match req.card.map(|path| (path, ModelCard::read(path))) {
        None => None,
        Some((_, Err(e))) => {
            problems.push(as_problem(e)?);
            None
        }
        Some((path, Ok((card, text)))) => {
            problems.extend(card.check(path, &text));
            if let Some(h) = &card.dataset_hash
                && *h != hash
            {
                problems.push(Problem {
                    path: path.to_owned(),
                    line: line_of_key(&text, "dataset_hash"),
                    message: format!(
                        "dataset_hash {h} does not match dataset {} as built now ({hash})",
                        req.dataset
                    ),
                });
            }
            Some(card)
        }
    };
    if !problems.is_empty() {
        return Err(Error::Rejected { problems });
    }
    let report = report.unwrap_or_default();

    let run = Run::read(
        req.run,
        &ReadOptions {
            known_topics: Some(view.topics.clone()),
            // Strict, unlike `lexbench eval`: a submitted line has exactly the six TREC columns
            // (validate_run has already refused any other count, naming the line).
            extra_run_fields: false,
        },
    )?;
    let measures = view.measures();
    let shallow = crate::validate::check_depth(&run, &view, &measures, req.run);
    if !shallow.is_empty() {
        return Err(Error::Rejected { problems: shallow });
    }
    let pools = view.pool_sizes();
    let ev = evaluate(&run, &view.qrels, &measures, pools.as_ref())?;
    let names: Vec<String> = measures.iter().map(ToString::to_string).collect();
    let mut warnings = report.warnings.clone();
    let unjudged: Vec<_> = view
        .topics
        .iter()
        .filter(|t| !view.qrels.topics.contains_key(*t))
        .collect();
    if !unjudged.is_empty() {
        warnings.push(format!(
            "{} topic(s) of the split have no judgments and are not scored",
            unjudged.len()
        ));
    }
    let entry = Entry {
        schema_version: SCHEMA_VERSION,
        id: String::new(),
        system: req.name.trim().to_owned(),
        submitted_at: now_rfc3339(),
        card,
        dataset: DatasetRef {
            name: req.dataset.to_owned(),
            split: req.split.to_owned(),
            hash,
            layout_version: view.manifest.layout_version,
            pooled: view.pools.is_some(),
            documents: view.corpus.len(),
            topics: view.topics.len(),
        },
        evaluator: EVALUATOR.to_owned(),
        run: RunRef {
            file: req
                .run
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            sha256: sha256_file(req.run)?,
            tag: run.tag.clone(),
            lines: report.lines,
            sidecar,
        },
        scores: names.iter().cloned().zip(ev.mean.iter().copied()).collect(),
        measures: names,
        per_topic: ev.per_topic,
        missing_topics: report.missing_topics.clone(),
        warnings,
        provenance: Provenance::SelfReported,
        seal: None,
    };
    Ok(Assessed { entry, report })
}
