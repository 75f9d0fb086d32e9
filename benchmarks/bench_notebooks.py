"""Run the tutorial notebooks through nbclient and print how long each cell takes: wall time and the kernel's CPU time.

Usage::

    python benchmarks/bench_notebooks.py                      # every notebook; cells over 5 s and each total
    python benchmarks/bench_notebooks.py --smoke              # notebook 05's first code cells only (CI: seconds)
    python benchmarks/bench_notebooks.py notebooks/02_bert.ipynb --all-cells
    python benchmarks/bench_notebooks.py --live               # LIVE = True: every demo trains on the spot
    python benchmarks/bench_notebooks.py --json before.json   # keep the numbers (compare two runs with --compare)
    python benchmarks/bench_notebooks.py --compare before.json after.json

Wall time is what a class waits; on a shared machine it grows with the load, so the kernel's CPU time (user + system
of the kernel process and its children, read with psutil before and after each cell) is printed beside it: what the
cell itself cost, whatever else the machine was doing. The load average at the start and at the end of each notebook
says how busy the machine was. Measures; asserts nothing.

``--live`` rewrites the notebooks' ``LIVE = False`` line (the switch in each notebook's first code cell) to
``LIVE = True`` in the copy that runs, so the demos train instead of loading what the package ships.

The kernel runs with one torch / BLAS thread unless ``--threads`` says otherwise (OMP_NUM_THREADS and friends), as
the notebooks are measured in the issue; ``MPLBACKEND=Agg`` and ``HF_HUB_OFFLINE=1`` keep it offline and headless.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SMOKE = ["05_lecture_quick_start.ipynb"]
SMOKE_CELLS = 3  # imports, LIVE, the first model run: seconds (CI runs every notebook in full in its browser tier)
LIVE_LINE = re.compile(r"^LIVE\s*=\s*False\b", re.MULTILINE)


def first_line(source: str) -> str:
    """The cell's first line that is not a comment or magic, cut to 70 characters (what the table names it by)."""
    for line in source.splitlines():
        s = line.strip()
        if s and not s.startswith(("#", "%")):
            return s[:70]
    return source.strip().splitlines()[0][:70] if source.strip() else "(empty)"


def run_notebook(path: Path, *, live: bool, timeout: int, kernel: str, max_cells: int | None = None) -> dict[str, Any]:
    """Execute ``path`` cell by cell in a fresh kernel; one record per code cell (index, wall s, CPU s, first line);
    only the first ``max_cells`` code cells when given."""
    import nbformat
    import psutil

    from attnwidgets.nbexport import notebook_client

    nb = nbformat.read(path, as_version=4)
    if live:
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.source = LIVE_LINE.sub("LIVE = True", cell.source)
    client = notebook_client(nb, path.parent, timeout=timeout, kernel_name=kernel)
    records: list[dict[str, Any]] = []
    load0 = os.getloadavg()
    start = time.perf_counter()
    with client.setup_kernel():
        pid = client.km.provisioner.process.pid  # type: ignore[union-attr]
        proc = psutil.Process(pid)

        def cpu() -> float:
            t = proc.cpu_times()
            return t.user + t.system + t.children_user + t.children_system

        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            if max_cells is not None and len(records) >= max_cells:
                break
            c0, w0 = cpu(), time.perf_counter()
            error = None
            try:
                client.execute_cell(cell, index)
            except Exception as exc:  # the table still prints; the error is named
                error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1][:200] if str(exc).strip() else ''}"
            records.append({"cell": index, "wall": time.perf_counter() - w0, "cpu": cpu() - c0,
                            "source": first_line(cell.source), "error": error})
            if error:
                break
    return {"notebook": path.name, "cells": records, "wall": time.perf_counter() - start,
            "cpu": sum(r["cpu"] for r in records), "load_start": load0[0], "load_end": os.getloadavg()[0],
            "live": live}


def print_notebook(rec: dict[str, Any], threshold: float, all_cells: bool) -> None:
    print(f"\n{rec['notebook']}  (LIVE = {rec['live']}; load average {rec['load_start']:.1f} at the start, "
          f"{rec['load_end']:.1f} at the end)")
    print(f"  {'cell':>4}  {'wall s':>7}  {'CPU s':>7}  source")
    for r in rec["cells"]:
        if all_cells or r["wall"] > threshold or r["cpu"] > threshold or r["error"]:
            print(f"  {r['cell']:>4}  {r['wall']:7.1f}  {r['cpu']:7.1f}  {r['source']}")
            if r["error"]:
                print(f"        ERROR {r['error']}")
    slowest = max(rec["cells"], key=lambda r: r["wall"], default=None)
    print(f"  total: {rec['wall']:.1f} s wall (kernel start included), {rec['cpu']:.1f} s kernel CPU; "
          f"{len(rec['cells'])} code cells" + (f"; slowest cell {slowest['cell']} ({slowest['wall']:.1f} s)"
                                                if slowest else ""))


def compare(before: Path, after: Path, threshold: float) -> None:
    """Side by side: every cell over ``threshold`` (wall or CPU) in either run, and each notebook's total. Cells are
    matched by their first line (indices move when a notebook gains a cell); a cell whose first line changed shows
    as gone from the first run and new in the second."""
    a = {r["notebook"]: r for r in json.loads(before.read_text())}
    b = {r["notebook"]: r for r in json.loads(after.read_text())}

    def slow(r: dict[str, Any] | None) -> bool:
        return r is not None and max(r["wall"], r["cpu"]) > threshold

    def pair(r: dict[str, Any] | None) -> str:
        return f"{r['wall']:7.1f} / {r['cpu']:5.1f}" if r else f"{'-':>15}"

    print(f"{'notebook':<36} {'cell':>4}  {'before wall / CPU s':>19}  {'after wall / CPU s':>18}  source")
    for name in sorted(set(a) & set(b)):
        by_src = {r["source"]: r for r in a[name]["cells"]}
        seen: set[int] = set()
        for r in b[name]["cells"]:
            old = by_src.get(r["source"])
            if old is not None:
                seen.add(old["cell"])
            if slow(r) or slow(old):
                print(f"{name[:36]:<36} {r['cell']:>4}  {pair(old):>19}  {pair(r):>18}  {r['source'][:60]}")
        for old in a[name]["cells"]:
            if old["cell"] not in seen and slow(old):
                print(f"{name[:36]:<36} {old['cell']:>4}  {pair(old):>19}  {'(changed)':>18}  {old['source'][:60]}")
        ta, tb = a[name], b[name]
        print(f"{name[:36]:<36} {'all':>4}  {pair(ta):>19}  {pair(tb):>18}  Run All; load average at the start "
              f"{ta['load_start']:.1f} / {tb['load_start']:.1f}")
    for name in sorted(set(a) ^ set(b)):
        print(f"{name[:36]:<36} only in {'the first' if name in a else 'the second'} run")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook in notebooks/")
    parser.add_argument("--smoke", action="store_true",
                        help=f"notebook 05's first {SMOKE_CELLS} code cells only (unless notebooks are named)")
    parser.add_argument("--cells", type=int, default=None, help="run only the first N code cells of each notebook")
    parser.add_argument("--live", action="store_true", help="set LIVE = True: the demos train on the spot")
    parser.add_argument("--threshold", type=float, default=5.0, help="print cells slower than this (s); default 5")
    parser.add_argument("--all-cells", action="store_true", help="print every cell")
    parser.add_argument("--timeout", type=int, default=1800, help="per-cell timeout (s)")
    parser.add_argument("--threads", type=int, default=1, help="torch / BLAS threads in the kernel; default 1")
    parser.add_argument("--kernel", default="python3")
    parser.add_argument("--json", type=Path, help="write the records here")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"),
                        help="print two saved runs side by side and exit")
    args = parser.parse_args(argv)
    if args.compare:
        compare(*args.compare, args.threshold)
        return 0
    paths = args.notebooks or ([ROOT / "notebooks" / n for n in SMOKE] if args.smoke else NOTEBOOKS)
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        parser.error(f"no such notebook: {', '.join(missing)}")
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    print(f"{len(paths)} notebook(s) on {os.cpu_count()} cores, {args.threads} thread(s) in the kernel; "
          f"python {sys.version.split()[0]}; cells over {args.threshold:g} s")
    records = []
    for path in paths:
        cells = args.cells if args.cells is not None else (SMOKE_CELLS if args.smoke else None)
        rec = run_notebook(path.resolve(), live=args.live, timeout=args.timeout, kernel=args.kernel, max_cells=cells)
        print_notebook(rec, args.threshold, args.all_cells)
        records.append(rec)
        if args.json:  # written after each notebook, so a long run that is stopped keeps what it measured
            args.json.write_text(json.dumps(records, indent=1))
    print("\nRun All per notebook (wall s / kernel CPU s): " +
          ", ".join(f"{r['notebook'][:2]} {r['wall']:.0f} / {r['cpu']:.0f}" for r in records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
