#!/usr/bin/env python3
"""PyTorch side of `lexbench bench-encoder --train-step`: one DPR training step on the same model
folder, texts, lengths, batch, loss and optimiser as lexbench's candle step
(baselines/src/train/bench.rs): `batch` queries, each against its own positive and negatives (no
in-batch negatives), every text truncated to --max-len tokens, mean pooling, cosine x 20, NLL of the
positive, backward, AdamW (lr 2e-5, weight decay 0.01), dropout on (train mode). Times whole steps on
pre-tokenised tensors (best of --steps after one warm-up step) and prints one JSON line. Needs torch
and sentence-transformers (e.g. `python3 -m venv /tmp/refenv && /tmp/refenv/bin/pip install torch
sentence-transformers`).

    python bench_train_step.py --model models/minilm --texts T.json --negatives 5 --max-len 128 --threads 2
"""
import argparse
import json
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--texts", required=True, help='{"queries": [...], "passages": [...]}')
    ap.add_argument("--negatives", type=int, default=5)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3)
    a = ap.parse_args()
    import torch
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    from sentence_transformers import SentenceTransformer

    t = json.load(open(a.texts))
    queries, passages = t["queries"], t["passages"]
    per = 1 + a.negatives
    assert len(passages) == len(queries) * per, "one positive and the negatives per query"
    st = SentenceTransformer(a.model, device="cpu")
    model = st[0].auto_model
    model.train()
    tok = lambda xs: st.tokenizer(xs, truncation=True, max_length=a.max_len, padding="longest",
                                  return_tensors="pt")
    q_in, p_in = tok(queries), tok(passages)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.01)

    def embed(b):
        h = model(**b).last_hidden_state
        m = b["attention_mask"].unsqueeze(-1).to(h.dtype)
        return torch.nn.functional.normalize((h * m).sum(1) / m.sum(1).clamp(min=1e-9), dim=-1)

    def step():
        q = embed(q_in)                                   # (b, h)
        p = embed(p_in).view(len(queries), per, -1)       # (b, 1 + negatives, h)
        scores = torch.einsum("bh,bnh->bn", q, p) * 20.0  # positive first
        loss = torch.nn.functional.cross_entropy(scores, torch.zeros(len(queries), dtype=torch.long))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    step()  # warm-up
    best = float("inf")
    for _ in range(a.steps):
        t0 = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - t0)
    print(json.dumps({
        "examples_per_s": len(queries) / best,
        "seconds": best,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }))


if __name__ == "__main__":
    main()
