"""The OpenAI-compatible backend: the ``openai`` SDK's async client with its own retries off
(``max_retries=0``; the LLM client's retries are the only ones), and the mapping of every
SDK failure onto a typed ``BackendError`` whose message names the cause and the fix.

A chat completion is sent with the SDK's documented request method (``client.post`` with
``cast_to=httpx.Response``: its request building, headers, timeouts and status-error mapping,
without its typed-parameter walk and response model construction) and the reply's JSON body
is read in one step into the few fields ragjudge uses (``Reply``)."""

from __future__ import annotations

import asyncio
import email.utils
import functools
import re
import ssl
import time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import to_json

from ragjudge.llm.backend import BackendError, Completion
from ragjudge.llm.settings import LLMSettings, redact

if TYPE_CHECKING:
    import httpx
    import openai

_CONTEXT_HINTS = (
    "context length",
    "context_length",
    "maximum context",
    "context window",
    "too many tokens",
    "prompt is too long",
    "exceeds the model",
    "input is too long",
)
_FRAME = re.compile(r'^\s*(Traceback \(most recent call last\):|File "|\^+$)')


def retry_after(headers: httpx.Headers | None) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        when = email.utils.parsedate_to_datetime(raw)
        return max(0.0, when.timestamp() - time.time()) if when else None


def _detail(exc: Exception) -> str:
    """The endpoint's error message on one line: the frames of a server's Python traceback
    (``File "..."`` lines and the source line under each) are cut out, the rest (the
    exception) kept, capped at 400 characters."""
    body = getattr(exc, "body", None)
    text = str(getattr(exc, "message", None) or exc)
    if isinstance(body, dict):
        err = body.get("error")
        msg = body.get("message") or (err.get("message") if isinstance(err, dict) else err)
        if msg:
            text = str(msg)
    kept: list[str] = []
    skip_source = False
    for line in text.splitlines():
        if _FRAME.match(line):
            skip_source = line.lstrip().startswith("File ")
            continue
        if skip_source and line[:1].isspace():
            skip_source = False
            continue
        skip_source = False
        kept.append(line)
    return " ".join(" ".join(kept).split())[:400]


class _Lax(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Function(_Lax):
    arguments: Any = None


class _ToolCall(_Lax):
    function: _Function = _Function()


class _Message(_Lax):
    content: Any = None
    refusal: str | None = None
    tool_calls: list[_ToolCall] | None = None


class _Choice(_Lax):
    message: _Message = _Message()
    finish_reason: str | None = None


class _Usage(_Lax):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class Reply(_Lax):
    """The fields of a chat completion ragjudge reads (the rest of the body is ignored)."""

    choices: list[_Choice] | None = None
    usage: _Usage | None = None
    model: str | None = None


def _text(message: _Message) -> str:
    """A choice's text: its content, or the arguments of its (forced) tool call."""
    calls = message.tool_calls
    if calls and not message.content:
        return str(calls[0].function.arguments or "")
    return str(message.content or "")


@functools.lru_cache(maxsize=64)
def _send_timeout(seconds: float) -> httpx.Timeout:
    """An attempt's timeout whose clock starts when the request is sent: waiting for a pooled
    connection (requests queued in this process) does not count."""
    import httpx

    return httpx.Timeout(seconds, pool=None)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """The TLS settings of every pool (building them costs ~30 ms of CPU: once a process)."""
    import httpx

    return httpx.create_ssl_context()


class OpenAIBackend:
    """One endpoint through ``openai.AsyncOpenAI`` (one SDK client per event loop, on the
    aiohttp transport of ``ragjudge.llm.transport``)."""

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings
        self.endpoint = settings.display_url.rstrip("/")
        """The base URL without credentials: what errors, ledgers and limiter keys show."""
        self._url = settings.base_url.rstrip("/")
        self.model = settings.model
        self._key = settings.key_value()  # raises ConfigError for a remote endpoint w/o key
        self._clients: dict[asyncio.AbstractEventLoop, tuple[openai.AsyncOpenAI, Any]] = {}

    async def _sdk(self) -> openai.AsyncOpenAI:
        """The SDK client of the running event loop (each loop its own: connections of one
        loop are unusable on another), closed with its loop if nobody closes it first;
        clients of closed loops are forgotten when a new loop comes."""
        from ragjudge.llm.transport import closing_with_loop

        loop = asyncio.get_running_loop()
        got = self._clients.get(loop)
        if got is None:
            for old in [lp for lp in self._clients if lp.is_closed()]:
                del self._clients[old]
            client = self._new_client()
            self._clients[loop] = (client, None)
            self._clients[loop] = got = (client, await closing_with_loop(client))
        return got[0]

    def _new_client(self) -> openai.AsyncOpenAI:
        import openai

        from ragjudge.llm.transport import new_http_client

        return openai.AsyncOpenAI(
            base_url=self._url,
            api_key=self._key,
            max_retries=0,
            timeout=self.settings.timeout,
            http_client=new_http_client(
                _ssl_context(), self.settings.max_concurrency + 8, self.settings.timeout
            ),
        )

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        sampling: dict[str, Any],
        fields: dict[str, Any] | None,
        headers: dict[str, str],
        timeout: float,
    ) -> Completion:
        import httpx
        import openai

        body: dict[str, Any] = {"model": self.model, "messages": messages}
        for k, v in sampling.items():
            if v is not None and not (k == "n" and v == 1):
                body[k] = v
        if fields:
            body.update(fields)
        client = await self._sdk()
        try:
            raw = await client.post(
                "/chat/completions",
                cast_to=httpx.Response,
                # encoded here (pydantic-core, in Rust): the SDK sends bytes as they are, and
                # its default headers carry the JSON content type
                body=to_json(body),
                options={"headers": headers, "timeout": _send_timeout(timeout)},
            )
            resp = Reply.model_validate_json(raw.content)
        except openai.APIError as exc:
            raise self._map(exc, fields is not None) from None
        except Exception as exc:  # a body that is not a chat completion, a broken stream
            why = (
                "; ".join(e["msg"] for e in exc.errors()[:2])
                if isinstance(exc, ValidationError)
                else f"{type(exc).__name__}: {exc}"
            )
            raise BackendError(
                "provider_error",
                f"malformed response from {self.endpoint}: {redact(why)}",
                retryable=True,
            ) from None
        if not resp.choices:
            raise BackendError(
                "provider_error", f"{self.endpoint} returned no choices", retryable=True
            )
        usage = resp.usage
        return Completion(
            texts=[_text(c.message) for c in resp.choices],
            finish_reasons=[c.finish_reason for c in resp.choices],
            refusal=next((c.message.refusal for c in resp.choices if c.message.refusal), None),
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
            model=resp.model or self.model,
        )

    def _map(self, exc: openai.APIError, formatted: bool) -> BackendError:
        import openai

        url = self.endpoint
        if isinstance(exc, openai.APITimeoutError):
            return BackendError(
                "timeout",
                f"no answer from {url} within {self.settings.timeout:g} s; raise "
                "RAGJUDGE_TIMEOUT or lower RAGJUDGE_MAX_CONCURRENCY",
                retryable=True,
                overloaded=True,  # a server queue longer than the timeout: send fewer at once
            )
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            why = redact(f"{type(cause).__name__}: {cause}" if cause else str(exc))
            return BackendError(
                "provider_error",
                f"cannot reach the LLM endpoint {url} ({why}); is the server running? "
                f"check {self.settings.base_url_origin} (it usually ends in /v1)",
                retryable=True,
            )
        if not isinstance(exc, openai.APIStatusError):
            return BackendError("provider_error", f"{url}: {redact(str(exc))}", retryable=True)
        status = exc.status_code
        detail = redact(_detail(exc))
        low = detail.lower()
        wait = retry_after(exc.response.headers)
        if status == 429:
            if "insufficient_quota" in low or ("quota" in low and "exceeded" in low):
                return BackendError(
                    "rate_limited",
                    f"{url} says the account's quota is exhausted (429: {detail}); add "
                    "credit or use another key",
                    status=status,
                    fatal=True,
                )
            return BackendError(
                "rate_limited",
                f"rate limited by {url} (429: {detail}); lower RAGJUDGE_MAX_CONCURRENCY "
                "or raise RAGJUDGE_MAX_ATTEMPTS",
                retryable=True,
                overloaded=True,
                retry_after=wait,
                status=status,
            )
        if status in (401, 403):
            return BackendError(
                "provider_error",
                f"{url} rejected the API key ({status}: {detail}); check OPENAI_API_KEY "
                "(or RAGJUDGE_API_KEY)",
                status=status,
                fatal=True,
            )
        if status == 404:
            return BackendError(
                "provider_error",
                f"model {self.model!r} not found at {url} (404: {detail}); set "
                "RAGJUDGE_MODEL to a model the endpoint serves (`ragjudge llm check` lists "
                "them) and check that OPENAI_BASE_URL ends in /v1",
                status=status,
                fatal=True,
            )
        if status in (400, 413, 422):
            if status == 413 or any(h in low for h in _CONTEXT_HINTS):
                return BackendError(
                    "context_too_long",
                    f"the prompt is over the context window of {self.model!r} ({status}: "
                    f"{detail}); use fewer or shorter contexts (a smaller k or a tighter "
                    "context budget) or a model with a longer window",
                    status=status,
                )
            if formatted:
                return BackendError(
                    "provider_error",
                    f"{url} rejected the structured-output request ({status}: {detail})",
                    status=status,
                    format_rejected=True,
                )
            return BackendError(
                "provider_error",
                f"{url} rejected the request ({status}: {detail})",
                status=status,
            )
        if status >= 500:
            return BackendError(
                "provider_error",
                f"{url} failed ({status}: {detail})",
                retryable=True,
                overloaded=status in (502, 503, 504, 529),
                retry_after=wait,
                status=status,
            )
        return BackendError("provider_error", f"{url}: {status}: {detail}", status=status)

    async def list_models(self) -> list[str]:
        """Model ids the endpoint serves (``GET /models``)."""
        import openai

        try:
            page = await (await self._sdk()).models.list()
        except openai.APIError as exc:
            raise self._map(exc, False) from None
        return [m.id for m in page.data]

    async def aclose(self) -> None:
        got = self._clients.pop(asyncio.get_running_loop(), None)
        if got is not None:
            await got[0].close()
            if got[1] is not None:
                await got[1].aclose()
