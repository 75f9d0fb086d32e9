"""What `attnwidgets export` writes for each tutorial: the page with every view as its picture (``--pictures``, the
page before issue 32 §4) and with every view live (the default), their sizes, and the time each part takes; and what
the views' saved states (``application/vnd.attnwidgets.view+json``, boxes of views included) add to the executed
notebook itself: its size with them and with every such entry removed (the notebook before issue 32 §2).

Each notebook is executed once (with each view's saved state in its bundle, as the default export runs it); both
pages are then written from that executed copy, so the two columns differ only in how the views are shown.

Run: ``python benchmarks/bench_export.py [NOTEBOOK ...] [--smoke] [--keep DIR]``. Prints a table; no assertions.
``--smoke``: a two-view notebook made on the spot (that it runs, for CI). ``--keep DIR``: also write the executed
copies and both pages there (the docs build reads executed copies from such a folder).
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from pathlib import Path

import nbformat

from attnwidgets.export import format_size
from attnwidgets.nbexport import VIEW_MIME, execute, page_of, read_notebook

ROOT = Path(__file__).resolve().parents[1]


def smoke_notebook(folder: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Smoke\n\n$\\mathrm{softmax}(x)$"),
                nbformat.v4.new_code_cell("import numpy as np, attnwidgets as aw\n"
                                          "r = aw.AttentionResult.from_arrays(np.full((2, 2, 4, 4), 0.25, np.float32),"
                                          " list('abcd'))"),
                nbformat.v4.new_code_cell("aw.AttentionHeatmap(r)"), nbformat.v4.new_code_cell("aw.ModelView(r)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = folder / "smoke.ipynb"
    nbformat.write(nb, path)
    return path


def without_saved_states(nb: nbformat.NotebookNode) -> str:
    """``nb`` as saved with every view's (and box's) saved-state entry removed: the notebook as it was before them."""
    bare = copy.deepcopy(nb)
    for cell in bare.cells:
        for out in cell.get("outputs", []):
            if isinstance(out.get("data"), dict):
                out["data"].pop(VIEW_MIME, None)
    return nbformat.writes(bare)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_export_"))
    paths = [smoke_notebook(tmp)] if args.smoke else (args.notebooks or sorted((ROOT / "notebooks").glob("*.ipynb")))
    print("| notebook | views (live) | executed .ipynb: no saved states → with them | page --pictures | page live | "
          "run cells s | page s |")
    print("|---|---|---|---|---|---|---|")
    for path in paths:
        nb = read_notebook(path)
        t0 = time.perf_counter()
        execute(nb, path.resolve(), save_views=True)
        ran = time.perf_counter() - t0
        executed = nbformat.writes(nb)
        bare = len(without_saved_states(nb).encode())
        t1 = time.perf_counter()
        pictures, _ = page_of(copy.deepcopy(nb), path.stem, pictures=True)
        live, stats = page_of(copy.deepcopy(nb), path.stem)
        paged = (time.perf_counter() - t1) / 2
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            (args.keep / path.name).write_text(executed, encoding="utf-8")
            (args.keep / f"{path.stem}.pictures.html").write_text(pictures, encoding="utf-8")
            (args.keep / f"{path.stem}.html").write_text(live, encoding="utf-8")
        print(f"| {path.name} | {stats.views} ({stats.live}) | {format_size(bare)} → "
              f"{format_size(len(executed.encode()))} | "
              f"{format_size(len(pictures.encode()))} | {format_size(len(live.encode()))} | {ran:.1f} | {paged:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
