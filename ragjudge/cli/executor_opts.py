"""The ``--executor``, ``--ray-address``, ``--workers`` (and ``--verbose``) options that
``sweep``, ``demo``, ``judge`` and ``retrieval`` share (``ragjudge.sweep.config.ExecutorConfig``;
``docs/scale.md``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from ragjudge.errors import ConfigError

if TYPE_CHECKING:
    from ragjudge.sweep.config import ExecutorConfig

EXECUTOR = typer.Option(
    None,
    "--executor",
    help="inprocess (default) | ray: run the batch stages on Ray workers (ragjudge[ray]).",
)
ADDRESS = typer.Option(
    None,
    "--ray-address",
    help="Ray cluster to join: auto | HOST:6379 | ray://HOST:10001 (default: a new local Ray).",
)
WORKERS = typer.Option(None, "--workers", min=1, help="Ray worker actors (default 2).")
VERBOSE = typer.Option(
    False, "--verbose", help="Also show Ray's own warnings and log lines (hidden by default)."
)


def set_verbose(verbose: bool) -> None:
    """``--verbose``: the ``ragjudge`` logger at INFO (``distributed.cluster.connect`` then
    lets Ray's own messages through)."""
    if verbose:
        import logging

        logging.getLogger("ragjudge").setLevel(logging.INFO)


def executor_config(
    kind: str | None,
    address: str | None,
    workers: int | None,
    base: ExecutorConfig | None = None,
) -> ExecutorConfig:
    """``base`` (default: in process) with the options given on the command line."""
    from pydantic import ValidationError

    from ragjudge.sweep.config import ExecutorConfig

    given = {"kind": kind, "address": address, "num_workers": workers}
    values = (base or ExecutorConfig()).model_dump()
    values.update({k: v for k, v in given.items() if v is not None})
    try:
        chosen = ExecutorConfig.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(f"--executor {kind}: {exc.errors()[0]['msg']}") from None
    if chosen.kind == "inprocess" and (address is not None or workers is not None):
        raise ConfigError("--ray-address and --workers need --executor ray")
    return chosen
