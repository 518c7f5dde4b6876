"""The sweep's figures are laid out with fixed margins: every text stays inside its figure and
no panel's titles, labels or tick labels run into another panel or the figure's title."""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from ragjudge.store import RetrievalMetric
from ragjudge.store.view import RunView
from ragjudge.sweep.analysis import analyse
from ragjudge.sweep.plots import sweep_figures
from tests.test_sweep_analysis import KS, answer, data, res

JUDGES = ["faithfulness", "answer_relevancy", "completeness", "context_recall", "contexts"]
METRICS = ["hit_rate", "mrr", "ndcg", "precision", "recall", "f1", "map"]


def wide(cost: float) -> RunView:
    """Five judges and seven retrieval metrics (panels in rows of three), 30 cases."""
    results, answers, retrieval = [], [], []
    for i, k in itertools.product(range(30), KS):
        case = f"q{i}"
        score = (i % 7) / 7 * k / 4
        results += [res(j, case, k, score, cost) for j in JUDGES]
        answers.append(answer(case, k))
        retrieval += [RetrievalMetric(case, k, m, score) for m in METRICS]
    return RunView.from_rows("r", answers=answers, results=results, retrieval=retrieval)


def overlaps(a, b) -> bool:
    return a.x0 < b.x1 - 1 and b.x0 < a.x1 - 1 and a.y0 < b.y1 - 1 and b.y0 < a.y1 - 1


@pytest.mark.parametrize(
    ("view", "judges"),
    [
        (data(), ["faithfulness"]),
        (data(cost=0.00031), ["faithfulness", "completeness"]),
        (wide(0.0), JUDGES),
        (wide(0.0042), JUDGES),
    ],
    ids=["one-panel", "priced", "rows", "rows-priced"],
)
def test_texts_inside_and_panels_apart(view, judges):
    summary = analyse(view, ks=KS, judges=judges)
    figures = sweep_figures(summary)
    assert set(figures) == {"judges", "retrieval", "objective", "tokens_cost"}
    for name, fig in figures.items():
        renderer = FigureCanvasAgg(fig).get_renderer()
        fig.draw(renderer)  # tick labels exist once drawn
        frame = fig.bbox
        # A panel's tight box holds what is drawn of it: titles, labels, tick labels, legend.
        panels = [ax.get_tightbbox(renderer) for ax in fig.axes if ax.axison]
        heading = [fig._suptitle.get_window_extent(renderer)] if fig._suptitle else []
        assert panels, name
        for box in panels + heading:
            inside = (
                box.x0 >= frame.x0 - 1
                and box.x1 <= frame.x1 + 1
                and box.y0 >= frame.y0 - 1
                and box.y1 <= frame.y1 + 1
            )
            assert inside, (name, box, frame.bounds)
        for a, b in itertools.combinations(panels + heading, 2):
            assert not overlaps(a, b), (name, a, b)


def test_no_pyplot():
    """Writing the sweep's plots never imports pyplot (global figure state, unsafe in the web
    app's worker threads)."""
    code = (
        "import sys, tempfile, pathlib\n"
        "from tests.test_sweep_analysis import KS, data\n"
        "from ragjudge.sweep.analysis import analyse\n"
        "from ragjudge.sweep.plots import write_plots\n"
        "out = pathlib.Path(tempfile.mkdtemp())\n"
        "written = write_plots(analyse(data(), ks=KS, judges=['faithfulness']), out)\n"
        "assert all(p.read_bytes()[:4] == b'\\x89PNG' for p in written.values())\n"
        "print('matplotlib.pyplot' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
