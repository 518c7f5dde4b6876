"""notebooks/agreement.ipynb runs top to bottom offline (nbclient, the venv's python3 kernel)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.fixtures.data import shared_data_dir

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "agreement.ipynb"


@pytest.mark.slow
def test_agreement_notebook_executes(monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    demo_labels = NOTEBOOK.parents[1] / "datasets" / "demo" / "labels.csv"
    if not shared_data_dir().is_dir() and not demo_labels.is_file():
        pytest.skip("neither ../shared/data nor datasets/demo/labels.csv is present")
    # The kernel spec runs `python`: make it the venv's interpreter.
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    monkeypatch.setenv("RAGJUDGE_NB_LIMIT", "3")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=600,
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    client.execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "\n".join(
        str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in outputs
    )
    # The agreement table carries intervals, and the plots are rendered.
    assert "ci_low" in text
    assert any("image/png" in o.get("data", {}) for o in outputs)
