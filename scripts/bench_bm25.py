#!/usr/bin/env python3
"""BM25 at BSARD's size: lexbench (criterion bench) and Python BM25s on the same generated corpus, in one run.

    python3 -m pip install bm25s==0.3.16 PyStemmer==3.0.0 rank_bm25==0.2.2
    python3 scripts/bench_bm25.py [--skip-cargo] [--rank-bm25-queries 100]

1. `cargo bench -p lexbench-baselines --bench bm25` (release build) with LEXBENCH_BENCH_DUMP set: criterion
   times indexing the 22,633 generated articles (French analyzer: tokenise, stop words, Snowball
   stemming, accent folding; on all cores) and ranking 1,108 generated questions (top 1000 each), one
   `search` at a time and in one `search_batch` (on all cores), and the bench writes the texts it used
   to DIR/corpus.txt and DIR/queries.txt.
2. The same texts go through bm25s (method "lucene", the same formula; its own tokenizer with French
   stop words and PyStemmer's Snowball French stemmer): tokenise+index, then tokenise+retrieve top 1000.
   Median of 3 repetitions.
3. Optionally rank_bm25 (BM25Okapi, pure Python) on the first N questions, extrapolated to 1,108.
4. The ratios: lexbench index vs bm25s index, lexbench batch (and one-at-a-time) retrieval vs bm25s
   retrieval. The load average is printed before and after: the figures mean something only on an
   otherwise idle machine.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def seconds(criterion_time):
    """'380.48 ms' -> 0.38048"""
    value, unit = criterion_time.split()
    return float(value) * UNITS[unit]


def loadavg():
    try:
        return open("/proc/loadavg").read().split()[:3]
    except OSError:
        return ["?"] * 3


def median_time(fn, reps=3):
    times, out = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-cargo", metavar="DIR", help="reuse texts dumped earlier in DIR; do not run cargo")
    ap.add_argument("--rank-bm25-queries", type=int, default=0, help="also time rank_bm25 on this many questions")
    args = ap.parse_args()

    print("load average (1, 5, 15 min) at start: " + " ".join(loadavg()))
    results = {}
    if args.skip_cargo:
        dump = args.skip_cargo
    else:
        dump = tempfile.mkdtemp(prefix="lexbench-bm25-bench-")
        env = dict(os.environ, LEXBENCH_BENCH_DUMP=dump)
        proc = subprocess.run(
            ["cargo", "bench", "-p", "lexbench-baselines", "--bench", "bm25"],
            cwd=ROOT, env=env, capture_output=True, text=True,
        )
        sys.stderr.write(proc.stderr[-2000:] if proc.returncode else "")
        if proc.returncode:
            sys.exit(f"cargo bench failed ({proc.returncode})")
        name = None
        for line in proc.stdout.splitlines():
            m = re.match(r"^(bm25_bsard_size/\S+)", line.strip())
            if m:
                name = m.group(1)
            t = re.search(r"time:\s+\[(\S+ \S+) (\S+ \S+) (\S+ \S+)\]", line)
            if t and name:
                results[name] = t.group(2)
                print(f"lexbench {name}: {t.group(1)} .. {t.group(2)} .. {t.group(3)}")
                name = None

    corpus = open(os.path.join(dump, "corpus.txt"), encoding="utf-8").read().splitlines()
    queries = open(os.path.join(dump, "queries.txt"), encoding="utf-8").read().splitlines()
    assert len(corpus) == 22633 and len(queries) == 1108, (len(corpus), len(queries))
    words = sum(len(d.split()) for d in corpus)
    print(f"corpus: {len(corpus)} articles, {words} words (mean {words / len(corpus):.1f}); {len(queries)} questions")

    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("french")

    def bm25s_index():
        toks = bm25s.tokenize(corpus, stopwords="fr", stemmer=stemmer, show_progress=False)
        model = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
        model.index(toks, show_progress=False)
        return model

    t_index, model = median_time(bm25s_index)

    def bm25s_retrieve():
        q = bm25s.tokenize(queries, stopwords="fr", stemmer=stemmer, show_progress=False)
        return model.retrieve(q, k=1000, show_progress=False, n_threads=1)

    t_retrieve, _ = median_time(bm25s_retrieve)
    print(f"bm25s {bm25s.__version__} (numpy, 1 thread) index: {t_index:.3f} s")
    print(f"bm25s retrieve 1108 questions top1000: {t_retrieve:.3f} s")

    ratios = [
        ("index", "bm25_bsard_size/index_22633_articles", t_index),
        ("batch retrieval", "bm25_bsard_size/retrieve_batch_1108_questions_top1000", t_retrieve),
        ("one-at-a-time retrieval", "bm25_bsard_size/retrieve_1108_questions_top1000", t_retrieve),
    ]
    for what, name, theirs in ratios:
        if name in results:
            ours = seconds(results[name])
            print(f"lexbench {what}: {ours:.3f} s, {theirs / ours:.2f}x bm25s ({theirs:.3f} s)")

    if args.rank_bm25_queries:
        from rank_bm25 import BM25Okapi

        toks = [stemmer.stemWords(d.lower().split()) for d in corpus]
        t0 = time.perf_counter()
        okapi = BM25Okapi(toks, k1=0.9, b=0.4)
        t_ok_index = time.perf_counter() - t0
        n = args.rank_bm25_queries
        qt = [stemmer.stemWords(q.lower().split()) for q in queries[:n]]
        t0 = time.perf_counter()
        for q in qt:
            okapi.get_scores(q)
        t_ok = time.perf_counter() - t0
        print(f"rank_bm25 BM25Okapi index (pre-tokenised): {t_ok_index:.3f} s")
        print(f"rank_bm25 scoring {n} questions: {t_ok:.3f} s (≈ {t_ok * len(queries) / n:.1f} s for 1108)")
    print("load average (1, 5, 15 min) at end: " + " ".join(loadavg()))


if __name__ == "__main__":
    main()
