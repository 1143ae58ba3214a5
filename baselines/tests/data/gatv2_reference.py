#!/usr/bin/env python3
"""Reference outputs of PyTorch Geometric's GATv2Conv for the cases of `baselines/src/graph/conv.rs`'s tests.

    python3 gatv2_reference.py > gatv2_reference.json        # needs torch + torch_geometric

The committed gatv2_reference.json was written by exactly that command with torch 2.11.0+cu130 and
torch_geometric 2.8.0.post1 (run on a machine that has them; not needed by the tests).
    python3 gatv2_reference.py --numpy                        # the same maths in numpy (no torch)

Every case builds `GATv2Conv(in, out, heads=H, edge_dim=E, add_self_loops=..., share_weights=False,
concat=True)`, copies the fixed weights below into `lin_l`, `lin_r`, `lin_edge`, `att` and `bias`, and
runs it in eval mode with `return_attention_weights=True`. The JSON maps each case name to
`{"out": [[...]] (N, H*C), "alpha": [[...]] (E', H), "edge_index": [[src...], [dst...]]}`; with self-loops
PyG first removes existing loops and appends one per node (edge attribute = mean of the node's incoming
edge attributes, `fill_value="mean"`), so `edge_index` is the list the attention weights refer to.
The Rust test compares against this file (tolerance 1e-5) when it exists.
"""

import json
import sys

CASES = {
    # The hand-worked case: 3 nodes, in 2, 1 head of 2 channels, edge_dim 1; node 1 has no incoming edge.
    "hand": {
        "heads": 1,
        "out": 2,
        "add_self_loops": False,
        "x": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
        "edge_index": [[0, 1, 2], [2, 2, 0]],
        "edge_attr": [[1.0], [-2.0], [2.0]],
        "lin_l_weight": [[1.0, 0.0], [0.0, 1.0]],
        "lin_l_bias": [0.0, 0.0],
        "lin_r_weight": [[0.0, 1.0], [1.0, 0.0]],
        "lin_r_bias": [0.0, 0.0],
        "lin_edge_weight": [[1.0], [0.0]],
        "att": [[[1.0, -1.0]]],
        "bias": [0.5, -0.5],
    },
    # 4 nodes, in 3, 2 heads of 2 channels, edge_dim 2; node 3 has no incoming edge.
    "two_heads": {
        "heads": 2,
        "out": 2,
        "add_self_loops": False,
        "x": [[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [-1.0, 0.75, 0.5], [0.0, 1.0, -1.5]],
        "edge_index": [[0, 2, 3, 1, 3, 0, 2], [1, 1, 1, 2, 2, 0, 0]],
        "edge_attr": [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [1.0, 0.0], [0.0, 1.0], [-1.0, 0.5], [0.5, -1.0]],
        "lin_l_weight": [
            [0.2, -0.1, 0.3],
            [0.4, 0.5, -0.2],
            [-0.3, 0.1, 0.2],
            [0.1, -0.4, 0.6],
        ],
        "lin_l_bias": [0.1, -0.2, 0.05, 0.0],
        "lin_r_weight": [
            [-0.5, 0.2, 0.1],
            [0.3, -0.3, 0.4],
            [0.2, 0.6, -0.1],
            [-0.2, 0.1, 0.3],
        ],
        "lin_r_bias": [0.0, 0.1, -0.1, 0.2],
        "lin_edge_weight": [[0.3, -0.2], [0.1, 0.4], [-0.5, 0.2], [0.6, 0.1]],
        "att": [[[0.7, -0.4], [0.5, 0.9]]],
        "bias": [0.01, -0.02, 0.03, -0.04],
    },
}
# The same weights with PyG's self-loops (mean-filled edge attributes).
CASES["two_heads_self_loops"] = dict(CASES["two_heads"], add_self_loops=True)


def with_self_loops(n, edge_index, edge_attr):
    """PyG's remove_self_loops + add_self_loops(fill_value="mean"), in plain Python."""
    src, dst = edge_index
    keep = [k for k in range(len(src)) if src[k] != dst[k]]
    src = [src[k] for k in keep]
    dst = [dst[k] for k in keep]
    attr = [edge_attr[k] for k in keep]
    dim = len(edge_attr[0])
    sums = [[0.0] * dim for _ in range(n)]
    counts = [0] * n
    for k, d in enumerate(dst):
        counts[d] += 1
        sums[d] = [a + b for a, b in zip(sums[d], attr[k])]
    loops = [[s / max(c, 1) for s in row] for row, c in zip(sums, counts)]
    return [src + list(range(n)), dst + list(range(n))], attr + loops


def run_numpy(case):
    import numpy as np

    x = np.array(case["x"], dtype=np.float64)
    n = x.shape[0]
    h, c = case["heads"], case["out"]
    edge_index, edge_attr = case["edge_index"], case["edge_attr"]
    if case["add_self_loops"]:
        edge_index, edge_attr = with_self_loops(n, edge_index, edge_attr)
    src, dst = np.array(edge_index[0]), np.array(edge_index[1])
    ea = np.array(edge_attr, dtype=np.float64)
    xl = (x @ np.array(case["lin_l_weight"]).T + np.array(case["lin_l_bias"])).reshape(n, h, c)
    xr = (x @ np.array(case["lin_r_weight"]).T + np.array(case["lin_r_bias"])).reshape(n, h, c)
    le = (ea @ np.array(case["lin_edge_weight"]).T).reshape(-1, h, c)
    m = xl[src] + xr[dst] + le
    m = np.where(m > 0, m, 0.2 * m)
    score = (m * np.array(case["att"])).sum(-1)  # (E, H)
    alpha = np.zeros_like(score)
    for i in range(n):
        sel = dst == i
        if sel.any():
            e = np.exp(score[sel] - score[sel].max(0))
            alpha[sel] = e / e.sum(0)
    out = np.zeros((n, h, c))
    for k in range(len(src)):
        out[dst[k]] += alpha[k][:, None] * xl[src[k]]
    out = out.reshape(n, h * c) + np.array(case["bias"])
    return {"out": out.tolist(), "alpha": alpha.tolist(), "edge_index": [src.tolist(), dst.tolist()]}


def run_pyg(case):
    import torch
    from torch_geometric.nn import GATv2Conv

    torch.manual_seed(0)
    x = torch.tensor(case["x"], dtype=torch.float32)
    h, c = case["heads"], case["out"]
    edge_dim = len(case["edge_attr"][0])
    conv = GATv2Conv(
        x.shape[1],
        c,
        heads=h,
        concat=True,
        negative_slope=0.2,
        dropout=0.0,
        add_self_loops=case["add_self_loops"],
        edge_dim=edge_dim,
        fill_value="mean",
        bias=True,
        share_weights=False,
    )
    conv.eval()
    with torch.no_grad():
        conv.lin_l.weight.copy_(torch.tensor(case["lin_l_weight"]))
        conv.lin_l.bias.copy_(torch.tensor(case["lin_l_bias"]))
        conv.lin_r.weight.copy_(torch.tensor(case["lin_r_weight"]))
        conv.lin_r.bias.copy_(torch.tensor(case["lin_r_bias"]))
        conv.lin_edge.weight.copy_(torch.tensor(case["lin_edge_weight"]))
        conv.att.copy_(torch.tensor(case["att"]))
        conv.bias.copy_(torch.tensor(case["bias"]))
        edge_index = torch.tensor(case["edge_index"], dtype=torch.long)
        edge_attr = torch.tensor(case["edge_attr"], dtype=torch.float32)
        out, (ei, alpha) = conv(x, edge_index, edge_attr=edge_attr, return_attention_weights=True)
    return {"out": out.tolist(), "alpha": alpha.tolist(), "edge_index": ei.tolist()}


def main():
    run = run_numpy if "--numpy" in sys.argv[1:] else run_pyg
    print(json.dumps({name: run(case) for name, case in CASES.items()}, indent=1))


if __name__ == "__main__":
    main()
