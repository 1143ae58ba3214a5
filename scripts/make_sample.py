#!/usr/bin/env python3
"""Write lexbench's embedded sample: a small, fictional set of sources in the real formats.

    python3 scripts/make_sample.py sample

Everything here is invented by the project (case names, states, texts); nothing is copied from the
Court's documents. The output is deterministic (fixed zip timestamps, no clocks), so rerunning the
script rewrites identical files. It makes:

- hudoc/search.json            a HUDOC search answer ({"resultcount", "results": [{"columns": ...}]})
- hudoc/<itemid>.docx          judgments as HUDOC's DOCX export: ECHR* styles, SEQ-field paragraph
                               numbers, PROCEDURE / THE FACTS / RELEVANT LEGAL FRAMEWORK / THE LAW /
                               operative provisions, a separate opinion restarting at 1
- bsard/*.csv                  a fictional French statute book (3 codes, books, chapters, sections,
                               234 articles) and 52 questions, in BSARD's later CSV layout
- guides/<id>.pdf              two case-law guides as PDFs: cover, table of contents with dot leaders,
                               running header and footer, I./A./1. headings, numbered paragraphs with
                               pinpoint citations, a "List of cited cases"; the first with an outline
"""
import json
import os
import sys
import textwrap
import zipfile

# ----------------------------------------------------------------------------------------------
# The fictional world: six judgments and what they decide.

STATES = ["Ruritania", "Freedonia", "Elbonia", "Borduria", "Syldavia", "Genovia"]

JUDGMENTS = [
    # itemid, short name, respondent, year, date, appno, grand chamber, topic words
    ("001-990101", "Alder", "Ruritania", 2019, "2019-03-12", "11201/15", False, "assembly"),
    ("001-990102", "Birch and Others", "Freedonia", 2020, "2020-06-30", "22402/16", True, "assembly"),
    ("001-990103", "Cedar", "Elbonia", 2020, "2020-11-17", "33603/17", False, "expression"),
    ("001-990104", "Dogwood", "Borduria", 2021, "2021-02-09", "44804/18", False, "expression"),
    ("001-990105", "Elm", "Syldavia", 2021, "2021-09-21", "55005/19", False, "detention"),
    ("001-990106", "Fir", "Genovia", 2022, "2022-04-05", "66206/20", True, "detention"),
]

TOPICS = {
    "assembly": {
        "facts": [
            "The applicant{s} organised a peaceful demonstration in the central square of the capital "
            "to protest against the closure of a regional hospital.",
            "The police dispersed the gathering after forty minutes, relying on the absence of prior "
            "notification under the Public Events Act.",
            "The applicant{s} {was} fined for taking part in an unauthorised assembly; the fine was upheld "
            "on appeal without a hearing.",
        ],
        "law": [
            "The Court reiterates that the right to freedom of peaceful assembly is a fundamental right "
            "in a democratic society and one of the foundations of such a society.",
            "A notification requirement does not as such infringe the right to freedom of assembly, "
            "provided that its purpose is to allow the authorities to take reasonable measures to "
            "guarantee the smooth conduct of the event.",
            "Where demonstrators do not engage in acts of violence, the public authorities must show a "
            "certain degree of tolerance towards peaceful gatherings, even unlawful ones.",
            "The dispersal of a peaceful assembly and the sanction imposed on its participants for the "
            "mere lack of prior notification were not necessary in a democratic society.",
            "The chilling effect of a sanction on participants in peaceful protests must be weighed in "
            "the assessment of proportionality.",
        ],
        "article": "11",
    },
    "expression": {
        "facts": [
            "The applicant{s}, a journalist, published an article criticising the mayor's management of "
            "public procurement contracts.",
            "The mayor brought defamation proceedings and the domestic courts ordered the applicant{s} to "
            "pay substantial damages.",
            "The courts found that the statements of fact in the article had not been proved true.",
        ],
        "law": [
            "Freedom of expression constitutes one of the essential foundations of a democratic society "
            "and applies also to information or ideas that offend, shock or disturb.",
            "The press plays the essential role of a public watchdog, and the limits of acceptable "
            "criticism are wider as regards a politician acting in his public capacity.",
            "A careful distinction must be made between statements of fact and value judgments: the "
            "existence of facts can be demonstrated, whereas the truth of value judgments is not "
            "susceptible of proof.",
            "The amount of damages awarded for defamation must bear a reasonable relationship of "
            "proportionality to the injury to reputation suffered.",
            "Journalists acting in good faith on an accurate factual basis and providing reliable "
            "information in accordance with the ethics of journalism are protected.",
        ],
        "article": "10",
    },
    "detention": {
        "facts": [
            "The applicant{s} {was} arrested on suspicion of fraud and held in pre-trial detention for "
            "two years and four months.",
            "The domestic courts extended the detention on eleven occasions, each time referring to the "
            "gravity of the charges and the risk of absconding.",
            "The applicant{s} complained that the detention orders had been drafted in identical terms.",
        ],
        "law": [
            "The persistence of a reasonable suspicion is a condition sine qua non for the lawfulness of "
            "continued detention, but after a certain lapse of time it no longer suffices.",
            "The gravity of the charges cannot by itself serve to justify long periods of pre-trial "
            "detention.",
            "Domestic courts must examine all the facts arguing for or against the existence of a "
            "genuine requirement of public interest justifying a departure from the rule of liberty.",
            "The use of stereotyped formulae in detention orders without addressing the specific facts "
            "of the case is incompatible with the requirement of relevant and sufficient reasons.",
            "Alternative measures of ensuring appearance at trial must be considered before detention "
            "is extended.",
        ],
        "article": "5",
    },
}


def judgment_paragraphs(name, state, topic, plural):
    """The numbered paragraphs of a judgment, with their section headings."""
    t = TOPICS[topic]
    fill = lambda s: s.format(s="s" if plural else "", was="were" if plural else "was")
    sections = []
    sections.append(("PROCEDURE", [
        f"The case originated in an application against {state} lodged with the Court under "
        f"Article 34 of the Convention by the applicant{'s' if plural else ''}.",
        f"The {state} Government were represented by their Agent.",
        "The application was communicated to the Government, who submitted observations.",
    ]))
    sections.append(("THE FACTS", [fill(f) for f in t["facts"]] + [
        "The applicant{} lodged a constitutional complaint, which was dismissed.".format("s" if plural else ""),
    ]))
    sections.append(("RELEVANT LEGAL FRAMEWORK", [
        f"The relevant provisions of the domestic law of {state} read as follows.",
        "Section 7 of the relevant Act provides that restrictions must be prescribed by law and "
        "proportionate to a legitimate aim.",
    ]))
    law = [
        f"The applicant{'s' if plural else ''} complained under Article {t['article']} of the Convention.",
        "The Government contested that argument.",
        "The Court notes that the complaint is not manifestly ill-founded and must be declared admissible.",
    ] + t["law"] + [
        f"There has accordingly been a violation of Article {t['article']} of the Convention.",
        "Article 41 of the Convention provides for just satisfaction to the injured party.",
        "The Court awards the applicant EUR 5,000 in respect of non-pecuniary damage.",
    ]
    sections.append(("THE LAW", law))
    return sections


# ----------------------------------------------------------------------------------------------
# DOCX, as HUDOC exports it.

W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def para(style, text):
    return (f'<w:p><w:pPr><w:pStyle w:val="{style}"/></w:pPr>'
            f'<w:r><w:t xml:space="preserve">{esc(text)}</w:t></w:r></w:p>')


def seq_para(style, n, text, seq="level0"):
    return (f'<w:p><w:pPr><w:pStyle w:val="{style}"/></w:pPr>'
            f'<w:r><w:fldChar w:fldCharType="begin"/></w:r>'
            f'<w:r><w:instrText xml:space="preserve"> SEQ {seq} \\* arabic </w:instrText></w:r>'
            f'<w:r><w:fldChar w:fldCharType="separate"/></w:r>'
            f'<w:r><w:t>{n}</w:t></w:r>'
            f'<w:r><w:fldChar w:fldCharType="end"/></w:r>'
            f'<w:r><w:t xml:space="preserve">.  {esc(text)}</w:t></w:r></w:p>')


def docx_bytes(itemid, name, state, year, date, appno, gc, topic):
    plural = "Others" in name
    chamber = "GRAND CHAMBER" if gc else "SECOND SECTION"
    body = [
        para("ECHRTitleCentre1", chamber),
        para("ECHRTitle1", f"CASE OF {name.upper()} v. {state.upper()}"),
        para("ECHRTitleCentre2", f"(Application no. {appno})"),
        para("ECHRTitleCentre1", "JUDGMENT"),
        para("ECHRPara", f"STRASBOURG {date}"),
        para("JuCase", f"In the case of {name} v. {state},"),
        para("ECHRPara", "The European Court of Human Rights, sitting as a Chamber, delivers the following judgment:"),
    ]
    n = 0
    for heading, paras in judgment_paragraphs(name, state, topic, plural):
        body.append(para("ECHRHeading1", heading))
        for p in paras:
            n += 1
            body.append(seq_para("ECHRPara", n, p))
    body.append(para("ECHRHeading1", "FOR THESE REASONS, THE COURT, UNANIMOUSLY,"))
    body.append(para("JuList", "1.  Declares the application admissible;"))
    body.append(para("JuList", f"2.  Holds that there has been a violation of Article {TOPICS[topic]['article']} of the Convention;"))
    body.append(para("JuSigned", "Done in English, and notified in writing."))
    # A separate opinion restarting its numbering at 1.
    body.append(para("OpiHeader", "CONCURRING OPINION OF JUDGE QUILL"))
    for i, t in enumerate([
        "I agree with the finding of a violation, but I would have reached it by a different route.",
        "The majority's reasoning on proportionality deserves a fuller explanation.",
    ], 1):
        body.append(seq_para("OpiPara", i, t, seq="level0_opi"))
    document = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:document {W}><w:body>'
                + "".join(body) + '<w:sectPr/></w:body></w:document>')
    styles_list = ["ECHRTitleCentre1", "ECHRTitleCentre2", "ECHRTitle1", "ECHRPara", "ECHRHeading1",
                   "JuCase", "JuList", "JuSigned", "OpiHeader", "OpiPara"]
    styles = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:styles {W}>'
              + "".join(f'<w:style w:type="paragraph" w:styleId="{s}"><w:name w:val="{s}"/></w:style>'
                        for s in styles_list) + "</w:styles>")
    content_types = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
                     '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                     '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
                     '<Default Extension="xml" ContentType="application/xml"/>'
                     '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
                     '<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>'
                     '</Types>')
    rels = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>'
            '</Relationships>')
    doc_rels = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
                '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
                '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>'
                '</Relationships>')
    import io
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in [("[Content_Types].xml", content_types), ("_rels/.rels", rels),
                           ("word/document.xml", document), ("word/_rels/document.xml.rels", doc_rels),
                           ("word/styles.xml", styles)]:
            info = zipfile.ZipInfo(path, date_time=(2024, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return buf.getvalue(), n


# ----------------------------------------------------------------------------------------------
# Guides: which headings cite which judgment paragraphs.

def j(short):
    for row in JUDGMENTS:
        if row[1] == short:
            return row
    raise KeyError(short)


def cite(short, paras):
    _, name, state, year, _, _, gc, _ = j(short)
    flag = " [GC]" if gc else ""
    if len(paras) == 1:
        pin = f"§ {paras[0]}"
    elif paras == list(range(paras[0], paras[-1] + 1)):
        pin = f"§§ {paras[0]}-{paras[-1]}"
    else:
        pin = "§§ " + ", ".join(str(p) for p in paras)
    return f"{name} v. {state}{flag}, {year}, {pin}"


# Paragraph numbers of each judgment's THE LAW principles: 3 procedure + 4 facts + 2 law framework
# = 9, then 3 admissibility paragraphs (10-12), then the five principles (13-17).
GUIDES = [
    {
        "id": "guide_fictional_assembly_expression_eng",
        "title": ["Guide on Articles 10 and 11", "of the Fictional Convention", "",
                  "Freedom of expression and", "freedom of assembly"],
        "short": "Guide on Articles 10 and 11 of the Fictional Convention",
        "outline": True,
        "tree": [
            ("I.", "Freedom of peaceful assembly", [
                ("A.", "Scope of the right", [
                    ("1.", "Peaceful gatherings", [("Alder", [13]), ("Birch and Others", [13, 15])]),
                    ("2.", "Prior notification", [("Alder", [14]), ("Birch and Others", [14])]),
                ]),
                ("B.", "Restrictions and proportionality", [
                    ("1.", "Dispersal of peaceful assemblies", [("Alder", [16]), ("Birch and Others", [15, 16])]),
                    ("2.", "Sanctions and the chilling effect", [("Birch and Others", [17]), ("Alder", [17])]),
                ]),
            ]),
            ("II.", "Freedom of expression", [
                ("A.", "The press as public watchdog", [
                    ("1.", "Criticism of politicians", [("Cedar", [14]), ("Dogwood", [13, 14])]),
                    ("2.", "Good faith journalism", [("Dogwood", [17]), ("Cedar", [17])]),
                ]),
                ("B.", "Defamation", [
                    ("1.", "Facts and value judgments", [("Cedar", [15]), ("Dogwood", [15])]),
                    ("2.", "Damages for defamation", [("Cedar", [16]), ("Dogwood", [16])]),
                ]),
            ]),
        ],
    },
    {
        "id": "guide_fictional_liberty_eng",
        "title": ["Guide on Article 5", "of the Fictional Convention", "", "Right to liberty"],
        "short": "Guide on Article 5 of the Fictional Convention",
        "outline": False,
        "tree": [
            ("I.", "Pre-trial detention", [
                ("A.", "Reasonable suspicion and its persistence", [("Elm", [13]), ("Fir", [13, 14])]),
                ("B.", "Reasons for continued detention", [
                    ("1.", "Relevant and sufficient reasons", [("Elm", [15, 16]), ("Fir", [15])]),
                    ("2.", "Stereotyped formulae", [("Fir", [16]), ("Elm", [16])]),
                    ("3.", "Alternatives to detention", [("Elm", [17]), ("Fir", [17])]),
                ]),
            ]),
        ],
    },
]

FILLER = [
    "The Court's case-law on this question has developed gradually, and the principles below "
    "summarise the approach taken in its leading judgments.",
    "The Court examines the circumstances of each case as a whole, having regard to the content of "
    "the measures complained of and the context in which they were taken.",
    "The margin of appreciation left to the national authorities goes hand in hand with European "
    "supervision of both the law and the decisions applying it.",
]


def guide_lines(g):
    """Body lines (kind, text) and the TOC entries (level, number, title)."""
    toc, body = [], []
    n = [0]

    def paragraph(text):
        n[0] += 1
        return ("para", f"{n[0]}.  {text}")

    def walk(nodes, level):
        for num, title, rest in nodes:
            toc.append((level, num, title))
            body.append(("heading", f"{num}   {title}"))
            if rest and isinstance(rest[0], tuple) and len(rest[0]) == 2:  # citations: a leaf
                words = title.lower()
                cites = "; ".join(cite(s, p) for s, p in rest)
                body.append(paragraph(f"As regards {words}, the Court has set out the applicable "
                                      f"principles in a consistent line of cases ({cites})."))
                body.append(paragraph(FILLER[n[0] % len(FILLER)]))
            else:
                body.append(paragraph(FILLER[n[0] % len(FILLER)]))
                walk(rest, level + 1)

    walk(g["tree"], 1)
    return toc, body


def cited_cases(g):
    used = set()

    def collect(nodes):
        for _, _, rest in nodes:
            if rest and isinstance(rest[0], tuple) and len(rest[0]) == 2:
                used.update(s for s, _ in rest)
            else:
                collect(rest)

    collect(g["tree"])
    out = []
    for short in sorted(used):
        _, name, state, year, date, appno, gc, _ = j(short)
        y, m, d = date.split("-")
        months = ["January", "February", "March", "April", "May", "June", "July", "August",
                  "September", "October", "November", "December"]
        flag = " [GC]" if gc else ""
        out.append(f"{name} v. {state}{flag}, no. {appno}, {int(d)} {months[int(m) - 1]} {y}")
    return out


# ----------------------------------------------------------------------------------------------
# A minimal PDF writer: base-14 fonts (Helvetica, Helvetica-Bold), WinAnsi text, optional outline.

def pdf_str(s):
    b = s.encode("cp1252")
    return "(" + b.decode("latin-1").replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def make_pdf(pages, outline):
    """pages: list of list of (x, y, font, size, text); outline: list of (level, title, page_index)."""
    objs = []

    def add(s):
        objs.append(s)
        return len(objs)

    catalog = add(None)
    pages_id = add(None)
    f1 = add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    f2 = add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>")
    page_ids = []
    for lines in pages:
        ops = []
        for x, y, font, size, text in lines:
            ops.append(f"BT /{font} {size} Tf {x} {y} Td {pdf_str(text)} Tj ET")
        stream = "\n".join(ops)
        content = add(f"<< /Length {len(stream.encode('latin-1'))} >>\nstream\n{stream}\nendstream")
        page_ids.append(add(f"<< /Type /Page /Parent {pages_id} 0 R /MediaBox [0 0 595 842] "
                            f"/Resources << /Font << /F1 {f1} 0 R /F2 {f2} 0 R >> >> /Contents {content} 0 R >>"))
    objs[pages_id - 1] = (f"<< /Type /Pages /Kids [{' '.join(f'{p} 0 R' for p in page_ids)}] "
                          f"/Count {len(page_ids)} >>")
    outline_ref = ""
    if outline:
        root = add(None)
        items = [add(None) for _ in outline]
        # Build the tree: parent of each entry is the nearest earlier entry one level up.
        parents = []
        stack = []
        for i, (level, _, _) in enumerate(outline):
            while stack and outline[stack[-1]][0] >= level:
                stack.pop()
            parents.append(stack[-1] if stack else None)
            stack.append(i)
        children = {None: []}
        for i, p in enumerate(parents):
            children.setdefault(p, []).append(i)
            children.setdefault(i, [])
        for i, (level, title, page) in enumerate(outline):
            p = parents[i]
            sibs = children[p]
            k = sibs.index(i)
            parent_ref = items[p] if p is not None else root
            fields = [f"/Title {pdf_str(title)}", f"/Parent {parent_ref} 0 R",
                      f"/Dest [{page_ids[page]} 0 R /XYZ 0 842 0]"]
            if k > 0:
                fields.append(f"/Prev {items[sibs[k - 1]]} 0 R")
            if k + 1 < len(sibs):
                fields.append(f"/Next {items[sibs[k + 1]]} 0 R")
            if children[i]:
                fields.append(f"/First {items[children[i][0]]} 0 R /Last {items[children[i][-1]]} 0 R "
                              f"/Count {len(children[i])}")
            objs[items[i] - 1] = "<< " + " ".join(fields) + " >>"
        top = children[None]
        objs[root - 1] = (f"<< /Type /Outlines /First {items[top[0]]} 0 R /Last {items[top[-1]]} 0 R "
                          f"/Count {len(top)} >>")
        outline_ref = f" /Outlines {root} 0 R /PageMode /UseOutlines"
    objs[catalog - 1] = f"<< /Type /Catalog /Pages {pages_id} 0 R{outline_ref} >>"
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, o in enumerate(objs, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n{o}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objs) + 1} /Root {catalog} 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def guide_pdf(g):
    toc, body = guide_lines(g)
    cases = cited_cases(g)
    top, left, step, per_page = 780, 56, 15, 44

    def wrap(text, width):
        return textwrap.wrap(text, width) or [""]

    # Lay out the body first to know each heading's page; pages: cover, TOC, body..., cases.
    body_pages, current = [], []
    heading_pages = []

    def emit(kind, text):
        nonlocal current
        lines = wrap(text, 92)
        if len(current) + len(lines) + 1 > per_page:
            body_pages.append(current)
            current = []
        if kind == "heading":
            heading_pages.append(len(body_pages))
        for ln in lines:
            current.append(("F2" if kind == "heading" else "F1", ln))
        current.append(("F1", ""))

    emit("heading", "Introduction")
    emit("para", "This Guide summarises, for the purposes of lexbench's embedded sample, an invented "
                 "body of case-law. None of its cases exist.")
    # The paragraph numbering of the body starts at 1 after the introduction's unnumbered text.
    for kind, text in body:
        emit(kind, text)
    body_pages.append(current)
    first_body = 2
    cases_page = first_body + len(body_pages)
    total = cases_page + 1
    header = g["short"]
    footer = lambda k: f"European Court of Human Rights      {k}/{total}      Last update: 31.08.2026"

    def page(lines, k):
        out = [(left, 810, "F1", 9, header)]
        y = top
        for font, text in lines:
            out.append((left, y, font, 10, text))
            y -= step
        out.append((left, 30, "F1", 9, footer(k)))
        return out

    cover = [(left, 700 - 24 * i, "F2", 18, t) for i, t in enumerate(g["title"])]
    cover.append((left, 380, "F1", 11, "Updated on 31 August 2026"))
    cover.append((left, 360, "F1", 11, "Prepared for lexbench's embedded sample. It binds nobody."))
    toc_lines = [("F2", "Table of contents"), ("F1", "")]
    toc_lines.append(("F1", "Introduction " + "." * 60 + f" {first_body + 1}"))
    for (level, num, title), hp in zip(toc, heading_pages[1:]):
        indent = "    " * (level - 1)
        label = f"{indent}{num}   {title} "
        toc_lines.append(("F1", label + "." * max(4, 80 - len(label)) + f" {first_body + hp + 1}"))
    toc_lines.append(("F1", "List of cited cases " + "." * 54 + f" {cases_page + 1}"))
    pages = [[(x, y, f, s, t) for x, y, f, s, t in cover], page(toc_lines, 2)]
    for k, lines in enumerate(body_pages):
        pages.append(page(lines, first_body + k + 1))
    case_lines = [("F2", "List of cited cases"), ("F1", "")]
    letter = None
    for c in cases:
        if c[0] != letter:
            letter = c[0]
            case_lines.append(("F1", f"\u2014{letter}\u2014"))
        case_lines.append(("F1", c))
    pages.append(page(case_lines, total))
    outline = []
    if g["outline"]:
        outline.append((1, "Introduction", first_body))
        for (level, num, title), hp in zip(toc, heading_pages[1:]):
            outline.append((level, f"{num} {title}", first_body + hp))
        outline.append((1, "List of cited cases", cases_page))
    return make_pdf(pages, outline)


# ----------------------------------------------------------------------------------------------
# BSARD: a fictional statute book in French, in the later release's CSV layout
# (id, reference, article, law_type, code, book, part, act, chapter, section, subsection, description),
# and questions (id, question, category, subcategory, extra_description, article_ids).

CODES = [
    ("Code fictif du logement", "Logement", [
        ("bail", ["le bail de résidence principale", "le loyer", "la garantie locative", "le préavis du locataire",
                  "les réparations locatives", "l'état des lieux"]),
        ("salubrité", ["les normes de salubrité", "l'inspection du logement", "le relogement", "les travaux d'office"]),
    ]),
    ("Code fictif de la famille", "Famille", [
        ("mariage", ["la célébration du mariage", "les devoirs des époux", "le régime matrimonial", "la cohabitation légale"]),
        ("divorce", ["le divorce par consentement mutuel", "la pension alimentaire", "la garde des enfants",
                     "le droit aux relations personnelles"]),
    ]),
    ("Code fictif du travail", "Travail", [
        ("contrat", ["le contrat de travail", "la période d'essai", "la rémunération", "le temps de travail"]),
        ("rupture", ["le licenciement", "le délai de préavis", "l'indemnité de rupture", "le motif grave"]),
    ]),
]

VERBS = [
    "Les parties règlent {t} par écrit avant l'entrée en vigueur de la convention.",
    "Sauf disposition contraire, {t} est régi par les règles du présent chapitre.",
    "Le juge de paix connaît des contestations qui portent sur {t}.",
    "Toute clause contraire aux dispositions qui régissent {t} est réputée non écrite.",
    "Le Gouvernement peut préciser par arrêté les modalités concernant {t}.",
]


def bsard_rows():
    articles, by_topic = [], {}
    aid = 0
    for code, _, books in CODES:
        for b, (book, topics) in enumerate(books, 1):
            for t_i, topic in enumerate(topics, 1):
                chapter = f"Chapitre {t_i}. {topic[0].upper()}{topic[1:]}"
                for sec in (1, 2, 3):
                    for k in range(1, 4):
                        aid += 1
                        no = f"{b}.{t_i}.{sec}.{k}"
                        text = (f"Art. {no}. " + VERBS[(aid + k) % len(VERBS)].format(t=topic) + " "
                                + VERBS[(aid + 2 * k + 1) % len(VERBS)].format(t=topic))
                        section = f"Section {sec}. {['Principes', 'Modalités', 'Sanctions'][sec - 1]}"
                        row = {
                            "id": aid, "reference": f"Art. {no}, {code} (Livre {b}, {chapter})",
                            "article": text, "law_type": "regional" if "logement" in code else "national",
                            "code": code, "book": f"Livre {b}. {book[0].upper()}{book[1:]}", "part": "",
                            "act": "", "chapter": chapter, "section": section, "subsection": "",
                            "description": f"Livre {b}, {chapter}, {section}",
                        }
                        articles.append(row)
                        by_topic.setdefault(topic, []).append(aid)
    questions = []
    qid = 0
    for code, category, books in CODES:
        for book, topics in books:
            for topic in topics:
                qid += 1
                ids = by_topic[topic][:2] + by_topic[topic][3:4]
                questions.append({
                    "id": qid, "question": f"Quelles sont les règles applicables à {topic} ?",
                    "category": category, "subcategory": book, "extra_description": "",
                    "article_ids": ",".join(str(i) for i in ids),
                })
                qid += 1
                questions.append({
                    "id": qid, "question": f"Qui tranche un litige portant sur {topic} ?",
                    "category": category, "subcategory": book, "extra_description": "",
                    "article_ids": ",".join(str(i) for i in by_topic[topic][2:3] + by_topic[topic][5:6]),
                })
    return articles, questions


def write_csv(path, rows, columns):
    import csv
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow(r)


def write_bsard(out):
    os.makedirs(os.path.join(out, "bsard"), exist_ok=True)
    articles, questions = bsard_rows()
    write_csv(os.path.join(out, "bsard", "articles_fr.csv"), articles,
              ["id", "reference", "article", "law_type", "code", "book", "part", "act", "chapter", "section",
               "subsection", "description"])
    cols = ["id", "question", "category", "subcategory", "extra_description", "article_ids"]
    # Every fourth question is a test question.
    write_csv(os.path.join(out, "bsard", "questions_fr_train.csv"),
              [q for q in questions if q["id"] % 4 != 0], cols)
    write_csv(os.path.join(out, "bsard", "questions_fr_test.csv"),
              [q for q in questions if q["id"] % 4 == 0], cols)


# ----------------------------------------------------------------------------------------------

def main(out):
    os.makedirs(os.path.join(out, "hudoc"), exist_ok=True)
    os.makedirs(os.path.join(out, "guides"), exist_ok=True)
    rows = []
    for i, (itemid, name, state, year, date, appno, gc, topic) in enumerate(JUDGMENTS):
        data, n = docx_bytes(itemid, name, state, year, date, appno, gc, topic)
        with open(os.path.join(out, "hudoc", f"{itemid}.docx"), "wb") as f:
            f.write(data)
        d = date.split("-")
        rows.append({"columns": {
            "itemid": itemid,
            "docname": f"CASE OF {name.upper()} v. {state.upper()}",
            "appno": appno,
            "doctype": "HEJUD",
            "languageisocode": "ENG",
            # HUDOC sends both date forms; the sample does too.
            "kpdate": f"{date}T00:00:00.0Z" if i % 2 == 0 else f"{d[2]}/{d[1]}/{d[0]} 00:00:00",
            "judgementdate": f"{d[2]}/{d[1]}/{d[0]} 00:00:00",
            "importance": "2",
            "article": TOPICS[topic]["article"],
            "doctypebranch": "GRANDCHAMBER" if gc else "CHAMBER",
            "respondent": state[:3].upper(),
            "isplaceholder": "False",
            "ecli": f"ECLI:CE:ECHR:{year}:{d[1]}{d[2]}JUD00{appno.replace('/', '')}",
        }})
    with open(os.path.join(out, "hudoc", "search.json"), "w") as f:
        json.dump({"resultcount": len(rows), "results": rows}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    for g in GUIDES:
        with open(os.path.join(out, "guides", f"{g['id']}.pdf"), "wb") as f:
            f.write(guide_pdf(g))
    write_bsard(out)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sample")
