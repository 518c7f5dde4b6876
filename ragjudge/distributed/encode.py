"""Corpus encoding as a Ray Data pipeline: the documents missing from an encoder's
content-hash vector cache (``ragjudge.retrieval.cache.VectorCache``) go through
``map_batches`` on a pool of encoder actors (the encoder loaded once per actor), and the driver
writes each returned batch into the cache. The cache is the same one the in-process dense
retriever reads, so its ``index`` then encodes nothing, and a corpus encoded on Ray is never
encoded again by either executor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragjudge.distributed import require_ray
from ragjudge.schema import Document

ray = require_ray()

BATCH = 256


class _EncodeBatch:
    """Ray Data callable class: one encoder per actor, ``{hash, text}`` -> ``{hash, vector}``."""

    def __init__(self, encoder: Any) -> None:
        from ragjudge.retrieval.dense import resolve_encoder

        self.encoder = resolve_encoder(encoder)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        vecs = self.encoder.encode([str(t) for t in batch["text"]])
        return {"hash": batch["hash"], "vector": np.asarray(vecs, dtype=np.float32)}


def encode_corpus(
    documents: Sequence[Document], encoder: Any, name: str, num_workers: int
) -> dict[str, np.ndarray]:
    """Encode the ``documents`` that the cache of encoder ``name`` lacks on ``num_workers``
    Ray actors (``encoder``: its spec, ``plain`` / ``onnx`` / ``onnx-int8`` or an ``Encoder``
    object), store them, and return every document's vector by content hash."""
    from ragjudge.retrieval.base import content_hash, doc_text
    from ragjudge.retrieval.cache import VectorCache

    cache = VectorCache(name)
    hashes = [content_hash(d) for d in documents]
    have = cache.get_many(hashes)
    todo = {h: doc_text(d) for h, d in zip(hashes, documents, strict=True) if h not in have}
    if todo:
        ds = ray.data.from_items([{"hash": h, "text": t} for h, t in todo.items()])
        ds = ds.map_batches(
            _EncodeBatch,
            fn_constructor_args=(encoder,),
            batch_size=BATCH,
            batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=num_workers),
            num_cpus=1,
        )
        for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
            new = {str(h): v for h, v in zip(batch["hash"], batch["vector"], strict=True)}
            cache.put_many(new)
            have.update(new)
    cache.close()
    return have
