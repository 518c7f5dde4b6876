"""Alembic migrations of the run store (``ragjudge.store.migrate`` runs them)."""
