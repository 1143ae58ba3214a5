#!/usr/bin/env python3
"""Time Python evaluators on the workload of core/benches/eval.rs, for the ratio in docs/performance.md.

Same shape as the criterion bench: 1,000 topics x 1,000 hits, scores on a coarse grid, 50 judged
documents per topic with grades 0-2; measures AP, RPrec, R@100, nDCG@10, P@10, RR@10.

    python3 -m pip install pytrec-eval-terrier==0.5.11 ranx==0.3.21
    python3 scripts/bench_python_eval.py [--lexbench target/release/lexbench]

Prints the median of 5 repetitions for: pytrec_eval on in-memory dicts; pytrec_eval including
reading the TREC files with a plain Python parser; ranx on in-memory data (after one warm-up call that
compiles its numba kernels); and, with --lexbench, the `lexbench eval` binary on the same files.
"""
import argparse
import os
import random
import statistics
import subprocess
import tempfile
import time


def generate(topics=1000, hits=1000, seed=20261122):
    rng = random.Random(seed)
    run, qrels = {}, {}
    for t in range(topics):
        tid = f"T{t:04}"
        run[tid] = {f"D{t:04}-{d:05}": rng.randrange(1000) / 10.0 for d in range(hits)}
        q = {}
        for _ in range(50):
            q[f"D{t:04}-{rng.randrange(hits * 6 // 5):05}"] = rng.randrange(3)
        qrels[tid] = q
    return run, qrels


def write(run, qrels, d):
    rp, qp = os.path.join(d, "run.trec"), os.path.join(d, "qrels.txt")
    with open(rp, "w") as f:
        for t, docs in run.items():
            for i, (doc, s) in enumerate(sorted(docs.items(), key=lambda kv: -kv[1])):
                f.write(f"{t} Q0 {doc} {i + 1} {s!r} py\n")
    with open(qp, "w") as f:
        for t, docs in qrels.items():
            for doc, r in docs.items():
                f.write(f"{t} 0 {doc} {r}\n")
    return rp, qp


def read(rp, qp):
    run, qrels = {}, {}
    with open(rp) as f:
        for line in f:
            t, _, d, _, s, _ = line.split()
            run.setdefault(t, {})[d] = float(s)
    with open(qp) as f:
        for line in f:
            t, _, d, r = line.split()
            qrels.setdefault(t, {})[d] = int(r)
    return run, qrels


def median_time(fn, reps=5):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lexbench", help="path to a release lexbench binary")
    args = ap.parse_args()
    import pytrec_eval

    run, qrels = generate()
    trec_measures = {"map", "Rprec", "recall.100", "ndcg_cut.10", "P.10", "recip_rank"}

    def pytrec():
        pytrec_eval.RelevanceEvaluator(qrels, trec_measures).evaluate(run)

    with tempfile.TemporaryDirectory() as d:
        rp, qp = write(run, qrels, d)

        def pytrec_files():
            r, q = read(rp, qp)
            pytrec_eval.RelevanceEvaluator(q, trec_measures).evaluate(r)

        print(f"pytrec_eval in memory      : {median_time(pytrec) * 1000:8.1f} ms")
        print(f"pytrec_eval read+evaluate  : {median_time(pytrec_files) * 1000:8.1f} ms")
        try:
            from ranx import Qrels, Run, evaluate

            rq, rr = Qrels(qrels), Run(run)
            ms = ["map", "r-precision", "recall@100", "ndcg@10", "precision@10", "mrr@10"]
            evaluate(rq, rr, ms)  # numba compilation
            print(f"ranx in memory             : {median_time(lambda: evaluate(rq, rr, ms)) * 1000:8.1f} ms")
        except ImportError:
            print("ranx not installed")
        if args.lexbench:
            cmd = [args.lexbench, "eval", rp, qp, "-m", "AP,RPrec,R@100,nDCG@10,P@10,RR@10"]
            t = median_time(lambda: subprocess.run(cmd, check=True, capture_output=True))
            print(f"lexbench eval (binary)     : {t * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
