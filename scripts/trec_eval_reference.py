#!/usr/bin/env python3
"""Regenerate the trec_eval conformance case in core/tests/data/trec_eval/.

The expected values come from trec_eval itself: pytrec_eval-terrier (PyPI) embeds trec_eval 9's C code,
so the per-topic values below are trec_eval's own computations (ranking by score descending, ties by
docno descending, relevance >= 1). trec_eval's `-c` flag only changes the averaging: every topic of the
qrels counts, topics without results scoring 0. pytrec_eval evaluates the topics present in the run, so
the `-c` mean is formed here exactly as trec_eval -c forms it.

    python3 -m pip install pytrec-eval-terrier==0.5.11
    python3 scripts/trec_eval_reference.py core/tests/data/trec_eval

The run and qrels are generated from a fixed seed; rerunning rewrites identical files.
"""
import json
import os
import random
import sys

import pytrec_eval

MEASURES = {"map": "AP", "Rprec": "RPrec", "recall.100": "R@100", "ndcg_cut.10": "nDCG@10",
            "P.5": "P@5", "recip_rank": "RR"}
KEYS = {"map": "map", "Rprec": "Rprec", "recall.100": "recall_100", "ndcg_cut.10": "ndcg_cut_10",
        "P.5": "P_5", "recip_rank": "recip_rank"}


def generate(rng):
    qrels, run = {}, {}
    for t in range(1, 31):
        topic = f"T{t:02d}"
        docs = [f"d{rng.randrange(10_000):05d}" for _ in range(rng.randrange(20, 160))]
        docs = sorted(set(docs))
        judged = rng.sample(docs, k=min(len(docs), rng.randrange(5, 40)))
        if t == 7:  # a topic whose judgments are all non-relevant
            qrels[topic] = {d: 0 for d in judged}
        else:
            qrels[topic] = {d: rng.choice([0, 0, 1, 1, 2]) for d in judged}
            # a relevant document that no run retrieves
            qrels[topic][f"unretrieved{t}"] = 1
        if t in (11, 23, 29):  # topics missing from the run
            continue
        n_ret = rng.randrange(5, len(docs) + 1)
        # Scores on a coarse grid so that ties are common.
        run[topic] = {d: round(rng.random() * 10, 1) for d in rng.sample(docs, k=n_ret)}
    for extra in ("X01", "X02"):  # run topics absent from the qrels
        run[extra] = {f"d{i:05d}": float(i) for i in range(5)}
    return qrels, run


def main(out):
    rng = random.Random(20261122)
    qrels, run = generate(rng)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "qrels.txt"), "w") as f:
        for t in sorted(qrels):
            for d in sorted(qrels[t]):
                f.write(f"{t} 0 {d} {qrels[t][d]}\n")
    with open(os.path.join(out, "run.trec"), "w") as f:
        for t in sorted(run):
            # Written in trec order, but the rank column is deliberately shuffled: it must be ignored.
            ranked = sorted(run[t].items(), key=lambda kv: (-kv[1], tuple(-ord(c) for c in kv[0])))
            ranks = list(range(1, len(ranked) + 1))
            rng.shuffle(ranks)
            for (d, s), r in zip(ranked, ranks):
                f.write(f"{t} Q0 {d} {r} {s!r} ref\n")
    ev = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES))
    got = ev.evaluate(run)
    per_topic = {}
    for t in sorted(qrels):
        row = got.get(t)
        per_topic[t] = {MEASURES[m]: (row[KEYS[m]] if row else 0.0) for m in MEASURES}
    mean = {MEASURES[m]: sum(per_topic[t][MEASURES[m]] for t in per_topic) / len(per_topic) for m in MEASURES}
    doc = {
        "reference": "trec_eval 9 via pytrec_eval-terrier 0.5.11; -c averaging over all qrels topics",
        "trec_eval_measures": {m: MEASURES[m] for m in MEASURES},
        "mean": mean,
        "per_topic": per_topic,
    }
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "core/tests/data/trec_eval")
