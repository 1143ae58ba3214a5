#!/usr/bin/env python3
"""Reference scores for baselines/src/sparse/rank_bm25.rs, from rank_bm25 itself (BM25Okapi, float64).

    python3 -m pip install rank_bm25==0.2.2 numpy
    python3 scripts/rank_bm25_reference.py > baselines/tests/data/rank_bm25_golden.json

Tokens are LexCLiPR's (`text.lower().split()`, src/models/vector_db/inference/bm25_inference.py): raw
texts with case, punctuation, Unicode whitespace (no-break space, an information separator that Python
splits on and Unicode's White_Space does not) and a Greek final sigma. The cases cover rank_bm25's
defaults (k1 1.5, b 0.75, epsilon 0.25) and two other (k1, b); a term in more than half the documents
("the", in 5 of 9) has a negative idf, floored at epsilon times the mean idf. Also written: every code point
Python's str.split() splits on, and every code point str.lower() changes, so that the Rust tokeniser is
checked on all of them (code points unassigned in this Python's Unicode listed apart).
"""
import json
import sys
import unicodedata

from importlib.metadata import version

from rank_bm25 import BM25Okapi

CORPUS = [
    "The Court held that there had been a violation of Article 3.",
    "The applicant complained about the court's decision; the Court\u00a0dismissed it.",
    "COURT court Court. court, (court)",
    "Torture\tand inhuman\ntreatment\x1cin prison",
    "The Government contested that argument.",
    "ΟΔΟΣ οδός — the applicant's street",
    "",
    "article 8 private and family life, home and correspondence",
    "the the the the the the the the court",
]
QUERIES = [
    "Article 3 . Prohibition of torture . Conditions in prison",
    "court court",  # a repeated token counts twice
    "The Court.",  # "the": negative idf, floored
    "unknownword",
    "οδοσ street",
    "private life , home",
]
PARAMS = [(1.5, 0.75), (1.2, 0.75), (0.9, 0.4)]


def tok(s):
    return s.lower().split()


def main():
    corpus = [tok(d) for d in CORPUS]
    cases = []
    for k1, b in PARAMS:
        bm = BM25Okapi(corpus, k1=k1, b=b, epsilon=0.25)
        for q in QUERIES:
            scores = [float(x) for x in bm.get_scores(tok(q))]
            cases.append({"k1": k1, "b": b, "average_idf": bm.average_idf, "query": q, "scores": scores})
    whitespace = [c for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    lower = [[c, chr(c).lower()] for c in range(sys.maxunicode + 1) if chr(c).lower() != chr(c)]
    # Code points this Python's Unicode leaves unassigned, as [first, last] ranges: a newer Unicode
    # (Rust's) may give them a lower case, which text of this Python's Unicode cannot hold.
    unassigned = []
    for c in range(sys.maxunicode + 1):
        if unicodedata.category(chr(c)) == "Cn":
            if unassigned and unassigned[-1][1] == c - 1:
                unassigned[-1][1] = c
            else:
                unassigned.append([c, c])
    print(json.dumps({
        "reference": f"rank_bm25 {version('rank_bm25')}, numpy {version('numpy')}, Python {sys.version.split()[0]}",
        "unicode_version": unicodedata.unidata_version,
        "corpus": CORPUS,
        "tokens": corpus,
        "cases": cases,
        "python_whitespace": whitespace,
        "python_lower": lower,
        "python_unassigned": unassigned,
    }, ensure_ascii=False, indent=None))


if __name__ == "__main__":
    main()
