"""What importing the views costs in a fresh process (a fresh kernel): wall and CPU time, one thread.

Usage::

    python benchmarks/bench_import.py                          # this checkout, median of 5 fresh processes
    python benchmarks/bench_import.py --tree /path/to/other    # and another source tree, run side by side
    python benchmarks/bench_import.py --smoke                  # one process per statement (CI)

Each statement runs in its own fresh interpreter (``-c``), timed inside it around the statement alone, with
``OMP_NUM_THREADS=1``. Two ways Python finds our code: with its compiled bytecode cached (an installed package;
a ``PYTHONPYCACHEPREFIX`` folder warmed by one run first) and without (``PYTHONDONTWRITEBYTECODE``, an empty
prefix: every module compiled from source, as in a fresh checkout or a CI job that writes no ``.pyc``). With
``--tree`` the trees take turns, process by process, so both see the same load. Prints medians; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATEMENTS = {
    "import attnwidgets": "import attnwidgets",
    "import attnwidgets.widgets": "import attnwidgets.widgets",
    "aw.AttentionHeatmap": "import attnwidgets as aw; aw.AttentionHeatmap",
    "aw.HeadView": "import attnwidgets as aw; aw.HeadView",
}
HEAVY = ("torch", "transformers", "matplotlib", "pandas", "scipy", "sklearn")
CHILD = """import sys, time
w, c = time.perf_counter(), time.process_time()
exec({stmt!r})
w, c = time.perf_counter() - w, time.process_time() - c
ours = sum(1 for m in sys.modules if m.split('.')[0] == 'attnwidgets')
heavy = [m for m in {heavy!r} if m in sys.modules]
print('RESULT', {{'wall': w, 'cpu': c, 'ours': ours, 'heavy': heavy}})
"""


def _once(tree: Path, stmt: str, cache: Path | None) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPYCACHEPREFIX", None)
    if cache is None:  # our modules compiled from source, nothing written (installed packages keep their .pyc)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env["PYTHONPYCACHEPREFIX"] = str(cache)
    code = CHILD.format(stmt=stmt, heavy=HEAVY)
    # an empty folder to run in: `python -c` puts its working folder first on sys.path, and a stray numbers.py in
    # the shared temp folder shadowed the standard library's (a smoke run failed on it)
    with tempfile.TemporaryDirectory() as empty:
        out = subprocess.run([sys.executable, "-c", code], env=env, cwd=empty, capture_output=True, text=True,
                             check=True).stdout
    line = next(x for x in out.splitlines() if x.startswith("RESULT "))
    return json.loads(line[7:].replace("'", '"'))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, action="append", default=[],
                        help="another source tree (the folder holding attnwidgets/) measured side by side")
    parser.add_argument("--repeat", type=int, default=5, help="fresh processes per statement and tree")
    parser.add_argument("--smoke", action="store_true", help="one process each, only this checkout (CI)")
    args = parser.parse_args(argv)
    trees = [ROOT] if args.smoke else [ROOT, *[t.resolve() for t in args.tree]]
    repeat = 1 if args.smoke else args.repeat
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; median of {repeat} fresh processes, "
          "one thread")
    print("| tree | statement | bytecode | wall ms | CPU ms | our modules | heavy imports |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for label, stmt in STATEMENTS.items():
            for cached in (True, False):
                caches = {t: Path(d) / f"pyc-{i}" if cached else None for i, t in enumerate(trees)}
                if cached:
                    for t in trees:
                        _once(t, stmt, caches[t])  # warm the bytecode cache
                runs: dict[Path, list[dict[str, object]]] = {t: [] for t in trees}
                for _ in range(repeat):
                    for t in trees:  # taking turns: the same load for each tree
                        runs[t].append(_once(t, stmt, caches[t]))
                for t in trees:
                    r = runs[t]
                    wall = statistics.median(float(x["wall"]) for x in r) * 1000  # type: ignore[arg-type]
                    cpu = statistics.median(float(x["cpu"]) for x in r) * 1000  # type: ignore[arg-type]
                    name = "this checkout" if t == ROOT else str(t)
                    heavy = ", ".join(r[-1]["heavy"]) or "none"  # type: ignore[arg-type]
                    print(f"| {name} | `{label}` | {'cached' if cached else 'none'} | {wall:.0f} | {cpu:.0f} | "
                          f"{r[-1]['ours']} | {heavy} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
