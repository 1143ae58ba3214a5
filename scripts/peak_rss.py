#!/usr/bin/env python3
"""Peak memory of each file reader on large inputs: the figures of ARCHITECTURE.md, "Input limits".

    python3 scripts/peak_rss.py [--lexbench target/release/lexbench] [--mb 50]

Generates, in a temporary folder, inputs of about --mb MB each (the size of issue 20's bounded-memory
check) and runs the lexbench binary on each under GNU time, printing one Markdown table row per input:
what it is, its size, the exit code and the peak resident memory (maximum RSS) of the process.

- judgments (`parse judgment`): random bytes (refused as binary), prose without numbered paragraphs
  (refused after reading), numbered paragraphs as plain text, and the same paragraphs in a DOCX;
- guides (`parse guide`): random bytes after a `%PDF-1.7` header, and a real guide's text (from
  LEXBENCH_FIXTURES, default ../shared/fixtures) repeated to the size;
- TREC (`eval`): a run of 1,000 topics x 1,000 hits with its qrels (scripts/bench_python_eval.py's
  workload, 33 MB), and random bytes as a run.

The inputs are deleted at the end. Needs /usr/bin/time (GNU time, `-f %M`).
"""
import argparse
import io
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_python_eval import generate, write  # noqa: E402


def words(rng, n):
    vocab = ["the", "court", "applicant", "article", "convention", "government", "judgment", "right",
             "respect", "private", "life", "proceedings", "domestic", "authorities", "violation", "of",
             "to", "and", "in", "that", "was", "not", "had", "his", "her", "State", "Russia", "1999"]
    return " ".join(rng.choice(vocab) for _ in range(n))


def fill(target, make_line):
    out, size, i = [], 0, 0
    while size < target:
        line = make_line(i)
        out.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join(out) + "\n"


def docx(paragraphs_xml):
    body = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
        + paragraphs_xml
        + "</w:body></w:document>"
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types/>')
        z.writestr("word/document.xml", body)
    return buf.getvalue()


def peak(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    kb = int(p.stderr.strip().splitlines()[-1])
    return p.returncode, kb / 1024, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lexbench", default=os.path.join(HERE, "..", "target", "release", "lexbench"))
    ap.add_argument("--mb", type=float, default=50.0)
    args = ap.parse_args()
    if not os.path.exists("/usr/bin/time"):
        sys.exit("peak_rss.py: needs GNU time at /usr/bin/time")
    fixtures = os.environ.get("LEXBENCH_FIXTURES", os.path.join(HERE, "..", "..", "shared", "fixtures"))
    guide_text = os.path.join(fixtures, "guides", "text", "guide_art_1_eng.txt")
    if not os.path.exists(guide_text):
        sys.exit(f"peak_rss.py: {guide_text} is missing (set LEXBENCH_FIXTURES)")
    target = int(args.mb * (1 << 20))
    rng = random.Random(20261125)
    d = tempfile.mkdtemp(prefix="lexbench-peak-rss-")
    try:
        cases = []

        def add(name, file_name, data, cmd):
            p = os.path.join(d, file_name)
            with open(p, "wb") as f:
                f.write(data)
            cases.append((name, os.path.getsize(p), [args.lexbench] + cmd(p)))

        noise = os.urandom(target)
        add("judgment: random bytes", "001-000001.bin", noise, lambda p: ["parse", "judgment", p])
        prose = fill(target, lambda i: words(rng, 60))
        add("judgment: prose, no numbered paragraph", "001-000002.txt", prose.encode(),
            lambda p: ["parse", "judgment", p])
        numbered = fill(target, lambda i: f"{i + 1}. " + words(rng, 60))
        add("judgment: numbered paragraphs (text)", "001-000003.txt", numbered.encode(),
            lambda p: ["parse", "judgment", p])
        paras = "".join(
            f"<w:p><w:r><w:t>{line}</w:t></w:r></w:p>" for line in numbered.splitlines()
        )
        add("judgment: numbered paragraphs (DOCX; XML size)", "001-000004.docx", docx(paras),
            lambda p: ["parse", "judgment", p])
        cases[-1] = (cases[-1][0], len(paras), cases[-1][2])
        add("guide: %PDF-1.7 and random bytes", "guide_random_eng.pdf", b"%PDF-1.7\n" + noise,
            lambda p: ["parse", "guide", p])
        with open(guide_text, "rb") as f:
            real = f.read()
        add("guide: a real guide's text, repeated", "guide_big_eng.txt",
            real * max(1, target // len(real)), lambda p: ["parse", "guide", p])
        run, qrels = generate()
        write(run, qrels, d)
        rp, qp = os.path.join(d, "run.trec"), os.path.join(d, "qrels.txt")
        cases.append(("eval: 1,000 topics x 1,000 hits (run size)", os.path.getsize(rp),
                      [args.lexbench, "eval", rp, qp]))
        add("eval: random bytes as the run", "random.trec", noise, lambda p: ["eval", p, qp])

        print("| input | size (MB) | exit | peak RSS (MB) | wall (s) |")
        print("|---|---:|---:|---:|---:|")
        for name, size, cmd in cases:
            code, mb, wall = peak(cmd)
            print(f"| {name} | {size / (1 << 20):.1f} | {code} | {mb:.0f} | {wall:.2f} |", flush=True)
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
