"""``ragjudge ui`` in a real browser (Playwright driving Debian's Chromium) over a real run
store served by uvicorn: a user's path on the demo, and hostile run text that must not run.

Screenshots of every page go to tests/artifacts/ui_*.png.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragjudge.schema import Document, TestCase, TestSet
from ragjudge.store import RunStore, open_store

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
try:
    from playwright.sync_api import Page, sync_playwright
except ImportError:  # pragma: no cover - the skip below says why
    sync_playwright = None  # type: ignore[assignment]

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or sync_playwright is None,
    reason="needs Debian's chromium (.ci/run installs it) and the playwright package",
)
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


class _Server:
    """uvicorn serving the app on a free loopback port, in a thread."""

    def __init__(self, store: RunStore, **options: object) -> None:
        import uvicorn

        from ragjudge.ui.app import create_app
        from ragjudge.ui.serve import bind

        self.sock = bind("127.0.0.1", 0)
        self.port = self.sock.getsockname()[1]
        app = create_app(store, **options)  # type: ignore[arg-type]
        config = uvicorn.Config(app, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=lambda: self.server.run(sockets=[self.sock]), daemon=True
        )

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


@pytest.fixture
def browser() -> Iterator[Page]:
    assert sync_playwright is not None
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = b.new_page(viewport={"width": 1280, "height": 900})
        yield page
        b.close()


def _shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"ui_{name}.png"), full_page=False)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def demo_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[RunStore, str, str]]:
    """Two runs of the demo set (8 questions): the demo's hybrid retrieval, tagged baseline,
    and BM25 only; in a SQLite store, then in a PostgreSQL one (tests/fixtures/postgres.py)."""
    from ragjudge.sweep.demo import demo_config, run_demo
    from ragjudge.sweep.run import run_sweep

    home = tmp_path_factory.mktemp("home")
    where = (
        str(home / "runs.sqlite")
        if request.param == "sqlite"
        else request.getfixturevalue("postgres").fresh_url()
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAGJUDGE_HOME", str(home))
        store = open_store(where)
        base = run_demo(home / "demo", cases=8, store=store).run_id
        cfg = demo_config()
        cfg = cfg.model_copy(
            update={
                "dataset": cfg.dataset.model_copy(update={"sample": 8}),
                "retriever": cfg.retriever.model_copy(update={"kind": "bm25", "options": {}}),
            }
        )
        current = run_sweep(cfg, store=store, tags={"nightly": ""}).run_id
        yield store, base, current


def test_a_user_path_runs_run_case_compare_label_agreement(demo_store, browser):
    store, base, current = demo_store
    page = browser
    with _Server(store) as url:
        page.goto(url + "/")
        assert page.locator("#runs tbody tr").count() == 2
        _shot(page, "runs")
        # tag the demo run as baseline from the runs page
        page.locator(f"tr:has(a[href='/runs/{base}']) button.tag-baseline").click()
        page.wait_for_load_state()
        assert "baseline" in page.locator(f"tr:has(a[href='/runs/{base}'])").inner_text()

        page.click(f"a[href='/runs/{current}']")
        assert page.locator("svg.curve").count() >= 5  # a k-curve per judge and metric
        assert "Best k" in page.locator("#choice").inner_text()
        assert page.locator("#statuses tr").count() == 1 + 5
        _shot(page, "run")

        page.click("#explore")
        page.locator("a.case").first.click()
        assert page.locator(".col").count() == 10  # the question at every k
        assert page.locator("#question").inner_text().startswith("Question:")
        _shot(page, "case")

        page.goto(f"{url}/runs/{current}")
        page.click("a.compare-baseline")
        page.wait_for_selector("#verdict-table")
        assert page.locator("#verdict-table tbody tr").count() > 10
        _shot(page, "compare")

        # the case whose faithfulness dropped most, and the claims that flipped
        page.click("a.moved-most:text('faithfulness')")
        moved = [float(x) for x in page.locator("td.moved").all_inner_texts()]
        assert moved and moved == sorted(moved)
        page.locator("a.case").first.click()
        assert f"against baseline {base}" in page.locator("h1").inner_text()
        _shot(page, "case_vs_baseline")

        page.goto(f"{url}/label?run={current}")
        page.fill("#labeler", "ana")
        page.keyboard.press("Enter")
        page.wait_for_selector("#label-form")
        _shot(page, "label")
        for _ in range(5):
            item = page.locator("#item").inner_text()
            for _dim in range(5):
                page.keyboard.press("1")
            page.keyboard.press("Enter")
            page.wait_for_function(
                "item => document.querySelector('#item')?.innerText !== item", arg=item
            )

        page.goto(f"{url}/agreement?run={current}")
        assert page.locator("#label-count").inner_text().startswith("25 labels")
        assert page.locator("#labels tr").count() == 1 + 25
        items = set(page.locator("#labels td:first-child").all_inner_texts())
        assert len(items) == 5
        _shot(page, "agreement")

        page.goto(f"{url}/history?tag=nightly")
        assert page.locator("#history tbody tr").count() == 1
        _shot(page, "history")

    stored = store.labels(current)
    assert len(stored) == 25 and {s.labeler for s in stored} == {"ana"}
    assert all(s.judge_version and s.created_at for s in stored)


EVIL_DOC = (
    'Copper <script>window.__xss = "script"</script> is mined <img src=x '
    "onerror=\"window.__xss = 'onerror'\"> in many countries. "
    '<a href="javascript:window.__xss = \'href\'" id="evil">click</a>'
)


@pytest.fixture
def evil_store(store_url: str) -> tuple[RunStore, str]:
    """A run whose documents and question carry script, in SQLite, then in PostgreSQL."""
    from ragjudge.sweep.run import run_sweep
    from tests.test_sweep_run import config, parts

    docs = [Document(id="copper-1", text=EVIL_DOC)]
    docs += [Document(id=f"tin-{i}", text=f"Tin melts at {200 + i} degrees.") for i in range(4)]
    cases = [
        TestCase(
            id="q-copper",
            question="Where is copper <img src=y onerror=\"window.__xss='q'\"> mined?",
            reference="Copper is mined in many countries.",
            relevant={"copper-1": 2},
        )
    ]
    store = open_store(store_url)
    testset = TestSet(name="evil<script>", documents=docs, cases=cases)
    out = run_sweep(config(), store=store, components=parts(), testset=testset)
    return store, out.run_id


def test_hostile_text_in_documents_and_answers_never_runs(evil_store, browser):
    store, run_id = evil_store
    page = browser
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    with _Server(store) as url:
        for path in (
            "/",
            f"/runs/{run_id}",
            f"/runs/{run_id}/cases?q=copper",
            f"/runs/{run_id}/cases/q-copper",
            f"/label?run={run_id}&labeler=eve",
        ):
            page.goto(url + path)
            page.wait_for_load_state("networkidle")
            assert page.evaluate("window.__xss") is None, path
            assert page.locator("#evil").count() == 0  # the <a> is text, not a link
        _shot(page, "hostile_case")
        page.goto(f"{url}/runs/{run_id}/cases/q-copper")
        text = page.locator("body").inner_text()
        assert "<script>" in text and "onerror=" in text and "javascript:" in text
    assert dialogs == []


def test_post_without_the_csrf_token_is_refused_and_read_only_refuses_all(evil_store, browser):
    store, run_id = evil_store
    page = browser
    with _Server(store) as url:
        res = page.request.post(f"{url}/runs/{run_id}/tag", form={"tag": "baseline"})
        assert res.status == 403
        assert store.find_by_tag("baseline") == []
    with _Server(store, read_only=True) as url:
        page.goto(url + "/")
        assert page.locator("button.tag-baseline").count() == 0
        res = page.request.post(f"{url}/runs/{run_id}/tag", form={"tag": "x", "csrf": "any"})
        assert res.status == 403
