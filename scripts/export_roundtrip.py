#!/usr/bin/env python3
"""The Python side of the export round trips (tests/cli/export.rs): opens `lexbench export` folders
with the libraries their formats are for, reports what it read, makes a run from what it read and
scores the run with pytrec_eval (trec_eval's own code).

    export_roundtrip.py FORMAT RUNS_DIR NAME=EXPORT_DIR [NAME=EXPORT_DIR ...]

FORMAT is hf, beir or mteb. Prints one JSON document on stdout:

    {"format": …, "datasets": {NAME: {
        "corpus": {doc: text}, "corpus_meta": {doc: {item, num, section}} | null,
        "topics": {topic: {"text", ["query", "item", "guide"]}},
        "splits": {split: {"topics": [...] | null, "qrels": {topic: {doc: grade}},
                           "pools": {topic: [doc, ...]} | null}},
        "runs": {split: {"file": RUNS_DIR/NAME-FORMAT-SPLIT.trec, "measures": {name: mean}}}}}}

Split names are the export's (Hugging Face and MTEB write `train-fit` as `train_fit`). The tests compare
all of it with the dataset and `lexbench stats`, and each run's measures with `lexbench eval` on the same
run file. How each format is read:

- hf: `datasets.load_dataset(DIR, CONFIG)` for corpus, queries, qrels and (pooled) pools; the default
  config (`load_dataset(DIR)`) must be the queries; every Parquet file is also read with pyarrow and its
  row count compared.
- beir: `corpus.jsonl`, `queries.jsonl`, `candidates/*.jsonl` through `datasets`' json builder and
  `qrels/*.tsv` through its csv builder (tab-separated, header line), as BEIR's and MTEB's Hugging Face
  loaders read them.
- mteb: `mteb_metadata.json` checked for MTEB 2.x's TaskMetadata field names (tests/cli/export_libraries.rs
  checks it with MTEB itself); corpus, queries, default = qrels and, for a reranking task, top_ranked = the
  pools, through `load_dataset`.

The run ranks each topic's candidates (its pool, or the whole corpus) by the number of distinct
lower-cased words it shares with the query: a deterministic ranking with many tied scores, so
trec_eval's tie-breaking is exercised too. Measures: AP, RPrec, R@100, R@200, R@500, nDCG@10, P@5, RR,
and with pools R@2%, R@5%, R@10% (recall at max(1, ceil(k*n/100)) of a pool of n, each topic's cut-off
evaluated with pytrec_eval's recall at that depth). Means are over every qrels topic, as `trec_eval -c`.

Runs offline: the caller sets HF_DATASETS_OFFLINE=1, HF_HUB_OFFLINE=1 and HF_HOME to a temporary folder.
"""

import glob
import json
import os
import re
import sys

import datasets
import pyarrow.parquet as pq
import pytrec_eval

MEASURES = {
    "map": "AP",
    "Rprec": "RPrec",
    "recall_100": "R@100",
    "recall_200": "R@200",
    "recall_500": "R@500",
    "ndcg_cut_10": "nDCG@10",
    "P_5": "P@5",
    "recip_rank": "RR",
}
PERCENTS = (2, 5, 10)
TASK_METADATA_FIELDS = (
    "name", "description", "reference", "dataset", "type", "category", "modalities", "eval_splits",
    "eval_langs", "main_score", "date", "domains", "task_subtypes", "license", "annotations_creators",
    "dialect", "sample_creation", "bibtex_citation",
)


def fail(msg):
    raise SystemExit(f"export_roundtrip.py: {msg}")


def columns(ds):
    """A Dataset as {column: [values]}."""
    return ds.to_dict()


def rows(ds):
    d = columns(ds)
    keys = list(d)
    return [dict(zip(keys, vals)) for vals in zip(*(d[k] for k in keys))] if keys else []


def qrels_from(table_rows):
    out = {}
    for r in table_rows:
        out.setdefault(r["query-id"], {})[r["corpus-id"]] = int(r["score"])
    return out


def topic_record(row, text_key="text"):
    rec = {"text": row[text_key]}
    for k in ("query", "item", "guide"):
        if row.get(k) is not None:
            rec[k] = row[k]
    return rec


def read_hf(path):
    configs = datasets.get_dataset_config_names(path)
    for c in ("corpus", "queries", "qrels"):
        if c not in configs:
            fail(f"{path}: no config {c} (configs: {configs})")
    corpus_ds = datasets.load_dataset(path, "corpus", split="corpus")
    corpus_rows = rows(corpus_ds)
    corpus = {r["_id"]: r["text"] for r in corpus_rows}
    if any(r["title"] != "" for r in corpus_rows):
        fail(f"{path}: a corpus title is not empty")
    meta = None
    if "item" in corpus_ds.column_names:
        meta = {r["_id"]: {"item": r["item"], "num": r["num"], "section": r["section"]} for r in corpus_rows}
    queries = datasets.load_dataset(path, "queries")
    default = datasets.load_dataset(path)
    if sorted(default) != sorted(queries) or any(rows(default[s]) != rows(queries[s]) for s in queries):
        fail(f"{path}: load_dataset(DIR) is not the queries config")
    qrels = datasets.load_dataset(path, "qrels")
    pools = datasets.load_dataset(path, "pools") if "pools" in configs else None
    topics, splits = {}, {}
    for split, ds in queries.items():
        split_rows = rows(ds)
        for r in split_rows:
            topics[r["_id"]] = topic_record(r)
        splits[split] = {
            "topics": [r["_id"] for r in split_rows],
            "qrels": qrels_from(rows(qrels[split])),
            "pools": {r["query-id"]: r["corpus-ids"] for r in rows(pools[split])} if pools else None,
        }
    if sorted(qrels) != sorted(queries) or (pools and sorted(pools) != sorted(queries)):
        fail(f"{path}: configs have different splits")
    # pyarrow reads every Parquet file of the export, with the rows `datasets` loaded.
    loaded = {"corpus/corpus.parquet": corpus_ds.num_rows}
    for config, dd in (("queries", queries), ("qrels", qrels), ("pools", pools)):
        for split, ds in (dd or {}).items():
            loaded[f"{config}/{split}.parquet"] = ds.num_rows
    on_disk = sorted(os.path.relpath(p, path) for p in glob.glob(os.path.join(path, "**", "*.parquet"), recursive=True))
    if on_disk != sorted(loaded):
        fail(f"{path}: Parquet files {on_disk}, configs {sorted(loaded)}")
    for rel, n in loaded.items():
        if pq.read_table(os.path.join(path, rel)).num_rows != n:
            fail(f"{path}/{rel}: pyarrow reads another row count than datasets")
    return corpus, meta, topics, splits


def load_json_lines(path):
    return rows(datasets.load_dataset("json", data_files=path, split="train"))


QRELS_FEATURES = datasets.Features(
    {"query-id": datasets.Value("string"), "corpus-id": datasets.Value("string"), "score": datasets.Value("int32")}
)


def split_files(path, folder, ext):
    return {
        os.path.basename(p)[: -len(ext)]: p
        for p in sorted(glob.glob(os.path.join(path, folder, "*" + ext)))
    }


def read_beir(path):
    corpus_rows = load_json_lines(os.path.join(path, "corpus.jsonl"))
    corpus = {r["_id"]: r["text"] for r in corpus_rows}
    if any(r["title"] != "" for r in corpus_rows):
        fail(f"{path}: a corpus title is not empty")
    meta = None
    if corpus_rows and "metadata" in corpus_rows[0]:
        meta = {r["_id"]: r["metadata"] for r in corpus_rows}
    topics = {}
    for r in load_json_lines(os.path.join(path, "queries.jsonl")):
        topics[r["_id"]] = topic_record({**(r.get("metadata") or {}), "text": r["text"]})
    splits = {}
    candidates = split_files(path, "candidates", ".jsonl")
    for split, tsv in split_files(path, "qrels", ".tsv").items():
        qrels = datasets.load_dataset("csv", data_files=tsv, delimiter="\t", features=QRELS_FEATURES, split="train")
        pools = None
        order = None
        if candidates:
            cand = load_json_lines(candidates[split])
            pools = {r["query-id"]: r["corpus-ids"] for r in cand}
            order = [r["query-id"] for r in cand]
        splits[split] = {"topics": order, "qrels": qrels_from(rows(qrels)), "pools": pools}
    if candidates and sorted(candidates) != sorted(splits):
        fail(f"{path}: candidates for {sorted(candidates)}, qrels for {sorted(splits)}")
    readme = open(os.path.join(path, "README.md"), encoding="utf-8").read()
    if candidates and "per-judgment reranking" not in readme:
        fail(f"{path}/README.md does not say the task is per-judgment reranking")
    return corpus, meta, topics, splits


def read_mteb(path):
    meta = json.load(open(os.path.join(path, "mteb_metadata.json"), encoding="utf-8"))
    missing = [f for f in TASK_METADATA_FIELDS if f not in meta]
    if missing:
        fail(f"{path}/mteb_metadata.json lacks {missing}")
    if not (isinstance(meta["dataset"], dict) and {"path", "revision"} <= set(meta["dataset"])):
        fail(f"{path}/mteb_metadata.json: dataset needs path and revision")
    if meta["type"] not in ("Reranking", "Retrieval"):
        fail(f"{path}/mteb_metadata.json: type {meta['type']!r}")
    corpus_rows = rows(datasets.load_dataset(path, "corpus", split="corpus"))
    corpus = {r["_id"]: r["text"] for r in corpus_rows}
    corpus_meta = None
    topics = {r["_id"]: topic_record(r) for r in rows(datasets.load_dataset(path, "queries", split="queries"))}
    top_ranked = datasets.load_dataset(path, "top_ranked") if meta["type"] == "Reranking" else {}
    splits = {}
    for split, ds in datasets.load_dataset(path).items():
        order, pools = None, None
        if meta["type"] == "Reranking":
            ranked = rows(top_ranked[split])
            order = [r["query-id"] for r in ranked]
            pools = {r["query-id"]: r["corpus-ids"] for r in ranked}
        splits[split] = {"topics": order, "qrels": qrels_from(rows(ds)), "pools": pools}
    unknown = [s for s in meta["eval_splits"] if s not in splits]
    if unknown:
        fail(f"{path}/mteb_metadata.json: eval_splits {unknown} are not splits of the export")
    return corpus, corpus_meta, topics, splits


WORD = re.compile(r"\w+")


def words(text):
    return set(WORD.findall(text.lower()))


def make_run(corpus, topics, split, pooled):
    """{topic: {doc: score}} over the split's topics: shared distinct words, ties left as they are."""
    ids = split["topics"] if split["topics"] is not None else sorted(split["qrels"])
    doc_words = {d: words(t) for d, t in corpus.items()}
    run = {}
    for t in ids:
        q = words(topics[t]["text"])
        candidates = split["pools"][t] if pooled else sorted(corpus)
        run[t] = {d: float(len(q & doc_words[d])) for d in candidates}
    return run


def write_run(run, path):
    with open(path, "w", encoding="utf-8") as f:
        for t in sorted(run):
            ranked = sorted(run[t].items(), key=lambda kv: (-kv[1], kv[0]))
            for rank, (d, s) in enumerate(ranked, 1):
                f.write(f"{t} Q0 {d} {rank} {s!r} export-roundtrip\n")


def score(run, qrels, pools):
    """Means over every qrels topic (a topic missing from the run scores 0), as trec_eval -c."""
    ev = pytrec_eval.RelevanceEvaluator(
        qrels, {"map", "Rprec", "recall.100,200,500", "ndcg_cut.10", "P.5", "recip_rank"}
    )
    per_topic = ev.evaluate(run)
    names = list(MEASURES.values())
    values = {t: {MEASURES[k]: v for k, v in per_topic.get(t, {}).items() if k in MEASURES} for t in qrels}
    if pools is not None:
        cut = {t: {k: max(1, (k * len(pools[t]) + 99) // 100) for k in PERCENTS} for t in qrels}
        depths = sorted({c for cs in cut.values() for c in cs.values()})
        at = pytrec_eval.RelevanceEvaluator(qrels, {"recall." + ",".join(map(str, depths))}).evaluate(run)
        for t in qrels:
            for k in PERCENTS:
                values[t][f"R@{k}%"] = at.get(t, {}).get(f"recall_{cut[t][k]}", 0.0)
        names += [f"R@{k}%" for k in PERCENTS]
    n = max(1, len(qrels))
    return {m: sum(values[t].get(m, 0.0) for t in sorted(qrels)) / n for m in names}


def main():
    if len(sys.argv) < 4:
        fail(__doc__.split("\n\n")[1])
    fmt, runs_dir = sys.argv[1], sys.argv[2]
    reader = {"hf": read_hf, "beir": read_beir, "mteb": read_mteb}.get(fmt) or fail(f"unknown format {fmt}")
    report = {"format": fmt, "datasets": {}}
    for arg in sys.argv[3:]:
        name, _, path = arg.partition("=")
        corpus, meta, topics, splits = reader(path)
        pooled = any(s["pools"] is not None for s in splits.values())
        runs = {}
        for split_name, split in sorted(splits.items()):
            run = make_run(corpus, topics, split, pooled)
            file = os.path.join(runs_dir, f"{name}-{fmt}-{split_name}.trec")
            write_run(run, file)
            runs[split_name] = {"file": file, "measures": score(run, split["qrels"], split["pools"])}
        report["datasets"][name] = {
            "corpus": corpus,
            "corpus_meta": meta,
            "topics": topics,
            "splits": splits,
            "runs": runs,
        }
    json.dump(report, sys.stdout, ensure_ascii=False, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
