"""Shared fixtures live in tests/fixtures/ (one module per area) and are loaded here."""

pytest_plugins = ["tests.fixtures.data", "tests.fixtures.llm", "tests.fixtures.postgres"]
