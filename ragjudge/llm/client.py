"""``LLMClient``: every LLM call ragjudge makes goes through it.

One logical call = cache lookup, then HTTP attempts (retried with exponential back-off and
jitter on 429, 5xx, timeouts and connection errors; ``Retry-After`` honoured; each attempt in
the ledger), inside the endpoint's adaptive concurrency limit and its request and token pace
(``RateGate``); for structured calls strict validation and at most one repair call. Provider
failures never raise: the ``LLMResult`` carries a typed ``LLMError``. Only configuration
mistakes raise (``ConfigError``), when the client is built.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from pydantic import BaseModel
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from ragjudge.llm import modes
from ragjudge.llm import structured as so
from ragjudge.llm.backend import Backend, BackendError, Completion
from ragjudge.llm.cache import AwaitableGet, CachedCall, CallCache, NonBlockingPut, cache_key
from ragjudge.llm.ledger import EntryKind, Ledger, LedgerEntry, PriceTable, str_tags
from ragjudge.llm.limiter import AdaptiveLimiter, gate_for, limiter_for
from ragjudge.llm.opencache import default_cache, open_cache
from ragjudge.llm.settings import LLMSettings, redact
from ragjudge.llm.tokens import estimate_tokens, text_tokens
from ragjudge.llm.types import PREFLIGHT, TEMPLATE_HEADER, ErrorKind, LLMError, LLMResult
from ragjudge.schema import PromptRef, TokenUsage

T = TypeVar("T", bound=BaseModel)


class _Outcome:
    """What the attempts of one request produced."""

    def __init__(self) -> None:
        self.completion: Completion | None = None
        self.error: BackendError | None = None
        self.attempts = 0
        self.server_errors = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.estimated = False


class _Writes:
    """The cache writes of one event loop. A write the cache can commit at once without
    waiting (``NonBlockingPut.put_nowait``) is committed on the loop; the others in a worker
    thread in batches: a write joins the batch being collected and its call returns once that
    batch is committed (each entry still its own ``put``). One thread hop per batch instead
    of one per call; while a batch commits, the next one collects."""

    def __init__(self, cache: CallCache) -> None:
        self.cache = cache
        self.nowait = cache.put_nowait if isinstance(cache, NonBlockingPut) else None
        self.pending: list[tuple[str, str, str, CachedCall, asyncio.Future[None]]] = []
        self.busy: asyncio.Task[None] | None = None

    async def put(self, key: str, *, model: str, prompt: str, call: CachedCall) -> None:
        if self.nowait is not None and self.nowait(key, model=model, prompt=prompt, call=call):
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self.pending.append((key, model, prompt, call, done))
        if self.busy is None:
            self.busy = loop.create_task(self._drain())
        await done

    async def _drain(self) -> None:
        try:
            while self.pending:
                batch, self.pending = self.pending, []
                errors = await asyncio.to_thread(self._commit, batch)
                for (*_, done), error in zip(batch, errors, strict=True):
                    if done.done():
                        continue
                    if error is None:
                        done.set_result(None)
                    else:
                        done.set_exception(error)
        finally:
            self.busy = None

    def _commit(
        self, batch: list[tuple[str, str, str, CachedCall, asyncio.Future[None]]]
    ) -> list[Exception | None]:
        errors: list[Exception | None] = []
        for key, model, prompt, call, _ in batch:
            try:
                self.cache.put(key, model=model, prompt=prompt, call=call)
                errors.append(None)
            except Exception as exc:  # the call that wrote it gets the error, as before
                errors.append(exc)
        return errors


class LLMClient:
    """Async client of one OpenAI-compatible endpoint (or any ``Backend``)."""

    def __init__(
        self,
        settings: LLMSettings | None = None,
        *,
        ledger: Ledger | None = None,
        cache: bool | str | Path | CallCache | None = True,
        prices: PriceTable | None = None,
        backend: Backend | None = None,
    ) -> None:
        self.settings = settings or LLMSettings.from_env()
        if backend is None:
            from ragjudge.llm.openai_backend import OpenAIBackend

            backend = OpenAIBackend(self.settings)
        self.backend: Backend = backend
        self.ledger = ledger if ledger is not None else Ledger(prices)
        if cache is True:
            self.cache: CallCache | None = default_cache()
        elif cache is False or cache is None:
            self.cache = None
        elif isinstance(cache, str | Path):
            self.cache = open_cache(cache)
        else:
            self.cache = cache
        self._aget = self.cache.aget if isinstance(self.cache, AwaitableGet) else None
        self._fatal: BackendError | None = None
        self._limit: tuple[asyncio.AbstractEventLoop | None, AdaptiveLimiter | None] = (None, None)
        self._flights: tuple[
            asyncio.AbstractEventLoop | None,
            dict[str, asyncio.Future[LLMResult[Any] | None]],
        ] = (None, {})
        self._writes: tuple[asyncio.AbstractEventLoop | None, _Writes | None] = (None, None)

    @classmethod
    def from_env(
        cls,
        *,
        ledger: Ledger | None = None,
        cache: bool | str | Path | CallCache | None = True,
        prices: PriceTable | None = None,
        **overrides: Any,
    ) -> LLMClient:
        return cls(LLMSettings.from_env(**overrides), ledger=ledger, cache=cache, prices=prices)

    @classmethod
    def from_langchain(
        cls,
        chat_model: Any,
        *,
        settings: LLMSettings | None = None,
        ledger: Ledger | None = None,
        cache: bool | str | Path | CallCache | None = True,
        prices: PriceTable | None = None,
    ) -> LLMClient:
        """A client whose backend is a LangChain chat model (``BaseChatModel``); structured
        output is prompt-only."""
        from ragjudge.llm.langchain_backend import LangChainBackend

        backend = LangChainBackend(chat_model)
        base = settings or LLMSettings(model=backend.model)
        base = base.model_copy(update={"structured_mode": "prompt", "model": backend.model})
        return cls(base, ledger=ledger, cache=cache, prices=prices, backend=backend)

    @property
    def model(self) -> str:
        return self.backend.model

    @property
    def endpoint(self) -> str:
        return self.backend.endpoint

    # ------------------------------------------------------------------ public calls

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        prompt: PromptRef,
        tags: Mapping[str, Any] | None = None,
        n: int = 1,
        **sampling: Any,
    ) -> LLMResult[str]:
        """Plain completion; ``value`` is the first choice's text, ``texts`` all ``n``."""
        started = time.perf_counter()
        call_id, label, tag = uuid.uuid4().hex[:16], _label(prompt), str_tags(tags)
        params = self._sampling(n, sampling)
        key = self._key(params, label, messages, None)
        hit = await self._lookup(key)
        if hit is not None and len(hit.texts) >= n:
            return self._cached(hit, hit.texts[0], call_id, label, tag, started)
        return await self._single_flight(
            key,
            lambda: self._chat_miss(messages, key, params, n, call_id, label, tag, started),
            call_id,
            label,
            tag,
            started,
        )

    async def _chat_miss(
        self,
        messages: list[dict[str, Any]],
        key: str,
        params: dict[str, Any],
        n: int,
        call_id: str,
        label: str,
        tag: dict[str, str],
        started: float,
    ) -> LLMResult[Any]:
        early = self._precheck(messages, params)
        if early is not None:
            return self._failed(early, _Outcome(), call_id, label, tag, started)
        out = _Outcome()
        texts: list[str] = []
        finish: list[str | None] = []
        refusal: str | None = None
        while len(texts) < n:
            want = dict(params, n=n - len(texts))
            got = await self._request(messages, want, None, call_id, label, tag, False)
            out = _merge(out, got)
            if got.completion is None:
                return self._failed(got.error, out, call_id, label, tag, started)
            texts += got.completion.texts
            finish += got.completion.finish_reasons
            refusal = refusal or got.completion.refusal
        if refusal is not None or "content_filter" in finish:
            err = LLMError(
                kind="refused", message=f"the model refused: {refusal or 'content filter'}"
            )
            return self._finish(None, texts, err, out, call_id, label, tag, started, {})
        if self.cache is not None:
            await self._store(key, label, _cached_call(texts[:n], out))
        meta = {"finish_reasons": finish[:n], "truncated": "length" in finish[:n]}
        return self._finish(texts[0], texts[:n], None, out, call_id, label, tag, started, meta)

    async def structured(
        self,
        messages: list[dict[str, Any]],
        schema: type[T],
        *,
        prompt: PromptRef,
        tags: Mapping[str, Any] | None = None,
        validate: Callable[[T], str | None] | None = None,
        **sampling: Any,
    ) -> LLMResult[T]:
        """A reply validated strictly against ``schema`` and then by ``validate`` (an error
        message or None); a failure of either is a parse failure, answered by at most one
        repair call."""
        started = time.perf_counter()
        call_id, label, tag = uuid.uuid4().hex[:16], _label(prompt), str_tags(tags)
        sampling.pop("n", None)
        params = self._sampling(1, sampling)
        key = self._key(params, label, messages, so.schema_json(schema))
        hit = await self._lookup(key)
        if hit is not None and hit.texts:
            value, _ = so.parse(hit.texts[0], schema, validate)
            if value is not None:
                return self._cached(hit, value, call_id, label, tag, started)
        return await self._single_flight(
            key,
            lambda: self._structured_miss(
                messages, schema, validate, key, params, call_id, label, tag, started
            ),
            call_id,
            label,
            tag,
            started,
        )

    async def _structured_miss(
        self,
        messages: list[dict[str, Any]],
        schema: type[T],
        validate: Callable[[T], str | None] | None,
        key: str,
        params: dict[str, Any],
        call_id: str,
        label: str,
        tag: dict[str, str],
        started: float,
    ) -> LLMResult[Any]:
        early = self._precheck(messages, params)
        if early is not None:
            return self._failed(early, _Outcome(), call_id, label, tag, started)
        memory = modes.memory()
        mkey = self.mode_key
        auto = self.settings.structured_mode == "auto"
        mode = memory.get(mkey).mode if auto else self.settings.structured_mode
        suspects: list[tuple[str, str]] = []
        out = _Outcome()
        while True:
            sent = so.with_instruction(messages, schema) if so.needs_instruction(mode) else messages
            fields = so.request_fields(schema, mode)
            probe = auto and fields is not None
            got = await self._request(sent, params, fields, call_id, label, tag, False, probe)
            out = _merge(out, got)
            err = got.error
            if err is None or fields is None or not _refuses_mode(err):
                break
            if not auto:
                err.message += (
                    f"; the endpoint does not accept structured mode {mode}: set "
                    "RAGJUDGE_STRUCTURED=auto (or json_object / tools / prompt)"
                )
                return self._failed(err, out, call_id, label, tag, started)
            # the mode is dropped only if a less constrained one then works (a 4xx or 5xx that
            # every mode gets, prompt-only too, is not about the mode); forward only, past the
            # modes already dropped, so the walk ends at prompt-only at the latest
            suspects.append((mode, err.message))
            known = memory.get(mkey).dropped
            later = so.MODES[so.MODES.index(mode) + 1 :]
            mode = next(m for m in later if m not in known or m == so.MODES[-1])
        meta: dict[str, Any] = {"mode": mode, "repaired": False}
        if got.completion is None:
            return self._failed(got.error, out, call_id, label, tag, started, meta)
        for suspect, why in suspects:
            memory.drop(mkey, suspect, f"{why} (then {mode} worked)")
        comp = got.completion
        text = comp.texts[0] if comp.texts else ""
        texts = [text]
        if comp.refusal is not None or "content_filter" in comp.finish_reasons:
            err2 = LLMError(
                kind="refused", message=f"the model refused: {comp.refusal or 'content filter'}"
            )
            return self._finish(None, texts, err2, out, call_id, label, tag, started, meta)
        value, problem = so.parse(text, schema, validate)
        if problem is not None:
            if "length" in comp.finish_reasons:
                problem += (
                    f" (the reply was cut at max_tokens={params.get('max_tokens')}; raise "
                    "RAGJUDGE_MAX_TOKENS)"
                )
            meta["repaired"] = True
            fix = so.repair_messages(sent, text, problem)
            got2 = await self._request(fix, params, fields, call_id, label, tag, True)
            out = _merge(out, got2)
            if got2.completion is None:
                return self._failed(got2.error, out, call_id, label, tag, started, meta, texts)
            text2 = got2.completion.texts[0] if got2.completion.texts else ""
            texts.append(text2)
            value, problem2 = so.parse(text2, schema, validate)
            if value is None:
                if auto and not so.conforms(text2, schema) and memory.parsed(mkey, mode, ok=False):
                    memory.drop(
                        mkey, mode, f"{modes.PARSE_STREAK} replies in a row failed to parse"
                    )
                err3 = LLMError(
                    kind="parse_error",
                    message=f"{label}: {problem}; after one repair call: {problem2}",
                )
                return self._finish(None, texts, err3, out, call_id, label, tag, started, meta)
            text = text2
        if auto:
            memory.parsed(mkey, mode, ok=True)
        if self.cache is not None:
            await self._store(key, label, _cached_call([text], out))
        return self._finish(value, texts, None, out, call_id, label, tag, started, meta)

    async def _single_flight(
        self,
        key: str,
        run: Callable[[], Awaitable[LLMResult[Any]]],
        call_id: str,
        label: str,
        tags: dict[str, str],
        started: float,
    ) -> LLMResult[Any]:
        """Identical calls in flight at the same time share one request: the first runs,
        the others wait for its result (recorded as cache hits: they cost nothing). If the
        first one is cancelled, a waiting call runs on its own."""
        loop = asyncio.get_running_loop()
        if self._flights[0] is not loop:
            self._flights = (loop, {})
        flights = self._flights[1]
        leader = flights.get(key)
        if leader is not None:
            shared = await asyncio.shield(leader)
            if shared is not None:
                return self._shared(shared, call_id, label, tags, started)
        fut: asyncio.Future[LLMResult[Any] | None] = loop.create_future()
        flights[key] = fut
        result: LLMResult[Any] | None = None
        try:
            result = await run()
            return result
        finally:
            fut.set_result(result)
            if flights.get(key) is fut:
                del flights[key]

    def _shared(
        self,
        shared: LLMResult[Any],
        call_id: str,
        label: str,
        tags: dict[str, str],
        started: float,
    ) -> LLMResult[Any]:
        ok = shared.error is None
        self._record(
            "call",
            call_id,
            tags,
            label,
            cached=ok,
            latency_s=time.perf_counter() - started,
            error_kind=None if ok else shared.error.kind if shared.error else None,
        )
        meta = {**shared.meta, "call_id": call_id, "shared_with": shared.meta.get("call_id")}
        return shared.model_copy(
            update={
                "cached": ok,
                "attempts": 0,
                "usage": TokenUsage(cached_calls=int(ok)),
                "meta": meta,
            }
        )

    async def _lookup(self, key: str) -> CachedCall | None:
        """The cached call under ``key``: awaited when the cache waits on another process
        (``AwaitableGet``: a database server, a Ray actor), else looked up here (the local file:
        microseconds, cheaper than a thread hop)."""
        if self._aget is not None:
            return await self._aget(key)
        return self.cache.get(key) if self.cache is not None else None

    async def _store(self, key: str, label: str, call: CachedCall) -> None:
        """Commit a result to the cache before the call returns: on the event loop when the
        cache can do it without waiting (an insert into the file's write-ahead log, cheaper
        than a thread hop), else in a worker thread, in batches (``_Writes``): the loop never
        waits for another process's write lock or a checkpoint's ``fsync``, since the other
        calls' responses are arriving meanwhile."""
        if self.cache is None:
            return
        loop = asyncio.get_running_loop()
        writes = self._writes[1]
        if self._writes[0] is not loop or writes is None:
            writes = _Writes(self.cache)
            self._writes = (loop, writes)
        await writes.put(key, model=self.model, prompt=label, call=call)

    # ------------------------------------------------------------------ one request

    async def _request(
        self,
        messages: list[dict[str, Any]],
        params: dict[str, Any],
        fields: dict[str, Any] | None,
        call_id: str,
        label: str,
        tags: dict[str, str],
        repair: bool,
        probe: bool = False,
        max_attempts: int | None = None,
    ) -> _Outcome:
        """HTTP attempts of one request, each in the ledger; retryable failures (429, 5xx,
        timeouts, lost connections) retried up to ``max_attempts``, except that a ``probe``
        (a structured mode ``auto`` is not sure of) gives up at the second 5xx so that the next
        mode is tried. A reply is never re-sent because of its content: that is the one repair
        call's job."""
        out = _Outcome()
        if self._fatal is not None:
            out.error = self._fatal
            return out
        s = self.settings
        limiter = self._limiter()
        gate = gate_for(self.endpoint, s.rpm, s.tpm)
        tokens = estimate_tokens(messages) + int(params.get("max_tokens") or 0)
        headers = {TEMPLATE_HEADER: label}

        async def attempt() -> Completion:
            out.attempts += 1
            t0 = time.perf_counter()
            await limiter.acquire()
            comp: Completion | None = None
            error: BackendError | None = None
            try:
                if gate is not None:
                    await gate.wait(tokens)
                self._record(
                    "sent",
                    call_id,
                    tags,
                    label,
                    repair=repair,
                )
                await self.ledger.settle()  # a stored ledger holds the request before it leaves
                comp = await self.backend.complete(
                    messages,
                    sampling=params,
                    fields=fields,
                    headers=headers,
                    timeout=s.timeout,
                )
            except BackendError as exc:
                error = exc
                if gate is not None and exc.status == 429:
                    await gate.pause(min(exc.retry_after or s.backoff_initial, s.max_retry_after))
            finally:
                await limiter.release(
                    overloaded=error is not None and error.overloaded, ok=error is None
                )
            p = c = 0
            estimated = False
            if comp is not None:
                # what is kept or shown of a reply (raw text, cache, values) never holds a
                # secret the endpoint echoed back
                comp = comp.model_copy(update={"texts": [redact(t) for t in comp.texts]})
                if comp.prompt_tokens is None or comp.completion_tokens is None:
                    estimated = True
                    p = estimate_tokens(messages)
                    c = sum(text_tokens(t) for t in comp.texts)
                else:
                    p, c = comp.prompt_tokens, comp.completion_tokens
                out.prompt_tokens += p
                out.completion_tokens += c
                out.estimated = out.estimated or estimated
            self._record(
                "attempt",
                call_id,
                tags,
                label,
                prompt_tokens=p,
                completion_tokens=c,
                estimated=estimated,
                attempts=1,
                repair=repair,
                cost_usd=self.ledger.prices.cost(self.model, p, c),
                latency_s=time.perf_counter() - t0,
                error_kind=error.kind if error else None,
                status=error.status if error else 200,
            )
            if error is not None:
                out.server_errors += (error.status or 0) >= 500
                if error.fatal:
                    self._fatal = error
                raise error
            assert comp is not None
            return comp

        # the first attempt outside tenacity (a success costs nothing more); a failure is handed
        # to tenacity as its first attempt's outcome, which decides and waits as for any other
        first: BackendError | None = None
        try:
            out.completion = await attempt()
            return out
        except BackendError as exc:
            first = exc
        try:
            async for state in AsyncRetrying(
                stop=stop_after_attempt(min(max_attempts or s.max_attempts, s.max_attempts)),
                wait=self._wait,
                retry=retry_if_exception(
                    lambda e: (
                        isinstance(e, BackendError)
                        and e.retryable
                        and not (probe and (e.status or 0) >= 500 and out.server_errors >= 2)
                    )
                ),
                reraise=True,
            ):
                with state:
                    if first is not None:
                        failed, first = first, None
                        raise failed
                    out.completion = await attempt()
        except BackendError as exc:
            out.error = exc
            if exc.retryable and out.attempts > 1:
                exc.message = f"{exc.message} (gave up after {out.attempts} attempts)"
        return out

    def _limiter(self) -> AdaptiveLimiter:
        loop = asyncio.get_running_loop()
        if self._limit[0] is not loop or self._limit[1] is None:
            s = self.settings
            lim = limiter_for(self.endpoint, s.max_concurrency, adaptive=s.adaptive)
            self._limit = (loop, lim)
            return lim
        return self._limit[1]

    def _record(
        self, kind: EntryKind, call_id: str, tags: dict[str, str], label: str, **fields: Any
    ) -> None:
        """One ledger entry of this client's model (built without validation: every field
        comes typed from this module; three entries a call made validation ~2 % of its CPU)."""
        self.ledger.record(
            LedgerEntry.model_construct(
                kind=kind, call_id=call_id, tags=tags, prompt=label, model=self.model, **fields
            )
        )

    def _wait(self, state: RetryCallState) -> float:
        s = self.settings
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, BackendError) and exc.retry_after is not None:
            return min(exc.retry_after, s.max_retry_after)
        backoff = wait_exponential_jitter(
            initial=s.backoff_initial, max=s.backoff_max, jitter=s.backoff_initial
        )
        return float(backoff(state))

    # ------------------------------------------------------------------ helpers

    def _sampling(self, n: int, overrides: Mapping[str, Any]) -> dict[str, Any]:
        s = self.settings
        out: dict[str, Any] = {
            "temperature": s.temperature,
            "seed": s.seed,
            "max_tokens": s.max_tokens,
            "n": n,
        }
        out.update(overrides)
        return out

    def _key(
        self,
        params: dict[str, Any],
        label: str,
        messages: list[dict[str, Any]],
        schema: str | None,
    ) -> str:
        return cache_key(
            model=self.model, sampling=params, prompt=label, messages=messages, schema_json=schema
        )

    @property
    def mode_key(self) -> str:
        """``<base URL>|<model>``: what learned structured modes are kept under."""
        return f"{self.endpoint}|{self.model}"

    def structured_mode(self) -> str:
        """The structured mode calls use now (``auto``: the mode learned for this endpoint
        and model, ``ragjudge.llm.modes``)."""
        if self.settings.structured_mode != "auto":
            return self.settings.structured_mode
        return modes.memory().get(self.mode_key).mode

    def _precheck(
        self, messages: list[dict[str, Any]], params: dict[str, Any]
    ) -> BackendError | None:
        window = self.settings.context_window
        if window is None:
            return None
        need = estimate_tokens(messages) + int(params.get("max_tokens") or 0)
        if need <= window:
            return None
        return BackendError(
            "context_too_long",
            f"the prompt (~{estimate_tokens(messages)} tokens) plus max_tokens "
            f"{params.get('max_tokens')} exceeds the context window of {self.model!r} "
            f"({window} tokens, RAGJUDGE_CONTEXT_WINDOW); nothing was sent: use fewer or "
            "shorter contexts, lower RAGJUDGE_MAX_TOKENS, or a model with a longer window",
        )

    def _usage(self, out: _Outcome, repaired: bool) -> TokenUsage:
        return TokenUsage(
            prompt_tokens=out.prompt_tokens,
            completion_tokens=out.completion_tokens,
            calls=1 + int(repaired),
            cost_usd=self.ledger.prices.cost(self.model, out.prompt_tokens, out.completion_tokens),
            estimated=out.estimated,
        )

    def _cached(
        self,
        hit: CachedCall,
        value: Any,
        call_id: str,
        label: str,
        tags: dict[str, str],
        started: float,
    ) -> LLMResult[Any]:
        self._record(
            "call",
            call_id,
            tags,
            label,
            cached=True,
            latency_s=time.perf_counter() - started,
        )
        return LLMResult(
            value=value,
            texts=list(hit.texts),
            usage=TokenUsage(cached_calls=1),
            cached=True,
            model=self.model,
            meta={"call_id": call_id},
        )

    def _failed(
        self,
        error: BackendError | None,
        out: _Outcome,
        call_id: str,
        label: str,
        tags: dict[str, str],
        started: float,
        meta: dict[str, Any] | None = None,
        texts: list[str] | None = None,
    ) -> LLMResult[Any]:
        kind: ErrorKind = error.kind if error is not None else "provider_error"
        message = redact(error.message) if error is not None else "no reply"
        err = LLMError(kind=kind, message=f"{label}: {message}")
        return self._finish(None, texts or [], err, out, call_id, label, tags, started, meta or {})

    def _finish(
        self,
        value: Any,
        texts: list[str],
        error: LLMError | None,
        out: _Outcome,
        call_id: str,
        label: str,
        tags: dict[str, str],
        started: float,
        meta: dict[str, Any],
    ) -> LLMResult[Any]:
        repaired = bool(meta.get("repaired"))
        usage = self._usage(out, repaired)
        self._record(
            "call",
            call_id,
            tags,
            label,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            estimated=usage.estimated,
            attempts=out.attempts,
            repair=repaired,
            cost_usd=usage.cost_usd,
            latency_s=time.perf_counter() - started,
            error_kind=error.kind if error else None,
            mode=meta.get("mode"),
        )
        return LLMResult(
            value=value,
            texts=texts,
            error=error,
            usage=usage,
            attempts=out.attempts,
            model=self.model,
            meta={"call_id": call_id, **meta},
        )

    async def preflight(self) -> LLMError | None:
        """One tiny plain request (``max_tokens=1``, no cache, at most two attempts) before a
        run spends anything: None when the endpoint answered, else the error (one line, naming
        the model and the endpoint)."""
        started = time.perf_counter()
        call_id, tags = uuid.uuid4().hex[:16], {"preflight": "1"}
        messages = [{"role": "user", "content": "Reply with the word: ok"}]
        params = self._sampling(1, {"max_tokens": 1})
        got = await self._request(
            messages, params, None, call_id, PREFLIGHT, tags, False, max_attempts=2
        )
        result = (
            self._finish("", [], None, got, call_id, PREFLIGHT, tags, started, {})
            if got.completion is not None
            else self._failed(got.error, got, call_id, PREFLIGHT, tags, started)
        )
        if result.error is None:
            return None
        why = result.error.message.split(": ", 1)[-1]
        return LLMError(
            kind=result.error.kind,
            message=f"pre-flight call to model {self.model!r} at {self.endpoint} failed: {why}",
        )

    async def list_models(self) -> list[str]:
        """Model ids the endpoint serves (raises ``ConfigError`` with the reason if it cannot
        be asked)."""
        from ragjudge.errors import ConfigError

        lister = getattr(self.backend, "list_models", None)
        if lister is None:
            return [self.model]
        try:
            return list(await lister())
        except BackendError as exc:
            raise ConfigError(exc.message) from None

    async def aclose(self) -> None:
        await self.backend.aclose()

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _refuses_mode(err: BackendError) -> bool:
    """A failure that may mean the endpoint does not do the structured mode asked for: a
    rejected request (4xx other than context length) or a server error."""
    if err.format_rejected:
        return True
    return err.status is not None and err.status >= 500


def _label(prompt: PromptRef) -> str:
    return f"{prompt.name}@{prompt.version}"


def _merge(a: _Outcome, b: _Outcome) -> _Outcome:
    out = _Outcome()
    out.completion, out.error = b.completion, b.error
    out.attempts = a.attempts + b.attempts
    out.prompt_tokens = a.prompt_tokens + b.prompt_tokens
    out.completion_tokens = a.completion_tokens + b.completion_tokens
    out.estimated = a.estimated or b.estimated
    return out


def _cached_call(texts: list[str], out: _Outcome) -> CachedCall:
    return CachedCall(
        texts=texts,
        prompt_tokens=out.prompt_tokens,
        completion_tokens=out.completion_tokens,
        estimated=out.estimated,
    )
