#!/usr/bin/env python3
"""PyTorch side of `lexbench bench-encoder`: the same model folder (loaded by sentence-transformers),
passages, batch size, truncation and thread count; times the forward pass + mean pooling + L2
normalisation on pre-tokenised batches (tokenisation excluded on both sides) and prints one JSON line
with its throughput. Needs torch and sentence-transformers (e.g. `python3 -m venv /tmp/refenv &&
/tmp/refenv/bin/pip install torch sentence-transformers`).

    python bench_encoder.py --model models/minilm --passages P.json --batch 32 --max-len 128 --threads 2
"""
import argparse
import json
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--passages", required=True)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    import torch
    torch.set_num_threads(a.threads)
    import sentence_transformers
    from sentence_transformers import SentenceTransformer

    texts = json.load(open(a.passages))
    st = SentenceTransformer(a.model, device="cpu")
    model = st[0].auto_model.eval()
    # Pre-tokenised batches (longest-in-batch padding, truncation to max_len), as lexbench times them.
    batches = [st.tokenizer(texts[i:i + a.batch], truncation=True, max_length=a.max_len,
                            padding="longest", return_tensors="pt")
               for i in range(0, len(texts), a.batch)]
    lengths = [int(n) for b in batches for n in b["attention_mask"].sum(1)]

    def run(bs):
        for b in bs:
            h = model(**b).last_hidden_state
            m = b["attention_mask"].unsqueeze(-1).to(h.dtype)
            torch.nn.functional.normalize((h * m).sum(1) / m.sum(1).clamp(min=1e-9), dim=-1)

    with torch.inference_mode():
        run(batches[:1])  # warm-up
        best = float("inf")
        for _ in range(a.repeats):
            t = time.perf_counter()
            run(batches)
            best = min(best, time.perf_counter() - t)
    print(json.dumps({
        "passages_per_s": len(texts) / best,
        "seconds": best,
        "mean_tokens": sum(lengths) / len(lengths),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "sentence_transformers": sentence_transformers.__version__,
    }))


if __name__ == "__main__":
    main()
