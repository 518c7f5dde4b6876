"""Serving the app with uvicorn: loopback by default; any other address needs a token (one is
made when none is given) and is refused with ``--no-token``."""

from __future__ import annotations

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


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


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
    """Serve until interrupted; prints the URL (with the token when one is needed)."""
    import uvicorn

    local = is_loopback(host)
    if not local and token is None:
        if not require_token:
            raise ConfigError(
                f"--host {host} serves other machines: it needs a token (drop --no-token, or "
                "give --token), or serve 127.0.0.1"
            )
        token = secrets.token_urlsafe(24)
    port = port or free_port(host)
    hosts = ["127.0.0.1", "localhost"] if local else ["*"]
    app = create_app(store, read_only=read_only, token=token, allowed_hosts=hosts)
    shown = "127.0.0.1" if local else host
    url = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
    if announce:
        print(f"ragjudge ui: {url} (Ctrl-C stops it)", flush=True)
    if open_browser:
        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    uvicorn.run(app, host=host, port=port, log_level="warning")
