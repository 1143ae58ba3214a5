#!/usr/bin/env python3
"""Writes a synthetic pooled dataset (ECtHR-shaped) in lexbench's layout, for the leaderboard screenshot.

    python3 scripts/demo_dataset.py DATA [--version N] [--topics 60]

DATA/datasets/demo/: 60 topics, each ranking the 30 paragraphs of its own "judgment"; 2-3 relevant
paragraphs per topic share words with the query, the others are drawn from a generic vocabulary.
`--version` changes one paragraph's text, giving a new dataset hash (to show stale entries). Also
writes DATA/demo-runs/{oracle,random}.trec: the qrels ranked first, and a seeded shuffle.
"""
import argparse
import hashlib
import json
import os
import random

GENERIC = ("court applicant government complaint article convention proceedings domestic authorities decision "
           "judgment application national law evidence hearing appeal respondent state period claim").split()
TOPICAL = ("torture detention expression privacy property religion assembly trial lawyer custody prison "
           "journalist defamation surveillance eviction family child asylum election discrimination").split()


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--version", type=int, default=1)
    ap.add_argument("--topics", type=int, default=60)
    a = ap.parse_args()
    rng = random.Random(7)
    ds = os.path.join(a.data, "datasets", "demo")
    os.makedirs(os.path.join(ds, "splits"), exist_ok=True)
    os.makedirs(os.path.join(ds, "qrels"), exist_ok=True)
    corpus, queries, pools, qrels = [], [], [], []
    for t in range(a.topics):
        item = f"001-{200000 + t}"
        topic = f"q{t}/{item}"
        words = rng.sample(TOPICAL, 3)
        queries.append({"topic": topic, "query": f"q{t}", "text": " ".join(words) + " under the convention"})
        rel = set(rng.sample(range(1, 31), rng.choice([2, 3])))
        docs = []
        for n in range(1, 31):
            text = [rng.choice(GENERIC) for _ in range(rng.randint(15, 60))]
            if n in rel:
                text += rng.sample(words, rng.choice([1, 2]))
            elif rng.random() < 0.3:
                text.append(rng.choice(words))
            rng.shuffle(text)
            if t == 0 and n == 1:
                text.append(f"version{a.version}")
            doc = f"{item}:{n}"
            corpus.append({"doc": doc, "text": " ".join(text)})
            docs.append(doc)
            if n in rel:
                qrels.append(f"{topic} 0 {doc} 1")
        pools.append({"topic": topic, "docs": docs})

    def jsonl(name, rows):
        with open(os.path.join(ds, name), "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")

    jsonl("corpus.jsonl", corpus)
    jsonl("queries.jsonl", queries)
    jsonl("pools.jsonl", pools)
    with open(os.path.join(ds, "qrels", "test.tsv"), "w") as f:
        f.write("\n".join(sorted(qrels)) + "\n")
    with open(os.path.join(ds, "splits", "test.json"), "w") as f:
        json.dump({"dataset": "demo", "name": "test", "topics": sorted(q["topic"] for q in queries)}, f)
    files = {}
    for root, _, names in os.walk(ds):
        for n in names:
            if n == "manifest.json" or n.startswith("."):
                continue
            p = os.path.join(root, n)
            files[os.path.relpath(p, ds).replace(os.sep, "/")] = sha(p)
    with open(os.path.join(ds, "manifest.json"), "w") as f:
        json.dump({"name": "demo", "layout_version": 1, "built_by": "scripts/demo_dataset.py",
                   "files": dict(sorted(files.items()))}, f, indent=2)

    runs = os.path.join(a.data, "demo-runs")
    os.makedirs(runs, exist_ok=True)
    relevant = {}
    for line in qrels:
        t, _, d, _ = line.split()
        relevant.setdefault(t, set()).add(d)
    with open(os.path.join(runs, "oracle.trec"), "w") as fo, open(os.path.join(runs, "random.trec"), "w") as fr:
        for p in pools:
            t = p["topic"]
            ranked = sorted(p["docs"], key=lambda d: (d not in relevant.get(t, ()), d))
            for i, d in enumerate(ranked):
                fo.write(f"{t} Q0 {d} {i + 1} {100 - i} oracle\n")
            shuffled = p["docs"][:]
            rng.shuffle(shuffled)
            for i, d in enumerate(shuffled):
                fr.write(f"{t} Q0 {d} {i + 1} {100 - i} random\n")


if __name__ == "__main__":
    main()
