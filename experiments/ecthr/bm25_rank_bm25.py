#!/usr/bin/env python3
"""BM25 as rank_bm25 (0.2.2, BM25Okapi defaults k1 = 1.5, b = 0.75, epsilon = 0.25) computes it, per pool, on a
built ECtHR dataset, with three tokenisations: `split` (str.split: case and punctuation kept, what a
script using rank_bm25 the simple way does), `lexclipr` (str.lower().split(): LexCLiPR's
bm25_inference.py, the BM25 of `lexbench run bm25 --variant rank-bm25-okapi`) and `lower` (lower-cased
word characters). Prints R@2% / R@5% / R@10% with the cut-off max(1, ceil(k n / 100)), as lexbench eval's
R@k%, then with max(1, floor(k n / 100)), as R@k%floor (LexCLiPR's), over the split's judged topics: a
peer beside `lexbench run bm25` to measure how much of a gap to the paper's BM25 row tokenisation explains.

Given a run file (RUN: `lexbench run bm25 --variant rank-bm25-okapi`'s, mode `lexclipr`), also compares
its scores with rank_bm25's, document by document, and prints how many are equal to the last bit (the
run file prints shortest round-trip floats) and the largest difference.

    pip install rank_bm25==0.2.2
    python3 experiments/ecthr/bm25_rank_bm25.py DATA/datasets/NAME SPLIT split|lexclipr|lower [RUN]
"""
import json, math, re, sys

from rank_bm25 import BM25Okapi

ds = sys.argv[1]; split = sys.argv[2]; mode = sys.argv[3]
corpus = {}
for l in open(f"{ds}/corpus.jsonl"):
    d = json.loads(l); corpus[d["doc"]] = d["text"]
pools = {}
for l in open(f"{ds}/pools.jsonl"):
    p = json.loads(l); pools[p["topic"]] = p["docs"]
queries = {}
for l in open(f"{ds}/queries.jsonl"):
    q = json.loads(l); queries[q["topic"]] = q["text"]
topics = json.load(open(f"{ds}/splits/{split}.json"))["topics"]
rel = {}
for l in open(f"{ds}/qrels/{split}.tsv"):
    t, _, d, r = l.split()
    if int(r) > 0: rel.setdefault(t, set()).add(d)
tok = {
    "split": lambda s: s.split(),
    "lexclipr": lambda s: s.lower().split(),
    "lower": lambda s: re.findall(r"\w+", s.lower()),
}[mode]
ours = {}
if len(sys.argv) > 4:
    for l in open(sys.argv[4]):
        t, _, d, _, score, _ = l.split()
        ours[(t, d)] = float(score)
res = {2: [], 5: [], 10: []}
floor = {2: [], 5: [], 10: []}
compared = equal = 0
worst = 0.0
for t in topics:
    if t not in rel: continue
    docs = pools[t]
    bm = BM25Okapi([tok(corpus[d]) for d in docs])
    sc = bm.get_scores(tok(queries[t]))
    for d, x in zip(docs, sc):
        if (t, d) in ours:
            compared += 1
            equal += ours[(t, d)] == float(x)
            worst = max(worst, abs(ours[(t, d)] - float(x)))
    # Ties as trec_eval orders them (score, then doc id descending), as lexbench eval does.
    by_id = sorted(zip(sc, docs), key=lambda x: x[1], reverse=True)
    order = [d for _, d in sorted(by_id, key=lambda x: -x[0])]
    for k in res:
        cut = max(1, math.ceil(k * len(docs) / 100))
        res[k].append(len(set(order[:cut]) & rel[t]) / len(rel[t]))
        cut = max(1, len(docs) * k // 100)
        floor[k].append(len(set(order[:cut]) & rel[t]) / len(rel[t]))
print(mode, split, len(res[2]), "ceiling", " / ".join(f"{sum(v)/len(v):.3f}" for v in res.values()),
      "floor", " / ".join(f"{sum(v)/len(v):.3f}" for v in floor.values()))
if ours:
    print(f"run scores: {equal} of {compared} equal to rank_bm25's, largest difference {worst:.3g}")
