"""The sweep behind lesson 13's trained section (issue 54, section 6), not run yet: no claim is in
the lesson until its 20 seeds have run at the sizes and steps the lesson will show.

One decoder of `n_layers` pre-RMSNorm blocks (the lesson's `MoEBlock`, attention from torch), byte
tokens of the shipped English corpus (lesson 12's `byhand.corpus`, train and held-out splits),
trained with torch's AdamW; per seed, five runs on the same batches:

    dense_active   a SwiGLU of the MoE's active width, (n_shared + k) * d_ff
    moe            n_shared shared + k of E routed SwiGLU experts, balancing loss 0.01, z-loss 1e-3
    moe_no_balance the same MoE without the balancing loss (does the router collapse?)
    dense_total    a SwiGLU of the MoE's total width, (n_shared + E) * d_ff
    (moe parameters = dense_total's FFN + the router; active = dense_active's FFN + the router)

Each prints one JSON line per seed: held-out loss of each run, and for the MoE runs the share of the
held-out assignments each expert gets in each layer (at the end and every `--every` steps). The
lesson's own code (its answer and setup cells, parsed from lesson.py) is what runs:

    python sweep_trained.py 0-19 --steps 600          # the sweep
    python sweep_trained.py 0 --steps 20 --every 10   # a smoke run
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent


def lesson_namespace() -> dict:
    """The lesson's answer and setup cells, executed (its demos and checks are not)."""
    sys.path.insert(0, str(HERE.parents[1]))
    from autograder.tooling.authoring import parse

    nb = parse((HERE / "lesson.py").read_text(encoding="utf-8"))
    ns: dict = {}
    for cell in nb.cells:
        role = cell.metadata.get("nbgrader", {})
        if "setup" in cell.metadata.get("tags", []) or (role.get("solution") and cell.cell_type == "code"):
            exec(compile(cell.source, cell.id, "exec"), ns)
    return ns


def batches(data: torch.Tensor, n: int, batch: int, context: int, g: torch.Generator):
    starts = torch.randint(0, len(data) - context - 1, (n, batch), generator=g)
    for row in starts:
        idx = row[:, None] + torch.arange(context + 1)  # (B, T + 1)
        yield data[idx[:, :-1]], data[idx[:, 1:]]


class Decoder(nn.Module):
    def __init__(self, ns, d, n_layers, n_heads, ffn_of):
        super().__init__()
        self.emb = nn.Embedding(256, d)
        nn.init.normal_(self.emb.weight, std=0.02)  # tied to the output: logits of order 1 at the start
        self.blocks = nn.ModuleList()
        for _ in range(n_layers):
            block = ns["MoEBlock"](d, n_heads, 8, n_experts=2, k=1)  # its FFN replaced below
            block.ffn = ffn_of()
            self.blocks.append(block)
        self.norm = nn.RMSNorm(d, eps=1e-6)

    def forward(self, idx):
        h = self.emb(idx)
        for b in self.blocks:
            h = b(h)
        return self.norm(h) @ self.emb.weight.T  # tied output: (B, T, d) x (d, 256) -> (B, T, 256)


def run(ns, kind, seed, args, train, heldout):
    torch.manual_seed(seed)
    d, dff, e, k, shared = args.d_model, args.d_ff, args.experts, args.k, args.shared
    if kind == "dense_active":
        ffn_of = lambda: ns["SwiGLU"](d, (shared + k) * dff)  # noqa: E731
    elif kind == "dense_total":
        ffn_of = lambda: ns["SwiGLU"](d, (shared + e) * dff)  # noqa: E731
    else:
        ffn_of = lambda: ns["MoEFeedForward"](d, dff, e, k, n_shared=shared)  # noqa: E731
    model = Decoder(ns, d, args.layers, args.heads, ffn_of)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)
    balance = 0.0 if kind != "moe" else 0.01
    moe = kind.startswith("moe")
    usage_over_time = []
    g = torch.Generator().manual_seed(1000 + seed)
    for step, (x, y) in enumerate(batches(train, args.steps, args.batch, args.context, g)):
        lr = args.lr * min(1.0, (step + 1) / 50) * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        for group in opt.param_groups:
            group["lr"] = lr
        loss = F.cross_entropy(model(x).reshape(-1, 256), y.reshape(-1))
        if moe:
            for b in model.blocks:
                a = b.ffn.aux
                loss = loss + balance * ns["load_balancing_loss"](a["probs"], a["experts"], e)
                loss = loss + 1e-3 * ns["router_z_loss"](a["logits"])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if moe and (step + 1) % args.every == 0:
            usage_over_time.append([step + 1, usage(model, heldout, args, e)])
    return evaluate(model, heldout, args), (usage(model, heldout, args, e) if moe else None), usage_over_time


@torch.no_grad()
def evaluate(model, heldout, args):
    g = torch.Generator().manual_seed(7)
    losses = [
        F.cross_entropy(model(x).reshape(-1, 256), y.reshape(-1)).item()
        for x, y in batches(heldout, 8, 32, args.context, g)
    ]
    return sum(losses) / len(losses)


@torch.no_grad()
def usage(model, heldout, args, e):
    """Per layer, the share of the held-out assignments each routed expert gets."""
    g = torch.Generator().manual_seed(7)
    counts = [torch.zeros(e) for _ in model.blocks]
    for x, _ in batches(heldout, 4, 32, args.context, g):
        model(x)
        for c, b in zip(counts, model.blocks):
            c += torch.bincount(b.ffn.aux["experts"].reshape(-1), minlength=e).float()
    return [[round(v, 4) for v in (c / c.sum()).tolist()] for c in counts]


def seeds_of(text: str) -> list:
    a, _, b = text.partition("-")
    return list(range(int(a), int(b or a) + 1))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("seeds", type=seeds_of)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--every", type=int, default=100)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--d-ff", type=int, default=64)
    p.add_argument("--experts", type=int, default=8)
    p.add_argument("--k", type=int, default=2)
    p.add_argument("--shared", type=int, default=1)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    args = p.parse_args()
    torch.set_num_threads(1)
    ns = lesson_namespace()
    from byhand.corpus import load_text

    train = torch.tensor(list(load_text("en", "train").encode("utf-8")), dtype=torch.long)
    heldout = torch.tensor(list(load_text("en", "heldout").encode("utf-8")), dtype=torch.long)
    for seed in args.seeds:
        t0, line = time.perf_counter(), {"seed": seed, "args": vars(args) | {"seeds": None}}
        for kind in ("dense_active", "moe", "moe_no_balance", "dense_total"):
            loss, use, over_time = run(ns, kind, seed, args, train, heldout)
            line[kind] = {"heldout_loss": round(loss, 4), "usage": use, "usage_over_time": over_time}
        line["seconds"] = round(time.perf_counter() - t0, 1)
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
