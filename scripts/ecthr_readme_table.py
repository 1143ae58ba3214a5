#!/usr/bin/env python3
"""The table of baselines/configs/ecthr/README.md ("The benchmark on 63 % of the release"), made from the
leaderboard's "Beside the paper" table (DATA/leaderboard/index.md, which `lexbench leaderboard` and
`lexbench experiment collect` render) so that the README never drifts from the leaderboard: figures, significance
markers (Holm's correction counts every row of a split, so a new row can move another row's markers), the
"nearest" figures, topic counts and the paper's figure for each cell. BM25's row also gets the floor
cut-off (R@k%floor) of DATA's `bm25` runs, and under it comes the peer's BM25 (`lexbench run bm25 --variant
rank-bm25-okapi`'s runs in DATA, with ceiling, nearest and floor; not a leaderboard entry).

    python3 scripts/ecthr_readme_table.py DATA > /tmp/table.md    # then replace the README's table rows

The first column describes our system: the wording below for the rows already published, and for a row
without one a description made from its training config (baselines/configs/ecthr/cpu/CELL.toml) and card
(DATA/cards/CELL.toml: where it ran). Rows are ordered as below; a row the leaderboard has and this script
does not know is named on stderr (and appended when a published row stands beside it).
"""
import glob
import json
import os
import re
import subprocess
import sys
import tomllib

data = sys.argv[1] if len(sys.argv) > 1 else "target/real-text"
index = os.path.join(data, "leaderboard", "index.md")
try:
    md = open(index, encoding="utf-8").read()
except OSError as e:
    sys.exit(f"{index}: {e.strerror}")
if "### Beside the paper" not in md:
    sys.exit(f"{index}: no \"### Beside the paper\" section")

# (leaderboard label, cell or None, README wording or None for a description made from the config)
ROWS = [
    ("BM25 ✓", None, "BM25 ✓"),
    ("zero-shot all-MiniLM-L6-v2", None, "zero-shot all-MiniLM-L6-v2"),
    ("zero-shot multilingual-e5-small", None,
     "zero-shot multilingual-e5-small \\(4-bit quantised copy, dequantised; query:/passage: prefixes\\)"),
    ("DPR \\(full fine-tuning\\)", "text-dpr",
     "DPR, full fine-tuning from all-MiniLM-L6-v2; cosine × 20 over mean pooling (`text-dpr`: 2 epochs, lr 1e-4, "
     "batch 4, 128 tokens)"),
    ("DPR, random negatives \\(diagnostic\\)", "text-dpr-random", None),
    ("ANCE \\(full fine-tuning\\)", "text-ance",
     "ANCE, full fine-tuning from all-MiniLM-L6-v2, negatives mined by the model being trained; cosine × 20 over "
     "mean pooling (`text-ance`: 2 epochs, lr 1e-4, batch 4, 128 tokens; on an H100)"),
    ("zero-shot late interaction, MaxSim over MiniLM \\(not ColBERT\\)", None,
     "zero-shot late interaction, MaxSim over MiniLM \\(not ColBERT\\)"),
    ("late interaction \\(full fine-tuning; not ColBERT\\)", "text-colbert",
     "late interaction, full fine-tuning from all-MiniLM-L6-v2 with a seeded 128-d projection, not ColBERT "
     "(`text-colbert`: 2 epochs, lr 1e-4, batch 4, 64 + 128 tokens)"),
    ("late interaction + LoRA \\(not ColBERT\\)", "text-colbert-lora", None),
    ("late interaction + bottleneck adapters \\(not ColBERT\\)", "text-colbert-adapter", None),
    ("late interaction + prefix tuning \\(not ColBERT\\)", "text-colbert-prefix", None),
    ("cross-encoder \\(full fine-tuning\\)", "text-cross-encoder",
     "cross-encoder, full fine-tuning from all-MiniLM-L6-v2 with a seeded classifier head (`text-cross-encoder`: "
     "2 epochs, lr 1e-4, batch 4, 64 + 128 tokens)"),
    ("cross-encoder + LoRA", "text-cross-encoder-lora",
     "cross-encoder + LoRA, r 8, α 16 on query and value, 0.33 % trained (`text-cross-encoder-lora`: 3 epochs, "
     "lr 1e-3, batch 4; on an H100)"),
    ("cross-encoder + bottleneck adapters", "text-cross-encoder-adapter", None),
    ("cross-encoder + prefix tuning", "text-cross-encoder-prefix", None),
    ("cross-encoder, random negatives \\(diagnostic\\)", "text-cross-encoder-random", None),
    ("DPR + LoRA", "text-dpr-lora",
     "DPR + LoRA, r 8, α 16 on query and value, 0.65 % trained; cosine × 20 over mean pooling (`text-dpr-lora`: "
     "3 epochs, lr 1e-3, batch 4, 64 + 128 tokens; on an H100)"),
    ("DPR + bottleneck adapters", "text-dpr-adapter", None),
    ("DPR + prefix tuning", "text-dpr-prefix", None),
]


def described(label, cell):
    """A description from the cell's config and card, in the published rows' wording."""
    cfg_path = os.path.join("baselines/configs/ecthr/cpu", f"{cell}.toml")
    try:
        cfg = tomllib.load(open(cfg_path, "rb"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        sys.exit(f"{cfg_path}: {e}")
    sched, d = cfg["schedule"], cfg["data"]
    peft = cfg.get("peft", {})
    how = {
        "lora": lambda p: "r {rank}, α {alpha:g} on {t}".format(t=" and ".join(p["lora"]["targets"]), **p["lora"]),
        "adapter": lambda p: "reduction factor {reduction_factor}, {activation}".format(**p["adapter"]),
        "prefix": lambda p: "{length} prefix vectors a layer, {how}".format(
            how="through the reparametrisation MLP" if p["prefix"].get("projection") else "direct (no reparametrisation MLP)",
            **p["prefix"]),
    }
    name = label.replace("\\(", "(").replace("\\)", ")")
    text = f"{name}, from all-MiniLM-L6-v2"
    if peft.get("method") in how:
        text += f"; {how[peft['method']](peft)}"
    bi = cfg.get("biencoder", {})
    if cfg.get("model") in ("dpr", "ance") and bi.get("cosine", True):
        text += f"; cosine × {bi.get('scale', 20.0):g} over {bi.get('pooling', 'mean')} pooling"
    neg = cfg.get("negatives", {})
    text += f"; negatives BM25 {neg.get('bm25', 0)} + random {neg.get('random', 0)} + model {neg.get('model', 0)}"
    text += (f" (`{cell}`: {sched['epochs']} epochs, lr {cfg['optim']['lr']:.0e}, batch {sched['batch_size']}, "
             f"{d['max_query_len']} + {d['max_doc_len']} tokens")
    card = os.path.join(data, "cards", f"{cell}.toml")
    if os.path.exists(card):
        gpu = re.search(r"NVIDIA (H\d+)", open(card, encoding="utf-8").read())
        if gpu:
            text += f"; on an {gpu.group(1)}"
    return re.sub(r"e-0(\d)", r"e-\1", text) + ")"


section = md.split("### Beside the paper", 1)[1].split("\n## ", 1)[0]
paper, ours = None, {}
for line in section.splitlines():
    if not line.startswith("|"):
        continue
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if cells[0].startswith("Table"):
        paper = cells
    elif len(cells) > 1 and cells[1].startswith("↳ ours: ") and paper:
        ours.setdefault(cells[1][len("↳ ours: "):], (paper, cells[3:6]))


def cell_text(cell, paper_fig):
    m = re.match(r"\*\*(.*?)\*\*(.*?)<br>nearest (.*?) · (\d+) topics", cell)
    if not m:
        sys.exit(f"{index}: a cell not in the leaderboard's form: {cell!r}")
    fig, marks, near, n = m.groups()
    s = fig + (" " + marks.strip() if marks.strip() else "") + f"; nearest {near} · {n} topics"
    return s + (f" — paper {paper_fig}" if paper_fig and paper_fig != "—" else "")


# The main table: every row's figures (two decimals) and markers, by split; for the rows no published row
# stands beside (our extension, the diagnostic), which the "Beside the paper" section does not hold.
head, main = None, {}
for line in md.split("### Beside the paper", 1)[0].splitlines():
    if not line.startswith("|"):
        continue
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if cells[0] == "system":
        head = cells
    elif head and not cells[0].startswith("---"):
        main[cells[0]] = dict(zip(head[1:], cells[1:]))

SPLITS = ["test", "unseen_query", "unseen_guide"]


def entry_scores(label, split):
    """The newest leaderboard entry of system `label` on `split` (DATA/leaderboard/entries), as `lexbench eval
    --format json` would give it: {"measures": {...}, "num_topics": n}; None when there is none."""
    found = None
    for path in sorted(glob.glob(os.path.join(data, "leaderboard", "entries", "ecthr-release-text__*.json"))):
        with open(path, encoding="utf-8") as f:
            e = json.load(f)
        e = e.get("entry", e)
        if e.get("system") == label and e.get("dataset", {}).get("split") == split:
            if found is None or e["submitted_at"] > found["submitted_at"]:
                found = e
    if found is None:
        return None
    return {"measures": found["scores"], "num_topics": found["dataset"]["topics"]}


def evaluate(run, split):
    """`lexbench eval --format json` of `run` on `split` (DATA/bin/lexbench, the runner's copy, else `lexbench`
    on the PATH): ceiling, nearest and floor cut-offs."""
    ds = os.path.join(data, "datasets", "ecthr-release-text")
    exe = os.path.join(data, "bin", "lexbench")
    res = subprocess.run([exe if os.path.exists(exe) else "lexbench", "eval", run, os.path.join(ds, "qrels", f"{split}.tsv"),
                          "--pools", os.path.join(ds, "pools.jsonl"), "-m",
                          ",".join(f"R@{k}%{c}" for c in ("", "nearest", "floor") for k in (2, 5, 10)),
                          "--format", "json"], capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"{run}: lexbench eval failed: {res.stderr.strip()}")
    return json.loads(res.stdout)


def percents(ev, cut):
    return " / ".join(f"{100 * ev['measures'][f'R@{k}%{cut}']:.1f}" for k in (2, 5, 10))


def floor_of(system, split):
    """"; floor a / b / c" (R@k%floor, LexCLiPR's cut-off) of `system`'s run on `split` in DATA, "" without one."""
    run = os.path.join(data, "runs", "ecthr-release-text", split, f"{system}.trec")
    return f"; floor {percents(evaluate(run, split), 'floor')}" if os.path.exists(run) else ""


# The peer's BM25 (issue 56, item 6): `lexbench run bm25 --variant rank-bm25-okapi` on each split, not
# submitted (no significance markers), printed under the BM25 row when its runs are in DATA.
PEER = ("rank-bm25-okapi",
        "BM25 as LexCLiPR's public script computes it: rank_bm25 0.2.2's BM25Okapi (k1 1.5, b 0.75, ε 0.25) over "
        "`text.lower().split()` tokens, one index per judgment (`lexbench run bm25 --variant rank-bm25-okapi`, "
        "not submitted)")


def peer_row(paper_figs):
    cells = []
    for split, fig in zip(SPLITS, paper_figs):
        run = os.path.join(data, "runs", "ecthr-release-text", split, f"{PEER[0]}.trec")
        if not os.path.exists(run):
            print(f"{run}: not found: the {PEER[0]} row is left out", file=sys.stderr)
            return None
        ev = evaluate(run, split)
        cells.append(f"{percents(ev, '')}; nearest {percents(ev, 'nearest')}; floor {percents(ev, 'floor')} "
                     f"· {ev['num_topics']} topics" + (f" — paper {fig}" if fig and fig != "—" else ""))
    return f"| {PEER[1]} | Table 1: BM25 (—) | " + " | ".join(cells) + " |"


def from_main(label, cell):
    """Cells of a row outside "Beside the paper": the markers from the main table, the figures (full
    precision before rounding, as the leaderboard rounds them), nearest figures and topic count from
    `lexbench eval` of the cell's runs (DATA/bin/lexbench, the runner's copy)."""
    row = main.get(label)
    if row is None:
        return None
    out = []
    for split in SPLITS:
        key = split.replace("_", "\\_")
        vals = [row.get(f"{key} R@{k}%", "") for k in (2, 5, 10)]
        marks = "".join((v.split() + ["·"])[1] if len(v.split()) > 1 else "·" for v in vals)
        run = os.path.join(data, "runs", "ecthr-release-text", split, f"{cell}.trec")
        if os.path.exists(run):
            ev = evaluate(run, split)
        else:
            # A cell run elsewhere (on a GPU, on an earlier machine) has no run file here: its leaderboard
            # entry holds the same evaluation.
            ev = entry_scores(label, split)
            if ev is None:
                sys.exit(f"{run}: not found, and no leaderboard entry of {label!r} on {split} in {data}/leaderboard/entries")
        figs = percents(ev, "")
        near = percents(ev, "nearest")
        out.append(figs + ("" if marks == "···" else " " + marks) + f"; nearest {near} · {ev['num_topics']} topics")
    return out


print("| system (ours) | paper's row | seen query (test) | unseen query | unseen guide |")
print("|---|---|---|---|---|")
known = set()
for label, cell, words in ROWS:
    known.add(label)
    if label == "BM25 ✓":
        # The BM25 row with the floor cut-off of its run in DATA (`lexbench run bm25`), then the peer's BM25.
        if label in ours:
            (t, system, init, *figs), mine = ours[label]
            texts = [re.sub(r"( · \d+ topics)", floor_of("bm25", split) + r"\1", cell_text(c, p), count=1)
                     for c, p, split in zip(mine, figs[:3], SPLITS)]
            print(f"| {words} | {t}: {system}" + (f" ({init})" if init else "") + " | " + " | ".join(texts) + " |")
            paper_figs = figs[:3]
        else:
            paper_figs = [None] * 3
        row = peer_row(paper_figs)
        if row:
            print(row)
        continue
    if label not in ours:
        cells = from_main(label, cell) if cell else None
        if cells:
            diagnostic = {"text-dpr-random": "text-dpr", "text-cross-encoder-random": "text-cross-encoder"}
            row = (f"— (a diagnostic of ours: `{diagnostic[cell]}` with random negatives only)" if cell in diagnostic
                   else "— (our extension: the paper's Table 2 has ColBERT and the cross-encoder only)")
            print(f"| {words or described(label, cell)} | {row} | " + " | ".join(cells) + " |")
        continue
    (t, system, init, *figs), mine = ours[label]
    row = f"{t}: {system}" + (f" ({init})" if init else "")  # every section row follows a "Table …" row
    figs = figs[:3]
    desc = words or described(label, cell)
    print(f"| {desc} | {row} | " + " | ".join(cell_text(c, p) for c, p in zip(mine, figs)) + " |")
for label in list(ours) + [m for m in main if m not in ours]:
    if label in known:
        continue
    if label not in ours:
        print(f"{label}: in the leaderboard, not in this script's rows and beside no published row: left out "
              "(add it to ROWS with its cell)", file=sys.stderr)
        continue
    print(f"{label}: in the leaderboard, not in this script's rows (appended without a description)", file=sys.stderr)
    (t, system, init, *figs), mine = ours[label]
    print(f"| {label} | {t}: {system} | " + " | ".join(cell_text(c, p) for c, p in zip(mine, figs[:3])) + " |")
