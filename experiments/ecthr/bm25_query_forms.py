#!/usr/bin/env python3
"""BM25 with the ECtHR queries cut to parts of their heading path, to test whether a shorter query than ours
explains the gap to the paper's BM25 row (its description does not say which text it gave BM25).

A release query is "{guide title} .  {heading} . … {leaf heading}" (../shared/design/DATA.md). Forms:
- `full`: the query as built (what every lexbench row uses);
- `title`: the guide title only (the text before the first " . ");
- `no-title`: the headings without the guide title;
- `leaf`: the last heading only (the text after the last ". ", list numbers such as "3" or "iii" skipped).

Each form is a scratch copy of the dataset under OUT/datasets/{dataset}-q-{form} with queries.jsonl rewritten
(its manifest hash updated, so lexbench's integrity check accepts the copy; nothing else changes), ranked with
`lexbench run bm25` (defaults) and evaluated with `lexbench eval --pools`. Prints one Markdown table.

    python3 experiments/ecthr/bm25_query_forms.py DATA DATASET OUT [SPLIT ...]   # default: test unseen_query unseen_guide

LEXBENCH_BIN names the binary (default target/debug/lexbench).
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys


def title(text):
    return text.split(" . ")[0].strip()


def no_title(text):
    return text.split(" . ", 1)[1].strip() if " . " in text else text


def leaf(text):
    parts = [p.strip() for p in re.split(r"\.\s+", text) if p.strip()]
    parts = [p for p in parts if not re.fullmatch(r"[0-9]+|[ivxlc]+|[a-z]", p)]
    return parts[-1] if parts else text


FORMS = {"full": None, "title": title, "no-title": no_title, "leaf": leaf}
MEASURES = ["R@2%", "R@5%", "R@10%"]


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    data, dataset, out = sys.argv[1:4]
    splits = sys.argv[4:] or ["test", "unseen_query", "unseen_guide"]
    binary = os.environ.get("LEXBENCH_BIN", "target/debug/lexbench")
    src = os.path.join(data, "datasets", dataset)
    if not os.path.isfile(os.path.join(src, "manifest.json")):
        sys.exit(f"{src}: no manifest.json (not a built dataset)")
    print("| query form | split | topics | " + " | ".join(MEASURES) + " | example |")
    print("|---|---|---:|" + "---:|" * len(MEASURES) + "---|")
    for form, cut in FORMS.items():
        name = f"{dataset}-q-{form}"
        dst = os.path.join(out, "datasets", name)
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst)
        qpath = os.path.join(dst, "queries.jsonl")
        with open(qpath, encoding="utf-8") as f:
            queries = [json.loads(line) for line in f]
        if cut is not None:
            for q in queries:
                q["text"] = cut(q["text"])
            body = "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries).encode()
            with open(qpath, "wb") as f:
                f.write(body)
            mpath = os.path.join(dst, "manifest.json")
            with open(mpath, encoding="utf-8") as f:
                manifest = json.load(f)
            manifest["files"]["queries.jsonl"] = hashlib.sha256(body).hexdigest()
            with open(mpath, "w", encoding="utf-8") as f:
                json.dump(manifest, f, indent=2)
        example = queries[0]["text"][:60].replace("|", "/")
        for split in splits:
            subprocess.run([binary, "--data", out, "run", "bm25", "--dataset", name, "--split", split],
                           check=True, stdout=subprocess.DEVNULL)
            run = os.path.join(out, "runs", name, split, "bm25.trec")
            res = subprocess.run([binary, "--format", "json", "eval", run, os.path.join(dst, "qrels", f"{split}.tsv"),
                                  "--pools", os.path.join(dst, "pools.jsonl"), "-m", ",".join(MEASURES)],
                                 check=True, capture_output=True, text=True)
            e = json.loads(res.stdout)
            cells = " | ".join(f"{100 * e['measures'][m]:.1f}" for m in MEASURES)
            print(f"| {form} | {split} | {e['num_topics']} | {cells} | {example} |")
            example = ""


if __name__ == "__main__":
    main()
