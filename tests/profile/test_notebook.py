from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "profile-walkthrough.ipynb"


def test_profile_walkthrough_executes():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert len([o for o in outputs if "image/png" in o.get("data", {})]) >= 3
    text = "".join(o.get("text", "") for o in outputs)
    assert "v1 against itself: no-change" in text
    assert "[class] " in text and "computation (cpu) rose" in text and "quiho.profile 1" in text
