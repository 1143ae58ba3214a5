#!/usr/bin/env python3
"""Small random-weight replicas of the HuggingFace checkpoints lexbench loads, and transformers'
outputs on them: the references of baselines/tests/hf_golden.rs and tests/cli/hf_models.rs.

Each replica (the encoders and two cross-encoders) keeps its checkpoint's config.json `model_type`, `architectures`, position rows, token
types, padding index, layer-norm epsilon and activation, and the class that saved it (so tensor names
and prefixes are the checkpoint's: `bert.` + `cls.` for BertForPreTraining, `roberta.` + `lm_head.`
for RobertaForMaskedLM, `question_encoder.bert_model.` for DPR, bare for XLMRobertaModel), with 2
layers, hidden 32 and a small vocabulary, seeded; plus a tokenizer of its kind built with the
`tokenizers` library (WordPiece for BERT and DPR, byte-level BPE for RoBERTa, SentencePiece-style
Unigram with `<s> … </s>` for CamemBERT and XLM-R), saved with save_pretrained (safetensors) and
tokenizer.json. Nothing is downloaded.

    scripts/hf-replicas                      # the usual way (venv, pinned versions, caching)
    python3 scripts/hf_replicas.py OUT_DIR   # with torch, transformers, tokenizers importable
    python3 scripts/hf_replicas.py --compare COMMITTED NEW   # the cross-check scripts/hf-replicas --check runs

Plus the `legal-bert` replica's weights in the two other forms people have them (see `weight_forms`):
`legal-bert-bin` (`pytorch_model.bin`, `torch.save` of the same tensors, as transformers saved before
safetensors) and `legal-bert-sharded` (`save_pretrained` with a small `max_shard_size`: shards and
`model.safetensors.index.json`), for tests/cli/model_folders.rs.

Plus sentence-transformers folders (`st-*`, see `st_replicas`: the modules after the transformer,
and `SentenceTransformer(dir).encode(texts)`) and a ColBERT folder (`colbert`, see `colbert_replica`:
`HF_ColBERT` weights, `artifact.metadata`, and query / document token vectors and MaxSim scores
computed here following ColBERT's algorithm, written out step by step).

Writes OUT_DIR/<replica>/ and OUT_DIR/reference.json:
  {"versions": {...}, "replicas": {name: {"checkpoint", "arch", "texts", "token_ids",
   "hidden" (last hidden state of the padded batch, real tokens only), "mean", "cls", "pooler",
   "pair": {"texts", "token_ids", "type_ids", "hidden"}, "cross": {"pairs", "token_ids", "logits"},
   "cross_truncated": {"max_length", "pairs", "token_ids", "untruncated_lengths"} (cross-encoders)}}, "train_step": {...},
   "sentence_transformers": {name: {"checkpoint", "modules", "pooling", "max_seq_length", "texts",
   "vectors"}}, "colbert": {"checkpoint", "metadata", "queries", "docs", "query_ids", "doc_ids",
   "query_vectors", "doc_vectors", "doc_kept", "scores"}}
All values come from transformers (PyTorch, float32, CPU); none from lexbench.
"""

import json
import os
import shutil
import sys

import numpy as np
import torch
import torch.nn.functional as F
import tokenizers
import transformers
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

SEED = 20_260_032
LAYERS = 2
HIDDEN = 32
HEADS = 4
FFN = 64

# Training text for the tokenizers: legal English and French, as the benchmarks read.
CORPUS = [
    "The Court held that there had been a violation of Article 6 of the Convention.",
    "The applicant complained of a violation of his right to a fair trial.",
    "The Government contested that argument and asked the Court to declare the application inadmissible.",
    "Hello world, the court is in session.",
    "What is the margin of appreciation of the State in matters of privacy?",
    "The domestic courts dismissed the applicant's appeal on points of law.",
    "Le requérant se plaint d'une violation de l'article 8 de la Convention.",
    "La Cour estime qu'il y a eu violation du droit au respect de la vie privée.",
    "Le Gouvernement conteste cette thèse et invite la Cour à déclarer la requête irrecevable.",
    "Les juridictions internes ont rejeté le pourvoi du requérant.",
    "Der Gerichtshof stellt eine Verletzung von Artikel 6 fest.",
] * 3

# What the models read: a short text, sentences of different lengths (a padded batch), accents,
# capitals, a word no vocabulary has in full.
TEXTS = [
    "hello world",
    "The Court held that there had been a violation of Article 6 of the Convention.",
    "Le requérant se plaint d'une violation de l'article 8.",
    "Privacy? Appreciation!",
]
PAIR = ("what is the margin of appreciation?", "The Court held that there had been a violation of Article 8.")

# The bi-encoder training step (RoBERTa): in-batch softmax over dot products of mean-pooled vectors.
TRAIN_QUERIES = ["violation of the right to a fair trial", "margin of appreciation", "privacy"]
TRAIN_PASSAGES = [
    "The applicant complained of a violation of his right to a fair trial.",
    "What is the margin of appreciation of the State?",
    "La Cour estime qu'il y a eu violation du droit au respect de la vie privée.",
]
# Cross-encoder inputs: (query, passage) pairs of different lengths, one padded batch.
CROSS_PAIRS = [
    ("fair trial", "The applicant complained of a violation of his right to a fair trial."),
    ("privacy", "La Cour estime qu'il y a eu violation du droit au respect de la vie privée."),
    ("what is the margin of appreciation?", "The State."),
]
# Pairs longer than an odd content budget (issue 54, item 7): truncation="longest_first" at
# CROSS_TRUNCATED_CONTENT content tokens plus the pair's special tokens, the query the longer, the
# passage the longer, both over half the budget, a short query beside a long passage (only the passage
# is cut), and both over the whole max_length with the query the longer. transformers (the tokenizers library) gives the odd token to the longer segment, to the
# second on a tie.
CROSS_TRUNCATED_CONTENT = 13
CROSS_TRUNCATED_PAIRS = [
    ("the court held that there had been a violation of article 6 of the convention on privacy",
     "the applicant complained"),
    ("the applicant complained",
     "the court held that there had been a violation of article 6 of the convention on privacy"),
    ("the court held that there had been a violation", "the applicant complained of a violation of his right"),
    ("privacy", "the court held that there had been a violation of article 6 of the convention"),
    # Both longer than the whole max_length, the query the longer: the tokenizers crate's own pair
    # encoding cuts each side to max_length first and then sees two equal lengths.
    ("the court held that there had been a violation of article 6 of the convention on privacy",
     "the court held that there had been a violation of article 6 of the convention"),
]
# Parameters whose gradients are compared (names without the checkpoint's prefix).
TRAIN_GRADS = [
    "embeddings.word_embeddings.weight",
    "embeddings.position_embeddings.weight",
    "embeddings.token_type_embeddings.weight",
    "embeddings.LayerNorm.weight",
    "encoder.layer.0.attention.self.query.weight",
    "encoder.layer.0.attention.output.LayerNorm.bias",
    "encoder.layer.1.intermediate.dense.weight",
    "encoder.layer.1.output.dense.bias",
]


def randomize(model, seed):
    """Weights far from the initialiser's (layer norms off 1 and 0, non-zero biases, larger
    matrices), so a wrong epsilon, bias or position shows in the outputs."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            if "LayerNorm.weight" in name or "layer_norm.weight" in name:
                p.copy_(1.0 + 0.2 * noise)
            elif name.endswith("bias"):
                p.copy_(0.1 * noise)
            elif "embeddings" in name:
                p.copy_(0.5 * noise)
            else:
                p.copy_(0.15 * noise)


# ---- tokenizers -------------------------------------------------------------------------------


def wordpiece(extra=()):
    """BERT-style: lower-cased WordPiece, `[CLS] a [SEP] b [SEP]` with segment ids 0 then 1; `extra`
    tokens (ColBERT's `[unused0]`, `[unused1]`) after the five special ones."""
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *extra]
    norm = normalizers.BertNormalizer(lowercase=True, strip_accents=None, clean_text=True)
    pre = pre_tokenizers.BertPreTokenizer()

    def words(line):
        return [w for w, _ in pre.pre_tokenize_str(norm.normalize_str(line))]

    # The vocabulary is built here, not trained: tokenizers' WordPiece trainer breaks ties in another
    # order from run to run, and the committed replicas must be made again to the byte by --check.
    # Frequent corpus words, a few word pieces, every character alone and as a continuation ("##"),
    # except "h" and "w" (so "hello world" has characters with no piece: [UNK]).
    counts = {}
    for line in CORPUS:
        for w in words(line):
            counts[w] = counts.get(w, 0) + 1
    frequent = sorted((w for w, c in counts.items() if c >= 3 and len(w) > 2), key=lambda w: (-counts[w], w))[:60]
    pieces = ["viol", "##ation", "appr", "##eci", "conv", "##ention", "requ", "##érant", "##s", "##ed"]
    chars = sorted({ch for line in CORPUS + TEXTS + list(PAIR) for w in words(line) for ch in w} - set("hw"))
    vocab = {}
    for tok in special + chars + ["##" + c for c in chars] + frequent + pieces:
        vocab.setdefault(tok, len(vocab))
    t = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    t.normalizer = norm
    t.pre_tokenizer = pre
    cls, sep = t.token_to_id("[CLS]"), t.token_to_id("[SEP]")
    t.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0",
        pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    t.decoder = decoders.WordPiece()
    kw = dict(unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    return t, kw, ["input_ids", "token_type_ids", "attention_mask"]


def byte_level_bpe():
    """roberta-base's kind: byte-level BPE, `<s>`=0 `<pad>`=1 `</s>`=2 `<unk>`=3 `<mask>`=4, RobertaProcessing."""
    special = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    t.train_from_iterator(
        CORPUS,
        trainers.BpeTrainer(
            vocab_size=420, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    t.post_processor = processors.RobertaProcessing(
        ("</s>", t.token_to_id("</s>")), ("<s>", t.token_to_id("<s>")), trim_offsets=True, add_prefix_space=False
    )
    kw = dict(bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>",
              cls_token="<s>", sep_token="</s>")
    return t, kw, ["input_ids", "attention_mask"]


def unigram(camembert):
    """SentencePiece-style Unigram (Metaspace `▁`), `<s> a </s> </s> b </s>`: XLM-R's fairseq order
    `<s>`=0 `<pad>`=1 `</s>`=2 `<unk>`=3; CamemBERT's `<s>NOTUSED`=0 `<pad>`=1 `</s>NOTUSED`=2
    `<unk>`=3 `<unk>NOTUSED`=4 `<s>`=5 `</s>`=6; `<mask>` last."""
    if camembert:
        head = ["<s>NOTUSED", "<pad>", "</s>NOTUSED", "<unk>", "<unk>NOTUSED", "<s>", "</s>"]
    else:
        head = ["<s>", "<pad>", "</s>", "<unk>"]
    norm = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")])
    # Pieces: frequent words (with the word-start mark), a few word pieces, every character.
    counts = {}
    for line in CORPUS:
        for w in norm.normalize_str(line).split(" "):
            counts["▁" + w] = counts.get("▁" + w, 0) + 1
    words = sorted((w for w, c in counts.items() if c >= 6 and len(w) > 2), key=lambda w: (-counts[w], w))[:60]
    pieces = ["▁viol", "ation", "▁appr", "eci", "▁Con", "vention", "▁requ", "érant", "s", "▁"]
    chars = sorted({ch for line in CORPUS + TEXTS + list(PAIR) for ch in norm.normalize_str(line) if ch != " "})
    # Lower chars than "h" and "w" are left out, so "hello world" has characters with no piece (<unk>).
    chars = [c for c in chars if c not in "hw"]
    vocab = [(t, 0.0) for t in head]
    seen = set(head)
    for p in words + pieces + chars:
        if p not in seen:
            seen.add(p)
            score = -2.0 - 0.1 * len(vocab) if p in words else (-6.0 if p in pieces else -9.0)
            vocab.append((p, score))
    vocab.append(("<mask>", 0.0))
    t = Tokenizer(models.Unigram(vocab, unk_id=3, byte_fallback=False))
    t.normalizer = norm
    t.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    t.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    bos, eos = t.token_to_id("<s>"), t.token_to_id("</s>")
    t.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", bos), ("</s>", eos)]
    )
    t.add_special_tokens(["<s>", "</s>", "<pad>", "<unk>", "<mask>"])
    kw = dict(bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>",
              cls_token="<s>", sep_token="</s>")
    return t, kw, ["input_ids", "attention_mask"]


# ---- replicas ---------------------------------------------------------------------------------


def shape(**over):
    base = dict(hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS, intermediate_size=FFN,
                hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    base.update(over)
    return base


def replicas():
    """name → (checkpoint id, model class, config class, config kwargs, tokenizer builder)."""
    from transformers import (BertConfig, BertForPreTraining, BertForSequenceClassification, CamembertConfig,
                              CamembertForMaskedLM, DPRConfig, DPRContextEncoder, DPRQuestionEncoder, RobertaConfig,
                              RobertaForMaskedLM, RobertaForSequenceClassification, XLMRobertaConfig, XLMRobertaModel)
    roberta_like = dict(max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1)
    return {
        "legal-bert": ("nlpaueb/legal-bert-base-uncased", BertForPreTraining, BertConfig,
                       shape(max_position_embeddings=512, type_vocab_size=2, layer_norm_eps=1e-12, pad_token_id=0),
                       wordpiece),
        "roberta": ("roberta-base", RobertaForMaskedLM, RobertaConfig,
                    shape(bos_token_id=0, eos_token_id=2, **roberta_like), byte_level_bpe),
        "camembert": ("camembert-base", CamembertForMaskedLM, CamembertConfig,
                      shape(bos_token_id=5, eos_token_id=6, **roberta_like), lambda: unigram(True)),
        "multilingual-e5": ("intfloat/multilingual-e5-base", XLMRobertaModel, XLMRobertaConfig,
                            shape(bos_token_id=0, eos_token_id=2, **roberta_like), lambda: unigram(False)),
        "dpr-question": ("facebook/dpr-question_encoder-single-nq-base", DPRQuestionEncoder, DPRConfig,
                         shape(max_position_embeddings=512, type_vocab_size=2, layer_norm_eps=1e-12, pad_token_id=0,
                               projection_dim=0), wordpiece),
        "dpr-ctx": ("facebook/dpr-ctx_encoder-single-nq-base", DPRContextEncoder, DPRConfig,
                    shape(max_position_embeddings=512, type_vocab_size=2, layer_norm_eps=1e-12, pad_token_id=0,
                          projection_dim=0), wordpiece),
        # Cross-encoders: one relevance logit (num_labels 1).
        "ms-marco-cross": ("cross-encoder/ms-marco-MiniLM-L-12-v2", BertForSequenceClassification, BertConfig,
                           shape(max_position_embeddings=512, type_vocab_size=2, layer_norm_eps=1e-12, pad_token_id=0,
                                 num_labels=1), wordpiece),
        "roberta-cross": ("cross-encoder/stsb-roberta-base", RobertaForSequenceClassification, RobertaConfig,
                          shape(bos_token_id=0, eos_token_id=2, num_labels=1, **roberta_like), byte_level_bpe),
    }


def save_tokenizer(t, kw, input_names, out):
    hf = PreTrainedTokenizerFast(tokenizer_object=t, model_input_names=input_names, **kw)
    hf.save_pretrained(out)
    t.save(os.path.join(out, "tokenizer.json"))
    return hf


def encoder_of(model):
    """The encoder whose hidden states lexbench returns: the base model (no pooler for RoBERTa
    MLM checkpoints) or DPR's inner BERT."""
    if hasattr(model, "question_encoder"):
        return model.question_encoder.bert_model
    if hasattr(model, "ctx_encoder"):
        return model.ctx_encoder.bert_model
    return getattr(model, "bert", None) or getattr(model, "roberta", None) or model


def run(model, hf, batch_texts, pair=None):
    """Last hidden state of a padded batch as transformers computes it from the tokenizer's output."""
    enc = hf(list(batch_texts), padding=True, return_tensors="pt") if pair is None else \
        hf([pair[0]], [pair[1]], return_tensors="pt")
    with torch.no_grad():
        out = model(**enc)
    return enc, out


def rows(hidden, mask):
    return [h[: int(m.sum())].tolist() for h, m in zip(hidden, mask)]


def make(name, spec, root, seed):
    checkpoint, model_cls, config_cls, cfg_kw, tok_fn = spec
    out = os.path.join(root, name)
    os.makedirs(out, exist_ok=True)
    t, kw, input_names = tok_fn()
    hf = save_tokenizer(t, kw, input_names, out)
    cfg = config_cls(vocab_size=t.get_vocab_size(), **cfg_kw)
    torch.manual_seed(seed)
    model = model_cls(cfg)
    randomize(model, seed)
    model.eval()
    model.save_pretrained(out, safe_serialization=True)
    # Read back as a user would: the saved folder, the class the checkpoint names.
    model = model_cls.from_pretrained(out).eval()
    hf = transformers.AutoTokenizer.from_pretrained(out)
    # The wrapper must tokenise as tokenizer.json alone does (what lexbench reads).
    raw = Tokenizer.from_file(os.path.join(out, "tokenizer.json"))
    ids = [hf(x)["input_ids"] for x in TEXTS]
    assert ids == [raw.encode(x).ids for x in TEXTS], name
    enc, outs = run(model, hf, TEXTS)
    inner = encoder_of(model)
    with torch.no_grad():
        base = inner(**enc)
    hidden = base.last_hidden_state
    mask = enc["attention_mask"]
    m = mask.unsqueeze(-1).float()
    mean = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
    ref = {
        "checkpoint": checkpoint,
        "model_type": cfg.model_type,
        "architectures": cfg.architectures,
        "texts": TEXTS,
        "token_ids": ids,
        "hidden": rows(hidden, mask),
        "mean": mean.tolist(),
        "cls": hidden[:, 0].tolist(),
    }
    if getattr(base, "pooler_output", None) is not None:
        ref["pooler"] = base.pooler_output.tolist()
    if hasattr(outs, "pooler_output") and name.startswith("dpr"):
        ref["dpr_output"] = outs.pooler_output.tolist()  # DPR's own output: the [CLS] state
    penc, _ = run(model, hf, None, PAIR)
    with torch.no_grad():
        phidden = inner(**penc).last_hidden_state
    ref["pair"] = {
        "texts": list(PAIR),
        "token_ids": penc["input_ids"][0].tolist(),
        # What the model was given: none for the RoBERTa family (their tokenizers return none).
        "type_ids": penc["token_type_ids"][0].tolist() if "token_type_ids" in penc else None,
        "hidden": phidden[0].tolist(),
    }
    if type(model).__name__.endswith("ForSequenceClassification"):
        qs, ps = [q for q, _ in CROSS_PAIRS], [p for _, p in CROSS_PAIRS]
        cenc = hf(qs, ps, padding=True, return_tensors="pt")
        with torch.no_grad():
            logits = model(**cenc).logits
        assert logits.shape == (len(CROSS_PAIRS), 1), name
        ref["cross"] = {
            "pairs": [list(p) for p in CROSS_PAIRS],
            "token_ids": [hf(q, p)["input_ids"] for q, p in CROSS_PAIRS],
            "logits": logits[:, 0].tolist(),
        }
        max_length = CROSS_TRUNCATED_CONTENT + hf.num_special_tokens_to_add(pair=True)
        ref["cross_truncated"] = {
            "max_length": max_length,
            "pairs": [list(p) for p in CROSS_TRUNCATED_PAIRS],
            "token_ids": [hf(q, p, truncation="longest_first", max_length=max_length)["input_ids"]
                          for q, p in CROSS_TRUNCATED_PAIRS],
            "untruncated_lengths": [[len(hf(q, add_special_tokens=False)["input_ids"]),
                                     len(hf(p, add_special_tokens=False)["input_ids"])]
                                    for q, p in CROSS_TRUNCATED_PAIRS],
        }
    return ref, model, hf


def train_step(model, hf):
    """Loss and gradients of one in-batch softmax step of a RoBERTa bi-encoder, dropout off."""
    enc = encoder_of(model)
    enc.zero_grad()

    def embed(texts):
        b = hf(texts, padding=True, return_tensors="pt")
        h = enc(**b).last_hidden_state
        m = b["attention_mask"].unsqueeze(-1).float()
        return (h * m).sum(1) / m.sum(1)

    scores = embed(TRAIN_QUERIES) @ embed(TRAIN_PASSAGES).T
    loss = F.cross_entropy(scores, torch.arange(len(TRAIN_QUERIES)))
    loss.backward()
    params = dict(enc.named_parameters())
    return {
        "queries": TRAIN_QUERIES,
        "passages": TRAIN_PASSAGES,
        "scores": scores.tolist(),
        "loss": loss.item(),
        "grads": {n: params[n].grad.tolist() for n in TRAIN_GRADS},
    }


def unknown(root, seed):
    """A folder of a model lexbench does not run (GPT-2, byte-level BPE), which must be refused."""
    from transformers import GPT2Config, GPT2Model
    out = os.path.join(root, "unknown-gpt2")
    os.makedirs(out, exist_ok=True)
    t, kw, names = byte_level_bpe()
    save_tokenizer(t, kw, names, out)
    torch.manual_seed(seed)
    GPT2Model(GPT2Config(vocab_size=t.get_vocab_size(), n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS,
                         n_positions=64)).save_pretrained(out, safe_serialization=True)


# ---- sentence-transformers folders ------------------------------------------------------------

# Longer than the all-MiniLM-style replica's max_seq_length (12 tokens), so its truncation shows.
ST_TEXTS = TEXTS + ["The applicant complained of a violation of his right to a fair trial before the domestic courts."]


def legacy_layout(out, pooling_keys, max_seq_length):
    """Rewrites a folder saved by sentence-transformers 6 in the layout of the hub's older folders
    (all-MiniLM-L6-v2, msmarco-roberta-base-ance-firstp: sentence-transformers 2.x): module types
    `sentence_transformers.models.*`, the pooling as `pooling_mode_*_token(s)` booleans, and
    `max_seq_length` in sentence_bert_config.json."""
    with open(os.path.join(out, "modules.json")) as f:
        modules = json.load(f)
    for m in modules:
        m["type"] = "sentence_transformers.models." + m["type"].rsplit(".", 1)[1]
    with open(os.path.join(out, "modules.json"), "w") as f:
        json.dump(modules, f, indent=2)
    pool = os.path.join(out, "1_Pooling", "config.json")
    with open(pool) as f:
        dim = json.load(f)["embedding_dimension"]
    keys = {"word_embedding_dimension": dim}
    for k in ["cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens", "weightedmean_tokens", "lasttoken"]:
        keys["pooling_mode_" + k] = k in pooling_keys
    keys["include_prompt"] = True
    with open(pool, "w") as f:
        json.dump(keys, f, indent=2)
    with open(os.path.join(out, "sentence_bert_config.json"), "w") as f:
        json.dump({"max_seq_length": max_seq_length, "do_lower_case": False}, f, indent=2)


def st_replicas(root, seed):
    """Three sentence-transformers folders, each a transformer replica plus the modules of a real
    checkpoint's kind, saved with `SentenceTransformer.save` and read back with
    `SentenceTransformer(dir)`:
      st-minilm: sentence-transformers/all-MiniLM-L6-v2's (BERT, mean pooling, Normalize), in the hub's
                 older layout (legacy_layout), max_seq_length 12;
      st-ance:   sentence-transformers/msmarco-roberta-base-ance-firstp's (RoBERTa, [CLS] pooling,
                 Dense 32→32 with Identity, LayerNorm: ANCE's embedding head), sentence-transformers 6
                 layout;
      st-tanh:   BERT, max pooling, Dense 32→16 with Tanh, Normalize, sentence-transformers 6 layout.
    The Dense and LayerNorm weights are randomised like the transformer's."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, LayerNorm, Normalize, Pooling, Transformer
    import tempfile
    specs = replicas()
    base = tempfile.mkdtemp(prefix="st-bases-")
    plans = {
        "st-minilm": ("sentence-transformers/all-MiniLM-L6-v2", "legal-bert", "mean",
                      lambda: [Normalize()], 12),
        "st-ance": ("sentence-transformers/msmarco-roberta-base-ance-firstp", "roberta", "cls",
                    lambda: [Dense(HIDDEN, HIDDEN, activation_function=torch.nn.Identity()), LayerNorm(HIDDEN)], None),
        "st-tanh": ("a sentence-transformers Dense head with tanh", "legal-bert", "max",
                    lambda: [Dense(HIDDEN, 16, activation_function=torch.nn.Tanh()), Normalize()], None),
    }
    refs = {}
    for i, (name, (checkpoint, base_name, pooling, head, legacy_len)) in enumerate(plans.items()):
        make(base_name, specs[base_name], base, seed + i)
        modules = [Transformer(os.path.join(base, base_name)), Pooling(HIDDEN, pooling), *head()]
        g = torch.Generator().manual_seed(seed + 50 + i)
        with torch.no_grad():
            for m in modules[2:]:
                for pname, p in m.named_parameters():
                    noise = torch.randn(p.shape, generator=g)
                    p.copy_(1.0 + 0.2 * noise if pname == "norm.weight" else 0.3 * noise)
        out = os.path.join(root, name)
        SentenceTransformer(modules=modules, device="cpu").save(out)
        # The model card it writes names the versions of whatever else is installed (`datasets`, …):
        # not read by lexbench, and it would make the folder depend on the environment.
        os.remove(os.path.join(out, "README.md"))
        if legacy_len is not None:
            legacy_layout(out, {"mean": "mean_tokens", "cls": "cls_token", "max": "max_tokens"}[pooling], legacy_len)
        # Read back as a user would.
        model = SentenceTransformer(out, device="cpu")
        vectors = model.encode(ST_TEXTS, convert_to_numpy=True, normalize_embeddings=False, batch_size=2)
        with open(os.path.join(out, "modules.json")) as f:
            types = [m["type"] for m in json.load(f)]
        refs[name] = {
            "checkpoint": checkpoint,
            "modules": types,
            "pooling": pooling,
            "max_seq_length": model.max_seq_length,
            "texts": ST_TEXTS,
            "vectors": vectors.astype(np.float64).tolist(),
        }
        print(f"{name}: {checkpoint} ({', '.join(t.rsplit('.', 1)[1] for t in types)})", file=sys.stderr)
    return refs


# ---- ColBERT ----------------------------------------------------------------------------------

COLBERT_QUERIES = ["fair trial", "what is the margin of appreciation of the State in matters of privacy?"]
COLBERT_DOCS = [
    "The applicant complained of a violation of his right to a fair trial.",
    "Privacy § 2 ~ appreciation? The State's margin of Article 8.",
    "La Cour estime qu'il y a eu violation du droit au respect de la vie privée.",
]


def colbert_replica(root, seed):
    """A folder shaped like colbert-ir/colbertv2.0: config.json with architectures ["HF_ColBERT"]
    (model_type bert), the BERT under `bert.` (pooler included, as HF_ColBERT's BertModel has one)
    and `linear.weight` (dim × hidden, no bias) in model.safetensors, a WordPiece tokenizer holding
    `[unused0]` and `[unused1]`, and artifact.metadata with ColBERT's settings (query_maxlen 10 and
    doc_maxlen 12 here so truncation and [MASK] augmentation both show; dim 16). The reference vectors
    and scores follow ColBERT v2's algorithm (colbert/modeling/tokenization/query_tokenization.py,
    doc_tokenization.py, colbert.py of stanford-futuredata/ColBERT), written out below."""
    import string
    from safetensors.torch import save_file
    from transformers import BertConfig, BertModel
    out = os.path.join(root, "colbert")
    os.makedirs(out, exist_ok=True)
    t, kw, names = wordpiece(extra=("[unused0]", "[unused1]"))
    save_tokenizer(t, kw, names, out)
    meta = {
        "query_token_id": "[unused0]", "doc_token_id": "[unused1]", "query_token": "[Q]", "doc_token": "[D]",
        "similarity": "cosine", "dim": 16, "query_maxlen": 10, "doc_maxlen": 12, "attend_to_mask_tokens": False,
        "mask_punctuation": True, "interaction": "colbert", "checkpoint": "bert-base-uncased",
    }
    cfg = BertConfig(vocab_size=t.get_vocab_size(), **shape(max_position_embeddings=512, type_vocab_size=2,
                                                             layer_norm_eps=1e-12, pad_token_id=0))
    cfg.architectures = ["HF_ColBERT"]
    torch.manual_seed(seed)
    bert = BertModel(cfg)
    randomize(bert, seed)
    bert.eval()
    g = torch.Generator().manual_seed(seed + 1)
    linear = 0.3 * torch.randn((meta["dim"], HIDDEN), generator=g)
    tensors = {"bert." + k: v.contiguous() for k, v in bert.state_dict().items()}
    tensors["linear.weight"] = linear.contiguous()
    save_file(tensors, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    cfg.save_pretrained(out)
    with open(os.path.join(out, "artifact.metadata"), "w") as f:
        json.dump(meta, f, indent=4)

    tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(out, "tokenizer.json"), **kw)
    q_marker, d_marker = tok.convert_tokens_to_ids(meta["query_token_id"]), tok.convert_tokens_to_ids(meta["doc_token_id"])
    pad, mask_id = tok.pad_token_id, tok.mask_token_id

    def encode(ids, attention):
        # Token states, projected by `linear` (no bias): BERT's last hidden state · Wᵀ.
        with torch.no_grad():
            return bert(input_ids=ids, attention_mask=attention).last_hidden_state @ linear.T

    # Queries (QueryTokenizer.tensorize): ". " before the text holds the marker's place; pad to
    # query_maxlen with truncation; the "." at position 1 becomes [Q]; every padding token becomes
    # [MASK] (query augmentation). The attention mask stays the tokenizer's unless
    # attend_to_mask_tokens (false), so the [MASK]s attend nowhere but are encoded and scored.
    q = tok([". " + x for x in COLBERT_QUERIES], padding="max_length", truncation=True,
            max_length=meta["query_maxlen"], return_tensors="pt")
    q_ids, q_att = q["input_ids"].clone(), q["attention_mask"].clone()
    q_ids[:, 1] = q_marker
    q_ids[q_ids == pad] = mask_id
    if meta["attend_to_mask_tokens"]:
        q_att[q_ids == mask_id] = 1
    # ColBERT.query: every position is kept (the padding is [MASK] now), then L2 normalisation per token.
    Q = F.normalize(encode(q_ids, q_att), p=2, dim=2)

    # Documents (DocTokenizer.tensorize): ". " before the text, truncation at doc_maxlen, longest padding;
    # the "." at position 1 becomes [D].
    d = tok([". " + x for x in COLBERT_DOCS], padding="longest", truncation="longest_first",
            max_length=meta["doc_maxlen"], return_tensors="pt")
    d_ids, d_att = d["input_ids"].clone(), d["attention_mask"]
    d_ids[:, 1] = d_marker
    # The skiplist (ColBERT.__init__ with mask_punctuation): every string.punctuation symbol and the
    # first id the tokenizer gives it alone ([UNK] for a symbol the vocabulary lacks).
    skip = {w for s in string.punctuation for w in [s, tok.encode(s, add_special_tokens=False)[0]]}
    # ColBERT.doc: vectors of skiplist tokens and padding are zeroed, then L2-normalised; the index
    # (keep_dims="flatten") and colbert_score (D_mask) leave them out.
    keep = torch.tensor([[(x not in skip) and (x != pad) for x in row] for row in d_ids.tolist()])
    D = F.normalize(encode(d_ids, d_att) * keep.unsqueeze(2).float(), p=2, dim=2)
    doc_vectors = [D[i][keep[i]].tolist() for i in range(len(COLBERT_DOCS))]

    # MaxSim (similarity "cosine"): for each query token the best document token's dot product, summed.
    scores = [[(Q[i] @ D[j][keep[j]].T).max(dim=1).values.sum().item() for j in range(len(COLBERT_DOCS))]
              for i in range(len(COLBERT_QUERIES))]
    print(f"colbert: colbert-ir/colbertv2.0 (HF_ColBERT, dim {meta['dim']})", file=sys.stderr)
    return {
        "checkpoint": "colbert-ir/colbertv2.0",
        "metadata": meta,
        "queries": COLBERT_QUERIES,
        "docs": COLBERT_DOCS,
        "query_ids": q_ids.tolist(),
        "query_attention": q_att.tolist(),
        "doc_ids": [row[: int(m.sum())] for row, m in zip(d_ids.tolist(), d_att)],
        "doc_kept": [[int(k) for k in keep[i][: int(d_att[i].sum())]] for i in range(len(COLBERT_DOCS))],
        "query_vectors": Q.tolist(),
        "doc_vectors": doc_vectors,
        "scores": scores,
    }


def weight_forms(root):
    """`legal-bert`'s weights as `pytorch_model.bin` and as safetensors shards with an index."""
    from safetensors.torch import load_file
    src = os.path.join(root, "legal-bert")
    shared = ["config.json", "tokenizer.json", "tokenizer_config.json"]
    for form in ["legal-bert-bin", "legal-bert-sharded"]:
        os.makedirs(os.path.join(root, form), exist_ok=True)
        for f in shared:
            if os.path.exists(os.path.join(src, f)):
                shutil.copyfile(os.path.join(src, f), os.path.join(root, form, f))
    torch.save(load_file(os.path.join(src, "model.safetensors")),
               os.path.join(root, "legal-bert-bin", "pytorch_model.bin"))
    model = transformers.BertForPreTraining.from_pretrained(src).eval()
    sharded = os.path.join(root, "legal-bert-sharded")
    model.save_pretrained(sharded, safe_serialization=True, max_shard_size="64KB")
    shards = [f for f in os.listdir(sharded) if f.endswith(".safetensors")]
    assert len(shards) > 1 and os.path.exists(os.path.join(sharded, "model.safetensors.index.json")), shards


def numbers(a, b, path, worst):
    """Walks two JSON values together: the same structure and strings, numbers within 1e-5 (absolute
    and relative); records the largest difference in `worst`. Returns the first mismatch's path."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        d = abs(a - b)
        worst[0] = max(worst[0], d)
        return None if d <= 1e-5 * (1 + abs(a)) else f"{path}: {a} != {b}"
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, dict):
        if sorted(a) != sorted(b):
            return f"{path}: keys {sorted(a)} != {sorted(b)}"
        return next((m for k in sorted(a) if (m := numbers(a[k], b[k], f"{path}.{k}", worst))), None)
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)}"
        return next((m for i, (x, y) in enumerate(zip(a, b)) if (m := numbers(x, y, f"{path}[{i}]", worst))), None)
    return None if a == b else f"{path}: {a!r} != {b!r}"


def compare(committed, new):
    """The committed replicas against ones made now: every file the same bytes, except
    reference.json's numbers (transformers' outputs) within 1e-5 and its version strings, which
    may carry a build suffix, left out (scripts/hf-replicas checks the installed versions)."""
    def files(root):
        return sorted(os.path.relpath(os.path.join(d, f), root)
                      for d, _, fs in os.walk(root) for f in fs)
    a, b = files(committed), files(new)
    if a != b:
        sys.exit(f"the file lists differ: only committed {sorted(set(a) - set(b))}, only new {sorted(set(b) - set(a))}")
    worst = [0.0]
    for f in a:
        pa, pb = os.path.join(committed, f), os.path.join(new, f)
        if f == "reference.json":
            with open(pa) as x, open(pb) as y:
                ra, rb = json.load(x), json.load(y)
            # The versions may carry a build suffix (`2.15.0+cpu`); scripts/hf-replicas checked the pins.
            ra.pop("versions"), rb.pop("versions")
            m = numbers(ra, rb, "reference.json", worst)
            if m:
                sys.exit(f"{pa}: {m}")
        elif open(pa, "rb").read() != open(pb, "rb").read():
            sys.exit(f"{pa} and {pb} differ")
    print(f"the committed replicas are the script's output: {len(a)} files, reference.json's numbers "
          f"within {worst[0]:.3g} of the committed ones", file=sys.stderr)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--compare":
        return compare(sys.argv[2], sys.argv[3])
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    os.makedirs(root, exist_ok=True)
    torch.set_num_threads(1)
    refs = {}
    train = None
    for i, (name, spec) in enumerate(replicas().items()):
        ref, model, hf = make(name, spec, root, SEED + i)
        refs[name] = ref
        if name == "roberta":
            train = train_step(model, hf)
        print(f"{name}: {spec[0]} ({ref['model_type']}, {ref['architectures'][0]})", file=sys.stderr)
    unknown(root, SEED + 99)
    weight_forms(root)
    st = st_replicas(root, SEED + 200)
    colbert = colbert_replica(root, SEED + 300)
    import sentence_transformers
    doc = {
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "sentence_transformers": sentence_transformers.__version__,
                     "tokenizers": tokenizers.__version__, "numpy": np.__version__},
        "replicas": refs,
        "train_step": train,
        "sentence_transformers": st,
        "colbert": colbert,
    }
    with open(os.path.join(root, "reference.json"), "w") as f:
        json.dump(doc, f)


if __name__ == "__main__":
    main()
