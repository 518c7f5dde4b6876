"""Alembic environment: migrations run on the connection ``ragjudge.store.migrate`` hands over
(in its transaction), with batch mode so SQLite can alter tables. Imported outside Alembic (a
walk over the package), it does nothing."""

from alembic import context

from ragjudge.store.tables import metadata


def run() -> None:
    connection = context.config.attributes["connection"]
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if getattr(context, "config", None) is not None:
    run()
