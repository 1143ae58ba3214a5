#!/usr/bin/env python3
"""Reference BM25 scores for baselines/src/sparse/tests.rs, from bm25s (method="lucene", float64).

    python3 -m pip install bm25s==0.3.16
    python3 scripts/bm25_reference.py > baselines/tests/data/bm25_golden.json

bm25s's "lucene" variant is the formula lexbench implements: idf = ln(1 + (N - df + 0.5) / (df + 0.5)),
term score = idf * tf / (tf + k1 * (1 - b + b * dl / avgdl)), exact document lengths. The corpus and
queries are token lists (words the English analyzer leaves unchanged, checked by the Rust test), so
the comparison isolates scoring from analysis. Each case also records a direct evaluation of the
formula, which must agree with bm25s (asserted here).
"""
import json
import math

import bm25s

CORPUS = [
    "court law state right",
    "court court court",
    "home life war tax land child vote press fair trial arm court",
    "law law state",
    "child child child child child child home",
    "press fair trial",
    "state right right right tax",
    "land",
]
QUERIES = [
    "court right",
    "child home",
    "law law press",  # a repeated query term counts twice
    "trial unknownword",  # a term outside the vocabulary contributes nothing
    "court state land vote",
]
PARAMS = [(0.9, 0.4), (1.2, 0.75), (1.5, 0.75), (0.0, 0.0)]


def direct(corpus, query, k1, b):
    n = len(corpus)
    avgdl = sum(len(d) for d in corpus) / n
    out = []
    for d in corpus:
        s = 0.0
        for q in query:
            df = sum(1 for x in corpus if q in x)
            tf = d.count(q)
            if tf:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                s += idf * tf / (tf + k1 * (1 - b + b * len(d) / avgdl))
        out.append(s)
    return out


def main():
    corpus = [d.split() for d in CORPUS]
    cases = []
    for k1, b in PARAMS:
        model = bm25s.BM25(k1=k1, b=b, method="lucene", dtype="float64")
        model.index(corpus, show_progress=False)
        for q in QUERIES:
            toks = q.split()
            known = [t for t in toks if any(t in d for d in corpus)]
            scores = [float(x) for x in model.get_scores(known)]
            ref = direct(corpus, known, k1, b)
            assert all(abs(x - y) < 1e-12 for x, y in zip(scores, ref)), (q, scores, ref)
            cases.append({"k1": k1, "b": b, "query": " ".join(toks), "scores": scores})
    print(json.dumps({"corpus": CORPUS, "cases": cases}, indent=1))


if __name__ == "__main__":
    main()
