"""The offline extractive generator: answers with the context sentences closest to the question.

Every sentence of the top-k contexts gets
    s = (1 - w) * cos(q, sentence) + w * |cw(q) & cw(sentence)| / |cw(q)|
(cos from ``encoder``, by default the offline judges' encoder, see below; cw = content words,
w = ``lexical_weight`` = 0.3).
The answer is the up to ``max_sentences`` best sentences with s >= ``threshold`` (0.35) and
s >= best - ``margin`` (0.15), each followed by its citation ``[n]`` (1-based context number),
in context order. When no sentence reaches the threshold the generator abstains with the fixed
``NO_ANSWER`` text. On the demo corpus, sentences that answer their question score about 0.5-0.8
and sentences about unrelated topics below 0.15, hence the threshold.

``encoder``: an ``Encoder`` or a name ``ragjudge.retrieval.dense.resolve_encoder`` knows; by
default ``judges``, the offline judges' encoder (the model shipped in the package, run with ONNX
Runtime: no torch import). A sweep gives it the judges' shared vector cache
(``ragjudge.sweep.components``), so a sentence the generator encoded is not encoded again when
it is judged. ``version`` = ``v2+<encoder name>``: the encoder decides the answers (v1 used the
sentence-transformers model in float32).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import numpy as np

from ragjudge.errors import ConfigError
from ragjudge.prompts import OFFLINE_MAX_CHARS, OFFLINE_MAX_TOTAL, cap_texts
from ragjudge.protocols import Encoder
from ragjudge.retrieval.dense import ENCODERS, resolve_encoder
from ragjudge.schema import Answer, Document, TestCase
from ragjudge.text import content_words, split_sentences

NO_ANSWER = "I don't know: the retrieved contexts do not answer this question."


def _encoder_name(spec: str) -> str:
    """What names an encoder given by name in ``version``, known without loading it: the
    judges' encoder's name for ``judges`` (it follows ``$RAGJUDGE_JUDGE_PRECISION``), else the
    name given."""
    if spec != "judges":
        return spec
    from ragjudge.embedding import judge_encoder_name

    return judge_encoder_name()


class ExtractiveGenerator:
    """Offline ``Generator``: extractive, cited, abstains below a similarity threshold."""

    name = "extractive"
    client = None
    """No LLM client: it calls no model and spends nothing (what a run's budget reads; a
    generator without this attribute may spend)."""

    def __init__(
        self,
        encoder: Encoder | str | None = None,
        *,
        max_sentences: int = 3,
        threshold: float = 0.35,
        margin: float = 0.15,
        lexical_weight: float = 0.3,
        cache_size: int = 50_000,
    ) -> None:
        if isinstance(max_sentences, bool) or not isinstance(max_sentences, int):
            raise ConfigError(f"generator max_sentences must be an integer, got {max_sentences!r}")
        if max_sentences < 1:
            raise ConfigError(f"generator max_sentences must be at least 1, got {max_sentences}")
        for name, value in (("threshold", threshold), ("margin", margin)):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(f"generator {name} must be a number, got {value!r}")
        self._spec = "judges" if encoder is None else encoder
        if isinstance(self._spec, str) and self._spec not in ENCODERS:
            raise ConfigError(
                f"generator encoder must be one of {', '.join(ENCODERS)} or an Encoder, "
                f"got {self._spec!r}"
            )
        self._encoder: Encoder | None = None if isinstance(self._spec, str) else self._spec
        self.version = "v2+" + (
            _encoder_name(self._spec) if isinstance(self._spec, str) else self._spec.name
        )
        self.max_sentences = max_sentences
        self.threshold = threshold
        self.margin = margin
        self.lexical_weight = lexical_weight
        self._cache: dict[str, np.ndarray] = {}
        self._cache_size = cache_size
        self._lock = threading.Lock()

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            self._encoder = resolve_encoder(self._spec)
        return self._encoder

    def _vectors(self, texts: list[str]) -> np.ndarray:
        """Embeddings of ``texts``; sentences seen before (e.g. at a smaller k) are cached. The
        misses are encoded outside the cache's lock, so answers generated in several threads
        encode at the same time (two may then encode one text: the same vector)."""
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for t in texts:
                vec = self._cache.get(t)
                if vec is not None:
                    found[t] = vec
        todo = [t for t in dict.fromkeys(texts) if t not in found]
        if todo:
            vecs = self.encoder.encode(todo)
            found.update(zip(todo, vecs, strict=True))
            with self._lock:
                if len(self._cache) + len(todo) > self._cache_size:
                    self._cache.clear()
                self._cache.update(zip(todo, vecs, strict=True))
        return np.stack([found[t] for t in texts])

    def scores(self, question: str, sentences: list[str]) -> np.ndarray:
        """The combined score s of each sentence (see the module docstring)."""
        vecs = self._vectors([question, *sentences])
        cos = vecs[1:] @ vecs[0]
        q = set(content_words(question))
        lex = np.array([len(q & set(content_words(s))) / len(q) if q else 0.0 for s in sentences])
        return (1 - self.lexical_weight) * cos + self.lexical_weight * lex

    def answer(self, case: TestCase, contexts: Sequence[Document], k: int) -> Answer:
        """The synchronous body of ``generate``. Contexts are cut to bounded length first
        (``ragjudge.prompts.cap_texts``; ``Answer.contexts`` holds what was read, a cut
        context ending with the truncation mark)."""
        texts, _, _ = cap_texts([d.text for d in contexts], OFFLINE_MAX_CHARS, OFFLINE_MAX_TOTAL)
        located = [(j, s) for j, t in enumerate(texts) for s in split_sentences(t)]
        chosen: list[tuple[int, int, str]] = []
        if located:
            s = self.scores(case.question, [sent for _, sent in located])
            best = float(s.max())
            order = np.argsort(-s, kind="stable")[: self.max_sentences]
            chosen = sorted(
                (located[i][0], int(i), located[i][1])
                for i in order
                if s[i] >= self.threshold and s[i] >= best - self.margin
            )
        base = {
            "case_id": case.id,
            "k": k,
            "context_ids": [d.id for d in contexts],
            "contexts": texts,
            "generator": self.name,
        }
        if not chosen:
            return Answer(text=NO_ANSWER, abstained=True, **base)
        text = " ".join(f"{sent} [{j + 1}]" for j, _, sent in chosen)
        return Answer(text=text, citations=sorted({j for j, _, _ in chosen}), **base)

    async def generate(self, case: TestCase, contexts: Sequence[Document], k: int) -> Answer:
        return await asyncio.to_thread(self.answer, case, contexts, k)
