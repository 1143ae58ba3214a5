#!/usr/bin/env python3
"""The Python side of tests/cli/export_libraries.rs: opens `lexbench export` folders with the
libraries they are for, their own loaders and evaluation, and a small sentence-transformers model.

    export_libraries.py mteb|beir MODEL_DIR RUNS_DIR NAME=EXPORT_DIR [NAME=EXPORT_DIR ...]

- mteb: `mteb_metadata.json` (with `dataset.path` set to the folder) through MTEB's own
  `TaskMetadata` (pydantic, extra fields forbidden), a task of its type (`AbsTaskRetrieval`, which
  2.x also uses for "Reranking" with a `top_ranked` config) whose `load_data` reads the folder, and
  `mteb.evaluate` of MODEL_DIR on it, saving the ranking (`prediction_folder`).
- beir: `beir.datasets.data_loader.GenericDataLoader(DIR).load(split)` for every qrels file, and BEIR's
  `EvaluateRetrieval` over `DenseRetrievalExactSearch(models.SentenceBERT(MODEL_DIR))`.

Prints one JSON document: {"versions": {...}, "datasets": {NAME: {"corpus": {id: text},
"queries": {id: text}, "splits": {split: {"qrels": {...}, "top_ranked": {...} | null,
"scores": {measure: value} (MTEB and BEIR round them to 5 decimals), "run": RUNS_DIR/NAME-LIB-SPLIT.trec}}}}}. The run is the library's own
ranking written as a TREC run (scores in full precision), for `lexbench eval` to score again.

Runs offline: the caller sets HF_DATASETS_OFFLINE=1, HF_HUB_OFFLINE=1, HF_HOME and MTEB_CACHE.
"""

import glob
import json
import os
import sys
from importlib.metadata import version


MTEB_MEASURES = ("ndcg_at_10", "map_at_1000", "recall_at_100", "precision_at_5", "mrr_at_1000")


def write_run(results, path, tag):
    with open(path, "w", encoding="utf-8") as f:
        for q in sorted(results):
            docs = sorted(results[q].items(), key=lambda kv: (-kv[1], kv[0]))
            for rank, (d, s) in enumerate(docs, 1):
                f.write(f"{q} Q0 {d} {rank} {float(s)!r} {tag}\n")
    return path


def read_mteb(name, path, model_dir, runs):
    import mteb
    from mteb.abstasks.retrieval import AbsTaskRetrieval
    from mteb.abstasks.task_metadata import TaskMetadata
    from sentence_transformers import SentenceTransformer

    meta = json.load(open(os.path.join(path, "mteb_metadata.json"), encoding="utf-8"))
    meta["dataset"]["path"] = path
    metadata = TaskMetadata(**meta)

    class Task(AbsTaskRetrieval):
        pass

    Task.metadata = metadata
    task = Task()
    task.load_data()
    corpus, queries, splits = {}, {}, {}
    for split, data in task.dataset["default"].items():
        for r in data["corpus"]:
            corpus[r["id"]] = r["text"]
        for r in data["queries"]:
            queries[r["id"]] = r["text"]
        top = data["top_ranked"]
        splits[split] = {
            "qrels": {q: dict(d) for q, d in data["relevant_docs"].items()},
            "top_ranked": None if top is None else {q: list(d) for q, d in top.items()},
        }
    model = SentenceTransformer(model_dir, device="cpu")
    predictions = os.path.join(runs, f"{name}-predictions")
    result = mteb.evaluate(
        model,
        task,
        cache=None,
        prediction_folder=predictions,
        show_progress_bar=False,
        encode_kwargs={"batch_size": 64, "show_progress_bar": False},
    )
    (task_result,) = result.task_results
    files = glob.glob(os.path.join(predictions, "*.json"))
    if len(files) != 1:
        raise SystemExit(f"{predictions}: expected one predictions file, found {files}")
    saved = json.load(open(files[0], encoding="utf-8"))
    for split, per_subset in task_result.scores.items():
        (scores,) = [s for s in per_subset if s["hf_subset"] == "default"]
        results = saved["default"][split] if "default" in saved else saved[split]
        run = write_run(results, os.path.join(runs, f"{name}-mteb-{split}.trec"), "mteb")
        # The measures lexbench eval also computes (the nAUC ones can be NaN, which JSON lacks).
        splits[split]["scores"] = {k: scores[k] for k in MTEB_MEASURES}
        splits[split]["main_score"] = scores["main_score"]
        splits[split]["run"] = run
    return {"corpus": corpus, "queries": queries, "splits": splits}


def read_beir(name, path, model_dir, runs):
    from beir.datasets.data_loader import GenericDataLoader
    from beir.retrieval import models
    from beir.retrieval.evaluation import EvaluateRetrieval
    from beir.retrieval.search.dense import DenseRetrievalExactSearch

    retriever = EvaluateRetrieval(
        DenseRetrievalExactSearch(models.SentenceBERT(model_dir), batch_size=64),
        score_function="cos_sim",
        k_values=[1, 5, 10, 100, 1000],
    )
    corpus, queries, splits = {}, {}, {}
    for qrels_file in sorted(glob.glob(os.path.join(path, "qrels", "*.tsv"))):
        split = os.path.basename(qrels_file)[: -len(".tsv")]
        c, q, qrels = GenericDataLoader(data_folder=path).load(split=split)
        corpus.update({d: r["text"] for d, r in c.items()})
        queries.update(q)
        entry = {"qrels": qrels, "top_ranked": None}
        # The splits a leaderboard evaluates (an open-corpus export has no `test`).
        if split in ("test", "unseen_query", "unseen_guide"):
            results = retriever.retrieve(c, q)
            run = write_run(results, os.path.join(runs, f"{name}-beir-{split}.trec"), "beir")
            ndcg, _map, recall, precision = EvaluateRetrieval.evaluate(
                qrels, results, retriever.k_values, ignore_identical_ids=False
            )
            entry["scores"] = {**ndcg, **_map, **recall, **precision}
            entry["run"] = run
        splits[split] = entry
    return {"corpus": corpus, "queries": queries, "splits": splits}


def main():
    lib, model_dir, runs, *exports = sys.argv[1:]
    reader = {"mteb": read_mteb, "beir": read_beir}[lib]
    out = {"versions": {p: version(p) for p in (lib, "sentence-transformers", "torch", "datasets")}, "datasets": {}}
    for spec in exports:
        name, path = spec.split("=", 1)
        out["datasets"][name] = reader(name, path, model_dir, runs)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
