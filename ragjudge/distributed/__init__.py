"""Ray as the second executor: the batch stages of a sweep, ``ragjudge judge`` and
``ragjudge retrieval`` on a Ray cluster (the ``ragjudge[ray]`` extra; ``docs/scale.md``).

- ``cluster``: joining a cluster (``connect``), the worker pool that batches go to, and the
  two actors every worker shares: the endpoint's rate gate and the driver's LLM cache;
- ``workers``: the worker actor (the retriever, generator and judges built once per worker);
- ``encode``: corpus encoding on a pool of encoder actors into the content-hash vector cache;
- ``executor``: ``RayExecutor``, the ``ragjudge.protocols.Executor`` of a sweep on Ray;
- ``jobs``: ``ragjudge judge`` and ``ragjudge retrieval`` on Ray.

Workers compute and return; only the driver (the process that ran the command) writes the
run store, by its keys, so a retried batch never duplicates a row. This package is the only
one that imports Ray, and only once a Ray executor is asked for (``require_ray``): the core
package imports and runs without it.
"""

from __future__ import annotations

from typing import Any

from ragjudge.errors import ConfigError

INSTALL_HINT = "pip install 'ragjudge[ray]', or use the in-process executor"


def require_ray() -> Any:
    """The ``ray`` module, or a ``ConfigError`` saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(f"the ray executor needs Ray ({exc}): {INSTALL_HINT}") from None
    return ray
