#!/usr/bin/env python3
"""BM25 as rank_bm25 (0.2.2, BM25Okapi defaults k1 = 1.5, b = 0.75, epsilon = 0.25) computes it, per pool, on a
built ECtHR dataset, with two tokenisations: `split` (str.split: case and punctuation kept, what a
script using rank_bm25 the simple way does) and `lower` (lower-cased word characters). Prints R@2% / R@5% /
R@10% (cut-off max(1, ceil(k n / 100)), as lexbench eval) over the split's judged topics: a peer beside
`lexbench run bm25` to measure how much of a gap to the paper's BM25 row tokenisation explains.

    pip install rank_bm25==0.2.2
    python3 scripts/bm25_rank_bm25.py DATA/datasets/NAME SPLIT split|lower
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
tok = (lambda s: s.split()) if mode == "split" else (lambda s: re.findall(r"\w+", s.lower()))
res = {2: [], 5: [], 10: []}
for t in topics:
    if t not in rel: continue
    docs = pools[t]
    bm = BM25Okapi([tok(corpus[d]) for d in docs])
    sc = bm.get_scores(tok(queries[t]))
    order = [d for _, d in sorted(zip(sc, docs), key=lambda x: -x[0])]
    for k in res:
        cut = max(1, math.ceil(k * len(docs) / 100))
        res[k].append(len(set(order[:cut]) & rel[t]) / len(rel[t]))
print(mode, split, len(res[2]), " / ".join(f"{sum(v)/len(v):.3f}" for v in res.values()))
