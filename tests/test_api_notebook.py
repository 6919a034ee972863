"""docs/api_example.ipynb runs top to bottom (offline, in seconds), so the example cannot rot."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "api_example.ipynb"


@pytest.mark.heavy
def test_example_notebook_runs(lama_dir, tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("KBC_DATA", str(lama_dir))
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the kernel imports this checkout, whatever else is installed
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()  # a failing cell raises here
    outputs = {cell["id"]: cell.get("outputs", []) for cell in notebook.cells if cell["cell_type"] == "code"}

    def text(cell: str) -> str:
        return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in outputs[cell])

    assert (tmp_path / "runs" / "api-example" / "summary.json").is_file()  # written where the notebook runs
    assert "Run('runs/api-example': lama, corpora trex; predictors freq, bert)" in text("cell-03")
    assert all(name in text("cell-05") for name in ("P36", "P19", "P1412", "freq", "bert"))
    assert any("image/png" in o.get("data", {}) for o in outputs["cell-12"])  # the plot
    assert "gold KB" in text("cell-20") and " was born in [MASK] . gold: [" in text("cell-20")
    assert text("cell-22") == ("--relations P9999: no chosen corpus (trex) has this relation; `kbc data stats --corpus "
                               "trex` lists its 41 relations\n")


def test_without_kbc_data_the_notebook_reads_the_checkouts_data(monkeypatch):
    """Jupyter runs the page in docs/, so its default LAMA folder is the checkout's data/lama (where `kbc data
    download lama` puts it), not docs/data/lama."""
    import os

    import nbformat

    monkeypatch.delenv("KBC_DATA", raising=False)
    monkeypatch.chdir(NOTEBOOK.parent)
    setup = next(cell for cell in nbformat.read(NOTEBOOK, as_version=4).cells if cell["id"] == "cell-01")
    names: dict = {}
    exec(setup["source"], names)
    assert os.path.abspath(names["DATA"]) == str(ROOT / "data" / "lama")
