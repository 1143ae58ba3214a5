#!/usr/bin/env python3
"""PyTorch, sentence-transformers and ONNX Runtime sides of `lexbench bench-encoder`
(baselines/src/encoder/bench.rs, bench/real.rs).

lexbench writes the tasks to time as JSON (--input): for each task, the token ids candle runs (ids,
segment ids, attention mask per sequence, in candle's batches), so every engine reads the same
tokenised batches, padded to the longest of each batch with the pad id. This script loads the model
folder with transformers, builds each engine's inputs, warms each engine up, prints one JSON line
{"ready": true, ...} (versions, threads, each engine's check outputs, sentence-transformers' batching)
and then serves: each line on stdin, {"task": NAME, "engine": "torch"|"st"|"ort"|"openblas"}, runs one timed pass
of that task on that engine and answers {"seconds": S}. lexbench alternates engines (candle, torch,
st, ort, candle, ...) through this protocol; the models stay loaded. End of input ends the script.
Only protocol lines go to standard output (file descriptor 1 is pointed at standard error while the
script runs, so that library output cannot break the protocol).

Task kinds (what one pass does, per batch):
- encode: transformer forward, pooling (mean or max over the mask, or [CLS]), L2 normalisation;
- cross: transformer forward, BERT pooler, a one-logit head (weights from lexbench: the same head);
- colbert_docs: transformer forward, linear projection (weights from lexbench), L2 normalisation per
  token, the tokens kept (ColBERT's punctuation mask) selected per document;
- colbert_maxsim: MaxSim of precomputed query vectors against the pool's precomputed document vectors,
  as ColBERT's reference code scores (colbert_score: documents padded into one tensor,
  D @ Q^T, masked max over document tokens, sum over query tokens); one pass = every query;
- real: real paragraphs (texts and candle's token ids, batched as SentenceEncoder::embed batches them:
  sorted by token length). torch runs candle's sorted batches like encode (tokenisation not timed);
  st is sentence-transformers' SentenceTransformer(model, device=--device) with max_seq_length set to
  lexbench's truncation and encode(texts, batch_size, normalize_embeddings) timed whole (its own
  tokenisation and length sort). Each engine's check is its vectors of the sampled passages (input
  order); the ready line's "batching" gives st's order (np.argsort of -_input_length, as its
  _inference sorts) and each passage's token count under its tokenizer, from which lexbench computes
  its padding;
- gemm: one matrix product of the encoder's, alone (bench/gemm.rs), `repeats` calls per pass:
  op linear, torch.nn.functional.linear(x, w, b) with x (m, k), w (n, k) as nn.Linear stores it, b (n);
  op attention, scaled_dot_product_attention(q, k, v, scale=1) over the fused projection's output
  (batch * seq, 3 * heads * head_dim) split into heads (queries already scaled, no mask), the context
  back in (tokens, hidden) layout. The inputs are not sent: each is drawn from its seed by
  seeded_uniform, bit for bit as lexbench draws them; the check is the output's first check_rows rows.
  The model's weights are not loaded when every task is a gemm task.
  openblas (op linear only): NumPy's x @ w.T on the same values, the BLAS NumPy was built with
  (OpenBLAS in NumPy's wheels, its kernel picked at run time for the CPU), OPENBLAS_NUM_THREADS =
  threads; the bias is not added in the timed call (as candle-matmul's), only for the check. It is
  what a tuned BLAS reaches on the same product: the reference for how far the products are from the
  machine's limit.

Device (--device): cpu, or cuda:N when lexbench's candle runs on that GPU: the model, every input
tensor and every engine but ort then live on that GPU, and a timed pass ends with
torch.cuda.synchronize(), as candle's ends with its device's synchronize.

Engines: torch (torch.inference_mode, torch.set_num_threads(threads)); st (real tasks only: the same
torch, threads included; needs sentence-transformers); ort: the task's graph (encode, cross, real,
colbert_docs) exported with torch.onnx.export (dynamic batch and sequence axes) into a temporary
folder and run by onnxruntime's CPU provider with intra_op_num_threads = threads, inter_op 1,
sequential execution, ORT_ENABLE_ALL graph optimisations, on the same batches as torch (real: candle's
length-sorted batches; colbert_docs: each document's kept token vectors taken out afterwards, as torch
does, in NumPy). colbert_maxsim is not run (a product and a max over precomputed vectors, no encoder
graph); on a GPU ort is not run. Needs torch and transformers; ort needs
onnxruntime, onnx and onnxscript (scripts/bench-env makes target/bench-venv).

    python bench_encoder.py --model models/minilm --input TASKS.json --threads 2 --engines torch,st,ort,openblas
"""
import argparse
import json
import os
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--input", required=True, help="the tasks lexbench wrote (JSON)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--engines", default="torch,ort")
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
    # OpenBLAS reads its thread count when NumPy (imported by torch) loads it.
    os.environ["OPENBLAS_NUM_THREADS"] = str(a.threads)
    import torch
    torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)
    import transformers
    from transformers import AutoModel

    spec = json.load(open(a.input))
    tasks = spec["tasks"]
    # The gemm tasks need no model (their folder may hold only config.json).
    needs_model = any(t["kind"] != "gemm" for t in tasks.values())
    model = AutoModel.from_pretrained(a.model).eval().to(dev) if needs_model else None
    versions = {"torch": torch.__version__, "transformers": transformers.__version__}
    engines = {}
    checks = {}

    def batches_of(t, key="batches"):
        out = []
        for batch in t[key]:
            n = max(len(s[0]) for s in batch)
            pad = t["pad_id"]
            ids = [s[0] + [pad] * (n - len(s[0])) for s in batch]
            types = [s[1] + [0] * (n - len(s[1])) for s in batch]
            mask = [s[2] + [0] * (n - len(s[2])) for s in batch]
            out.append(tuple(torch.tensor(x, device=dev) for x in (ids, mask, types)))
        return out

    class Graph(torch.nn.Module):
        """One task's computation from token ids to its output: what torch runs and ORT exports."""

        def __init__(self, t):
            super().__init__()
            self.model = model
            self.kind = t["kind"]
            self.pooling = t.get("pooling", "mean")
            h = model.config.hidden_size
            if self.kind == "cross":
                self.head_w = torch.nn.Parameter(torch.tensor(t["head_weight"]).view(1, h), requires_grad=False)
                self.head_b = torch.nn.Parameter(torch.tensor([t["head_bias"]]), requires_grad=False)
            if self.kind.startswith("colbert"):
                self.linear = torch.nn.Parameter(torch.tensor(t["linear"]).view(t["dim"], h), requires_grad=False)

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            h = out.last_hidden_state
            if self.kind in ("encode", "real"):
                if self.pooling == "cls":
                    v = h[:, 0]
                elif self.pooling == "max":  # sentence-transformers' max pooling: padding at -1e9
                    v = h.masked_fill(attention_mask.unsqueeze(-1) == 0, -1e9).max(1).values
                else:
                    m = attention_mask.unsqueeze(-1).to(h.dtype)
                    v = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
                return torch.nn.functional.normalize(v, dim=-1)
            if self.kind == "cross":
                return (out.pooler_output @ self.head_w.t() + self.head_b).squeeze(-1)
            return torch.nn.functional.normalize(h @ self.linear.t(), dim=-1)

    def keep_masks(t, key="keep"):
        return [torch.tensor(k, dtype=torch.bool, device=dev) for k in t[key]]

    # Torch passes: one function per task running every batch once.
    torch_pass, openblas_pass = {}, {}
    with torch.inference_mode():
        for name, t in tasks.items():
            if t["kind"] == "gemm":
                run, check = gemm_pass(t, dev)
                torch_pass[name] = run
                checks.setdefault(name, {})["torch"] = check
                run()  # warm-up pass
                if "openblas" in a.engines.split(",") and t["op"] == "linear" and dev.type == "cpu":
                    run, check = blas_pass(t)
                    openblas_pass[name] = run
                    checks[name]["openblas"] = check
                    run()  # warm-up pass
                continue
            g = Graph(t).eval().to(dev)
            if t["kind"] in ("encode", "cross"):
                bs = batches_of(t)

                def run(bs=bs, g=g):
                    return [g(*b) for b in bs]

                torch_pass[name] = run
                checks.setdefault(name, {})["torch"] = check_of(run(), t)
            elif t["kind"] == "colbert_docs":
                bs = batches_of(t)
                keeps = keep_masks(t)

                def run(bs=bs, g=g, keeps=keeps):
                    docs, i = [], 0
                    for b in bs:
                        v = g(*b)
                        for row in v:
                            docs.append(row[: len(keeps[i])][keeps[i]])
                            i += 1
                    return docs

                torch_pass[name] = run
                docs = run()
                checks.setdefault(name, {})["torch"] = [x for d in (docs[0], docs[-1]) for x in d.flatten().tolist()]
            elif t["kind"] == "colbert_maxsim":
                # Vectors computed once (untimed): the pool's documents, padded into one tensor, and
                # every query.
                keeps = keep_masks(t)
                docs, i = [], 0
                for b in batches_of(t):
                    for row in g(*b):
                        docs.append(row[: len(keeps[i])][keeps[i]])
                        i += 1
                longest = max(d.shape[0] for d in docs)
                D = torch.zeros(len(docs), longest, t["dim"], device=dev)
                dmask = torch.zeros(len(docs), longest, dtype=torch.bool, device=dev)
                for j, d in enumerate(docs):
                    D[j, : d.shape[0]] = d
                    dmask[j, : d.shape[0]] = True
                qs = [g(*b)[0] for b in batches_of({"pad_id": t["pad_id"], "batches": [[q] for q in t["queries"]]})]

                def run(qs=qs, D=D, dmask=dmask):
                    # ColBERT's colbert_score: (n, Ld, dim) @ (dim, Lq) -> masked max over Ld -> sum over Lq.
                    out = []
                    for q in qs:
                        s = D @ q.t()
                        s = s.masked_fill(~dmask.unsqueeze(-1), -9999.0)
                        out.append(s.max(1).values.sum(-1))
                    return out

                torch_pass[name] = run
                checks.setdefault(name, {})["torch"] = run()[0].tolist()
            elif t["kind"] == "real":
                bs = batches_of(t)

                def run(bs=bs, g=g):
                    return [g(*b) for b in bs]

                torch_pass[name] = run
                rows = torch.cat(run()).cpu()  # in candle's sorted order
                at = {i: k for k, i in enumerate(t["order"])}
                checks.setdefault(name, {})["torch"] = [float(x) for i in t["sample"] for x in rows[at[i]]]
            else:
                raise SystemExit(f"bench_encoder.py: unknown task kind {t['kind']!r}")
            torch_pass[name]()  # warm-up pass
            sync()
    on = f"{torch.cuda.get_device_name(dev)}" if dev.type == "cuda" else f"{torch.get_num_threads()} threads"
    engines["torch"] = {
        "label": f"PyTorch {torch.__version__} (transformers {transformers.__version__}, {on})",
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }
    if openblas_pass:
        engines["openblas"] = blas_info(a.threads)

    st_pass, batching = {}, {}
    if "st" in a.engines.split(",") and any(t["kind"] == "real" for t in tasks.values()):
        try:
            st_pass, info = st_engine(a, tasks, checks, batching, versions)
            engines["st"] = info
        except Exception as e:  # reported, not fatal: torch still runs
            engines["st"] = {"error": f"{type(e).__name__}: {e}".splitlines()[0][:400]}

    ort_pass = {}
    if "ort" in a.engines.split(",") and dev.type != "cpu":
        engines["ort"] = {"error": f"not run on {dev}: this script runs ONNX Runtime's CPU provider"}
    elif "ort" in a.engines.split(","):
        try:
            ort_pass, info = ort_engine(a, tasks, Graph, batches_of, checks, versions)
            engines["ort"] = info
        except Exception as e:  # reported, not fatal: torch still runs
            engines["ort"] = {"error": f"{type(e).__name__}: {e}".splitlines()[0][:400]}

    send({
        "ready": True,
        "threads": torch.get_num_threads(),
        "versions": versions,
        "engines": engines,
        "checks": checks,
        "batching": batching,
        "setup_seconds": time.perf_counter() - t_setup,
    })

    passes = {"torch": torch_pass, "st": st_pass, "ort": ort_pass, "openblas": openblas_pass}
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        cmd = json.loads(line)
        run = passes.get(cmd.get("engine"), {}).get(cmd.get("task"))
        if run is None:
            send({"error": f"no engine {cmd.get('engine')!r} for task {cmd.get('task')!r}"})
            continue
        with torch.inference_mode():
            t0 = time.perf_counter()
            run()
            sync()
            send({"seconds": time.perf_counter() - t0})


def check_of(outs, t):
    """The outputs lexbench compares with candle's: the first and the last batch's (each cut to
    check_rows rows), flattened."""
    rows = t.get("check_rows")
    return [x for o in (outs[0], outs[-1]) for x in o[:rows].flatten().tolist()]


def seeded_uniform(seed, n, scale):
    """lexbench's bench::gemm::seeded_uniform: value i is scale * ((z_i >> 40) / 2**23 - 1), z_i the i-th
    output of SplitMix64 seeded with `seed` (its state after i + 1 steps is seed + (i + 1) * gamma mod 2**64).
    24 random bits: every step is exact in float32, so both sides hold the same bits."""
    import numpy as np
    u64 = np.uint64
    z = u64(seed) + np.arange(1, n + 1, dtype=np.uint64) * u64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> u64(30))) * u64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> u64(27))) * u64(0x94D049BB133111EB)
    z = z ^ (z >> u64(31))
    v = (z >> u64(40)).astype(np.float32) / np.float32(1 << 23) - np.float32(1)
    return v * np.float32(scale)


def gemm_pass(t, dev):
    """A gemm task's pass (t["repeats"] calls) and its check (the first check_rows rows of one call's
    output); a call whose output is not of the expected shape stops the script."""
    import math
    import torch
    F = torch.nn.functional

    def drawn(spec, *shape):
        return torch.from_numpy(seeded_uniform(spec["seed"], math.prod(shape), spec["scale"])).view(*shape).to(dev)

    if t["op"] == "linear":
        m, k, n = t["m"], t["k"], t["n"]
        x, w, b = drawn(t["x"], m, k), drawn(t["w"], n, k), drawn(t["b"], n)

        def call():
            return F.linear(x, w, b)

        want = (m, n)
    elif t["op"] == "attention":
        bs, s, heads, d = t["batch"], t["seq"], t["heads"], t["head_dim"]
        qkv = drawn(t["qkv"], bs * s, 3 * heads * d)
        # (batch, seq, 3, heads, d) -> three (batch, heads, seq, d) views, as transformers splits heads.
        q, k, v = qkv.view(bs, s, 3, heads, d).permute(2, 0, 3, 1, 4).unbind(0)

        def call():
            out = F.scaled_dot_product_attention(q, k, v, scale=1.0)
            return out.transpose(1, 2).reshape(bs * s, heads * d)

        want = (bs * s, heads * d)
    else:
        raise SystemExit(f"bench_encoder.py: unknown gemm op {t['op']!r}")
    out = call()
    if tuple(out.shape) != want:
        raise SystemExit(f"bench_encoder.py: gemm {t['op']} gave shape {tuple(out.shape)}, not {want}")
    reps = t["repeats"]

    def run():
        for _ in range(reps):
            call()

    return run, out[: t["check_rows"]].flatten().tolist()


def blas_pass(t):
    """A linear gemm task's pass through NumPy's BLAS: x @ w.T, t["repeats"] calls into one output
    array, the bias left out of the timed call; its check is the first check_rows rows with the bias."""
    import numpy as np
    m, k, n = t["m"], t["k"], t["n"]
    x = seeded_uniform(t["x"]["seed"], m * k, t["x"]["scale"]).reshape(m, k)
    w = seeded_uniform(t["w"]["seed"], n * k, t["w"]["scale"]).reshape(n, k)
    b = seeded_uniform(t["b"]["seed"], n, t["b"]["scale"])
    out = np.empty((m, n), dtype=np.float32)
    wt = w.T  # a transposed view: BLAS reads it with the transpose flag, as torch's linear does
    reps = t["repeats"]

    def run():
        for _ in range(reps):
            np.matmul(x, wt, out=out)

    run()
    check = (out[: t["check_rows"]] + b).flatten().tolist()
    return run, check


def blas_info(threads):
    """The openblas engine's label: NumPy's version and the BLAS it was built with."""
    import numpy as np
    blas = {}
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    except Exception:  # older NumPy: the label names NumPy only
        pass
    what = " ".join(str(blas.get(k, "")) for k in ("name", "version")).strip() or "its BLAS"
    return {"label": f"NumPy {np.__version__} x @ w.T ({what}, {threads} threads), no bias"}


def st_engine(a, tasks, checks, batching, versions):
    """sentence-transformers on the real tasks: the model folder loaded as a SentenceTransformer on
    --device, one pass = encode() of all the task's texts; its order and token lengths for the report."""
    import numpy as np
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    versions["sentence_transformers"] = sentence_transformers.__version__
    model = SentenceTransformer(a.model, device=a.device)
    passes = {}
    for name, t in tasks.items():
        if t["kind"] != "real":
            continue
        texts = t["texts"]

        def run(t=t, texts=texts):
            model.max_seq_length = t["max_len"]
            return model.encode(texts, batch_size=t["batch_size"], normalize_embeddings=t["normalize"],
                                convert_to_numpy=True, show_progress_bar=False)

        out = run()  # also the warm-up pass
        checks.setdefault(name, {})["st"] = [float(x) for i in t["sample"] for x in out[i]]
        # Its batching, as SentenceTransformer._inference makes it (sentence-transformers 6.2,
        # sentence_transformer/model.py): np.argsort of minus each input's length (characters of a
        # string), batches of batch_size in that order, each tokenised and padded to its longest.
        length_of = getattr(model, "_input_length", None) or getattr(model, "_text_length")
        order = np.argsort([-length_of(x) for x in texts])
        flattened = bool(getattr(model, "_can_flatten_inputs", lambda: False)())
        lengths = [0] * len(texts)
        prep = getattr(model, "preprocess", None) or getattr(model, "tokenize")
        with torch.inference_mode():
            for start in range(0, len(order), t["batch_size"]):
                idx = order[start:start + t["batch_size"]]
                mask = prep([texts[i] for i in idx])["attention_mask"]
                for i, n in zip(idx, mask.sum(1).tolist()):
                    lengths[int(i)] = int(n)
        batching[name] = {"st": {"order": [int(i) for i in order], "lengths": lengths, "flattened": flattened}}
        passes[name] = run
    return passes, {
        "label": f"sentence-transformers {sentence_transformers.__version__} (PyTorch {torch.__version__}, "
                 f"{torch.cuda.get_device_name(a.device) if a.device.startswith('cuda') else str(torch.get_num_threads()) + ' threads'}, "
                 "encode() with its own length sort)",
    }


def ort_engine(a, tasks, Graph, batches_of, checks, versions):
    """Exports the encode, cross, real and colbert_docs tasks' graphs and opens them in ONNX Runtime."""
    import numpy as np
    import onnxruntime as ort
    import torch

    versions["onnxruntime"] = ort.__version__
    try:
        import onnx
        versions["onnx"] = onnx.__version__
    except ImportError:
        pass
    names = ["input_ids", "attention_mask", "token_type_ids"]
    tmp = tempfile.TemporaryDirectory(prefix="lexbench-bench-onnx-")
    passes, exports = {}, []
    t_export = time.perf_counter()
    for name, t in tasks.items():
        if t["kind"] not in ("encode", "cross", "real", "colbert_docs"):
            continue
        g = Graph(t).eval()
        bs = batches_of(t)
        path = os.path.join(tmp.name, f"{name}.onnx")
        exports.append(export(g, bs[0], path, names))
        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        wanted = {i.name for i in sess.get_inputs()}
        feeds = [{n: x.numpy().astype(np.int64) for n, x in zip(names, b) if n in wanted} for b in bs]

        if t["kind"] == "colbert_docs":
            keeps = [np.asarray(k, dtype=bool) for k in t["keep"]]

            def run(sess=sess, feeds=feeds, keeps=keeps):
                docs, i = [], 0
                for f in feeds:
                    for row in sess.run(None, f)[0]:
                        docs.append(row[: len(keeps[i])][keeps[i]])
                        i += 1
                return docs

            docs = run()
            checks.setdefault(name, {})["ort"] = [float(x) for d in (docs[0], docs[-1]) for x in d.flatten()]
        elif t["kind"] == "real":

            def run(sess=sess, feeds=feeds):
                return [sess.run(None, f)[0] for f in feeds]

            rows = np.concatenate(run())  # in candle's sorted order
            at = {i: k for k, i in enumerate(t["order"])}
            checks.setdefault(name, {})["ort"] = [float(x) for i in t["sample"] for x in rows[at[i]]]
        else:

            def run(sess=sess, feeds=feeds):
                return [sess.run(None, f)[0] for f in feeds]

            checks.setdefault(name, {})["ort"] = check_of(run(), t)
        run()  # warm-up pass
        passes[name] = run
    # The sessions hold what they need; the folder goes when the script ends.
    ort_engine.tmp = tmp
    how = sorted(set(exports))
    return passes, {
        "label": f"ONNX Runtime {ort.__version__} (CPU provider, {a.threads} intra-op threads, ORT_ENABLE_ALL; "
                 f"{', '.join(how)})",
        "export_seconds": time.perf_counter() - t_export,
        "tasks": sorted(passes),
    }


def export(module, example, path, names):
    """torch.onnx.export with dynamic batch and sequence axes: the dynamo exporter (torch's default
    since 2.9; needs onnxscript), else the TorchScript one where this torch still has it. Returns
    which one ran."""
    import torch
    with torch.no_grad():
        try:
            batch = torch.export.Dim("batch", min=1, max=4096)
            seq = torch.export.Dim("sequence", min=2, max=4096)
            torch.onnx.export(module, example, path, input_names=names, output_names=["out"],
                              dynamic_shapes={n: {0: batch, 1: seq} for n in names}, dynamo=True)
            return "exported by torch.onnx.export (dynamo)"
        except Exception as first:  # no onnxscript, or the graph did not export: TorchScript
            try:
                torch.onnx.export(module, example, path, input_names=names, output_names=["out"],
                                  dynamic_axes={n: {0: "batch", 1: "sequence"} for n in names},
                                  opset_version=17, dynamo=False)
            except Exception as second:
                raise RuntimeError(f"torch.onnx.export failed: dynamo: {first} / TorchScript: {second}") from second
            return f"exported by torch.onnx.export (TorchScript, opset 17; dynamo failed: {str(first)[:120]})"


if __name__ == "__main__":
    main()
