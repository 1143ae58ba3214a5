//! `submit`: validate a run against the dataset split it claims, evaluate it, and record an entry.

use std::path::{Path, PathBuf};

use lexbench_core::dataset::sha256_file;
use lexbench_core::run::SidecarClaims;
use lexbench_core::{ReadOptions, Run, evaluate};

use crate::board::{BASELINE, BASELINE_SIDECAR_SYSTEM, is_baseline_name};
use crate::card::{ModelCard, line_containing, line_of_key};
use crate::dataset::DatasetView;
use crate::entry::{
    DatasetRef, Entry, Harness, ModelKind, Provenance, RunRef, SCHEMA_VERSION, entries_dir, now_rfc3339,
    write_new,
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
    if let Some(c) = name.chars().find(|c| is_invisible(*c)) {
        return bad(format!(
            "U+{:04X} is a private-use, unassigned or blank-looking character; names hold visible text only",
            u32::from(c)
        ));
    }
    if name.chars().next().is_some_and(is_mark) {
        return bad("starts with a combining mark, which has no letter to combine with".into());
    }
    if !name.chars().any(|c| !c.is_whitespace() && !is_mark(c)) {
        return bad("holds nothing visible".into());
    }
    Ok(())
}

/// Is `c` a combining mark (general category Mn, Mc or Me)?
pub fn is_mark(c: char) -> bool {
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
    matches!(
        c.general_category(),
        GeneralCategory::NonspacingMark | GeneralCategory::SpacingMark | GeneralCategory::EnclosingMark
    )
}

/// Is `c` a character that shows as nothing, or as nothing anyone can type or compare: private use
/// (Co), unassigned (Cn), surrogates (Cs), and the blank-looking characters that are letters or
/// marks by category — the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0), the combining grapheme
/// joiner (U+034F), the Braille blank (U+2800), the Mongolian vowel separator and variation
/// selectors (U+180B–U+180F, U+FE00–U+FE0F, U+E0100–U+E01EF)?
pub fn is_invisible(c: char) -> bool {
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
    matches!(
        c.general_category(),
        GeneralCategory::PrivateUse | GeneralCategory::Unassigned | GeneralCategory::Surrogate
    ) || matches!(
        u32::from(c),
        0x115F | 0x1160 | 0x3164 | 0xFFA0 | 0x034F | 0x2800 | 0x180B..=0x180F | 0xFE00..=0xFE0F | 0xE0100..=0xE01EF
    )
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
/// The name [`BASELINE`] is reserved, in any case and padding: a run file is never the baseline,
/// whatever its sidecar says (a sidecar is the submitter's own text); the baseline is recorded only
/// by [`submit_baseline`], which the harness calls after running BM25 itself (`lexbench submit
/// --baseline`). Any submission under that name here is `Err(Error::Param)`.
///
/// The entry is always self-reported ([`Provenance::SelfReported`]): nothing a run file brings (its
/// sidecar, its card) can make it verified.
pub fn submit(req: &SubmitRequest<'_>) -> Result<Submitted> {
    let Assessed { mut entry, report } = assess(req)?;
    warn_shared_name(req.data, &mut entry)?;
    let path = write_new(&entries_dir(req.data), &mut entry)?;
    Ok(Submitted { entry, path, report })
}

/// Adds a warning to `entry` when entries of its dataset already use its system name from another
/// submitter ([`crate::board::owner`]): the board shows both rows, each with its authors, and the
/// submitter learns it now rather than from the page. Refuses a name, or authors, that look like
/// another row's without being them ([`crate::board::skeleton`]: `DРR` with a Cyrillic `Р` beside
/// `DPR`, authors `Аlice` beside `Alice`): such a row could not be told from the other on the page.
fn warn_shared_name(data: &Path, entry: &mut Entry) -> Result<()> {
    let mine = crate::board::owner(entry);
    // A folder that can not be read is reported by the commands that read it, not here.
    let Ok(set) = crate::entry::read_entries(&entries_dir(data)) else {
        return Ok(());
    };
    let (name_key, owner_key) = (
        crate::board::skeleton(&entry.system),
        crate::board::skeleton(&mine),
    );
    for e in set
        .entries
        .iter()
        .filter(|e| e.dataset.name == entry.dataset.name)
    {
        if e.system != entry.system && crate::board::skeleton(&e.system) == name_key {
            return Err(Error::Param(format!(
                "system name {:?} looks like {:?}, the name of another row on {} (non-ASCII \
                 characters: {} against {}); the page could not tell them apart, choose another name",
                entry.system,
                e.system,
                entry.dataset.name,
                crate::board::non_ascii(&entry.system),
                crate::board::non_ascii(&e.system)
            )));
        }
        let theirs = crate::board::owner(e);
        if e.system == entry.system && theirs != mine && crate::board::skeleton(&theirs) == owner_key {
            return Err(Error::Param(format!(
                "the card's authors {mine:?} look like {theirs:?}, another submitter's authors of the row \
                 {:?} on {} (non-ASCII characters: {} against {}); the page could not tell the two rows \
                 apart: give the authors as the other row does if they are you, else choose another name",
                entry.system,
                entry.dataset.name,
                crate::board::non_ascii(&mine),
                crate::board::non_ascii(&theirs)
            )));
        }
    }
    let mut others: Vec<String> = set
        .entries
        .iter()
        .filter(|e| e.dataset.name == entry.dataset.name && e.system == entry.system)
        .map(crate::board::owner)
        .filter(|o| *o != mine)
        .map(|o| {
            if o.is_empty() {
                "no authors given".to_owned()
            } else {
                o
            }
        })
        .collect();
    others.sort();
    others.dedup();
    if !others.is_empty() {
        entry.warnings.push(format!(
            "the name {:?} is already used on {} by another submitter ({}): both rows are shown, each \
             with its authors; give your card's `authors` to tell them apart",
            entry.system,
            entry.dataset.name,
            others.join(" | ")
        ));
    }
    Ok(())
}

/// Records the baseline: a run the harness made itself with lexbench's BM25 (`lexbench submit
/// --baseline`), validated and evaluated exactly as [`submit()`] does, its entry named
/// [`BASELINE`] and marked verified with `harness`'s record, whose model must be
/// [`ModelKind::Bm25`]. The run's sidecar must be the BM25 runner's.
pub fn submit_baseline(req: &SubmitRequest<'_>, harness: Harness) -> Result<Submitted> {
    if harness.model.kind != ModelKind::Bm25 || req.name != BASELINE {
        return Err(Error::Param(format!(
            "internal: the baseline is {BASELINE} run by the harness, not {:?} ({})",
            req.name, harness.model.kind
        )));
    }
    let Assessed { mut entry, report } = assess_as(req, true)?;
    entry.provenance = Provenance::Verified(Box::new(harness));
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
    entry.provenance = Provenance::Verified(Box::new(harness));
    warn_shared_name(req.data, &mut entry)?;
    let path = write_new(&entries_dir(req.data), &mut entry)?;
    Ok(Submitted { entry, path, report })
}

/// Validates and evaluates a submission as [`submit()`] does, and returns the self-reported entry it
/// would record, writing nothing (`lexbench leaderboard --recheck` compares such an entry of a
/// re-run with the recorded one).
pub fn assess(req: &SubmitRequest<'_>) -> Result<Assessed> {
    assess_as(req, false)
}

/// [`assess`]; `baseline`: the harness's own BM25 run, the one submission that may be named
/// [`BASELINE`] (its sidecar must be the BM25 runner's).
fn assess_as(req: &SubmitRequest<'_>, baseline: bool) -> Result<Assessed> {
    check_system_name(req.name)?;
    // A run is read three times (validated, evaluated, hashed): a pipe would give each read another
    // part of it (or nothing), and a device such as /dev/zero never ends.
    match std::fs::metadata(req.run) {
        Ok(m) if !m.is_file() && !m.is_dir() => {
            return Err(Error::Param(format!(
                "{}: not a regular file (a pipe or a device); a submitted run is read more than once \
                 (validated, evaluated, hashed): save it to a file and submit that",
                req.run.display()
            )));
        }
        _ => {}
    }
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
        if !baseline || req.name != BASELINE || !from_bm25 {
            return Err(Error::Param(format!(
                "system name {:?} is reserved for the {BASELINE} baseline, which the harness runs itself \
                 (`lexbench submit --baseline`); a run file is never the baseline, whatever its sidecar says: \
                 name it otherwise",
                req.name
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
            task: (view.task != lexbench_core::Task::of_shape(view.pools.is_some())).then_some(view.task),
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
        rekeyed: None,
        seal: None,
    };
    Ok(Assessed { entry, report })
}
