//! Text analysis for BM25: tokenisation, lower-casing, stop words, stemming and (French) accent folding.
//!
//! The chains follow Lucene's analyzers, which Anserini's and Pyserini's BM25 baselines use:
//! - **English** (Lucene `EnglishAnalyzer`): tokens are maximal runs of letters and digits; lower-cased;
//!   a possessive `'s` is dropped; Lucene's 33 English stop words are removed; the Snowball English
//!   (Porter2) stemmer is applied.
//! - **French** (Lucene `FrenchAnalyzer`, with Snowball instead of the light stemmer): the same
//!   tokens (an apostrophe splits, so the elided `l'`, `d'`, `qu'` become stop words); the Snowball
//!   French stop list is removed (matched before and after accent folding, so `a` and `à` are both
//!   caught); the Snowball French stemmer runs on the accented word (its rules need the accents), and
//!   the stem is then folded to ASCII (`é` → `e`, `œ` → `oe`), so a question typed without accents
//!   still matches.
//!
//! Numbers are kept as tokens: article and paragraph numbers carry meaning in legal text.

use rust_stemmers::{Algorithm, Stemmer};
use serde::{Deserialize, Serialize};

/// The analysis chain to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// English (ECtHR): stop words, Snowball English stemmer.
    English,
    /// French (BSARD): stop words, Snowball French stemmer, accents folded.
    French,
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Language::English => "english",
            Language::French => "french",
        })
    }
}

/// Lucene's `EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`.
pub const ENGLISH_STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no",
    "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to",
    "was", "will", "with",
];

/// The Snowball French stop list (Lucene `FrenchAnalyzer.getDefaultStopSet()`).
pub const FRENCH_STOP_WORDS: &[&str] = &[
    "au", "aux", "avec", "ce", "ces", "dans", "de", "des", "du", "elle", "en", "et", "eux", "il", "ils",
    "je", "la", "le", "les", "leur", "lui", "ma", "mais", "me", "même", "mes", "moi", "mon", "ne", "nos",
    "notre", "nous", "on", "ou", "par", "pas", "pour", "qu", "que", "qui", "sa", "se", "ses", "son", "sur",
    "ta", "te", "tes", "toi", "ton", "tu", "un", "une", "vos", "votre", "vous", "c", "d", "j", "l", "à", "m",
    "n", "s", "t", "y", "été", "étée", "étées", "étés", "étant", "étante", "étants", "étantes", "suis", "es",
    "est", "sommes", "êtes", "sont", "serai", "seras", "sera", "serons", "serez", "seront", "serais",
    "serait", "serions", "seriez", "seraient", "étais", "était", "étions", "étiez", "étaient", "fus", "fut",
    "fûmes", "fûtes", "furent", "sois", "soit", "soyons", "soyez", "soient", "fusse", "fusses", "fût",
    "fussions", "fussiez", "fussent", "ayant", "ayante", "ayantes", "ayants", "eu", "eue", "eues", "eus",
    "ai", "as", "avons", "avez", "ont", "aurai", "auras", "aura", "aurons", "aurez", "auront", "aurais",
    "aurait", "aurions", "auriez", "auraient", "avais", "avait", "avions", "aviez", "avaient", "eut",
    "eûmes", "eûtes", "eurent", "aie", "aies", "ait", "ayons", "ayez", "aient", "eusse", "eusses", "eût",
    "eussions", "eussiez", "eussent",
];

/// An analysis chain: text → terms.
pub struct Analyzer {
    language: Language,
    stemmer: Stemmer,
    stop: std::collections::HashSet<String>,
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analyzer")
            .field("language", &self.language)
            .finish_non_exhaustive()
    }
}

impl Analyzer {
    /// The chain for `language`.
    pub fn new(language: Language) -> Self {
        let (algorithm, words) = match language {
            Language::English => (Algorithm::English, ENGLISH_STOP_WORDS),
            Language::French => (Algorithm::French, FRENCH_STOP_WORDS),
        };
        let mut stop: std::collections::HashSet<String> = words.iter().map(|w| (*w).to_owned()).collect();
        if language == Language::French {
            stop.extend(words.iter().map(|w| fold_accents(w)));
        }
        Self {
            language,
            stemmer: Stemmer::create(algorithm),
            stop,
        }
    }

    /// The chain's language.
    pub fn language(&self) -> Language {
        self.language
    }

    /// The terms of `text`, in order (a term repeats as often as it occurs).
    pub fn analyze(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.for_each_term(text, |t| out.push(t));
        out
    }

    /// Calls `f` with each term of `text`, in order.
    pub fn for_each_term(&self, text: &str, mut f: impl FnMut(String)) {
        let mut token = String::new();
        let mut after_apostrophe = false;
        let mut chars = text.chars().peekable();
        loop {
            let c = chars.next();
            match c {
                Some(c) if c.is_alphanumeric() => token.extend(c.to_lowercase()),
                _ => {
                    if !token.is_empty() {
                        // English possessive: drop the `s` of `court's`.
                        let possessive =
                            self.language == Language::English && after_apostrophe && token == "s";
                        if !possessive && let Some(term) = self.term(&token) {
                            f(term);
                        }
                        token.clear();
                    }
                    after_apostrophe = matches!(c, Some('\'' | '\u{2019}'));
                    if c.is_none() {
                        break;
                    }
                }
            }
        }
    }

    /// One lower-cased token → its term, or `None` for a stop word.
    fn term(&self, token: &str) -> Option<String> {
        if self.stop.contains(token) {
            return None;
        }
        match self.language {
            Language::English => Some(self.stemmer.stem(token).into_owned()),
            Language::French => {
                if self.stop.contains(&fold_accents(token)) {
                    return None;
                }
                Some(fold_accents(&self.stemmer.stem(token)))
            }
        }
    }
}

/// Folds Latin accented letters to ASCII (`é` → `e`, `ç` → `c`, `œ` → `oe`); other characters are kept.
pub fn fold_accents(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' => out.push('a'),
            'ç' => out.push('c'),
            'è' | 'é' | 'ê' | 'ë' => out.push('e'),
            'ì' | 'í' | 'î' | 'ï' => out.push('i'),
            'ñ' => out.push('n'),
            'ò' | 'ó' | 'ô' | 'õ' | 'ö' => out.push('o'),
            'ù' | 'ú' | 'û' | 'ü' => out.push('u'),
            'ý' | 'ÿ' => out.push('y'),
            'œ' => out.push_str("oe"),
            'æ' => out.push_str("ae"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    //! Properties: English lower-cases, drops stop words and possessives, stems; French splits elisions,
    //! drops stop words with or without accents, stems and folds accents; numbers survive.
    use super::*;

    #[test]
    fn english_chain() {
        let a = Analyzer::new(Language::English);
        assert_eq!(
            a.analyze("The Court's judgments, in Article 8 proceedings: RIGHTS respected."),
            vec!["court", "judgment", "articl", "8", "proceed", "right", "respect"]
        );
    }

    #[test]
    fn french_chain() {
        let a = Analyzer::new(Language::French);
        assert_eq!(
            a.analyze("L'article 1er du Code civil : les héritiers à la succession"),
            vec!["articl", "1er", "cod", "civil", "heriti", "success"]
        );
        // Without accents the same terms come out.
        assert_eq!(a.analyze("heritiers"), a.analyze("héritiers"));
        // `a` (a form of avoir) and `à` are both stop words.
        assert!(a.analyze("a à").is_empty());
    }
}
