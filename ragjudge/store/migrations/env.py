"""Alembic environment: migrations run on the connection ``ragjudge.store.migrate`` hands over
(in its transaction), with batch mode so SQLite can alter tables."""

from alembic import context

from ragjudge.store.tables import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
