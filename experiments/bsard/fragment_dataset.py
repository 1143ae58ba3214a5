#!/usr/bin/env python3
"""The real BSARD questions over the real articles at hand: a folder of BSARD's CSV files for
`lexbench build bsard --from DIR`, written from the fixtures, never from the repository.

    python3 experiments/bsard/fragment_dataset.py FIXTURES/bsard OUT_DIR
    lexbench --data D build bsard --from OUT_DIR

The full article file is not available here: `articles_fr_fragment.jsonl` holds 77 real articles of the
Code civil (41 cut at about 500 characters). The questions kept are the real training and test questions
whose cited articles are all among them (22 of 886 training questions, 4 of 222 test questions); the
article file is written in BSARD's v1 layout (`id, article, code, article_no, description, law_type`)
with an empty description, as the fragment records no hierarchy below the code, so the legislative graph
is one code over 77 articles. Prints what it kept.
"""
import csv
import json
import os
import sys

if len(sys.argv) != 3:
    sys.exit(__doc__)
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
articles = [json.loads(line) for line in open(os.path.join(src, "articles_fr_fragment.jsonl"), encoding="utf-8")]
ids = {str(a["bsard_id"]) for a in articles}
# The fragment's order is not the code's: the sequential view reads articles in file order, so they go
# by their number within the code (Art. 2, Art. 409, …), as the published file lists them.
def number(a):
    digits = "".join(c if c.isdigit() else " " for c in a["reference"]).split()
    return (int(digits[0]) if digits else 0, a["reference"])
with open(os.path.join(out, "articles_fr.csv"), "w", encoding="utf-8", newline="") as f:
    w = csv.writer(f)
    w.writerow(["id", "article", "code", "article_no", "description", "law_type"])
    for a in sorted(articles, key=number):
        w.writerow([a["bsard_id"], a["text"], a["code"], a["reference"], "", "regional"])
for split in ["train", "test"]:
    name = f"questions_fr_{split}.csv"
    with open(os.path.join(src, name), encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    kept = [r for r in rows if all(a.strip() in ids for a in r["article_ids"].split(","))]
    with open(os.path.join(out, name), "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(kept)
    print(f"{split}: {len(kept)} of {len(rows)} questions cite only the {len(ids)} articles at hand")
