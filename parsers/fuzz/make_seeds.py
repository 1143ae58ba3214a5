#!/usr/bin/env python3
"""Writes the committed seed inputs of the parser fuzz targets (seeds/<target>/) from the shared
fixtures: short excerpts only (each file at most 60 kB, a few per target), never whole documents.

    python3 parsers/fuzz/make_seeds.py [FIXTURES]     # default: $LEXBENCH_FIXTURES or ../shared/fixtures

The excerpts are of public court documents (ECtHR judgments and case-law guides, © Council of
Europe / European Court of Human Rights), kept as short test inputs, as snapshots keep short
excerpts (fixtures SOURCES.md). Re-running the script gives the same files.
"""
import html
import io
import os
import re
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MAX = 60 * 1024


def fixtures():
    if len(sys.argv) > 1:
        return sys.argv[1]
    return os.environ.get("LEXBENCH_FIXTURES") or os.path.join(ROOT, "..", "shared", "fixtures")


def put(target, name, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    assert len(data) <= MAX, (target, name, len(data))
    d = os.path.join(HERE, "seeds", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def head_lines(text, limit):
    """Whole lines from the start of `text`, at most `limit` bytes of UTF-8."""
    out, size = [], 0
    for line in text.splitlines(keepends=True):
        n = len(line.encode("utf-8"))
        if size + n > limit:
            break
        out.append(line)
        size += n
    return "".join(out)


def docx_excerpt(path, limit):
    """`word/document.xml` cut after whole top-level body elements (paragraphs, tables) once about
    `limit` bytes are reached, then closed: well-formed, so the fuzzer starts past the XML reader."""
    xml = zipfile.ZipFile(path).read("word/document.xml").decode("utf-8")
    body = xml.index("<w:body>") + len("<w:body>")
    depth, cut = 0, body
    for m in re.finditer(r"<(/?)([\w:]+)[^>]*?(/?)>", xml[body:]):
        closing, selfclosing = m.group(1), m.group(3)
        if m.group(2) == "w:body":
            break
        if not closing and not selfclosing:
            depth += 1
        elif closing:
            depth -= 1
        if depth == 0:
            end = body + m.end()
            if end - 0 > limit:
                break
            cut = end
    return xml[:cut] + "</w:body></w:document>"


def judgment_lines(text):
    """(kind, line) of a text judgment: `p` numbered paragraph, `h` heading, `t` other text."""
    for line in text.splitlines():
        if re.match(r"^\d+\.\s", line):
            yield "p", line
        elif line.strip() and line.upper() == line:
            yield "h", line
        else:
            yield "t", line


def to_html(text):
    """A HUDOC-like HTML page: one `<p>` per line, opaque classes, a number then no-break spaces, a
    footnote mark and a footnote body, one table."""
    cls = {"p": "s30EEC3F8", "h": "s6E50BD9A", "t": "s9D5E1A7C"}
    rows = []
    for i, (kind, line) in enumerate(judgment_lines(text)):
        body = html.escape(line)
        if kind == "p":
            num, rest = line.split(".", 1)
            body = f"{num}.\u00a0\u00a0{html.escape(rest.strip())}"
            if i % 7 == 0:
                body += '<a href="#_ftn1"><sup>[1]</sup></a>'
        rows.append(f'<p class="{cls[kind]}">{body}</p>')
    rows.insert(min(12, len(rows)), '<table><tr><td><p class="s9D5E1A7C">Application no.</p></td>'
                '<td><p class="s9D5E1A7C">Lodged on</p></td></tr></table>')
    return ('<!DOCTYPE html><html><head><meta charset="utf-8"><style>p{}</style></head><body>'
            '<div class="WordSection1">\n' + "\n".join(rows) +
            '\n</div><div id="ftn1"><p>[1] A footnote.</p></div></body></html>\n')


def to_blocks(text):
    """judgment_segment's input: one block per line, the first byte picking the style (`0`:
    ECHRPara, `2`: ECHRHeading2, `5`: no style), the rest the text."""
    lead = {"p": "0", "h": "2", "t": "5"}
    return "".join(lead[k] + line + "\n" for k, line in judgment_lines(text))


def wrap(text, width):
    out = []
    for line in text.splitlines():
        while len(line) > width:
            cut = line.rfind(" ", 0, width)
            cut = width if cut <= 0 else cut
            out.append(line[:cut])
            line = line[cut:].lstrip()
        out.append(line)
    return "\n".join(out) + "\n"


def pages(text, limit):
    """Whole form-feed pages from the start, at most `limit` bytes."""
    out, size = [], 0
    for page in text.split("\f"):
        n = len(page.encode("utf-8")) + 1
        if size + n > limit:
            break
        out.append(page)
        size += n
    return "\f".join(out) + "\f"


def pdf(page_texts, outline):
    """A small uncompressed PDF: Helvetica text, one page per entry of `page_texts` (lines), and an
    outline of (level, title, page index) when given."""
    objs = {}
    n_pages = len(page_texts)
    page_ids = [10 + 2 * i for i in range(n_pages)]
    objs[3] = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    kids = " ".join(f"{p} 0 R" for p in page_ids)
    objs[2] = f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode()
    for pid, lines in zip(page_ids, page_texts):
        ops = ["BT", "/F1 10 Tf", "12 TL", "50 800 Td"]
        for line in lines:
            esc = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(f"({esc}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("cp1252", "replace")
        objs[pid + 1] = b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"
        objs[pid] = (f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
                     f"/Resources << /Font << /F1 3 0 R >> >> /Contents {pid + 1} 0 R >>").encode()
    catalog = "<< /Type /Catalog /Pages 2 0 R"
    if outline:
        first_id = 100
        ids = [first_id + i for i in range(len(outline))]
        # Parent of each entry: the nearest earlier entry one level up (4 = the outline root).
        parents, children = [], {4: []}
        for i, (level, _, _) in enumerate(outline):
            parent = 4
            for j in range(i - 1, -1, -1):
                if outline[j][0] < level:
                    parent = ids[j]
                    break
            parents.append(parent)
            children.setdefault(parent, []).append(ids[i])
            children.setdefault(ids[i], [])
        for i, (level, title, page) in enumerate(outline):
            sib = children[parents[i]]
            k = sib.index(ids[i])
            d = (f"<< /Title ({title}) /Parent {parents[i]} 0 R "
                 f"/Dest [{page_ids[page]} 0 R /XYZ 0 842 0]")
            if k > 0:
                d += f" /Prev {sib[k - 1]} 0 R"
            if k + 1 < len(sib):
                d += f" /Next {sib[k + 1]} 0 R"
            if children[ids[i]]:
                kids_ = children[ids[i]]
                d += f" /First {kids_[0]} 0 R /Last {kids_[-1]} 0 R /Count {len(kids_)}"
            objs[ids[i]] = (d + " >>").encode()
        top = children[4]
        objs[4] = f"<< /Type /Outlines /First {top[0]} 0 R /Last {top[-1]} 0 R /Count {len(top)} >>".encode()
        catalog += " /Outlines 4 0 R /PageMode /UseOutlines"
    objs[1] = (catalog + " >>").encode()
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    for num in sorted(objs):
        offsets[num] = out.tell()
        out.write(b"%d 0 obj\n" % num + objs[num] + b"\nendobj\n")
    xref = out.tell()
    size = max(objs) + 1
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % size)
    for num in range(1, size):
        if num in offsets:
            out.write(b"%010d 00000 n \n" % offsets[num])
        else:
            out.write(b"0000000000 65535 f \n")
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref))
    return out.getvalue()


def main():
    fx = fixtures()
    txt = lambda p: open(os.path.join(fx, p), encoding="utf-8").read()

    # judgment_docx: well-formed document.xml excerpts (SEQ-numbered, older Ju* styles).
    put("judgment_docx", "001-83979.document.xml", docx_excerpt(os.path.join(fx, "hudoc/docx/001-83979.docx"), 24_000))
    put("judgment_docx", "nagmetov.document.xml",
        docx_excerpt(os.path.join(fx, "hudoc/docx/CASE_OF_NAGMETOV_v._RUSSIA.docx"), 24_000))

    # Text judgments, first whole lines.
    szekeres = head_lines(txt("hudoc/text/001-191364.txt"), 6_000)
    j60492 = head_lines(txt("hudoc/text/001-60492.txt"), 6_000)
    j87567 = head_lines(txt("hudoc/text/001-87567.txt"), 6_000)
    put("judgment_text", "001-191364.head.txt", szekeres)
    put("judgment_text", "001-60492.head.txt", j60492)
    put("judgment_text", "001-87567.wrapped-crlf.txt", wrap(j87567, 72).replace("\n", "\r\n"))
    put("judgment_html", "001-191364.head.html", to_html(szekeres))
    put("judgment_html", "001-60492.head.html", to_html(j60492))
    put("judgment_segment", "001-191364.head.blocks", to_blocks(szekeres))
    put("judgment_segment", "001-87567.head.blocks", to_blocks(j87567))

    # Guides: the first pages (title, table of contents, first body pages) and a tiny whole guide.
    tiny = ("Guide on Article 9 of the Convention – Freedom\n\fGuide on Article 9 of the Convention – Freedom\n"
            "Table of contents\nIntroduction ........ 3\nI.  Scope ........ 3\n\fGuide on Article 9 of the "
            "Convention – Freedom\nIntroduction\n1.  Text (X v. Y, 2001, § 4).\nI.  Scope\n2.  More (Z v. W "
            "[GC], 2010, §§ 5-6; ibid., § 7).\nEuropean Court of Human Rights 3/3 Last update: 31.08.2023\n")
    put("guide_text", "tiny.txt", tiny)
    put("guide_text", "guide_art_1_eng.head.txt", pages(txt("guides/text/guide_art_1_eng.txt"), 40_000))
    put("guide_text", "guide_terrorism_eng.head.txt", pages(txt("guides/text/guide_terrorism_eng.txt"), 40_000))

    # guide_pdf: small hand-built PDFs with the tiny guide's pages, with and without an outline.
    tiny_pages = [p.splitlines() for p in tiny.split("\f")]
    put("guide_pdf", "tiny-outline.pdf", pdf(tiny_pages, [(1, "Introduction", 2), (1, "I. Scope", 2)]))
    put("guide_pdf", "tiny.pdf", pdf(tiny_pages, None))
    art1 = pages(txt("guides/text/guide_art_1_eng.txt"), 12_000).split("\f")[:-1]
    put("guide_pdf", "guide_art_1_eng.head.pdf",
        pdf([p.splitlines() for p in art1],
            [(1, "Note to readers", len(art1) - 1), (1, "Introduction", len(art1) - 1),
             (1, "I. The territoriality principle", len(art1) - 1), (2, "A. Its scope", len(art1) - 1)]))

    # citation: real pinpoints, as printed in the guides, one file per kind of text.
    truth = [l.split("\t")[-1].rstrip("\n")
             for l in open(os.path.join(ROOT, "parsers/tests/data/citation_truth.tsv"), encoding="utf-8")][1:]
    put("citation", "truth-raw.txt", "\n".join(truth[:60]) + "\n")
    import csv
    rows = list(csv.reader(open(os.path.join(fx, "guides/text/guide_art_2_eng_paragraphs_with_citations.csv"),
                                encoding="utf-8")))[1:]
    put("citation", "guide_art_2_paragraphs.txt", "\n".join(r[1] for r in rows[:20]) + "\n")
    put("citation", "ibid-deferred.txt",
        "See Assanidze v. Georgia [GC], 2004, §§ 146-147 and 243-44; ibid., § 150. In that case "
        "(§ 12 in fine) the Court held … Al-Skeini and Others v. the United Kingdom [GC], 2011 "
        "(§§ 133-140), and Boivin v. 34 member States of the Council of Europe (dec.), 2008, on 9 July "
        "2008.\n")


if __name__ == "__main__":
    main()
