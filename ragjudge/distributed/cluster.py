"""Joining a Ray cluster, the pool of worker actors, and the actors every worker shares.

``connect(address, num_workers)``: join ``address`` (``auto``: the running cluster;
``HOST:PORT``: a head node; ``ray://HOST:10001``: Ray Client), or start a new local Ray on this
machine when it is None. A
process that already called ``ray.init`` keeps its session.

``WorkerPool`` runs batches on ``num_workers`` worker actors (``workers.Worker``, one CPU each),
at most two batches in flight per worker, and yields each result as it arrives. A worker that
dies is restarted by Ray (its constructor arguments are kept alive by the pool) and the batch
it was running is retried there: batches are pure (they return rows, the driver stores them
by key), so a retry costs time, never a duplicate row, and its LLM calls hit the shared cache.

``GateActor`` holds the endpoint's ``PacedGate`` for the whole cluster: every worker's client
asks it before each request (``ClusterGate``), so N workers together keep the configured
``rpm`` / ``tpm``, and a 429 seen by one worker pauses all of them. ``CacheActor`` serves the
driver's LLM cache (its file, or the database of its ``RAGJUDGE_LLM_CACHE_URL``) to every
worker (``ClusterCache``): a call cached by any executor, on any worker, is never paid again.
"""

from __future__ import annotations

import logging
import math
import os
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast  # cast: mypy sees a @ray.remote class as the plain class

from ragjudge.distributed import require_ray
from ragjudge.errors import ConfigError, RagjudgeError
from ragjudge.llm.cache import CachedCall
from ragjudge.llm.limiter import PacedGate, wait_for_slot
from ragjudge.llm.opencache import cache_location, open_cache
from ragjudge.llm.settings import LLMSettings, endpoint_env

ray = require_ray()

IN_FLIGHT_PER_WORKER = 2
BATCH_MAX = 64
"""Items per batch at most: a retried batch repeats little, the driver stores often."""


class WorkerDiedError(RagjudgeError):
    """A worker actor died and Ray could not restart it; the message names the cause."""


REACH_TIMEOUT = 5.0
"""Seconds to wait for a TCP connection to a cluster's address before calling it unreachable
(``ray.init`` itself waits minutes for a port that does not answer)."""


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of ``HOST:PORT`` or ``ray://HOST:PORT`` (``[::1]:PORT`` too), else None."""
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or "/" in host:
        return None
    return host, int(port)


def _reach(address: str) -> None:
    """A ``ConfigError`` naming ``address`` when it is not ``auto``, ``local``, ``HOST:PORT``
    or ``ray://HOST:PORT``, or when nothing accepts a TCP connection at its host and port
    within ``REACH_TIMEOUT`` seconds."""
    import socket

    if address in ("auto", "local"):
        return
    where = _host_port(address)
    if where is None:
        raise ConfigError(
            f"Ray address {address!r}: expected auto, HOST:PORT (the head node's GCS port, "
            "6379 by default) or ray://HOST:PORT (Ray Client, 10001 by default)"
        )
    try:
        socket.create_connection(where, timeout=REACH_TIMEOUT).close()
    except OSError as exc:
        raise ConfigError(
            f"Ray address {address!r}: nothing answers at {where[0]}:{where[1]} "
            f"({exc.strerror or type(exc).__name__}): is the head node running "
            "(`ray start --head`) and is this its port?"
        ) from None


def _join_failure(address: str | None, exc: Exception) -> ConfigError:
    """The one line a failed ``ray.init(address)`` is turned into."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if address == "auto" and isinstance(exc, ConnectionError):
        return ConfigError(
            "Ray address 'auto': no running Ray cluster on this machine; start one "
            "(`ray start --head`) or give no address to start a local Ray for this run"
        )
    if "ray[client]" in first:
        return ConfigError(
            f"Ray address {address!r}: Ray Client (ray://) needs grpcio, which the ray extra "
            "installs: pip install 'ragjudge[ray]'"
        )
    if address is not None and address.startswith("ray://") and "timeout" in first.lower():
        return ConfigError(
            f"Ray address {address!r}: the Ray Client server did not accept the connection "
            f"({first}); a cluster started by `ray start` asks for its token: set "
            "RAY_AUTH_MODE=token here (the token is read from ~/.ray/auth_token or "
            "RAY_AUTH_TOKEN)"
        )
    return ConfigError(f"cannot join the Ray cluster at {address!r}: {type(exc).__name__}: {first}")


def connect(address: str | None, num_workers: int) -> None:
    """Join the cluster at ``address``, or start a local Ray with at least ``num_workers``
    CPUs when it is None (a new one, even when a cluster started by ``ray start`` runs on this
    machine: ``ray.init`` would join that one); no dashboard. Ray's own messages (its Python
    warnings and its workers' log lines) are shown only when the ``ragjudge`` logger is at INFO
    (``--verbose``): ragjudge says itself what a user needs to know. An address that is
    malformed, that nothing answers at (``_reach``), or that ``ray.init`` fails to join is one
    ``ConfigError`` line naming it (``_join_failure``)."""
    if ray.is_initialized():
        return
    verbose = logging.getLogger("ragjudge").isEnabledFor(logging.INFO)
    level = logging.INFO if verbose else logging.ERROR
    logging.getLogger("ray").setLevel(level)
    options: dict[str, Any] = {"logging_level": level, "log_to_driver": verbose}
    if address is None:  # "local": ray.init(None) would join a cluster found on this machine
        options |= {"num_cpus": max(os.cpu_count() or 1, num_workers), "include_dashboard": False}
    else:
        _reach(address)
    try:
        ray.init(address=address or "local", **options)
    except Exception as exc:
        raise _join_failure(address, exc) from None


@ray.remote(num_cpus=0)
class GateActor:
    """The cluster's ``PacedGate`` (one per endpoint and run)."""

    def __init__(self, rpm: int | None, tpm: int | None) -> None:
        self.gate = PacedGate(rpm, tpm, clock=time.time)

    def reserve(self, tokens: int) -> tuple[float, float]:
        """The slot's wall-clock start, and the seconds it takes up."""
        return self.gate.reserve(tokens), self.gate.length(tokens)

    def hold(self, seconds: float) -> None:
        self.gate.hold(seconds)


class ClusterGate:
    """A ``RateGate`` that asks the cluster's ``GateActor`` (slots in wall-clock time: the
    nodes' clocks are assumed synchronised, as NTP keeps them, to well under a slot)."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    async def wait(self, tokens: int) -> None:
        async def reserve() -> tuple[float, float]:
            start, length = await self.actor.reserve.remote(tokens)
            return float(start), float(length)

        await wait_for_slot(reserve, time.time)

    async def pause(self, seconds: float) -> None:
        await self.actor.hold.remote(seconds)


@ray.remote(num_cpus=0)
class CacheActor:
    """The driver's LLM cache (``open_cache``: its file, or its ``RAGJUDGE_LLM_CACHE_URL``),
    served to the workers (runs on the driver's node)."""

    def __init__(self, where: str) -> None:
        self.cache = open_cache(where)

    def get(self, key: str) -> CachedCall | None:
        return self.cache.get(key)

    def put(self, key: str, model: str, prompt: str, call: CachedCall) -> None:
        self.cache.put(key, model=model, prompt=prompt, call=call)


class ClusterCache:
    """A ``CallCache`` backed by the driver's cache through ``CacheActor``."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def get(self, key: str) -> CachedCall | None:
        hit: CachedCall | None = ray.get(self.actor.get.remote(key))
        return hit

    async def aget(self, key: str) -> CachedCall | None:
        """The actor's answer awaited (a Ray object reference is awaitable), not waited for:
        the worker's event loop keeps turning meanwhile."""
        hit: CachedCall | None = await self.actor.get.remote(key)
        return hit

    def put(self, key: str, *, model: str, prompt: str, call: CachedCall) -> None:
        ray.get(self.actor.put.remote(key, model, prompt, call))


def _on_this_node() -> Any:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)


def shared_llm(num_workers: int, uses_llm: bool) -> tuple[dict[str, str], Any, Any]:
    """What the workers need to call the endpoint together: the LLM variables (each worker's
    share of ``max_concurrency``), the cluster's gate (None without ``rpm``/``tpm``) and the
    driver's cache. ``({}, None, None)`` when nothing calls an LLM."""
    if not uses_llm:
        return {}, None, None
    settings = LLMSettings.from_env()
    env = endpoint_env()
    env["RAGJUDGE_MAX_CONCURRENCY"] = str(math.ceil(settings.max_concurrency / num_workers))
    gate = None
    if settings.rpm is not None or settings.tpm is not None:
        gate = ClusterGate(cast(Any, GateActor).remote(settings.rpm, settings.tpm))
    actor = cast(Any, CacheActor).options(scheduling_strategy=_on_this_node())
    cache = ClusterCache(actor.remote(cache_location()))
    return env, gate, cache


def pinned_env() -> dict[str, str]:
    """What every worker takes from the driver, whatever the run calls: its ``RAGJUDGE_HOME``
    (on the driver's machine the workers then share its embedding caches) and the offline
    judges' encoder precision, resolved here (``embedding.judge_precision``), so one run has
    one precision whatever each worker's CPU has."""
    from ragjudge.embedding import PRECISION_ENV, judge_precision
    from ragjudge.home import home

    return {"RAGJUDGE_HOME": str(home().resolve()), PRECISION_ENV: judge_precision()}


class WorkerPool:
    """``num_workers`` worker actors, each building its parts once with ``build()`` (a
    picklable factory of ``workers.Parts``) and holding ``documents`` for retrieval and
    generation; ``concurrency`` items in flight across the pool (split over the workers).
    Workers get the driver's LLM variables and ``pinned_env()``."""

    def __init__(
        self,
        build: Callable[[], Any],
        num_workers: int,
        *,
        uses_llm: bool,
        concurrency: int,
        documents: Sequence[Any] = (),
    ) -> None:
        from ragjudge.distributed.workers import Worker

        env, gate, cache = shared_llm(num_workers, uses_llm)
        for name, value in pinned_env().items():
            env.setdefault(name, value)
        self.num_workers = num_workers
        self.name = f"ragjudge-worker-{uuid.uuid4().hex[:8]}"
        # Kept referenced for the pool's life: a restarted worker builds its parts from it
        # again on its next call (``Worker``).
        self._shared = [ray.put((build, list(documents), gate, cache))]
        per_worker = math.ceil(concurrency / num_workers)
        self.actors = [
            cast(Any, Worker).options(name=f"{self.name}-{i}").remote(env, per_worker)
            for i in range(num_workers)
        ]
        self._support = (gate, cache)

    def run(
        self,
        method: str,
        batches: Sequence[tuple[Any, ...]],
        before: Callable[[int], None] | None = None,
    ) -> Iterator[tuple[int, Any]]:
        """``(index, result)`` of ``worker.method(shared, *batch)`` for each batch, as each
        finishes. ``before(i)`` runs before batch ``i`` is sent; if it raises, nothing more is
        sent, the batches in flight are still yielded, then the exception is re-raised. A batch
        that raised a ``RagjudgeError`` on its worker (e.g. ``UserCodeError``, whose message
        names where the user's code raised) raises it here as it is, one line, not wrapped in
        Ray's report of the worker's traceback."""
        todo = deque(range(len(batches)))
        slots = deque(a for a in self.actors for _ in range(IN_FLIGHT_PER_WORKER))
        pending: dict[Any, tuple[int, Any]] = {}
        stop: BaseException | None = None
        while pending or (todo and stop is None):
            while todo and slots and stop is None:
                i = todo[0]
                try:
                    if before is not None:
                        before(i)
                except Exception as exc:
                    stop = exc
                    break
                todo.popleft()
                actor = slots.popleft()
                pending[getattr(actor, method).remote(self._shared, *batches[i])] = (i, actor)
            if not pending:
                break
            done, _ = ray.wait(list(pending), num_returns=1)
            i, actor = pending.pop(done[0])
            slots.append(actor)
            try:
                result = ray.get(done[0])
            except ray.exceptions.RayActorError as exc:
                raise WorkerDiedError(f"a Ray worker died and was not restarted: {exc}") from None
            except ray.exceptions.RayTaskError as exc:
                if isinstance(exc.cause, RagjudgeError):
                    raise exc.cause from None
                raise
            yield i, result
        if stop is not None:
            raise stop

    def close(self) -> None:
        """End the workers and the actors they shared."""
        shared = [s.actor for s in self._support if s is not None]
        for actor in [*self.actors, *shared]:
            ray.kill(actor)
        self.actors = []


def batches_of(items: Sequence[Any], num_workers: int) -> list[list[Any]]:
    """``items`` cut into batches: about four per worker, at most ``BATCH_MAX`` items each."""
    if not items:
        return []
    size = max(1, min(BATCH_MAX, math.ceil(len(items) / (num_workers * 4))))
    return [list(items[i : i + size]) for i in range(0, len(items), size)]
