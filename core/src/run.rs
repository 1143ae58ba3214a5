//! The header every run sidecar (`RUN.json` beside `RUN.trec`) starts with: which system made the
//! run, on which dataset version and split, with which seed, from which checkout.
//!
//! The BM25 runner and the dense / ColBERT / cross-encoder runners (`baselines`) embed
//! [`SidecarHeader`] with `#[serde(flatten)]` and add their own fields (configuration, index facts,
//! model, timings); the harness (`leaderboard`) reads a submitted sidecar's claims through
//! [`SidecarClaims`], which takes any JSON object: a sidecar not written by lexbench may lack fields.
//!
//! ```
//! use lexbench_core::run::{SidecarClaims, SidecarHeader};
//!
//! let h = SidecarHeader {
//!     schema_version: 1,
//!     system: "bm25".into(),
//!     dataset: "bsard".into(),
//!     split: "test".into(),
//!     dataset_hash: "ab12".into(),
//!     seed: 0,
//!     git_revision: None,
//!     program: None,
//! };
//! let text = serde_json::to_string(&h)?;
//! assert!(text.starts_with(r#"{"schema_version":1,"system":"bm25","dataset":"bsard""#));
//! let claims: SidecarClaims = serde_json::from_str(&text)?;
//! assert_eq!(claims.system.as_deref(), Some("bm25"));
//! let foreign: SidecarClaims = serde_json::from_str(r#"{"system": "mine", "split": 3}"#)?;
//! assert_eq!((foreign.system.as_deref(), foreign.split), (Some("mine"), None));
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde::{Deserialize, Deserializer, Serialize};

/// The schema version of the sidecars lexbench writes.
pub const SIDECAR_SCHEMA: u32 = 1;

/// The fields every sidecar lexbench writes starts with, in this order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SidecarHeader {
    /// [`SIDECAR_SCHEMA`] when written (0 in sidecars written before it was recorded).
    #[serde(default)]
    pub schema_version: u32,
    /// The system (`bm25`, or the name given to a dense run).
    pub system: String,
    /// The dataset's name.
    pub dataset: String,
    /// The split ranked.
    pub split: String,
    /// The dataset's identity ([`crate::dataset::DatasetManifest::dataset_hash`]).
    pub dataset_hash: String,
    /// The seed (0 for a deterministic system; recorded so every sidecar has one).
    pub seed: u64,
    /// `git rev-parse HEAD` of the checkout that produced the run, or `LEXBENCH_GIT_REV`, if known.
    pub git_revision: Option<String>,
    /// The program that wrote it (`lexbench-baselines 0.1.0`), if recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
}

/// What the harness checks in a submitted sidecar: the header's claims, each where the sidecar
/// holds it as a string (a missing field, or one of another type, is `None` and not checked).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct SidecarClaims {
    /// The system that made the run.
    #[serde(default, deserialize_with = "string_or_none")]
    pub system: Option<String>,
    /// The dataset it was made for.
    #[serde(default, deserialize_with = "string_or_none")]
    pub dataset: Option<String>,
    /// The split.
    #[serde(default, deserialize_with = "string_or_none")]
    pub split: Option<String>,
    /// The dataset version.
    #[serde(default, deserialize_with = "string_or_none")]
    pub dataset_hash: Option<String>,
}

impl SidecarClaims {
    /// The claims of a sidecar already read as JSON (nothing, when it is not an object).
    pub fn of(value: &serde_json::Value) -> Self {
        Self::deserialize(value).unwrap_or_default()
    }
}

fn string_or_none<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => Some(s),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    //! Properties: a header embedded with `flatten` keeps its field names, first and in order; claims
    //! take what is a string and ignore the rest, and a sidecar that is not an object claims nothing.
    use super::*;

    #[derive(Serialize, Deserialize)]
    struct Embedding {
        #[serde(flatten)]
        header: SidecarHeader,
        config: u32,
    }

    #[test]
    fn flattened_header_and_lenient_claims() {
        let e = Embedding {
            header: SidecarHeader {
                schema_version: SIDECAR_SCHEMA,
                system: "s".into(),
                dataset: "d".into(),
                split: "t".into(),
                dataset_hash: "h".into(),
                seed: 7,
                git_revision: None,
                program: Some("p".into()),
            },
            config: 3,
        };
        let text = serde_json::to_string(&e).unwrap();
        assert_eq!(
            text,
            r#"{"schema_version":1,"system":"s","dataset":"d","split":"t","dataset_hash":"h","seed":7,"git_revision":null,"program":"p","config":3}"#
        );
        let back: Embedding = serde_json::from_str(&text).unwrap();
        assert_eq!(back.header, e.header);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(SidecarClaims::of(&v).dataset_hash.as_deref(), Some("h"));
        assert_eq!(
            SidecarClaims::of(&serde_json::json!([1, 2])),
            SidecarClaims::default()
        );
        let odd = SidecarClaims::of(&serde_json::json!({"dataset": 3, "split": null}));
        assert_eq!((odd.dataset, odd.split), (None, None));
    }
}
