"""Issue #31's "done when": with ``RAGJUDGE_STORE_URL=postgresql+psycopg://...`` every command
and API call of the README works unchanged against a PostgreSQL started by the tests
(tests/fixtures/postgres.py). The README's runnable blocks are run as tests/test_docs.py runs
them (same parser, scratch folder, offline, the scripted endpoint for ``llm`` blocks), with
only the store's variable added, and the store is then read from the server.

README blocks marked ``illustration`` do not run, here as in test_docs.py:
- clone and ``make demo`` / ``make test``, and ``pip install`` from git or a wheel: setup of a
  checkout or an environment, no store involved;
- the nightly pair (``sweep --tag nightly`` then ``report --baseline-tag baseline``): in the
  README's sequence the second sweep resumes the run tagged baseline, and the report refuses to
  compare a run with itself; docs/nightly.md runs it on the demo set, and
  tests/test_store_shared.py runs ``report`` against a baseline stored by another process on
  PostgreSQL;
- ``agree`` and ``fit-judges`` on ``to_label.csv``: they need the sheet filled in by a person;
  docs/calibration.md runs both on the demo set's filled sheet.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from ragjudge.testing.server import FakeLLMServer
from tests.fixtures.postgres import PASSWORD
from tests.test_docs import REPO, docs_llm, run_doc_blocks, shared_embeddings

__all__ = ["docs_llm", "shared_embeddings"]  # the fixtures test_docs.py defines


def test_the_readme_runs_unchanged_against_postgres(
    postgres, tmp_path: Path, docs_llm: FakeLLMServer, shared_embeddings: Path
) -> None:
    url = postgres.fresh_url()
    home = run_doc_blocks(
        REPO / "README.md", tmp_path, docs_llm, shared_embeddings, {"RAGJUDGE_STORE_URL": url}
    )
    assert home is not None
    assert not (home / "runs.sqlite").exists()  # nothing went to the embedded store
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        runs = conn.execute(sa.text("SELECT run_id, status FROM runs")).all()
        assert [status for _, status in runs] == ["finished"], runs
        (run_id,) = [r for r, _ in runs]
        tags = dict(conn.execute(sa.text("SELECT tag, value FROM tags")).all())
        assert {"nightly", "baseline"} <= set(tags), tags
        judged = conn.execute(
            sa.text("SELECT COUNT(*) FROM judge_results WHERE run_id = :r"), {"r": run_id}
        ).scalar_one()
        assert judged > 0
        manifests = " ".join(conn.execute(sa.text("SELECT manifest FROM runs")).scalars())
        assert PASSWORD not in manifests
    engine.dispose()
    assert (tmp_path / "work" / "results.parquet").is_file()
    assert (tmp_path / "work" / "to_label.csv").is_file()
