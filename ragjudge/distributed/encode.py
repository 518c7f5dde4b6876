"""Corpus encoding on a pool of Ray actors: the documents missing from an encoder's
content-hash vector cache (``ragjudge.retrieval.cache.VectorCache``) go in batches to encoder
actors (the encoder loaded once per actor; ``ray.util.ActorPool``), and the driver writes each
returned batch into the cache as it arrives. The cache is the same one the in-process dense
retriever reads, so its ``index`` then encodes nothing, and a corpus encoded on Ray is never
encoded again by either executor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast  # cast: mypy sees a @ray.remote class as the plain class

import numpy as np

from ragjudge.distributed import require_ray
from ragjudge.schema import Document

ray = require_ray()

BATCH = 256


@ray.remote(num_cpus=1, max_restarts=1, max_task_retries=1)
class EncoderActor:
    """One encoder per actor: a batch of texts -> their vectors (float32, one row per text).

    The encoder's spec is a small constructor argument that Ray inlines with the actor's
    creation; Ray Data's actor pools keep constructor arguments in the object store instead,
    and with restarts on, Ray's core worker then wrote a warning line for every actor on
    every run."""

    def __init__(self, encoder: Any) -> None:
        from ragjudge.retrieval.dense import resolve_encoder

        self.encoder = resolve_encoder(encoder)

    def encode(self, batch: dict[str, str]) -> dict[str, np.ndarray]:
        """``{content hash: text}`` -> ``{content hash: vector}``."""
        vecs = np.asarray(self.encoder.encode(list(batch.values())), dtype=np.float32)
        return dict(zip(batch, vecs, strict=True))


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
        from ray.util import ActorPool

        keys = list(todo)
        batches = [{h: todo[h] for h in keys[i : i + BATCH]} for i in range(0, len(keys), BATCH)]
        size = max(1, min(num_workers, len(batches)))
        actors = [cast(Any, EncoderActor).remote(encoder) for _ in range(size)]
        for new in ActorPool(actors).map_unordered(lambda a, b: a.encode.remote(b), batches):
            cache.put_many(new)
            have.update(new)
        for actor in actors:
            ray.kill(actor)
    cache.close()
    return have
