"""A local OpenAI-compatible HTTP server for tests, benchmarks and ``ragjudge fake-llm``.

Endpoints: ``POST /v1/chat/completions`` (``n`` choices, usage from an offline token
estimate, ``response_format`` json_schema / json_object accepted, forced tool calls answered
through the tool), ``POST /v1/embeddings`` (deterministic hashed bag-of-words vectors),
``GET /v1/models``; also ``GET /stats`` and ``POST /reset``.

Answers come from the scripted responders of ``ragjudge.testing.responders`` (every module
``ragjudge.testing.responders_*`` is imported at start), chosen by the ``X-Ragjudge-Template``
header or by content. With ``rpm`` set, the server keeps that rate like a provider does (a
token bucket holding one second's share, ``rpm / 60``, refilled continuously): a chat request
that finds it empty gets a 429 with ``Retry-After`` and counts in ``stats()["over_rpm"]``.
A request no responder accepts gets a 400 naming its template (or, with
``unknown="generic"``, the generic responder). A follow-up turn (the client's repair call) is
answered as the original question (``original_request``). Each choice's responder sees the body with
``_ragjudge_choice`` set to the choice index. Faults come from a ``FaultPlan``.

Built on aiohttp; usable as ``with FakeLLMServer() as srv:`` (serves from a background thread)
or ``async with FakeLLMServer() as srv:`` (serves on the running loop).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import importlib
import json
import math
import pkgutil
import re
import struct
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from aiohttp import web

from ragjudge.llm.tokens import estimate_tokens, text_tokens
from ragjudge.llm.types import PREFLIGHT, TEMPLATE_HEADER
from ragjudge.testing import responders as registry
from ragjudge.testing.faults import FaultPlan, describe

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-']*")
EMBED_DIMS = 384


def load_responders() -> list[str]:
    """Import every ``ragjudge.testing.responders_*`` module; their names."""
    import ragjudge.testing as pkg

    names = []
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("responders_"):
            importlib.import_module(f"ragjudge.testing.{info.name}")
            names.append(info.name)
    return sorted(names)


def embed(text: Any, dims: int = EMBED_DIMS) -> list[float]:
    """Unit vector of hashed words (each word adds +-1 to one of ``dims`` buckets)."""
    vec = [0.0] * dims
    toks = [str(t) for t in text] if isinstance(text, list) else _WORD.findall(str(text))
    for w in toks:
        h = hashlib.blake2b(w.lower().encode(), digest_size=8).digest()
        vec[int.from_bytes(h[:4], "little") % dims] += 1.0 if h[4] & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vec))
    if norm == 0:
        vec[0], norm = 1.0, 1.0
    return [x / norm for x in vec]


def original_request(body: dict[str, Any]) -> dict[str, Any]:
    """The request as first asked: a follow-up turn (a repair call: the conversation, the
    unusable reply, a correction request) is answered as the first question was, like a model
    that corrects itself."""
    messages = body.get("messages") or []
    for i, m in enumerate(messages):
        if m.get("role") == "assistant" and i > 0:
            return {**body, "messages": messages[:i]}
    return body


_LLAMA_CPP_500 = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File "
    '"/venv/lib/python3.11/site-packages/llama_cpp/server/app.py", line 376, in '
    "create_chat_completion\n    POST /v1/chat/completions"
)
"""The body of llama-cpp-python 0.3.36's server to a ``json_schema`` request (measured)."""


def _error(
    status: int, message: str, kind: str = "invalid_request_error", **headers: str
) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": kind, "code": None}}, status=status, headers=headers
    )


class FakeLLMServer:
    """OpenAI-compatible test server on 127.0.0.1 (``port=0`` picks a free port)."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
        faults: FaultPlan | None = None,
        log_path: str | Path | None = None,
        *,
        models: list[str] | None = None,
        api_key: str | None = None,
        reject_json_schema: bool = False,
        reject_json_object: bool = False,
        reject_tools: bool = False,
        like_llama_cpp: bool = False,
        echo: bool = False,
        omit_usage: bool = False,
        context_window: int | None = None,
        unknown: Literal["error", "generic"] = "error",
        rpm: int | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.latency = latency
        self.faults = faults
        self.log_path = Path(log_path) if log_path is not None else None
        self.models = models
        """Served model ids; None accepts any model name."""
        self.api_key = api_key
        """When set, requests must carry ``Authorization: Bearer <api_key>`` (else 401)."""
        self.reject_json_schema = reject_json_schema
        self.reject_json_object = reject_json_object
        self.reject_tools = reject_tools
        self.like_llama_cpp = like_llama_cpp
        self.echo = echo
        """Reply to every chat request with its own headers and messages as JSON (a server
        that echoes what it was sent: the test that no secret it sends back is kept)."""
        """Answer ``json_schema`` as llama-cpp-python's server does: HTTP 500 whose message
        holds pydantic's "Input should be 'text' or 'json_object'" and a traceback frame."""
        self.omit_usage = omit_usage
        self.context_window = context_window
        self.unknown = unknown
        self.rpm = rpm
        """Chat requests per minute served; those over it get a 429 (None: no limit)."""
        self._bucket = (max(1.0, (rpm or 60) / 60), time.monotonic())
        self.responder_modules = load_responders()
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self._chat_index = 0
        self._in_flight = 0
        self._preflights = 0
        self._max_in_flight = 0
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._log_fh: Any = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    async def start_async(self) -> FakeLLMServer:
        """Start serving on the running loop."""
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_post("/embeddings", self._embeddings)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/models", self._models)
        app.router.add_get("/stats", self._stats)
        app.router.add_post("/reset", self._reset)
        app.router.add_get("/health", self._health)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, backlog=1024, reuse_address=True)
        await site.start()
        server = site._server
        if self.port == 0 and server is not None:
            sockets = getattr(server, "sockets", None) or []
            self.port = int(sockets[0].getsockname()[1])
        if self.log_path is not None:
            self._log_fh = self.log_path.open("a", encoding="utf-8")
        return self

    async def stop_async(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None

    def start(self) -> FakeLLMServer:
        """Serve from a background thread until ``stop()``."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            self._stop = asyncio.Event()
            try:
                loop.run_until_complete(self.start_async())
            except BaseException as exc:  # bind failure: report to the caller
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_until_complete(self._stop.wait())
            loop.run_until_complete(self.stop_async())
            loop.close()

        self._thread = threading.Thread(target=run, name="fake-llm-server", daemon=True)
        self._thread.start()
        ready.wait(30)
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        if self._thread is None or self._loop is None or self._stop is None:
            return
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)
        self._thread = None

    def serve_forever(self, on_ready: Callable[[FakeLLMServer], None] | None = None) -> None:
        """Serve on this thread until interrupted (``ragjudge fake-llm``); ``on_ready`` is
        called once the port is bound."""

        async def main() -> None:
            await self.start_async()
            if on_ready is not None:
                on_ready(self)
            try:
                await asyncio.Event().wait()
            finally:
                await self.stop_async()

        asyncio.run(main())

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> FakeLLMServer:
        return await self.start_async()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop_async()

    # ------------------------------------------------------------------ inspection

    def set_faults(self, faults: FaultPlan | None) -> None:
        """Use ``faults`` from now on (request numbering restarts at 0)."""
        with self._lock:
            self.faults = faults
            self._chat_index = 0

    def reset(self) -> None:
        """Forget the request log and counters."""
        with self._lock:
            self.requests = []
            self._chat_index = 0
            self._max_in_flight = 0

    def chat_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if r["path"].endswith("/chat/completions")]

    def stats(self) -> dict[str, Any]:
        with self._lock:
            reqs = list(self.requests)
            peak = self._max_in_flight
        chat = [r for r in reqs if r["path"].endswith("/chat/completions")]
        return {
            "requests": len(reqs),
            "chat_requests": len(chat),
            "embedding_requests": sum(r["path"].endswith("/embeddings") for r in reqs),
            "by_template": dict(Counter(r["template"] or "" for r in chat)),
            "by_status": dict(Counter(str(r["status"]) for r in reqs)),
            "faults": dict(Counter(r["fault"] for r in chat if r["fault"])),
            "over_rpm": sum(r["fault"] == "over_rpm" for r in chat),
            "prompt_tokens": sum(r.get("prompt_tokens", 0) for r in chat),
            "completion_tokens": sum(r.get("completion_tokens", 0) for r in chat),
            "max_in_flight": peak,
            "preflight": self._preflights,
            "fault_plan": describe(self.faults),
        }

    def _log(self, record: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(record)
            if self._log_fh is not None:
                self._log_fh.write(json.dumps(record, default=str) + "\n")
                self._log_fh.flush()

    # ------------------------------------------------------------------ handlers

    def _authorized(self, request: web.Request) -> bool:
        if self.api_key is None:
            return True
        return request.headers.get("Authorization", "") == f"Bearer {self.api_key}"

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        if request.headers.get(TEMPLATE_HEADER) == PREFLIGHT:
            return await self._preflight(request)
        with self._lock:
            index = self._chat_index
            self._chat_index += 1
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
            plan = self.faults
        record: dict[str, Any] = {
            "index": index,
            "path": request.path,
            "template": request.headers.get(TEMPLATE_HEADER),
            "t": time.time(),
            "fault": None,
            "status": None,
        }
        try:
            response = await self._chat_response(request, record, plan, index)
            record["status"] = response.status if response is not None else "dropped"
            if response is None:
                if request.transport is not None:
                    request.transport.abort()
                raise asyncio.CancelledError
            return response
        finally:
            with self._lock:
                self._in_flight -= 1
            self._log(record)

    async def _chat_response(
        self,
        request: web.Request,
        record: dict[str, Any],
        plan: FaultPlan | None,
        index: int,
    ) -> web.Response | None:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _error(400, f"request body is not JSON: {exc}")
        record["body"] = body
        if not self._authorized(request):
            return _error(401, "Incorrect API key provided.", "authentication_error")
        model = str(body.get("model", ""))
        if self.models is not None and model not in self.models:
            return _error(
                404,
                f"The model `{model}` does not exist or you do not have access to it.",
                "not_found_error",
            )
        messages = body.get("messages") or []
        prompt_tokens = estimate_tokens(messages)
        if self.context_window is not None and prompt_tokens > self.context_window:
            return _error(
                400,
                f"This model's maximum context length is {self.context_window} tokens. "
                f"However, your messages resulted in {prompt_tokens} tokens.",
            )
        fmt = (body.get("response_format") or {}).get("type")
        if fmt == "json_schema" and self.reject_json_schema:
            return _error(400, "response_format type 'json_schema' is not supported by this model")
        if fmt == "json_object" and self.reject_json_object:
            return _error(400, "response_format type 'json_object' is not supported by this model")
        if fmt == "json_schema" and self.like_llama_cpp:
            return _error(500, _LLAMA_CPP_500, "internal_server_error")
        if body.get("tools") and self.reject_tools:
            return _error(400, "tools are not supported by this model")

        if not self._within_rpm():
            record["fault"] = "over_rpm"
            wait = 60.0 / (self.rpm or 60)
            return _error(
                429,
                "Rate limit reached for requests per minute (fake server rpm).",
                "rate_limit_error",
                **{"Retry-After": f"{wait:g}", "retry-after-ms": str(int(wait * 1000))},
            )
        fault = plan.decide(index) if plan is not None else None
        record["fault"] = fault
        if self.latency > 0:
            await asyncio.sleep(self.latency)
        if fault == "hang":
            await asyncio.sleep(plan.hang_seconds if plan else 30.0)
        if fault == "drop":
            return None
        if fault == "429":
            wait = plan.retry_after if plan else 0.05
            return _error(
                429,
                "Rate limit reached (fake server fault plan).",
                "rate_limit_error",
                **{"Retry-After": f"{wait:g}", "retry-after-ms": str(int(wait * 1000))},
            )
        if fault in ("500", "503"):
            return _error(
                int(fault), "The server had an error (fake server fault plan).", "server_error"
            )
        if fault == "bad_body":
            return web.Response(
                status=200,
                body=b'{"id": "chatcmpl-x", "choices": [{"ind',
                content_type="application/json",
            )

        template = record["template"]
        if self.echo:
            echoed = json.dumps({"headers": dict(request.headers), "messages": messages})
            return web.json_response(
                {
                    "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model or "fake-model",
                    "choices": [self._choice(0, echoed, "stop", None, body)],
                }
            )
        found = registry.find(template, body)
        if found is None:
            if self.unknown != "generic":
                return _error(
                    400,
                    f"fake LLM server: no scripted responder for template {template!r} "
                    f"(header {TEMPLATE_HEADER}); register one with @responder(name) in a "
                    "ragjudge/testing/responders_<area>.py module, or start the server "
                    "with unknown='generic'",
                )
            from ragjudge.testing.responders_generic import generic

            found = ("generic", generic)
        label, fn = found
        record["responder"] = label
        n = max(1, int(body.get("n") or 1))
        asked = original_request(body)
        record["repair"] = asked is not body
        try:
            contents = [fn({**asked, "_ragjudge_choice": i}) for i in range(n)]
        except Exception as exc:
            return _error(
                500, f"responder {label!r} failed: {type(exc).__name__}: {exc}", "server_error"
            )
        finish = "stop"
        refusal = None
        if fault == "malformed":
            contents = [f"Here is the answer: {c.replace(chr(34), chr(39))}" for c in contents]
        elif fault == "truncated":
            contents = [c[: max(1, len(c) // 2)] for c in contents]
            finish = "length"
        elif fault == "refuse":
            refusal, contents = "I can't help with that.", [""] * n
        completion_tokens = sum(text_tokens(c) for c in contents)
        record["prompt_tokens"], record["completion_tokens"] = prompt_tokens, completion_tokens
        choices = [self._choice(i, c, finish, refusal, body) for i, c in enumerate(contents)]
        payload: dict[str, Any] = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model or "fake-model",
            "system_fingerprint": "ragjudge-fake",
            "choices": choices,
        }
        if not self.omit_usage:
            payload["usage"] = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            }
        return web.json_response(payload)

    async def _preflight(self, request: web.Request) -> web.Response:
        """A client's pre-flight call: checked like any request (key, model), answered "ok",
        never faulted, slowed or logged with the chat requests (``stats()["preflight"]``
        counts them), so that fault plans numbered by request and request counts of tests
        see only the run's own calls."""
        with self._lock:
            self._preflights += 1
        body = await request.json()
        model = str(body.get("model", ""))
        if not self._authorized(request):
            return _error(401, "Incorrect API key provided.", "authentication_error")
        if self.models is not None and model not in self.models:
            return _error(404, f"The model `{model}` does not exist.", "not_found_error")
        choice = self._choice(0, "ok", "stop", None, body)
        usage = {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
        return web.json_response(
            {
                "id": "chatcmpl-preflight",
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [choice],
                "usage": usage,
            }
        )

    def _within_rpm(self) -> bool:
        """Take one request from the rate bucket (True), or find it empty (False)."""
        if self.rpm is None:
            return True
        per_s = self.rpm / 60
        with self._lock:
            level, last = self._bucket
            now = time.monotonic()
            level = min(max(1.0, per_s), level + (now - last) * per_s)
            ok = level >= 1.0
            self._bucket = (level - 1.0 if ok else level, now)
        return ok

    @staticmethod
    def _choice(
        i: int, content: str, finish: str, refusal: str | None, body: dict[str, Any]
    ) -> dict[str, Any]:
        tool_choice = body.get("tool_choice")
        if (
            body.get("tools")
            and isinstance(tool_choice, dict | str)
            and tool_choice
            not in (
                "none",
                "auto",
            )
        ):
            name = (
                tool_choice.get("function", {}).get("name")
                if isinstance(tool_choice, dict)
                else None
            ) or body["tools"][0]["function"]["name"]
            call = {
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": name, "arguments": content},
            }
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls" if finish == "stop" else finish
        else:
            message = {"role": "assistant", "content": None if refusal else content}
            if refusal:
                message["refusal"] = refusal
        return {"index": i, "message": message, "logprobs": None, "finish_reason": finish}

    async def _embeddings(self, request: web.Request) -> web.Response:
        record: dict[str, Any] = {"path": request.path, "template": None, "fault": None}
        try:
            body = await request.json()
        except json.JSONDecodeError as exc:
            record["status"] = 400
            self._log(record)
            return _error(400, f"request body is not JSON: {exc}")
        record["body"] = body
        if not self._authorized(request):
            record["status"] = 401
            self._log(record)
            return _error(401, "Incorrect API key provided.", "authentication_error")
        if self.latency > 0:
            await asyncio.sleep(self.latency)
        raw = body.get("input")
        if isinstance(raw, str) or (isinstance(raw, list) and raw and isinstance(raw[0], int)):
            inputs: list[Any] = [raw]
        else:
            inputs = list(raw or [])
        dims = int(body.get("dimensions") or EMBED_DIMS)
        b64 = body.get("encoding_format") == "base64"
        data = []
        tokens = 0
        for i, t in enumerate(inputs):
            vec = embed(t, dims)
            tokens += len(t) if isinstance(t, list) else text_tokens(str(t))
            emb: Any = base64.b64encode(struct.pack(f"<{dims}f", *vec)).decode() if b64 else vec
            data.append({"object": "embedding", "index": i, "embedding": emb})
        record["status"] = 200
        self._log(record)
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": body.get("model") or "fake-embedding",
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def _models(self, request: web.Request) -> web.Response:
        ids = self.models or ["fake-model"]
        self._log({"path": request.path, "template": None, "fault": None, "status": 200})
        return web.json_response(
            {
                "object": "list",
                "data": [{"id": m, "object": "model", "owned_by": "ragjudge"} for m in ids],
            }
        )

    async def _stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats())

    async def _reset(self, request: web.Request) -> web.Response:
        self.reset()
        return web.json_response({"ok": True})

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"ok": True})
