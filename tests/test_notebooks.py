"""Jupyter notebooks: linted cell by cell, IPython syntax skipped, fixes written back into cells."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from cli_run import codes, devlint


def code(source: list[str], outputs=None, count=1, **metadata) -> dict:
    return {
        "cell_type": "code", "execution_count": count, "metadata": metadata,
        "outputs": outputs if outputs is not None else [], "source": source,
    }


def markdown(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": [text]}


OUTPUT = [{"name": "stdout", "output_type": "stream", "text": ["tensor([1., 2., 3.])\n"]}]


def notebook(cells: list[dict], language: str = "python") -> dict:
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": language, "name": "python3"},
            "language_info": {"name": language, "version": "3.11.7"},
        },
        "nbformat": 4, "nbformat_minor": 5,
    }


def dump(nb: dict) -> str:
    """As nbformat writes a notebook."""
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


NB = notebook([
    markdown("# Training \u2014 on any device\n"),
    code(["%matplotlib inline\n", "!pip install -q torch\n", "import torch"]),
    code(["x = torch.randn(3)\n", "x = x.to(torch.float16, 'cpu')\n", "print(x)"], outputs=OUTPUT, count=2, tags=["keep"]),
    code(["%%bash\n", "echo x.to(torch.float16, 'cpu')\n"], count=3),
    code(["files = !ls\n", "torch.cuda?\n", "%time y = torch.ones(1)\n", "for f in files:\n", "    !echo $f\n",
          "    y = y.to(torch.float16, 'cpu')"], count=4),
    code(["%%time\n", "z = x.to(torch.float16, 'cpu')"], count=5),
])


def write(tmp_path: Path, nb: dict, name: str = "nb.ipynb") -> Path:
    path = tmp_path / name
    path.write_text(dump(nb), encoding="utf-8")
    return path


def lint(tmp_path: Path, *args: str):
    out = devlint("--output-format", "concise", "--select", "DEV1,DEV2,DEV3", *args, cwd=tmp_path)
    assert out.returncode in (0, 1), out.stdout + out.stderr
    return out


def test_findings_are_placed_by_cell_and_magics_are_skipped(tmp_path):
    write(tmp_path, NB)
    out = lint(tmp_path, "nb.ipynb")
    assert out.stderr == ""
    # Cell 3 (the markdown cell is cell 1) uses `torch` imported in cell 2.
    assert "nb.ipynb:cell 3:2:5: DEV201 [*] " in out.stdout
    assert "nb.ipynb:cell 5:6:9: DEV201 [*] " in out.stdout
    assert "nb.ipynb:cell 6:2:5: DEV201 [*] " in out.stdout  # a %%time cell's body is Python
    assert codes(out) == [("nb.ipynb:cell 3", 2, "DEV201"), ("nb.ipynb:cell 5", 6, "DEV201"), ("nb.ipynb:cell 6", 2, "DEV201")]
    item = json.loads(devlint("--output-format", "json", "nb.ipynb", cwd=tmp_path).stdout)[0]
    assert item["filename"] == "nb.ipynb" and item["cell"] == 3 and item["location"] == {"row": 2, "column": 5}


def test_directories_include_notebooks(tmp_path):
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", NB)
    assert "sub/nb.ipynb:cell 3:2:5: DEV201" in lint(tmp_path, ".").stdout


def test_full_output_shows_the_cell_source(tmp_path):
    write(tmp_path, NB)
    out = devlint("--select", "DEV201", "nb.ipynb", cwd=tmp_path).stdout
    assert out.startswith("nb.ipynb:cell 3:2:5: DEV201")
    assert "2 | x = x.to(torch.float16, 'cpu')" in out


def test_fix_writes_cells_back_keeping_outputs_and_metadata(tmp_path):
    path = write(tmp_path, NB)
    out = lint(tmp_path, "--fix", "nb.ipynb")
    assert "Fixed 3 problems." in out.stdout
    expected = copy.deepcopy(NB)
    expected["cells"][2]["source"][1] = "x = x.to('cpu', torch.float16)\n"
    expected["cells"][4]["source"][5] = "    y = y.to('cpu', torch.float16)"
    expected["cells"][5]["source"][1] = "z = x.to('cpu', torch.float16)"
    # Only the fixed lines change: outputs, metadata, magics, other cells and layout are kept byte for byte.
    assert path.read_text(encoding="utf-8") == dump(expected)
    again = lint(tmp_path, "--fix", "nb.ipynb")
    assert "Fixed" not in again.stdout and path.read_text(encoding="utf-8") == dump(expected)


def test_diff_shows_cells_and_writes_nothing(tmp_path):
    path = write(tmp_path, NB)
    out = devlint("--diff", "--select", "DEV201", "nb.ipynb", cwd=tmp_path)
    assert "--- a/nb.ipynb:cell 3\n+++ b/nb.ipynb:cell 3\n" in out.stdout
    assert "-x = x.to(torch.float16, 'cpu')\n+x = x.to('cpu', torch.float16)\n" in out.stdout
    assert path.read_text(encoding="utf-8") == dump(NB)


def test_source_as_one_string_and_compact_layout_are_kept(tmp_path):
    nb = notebook([code("import torch\nx = torch.randn(3)\nx = x.to(torch.float16, 'cpu')")])
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb))
    lint(tmp_path, "--fix", "nb.ipynb")
    nb["cells"][0]["source"] = "import torch\nx = torch.randn(3)\nx = x.to('cpu', torch.float16)"
    assert path.read_text() == json.dumps(nb)


def test_a_broken_cell_is_a_syntax_error_and_the_rest_is_linted(tmp_path):
    nb = notebook([code(["import torch\n"]), code(["def f(:\n", "    pass"]), code(["x = torch.randn(3).to(torch.float16, 'cpu')"])])
    path = write(tmp_path, nb)
    out = lint(tmp_path, "--fix", "nb.ipynb")
    assert "nb.ipynb:cell 2:1:7: DEV000 SyntaxError" in out.stdout
    fixed = json.loads(path.read_text())
    assert fixed["cells"][1]["source"] == ["def f(:\n", "    pass"]
    assert fixed["cells"][2]["source"] == ["x = torch.randn(3).to('cpu', torch.float16)"]


def test_noqa_works_in_cells(tmp_path):
    nb = notebook([code(["# devlint: noqa: DEV1\n", "import torch\n"]),
                   code(["x = torch.ones(1).cuda()\n", "y = x.to(torch.float16, 'cpu')  # noqa: DEV201\n"])])
    write(tmp_path, nb)
    assert codes(lint(tmp_path, "nb.ipynb")) == []


def test_other_kernels_and_broken_files(tmp_path):
    r = notebook([code(["x <- torch$randn(3)\n", "x.to(torch.float16, 'cpu')"])], language="R")
    write(tmp_path, r, "r.ipynb")
    assert codes(lint(tmp_path, "r.ipynb")) == []
    (tmp_path / "broken.ipynb").write_text("{not json")
    out = devlint("broken.ipynb", cwd=tmp_path)
    assert out.returncode == 2 and "broken.ipynb" in out.stderr and "invalid JSON" in out.stderr
