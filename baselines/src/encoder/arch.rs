//! Which encoder a HuggingFace folder holds, read from its `config.json` (`model_type`, then
//! `architectures`), and what that changes in [`super::BertModel`].
//!
//! Two families share the BERT layer stack tensor for tensor and differ only at the edges:
//!
//! | [`Arch`] | `model_type` | weights under | positions | token types |
//! |---|---|---|---|---|
//! | [`Arch::Bert`] | `bert` (BERT, MiniLM, LegalBERT, ColBERT's `HF_ColBERT`) | `bert.` or bare | `0, 1, …` | the tokenizer's (0 / 1 for a pair) |
//! | [`Arch::Dpr`] | `dpr` (`DPRQuestionEncoder`, `DPRContextEncoder`) | `question_encoder.bert_model.` / `ctx_encoder.bert_model.` | `0, 1, …` | the tokenizer's |
//! | [`Arch::Roberta`], [`Arch::Camembert`], [`Arch::XlmRoberta`] | `roberta`, `camembert`, `xlm-roberta` | `roberta.` or bare | after the padding index | always 0 |
//!
//! RoBERTa-family position ids follow transformers' `create_position_ids_from_input_ids`
//! (`modeling_roberta.py`): `cumsum(ids != pad) * (ids != pad) + pad`, so the first token sits at
//! position `pad + 1` and padding at `pad`; the longest input is `max_position_embeddings - pad - 1`
//! tokens (512 for roberta-base's 514 rows). Their tokenizers return no token type ids
//! (`model_input_names = ["input_ids", "attention_mask"]`), so the model always sees type 0, even
//! for a text pair. DPR's encoder output is the `[CLS]` state (no pooler; `projection_dim` 0).
//!
//! A `config.json` without `model_type` is read from `architectures`, and without either as BERT:
//! the folders lexbench wrote before this file existed (tiny test models) carry neither. Anything
//! else (`gpt2`, `t5`, `deberta-v2`, …) is refused: a model read with the wrong edges loads
//! without a word and gives wrong vectors.

use serde::{Deserialize, Serialize};

/// An encoder architecture lexbench runs (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Arch {
    /// BERT (`model_type` `bert`): also MiniLM, LegalBERT, ColBERT checkpoints (`HF_ColBERT`).
    Bert,
    /// DPR's question or context encoder (`model_type` `dpr`): BERT under `question_encoder.bert_model.`
    /// or `ctx_encoder.bert_model.`.
    Dpr,
    /// RoBERTa (`model_type` `roberta`).
    Roberta,
    /// CamemBERT (`model_type` `camembert`): RoBERTa with a SentencePiece vocabulary.
    Camembert,
    /// XLM-RoBERTa (`model_type` `xlm-roberta`), e.g. multilingual-e5-base.
    XlmRoberta,
}

/// The `model_type`s lexbench reads, for error messages.
pub const SUPPORTED: &str = "bert, dpr (BERT family) and roberta, camembert, xlm-roberta (RoBERTa family)";

impl Arch {
    /// Every architecture, in the order of [`SUPPORTED`].
    pub const ALL: [Self; 5] = [
        Self::Bert,
        Self::Dpr,
        Self::Roberta,
        Self::Camembert,
        Self::XlmRoberta,
    ];

    /// The architecture of a `model_type`, or `None` for one lexbench does not run.
    pub fn from_model_type(model_type: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.model_type() == model_type)
    }

    /// The architecture of an `architectures` entry (the model class that saved the folder), or
    /// `None` for a class lexbench does not run (`DPRReader`, `GPT2LMHeadModel`, …).
    pub fn from_class(class: &str) -> Option<Self> {
        if class == "HF_ColBERT" || class.starts_with("Bert") {
            Some(Self::Bert)
        } else if class == "DPRQuestionEncoder" || class == "DPRContextEncoder" {
            Some(Self::Dpr)
        } else if class.starts_with("XLMRoberta") {
            Some(Self::XlmRoberta)
        } else if class.starts_with("Camembert") {
            Some(Self::Camembert)
        } else if class.starts_with("Roberta") {
            Some(Self::Roberta)
        } else {
            None
        }
    }

    /// HuggingFace's `model_type` string.
    pub fn model_type(self) -> &'static str {
        match self {
            Self::Bert => "bert",
            Self::Dpr => "dpr",
            Self::Roberta => "roberta",
            Self::Camembert => "camembert",
            Self::XlmRoberta => "xlm-roberta",
        }
    }

    /// Whether positions start after the padding index and token types are always 0.
    pub fn is_roberta_family(self) -> bool {
        matches!(self, Self::Roberta | Self::Camembert | Self::XlmRoberta)
    }

    /// The prefixes the encoder's tensors may sit under in a checkpoint, tried in order (`""`: at
    /// the top level, as `BertModel` / `RobertaModel` and lexbench's own exports save them).
    pub fn weight_prefixes(self) -> &'static [&'static str] {
        match self {
            Self::Bert => &["bert.", ""],
            Self::Dpr => &["question_encoder.bert_model.", "ctx_encoder.bert_model.", ""],
            Self::Roberta | Self::Camembert | Self::XlmRoberta => &["roberta.", ""],
        }
    }

    /// The architecture of a `config.json` with these `model_type` and `architectures` (see the
    /// module documentation); the error says what is wrong, without the file name.
    pub fn resolve(model_type: Option<&str>, architectures: &[String]) -> Result<Self, String> {
        let arch = match model_type {
            Some(t) => Self::from_model_type(t)
                .ok_or_else(|| format!("model_type {t:?} is not supported (lexbench reads {SUPPORTED})"))?,
            None => match architectures.first() {
                None => return Ok(Self::Bert),
                Some(c) => Self::from_class(c).ok_or_else(|| {
                    format!(
                        "no model_type, and architectures {c:?} is not supported (lexbench reads {SUPPORTED})"
                    )
                })?,
            },
        };
        for class in architectures {
            // Classes of the same family under another model_type (a BERT-shaped e5 saved as
            // `BertModel` with model_type `bert`) are fine; a class of the other family or one
            // lexbench does not know contradicts the model_type.
            match Self::from_class(class) {
                Some(c) if c == arch || (arch == Self::Dpr && c == Self::Bert) => {}
                Some(c) if c.is_roberta_family() && arch.is_roberta_family() => {}
                _ => {
                    return Err(format!(
                        "model_type {:?} with architectures {class:?} is not supported (lexbench reads \
                         {SUPPORTED}; for dpr only DPRQuestionEncoder and DPRContextEncoder)",
                        arch.model_type()
                    ));
                }
            }
        }
        Ok(arch)
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.model_type())
    }
}

#[cfg(test)]
mod tests {
    //! Properties checked: every supported `model_type` and the classes of the real checkpoints
    //! resolve to their architecture; a config without either is BERT; unknown model types, unknown
    //! classes and classes contradicting the model type are refused with the model type named.
    use super::*;

    fn classes(c: &[&str]) -> Vec<String> {
        c.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn real_checkpoints_resolve() {
        let cases = [
            (Some("bert"), &["BertForPreTraining"][..], Arch::Bert),
            (Some("bert"), &["BertModel"][..], Arch::Bert),
            (Some("bert"), &["HF_ColBERT"][..], Arch::Bert),
            (Some("bert"), &["BertForSequenceClassification"][..], Arch::Bert),
            (Some("dpr"), &["DPRQuestionEncoder"][..], Arch::Dpr),
            (Some("dpr"), &["DPRContextEncoder"][..], Arch::Dpr),
            (Some("roberta"), &["RobertaForMaskedLM"][..], Arch::Roberta),
            (Some("camembert"), &["CamembertForMaskedLM"][..], Arch::Camembert),
            (Some("xlm-roberta"), &["XLMRobertaModel"][..], Arch::XlmRoberta),
            (None, &["RobertaModel"][..], Arch::Roberta),
            (None, &[][..], Arch::Bert),
        ];
        for (t, c, want) in cases {
            assert_eq!(Arch::resolve(t, &classes(c)), Ok(want), "{t:?} {c:?}");
        }
    }

    #[test]
    fn unknown_or_contradicting_configs_are_refused() {
        for t in ["gpt2", "t5", "deberta-v2", "mpnet", ""] {
            let e = Arch::resolve(Some(t), &[]).unwrap_err();
            assert!(
                e.starts_with(&format!("model_type {t:?} is not supported")),
                "{e}"
            );
            assert!(e.contains("xlm-roberta"), "{e}");
        }
        let e = Arch::resolve(Some("bert"), &classes(&["RobertaModel"])).unwrap_err();
        assert!(e.contains("\"bert\"") && e.contains("RobertaModel"), "{e}");
        let e = Arch::resolve(Some("dpr"), &classes(&["DPRReader"])).unwrap_err();
        assert!(e.contains("DPRReader"), "{e}");
        let e = Arch::resolve(None, &classes(&["GPT2LMHeadModel"])).unwrap_err();
        assert!(e.contains("GPT2LMHeadModel"), "{e}");
    }
}
