"""issue 18: the example notebook executes (nbclient), so it cannot rot."""

import nbformat
from nbclient import NotebookClient


def test_issue_18_example_notebook_executes(root, cli):
    path = root / "examples" / "notebook.ipynb"
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    # the profile cell printed p; the figures were drawn
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "p = " in text and "S_r " in text
