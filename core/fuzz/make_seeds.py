#!/usr/bin/env python3
"""Writes the committed seed inputs of the core fuzz targets (seeds/<target>/): excerpts of the
trec_eval test data in core/tests/data/trec_eval and small hand-made files for the cases the
readers document (byte-order mark, CRLF, extra run fields, blank lines, over-long lines, bad UTF-8).

    python3 core/fuzz/make_seeds.py

Re-running it gives the same files.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "tests", "data", "trec_eval")
BOM = "\ufeff".encode()


def put(target, name, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    assert len(data) <= 60 * 1024, (target, name, len(data))
    d = os.path.join(HERE, "seeds", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def head(path, n):
    with open(path, "rb") as f:
        return b"".join(f.readlines()[:n])


def main():
    run = head(os.path.join(DATA, "run.trec"), 120)
    qrels = head(os.path.join(DATA, "qrels.txt"), 120)

    put("trec_run", "trec_eval.head.trec", run)
    put("trec_run", "bom-crlf.trec", BOM + run[:800].replace(b"\n", b"\r\n"))
    put("trec_run", "extra-fields.trec",
        "q1/001-175180 Q0 001-175180:45 1 12.345678 bm25 extra\n"
        "q1/001-175180 Q0 001-175180:46 2 -0 bm25\n"
        "\n  \t\n"
        "q2/001-176769 Q0 001-176769:3 1 1e-3 bm25 a b c\n"
        "q1/001-175180 Q0 001-175180:47 3 1.00000001 bm25\n")
    put("trec_run", "ties.trec", "t1 Q0 d2 1 1.0 r\nt1 Q0 d1 2 1.00000001 r\nt1 Q0 d3 3 -0.0 r\nt2 Q0 d1 1 5 r\n")

    put("trec_qrels", "trec_eval.head.qrels", qrels)
    put("trec_qrels", "bom-crlf.qrels", BOM + qrels[:600].replace(b"\n", b"\r\n"))
    put("trec_qrels", "grades.qrels", "q1/001-175180 0 001-175180:45 2\nq1/001-175180 0 001-175180:46 0\n"
                                      "q2 0 d9 -1\n\nq2 0 d8 1\n")

    # byte_lines: the first byte is the line cap (0xff: none).
    put("byte_lines", "cap4.txt", b"\x04abcd\r\nabcde\nab\nabcdefghij\nz")
    put("byte_lines", "bom-utf8.txt", b"\xff" + BOM + b"a" + BOM + b"\nb\xffc\n" + BOM + b"d\n")
    put("byte_lines", "cr-blank.txt", b"\x03\n\n x \r\n\r\r\nlast\r")
    put("byte_lines", "run-head.txt", b"\x40" + run[:1500])


if __name__ == "__main__":
    main()
