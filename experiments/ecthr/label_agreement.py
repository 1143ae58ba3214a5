#!/usr/bin/env python3
"""Two independent readings of the same case-law guides, side by side: the published release's labels
(`tum_release/*.jsonl`: query = the heading path as one string, judgment, paragraphs) and LexCLiPR's
own English labels (`hudoc/lexclipr/labels.jsonl`: query = the list of headings, itemid, paragraph
numbers). A label of one is matched with a label of the other when they name the same judgment and
the same last two headings (numbering such as `2.` or `a.` removed, case and punctuation folded; a
guide's editions may differ above that). For the matched (heading, judgment) pairs it prints how
often the paragraph sets are equal, one within the other, overlapping, or disjoint, and their mean
Jaccard overlap.

    python3 experiments/ecthr/label_agreement.py [FIXTURES]    # default: ../shared/fixtures
"""
import collections
import json
import re
import sys

def norm(s):
    """A heading without its numbering (`2.`, `a.`, `iii.`), case and punctuation folded."""
    s = re.sub(r"^\s*([0-9]+|[a-z]|[ivxlc]+)\.\s*", "", s.strip(), flags=re.I)
    return re.sub(r"[^a-z0-9]+", " ", s.lower()).strip()


def release_key(judgment, query):
    """(judgment, last two headings) of a release label, whose query is the heading path as one string."""
    parts = [p for p in re.split(r"\.\s{2,}|\s\.\s+", query) if p.strip()]
    return (judgment, tuple(norm(p) for p in parts[-2:]))


def lexclipr_key(r):
    """(judgment, last two headings) of a LexCLiPR label, whose query is the list of headings."""
    return (r["itemid"], tuple(norm(p) for p in r["query"][-2:]))


def main():
    fixtures = sys.argv[1] if len(sys.argv) > 1 else "../shared/fixtures"
    release = collections.defaultdict(set)
    for f in ["training", "validation", "testing", "unseen", "unseen_article"]:
        for line in open(f"{fixtures}/tum_release/{f}.jsonl"):
            r = json.loads(line)
            key = release_key(r["judgment_id"], r["query"])
            release[key] |= set(r["paragraphs"])
    lexclipr = collections.defaultdict(set)
    for line in open(f"{fixtures}/hudoc/lexclipr/labels.jsonl"):
        r = json.loads(line)
        if r["lang"] != "english":
            continue
        key = lexclipr_key(r)
        lexclipr[key] |= set(r["paragraph_numbers"])

    common = sorted(k for k in lexclipr if k in release)
    kinds = collections.Counter()
    jaccard = []
    for k in common:
        a, b = release[k], lexclipr[k]
        jaccard.append(len(a & b) / len(a | b))
        kinds["equal" if a == b else "one within the other" if a <= b or b <= a
              else "overlapping" if a & b else "disjoint"] += 1
    print(f"(heading, judgment) pairs: release {len(release)}, LexCLiPR {len(lexclipr)}, both {len(common)}")
    for kind in ["equal", "one within the other", "overlapping", "disjoint"]:
        print(f"  {kind:22} {kinds[kind]:5}  ({kinds[kind] / max(1, len(common)):.1%})")
    print(f"  mean Jaccard overlap   {sum(jaccard) / max(1, len(jaccard)):.3f}")
    for k in [k for k in common if not (release[k] & lexclipr[k])][:5]:
        print(f"  disjoint: {k[0]} {' > '.join(k[1])}: release {sorted(release[k])}, LexCLiPR {sorted(lexclipr[k])}")


if __name__ == "__main__":
    main()
