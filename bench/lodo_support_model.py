"""Leave-one-dataset-out (LODO) over the shared claim-support sets, on a reduced CPU budget,
beside the v2 offline judge, content-word overlap and the shipped model, on the same items.

    .venv/bin/python bench/lodo_support_model.py --json lodo.json        # folds, v2, overlap
    .venv/bin/python bench/lodo_support_model.py --json lodo.json --shipped  # + shipped model

The second command reuses the first one's per-item scores (same items: the sample is seeded)
and adds the shipped model's column, so the folds can run before the shipped model exists.

For each of the eight sets of ``support_data.LODO_SETS``: a fold model is trained on the OTHER
sets' train splits (SciFact always included) and scored on the held-out set's test split
(a seeded sample of ``--items`` items). Statistics with 95% bootstrap intervals (1,000 resamples
of items): AUROC and balanced accuracy (BA). Thresholds are never fitted on the held-out set:
fold model at logit 0 (it is trained on balanced data), v2 at its decision threshold 0.5,
overlap at the cut with the best BA on the training pool of the other sets, the shipped model
at its card's ``supported`` threshold.

Reduced budget (the 2 shared cores do not fit eight full trainings): a fold model is the
bundled MiniLM with its lower five layers frozen AT THE BASE WEIGHTS and only the top layer and
the head trained, on ``--per-set`` pairs per training set plus ``--hard`` made-up hard negatives
(support_data.hard_negative), one pass. The frozen part is run once for every pair and cached,
so the eight folds cost one forward pass of the pool plus eight small trainings. Each held-out
claim is scored on its best ``--top`` windows by overlap. The SHIPPED model (three top layers
trained on every set's train split, more pairs) is not a LODO model: on these test splits it is
in-domain (other documents / claims of the same sets), and is reported as such.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import support_data as D
import support_eval as E
import train_support_model as T

from ragjudge.judges.offline.supportmodel import SupportModel
from ragjudge.judges.offline.windows import overlap, ranked, stems


def lower_states(base, encoded, batch: int = 32) -> list[torch.Tensor]:
    """Hidden states entering the top layer for every encoded pair (fp16, unpadded)."""
    order = np.argsort([len(e[0]) for e in encoded], kind="stable")
    out: list[torch.Tensor | None] = [None] * len(encoded)
    base.eval()
    with torch.no_grad():
        for s in range(0, len(order), batch):
            idx = [int(i) for i in order[s : s + batch]]
            ids, mask, types, _ = T.collate(encoded, idx, [0] * len(encoded))
            hs = base(
                input_ids=ids, attention_mask=mask, token_type_ids=types, output_hidden_states=True
            ).hidden_states[-2]
            for r, i in enumerate(idx):
                out[i] = hs[r, : len(encoded[i][0])].to(torch.float16)
    return [o for o in out if o is not None]


class Top(nn.Module):
    """The base's top layer + masked mean pooling + a linear head."""

    def __init__(self, base) -> None:
        super().__init__()
        self.base = base  # only for its mask helper; not trained
        self.layer = copy.deepcopy(base.encoder.layer[-1])
        self.head = nn.Linear(base.config.hidden_size, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, states: list[torch.Tensor]) -> torch.Tensor:
        width = max(len(s) for s in states)
        h = torch.zeros((len(states), width, states[0].shape[-1]))
        mask = torch.zeros((len(states), width), dtype=torch.long)
        for r, s in enumerate(states):
            h[r, : len(s)] = s.float()
            mask[r, : len(s)] = 1
        ext = self.base._create_attention_masks(mask, None, h, None, None)[0]
        out = self.layer(h, ext)
        out = out[0] if isinstance(out, tuple) else out
        m = mask.unsqueeze(-1).float()
        return self.head((out * m).sum(1) / m.sum(1)).squeeze(-1)


def train_fold(base, states, labels, lengths, seed: int, lr: float) -> Top:
    torch.manual_seed(seed)
    rng = random.Random(seed)
    model = Top(base)
    opt = torch.optim.AdamW(
        [
            {"params": model.layer.parameters(), "lr": lr},
            {"params": model.head.parameters(), "lr": lr * 20},
        ],
        weight_decay=0.01,
    )
    plan = T.batches(len(states), lengths, rng)
    total, warm = len(plan), max(1, len(plan) // 16)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (total - s) / max(1, total - warm))
    )
    loss_fn = nn.BCEWithLogitsLoss()
    model.train()
    for idx in plan:
        y = torch.tensor([float(labels[i]) for i in idx])
        loss = loss_fn(model([states[i] for i in idx]), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    model.eval()
    return model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-set", type=int, default=300)
    ap.add_argument("--hard", type=int, default=300)
    ap.add_argument("--items", type=int, default=120, help="test items per held-out set")
    ap.add_argument("--top", type=int, default=2)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sets", default=",".join(D.LODO_SETS))
    ap.add_argument("--no-v2", action="store_true", help="skip the (slow) v2 column")
    ap.add_argument("--json", required=True)
    ap.add_argument(
        "--shipped",
        action="store_true",
        help="add the shipped model's column to the per-item scores saved in --json",
    )
    args = ap.parse_args()
    if args.shipped:
        add_shipped(Path(args.json))
        return
    torch.set_num_threads(args.threads)
    root = T.shared_data()
    t0 = time.time()
    rng = random.Random(args.seed)
    items = D.load(root)
    pairs, mix = T.sample(items, args.per_set, args.hard, rng)
    tok = T.tokenizer()
    enc = T.encode(tok, pairs, 128)
    print(f"pool: {len(pairs)} pairs; mix {json.dumps(mix)}", flush=True)
    held = {
        n: E.sample_test(D.eval_items(root, n), args.items, args.seed) for n in args.sets.split(",")
    }
    eval_pairs, owner = [], []
    for name, its in held.items():
        for n, it in enumerate(its):
            for m, claim in enumerate(E.parts(it)):
                for k in ranked(claim, it.passages)[: args.top]:
                    eval_pairs.append((claim, it.passages[k], 0, name, ""))
                    owner.append((name, n, m))
    eval_enc = T.encode(tok, eval_pairs, 128)
    base = T.build_model(0).base
    states = lower_states(base, enc)
    eval_states = lower_states(base, eval_enc)
    print(
        f"cached {len(states)} + {len(eval_states)} states in {time.time() - t0:.0f}s", flush=True
    )
    rows: dict[str, dict] = {}
    for name, its in held.items():
        t1 = time.time()
        keep = [i for i, p in enumerate(pairs) if p[3] != name]
        fold = train_fold(
            base,
            [states[i] for i in keep],
            [pairs[i][2] for i in keep],
            [len(enc[i][0]) for i in keep],
            args.seed,
            args.lr,
        )
        sel = [i for i, o in enumerate(owner) if o[0] == name]
        with torch.no_grad():
            logits = torch.cat(
                [fold([eval_states[i] for i in sel[s : s + 64]]) for s in range(0, len(sel), 64)]
            ).numpy()
        best: dict[tuple[int, int], float] = {}
        for i, v in zip(sel, logits, strict=True):
            key = owner[i][1:]
            best[key] = max(best.get(key, -1e9), float(v))
        fold_s = np.full(len(its), np.inf)
        for (n, _), v in best.items():
            fold_s[n] = min(fold_s[n], v)
        y = np.array([it.label for it in its])
        ov = E.overlap_scores(its)
        pool_ov = np.array([overlap(stems(pairs[i][0]), pairs[i][1]) for i in keep])
        ov_t = E.best_threshold(np.array([pairs[i][2] for i in keep]), pool_ov)
        row = {
            "n": len(its),
            "supported_share": round(float(y.mean()), 3),
            "fold_auroc": E.boot(y, fold_s, E.auroc),
            "fold_bacc": E.boot(y, fold_s, E.bacc_at(0.0)),
            "overlap_auroc": E.boot(y, ov, E.auroc),
            "overlap_bacc": E.boot(y, ov, E.bacc_at(ov_t)),
            "scores": {
                "y": y.tolist(),
                "fold": fold_s.tolist(),
                "overlap": ov.tolist(),
                "overlap_threshold": ov_t,
            },
        }
        if not args.no_v2:
            v2 = E.v2_scores(its)
            row["v2_auroc"] = E.boot(y, v2, E.auroc)
            row["v2_bacc"] = E.boot(y, v2, E.bacc_at(0.5))
            row["scores"]["v2"] = v2.tolist()
        rows[name] = row
        Path(args.json).write_text(
            json.dumps({"args": vars(args), "mix": mix, "rows": rows}, indent=1)
        )
        print(
            f"{name}: n={row['n']} fold AUROC {E.fmt(row['fold_auroc'])} BA "
            f"{E.fmt(row['fold_bacc'])} | v2 "
            f"{E.fmt(row['v2_auroc']) if 'v2_auroc' in row else '-'} | overlap "
            f"{E.fmt(row['overlap_auroc'])} ({time.time() - t1:.0f}s)",
            flush=True,
        )
    data = {
        "args": vars(args),
        "mix": mix,
        "rows": rows,
        "means": means_of(rows),
        "seconds": round(time.time() - t0),
    }
    Path(args.json).write_text(json.dumps(data, indent=1))
    print("means:", data["means"])


def means_of(rows: dict) -> dict[str, float]:
    keys = {k for r in rows.values() for k in r if k.endswith(("auroc", "bacc"))}
    return {
        k: round(float(np.mean([r[k][0] for r in rows.values() if k in r])), 3)
        for k in sorted(keys)
    }


def add_shipped(path: Path) -> None:
    """Score the saved items with the shipped model (as the judges run it) and print the table."""
    data = json.loads(path.read_text())
    args = data["args"]
    root = T.shared_data()
    shipped = SupportModel()
    for name, row in data["rows"].items():
        its = E.sample_test(D.eval_items(root, name), args["items"], args["seed"])
        y = np.array([it.label for it in its])
        assert y.tolist() == row["scores"]["y"], f"{name}: not the saved items"
        ship = shipped.calibrate(E.model_scores(its, shipped.logits, shipped.card.top_windows))
        row["scores"]["shipped"] = ship.tolist()
        row["shipped_auroc"] = E.boot(y, ship, E.auroc)
        row["shipped_bacc"] = E.boot(y, ship, E.bacc_at(shipped.card.thresholds.supported))
    data["means"] = means_of(data["rows"])
    data["shipped_digest"] = shipped.digest
    path.write_text(json.dumps(data, indent=1))
    cols = ["fold", "v2", "overlap", "shipped"]
    print(
        "| held-out set | n | supported | " + " | ".join(f"{c} AUROC | {c} BA" for c in cols) + " |"
    )
    print("|" + "---|" * (3 + 2 * len(cols)))
    for name, row in data["rows"].items():
        cells = [
            E.fmt(tuple(row[f"{c}_{m}"])) if f"{c}_{m}" in row else "-"
            for c in cols
            for m in ("auroc", "bacc")
        ]
        print(f"| {name} | {row['n']} | {row['supported_share']:.2f} | " + " | ".join(cells) + " |")
    m = data["means"]
    print(
        "| mean | | | "
        + " | ".join(
            f"{m.get(f'{c}_{k}', float('nan')):.3f}" for c in cols for k in ("auroc", "bacc")
        )
        + " |"
    )


if __name__ == "__main__":
    main()
