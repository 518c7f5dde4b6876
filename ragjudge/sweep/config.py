"""The k-sweep configuration (``sweep.yaml``), validated with pydantic; unknown keys are errors.

Two parts of a config play different roles:

- the **definition** (dataset, retriever, rerankers, generator, judges, ks, seed) fixes what a
  run computes; its hash (``definition_hash``) identifies the run, and a resume refuses a
  config whose definition changed, naming each changed key;
- the **execution and analysis** settings (concurrency, budget, executor, store, objective) may
  change between a crash and its resume: they change how fast or how far a run goes, where it is
  kept, or how its results are read, never what a stored row means.

Example::

    dataset: {path: ., split: test}
    retriever: {kind: hybrid}
    rerankers: [{spec: late-interaction, depth: 20}]
    generator: {kind: extractive}
    judges: {names: [faithfulness, answer_relevancy, completeness,
                     context_recall, context_precision], backend: offline}
    ks: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    concurrency: 8
    budget: {max_calls: 5000, max_cost_usd: 2.0}
    executor: {kind: inprocess}   # or {kind: ray, address: auto, num_workers: 8}
    store: {url: "postgresql://USER:PASSWORD@HOST/DB"}   # else RAGJUDGE_HOME/runs.sqlite
    objective: {weights: {faithfulness: 1, completeness: 1}, penalty: {per: context_tokens,
                weight: 0.01}}
    seed: 0
"""

from __future__ import annotations

import difflib
import hashlib
import inspect
import json
import re
from collections.abc import Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    StrictInt,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ragjudge.errors import ConfigError
from ragjudge.io.yamlfile import KeyPath, expect_mapping
from ragjudge.judges.registry import JUDGE_NAMES
from ragjudge.llm.settings import resolve_concurrency
from ragjudge.resources import BUNDLED, bundled_dataset
from ragjudge.schema import RunManifest

DEFAULT_KS = list(range(1, 11))
RETRIEVAL_METRIC_NAMES = ("precision", "recall", "ndcg", "hit_rate", "mrr")
"""Retrieval metrics a sweep stores at every k; the objective may weight them by these names."""


class _Strict(BaseModel):
    """Unknown keys are errors, and so is a number that is not finite (``.inf``, ``.nan``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class DatasetConfig(_Strict):
    path: str
    """``beir``: a ragjudge/BEIR folder (corpus.jsonl, queries.jsonl with optional
    ``reference``, qrels/<split>.tsv); ``squad``: a SQuAD v1.1/v2.0 JSON file. Relative paths
    are resolved against the config file's folder; ``bundled:demo`` names the demo set shipped
    with ragjudge (so a copied demo config runs from any folder)."""
    format: Literal["beir", "squad"] = "beir"
    split: str = "test"
    limit: int | None = Field(default=None, ge=1)
    """Keep only the first ``limit`` test cases."""
    sample: int | None = Field(default=None, ge=1)
    """Keep a random subset of this many test cases (seeded by ``seed``; file order kept)."""


def _builtin_or_import_path(value: str, builtins: tuple[str, ...]) -> str:
    from ragjudge.adapters import is_import_path

    if value in builtins or is_import_path(value):
        return value
    raise ValueError(f"use one of {', '.join(builtins)} or an import path 'package.module:object'")


class RetrieverConfig(_Strict):
    kind: str = "hybrid"
    """``bm25``, ``dense``, ``hybrid`` or an import path ``package.module:object`` naming a
    retriever (``ragjudge.adapters.as_retriever``: an object with ``index`` / ``retrieve``, a
    LangChain retriever or a function ``(question, k)``)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Keyword options passed to ``build_retriever``."""

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        return _builtin_or_import_path(v, ("bm25", "dense", "hybrid"))


class RerankerConfig(_Strict):
    """One stage of the funnel after the first-stage retriever (``ragjudge.retrieval.Pipeline``):
    a reranker re-orders the top ``depth`` documents of the stage before (the rest follow in
    their order); ``prune`` cuts the list to ``depth``. The first stage retrieves
    ``max(first depth, k_max)``; depths must not increase."""

    spec: str
    """``late-interaction``, ``cross-encoder:MODEL``, ``llm`` or ``prune``."""
    depth: int = Field(ge=1)
    keep: float = Field(default=0.0, ge=0.0, le=1.0)
    """Weight of the previous stage's (min-max normalised) score inside the re-ordered head
    (``Pipeline`` stage ``keep``); 0 = the reranker's order."""

    @model_validator(mode="before")
    @classmethod
    def _known_spec(cls, data: Any) -> Any:
        """An unknown ``spec`` is the error to report, before any other key of the stage."""
        spec = data.get("spec") if isinstance(data, dict) else None
        if isinstance(spec, str):
            known = spec in ("late-interaction", "prune", "llm") or (
                spec.startswith(("cross-encoder:", "llm:")) and bool(spec.partition(":")[2])
            )
            if not known:
                raise ValueError(
                    f"spec: unknown reranker {spec!r}; known: late-interaction, "
                    "cross-encoder:MODEL_OR_PATH, llm[:MODEL], prune"
                )
        return data

    @field_validator("keep")
    @classmethod
    def _keep_needs_a_reranker(cls, v: float, info: ValidationInfo) -> float:
        if v and info.data.get("spec") == "prune":
            raise ValueError("keep applies to a reranker; a prune stage only cuts the list")
        return v


class GeneratorConfig(_Strict):
    kind: str = "extractive"
    """``extractive``, ``chat`` or an import path ``package.module:object`` naming a generator
    (``ragjudge.adapters.as_generator``: an object with ``generate``, a LangChain runnable or a
    function ``(question, contexts)``)."""
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        return _builtin_or_import_path(v, ("extractive", "chat"))


class JudgesConfig(_Strict):
    names: list[str] = Field(default_factory=lambda: list(JUDGE_NAMES))
    """Registered judge names (of ``backend``) or import paths ``package.module:object`` of
    custom judges (a ``Judge``, a class building one, or an ``@ragjudge.judge`` function)."""
    backend: Literal["offline", "llm", "ragas", "cascade"] = "offline"
    """``cascade``: the offline judge on every item, the LLM judge on the uncertain ones
    (``ragjudge.judges.cascade``; its band in ``options``)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Keyword options given to every named judge's factory on ``backend`` (the cascade's
    ``low``, ``high`` and ``platt``)."""
    criteria: dict[str, str] = Field(default_factory=dict)
    """Criteria judges (``ragjudge.judges.llm.criteria``): name -> the criterion in plain words,
    e.g. ``{polite: "Is the answer polite?"}``; they call the configured LLM."""

    @model_validator(mode="after")
    def _some_judge(self) -> JudgesConfig:
        if not self.names and not self.criteria:
            raise ValueError("name at least one judge (names or criteria)")
        clash = sorted(set(self.names) & set(self.criteria))
        if clash:
            raise ValueError(f"judge named both in names and criteria: {', '.join(clash)}")
        return self

    @field_validator("names")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        dup = sorted({n for n in v if v.count(n) > 1})
        if dup:
            raise ValueError(f"judge listed more than once: {', '.join(dup)}")
        return v


class BudgetConfig(_Strict):
    """Stops the run before it would exceed either limit (LLM calls actually sent; cache hits
    are free and do not count)."""

    max_calls: int | None = Field(default=None, ge=0)
    max_cost_usd: float | None = Field(default=None, ge=0.0)


class PenaltyConfig(_Strict):
    """``objective -= weight * (mean per-query amount at k) / scale``."""

    per: Literal["context_tokens", "generation_tokens", "generation_cost_usd"] = "context_tokens"
    """What a larger k costs the pipeline in production (judging is evaluation cost and does
    not enter): ``context_tokens``, the tokens of the k contexts given to the generator;
    ``generation_tokens``, the generator's LLM prompt + completion tokens;
    ``generation_cost_usd``, their cost."""
    weight: float = Field(ge=0.0)
    scale: float = Field(default=1000.0, gt=0.0)
    """Divides the amount: with the default the weight is per 1,000 tokens (or per $1000)."""


class ObjectiveConfig(_Strict):
    """The objective the choice of k maximises, per query:
    ``sum_m w_m * s_m / sum_m w_m`` over the metrics ``m`` scored for that query at that k
    (judge names, or retrieval metric names such as ``ndcg``), minus the optional penalty.
    Default: equal weights over the sweep's judges."""

    weights: dict[str, float] | None = None
    penalty: PenaltyConfig | None = None
    margin: float = Field(default=0.0, ge=0.0)
    """Practical-equivalence margin on the objective: k is kept beside the best when the upper
    end of the paired 95% interval of mean_q (O(q, k) - O(q, best)) is >= -margin. 0 (default):
    only k whose difference is not statistically distinguishable from 0."""

    @field_validator("weights")
    @classmethod
    def _nonneg(cls, v: dict[str, float] | None) -> dict[str, float] | None:
        if v is not None:
            bad = [m for m, w in v.items() if w < 0]
            if bad:
                raise ValueError(f"negative objective weight for {', '.join(bad)}")
            if not any(w > 0 for w in v.values()):
                raise ValueError("objective weights must include at least one positive weight")
        return v


class ExecutorConfig(_Strict):
    """Where the run's stages execute. ``inprocess`` (default): this process. ``ray``: Ray
    workers (the ``ragjudge[ray]`` extra; ``ragjudge.distributed``), the driver (this process)
    still planning and writing the run store. Not part of the run's definition: a run started
    on one executor resumes on the other."""

    kind: str = "inprocess"
    """A registered executor (``ragjudge.sweep.executors``): ``inprocess`` or ``ray`` built in."""
    address: str | None = None
    """Ray cluster to join: ``auto`` (the running cluster), ``ray://HOST:10001`` (Ray Client),
    or None: a local Ray started by this process (on this machine's cores)."""
    num_workers: int = Field(default=2, ge=1, le=4096)
    """Worker actors, one CPU each (also the width of corpus encoding)."""

    @field_validator("kind")
    @classmethod
    def _registered(cls, v: str) -> str:
        from ragjudge.sweep.executors import EXECUTORS

        if v not in EXECUTORS:
            raise ValueError(f"Input should be one of {', '.join(map(repr, EXECUTORS))}")
        return v


class StoreConfig(_Strict):
    """The run store this sweep writes (docs/store.md): a file path or URL, used when neither
    ``--store`` nor ``RAGJUDGE_STORE_URL`` names one. A secret: stored and shown as ``***``."""

    url: SecretStr


class SweepConfig(_Strict):
    dataset: DatasetConfig
    retriever: RetrieverConfig = Field(default_factory=RetrieverConfig)
    rerankers: list[RerankerConfig] = Field(default_factory=list)
    generator: GeneratorConfig = Field(default_factory=GeneratorConfig)
    judges: JudgesConfig = Field(default_factory=JudgesConfig)
    ks: list[StrictInt] = Field(default_factory=lambda: list(DEFAULT_KS), min_length=1)
    """Strict integers: ``true`` (which YAML reads as a bool) or ``"3"`` are refused."""
    concurrency: int = Field(default_factory=lambda: resolve_concurrency(None), ge=1, le=1024)
    """Generation and judging tasks in flight, and the LLM clients' cap on calls in flight.
    ``RAGJUDGE_MAX_CONCURRENCY`` beats the file's value (one precedence: flag > environment >
    file > default); unset in both: ``ragjudge.toml``'s ``[llm] max_concurrency``, else 8.
    ``ragjudge.sweep(concurrency=...)`` is the flag: it beats the environment."""
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    store: StoreConfig | None = None
    objective: ObjectiveConfig = Field(default_factory=ObjectiveConfig)
    seed: int = 0
    _origin: tuple[str, dict[KeyPath, int]] | None = PrivateAttr(None)
    """The file the config was read from and the line of each key (``parse_config``)."""

    def where(self, *key: str | int) -> str:
        """``file:line: key.path: `` of a key of the file this config was read from, for a
        check made after loading (k against the corpus); ``key.path: `` without a file."""
        dotted = ".".join(map(str, key))
        if self._origin is None:
            return f"{dotted}: "
        source, lines = self._origin
        line = next((lines[key[:n]] for n in range(len(key), 0, -1) if key[:n] in lines), None)
        return f"{source}{f':{line}' if line else ''}: {dotted}: "

    @field_validator("ks")
    @classmethod
    def _valid_ks(cls, v: list[int]) -> list[int]:
        bad = [k for k in v if k <= 0]
        if bad:
            raise ValueError(f"k must be a positive integer; got {', '.join(map(str, bad))}")
        dup = sorted({k for k in v if v.count(k) > 1})
        if dup:
            raise ValueError(f"duplicate k values: {', '.join(map(str, dup))}")
        return sorted(v)

    @field_validator("concurrency")
    @classmethod
    def _environment_beats_the_file(cls, v: int) -> int:
        return resolve_concurrency(None, v)

    @model_validator(mode="after")
    def _depths_do_not_increase(self) -> SweepConfig:
        """Each reranker stage re-orders or cuts what the stage before returned
        (``RerankerConfig``): a depth above the one before is refused at its key."""
        for i, (before, stage) in enumerate(pairwise(self.rerankers), start=1):
            if stage.depth > before.depth:
                raise ValueError(
                    f"rerankers.{i}.depth: {stage.depth} is above the depth {before.depth} of "
                    "the stage before; depths must not increase"
                )
        return self

    @model_validator(mode="after")
    def _weights_name_metrics(self) -> SweepConfig:
        """An objective weight must name a judge of this sweep or a retrieval metric: a typo
        (``faithfulnes``) would otherwise weight a metric that is never scored. With a custom
        judge given by import path its name is known once loaded: the sweep checks then."""
        if not any(":" in n for n in self.judges.names):
            self.check_weights([*self.judges.names, *self.judges.criteria])
        return self

    def check_weights(self, judge_names: Sequence[str]) -> None:
        """Raise ``ValueError`` naming an objective weight that is neither one of
        ``judge_names`` nor a retrieval metric."""
        known = [*judge_names, *RETRIEVAL_METRIC_NAMES]
        for name in self.objective.weights or {}:
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise ValueError(
                    f"objective.weights.{name}: not a judge of this sweep nor a retrieval "
                    f"metric; {hint}known: {', '.join(known)}"
                )

    @property
    def k_max(self) -> int:
        return self.ks[-1]

    def definition(self) -> dict[str, Any]:
        """The part of the config that fixes what a run computes (see the module docstring)."""
        data = self.model_dump(
            mode="json", include={"dataset", "retriever", "rerankers", "generator", "judges"}
        )
        # The data set is identified by its content hash in the manifest, not by where it lies.
        del data["dataset"]["path"]
        for stage in data["rerankers"]:  # keep 0 (the default) hashes as before keep existed
            if not stage["keep"]:
                del stage["keep"]
        if not data["judges"]["criteria"]:  # likewise no criteria judges
            del data["judges"]["criteria"]
        return data | {"ks": self.ks, "seed": self.seed}

    def definition_hash(self) -> str:
        return hash_json(self.definition())


def hash_json(value: Any) -> str:
    """sha256 of the canonical JSON of ``value`` (sorted keys, no whitespace), first 16 hex."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def diff_definitions(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Human-readable list of what changed between two definitions (``key: old -> new``)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for key in sorted(set(old) | set(new)):
            path = f"{prefix}.{key}" if prefix else str(key)
            if key not in old:
                out.append(f"{path}: added ({json.dumps(new[key])})")
            elif key not in new:
                out.append(f"{path}: removed (was {json.dumps(old[key])})")
            else:
                out.extend(diff_definitions(old[key], new[key], path))
        return out
    if old != new:
        return [f"{prefix}: {json.dumps(old)} -> {json.dumps(new)}"]
    return []


def _format_validation(
    exc: ValidationError, source: str, lines: Mapping[KeyPath, int] | None = None
) -> str:
    """The error message: ``source:line: key: problem`` (the line where the YAML loader can
    give it, with the offending value); one line for one error, else a line per error under
    ``source: N problems in the sweep config:``."""
    out = []
    for err in exc.errors():
        loc: tuple[Any, ...] = tuple(err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        if not loc:  # a model-level check names its key at the start of the message
            head = msg.split(":", 1)[0]
            if "." in head and " " not in head:
                loc = tuple(int(p) if p.isdigit() else p for p in head.split("."))
                msg = msg.split(":", 1)[1].strip()
        key = ".".join(str(p) for p in loc) or "(top level)"
        line = (lines or {}).get(loc)
        where = f"{source}:{line}" if line else source
        if err["type"] == "extra_forbidden":
            out.append(f"{where}: unknown key {key!r}")
        elif err["type"].endswith("_type") or err["type"].endswith("_parsing"):
            out.append(f"{where}: {key}: {msg} (got {json.dumps(err.get('input'), default=str)})")
        else:
            out.append(f"{where}: {key}: {msg}")
    if len(out) == 1:
        return out[0]
    return f"{source}: {len(out)} problems in the sweep config:\n  " + "\n  ".join(out)


def _option_defaults(target: Any, skip: Sequence[str] = ()) -> dict[str, Any] | None:
    """Keyword name -> default (``inspect.Parameter.empty`` when none) of each option
    ``target``'s constructor accepts (None: it takes ``**kwargs``)."""
    params = inspect.signature(target).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name: p.default for p in params if p.name not in skip}


def _value_problem(value: Any, default: Any) -> str | None:
    """What ``value`` should have been when it is not of the kind of an option's ``default``
    (a number for a number, a whole number for one, true/false, text, a list of numbers for
    a tuple of them), else None: a file cannot give any other kind to a built-in option
    whose default is one of these (``k1: abc`` would fail in the middle of the run)."""

    def number(x: Any) -> bool:
        return isinstance(x, int | float) and not isinstance(x, bool)

    if isinstance(default, bool):
        return None if isinstance(value, bool) else "true or false"
    if isinstance(default, int):
        return None if isinstance(value, int) and not isinstance(value, bool) else "a whole number"
    if isinstance(default, float):
        return None if number(value) else "a number"
    if isinstance(default, str):
        return None if isinstance(value, str) else "text"
    if isinstance(default, tuple) and all(number(x) for x in default):
        ok = isinstance(value, list) and all(number(x) for x in value)
        return None if ok else "a list of numbers"
    return None


def _component_options(
    config: SweepConfig, source: str, lines: Mapping[KeyPath, int] | None
) -> list[tuple[KeyPath, dict[str, Any], Any]]:
    """(where, options, constructor) of each built-in component's options in ``config``; a
    hybrid retriever's ``bm25`` / ``dense`` part that is not a mapping is a ``ConfigError``
    at its line."""
    from ragjudge.generate import ChatGenerator, ExtractiveGenerator
    from ragjudge.retrieval.bm25 import BM25Retriever
    from ragjudge.retrieval.dense import DenseRetriever
    from ragjudge.retrieval.hybrid import HybridRetriever

    opts = dict(config.retriever.options)
    found: list[tuple[KeyPath, dict[str, Any], Any]] = []
    kind = config.retriever.kind
    where: KeyPath = ("retriever", "options")
    if kind == "bm25":
        found.append((where, opts, BM25Retriever))
    elif kind == "dense":
        found.append((where, opts, DenseRetriever))
    elif kind == "hybrid":
        for part, cls in (("bm25", BM25Retriever), ("dense", DenseRetriever)):
            sub = opts.pop(part, None)
            if isinstance(sub, dict):
                found.append(((*where, part), sub, cls))
            elif sub is not None:
                raise ConfigError(
                    f"{_at(source, lines, (*where, part))}: {'.'.join(map(str, (*where, part)))}: "
                    f"expected a mapping of {cls.__name__} options, got "
                    f"{json.dumps(sub, default=str)}"
                )
        opts.pop("encoder", None)
        found.append((where, opts, HybridRetriever))
    gen = {"extractive": ExtractiveGenerator, "chat": ChatGenerator}.get(config.generator.kind)
    if gen is not None:
        found.append((("generator", "options"), dict(config.generator.options), gen))
    return found


def _at(source: str, lines: Mapping[KeyPath, int] | None, *keys: KeyPath) -> str:
    """``source:line`` of the first of ``keys`` that ``lines`` holds (``source`` alone when
    none)."""
    line = next((lines[k] for k in keys if lines and k in lines), None)
    return f"{source}:{line}" if line else source


def check_options(
    config: SweepConfig, source: str = "config", lines: Mapping[KeyPath, int] | None = None
) -> None:
    """Refuse an option the component would not accept (a typo in ``retriever.options`` or
    ``generator.options`` would otherwise fail only when the run starts), or a value not of
    the kind of its default (``_value_problem``), naming the key at its line; then the values
    the cheap components refuse (``_check_values``). Objects (``client``, ``dense``/``sparse``
    retrievers) cannot come from a file."""
    for where, options, target in _component_options(config, source, lines):
        allowed = _option_defaults(target, skip=("self", "client", "dense", "sparse"))
        if allowed is None:
            continue
        for name, value in options.items():
            path = (*where, name)
            dotted = ".".join(map(str, path))
            if name not in allowed:
                close = difflib.get_close_matches(name, sorted(allowed), n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise ConfigError(
                    f"{_at(source, lines, path)}: unknown key {dotted!r} for "
                    f"{target.__name__}; {hint}known: {', '.join(sorted(allowed)) or '(none)'}"
                )
            want = _value_problem(value, allowed[name])
            if want is not None:
                raise ConfigError(
                    f"{_at(source, lines, path)}: {dotted}: expected {want} (default "
                    f"{json.dumps(allowed[name])}), got {json.dumps(value, default=str)}"
                )
    _check_values(config, source, lines)


def _check_values(config: SweepConfig, source: str, lines: Mapping[KeyPath, int] | None) -> None:
    """Build the cheap built-in components from the file's options so that a value one
    refuses (``k1: -1``, ``fusion: rff``, ``max_sentences: 0``) is an error at the option's
    line, ``file:line: retriever.options.k1: ...``. Cheap: a generator loads no model before
    its first answer, BM25 indexes nothing yet; a hybrid's options are checked over two BM25
    stand-ins, as its dense part would load an encoder: its ``encoder``, when named, must be
    one of ``ENCODERS``."""
    from ragjudge.generate import GENERATORS, build_generator
    from ragjudge.retrieval.bm25 import BM25Retriever
    from ragjudge.retrieval.dense import ENCODERS
    from ragjudge.retrieval.hybrid import HybridRetriever

    where: KeyPath = ("retriever", "options")
    opts = dict(config.retriever.options)
    dense: dict[str, list[tuple[KeyPath, dict[str, Any]]]] = {
        "dense": [((), opts)],
        "hybrid": [((), opts), (("dense",), opts.get("dense") or {})],
    }
    for sub, part in dense.get(config.retriever.kind, []):
        encoder = part.get("encoder")
        if isinstance(encoder, str) and encoder not in ENCODERS:
            key: KeyPath = (*where, *sub, "encoder")
            raise ConfigError(
                f"{_at(source, lines, key)}: {'.'.join(map(str, key))}: unknown encoder "
                f"{encoder!r}; known: {', '.join(ENCODERS)}"
            )
    builds: list[tuple[KeyPath, dict[str, Any], Any]] = []
    if config.retriever.kind == "bm25":
        builds.append((where, opts, lambda: BM25Retriever(**opts)))
    elif config.retriever.kind == "hybrid":
        bm25 = dict(opts.pop("bm25", None) or {})
        fused = {k: v for k, v in opts.items() if k not in ("dense", "encoder")}
        builds.append(((*where, "bm25"), bm25, lambda: BM25Retriever(**bm25)))
        builds.append(
            (where, fused, lambda: HybridRetriever(BM25Retriever(), BM25Retriever(), **fused))
        )
    kind, gen_opts = config.generator.kind, dict(config.generator.options)
    if kind in GENERATORS and gen_opts:
        builds.append(
            (("generator", "options"), gen_opts, lambda: build_generator(kind, **gen_opts))
        )
    for at, options, build in builds:
        try:
            build()
        except ConfigError as exc:
            msg = str(exc)
            name = next((n for n in options if re.search(rf"\b{re.escape(n)}\b", msg)), None)
            key = (*at, name) if name else at
            if name:
                msg = re.sub(rf"^generator {re.escape(name)} ", "", msg)
            raise ConfigError(
                f"{_at(source, lines, key, at)}: {'.'.join(map(str, key))}: {msg}"
            ) from None


def check_judge_names(
    config: SweepConfig, source: str, lines: Mapping[KeyPath, int] | None = None
) -> None:
    """Refuse a name in ``judges.names`` that names no judge registered on the config's backend
    (nor an import path), at its line: a config file names judges only through the registry
    (``ragjudge.sweep()`` passes judge objects, registered under their own backend)."""
    from ragjudge.adapters import is_import_path
    from ragjudge.judges.registry import available, registered

    for i, name in enumerate(config.judges.names):
        if is_import_path(name) or registered(name, config.judges.backend):
            continue  # an import path is checked when it is imported
        known = available()
        line = (lines or {}).get(("judges", "names", i))
        at = f"{source}{f':{line}' if line else ''}"
        close = [] if name in known else difflib.get_close_matches(name, sorted(known), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        has = f"it has backends {', '.join(known[name])}; " if name in known else ""
        raise ConfigError(
            f"{at}: judges.names: no judge {name!r} on backend "
            f"{config.judges.backend!r}; {has}{hint}known: {', '.join(sorted(known))}"
        )


def check_judge_options(
    config: SweepConfig, source: str, lines: Mapping[KeyPath, int] | None = None
) -> None:
    """Refuse ``judges.options`` that a registered judge of the config's backend would not
    take (an unknown option, a value out of range: ``registry.option_problem``), at the
    option's line, before anything is built."""
    from ragjudge.adapters import is_import_path
    from ragjudge.judges.registry import option_problem

    options = dict(config.judges.options)
    if not options:
        return
    for name in config.judges.names:
        got = None if is_import_path(name) else option_problem(name, config.judges.backend, options)
        if got is None:
            continue
        key, why = got
        top = key.split(".")[0] if key else None  # "platt.0": the line of platt
        at: KeyPath = ("judges", "options", top) if top in options else ("judges", "options")
        line = (lines or {}).get(at) or (lines or {}).get(("judges", "options"))
        where = "judges.options" + (f".{key}" if key else "")
        raise ConfigError(f"{source}{f':{line}' if line else ''}: {where}: {why}")


def parse_config(
    data: Any,
    *,
    base_dir: Path | None = None,
    source: str = "config",
    lines: Mapping[KeyPath, int] | None = None,
) -> SweepConfig:
    """Validate a config mapping; relative dataset paths resolve against ``base_dir``.
    ``lines`` (from ``ragjudge.io.yamlfile``) lets errors name ``source:line``."""
    data = expect_mapping(data, source, SweepConfig.model_fields)
    try:
        config = SweepConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_validation(exc, source, lines)) from None
    check_options(config, source, lines)
    raw = config.dataset.path
    path = None
    if raw.startswith(BUNDLED):
        try:
            path = str(bundled_dataset(raw.removeprefix(BUNDLED)))
        except ConfigError as exc:
            raise ConfigError(f"{source}: dataset.path: {exc}") from None
    elif base_dir is not None and not Path(raw).is_absolute():
        path = str((base_dir / raw).resolve())
    if path is not None:
        config = config.model_copy(
            update={"dataset": config.dataset.model_copy(update={"path": path})}
        )
    if lines is not None:
        config._origin = (source, dict(lines))
    return config


def stored_config(manifest: RunManifest) -> SweepConfig:
    """The configuration a sweep run was started with (its manifest's ``config["full"]``),
    validated as a config file is: a run that holds none, or whose config this version no
    longer accepts (a run stored by another version), is a ``ConfigError`` naming the run.
    The stored ``judges.names`` are the names the config gave (an import path stays one); a
    run stored before they were lists every judge that ran, the criteria judges too, which
    are given back to ``judges.criteria`` alone, as the run was configured."""
    full = manifest.config.get("full")
    if full is None:
        raise ConfigError(f"run {manifest.run_id}: its manifest holds no sweep configuration")
    judges = full.get("judges")
    if isinstance(judges, dict) and isinstance(judges.get("criteria"), dict):
        names = [n for n in judges.get("names") or [] if n not in judges["criteria"]]
        full = full | {"judges": judges | {"names": names}}
    return parse_config(full, source=f"run {manifest.run_id} (its stored configuration)")


def check_dataset_path(config: SweepConfig) -> None:
    """Refuse a ``dataset.path`` that names nothing to read (a ``beir`` folder that is no
    folder, a ``squad`` file that is no file) at the key's line (``SweepConfig.where``); what
    the folder or file holds is checked when it is read, at its own file and line."""
    ds = config.dataset
    p = Path(ds.path)
    want = "folder" if ds.format == "beir" else "file"
    if p.is_dir() if want == "folder" else p.is_file():
        return
    if p.exists():
        why = f"{p} is not a {want} (format {ds.format} reads a {want})"
    else:
        why = f"{want} not found: {p}"
    raise ConfigError(f"{config.where('dataset', 'path')}{why}")


def check_import_paths(config: SweepConfig) -> None:
    """Import each ``package.module:object`` the config names (``retriever.kind``,
    ``generator.kind``, ``judges.names``; ``ragjudge.adapters.load_object``) and adapt a
    retriever's or generator's (``as_retriever``, ``as_generator``), so that a module or
    object that is not there, or one that is no retriever or generator, is an error at the
    key's line (``SweepConfig.where``) before anything is built."""
    from ragjudge.adapters import as_generator, as_retriever, is_import_path, load_object

    named: list[tuple[KeyPath, str, Any]] = [
        (("retriever", "kind"), config.retriever.kind, as_retriever),
        (("generator", "kind"), config.generator.kind, as_generator),
        *((("judges", "names", i), n, None) for i, n in enumerate(config.judges.names)),
    ]
    for key, value, adapt in named:
        if not is_import_path(value):
            continue
        try:
            obj = load_object(value)
            if adapt is not None:
                adapt(obj)
        except ConfigError as exc:
            raise ConfigError(f"{config.where(*key)}{exc}") from None


def load_config(path: str | Path) -> SweepConfig:
    """Read and validate a sweep YAML file (duplicate keys refused, errors at file:line): an
    empty file, the data set path and the import paths it names are checked too."""
    from ragjudge.io.yamlfile import load_yaml

    p = Path(path)
    data, lines = load_yaml(p, "sweep config")
    config = parse_config(data, base_dir=p.resolve().parent, source=str(p), lines=lines)
    check_dataset_path(config)
    check_judge_names(config, str(p), lines)
    check_judge_options(config, str(p), lines)
    check_import_paths(config)
    return config
