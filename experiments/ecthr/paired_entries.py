#!/usr/bin/env python3
"""Two committed leaderboard systems compared topic by topic: a paired randomization test.

    python3 experiments/ecthr/paired_entries.py ENTRIES "SYSTEM A" "SYSTEM B" [SAMPLES]

ENTRIES is a folder of exported entries (`lexbench leaderboard --export`, e.g.
baselines/configs/ecthr/results/release-text/entries); a system is named as its entries name it
(`"system"`). For every split both systems have and every measure of the entries (the "nearest" variants
left out), the mean per-topic difference A - B and its two-sided p-value: the share of SAMPLES (default
10,000) random sign flips of the per-topic differences whose mean is at least as far from zero, plus one
for the observed assignment (the leaderboard's definition, `paired_randomization` in leaderboard/src/stats.rs,
with Python's seeded generator instead of its stream), Holm-corrected over all the tests printed. Both entries must cover the same topics. Diagnostic output, not a leaderboard figure.
"""
import json
import pathlib
import random
import sys


def load(folder, system):
    by_split = {}
    for f in sorted(pathlib.Path(folder).glob("*.json")):
        e = json.loads(f.read_text())["entry"]
        if e["system"] == system:
            split = e["dataset"]["split"]
            if split in by_split:
                sys.exit(f"{f}: a second entry of {system!r} on {split}")
            by_split[split] = e
    if not by_split:
        sys.exit(f"{folder}: no entry of system {system!r}")
    return by_split


def p_value(diffs, samples, rng):
    n = len(diffs)
    obs = abs(sum(diffs)) / n
    hits = 1
    for _ in range(samples):
        s = sum(d if rng.random() < 0.5 else -d for d in diffs)
        if abs(s) / n >= obs - 1e-12:
            hits += 1
    return hits / (samples + 1)


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    folder, a, b = sys.argv[1:4]
    samples = int(sys.argv[4]) if len(sys.argv) == 5 else 10_000
    ea, eb = load(folder, a), load(folder, b)
    rng = random.Random(20261128)
    tests = []
    for split in sorted(set(ea) & set(eb)):
        xa, xb = ea[split], eb[split]
        if set(xa["per_topic"]) != set(xb["per_topic"]):
            sys.exit(f"{split}: the two entries cover different topics")
        for i, m in enumerate(xa["measures"]):
            if m.endswith("nearest"):
                continue
            j = xb["measures"].index(m)
            diffs = [xa["per_topic"][t][i] - xb["per_topic"][t][j] for t in sorted(xa["per_topic"])]
            tests.append([split, m, 100 * sum(diffs) / len(diffs), p_value(diffs, samples, rng), len(diffs)])
    # Holm: sort by p, multiply the i-th smallest by (m - i), keep the running maximum.
    order = sorted(range(len(tests)), key=lambda k: tests[k][3])
    running = 0.0
    for rank, k in enumerate(order):
        running = max(running, min(1.0, (len(tests) - rank) * tests[k][3]))
        tests[k].append(running)
    print(f"{a} minus {b}: mean per-topic difference (points), p, Holm-corrected p ({samples} sign flips)")
    for split, m, d, p, n, holm in tests:
        print(f"{split:13} {m:6} {d:+6.1f}  p {p:.4f}  Holm {holm:.4f}  ({n} topics)")


if __name__ == "__main__":
    main()
