"""ragas 0.4 metrics as ragjudge judges (backend ``"ragas"``), and ``EvaluationDataset`` conversion.

The four classic ragas metrics run on the same endpoint, cache and ledger as ragjudge's own
judges: ragas gets an LLM (``ClientLLM``) whose every request goes through ragjudge's
``LLMClient.chat`` (prompt ``ragas/<metric>@<ragas version>``), so users can put ragas' scores
beside ragjudge's and compare their cost. ResponseRelevancy's embeddings come from the same
endpoint's ``/v1/embeddings`` (``embeddings="endpoint"``, default) or from the bundled
embedding model (``embeddings="bundled"``, offline, for endpoints without embeddings).

| ragjudge name | ragas metric | needs reference |
|---|---|---|
| faithfulness | Faithfulness | no |
| answer_relevancy | ResponseRelevancy | no |
| context_recall | ContextRecall | yes |
| context_precision | LLMContextPrecisionWithReference | yes |

ragas returns NaN when it cannot score; here that becomes a typed status: ``no_claims`` when
Faithfulness found no statements, otherwise ``parse_error``. A failed call raised inside ragas
is mapped by its ``LLMError.kind``. ragas is imported lazily (it is an optional extra) and
``RAGAS_DO_NOT_TRACK=true`` is set before the import: ragas' telemetry is a blocking HTTP post
inside its async path.
"""

from __future__ import annotations

import contextvars
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ragjudge.errors import ConfigError
from ragjudge.judges.registry import register_judge
from ragjudge.llm.settings import error_text
from ragjudge.llm.types import ChatClient, LLMError
from ragjudge.schema import Evidence, JudgeInput, JudgeResult, JudgeStatus, PromptRef, TokenUsage


@dataclass(frozen=True)
class RagasMetric:
    """The ragas metric behind one judge name, and what the judge declares of it."""

    metric: str
    """The class in ``ragas.metrics``."""
    needs_answer: bool
    needs_contexts: bool
    requires_reference: bool
    nan_status: JudgeStatus = JudgeStatus.parse_error
    """What a NaN score means (ragas' Faithfulness gives NaN for an answer with no claims)."""


METRICS = {
    "faithfulness": RagasMetric("Faithfulness", True, True, False, JudgeStatus.no_claims),
    "answer_relevancy": RagasMetric("ResponseRelevancy", True, False, False),
    "context_recall": RagasMetric("ContextRecall", False, True, True),
    "context_precision": RagasMetric("LLMContextPrecisionWithReference", False, True, True),
}

_USAGE: contextvars.ContextVar[list[TokenUsage] | None] = contextvars.ContextVar(
    "ragjudge_ragas_usage", default=None
)


def import_ragas() -> Any:
    """``ragas``, imported with telemetry off."""
    os.environ["RAGAS_DO_NOT_TRACK"] = "true"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import ragas

    return ragas


class RagasCallError(RuntimeError):
    """A failed LLM call inside ragas, carrying ragjudge's error kind."""

    def __init__(self, error: LLMError) -> None:
        super().__init__(f"{error.kind}: {error.message}")
        self.kind = error.kind


@lru_cache(maxsize=1)
def _classes() -> tuple[type, type]:
    """(ClientLLM, BundledEmbeddings): ragas base classes subclassed once ragas is imported."""
    ragas = import_ragas()
    from langchain_core.outputs import Generation
    from langchain_core.outputs import LLMResult as LCResult
    from ragas.embeddings.base import BaseRagasEmbeddings
    from ragas.llms.base import BaseRagasLLM

    version = str(ragas.__version__)

    @dataclass
    class ClientLLM(BaseRagasLLM):
        """A ragas LLM that sends every prompt through a ragjudge LLM client."""

        client: Any = None
        metric: str = "ragas"

        def __post_init__(self) -> None:
            super().__post_init__()
            self.multiple_completion_supported = True

        def generate_text(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("ragjudge runs ragas metrics through the async path only")

        async def agenerate_text(
            self,
            prompt: Any,
            n: int = 1,
            temperature: float | None = 0.01,
            stop: list[str] | None = None,
            callbacks: Any = None,
        ) -> Any:
            sampling: dict[str, Any] = {}
            if temperature is not None:
                sampling["temperature"] = temperature
            if stop:
                sampling["stop"] = stop
            res = await self.client.chat(
                [{"role": "user", "content": prompt.to_string()}],
                prompt=PromptRef(name=f"ragas/{self.metric}", version=version),
                tags={"judge": f"ragas.{self.metric}"},
                n=n,
                **sampling,
            )
            sink = _USAGE.get()
            if sink is not None:
                sink.append(res.usage)
            if res.error is not None:
                raise RagasCallError(res.error)
            texts = res.texts or ([res.value] if isinstance(res.value, str) else [])
            return LCResult(generations=[[Generation(text=t) for t in texts]])

        def is_finished(self, response: Any) -> bool:
            return True

    class BundledEmbeddings(BaseRagasEmbeddings):
        """ragas embeddings from ragjudge's bundled encoder (offline)."""

        def __init__(self) -> None:
            super().__init__()
            from ragjudge.embedding import load_encoder

            self.encoder = load_encoder()

        def embed_query(self, text: str) -> list[float]:
            return [float(x) for x in self.encoder.encode([text])[0]]

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[float(x) for x in v] for v in self.encoder.encode(texts)]

        async def aembed_query(self, text: str) -> list[float]:
            return self.embed_query(text)

        async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
            return self.embed_documents(texts)

    return ClientLLM, BundledEmbeddings


def _endpoint_embeddings(client: Any, model: str) -> Any:
    """ragas embeddings from the client's endpoint (``/v1/embeddings`` of the same base URL).

    ragas' legacy ResponseRelevancy calls them synchronously from its async scorer, so each
    call blocks the event loop for one round trip (a ragas behaviour, kept as it is)."""
    from langchain_openai import OpenAIEmbeddings
    from pydantic import SecretStr
    from ragas.embeddings import LangchainEmbeddingsWrapper

    settings = client.settings
    return LangchainEmbeddingsWrapper(
        OpenAIEmbeddings(
            model=model,
            openai_api_base=settings.base_url,
            openai_api_key=SecretStr(settings.key_value()),
            check_embedding_ctx_length=False,  # else it downloads a tiktoken file
        )
    )


def _sample(item: JudgeInput) -> Any:
    import_ragas()
    from ragas.dataset_schema import SingleTurnSample

    return SingleTurnSample(
        user_input=item.question,
        response=item.answer,
        retrieved_contexts=list(item.contexts),
        retrieved_context_ids=list(item.context_ids) if item.context_ids else None,
        reference=item.reference,
    )


class RagasJudge:
    """One ragas metric as a ragjudge ``Judge``."""

    backend = "ragas"

    def __init__(
        self,
        name: str,
        client: ChatClient | None = None,
        *,
        embeddings: str = "endpoint",
        embedding_model: str = "text-embedding-3-small",
    ) -> None:
        if name not in METRICS:
            raise ValueError(f"no ragas metric for {name!r}")
        if embeddings not in ("endpoint", "bundled"):
            raise ConfigError(f"embeddings must be 'endpoint' or 'bundled', not {embeddings!r}")
        ragas = import_ragas()
        self.name = name
        self.version = f"ragas-{ragas.__version__}"
        spec = METRICS[name]
        self.spec = spec
        self.requires_reference = spec.requires_reference
        self.needs_answer = spec.needs_answer
        self.needs_contexts = spec.needs_contexts
        if client is None:
            from ragjudge.llm import default_client

            client = default_client()
        self.client = client
        """The client every ragas call of this judge goes through (its ledger is the run's)."""
        llm_cls, emb_cls = _classes()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import ragas.metrics as rm
            from ragas.run_config import RunConfig

            metric = getattr(rm, spec.metric)()
        # ragjudge's client already retries failed requests; ragas retrying on top of it
        # would multiply the calls (and wait up to a minute per attempt), so it never does
        run_config = RunConfig(max_retries=1)
        metric.llm = llm_cls(client=client, metric=name, run_config=run_config)
        if hasattr(metric, "embeddings"):
            metric.embeddings = (
                emb_cls()
                if embeddings == "bundled"
                else _endpoint_embeddings(client, embedding_model)
            )
        metric.init(run_config)
        self.metric = metric

    def _result(
        self, item: JudgeInput, status: JudgeStatus, usage: TokenUsage, **kw: Any
    ) -> JudgeResult:
        return JudgeResult(
            judge=self.name,
            judge_version=self.version,
            backend="ragas",
            item_id=item.id,
            status=status,
            usage=usage,
            **{"score": None, **kw},
        )

    async def judge(self, item: JudgeInput) -> JudgeResult:
        if self.requires_reference and not (item.reference or "").strip():
            return self._result(
                item,
                JudgeStatus.skipped_missing_reference,
                TokenUsage(),
                error=f"ragas {self.spec.metric} needs a reference answer",
            )
        sink: list[TokenUsage] = []
        token = _USAGE.set(sink)
        try:
            value = await self.metric.single_turn_ascore(_sample(item))
        except RagasCallError as exc:
            return self._result(
                item, JudgeStatus(exc.kind), sum(sink, TokenUsage()), error=str(exc)
            )
        except Exception as exc:
            kind = (
                JudgeStatus.parse_error
                if "OutputParser" in type(exc).__name__
                else JudgeStatus.provider_error
            )
            return self._result(item, kind, sum(sink, TokenUsage()), error=error_text(exc))
        finally:
            _USAGE.reset(token)
        usage = sum(sink, TokenUsage())
        score = float(value) if value is not None else math.nan
        if math.isnan(score):
            return self._result(item, self.spec.nan_status, usage, error="ragas returned NaN")
        return self._result(
            item,
            JudgeStatus.ok,
            usage,
            score=min(1.0, max(0.0, score)),
            evidence=Evidence(explanation=f"ragas {self.spec.metric}"),
        )


def _factory(name: str) -> Any:
    def build(client: ChatClient | None = None, **options: Any) -> RagasJudge:
        return RagasJudge(name, client=client, **options)

    build.__name__ = f"ragas_{name}"
    return build


for _name in METRICS:
    register_judge(_name, "ragas")(_factory(_name))


# ----------------------------------------------------------------------------- datasets


def to_ragas_dataset(items: Sequence[JudgeInput]) -> Any:
    """A ragas ``EvaluationDataset`` of single-turn samples (ids go to nowhere: ragas samples
    have no id field; ``from_ragas_dataset(ds, ids=...)`` restores them)."""
    import_ragas()
    from ragas import EvaluationDataset

    return EvaluationDataset(samples=[_sample(i) for i in items])


def from_ragas_dataset(dataset: Any, ids: Sequence[str] | None = None) -> list[JudgeInput]:
    """``JudgeInput``s from a ragas ``EvaluationDataset`` (ids ``ragas-<i>`` unless given)."""
    samples = list(dataset.samples)
    if ids is not None and len(ids) != len(samples):
        raise ValueError(f"{len(ids)} ids for {len(samples)} samples")
    out = []
    for i, s in enumerate(samples):
        ctx_ids = s.retrieved_context_ids
        out.append(
            JudgeInput(
                id=ids[i] if ids is not None else f"ragas-{i}",
                question=s.user_input or "",
                answer=s.response or "",
                contexts=list(s.retrieved_contexts or []),
                context_ids=[str(c) for c in ctx_ids] if ctx_ids else None,
                reference=s.reference,
            )
        )
    return out
