"""A built ECtHR dataset's qrels and pools, and a TREC run, read for the diagnostic scripts.

Each reader exits naming the file and line of a malformed line.
"""
import collections
import json
import sys


def lines(path):
    """(line number, line) of the non-blank lines of `path`, or an exit naming it."""
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        sys.exit(f"{path}: {e.strerror}")
    with f:
        for n, line in enumerate(f, 1):
            if line.strip():
                yield n, line


def relevant(path):
    """{topic: {doc}} of a qrels file's lines with relevance > 0."""
    rel = collections.defaultdict(set)
    for n, line in lines(path):
        f = line.split()
        if len(f) != 4:
            sys.exit(f"{path}:{n}: not four fields")
        if not f[3].lstrip("-").isdigit():
            sys.exit(f"{path}:{n}: relevance {f[3]!r} not an integer")
        if int(f[3]) > 0:
            rel[f[0]].add(f[2])
    return rel


def pools(path, topics):
    """{topic: [doc, ...]} of pools.jsonl (the judgment's paragraphs in order), for `topics` only."""
    out = {}
    for n, line in lines(path):
        try:
            r = json.loads(line)
            topic, docs = r["topic"], r["docs"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            sys.exit(f"{path}:{n}: not a record with topic, docs ({e!r})")
        if topic in topics:
            out[topic] = docs
    return out


def ranked(path):
    """{topic: [doc, ...]} of a TREC run, best first (score descending, then rank ascending)."""
    hits = collections.defaultdict(list)
    for n, line in lines(path):
        f = line.split()
        if len(f) != 6:
            sys.exit(f"{path}:{n}: not a TREC run line (six fields)")
        try:
            hits[f[0]].append((-float(f[4]), int(f[3]), f[2]))
        except ValueError as e:
            sys.exit(f"{path}:{n}: rank or score not a number ({e})")
    return {t: [d for *_, d in sorted(h)] for t, h in hits.items()}
