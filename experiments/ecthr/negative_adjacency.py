#!/usr/bin/env python3
"""Where in the judgment do the training negatives lie? BM25's top non-relevant paragraphs against random ones.

A guide cites a pinpoint (`§ 127`, `§§ 45-47`) for a point the judgment often makes over a run of
paragraphs, so an uncited paragraph next to a cited one may well say what the heading asks. This measures,
for every topic of a split, how far (in paragraphs of the judgment's pool, which keeps the judgment's order)
each of a run's top non-relevant paragraphs lies from the nearest relevant one, against the same distance
for every non-relevant paragraph of the topic (what a uniformly random negative, as `text-dpr-random` draws,
would be). Shares are means over topics, so each topic weighs as one training pair does. `text-dpr` trains
on BM25's top four non-relevant paragraphs (`bm25_order = "ranked"`):

    lexbench --data DATA run bm25 --dataset ecthr-release-text --split train
    python3 experiments/ecthr/negative_adjacency.py DATA/datasets/ecthr-release-text train DATA/runs/ecthr-release-text/train/bm25.trec [--top 4]

A distance is structure, not relevance: a near paragraph can be procedure, a far one the same reasoning
restated. It says where the negatives come from, not whether they are false negatives.

It also checks that the labels are not shifted by a paragraph (which would make the neighbours the real
relevant ones): for every relevant paragraph whose two neighbours are non-relevant, how often the run ranks
the previous and how often the next neighbour above it. Labels aligned with the text give about the same
share on both sides; a shift by one shows as a large difference.
"""
import argparse
import collections
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trec_inputs  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("dataset", help="a built ECtHR dataset folder (qrels/, pools.jsonl)")
ap.add_argument("split")
ap.add_argument("run", help="a TREC run of that split")
ap.add_argument("--top", type=int, default=4, help="the run's top non-relevant paragraphs taken per topic")
args = ap.parse_args()

relevant = trec_inputs.relevant(os.path.join(args.dataset, "qrels", f"{args.split}.tsv"))
pools = trec_inputs.pools(os.path.join(args.dataset, "pools.jsonl"), relevant)
position = {t: {d: i for i, d in enumerate(docs)} for t, docs in pools.items()}
ranked = trec_inputs.ranked(args.run)

bands = [1, 2, 5]
run_share = {b: [] for b in bands}
all_share = {b: [] for b in bands}
run_dist, all_dist = [], []
above = collections.Counter()  # neighbours of a lone relevant paragraph ranked above it
skipped = collections.Counter()
for topic, rel in sorted(relevant.items()):
    pos = position.get(topic)
    if pos is None:
        skipped["no pool"] += 1
        continue
    if topic not in ranked:
        skipped["not in the run"] += 1
        continue
    rel_pos = sorted(pos[d] for d in rel if d in pos)
    if len(rel_pos) < len(rel):
        sys.exit(f"{topic}: a relevant paragraph is not in its pool")
    non_rel = [d for d in pos if d not in rel]
    top = [d for d in ranked[topic] if d in pos and d not in rel][: args.top]
    if not top or not non_rel:
        skipped["no non-relevant paragraph"] += 1
        continue

    rank_of = {d: r for r, d in enumerate(ranked[topic])}
    by_pos = sorted(pos, key=pos.get)
    for r in rel_pos:
        if 0 < r < len(by_pos) - 1 and by_pos[r - 1] not in rel and by_pos[r + 1] not in rel:
            me = rank_of.get(by_pos[r], float("inf"))
            above["lone"] += 1
            above["previous"] += rank_of.get(by_pos[r - 1], float("inf")) < me
            above["next"] += rank_of.get(by_pos[r + 1], float("inf")) < me

    def dist(d):
        return min(abs(pos[d] - r) for r in rel_pos)

    dt = [dist(d) for d in top]
    da = [dist(d) for d in non_rel]
    run_dist += dt
    all_dist += da
    for b in bands:
        run_share[b].append(sum(x <= b for x in dt) / len(dt))
        all_share[b].append(sum(x <= b for x in da) / len(da))

topics = len(run_share[1])
print(f"{args.split}: {topics} topics; the run's top {args.top} non-relevant paragraphs against all non-relevant ones")
if skipped:
    print("  left out: " + ", ".join(f"{v} {k}" for k, v in sorted(skipped.items())))
if not topics:
    sys.exit("no topic to measure")
for b in bands:
    print(f"  within {b} paragraph(s) of a relevant one: run {100 * statistics.mean(run_share[b]):5.1f} %   "
          f"random {100 * statistics.mean(all_share[b]):5.1f} %")
print(f"  median distance: run {statistics.median(run_dist):g}   random {statistics.median(all_dist):g} "
      f"(paragraphs; {len(run_dist)} and {len(all_dist)} paragraphs)")
if above["lone"]:
    print(f"  label alignment: of {above['lone']} relevant paragraphs between two non-relevant ones, the run ranks "
          f"the previous above it {100 * above['previous'] / above['lone']:.1f} %, the next "
          f"{100 * above['next'] / above['lone']:.1f} %")
