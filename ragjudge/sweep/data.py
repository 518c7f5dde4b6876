"""The test set a sweep config names, cut to its ``limit`` / ``sample``, and the check of the
config's ks against it."""

from __future__ import annotations

from ragjudge.errors import ConfigError
from ragjudge.schema import TestSet
from ragjudge.sweep.config import SweepConfig


def load_dataset(config: SweepConfig) -> TestSet:
    """The configured test set, cut to ``limit`` / ``sample`` cases."""
    import random

    from ragjudge.io import load_testset
    from ragjudge.io.squad import load_squad

    ds = config.dataset
    ts = load_squad(ds.path) if ds.format == "squad" else load_testset(ds.path, split=ds.split)
    cases = ts.cases
    if ds.sample is not None and ds.sample < len(cases):
        keep = set(random.Random(config.seed).sample(range(len(cases)), ds.sample))
        cases = [c for i, c in enumerate(cases) if i in keep]
    if ds.limit is not None:
        cases = cases[: ds.limit]
    ts = ts.model_copy(update={"cases": cases})
    if not ts.cases:
        raise ConfigError(f"data set {config.dataset.path} has no test cases")
    return ts


def check_ks(config: SweepConfig, testset: TestSet) -> None:
    """k above the number of retrievable documents (or a reranker depth) is a config error."""
    n_docs = len(testset.documents)
    if n_docs == 0:
        ds = config.dataset
        where = ds.path if ds.format == "squad" else f"{ds.path}/corpus.jsonl"
        raise ConfigError(f"{where}: the corpus is empty: there is no document to retrieve")
    if config.k_max > n_docs:
        at = config.where("ks", config.ks.index(config.k_max))
        raise ConfigError(
            f"{at}k = {config.k_max} is above the retrievable count: the corpus has {n_docs} "
            f"documents; use ks <= {n_docs}"
        )
    for r in config.rerankers:
        if r.spec == "prune" and r.depth < config.k_max:
            raise ConfigError(
                f"the prune stage keeps only depth = {r.depth} documents, fewer than the "
                f"largest k = {config.k_max}; raise its depth to at least {config.k_max}"
            )
