"""The HTTP transport under the ``openai`` SDK: aiohttp (the SDK's documented alternative to
httpx's own transport, ``openai[aiohttp]``, through ``httpx_aiohttp``), whose C-accelerated
connection handling costs about two thirds of httpx/httpcore's CPU per request and whose
connection pool does constant work per request at any size.

Three things differ from ``httpx_aiohttp`` as shipped, so that failures are classified as with
httpx's transport: it maps every aiohttp connection error (a refused connection, a server
that closed the connection) onto ``httpx.ConnectTimeout``, which the SDK reports as a
timeout; here only a real timeout is a timeout, a refused or failed connect is
``httpx.ConnectError`` and a connection lost mid-request ``httpx.RemoteProtocolError`` (the
SDK's ``APIConnectionError``). And a session is closed with the event loop that made it
(``closing_with_loop``), so that a client nobody closed leaves no "Unclosed client session"
warning behind. Credentials in a base URL are not sent in the URL (as with httpcore). And the
proxy of the environment is used as httpx does (``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``),
which ``httpx_aiohttp``'s own session does not: looked up once per origin and transport (httpx
reads it once per client), not on every request as aiohttp's ``trust_env`` does, which costs
two worker-thread hops per request (the proxy lookup and a read of ``~/.netrc``, whose
credentials httpx does not use either and aiohttp would refuse beside the SDK's
``Authorization`` header).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import aiohttp
import httpx
from aiohttp.helpers import get_env_proxy_for_url
from httpx_aiohttp.transport import AiohttpTransport
from yarl import URL


def _remapped(exc: httpx.TransportError) -> httpx.TransportError:
    """``exc`` as httpx's own transport would have raised it (see the module docstring)."""
    cause = exc.__cause__
    if not isinstance(exc, httpx.TimeoutException) or cause is None:
        return exc
    if isinstance(cause, TimeoutError):  # aiohttp's ServerTimeoutError, SocketTimeoutError
        return exc
    if isinstance(cause, aiohttp.ClientConnectorError | aiohttp.ClientOSError | OSError):
        out: httpx.TransportError = httpx.ConnectError(str(cause) or type(cause).__name__)
    else:
        out = httpx.RemoteProtocolError(str(cause) or type(cause).__name__)
    out.__cause__ = cause
    return out


class _Body(httpx.AsyncByteStream):
    """A response body whose read errors are remapped like the request's."""

    def __init__(self, inner: httpx.AsyncByteStream) -> None:
        self.inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.inner:
                yield chunk
        except httpx.TransportError as exc:
            raise _remapped(exc) from exc.__cause__

    async def aclose(self) -> None:
        await self.inner.aclose()


class Transport(AiohttpTransport):
    """``httpx_aiohttp``'s transport with httpx's classification of failures and its proxies."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._proxies: dict[tuple[str, str, int | None], httpx.Proxy | None] = {}

    def get_client(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            keepalive_timeout=self.limits.keepalive_expiry,
            ssl=self.ssl_context,
            limit=self.limits.max_connections or 0,
        )
        return aiohttp.ClientSession(connector=connector)

    async def _env_proxy(self, url: httpx.URL) -> httpx.Proxy | None:
        """The environment's proxy for ``url``'s origin (None: none, or ``NO_PROXY``), looked
        up once per origin in a worker thread (``proxy_bypass`` may ask the system)."""
        origin = (url.scheme, url.host, url.port)
        known = self._proxies
        if origin not in known:
            try:
                where, auth = await asyncio.to_thread(get_env_proxy_for_url, URL(str(url)))
            except LookupError:
                known[origin] = None
            else:
                known[origin] = httpx.Proxy(
                    str(where), auth=(auth.login, auth.password) if auth else None
                )
        return known[origin]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.userinfo:
            # credentials in the base URL: httpx has made them the request's auth; aiohttp
            # would refuse them beside the SDK's Authorization header (httpcore drops them)
            request.url = request.url.copy_with(userinfo=None)
        # the parent reads ``self.proxy`` before its first await: it is this request's
        self.proxy = await self._env_proxy(request.url)
        try:
            response = await super().handle_async_request(request)
        except httpx.TransportError as exc:
            raise _remapped(exc) from exc.__cause__
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        response.stream = _Body(stream)
        return response


async def _close_at_end(client: Any) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        await client.close()


async def closing_with_loop(client: Any) -> AsyncGenerator[None, None]:
    """A started async generator that closes ``client`` (anything with ``async close()``)
    when it is closed: by ``aclose()``, or by the running loop's ``shutdown_asyncgens`` at
    the end of ``asyncio.run`` (and ``asyncio.Runner``, pytest-asyncio) when nobody closed
    the client. The caller keeps it referenced while the client is in use."""
    guard = _close_at_end(client)
    await guard.__anext__()
    return guard


def new_http_client(verify: Any, connections: int, timeout: float) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` on this transport with up to ``connections`` connections."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(
        transport=Transport(verify=verify, limits=limits), timeout=timeout, limits=limits
    )
