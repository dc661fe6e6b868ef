"""Build ``notebooks/attention.ipynb`` from its source, ``notebooks/attention.py`` (jupytext
percent format), executed top to bottom so that the committed notebook carries its outputs.

    python notebooks/build.py                 # regenerate attention.ipynb (a few minutes)
    python notebooks/build.py --out FILE      # write the executed notebook elsewhere

Needs the notebook extra (``pip install -e ".[notebook]"``). ``tests/test_notebook.py`` uses
the same two steps: :func:`from_source` (is the ``.ipynb`` in sync?) and :func:`execute` (does
it run?).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SOURCE = HERE / "attention.py"
NOTEBOOK = HERE / "attention.ipynb"
KERNEL = "python3"
CELL_TIMEOUT_S = 1800  # the training cells of FULL = True take longest


def from_source(path: Path = SOURCE) -> nbformat.NotebookNode:
    """The notebook the percent file describes, without outputs."""
    return jupytext.read(path, fmt="py:percent")


def execute(notebook: nbformat.NotebookNode, cwd: Path = REPO) -> nbformat.NotebookNode:
    """Run every cell in a fresh ``python3`` kernel started in ``cwd`` (one thread per op, as
    the notebook's trainings use); raises ``nbclient.exceptions.CellExecutionError`` on the
    first cell that fails (an error or a failed assert). Returns ``notebook``, now with outputs."""
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name=KERNEL,
        record_timing=False,  # no timestamps in the committed file
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute(env={**os.environ, "OMP_NUM_THREADS": "1"})
    return notebook


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=NOTEBOOK, help="where to write the notebook")
    args = parser.parse_args()
    started = time.perf_counter()
    notebook = execute(from_source())
    nbformat.write(notebook, args.out)
    print(f"wrote {args.out} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
