//! How a cross-encoder's `[CLS] q [SEP] p [SEP]` is cut to its budget (issue 54, item 7).
//!
//! Property checked: [`TextTokenizer::encode_pairs`] keeps exactly the tokens transformers keeps with
//! `truncation="longest_first"` (transformers 5 and its `tokenizers` 0.23: `truncate_encodings`,
//! LongestFirst): with n₁ ≤ n₂ the two content lengths and B the budget less the three special
//! tokens, nothing is cut when n₁ + n₂ ≤ B; only the longer is cut, to B − n₁, when the shorter fits
//! in half; otherwise both are cut, the shorter to ⌊B/2⌋ and the longer to ⌈B/2⌉ — the odd token goes
//! to the longer segment, and to the passage (the second) when both are of one length. The expected
//! cuts below are written out by hand from that rule, for an odd budget with the query the longer and
//! with the passage the longer, for an even one, and for BERT's 256 tokens (budget 253) with a query
//! past 126 tokens; `tests/cli/hf_models.rs` and `hf_golden.rs` compare against transformers itself.

use lexbench_baselines::encoder::TextTokenizer;

/// A WordPiece tokenizer whose words `q` and `p` are one token each, with BERT's pair template.
fn tokenizer(max_len: usize) -> TextTokenizer {
    let json = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": [],
        "normalizer": null,
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]}, "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
        "decoder": null,
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100,
            "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "q": 4, "p": 5}},
    });
    let inner: tokenizers::Tokenizer = json.to_string().parse().expect("tokenizer.json");
    TextTokenizer::new(inner, max_len).expect("tokenizer")
}

fn words(w: &str, n: usize) -> String {
    vec![w; n].join(" ")
}

/// The query's and the passage's kept content tokens for a pair of `q` and `p` tokens.
fn kept(tok: &TextTokenizer, q: usize, p: usize) -> (usize, usize) {
    let (a, b) = (words("q", q), words("p", p));
    let t = &tok.encode_pairs(&[(&a, &b)]).expect("encode")[0];
    let count = |id: u32, ty: u32| {
        t.ids
            .iter()
            .zip(&t.type_ids)
            .filter(|&(&i, &y)| i == id && y == ty)
            .count()
    };
    assert_eq!(t.ids.len(), count(4, 0) + count(5, 1) + 3, "{:?}", t.ids);
    (count(4, 0), count(5, 1))
}

#[test]
fn an_odd_budget_gives_the_odd_token_to_the_longer_segment() {
    // max_len 16: 13 content tokens.
    let tok = tokenizer(16);
    for (q, p, want) in [
        (20, 7, (7, 6)),  // the query the longer: it keeps the odd token
        (7, 20, (6, 7)),  // the passage the longer: it keeps it
        (30, 29, (7, 6)), // both over the whole max_len: still the longer (the query) keeps it
        (29, 30, (6, 7)),
        (17, 16, (7, 6)),
        (10, 10, (6, 7)), // one length: the second segment keeps it
        (7, 7, (6, 7)),
        (4, 18, (4, 9)), // the short query fits: only the passage is cut
        (18, 4, (9, 4)),
        (6, 7, (6, 7)), // 13 in all: nothing cut
        (5, 5, (5, 5)),
    ] {
        assert_eq!(kept(&tok, q, p), want, "query {q}, passage {p}, budget 13");
    }
}

#[test]
fn an_even_budget_halves_evenly() {
    // max_len 15: 12 content tokens.
    let tok = tokenizer(15);
    for (q, p, want) in [(20, 7, (6, 6)), (7, 20, (6, 6)), (20, 3, (9, 3)), (3, 20, (3, 9))] {
        assert_eq!(kept(&tok, q, p), want, "query {q}, passage {p}, budget 12");
    }
}

#[test]
fn bert_at_256_tokens_cuts_a_long_query_as_transformers_does() {
    // 253 content tokens: a query past 126 tokens beside a longer passage keeps 126, the passage
    // 127; the longer query keeps 127.
    let tok = tokenizer(256);
    for (q, p, want) in [
        (127, 300, (126, 127)),
        (200, 300, (126, 127)),
        (300, 200, (127, 126)),
        (300, 127, (127, 126)),
        (127, 127, (126, 127)),
        (126, 127, (126, 127)),
        (100, 300, (100, 153)),
        (300, 290, (127, 126)), // both past 256 tokens, the query the longer
        (290, 300, (126, 127)),
    ] {
        assert_eq!(kept(&tok, q, p), want, "query {q}, passage {p}, budget 253");
    }
}
