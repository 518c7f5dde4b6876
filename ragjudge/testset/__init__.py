"""Test sets from a corpus: synthetic questions of six types, reference answers, graded
relevance and per-item provenance, filtered before use (docs/testset.md).

    import ragjudge
    ts = ragjudge.testset("corpus.jsonl", n=50, out="my-testset")   # a TestSet

``build_testset`` returns the whole ``TestsetBuild`` (items with provenance, the manifest with
the filter report). The backend is ``llm`` when an endpoint is configured (or a ``client`` is
given), else ``offline`` (template questions). Heavy parts are imported inside the functions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from ragjudge.llm import LLMClient
    from ragjudge.schema import TestSet

    from .build import Thresholds
    from .models import TestsetBuild


def build_testset(
    corpus: str | Path,
    n: int = 200,
    *,
    out: str | Path | None = None,
    backend: Literal["offline", "llm"] | None = None,
    mix: dict[str, float] | str | Path | None = None,
    seed: int = 0,
    client: LLMClient | None = None,
    max_calls: int | None = None,
    max_cost_usd: float | None = None,
    thresholds: Thresholds | None = None,
    progress: Callable[[str], None] | None = None,
) -> TestsetBuild:
    """Generate up to ``n`` questions from ``corpus`` (a file, a folder of text files or a
    BEIR folder) and write them to ``out`` when given. ``mix``: type -> weight, or a YAML file
    of it. A ``ConfigError`` / ``DataError`` names what is wrong with the input, before any
    call (with the LLM backend, ``max_cost_usd`` for a model without a known price is one, as
    in ``sweep``: its calls would count as free); with the LLM backend one pre-flight call
    first (``ragjudge.llm.preflight``: a ``ConfigError`` for a dead or misconfigured
    endpoint) and ``StageFailedError`` when the writer or a judge ends below
    the coverage floor (``build`` module docstring)."""
    from ragjudge.errors import ConfigError
    from ragjudge.llm.settings import LLMSettings
    from ragjudge.protocols import Judge
    from ragjudge.schema import TokenUsage

    from .build import Budget, run_build
    from .corpus import load_corpus
    from .folder import check_out, write_folder
    from .mix import DEFAULT_MIX, check_mix, load_mix
    from .overlap import OverlapJudge
    from .templates import TemplateContext
    from .writers import LLMWriter, QuestionWriter, TemplateWriter

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"--n must be a whole number of questions >= 1, got {n!r}")
    if mix is None:
        weights = dict(DEFAULT_MIX)
    elif isinstance(mix, dict):
        weights = check_mix(mix)
    else:
        weights = load_mix(mix)
    if backend is None:
        backend = "llm" if client is not None or LLMSettings.configured() else "offline"
    if backend not in ("offline", "llm"):
        raise ConfigError(f"--backend must be llm or offline, got {backend!r}")
    data = load_corpus(corpus)
    if out is not None:
        check_out(out)
    writer: QuestionWriter
    if backend == "llm":
        from ragjudge.llm import LLMClient

        llm = client or LLMClient.from_env()
        llm.settings.key_value()  # a remote endpoint without a key fails here, before any work
        if max_cost_usd is not None and llm.ledger.prices.price(llm.model) is None:
            raise ConfigError(
                f"--max-cost: no price is known for model {llm.model!r}, so its calls would "
                "count as free and the limit would never stop the build; set --max-calls, or "
                "give the LLM client a PriceTable with its price (docs/llm.md)"
            )
        from ragjudge.judges.registry import create_judge

        writer = LLMWriter(llm, model=llm.model)
        support: Judge = create_judge("faithfulness", "llm", client=llm)
        relevance: Judge = create_judge(
            "context_precision", "llm", client=llm, prompt="testset/answered"
        )

        def usage() -> TokenUsage:
            return llm.ledger.total()

    else:
        writer = TemplateWriter(TemplateContext.of(data.usable()))
        support = relevance = OverlapJudge()

        def usage() -> TokenUsage:
            return TokenUsage()

    async def checked_build() -> TestsetBuild:
        if backend == "llm":  # a dead or misconfigured endpoint is found before spending
            from ragjudge.llm import LLMClient, preflight

            # its own ledger: the pre-flight call is not the build's usage nor its budget's
            await preflight([LLMClient(llm.settings, backend=llm.backend, cache=None)])
        return await run_build(
            data,
            n,
            backend=backend,
            writer=writer,
            support=support,
            relevance=relevance,
            usage=usage,
            mix=weights,
            seed=seed,
            thresholds=thresholds,
            budget=Budget(max_calls=max_calls, max_cost_usd=max_cost_usd),
            progress=progress,
            oversample=1 if backend == "llm" else 4,
        )

    build = asyncio.run(checked_build())
    if backend == "llm":
        # every prompt that was called, with its version (the judges' included)
        build.manifest.prompts = sorted({e.prompt for e in llm.ledger.calls()})
    if out is not None:
        build.path = str(write_folder(build, data, out))
    return build


def testset(corpus: str | Path, n: int = 200, **options: object) -> TestSet:
    """The ``TestSet`` of ``build_testset(corpus, n, **options)``: what ``ragjudge.sweep``
    takes (with ``out=DIR`` the folder is written too, for ``ragjudge sweep``)."""
    return build_testset(corpus, n, **options).testset  # type: ignore[arg-type]


__all__ = ["build_testset", "testset"]
