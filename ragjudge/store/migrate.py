"""Schema versions of the run store, through Alembic: ``upgrade`` brings a store (new, or written
by any earlier release) to the newest version in place, inside the caller's transaction;
``revision`` and ``head`` say where a store is and where the code is (``store check``)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import Connection


@cache
def _config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).with_name("migrations")))
    return cfg


@cache
def head() -> str:
    """The newest schema revision this code knows."""
    found = ScriptDirectory.from_config(_config()).get_current_head()
    assert found is not None  # the package ships its migrations
    return found


def known(rev: str) -> bool:
    """Whether ``rev`` is a revision this code ships (a store at an unknown one was written by
    a newer release)."""
    try:
        return ScriptDirectory.from_config(_config()).get_revision(rev) is not None
    except CommandError:
        return False


def revision(conn: Connection) -> str | None:
    """The revision the store on ``conn`` is at (None: never migrated, e.g. a 0.1 store)."""
    return MigrationContext.configure(conn).get_current_revision()


def upgrade(conn: Connection) -> None:
    """Migrate the store on ``conn`` to ``head()`` within the connection's transaction."""
    cfg = _config()
    cfg.attributes["connection"] = conn
    try:
        command.upgrade(cfg, "head")
    finally:
        cfg.attributes.pop("connection", None)
