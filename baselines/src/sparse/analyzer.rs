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
//! - **Plain** (the queries of the cross-lingual ECtHR datasets in Italian, Romanian, Russian,
//!   Turkish and Ukrainian, which have no chain here): the same tokens, lower-cased character by
//!   character with Unicode's rules (`Д` → `д`, `İ` → `i̇`), nothing removed, nothing stemmed. Such a
//!   query meets English paragraphs only where a token is spelt as an English term is indexed:
//!   numbers, names, unstemmed cognates. That is the lexical floor the cross-lingual task measures.
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
    /// Any other language: Unicode lower-case tokens, no stop words, no stemming.
    Plain,
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Language::English => "english",
            Language::French => "french",
            Language::Plain => "plain",
        })
    }
}

impl Language {
    /// The chain for texts a dataset declares in `language`: English and French have theirs, every
    /// other language (Italian, Romanian, Russian, Turkish, Ukrainian) is [`Language::Plain`].
    pub fn chain_for(language: lexbench_core::dataset::Language) -> Language {
        use lexbench_core::dataset::Language as Declared;
        match language {
            Declared::English => Language::English,
            Declared::French => Language::French,
            Declared::Italian
            | Declared::Romanian
            | Declared::Russian
            | Declared::Turkish
            | Declared::Ukrainian => Language::Plain,
        }
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
    stemmer: Option<Stemmer>,
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
            Language::English => (Some(Algorithm::English), ENGLISH_STOP_WORDS),
            Language::French => (Some(Algorithm::French), FRENCH_STOP_WORDS),
            Language::Plain => (None, &[][..]),
        };
        let mut stop: std::collections::HashSet<String> = words.iter().map(|w| (*w).to_owned()).collect();
        if language == Language::French {
            stop.extend(words.iter().map(|w| fold_accents(w)));
        }
        Self {
            language,
            stemmer: algorithm.map(Stemmer::create),
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
        let mut buf = String::new();
        self.for_each_token(text, &mut buf, |token| {
            if let Some(term) = self.term(token) {
                f(term);
            }
        });
    }

    /// Calls `f` with each lower-cased token of `text`, in order, before stop words and stemming (an
    /// English possessive `s` is already dropped). `buf` is scratch space, reused across calls so that
    /// tokenising allocates nothing once it has grown.
    ///
    /// A token is a maximal run of `char::is_alphanumeric` characters, each lower-cased with
    /// `char::to_lowercase` (character by character, so `Σ` is always `σ`). ASCII runs take a byte
    /// path (for ASCII, `is_ascii_alphanumeric` and `to_ascii_lowercase` are those two functions), and
    /// an all-ASCII, already lower-case token is passed as a slice of `text` without copying. The
    /// result is that of the character-by-character loop, which the tests keep as the reference.
    pub(super) fn for_each_token(&self, text: &str, buf: &mut String, mut f: impl FnMut(&str)) {
        let english = self.language == Language::English;
        let bytes = text.as_bytes();
        let mut i = 0;
        // Whether the character just before the current token is an apostrophe (straight or `’`).
        let mut after_apostrophe = false;
        while i < bytes.len() {
            let b = bytes[i];
            if b.is_ascii() {
                if !b.is_ascii_alphanumeric() {
                    after_apostrophe = b == b'\'';
                    i += 1;
                    continue;
                }
            } else {
                let c = next_char(text, i);
                if !c.is_alphanumeric() {
                    after_apostrophe = c == '\u{2019}';
                    i += c.len_utf8();
                    continue;
                }
            }
            // A token starts at `i`: first its ASCII prefix.
            let start = i;
            let mut upper = false;
            while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                upper |= bytes[i].is_ascii_uppercase();
                i += 1;
            }
            let token: &str = if (i == bytes.len() || bytes[i].is_ascii()) && !upper {
                &text[start..i]
            } else {
                buf.clear();
                buf.extend(bytes[start..i].iter().map(|b| char::from(b.to_ascii_lowercase())));
                // Then any mix of characters up to the next delimiter (none if it ended at ASCII).
                while i < bytes.len() {
                    let b = bytes[i];
                    if b.is_ascii() {
                        if !b.is_ascii_alphanumeric() {
                            break;
                        }
                        buf.push(char::from(b.to_ascii_lowercase()));
                        i += 1;
                    } else {
                        let c = next_char(text, i);
                        if !c.is_alphanumeric() {
                            break;
                        }
                        buf.extend(c.to_lowercase());
                        i += c.len_utf8();
                    }
                }
                buf
            };
            // English possessive: drop the `s` of `court's`.
            if !(english && after_apostrophe && token == "s") {
                f(token);
            }
        }
    }

    /// One lower-cased token → its term, or `None` for a stop word.
    pub(super) fn term(&self, token: &str) -> Option<String> {
        if self.stop.contains(token) {
            return None;
        }
        let Some(stemmer) = &self.stemmer else {
            return Some(token.to_owned());
        };
        match self.language {
            Language::French => {
                if self.stop.contains(&fold_accents(token)) {
                    return None;
                }
                Some(fold_accents(&stemmer.stem(token)))
            }
            Language::English | Language::Plain => Some(stemmer.stem(token).into_owned()),
        }
    }
}

/// The character starting at byte `i` of `text` (`i` on a character boundary, before the end).
fn next_char(text: &str, i: usize) -> char {
    text[i..].chars().next().unwrap_or('\0')
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
    //! drops stop words with or without accents, stems and folds accents; numbers survive. The byte
    //! tokeniser (ASCII fast path, borrowed slices, one reused buffer) gives exactly the tokens and
    //! terms of the character-by-character loop it replaced, on hand-picked mixed text (accents, `ß`,
    //! Turkish `İ`, Greek final sigma, digits and other numbers, both apostrophes, possessives) and on
    //! random strings drawn from those pieces, in both languages.
    use lexbench_core::rng::SplitMix64;

    use super::*;

    /// The tokeniser as it was written before the byte path (`char::is_alphanumeric`, then
    /// `char::to_lowercase` on every character): the reference for [`Analyzer::for_each_token`].
    fn tokens_char_by_char(language: Language, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut token = String::new();
        let mut after_apostrophe = false;
        let mut chars = text.chars().peekable();
        loop {
            let c = chars.next();
            match c {
                Some(c) if c.is_alphanumeric() => token.extend(c.to_lowercase()),
                _ => {
                    if !token.is_empty() {
                        let possessive = language == Language::English && after_apostrophe && token == "s";
                        if !possessive {
                            out.push(token.clone());
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
        out
    }

    fn tokens(a: &Analyzer, text: &str, buf: &mut String) -> Vec<String> {
        let mut out = Vec::new();
        a.for_each_token(text, buf, |t| out.push(t.to_owned()));
        out
    }

    /// Pieces that exercise every branch of the byte tokeniser: ASCII lower and upper case, digits,
    /// ASCII and non-ASCII delimiters, both apostrophes, letters whose lower case is longer (`İ` →
    /// `i̇`) or context-dependent elsewhere (`Σ`), non-ASCII digits and numbers (`²`, `٣`), `ß`.
    const PIECES: &[&str] = &[
        "court",
        "COURT",
        "Court",
        "s",
        "S",
        "'",
        "\u{2019}",
        " ",
        "  ",
        ",",
        ".",
        "-",
        "42",
        "1er",
        "é",
        "É",
        "héritiers",
        "HÉRITIERS",
        "Straße",
        "STRASSE",
        "ß",
        "İstanbul",
        "İ",
        "ı",
        "ΣΊΣΥΦΟΣ",
        "ς",
        "x²",
        "٣",
        "l'",
        "d\u{2019}",
        "qu'",
        "aujourd'hui",
        "œuvre",
        "Œ",
        "ǅ",
        "日本",
        "\u{200b}",
        "😀",
        "\t",
        "\n",
        "a",
        "à",
        "À",
        "the",
        "The",
        "judgments",
        "Article",
        "8",
        "§",
        "’s",
        "'s",
        "n°",
        "ﬁ",
    ];

    #[test]
    fn byte_tokeniser_equals_the_char_loop() {
        let fixed = [
            "",
            "s",
            "'s",
            "The Court's judgments, in Article 8 proceedings: RIGHTS respected.",
            "The Court\u{2019}s view; the States' duties; 's s' 'S",
            "L'article 1er du Code civil : les héritiers à la succession",
            "QU'IL SOIT ÉTABLI D\u{2019}OFFICE — Straße, STRASSE, straße",
            "İstanbul İİ ıi I DIŞİŞLERİ BAKANLIĞI",
            "ΣΊΣΥΦΟΣ ΟΔΟΣ σοφός",
            "x² + y³ = z⁴; ٣٤ ½ Ⅻ 10km 3.14 1,000,000",
            "ﬁnal ǅemal ŉ Å Ω K",
            "日本語のテキスト und Ärger😀über\u{200b}alles",
            "ends with an apostrophe'",
            "ends with É",
        ];
        let mut rng = SplitMix64::new(19);
        let random: Vec<String> = (0..3000)
            .map(|_| {
                let n = rng.below(12);
                (0..n).map(|_| PIECES[rng.below(PIECES.len())]).collect()
            })
            .collect();
        let mut buf = String::new();
        for language in [Language::English, Language::French, Language::Plain] {
            let a = Analyzer::new(language);
            for text in fixed.iter().copied().chain(random.iter().map(String::as_str)) {
                let want = tokens_char_by_char(language, text);
                assert_eq!(tokens(&a, text, &mut buf), want, "{language}: {text:?}");
                // And the terms are those of the reference tokens.
                let terms: Vec<String> = want.iter().filter_map(|t| a.term(t)).collect();
                assert_eq!(a.analyze(text), terms, "{language}: {text:?}");
            }
        }
        // The hand-picked text reaches the interesting cases.
        let en = Analyzer::new(Language::English);
        assert_eq!(
            tokens(&en, "İ Straße ΣΟΣ x² court’s COURT's 1er", &mut buf),
            vec!["i\u{307}", "straße", "σοσ", "x²", "court", "court", "1er"]
        );
    }

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

    #[test]
    fn plain_chain() {
        // Lower case, every token kept, nothing stemmed: Ukrainian, Turkish, Italian heading words.
        let a = Analyzer::new(Language::Plain);
        assert_eq!(
            a.analyze("Стаття 8 – Право на повагу; İşkence YASAĞI; l'Articolo 3"),
            vec![
                "стаття",
                "8",
                "право",
                "на",
                "повагу",
                "i\u{307}şkence",
                "yasaği",
                "l",
                "articolo",
                "3"
            ]
        );
        // What English would drop or stem stays as written.
        assert_eq!(a.analyze("The judgments"), vec!["the", "judgments"]);
        assert_eq!(a.language().to_string(), "plain");
    }
}
