"""Speed of the five offline judges (items/s on this machine), beside a same-run peer.

    .venv/bin/python bench/bench_offline_judges.py [--k 5] [--repeat 1]

Items: the 60 demo questions (``datasets/demo``), each with its reference as the answer and k
contexts (its judged-relevant documents first, then other documents of the corpus, in a fixed
order). One item = all five judges on it.

Measured in the same process, with the encoder and the claim-support model loaded first, each
cold pass with a fresh embedding cache (every text encoded once), the claim-support model's
pair cache empty and the judges' in-process text caches (chunk profiles, stems) emptied:
- ``v3, cold``: the judges on ``params/v3.json`` (the claim-support model) as every runner
  calls them (``ragjudge.judges.runner.run_judges``: each slice of items prepared first, so the
  texts are encoded in one batch per judge);
- ``v3, warm``: the same again with the caches filled (what a k-sweep or a rerun of the other
  judges on the same item pays);
- ``v2, cold``: the default judges (``params/v2.json``: support from embedding features), as
  every runner calls them, on the judges' encoder (``load_judge_encoder()``: by default the
  shipped int8 ONNX model, ``ragjudge.embedding.load_onnx_encoder()``);
- ``v2, cold, bf16 encoder``: the same on the bundled model under torch's bfloat16 autocast
  (``Bf16Encoder``, the judges' encoder until 2026-12-05, on a CPU with native bfloat16);
- ``v2, cold, fp32 encoder``: the same on the plain fp32 model (``load_encoder()``);
- ``v2, cold, fp32, item by item``: those judges called one item at a time (``judge(item)``, no
  ``prepare``): how runners called them before batched preparation;
- ``peer: content-word overlap``: the plain baseline (share of the answer's content words found
  in the contexts), the cheapest possible faithfulness signal;
- ``encoder``: raw sentences/s of the judges' encoder on the same texts in one call, the
  floor, and of the bf16 and fp32 encoders.
Scores are compared: judges' encoder against fp32, batched against item by item (largest score
difference), and the vectors of the judges' and bf16 encoders against fp32 ones (least cosine).
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ragjudge.judges.offline import (  # noqa: E402
    OfflineAnswerRelevancyJudge,
    OfflineCompletenessJudge,
    OfflineContextPrecisionJudge,
    OfflineContextRecallJudge,
    OfflineFaithfulnessJudge,
)
from ragjudge.judges.offline.embed import EmbeddingCache  # noqa: E402
from ragjudge.judges.offline.features import _stems, profile, stem  # noqa: E402
from ragjudge.judges.offline.params import (  # noqa: E402
    MODEL_PARAMS,
    PARAMS_DIR,
    Params,
    load_params,
)
from ragjudge.judges.offline.segment import _aspects  # noqa: E402
from ragjudge.judges.offline.supportmodel import shared_model  # noqa: E402
from ragjudge.judges.runner import run_judges  # noqa: E402
from ragjudge.resources import demo_dir  # noqa: E402
from ragjudge.schema import JudgeInput  # noqa: E402
from ragjudge.text import content_words  # noqa: E402


def demo_items(k: int) -> list[JudgeInput]:
    demo = demo_dir()
    docs = [json.loads(line) for line in (demo / "corpus.jsonl").open(encoding="utf-8")]
    text = {d["_id"]: d["text"] for d in docs}
    qrels: dict[str, list[str]] = {}
    with (demo / "qrels" / "test.tsv").open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if int(row["score"]) > 0:
                qrels.setdefault(row["query-id"], []).append(row["corpus-id"])
    items = []
    for n, line in enumerate((demo / "queries.jsonl").open(encoding="utf-8")):
        q = json.loads(line)
        ids = list(qrels.get(q["_id"], []))
        filler = [d["_id"] for d in docs[n * 3 :] + docs[: n * 3] if d["_id"] not in ids]
        ids = (ids + filler)[:k]
        reference = q.get("reference") or "I don't know."
        items.append(
            JudgeInput(
                id=q["_id"],
                question=q["text"],
                answer=reference,
                reference=reference,
                contexts=[text[i] for i in ids],
            )
        )
    return items


def overlap(item: JudgeInput) -> float:
    words = set(content_words(item.answer))
    pool = set(content_words(" ".join(item.contexts)))
    return len(words & pool) / len(words) if words else 0.0


def five(params: Params, cache: EmbeddingCache) -> list:
    """The five offline judges on ``params``, sharing ``cache``."""
    return [
        cls(params=params, cache=cache)
        for cls in (
            OfflineFaithfulnessJudge,
            OfflineAnswerRelevancyJudge,
            OfflineCompletenessJudge,
            OfflineContextRecallJudge,
            OfflineContextPrecisionJudge,
        )
    ]


def item_by_item(judges: list, items: list[JudgeInput]) -> tuple[float, list[float | None]]:
    """Seconds to judge ``items`` one call at a time, and the scores (judge-major)."""

    async def go() -> list[float | None]:
        return [(await j.judge(item)).score for j in judges for item in items]

    t = time.perf_counter()
    scores = asyncio.run(go())
    return time.perf_counter() - t, scores


def cold_start() -> None:
    """Empty the judges' in-process text caches (chunk profiles, stems, question aspects), so
    that a cold pass does not reuse what an earlier pass computed."""
    for cached in (profile, _stems, stem, _aspects):
        cached.cache_clear()


def as_runners_do(judges: list, items: list[JudgeInput]) -> tuple[float, list[float | None]]:
    """Seconds to judge ``items`` through ``run_judges`` (slices prepared), and the scores."""
    t = time.perf_counter()
    out = asyncio.run(run_judges(judges, items, progress=False))
    seconds = time.perf_counter() - t
    return seconds, [r.score for j in judges for r in out[j.name]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=1, help="repeat the item list")
    args = ap.parse_args()
    import numpy as np
    import torch

    from ragjudge.embedding import Bf16Encoder, load_encoder, load_judge_encoder

    fp32 = load_encoder()
    bf16 = Bf16Encoder(fp32)
    encoder = load_judge_encoder()
    for e in (fp32, bf16, encoder):
        e.encode(["warm up the model"])
    model = shared_model()
    t = time.perf_counter()
    model.logits([("warm up", "the support model")])
    load = time.perf_counter() - t
    items = demo_items(args.k) * args.repeat
    # one throwaway v3 pass over other texts: onnxruntime and torch size their buffers for real
    # batch shapes on first use, a once-per-process cost that is not a cold item's
    other = [
        it.model_copy(update={"answer": f"In short, {it.answer}", "reference": f"So {it.answer}"})
        for it in items[-6:]
    ]
    asyncio.run(run_judges(five(load_params(MODEL_PARAMS), EmbeddingCache(encoder)), other))
    for e in (fp32, bf16):  # the peers' encoders too, on real batch shapes
        e.encode([t for it in other for c in it.contexts for t in profile(c).texts])
    cache = EmbeddingCache(encoder)
    judges = five(load_params(MODEL_PARAMS), cache)
    cold_start()
    cold, _ = as_runners_do(judges, items)
    encoded = cache.encoded
    warm, _ = as_runners_do(judges, items)
    v2 = load_params(PARAMS_DIR / "v2.json")
    cold_start()
    cold_v2, scores_v2 = as_runners_do(five(v2, EmbeddingCache(encoder)), items)
    cold_start()
    cold_bf16, _ = as_runners_do(five(v2, EmbeddingCache(bf16)), items)
    cold_start()
    cold_fp32, batched = as_runners_do(five(v2, EmbeddingCache(fp32)), items)
    cold_start()
    single_fp32, single = item_by_item(five(v2, EmbeddingCache(fp32)), items)
    gap = max(abs((a or 0.0) - (b or 0.0)) for a, b in zip(batched, single, strict=True))
    precision_gap = max(
        abs((a or 0.0) - (b or 0.0)) for a, b in zip(scores_v2, batched, strict=True)
    )

    t = time.perf_counter()
    for item in items:
        overlap(item)
    peer = time.perf_counter() - t

    texts = list(dict.fromkeys(t for it in items for c in it.contexts for t in profile(c).texts))
    t = time.perf_counter()
    vecs = encoder.encode(texts)
    enc = time.perf_counter() - t
    t = time.perf_counter()
    vecs_fp32 = fp32.encode(texts)
    enc_fp32 = time.perf_counter() - t
    t = time.perf_counter()
    vecs_bf16 = bf16.encode(texts)
    enc_bf16 = time.perf_counter() - t
    cosine = np.sum(vecs * vecs_fp32, axis=1)
    cosine_bf16 = np.sum(vecs_bf16 * vecs_fp32, axis=1)

    n = len(items)
    rows = [
        ("v3, cold (5 judges)", n / cold),
        ("v3, warm (5 judges)", n / warm),
        ("v2, cold (5 judges)", n / cold_v2),
        ("v2, cold, bf16 encoder", n / cold_bf16),
        ("v2, cold, fp32 encoder", n / cold_fp32),
        ("v2, cold, fp32, item by item", n / single_fp32),
        ("peer: content-word overlap", n / peer),
    ]
    print(
        f"{n} items, k={args.k}, torch threads={torch.get_num_threads()}, judges' encoder "
        f"{encoder.name}, {encoded} texts encoded on the cold pass"
    )
    print(f"{'what':32s} {'items/s':>10s} {'ms/item':>10s}")
    for name, rate in rows:
        print(f"{name:32s} {rate:10.1f} {1000 / rate:10.2f}")
    print(f"{'encoder (sentences/s)':32s} {len(texts) / enc:10.1f}")
    print(f"{'bf16 encoder (sentences/s)':32s} {len(texts) / enc_bf16:10.1f}")
    print(f"{'fp32 encoder (sentences/s)':32s} {len(texts) / enc_fp32:10.1f}")
    print(
        f"ratio warm/cold: {cold / warm:.1f}x; overlap peer is {peer and cold / peer:.0f}x "
        "faster than cold offline judging (it reads no embeddings)"
    )
    print(
        f"v2 cold: bf16 / judges' encoder {cold_bf16 / cold_v2:.2f}x, fp32 / judges' encoder "
        f"{cold_fp32 / cold_v2:.2f}x (largest score difference {precision_gap:.1e}; vectors' "
        f"cosine to fp32: min {cosine.min():.7f}, bf16's {cosine_bf16.min():.7f}); fp32 item by "
        f"item / batched {single_fp32 / cold_fp32:.2f}x (largest score difference {gap:.1e}); "
        f"v3 / v2 cold {cold / cold_v2:.2f}x; encoding alone at the one-call rate would take "
        f"{enc / len(texts) * encoded / n * 1000:.0f} ms of a v3 item; support model load "
        f"{load:.2f}s"
    )


if __name__ == "__main__":
    main()
