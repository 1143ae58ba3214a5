#!/usr/bin/env python3
"""PyTorch side of `lexbench bench-encoder --train-step`: one DPR training step on the same model
folder, texts, lengths, batch, loss and optimiser as lexbench's candle step
(baselines/src/train/bench.rs): `batch` queries, each against its own positive and negatives (no
in-batch negatives), every text truncated to max_len tokens, mean pooling, cosine x 20, NLL of the
positive, backward, AdamW (lr 2e-5, weight decay 0.01), dropout on (train mode). Steps run on
pre-tokenised tensors, on --device (cpu, or cuda:N when candle's step runs on that GPU: a timed step
then ends with torch.cuda.synchronize()). Needs torch and sentence-transformers (`scripts/bench-env` makes
target/bench-venv).

The protocol is scripts/bench_encoder.py's, so that lexbench alternates engines step by step
(candle, torch, candle, ...) with the model loaded once: lexbench writes the task (--input,
{"tasks": {"train-step": {"kind": "train_step", "queries": [...], "passages": [...], "negatives":
N, "max_len": L}}}); this script loads the model, computes the check (the loss of the batch before
any step, dropout off), runs one untimed warm-up step, prints one JSON line {"ready": true, ...}
(versions, threads, the engine's label and CPU capability, the check) and then serves: each line on
stdin, {"task": "train-step", "engine": "torch"}, runs one timed step and answers {"seconds": S}.
End of input ends the script. Only protocol lines go to standard output.

    python bench_train_step.py --model models/minilm --input T.json --threads 2 --engines torch
"""
import argparse
import json
import os
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--input", required=True, help="the task lexbench wrote (JSON)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--engines", default="torch", help="only torch")
    ap.add_argument("--device", default="cpu", help="cpu or cuda:N (candle's device)")
    a = ap.parse_args()

    # The protocol's own descriptor; everything else written to fd 1 goes to standard error.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def send(obj):
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    t_setup = time.perf_counter()
    import torch
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    import sentence_transformers
    from sentence_transformers import SentenceTransformer

    tasks = json.load(open(a.input))["tasks"]
    steps, checks = {}, {}
    dev = torch.device(a.device)
    st = SentenceTransformer(a.model, device=a.device)
    model = st[0].auto_model
    for name, t in tasks.items():
        if t["kind"] != "train_step":
            raise SystemExit(f"bench_train_step.py: unknown task kind {t['kind']!r}")
        steps[name], checks[name] = train_step(torch, st, model, t, dev)
    sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)
    sync()  # the warm-up steps have finished
    on = torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"{torch.get_num_threads()} threads"
    send({
        "ready": True,
        "threads": torch.get_num_threads(),
        "versions": {"torch": torch.__version__, "sentence_transformers": sentence_transformers.__version__},
        "engines": {"torch": {
            "label": f"PyTorch {torch.__version__} ({on})",
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        }},
        "checks": checks,
        "setup_seconds": time.perf_counter() - t_setup,
    })

    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        cmd = json.loads(line)
        run = steps.get(cmd.get("task")) if cmd.get("engine") == "torch" else None
        if run is None:
            send({"error": f"no engine {cmd.get('engine')!r} for task {cmd.get('task')!r}"})
            continue
        t0 = time.perf_counter()
        run()
        sync()
        send({"seconds": time.perf_counter() - t0})


def train_step(torch, st, model, t, dev):
    """The step of task `t` (a function) after its warm-up step, and its check: {"torch": [loss before
    any step, dropout off]}."""
    queries, passages, per = t["queries"], t["passages"], 1 + t["negatives"]
    assert len(passages) == len(queries) * per, "one positive and the negatives per query"
    tok = lambda xs: st.tokenizer(xs, truncation=True, max_length=t["max_len"], padding="longest",
                                  return_tensors="pt")
    q_in, p_in = tok(queries).to(dev), tok(passages).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.01)

    def embed(b):
        h = model(**b).last_hidden_state
        m = b["attention_mask"].unsqueeze(-1).to(h.dtype)
        return torch.nn.functional.normalize((h * m).sum(1) / m.sum(1).clamp(min=1e-9), dim=-1)

    def loss():
        q = embed(q_in)                                   # (b, h)
        p = embed(p_in).view(len(queries), per, -1)       # (b, 1 + negatives, h)
        scores = torch.einsum("bh,bnh->bn", q, p) * 20.0  # positive first
        return torch.nn.functional.cross_entropy(scores, torch.zeros(len(queries), dtype=torch.long, device=dev))

    model.eval()
    with torch.no_grad():
        check = [float(loss())]
    model.train()

    def step():
        value = loss()
        opt.zero_grad(set_to_none=True)
        value.backward()
        opt.step()

    step()  # warm-up
    return step, {"torch": check}


if __name__ == "__main__":
    main()
