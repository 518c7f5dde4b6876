"""The parts a sweep runs: the retriever pipeline, the generator and the judges, built from a
config (``build_components``, the one builder: the CLI and ``ragjudge.sweep`` both use it,
the latter with some parts given as objects, ``GivenParts``), and the models they use."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragjudge.judges.base import conform
from ragjudge.protocols import Generator, Judge
from ragjudge.schema import RunModels
from ragjudge.sweep.config import SweepConfig


class JudgeVectors:
    """The offline judges' shared vector cache (``judges.offline.embed.shared_cache``) as an
    ``Encoder``, for the extractive generator of a sweep: the same encoder as its default
    (``judges``), so the same vectors and version, but a sentence it encodes is found there when
    the judges ask for it (on the demo every text the generator encodes is judged again)."""

    def __init__(self) -> None:
        from ragjudge.embedding import judge_encoder_name
        from ragjudge.judges.offline.embed import shared_cache

        self.name = judge_encoder_name()
        self._cache = shared_cache()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self._cache.vectors(texts)


@dataclass
class Components:
    """The parts a sweep runs. ``build_components`` makes them from a config; tests and
    notebooks may pass their own (any object meeting the protocols)."""

    retriever: Any
    """Has ``index(documents)`` and ``retrieve(queries, k) -> dict[str, Ranking]``."""
    generator: Generator
    judges: list[Judge]
    llm: Any | None = None
    """The ``LLMClient`` the LLM-backed parts share (its ledger feeds the run's ledger)."""
    models: dict[str, str] = field(default_factory=dict)
    """``RunModels.as_dict()``: the models the run used."""
    prompts: dict[str, str] = field(default_factory=dict)
    custom: dict[str, str] = field(default_factory=dict)
    """Parts the config does not name as built-ins: role (``retriever``, ``generator``,
    ``judge:<name>``) -> ``name@version`` (``ragjudge.adapters.identity``); they enter the
    run's definition, so a changed part never resumes another part's run."""


@dataclass(frozen=True)
class GivenParts:
    """Parts passed as objects (``ragjudge.sweep``): each replaces what the config names for
    its role, and its ``name@version`` enters the run's identity (``Components.custom``)."""

    retriever: Any = None
    """Anything ``adapters.as_retriever`` takes (None: the config's retriever)."""
    generator: Any = None
    """Anything ``adapters.as_generator`` takes (None: the config's generator)."""
    judges: Mapping[str, Any] = field(default_factory=dict)
    """Judge name (as listed in ``config.judges.names``) -> the judge object."""
    max_concurrency: int | None = None
    """The LLM clients' limit of calls in flight (None: ``RAGJUDGE_MAX_CONCURRENCY``)."""


def _uses_llm(config: SweepConfig) -> bool:
    from ragjudge.judges.registry import takes_client

    return (
        any(takes_client(n, config.judges.backend) for n in config.judges.names)
        or bool(config.judges.criteria)
        or config.generator.kind == "chat"
        or any(r.spec.startswith("llm") for r in config.rerankers)
    )


def build_components(config: SweepConfig, given: GivenParts | None = None) -> Components:
    """The retriever pipeline, generator and judges a config names (heavy imports here); a
    ``module:object`` name is imported (``ragjudge.adapters``); ``given`` parts replace theirs."""
    from ragjudge.adapters import as_generator, as_retriever, identity, is_import_path, load_object
    from ragjudge.generate import build_generator
    from ragjudge.judges.registry import create_judge, takes_client
    from ragjudge.retrieval import Pipeline, build_reranker, build_retriever
    from ragjudge.retrieval.pipeline import Stage

    given = given or GivenParts()
    llm = None
    judge_llms: list[Any] = []
    names, criteria = config.judges.names, config.judges.criteria
    if _uses_llm(config):
        from ragjudge.llm import judge_clients

        # One client per judge (own connection pool), all sharing one ledger and one cache.
        limit = {} if given.max_concurrency is None else {"max_concurrency": given.max_concurrency}
        llm, *judge_llms = judge_clients(1 + len(names) + len(criteria), **limit)
    custom: dict[str, str] = {}
    if given.retriever is not None:
        first = as_retriever(given.retriever)
        custom["retriever"] = identity(first)
    elif is_import_path(config.retriever.kind):
        first = as_retriever(load_object(config.retriever.kind))
        custom["retriever"] = identity(first)
    else:
        first = build_retriever(config.retriever.kind, **config.retriever.options)
    stages: list[Stage] = []
    for r in config.rerankers:
        if r.spec == "prune":
            stages.append((None, r.depth))
        elif r.spec.startswith("llm"):
            stages.append((build_reranker(r.spec, client=llm), r.depth, r.keep))
        else:
            stages.append((build_reranker(r.spec), r.depth, r.keep))
    retriever = Pipeline(first, stages=stages) if stages else first
    gen_options = dict(config.generator.options)
    if given.generator is not None:
        generator = as_generator(given.generator)
        custom["generator"] = identity(generator)
    elif is_import_path(config.generator.kind):
        generator = as_generator(load_object(config.generator.kind))
        custom["generator"] = identity(generator)
    else:
        if config.generator.kind == "chat":
            gen_options.setdefault("client", llm)
        elif config.generator.kind == "extractive" and gen_options.get("encoder") in (
            None,
            "judges",
        ):
            gen_options["encoder"] = JudgeVectors()
        generator = build_generator(config.generator.kind, **gen_options)
    backend = config.judges.backend
    clients = iter(judge_llms or [None] * (len(names) + len(criteria)))
    judges: list[Judge] = []
    llm_judged = bool(criteria)
    for n in names:
        client = next(clients)
        if n in given.judges:
            judge = conform(given.judges[n])
            custom[f"judge:{judge.name}"] = identity(judge)
            llm_judged = llm_judged or getattr(judge, "client", None) is not None
        elif is_import_path(n):
            obj = load_object(n)
            judge = conform(obj() if isinstance(obj, type) else obj)
            custom[f"judge:{judge.name}"] = identity(judge)
        else:
            wants = takes_client(n, backend)
            llm_judged = llm_judged or wants
            options = {**config.judges.options, **({"client": client} if wants else {})}
            judge = create_judge(n, backend, **options)
        judges.append(judge)
    if criteria:
        from ragjudge.judges.llm.criteria import CriteriaJudge

        judges += [CriteriaJudge(n, c, client=next(clients)) for n, c in criteria.items()]
    if llm is None:  # a given judge brings its own client: its ledger is the run's
        llm = next((c for c in (getattr(j, "client", None) for j in judges) if c), None)
    models = RunModels(
        retriever=str(getattr(retriever, "name", config.retriever.kind)),
        generator=llm.model
        if llm is not None and config.generator.kind == "chat"
        else f"{generator.name}@{generator.version}",
        judge=llm.model if llm is not None and llm_judged else None,
    )
    prompts = {f"judge:{j.name}": str(j.version) for j in judges}
    prompts["generator"] = str(generator.version)
    return Components(
        retriever,
        generator,
        judges,
        llm=llm,
        models=models.as_dict(),
        prompts=prompts,
        custom=custom,
    )


def llm_settings(comp: Components) -> dict[str, Any]:
    """The sampling settings of the run's LLM (``{"llm": {model, temperature, max_tokens,
    seed}}``, from RAGJUDGE_* variables), recorded in the manifest's definition: a resume under
    other settings is refused like any other definition change. Empty without an LLM."""
    settings = getattr(comp.llm, "settings", None)
    if settings is None:
        return {}
    keys = ("model", "temperature", "max_tokens", "seed")
    return {"llm": {k: getattr(settings, k, None) for k in keys}}
