"""Serving the app with uvicorn: loopback by default; any other address needs a token (one is
made when none is given) and is refused with ``--no-token``.

The socket is bound before the URL is printed: a port in use, an address this machine does not
have and a host name that does not resolve are one-line ``ConfigError``s, and the URL printed
is the address served (an IPv6 one in brackets), which the app accepts as ``Host``."""

from __future__ import annotations

import errno
import ipaddress
import secrets
import socket
import threading
import webbrowser

from ragjudge.errors import ConfigError
from ragjudge.store import RunStore
from ragjudge.ui.app import create_app


def is_loopback(host: str) -> bool:
    """``127.0.0.1``, ``::1``, ``localhost``: nobody else can connect."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_host(host: str) -> str:
    """``host`` as a URL and a ``Host`` header carry it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host else host


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` (0: a free port) and listening; what stops it
    is a ``ConfigError`` naming ``--host`` or ``--port``."""
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port {port}: not a port (1 to 65535, or 0 for a free one)")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host}: no such address ({exc.strerror})") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen()
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"--port {port}: in use on {host}; choose another, or leave --port out for a "
                "free one"
            ) from None
        where = f"--host {host}" + (f" --port {port}" if port else "")
        raise ConfigError(f"{where}: cannot serve there ({exc.strerror or exc})") from None
    return sock


def serve(
    store: RunStore,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    open_browser: bool = True,
    read_only: bool = False,
    token: str | None = None,
    require_token: bool = True,
    announce: bool = True,
) -> None:
    """Serve until interrupted; prints the URL (with the token when one is needed) once the
    socket is bound (module docstring)."""
    import uvicorn

    local = is_loopback(host)
    if not local and token is None:
        if not require_token:
            raise ConfigError(
                f"--host {host} serves other machines: it needs a token (drop --no-token, or "
                "give --token), or serve 127.0.0.1"
            )
        token = secrets.token_urlsafe(24)
    sock = bind(host, port)
    shown = url_host(host)
    hosts = list(dict.fromkeys([shown, "localhost"])) if local else ["*"]
    app = create_app(store, read_only=read_only, token=token, allowed_hosts=hosts)
    url = f"http://{shown}:{sock.getsockname()[1]}/" + (f"?token={token}" if token else "")
    if announce:
        print(f"ragjudge ui: {url} (Ctrl-C stops it)", flush=True)
    if open_browser:
        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    with sock:
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
