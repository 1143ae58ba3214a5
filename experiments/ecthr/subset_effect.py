#!/usr/bin/env python3
"""How far the pairs kept in a real-text ECtHR dataset differ from the whole release, and what the committed
leaderboard entries would read if the pairs left out (no text here) behaved, within strata, like the kept ones.

The release (FIXTURES/tum_release/*.jsonl) gives every pair's query, judgment and cited paragraph numbers,
with or without its text: so the kept and left-out pairs can be compared on what the release shows. Strata:
- the guide (the query's title, the text before its first " . ");
- the judgment's size, by its highest cited paragraph number (a lower bound on its paragraph count; R@k%
  cuts at k % of that count, so size moves every figure): below 40, 40–99, 100 and above;
- the judgment's age, by its itemid number (HUDOC numbers grow with time): below 001-100000 or not.

For each committed entry (system, split) the script prints the mean over the kept topics (the leaderboard's
figure) and a post-stratified estimate: each stratum's mean over its kept topics, weighted by the stratum's
share of the release split; a stratum with no kept topic falls back to its guide alone, then to the split.
This assumes the left-out pairs are, within a stratum, like the kept ones: it measures the effect of the
mix (guides, sizes, ages), not of anything the release does not show.

    python3 experiments/ecthr/subset_effect.py DATA/datasets/NAME RESULTS [FIXTURES]
    # e.g. /work/rte/datasets/ecthr-release-text baselines/configs/ecthr/results/release-text

RESULTS holds entries/*.json (leaderboard entries with per-topic values); FIXTURES defaults to
$LEXBENCH_FIXTURES or ../shared/fixtures.
"""
import collections
import glob
import json
import os
import sys

SPLITS = {"testing.jsonl": "test", "unseen_article.jsonl": "unseen_query", "unseen.jsonl": "unseen_guide"}
MEASURES = ["R@2%", "R@5%", "R@10%"]


def size_bucket(max_cited):
    return "<40" if max_cited < 40 else ("40-99" if max_cited < 100 else ">=100")


def age_bucket(itemid):
    try:
        return "old" if int(itemid.split("-")[1]) < 100000 else "new"
    except (IndexError, ValueError):
        return "?"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    ds, results = sys.argv[1], sys.argv[2]
    fixtures = sys.argv[3] if len(sys.argv) > 3 else os.environ.get("LEXBENCH_FIXTURES", "../shared/fixtures")
    release = os.path.join(fixtures, "tum_release")
    if not os.path.isdir(release):
        sys.exit(f"{release}: not found (set LEXBENCH_FIXTURES)")

    # Kept release rows and their topics, from the dataset's audit (one line per kept label).
    topic_of_row = {}
    with open(os.path.join(ds, "audit.jsonl"), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                a = json.loads(line)
                topic_of_row[a["release_row"]] = a["topic"]
            except (ValueError, KeyError) as e:
                sys.exit(f"{ds}/audit.jsonl:{n}: {e}")

    # Every release row of the evaluated splits, with its strata.
    rows = {split: [] for split in SPLITS.values()}
    for file, split in SPLITS.items():
        path = os.path.join(release, file)
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                try:
                    r = json.loads(line)
                    guide = r["query"].split(" . ")[0].strip()
                    cited = [int(p) for p in r["paragraphs"]]
                    rows[split].append({
                        "row": f"{file}:{n}", "topic": topic_of_row.get(f"{file}:{n}"), "guide": guide,
                        "size": size_bucket(max(cited) if cited else 0), "age": age_bucket(r["judgment_id"]),
                        "max_cited": max(cited) if cited else 0, "relevant": len(cited),
                    })
                except (ValueError, KeyError, TypeError) as e:
                    sys.exit(f"{path}:{n}: {e}")

    print("## What the release shows of the kept and the left-out pairs\n")
    print("| split | pairs kept / release | mean highest cited ¶ (kept / left out) | mean cited ¶s (kept / left out)"
          " | share of judgments before 001-100000 (kept / left out) | share of size <40 / 40–99 / ≥100 (kept; left out) |")
    print("|---|---:|---:|---:|---:|---|")
    for split, rs in rows.items():
        kept = [r for r in rs if r["topic"]]
        out = [r for r in rs if not r["topic"]]

        def mean(xs, key):
            return sum(x[key] for x in xs) / len(xs) if xs else float("nan")

        def share(xs, pred):
            return 100 * sum(1 for x in xs if pred(x)) / len(xs) if xs else float("nan")

        sizes = lambda xs: " / ".join(f"{share(xs, lambda x, b=b: x['size'] == b):.0f}" for b in ("<40", "40-99", ">=100"))
        print(f"| {split} | {len(kept)} / {len(rs)} | {mean(kept, 'max_cited'):.1f} / {mean(out, 'max_cited'):.1f}"
              f" | {mean(kept, 'relevant'):.2f} / {mean(out, 'relevant'):.2f}"
              f" | {share(kept, lambda x: x['age'] == 'old'):.0f} % / {share(out, lambda x: x['age'] == 'old'):.0f} %"
              f" | {sizes(kept)}; {sizes(out)} |")

    print("\n## The committed entries on the kept topics, and post-stratified to the release split\n")
    print("| system | split | topics | kept mean " + " / ".join(MEASURES) + " | reweighted | change | release pairs"
          " in a stratum with no kept topic (guide alone / split) |")
    print("|---|---|---:|---|---|---|---|")
    for path in sorted(glob.glob(os.path.join(results, "entries", "*.json"))):
        with open(path, encoding="utf-8") as f:
            e = json.load(f)["entry"]
        split = e["dataset"]["split"]
        if split not in rows:
            continue
        idx = [e["measures"].index(m) for m in MEASURES]
        per = {t: [v[i] for i in idx] for t, v in e["per_topic"].items()}
        rs = [r for r in rows[split] if r["topic"] in per]
        if not rs:
            continue
        kept_mean = [sum(per[r["topic"]][j] for r in rs) / len(rs) for j in range(len(MEASURES))]
        by_full = collections.defaultdict(list)
        by_guide = collections.defaultdict(list)
        for r in rs:
            by_full[(r["guide"], r["size"], r["age"])].append(per[r["topic"]])
            by_guide[r["guide"]].append(per[r["topic"]])
        total = [0.0] * len(MEASURES)
        fell_back = [0, 0]
        for r in rows[split]:
            vals = by_full.get((r["guide"], r["size"], r["age"]))
            if not vals:
                vals = by_guide.get(r["guide"])
                fell_back[0 if vals else 1] += 1
            vals = vals or list(per.values())
            for j in range(len(MEASURES)):
                total[j] += sum(v[j] for v in vals) / len(vals)
        rew = [t / len(rows[split]) for t in total]
        name = e["system"]
        fmt = lambda xs: " / ".join(f"{100 * x:.1f}" for x in xs)
        print(f"| {name} | {split} | {len(rs)} | {fmt(kept_mean)} | {fmt(rew)} | "
              + " / ".join(f"{100 * (b - a):+.1f}" for a, b in zip(kept_mean, rew)) + f" | {fell_back[0]} / {fell_back[1]} |")


if __name__ == "__main__":
    main()
