#!/usr/bin/env python3
"""Compares the cells of one experiment run in two data directories (for instance once with
`--executor local` and once with `--executor slurm`): for every cell key done in both, the cell
record without what depends on where and when it ran (wall seconds, CPU, scheduler job), the
training summary without its timings, the training log without its timings, and every file of the
selected model, byte for byte.

    scripts/compare_cells.py DATA_A DATA_B EXPERIMENT_NAME

Prints one line per cell and exits 1 if any differs or if a key is done in one directory only.
"""

import hashlib
import json
import os
import sys

TIMING_KEYS = {"wall_s", "cpu", "job"}
EPOCH_TIMINGS = {"train_s", "val_s", "examples_per_s"}
LOG_TIMINGS = {"examples_per_s", "train_s"}


def record(path):
    with open(path) as f:
        v = json.load(f)
    return {k: x for k, x in v.items() if k not in TIMING_KEYS}


def summary(path):
    with open(path) as f:
        v = json.load(f)
    for e in v.get("epochs", []):
        for k in EPOCH_TIMINGS:
            e.pop(k, None)
    return v


def log(path):
    lines = []
    with open(path) as f:
        for line in f:
            v = json.loads(line)
            for k in LOG_TIMINGS:
                v.pop(k, None)
            lines.append(v)
    return lines


def model_files(path):
    out = {}
    for root, _, names in os.walk(path):
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, path)] = hashlib.sha256(f.read()).hexdigest()
    return out


def cells(data, name):
    base = os.path.join(data, "experiments", name, "cells")
    done = {}
    for key in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        d = os.path.join(base, key)
        if os.path.isfile(os.path.join(d, "cell.json")):
            done[key] = d
    return done


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    a, b, name = sys.argv[1:]
    ca, cb = cells(a, name), cells(b, name)
    bad = False
    for key in sorted(set(ca) | set(cb)):
        if key not in ca or key not in cb:
            print(f"{key[:12]}: done in {'A' if key in ca else 'B'} only")
            bad = True
            continue
        da, db = ca[key], cb[key]
        parts = {
            "record": (record, "cell.json"),
            "summary": (summary, "train/summary.json"),
            "log": (log, "train/train_log.jsonl"),
            "model": (model_files, "train/model"),
        }
        diffs = [what for what, (f, rel) in parts.items()
                 if f(os.path.join(da, rel)) != f(os.path.join(db, rel))]
        r = record(os.path.join(da, "cell.json"))
        files = len(model_files(os.path.join(da, "train/model")))
        if diffs:
            bad = True
            print(f"{key[:12]} {r['group']} {r.get('point') or '-'}: DIFFERENT: {', '.join(diffs)}")
        else:
            print(f"{key[:12]} {r['group']} {r.get('point') or '-'}: equal (record, summary, "
                  f"training log, {files} model files); {r['measure']} {r['best_val']} at epoch {r['best_epoch']}")
    if not ca and not cb:
        print(f"no cell of {name} done in either")
        bad = True
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
