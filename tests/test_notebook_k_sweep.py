"""notebooks/k_sweep.ipynb runs top to bottom offline (on a small sample of questions)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "k_sweep.ipynb"


@pytest.mark.slow
def test_k_sweep_notebook_executes(monkeypatch, tmp_path):
    monkeypatch.setenv("RAGJUDGE_NB_CASES", "6")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    client.execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors, errors
    text = "\n".join(
        str(o.get("text", "")) + str(o.get("data", {}).get("text/markdown", "")) for o in outputs
    )
    assert "finished" in text
    assert "Best k =" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 4  # judges, retrieval, objective, tokens/cost
