"""``open_store(url)``: the one place that chooses the run store's database.

Where the store is, first found wins: the ``url`` argument (``--store``),
``RAGJUDGE_STORE_URL``, ``default`` (the ``store: {url: ...}`` of a sweep config), else
``RAGJUDGE_HOME/runs.sqlite``. A URL is ``sqlite:///PATH`` or a plain file path (the embedded
store, WAL), or ``postgresql://USER:PASSWORD@HOST:PORT/DB`` (``postgresql+psycopg://`` alike:
a server shared by a team, through psycopg 3). The password is registered with
``ragjudge.llm.settings.redact`` at once, so it never appears in a message, log or manifest;
``store.location`` shows the URL as ``postgresql+psycopg://USER:***@HOST:PORT/DB``.

Opening migrates the schema in place to the newest version (``ragjudge.store.migrate``), under
the backend's write lock so that two processes opening a new store at once do not race. A
SQLite store in a read-only folder opens read-only (``immutable``; an absent file reads as an
empty store) and is not migrated: reading commands work, and the first write raises
``StateFileError`` naming the file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from ragjudge.errors import ConfigError, DataError, StateFileError
from ragjudge.home import state_path
from ragjudge.llm.settings import redact, register_secret
from ragjudge.store import migrate, tables
from ragjudge.store.base import RunStore
from ragjudge.store.sql import SqlRunStore
from ragjudge.userconfig import setting

ENV = "RAGJUDGE_STORE_URL"
_MIGRATION_LOCK = 0x7261676A75646765  # "ragjudge": the advisory key serialising migrations


def store_url(url: str | Path | None = None, default: str | None = None) -> str | Path:
    """The store to open (module docstring): ``url``, else ``RAGJUDGE_STORE_URL``, else
    ``default`` (a sweep config's ``store.url``), else the home's ``runs.sqlite``."""
    if url is not None and str(url).strip():
        return url
    return setting(ENV) or default or state_path("runs.sqlite")


def open_store(
    url: str | Path | None = None,
    *,
    default: str | None = None,
    must_exist: bool = False,
    busy_timeout: float = 10.0,
) -> RunStore:
    """The run store at ``store_url(url, default)`` (module docstring). ``must_exist``: a
    SQLite file named must exist (``DataError``: opening it would create an empty one), as for
    ``--store`` of the reading commands."""
    where = store_url(url, default)
    if isinstance(where, Path) or "://" not in where:
        if where != state_path("runs.sqlite"):  # named by the user: it may be another file
            _check_sqlite_header(Path(where))
        return _open_sqlite(Path(where), must_exist=must_exist, busy_timeout=busy_timeout)
    try:
        parsed = make_url(where)
    except (ArgumentError, ValueError):  # ValueError: a port that is no number ('[::1/db')
        raise ConfigError(f"not a run store URL: {redact(where)}") from None
    register_secret(parsed.password if isinstance(parsed.password, str) else None)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if not parsed.database:
            raise ConfigError(f"{redact(where)}: a sqlite store URL needs a file path")
        _check_sqlite_header(Path(parsed.database))
        return _open_sqlite(Path(parsed.database), must_exist=must_exist, busy_timeout=busy_timeout)
    if backend == "postgresql":
        return _open_postgres(parsed.set(drivername="postgresql+psycopg"))
    raise ConfigError(
        f"run store URL {redact(where)}: unknown database {backend!r}; use a file path, "
        "sqlite:///PATH or a postgresql:// URL (docs/store.md)"
    )


def _open_sqlite(path: Path, *, must_exist: bool, busy_timeout: float) -> SqlRunStore:
    from ragjudge.store.lock import FileLeases

    if must_exist and not path.is_file():
        raise DataError("no run store file here", path=path)
    if path.is_dir():
        raise ConfigError(f"{path}: a folder, not a run store file")
    path.parent.mkdir(parents=True, exist_ok=True)
    read_only = not os.access(path.parent, os.W_OK) or (
        path.exists() and not os.access(path, os.W_OK)
    )
    leases = FileLeases(path)
    if read_only:
        if path.exists():
            uri = sa.URL.create(
                "sqlite", database=path.resolve().as_uri(), query={"immutable": "1", "uri": "true"}
            )
            engine = sa.create_engine(uri, connect_args={"check_same_thread": False})
        else:
            engine = sa.create_engine(
                "sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False}
            )
            tables.metadata.create_all(engine)
        _sqlite_transactions(engine, pragmas=("PRAGMA query_only=ON",))
        store = SqlRunStore(engine, location=str(path), leases=leases, read_only=True, file=path)
        store.counts("")  # a corrupt file fails here, named
        return store
    engine = sa.create_engine(
        sa.URL.create("sqlite", database=str(path)),
        connect_args={"timeout": min(1.0, busy_timeout), "check_same_thread": False},
    )
    _sqlite_transactions(
        engine,
        pragmas=("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA foreign_keys=ON"),
    )
    store = SqlRunStore(
        engine, location=str(path), leases=leases, file=path, busy_timeout=busy_timeout
    )
    _migrate(store, lambda conn: None)
    return store


SQLITE_HEADER = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file."""


def _check_sqlite_header(path: Path) -> None:
    """A ``DataError`` when ``path``, a store the user named, is a non-empty file that does not
    start with ``SQLITE_HEADER``: another kind of file (a CSV, a YAML config), which SQLite would
    call "not a database" and the advice for a damaged store would tell the user to move aside
    (the home's own ``runs.sqlite`` is not checked here: ragjudge wrote it, so it is damaged).
    An absent or empty file is a new store; a folder is left to ``_open_sqlite``."""
    if not path.is_file():
        return
    try:
        with path.open("rb") as fh:
            head = fh.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise StateFileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if head and head != SQLITE_HEADER:
        raise DataError(
            "not an SQLite database (its first bytes are not SQLite's header): name a run "
            "store file, or a new file to start one; this file was not changed",
            path=path,
        )


def _sqlite_transactions(engine: sa.Engine, *, pragmas: tuple[str, ...]) -> None:
    """SQLite under SQLAlchemy as the SQLAlchemy docs advise: the driver's own transaction
    handling off, and each transaction begun here: ``BEGIN IMMEDIATE`` for a write (it waits
    for the one writer up to the busy timeout, then fails named), plain ``BEGIN`` for a read
    (never blocked under WAL)."""

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        for pragma in pragmas:
            dbapi_conn.execute(pragma)

    @event.listens_for(engine, "begin")
    def _begin(conn: sa.Connection) -> None:
        write = conn.get_execution_options().get("ragjudge_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def _open_postgres(url: sa.URL) -> SqlRunStore:
    from ragjudge.store.pglease import AdvisoryLeases, application_name

    location = url.render_as_string(hide_password=True)
    engine = sa.create_engine(
        url,
        pool_pre_ping=True,
        connect_args={"application_name": application_name(), "connect_timeout": 10},
    )
    store = SqlRunStore(engine, location=location, leases=AdvisoryLeases(engine))

    def serialise(conn: sa.Connection) -> None:
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK})

    _migrate(store, serialise)
    return store


def _migrate(store: SqlRunStore, serialise: Any) -> None:
    """Bring the store to the newest schema (``migrate.upgrade``) unless it is there. A store
    at a revision this code does not know (written by a newer release) is refused unchanged; an
    upgrade that fails is rolled back whole (``_upgrade_error`` says why)."""
    with store.connection(write=False) as conn:
        current = migrate.revision(conn)
    if current == migrate.head():
        return
    if current is not None and not migrate.known(current):
        raise StateFileError(
            f"{store.location}: written by a newer ragjudge (schema revision {current}; this "
            f"release knows up to {migrate.head()}): upgrade ragjudge to use it; the store "
            "was not changed"
        )
    with store.connection(write=True) as conn:
        serialise(conn)
        current = migrate.revision(conn)
        if current != migrate.head():
            try:
                migrate.upgrade(conn)
            except SQLAlchemyError as exc:
                raise _upgrade_error(store, exc, current) from None


def _upgrade_error(store: SqlRunStore, exc: SQLAlchemyError, current: str | None) -> Exception:
    """The one-line error of a failed schema upgrade. A name the upgrade creates that the store
    already holds (a table or index someone added: SQLite ``already exists``, PostgreSQL
    SQLSTATE 42P07/42710) says exactly that and that the store is intact; anything else is
    ``SqlRunStore.error``'s (disk full, locked, a corrupt file)."""
    orig = getattr(exc, "orig", None) or exc
    msg = redact(str(orig).strip().splitlines()[0] if str(orig).strip() else repr(orig))
    if "already exists" not in msg and getattr(orig, "sqlstate", None) not in ("42P07", "42710"):
        return store.error(exc)
    step = f"from revision {current} to {migrate.head()}" if current else f"to {migrate.head()}"
    return StateFileError(
        f"{store.location}: the schema upgrade {step} "
        f"creates a name the store already holds ({msg}), a table or index "
        "ragjudge did not make; the upgrade was rolled back and the store is intact (do not "
        "move it aside): rename or drop that table or index (copy out what you need from it "
        "first), then run the command again"
    )
