"""Make the trained runs the package ships (``attnwidgets/data/shipped_<name>.npz``) from their fixed seeds.

Usage::

    python benchmarks/train_shipped.py                   # every run in attnwidgets.teaching.shipped.RECIPES
    python benchmarks/train_shipped.py --only tiny-bert  # one (or several: --only reverse induction)
    python benchmarks/train_shipped.py --check           # load each shipped file and print what it holds

The recipes (what is trained, with which arguments) live in :data:`attnwidgets.teaching.shipped.RECIPES`; this script
only runs them and writes the files, one thread, so the times recorded in each file (and printed by the notebooks as
the estimate for ``train=True``) are one CPU core's. ``tests/test_shipped_checkpoints.py`` checks that each file is
what its recipe makes; run this script again after changing a recipe or the training code, and commit the files.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    import torch

    from attnwidgets.teaching.shipped import RECIPES, load_shipped, make_shipped, shipped_path

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=sorted(RECIPES), help="make only these runs")
    parser.add_argument("--check", action="store_true", help="load the shipped files and print them; train nothing")
    args = parser.parse_args(argv)
    names = args.only or list(RECIPES)
    torch.set_num_threads(1)
    total = 0
    for name in names:
        if not args.check:
            start = time.perf_counter()
            path = make_shipped(name, progress=False)
            print(f"{name}: {RECIPES[name].call()} -> {path.relative_to(ROOT)} "
                  f"({path.stat().st_size / 1024:.0f} KiB, {time.perf_counter() - start:.0f} s)")
        start = time.perf_counter()
        run = load_shipped(name)
        print(f"  loads in {time.perf_counter() - start:.2f} s: {run}")
        total += shipped_path(name).stat().st_size
    print(f"{len(names)} file(s), {total / 2**20:.2f} MiB together")
    return 0


if __name__ == "__main__":
    sys.exit(main())
