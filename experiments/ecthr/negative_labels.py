#!/usr/bin/env python3
"""Are the hard negatives of training relevant after all? A check with a second reading of the guides.

The ECtHR labels are the paragraphs a guide cites under a heading, so a paragraph no guide cites there is
"non-relevant" even when it says what the heading asks. LexCLiPR's own English labels
(`hudoc/lexclipr/labels.jsonl`) are an independent reading of the same guides (other editions, another
extraction; `experiments/ecthr/label_agreement.py` compares the two). For every topic of a split whose (judgment, last
two headings) LexCLiPR also labels, this counts how many of the paragraphs a run ranks highest among the
release's non-relevant ones LexCLiPR marks relevant, against the same share among all the topic's
non-relevant paragraphs (what a uniformly random negative would hit). `text-dpr` trains on BM25's top four
non-relevant paragraphs of each topic (`bm25_order = "ranked"`, BM25 as `lexbench run bm25` ranks the pool
with its defaults): run it on the train split's BM25 run to see how often those negatives are relevant by the
other reading. Only the false negatives that some guide edition cites are visible this way (a lower bound).

    lexbench --data DATA run bm25 --dataset ecthr-release-text --split train
    python3 experiments/ecthr/negative_labels.py DATA/datasets/ecthr-release-text train DATA/runs/ecthr-release-text/train/bm25.trec [--top 4] [FIXTURES]
"""
import argparse
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trec_inputs  # noqa: E402
from label_agreement import lexclipr_key, release_key  # noqa: E402 (the same matching as that script)

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("dataset", help="a built ECtHR dataset folder (queries.jsonl, qrels/, pools.jsonl)")
ap.add_argument("split")
ap.add_argument("run", help="a TREC run of that split")
ap.add_argument("fixtures", nargs="?", default="../shared/fixtures")
ap.add_argument("--top", type=int, default=4, help="the run's top non-relevant paragraphs taken per topic")
args = ap.parse_args()

lines = trec_inputs.lines


def records(path, *fields):
    """The JSON records of a JSON Lines file, each with the named fields, or an exit naming file and line."""
    for n, line in lines(path):
        try:
            r = json.loads(line)
            for f in fields:
                r[f]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            sys.exit(f"{path}:{n}: not a record with {', '.join(fields)} ({e!r})")
        yield r


lexclipr = collections.defaultdict(set)
labels = os.path.join(args.fixtures, "hudoc/lexclipr/labels.jsonl")
for n, line in lines(labels):
    try:
        r = json.loads(line)
        if r["lang"] == "english":
            lexclipr[lexclipr_key(r)] |= {str(p) for p in r["paragraph_numbers"]}
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        sys.exit(f"{labels}:{n}: not a LexCLiPR label ({e})")

topics = {}
for r in records(os.path.join(args.dataset, "queries.jsonl"), "topic", "item", "text"):
    topics[r["topic"]] = release_key(r["item"], r["text"])
relevant = trec_inputs.relevant(os.path.join(args.dataset, "qrels", f"{args.split}.tsv"))
pools = trec_inputs.pools(os.path.join(args.dataset, "pools.jsonl"), relevant)
ranked = trec_inputs.ranked(args.run)

num = lambda doc: doc.rsplit(":", 1)[1]  # noqa: E731 (doc ids are ITEM:PARAGRAPH)
matched = hits_top = n_top = hits_all = n_all = 0
per_rank = collections.Counter()
for topic, rel in relevant.items():
    key = topics.get(topic)
    other = lexclipr.get(key) if key else None
    if other is None or topic not in pools:
        continue
    matched += 1
    nonrel = [d for d in pools[topic] if d not in rel]
    hits_all += sum(num(d) in other for d in nonrel)
    n_all += len(nonrel)
    order = [d for d in ranked.get(topic, []) if d not in rel]
    for i, d in enumerate(order[: args.top]):
        n_top += 1
        if num(d) in other:
            hits_top += 1
            per_rank[i + 1] += 1

print(f"{args.split}: {len(relevant)} topics, {matched} with a LexCLiPR label for the same (judgment, headings)")
if matched:
    print(f"  the run's top {args.top} non-relevant paragraphs: {n_top}, LexCLiPR-relevant {hits_top} "
          f"({hits_top / max(1, n_top):.1%}); by rank: " + ", ".join(f"{r}: {per_rank[r]}" for r in range(1, args.top + 1)))
    print(f"  all non-relevant paragraphs of those topics: {n_all}, LexCLiPR-relevant {hits_all} "
          f"({hits_all / max(1, n_all):.1%})")
