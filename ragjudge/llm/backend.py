"""What a backend does for the client: send one request, return the choices or a typed
failure. The client adds caching, retries, concurrency limits, structured output and the
ledger on top (``ragjudge.llm.client``)."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, Field

from ragjudge.llm.types import ErrorKind


class Completion(BaseModel):
    """The answer to one request."""

    texts: list[str]
    finish_reasons: list[str | None] = Field(default_factory=list)
    refusal: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    """None when the endpoint reported no usage."""
    model: str = ""
    status: int = 200


class BackendError(Exception):
    """A failed request. ``retryable`` failures (429, 5xx, timeouts, connection errors) are
    retried; ``overloaded`` ones also shrink the concurrency limit."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        retryable: bool = False,
        overloaded: bool = False,
        retry_after: float | None = None,
        status: int | None = None,
        format_rejected: bool = False,
        fatal: bool = False,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message
        self.retryable = retryable
        self.overloaded = overloaded
        self.retry_after = retry_after
        self.status = status
        self.format_rejected = format_rejected
        """A 4xx to a request asking for a structured mode (not a context-length error)."""
        self.fatal = fatal
        """The endpoint cannot serve any call (bad key, unknown model): later calls fail fast."""


class Backend(Protocol):
    """Sends one chat request."""

    endpoint: str
    """Identifies the endpoint (limits and format support are remembered per endpoint)."""
    model: str

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        sampling: dict[str, Any],
        fields: dict[str, Any] | None,
        headers: dict[str, str],
        timeout: float,
    ) -> Completion:
        """One request; ``fields`` are extra body fields asking for structured output
        (``response_format`` or ``tools``/``tool_choice``: ``structured.request_fields``). A
        forced tool call's arguments are returned as the choice's text."""
        ...

    async def aclose(self) -> None: ...
