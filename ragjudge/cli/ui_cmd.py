"""``ragjudge ui``: the local web app over the run store."""

from __future__ import annotations

import typer


def ui(
    store_path: str | None = typer.Option(
        None, "--store", help="Run store: a SQLite file or a postgresql:// URL (default: home)."
    ),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to serve; any other than loopback needs a token."
    ),
    port: int | None = typer.Option(
        None, "--port", min=1, max=65535, help="Port, 1 to 65535 (default: a free one)."
    ),
    no_browser: bool = typer.Option(False, "--no-browser", help="Do not open the browser."),
    read_only: bool = typer.Option(
        False, "--read-only", help="Refuse every change (tags, labels)."
    ),
    token: str | None = typer.Option(
        None, "--token", help="Token every request must carry (made for you off loopback)."
    ),
    no_token: bool = typer.Option(
        False, "--no-token", help="Refuse to start off loopback rather than make a token."
    ),
) -> None:
    """Browse runs, read a case's evidence, compare runs, follow the nightly history and label
    spot-checks in the browser. Serves http://127.0.0.1:PORT and opens it."""
    from ragjudge.store import open_store
    from ragjudge.ui.serve import serve

    store = open_store(store_path, must_exist=True)
    serve(
        store,
        host=host,
        port=port or 0,
        open_browser=not no_browser,
        read_only=read_only,
        token=token,
        require_token=not no_token,
    )


def register(app: typer.Typer) -> None:
    """Add this area's commands to the app."""
    app.command("ui")(ui)
