"""Make the trained runs and the studies the package ships (``attnwidgets/data/shipped_<name>.npz``) from their
fixed seeds.

Usage::

    python benchmarks/train_shipped.py                   # every run and every study
    python benchmarks/train_shipped.py --only tiny-bert  # one (or several: --only reverse sts-sweep)
    python benchmarks/train_shipped.py --only extrapolation  # notebook 01 §4b: one toy decoder per position scheme
    python benchmarks/train_shipped.py --only induction-gpt2  # notebook 07: a tiny Hugging Face GPT-2 that copies
    python benchmarks/train_shipped.py --only norms      # notebook 01 §6b: the norm comparisons (shipped_norms.npz)
    python benchmarks/train_shipped.py --only finetune   # notebook 02 §7: fine-tuning's change per head
    python benchmarks/train_shipped.py --check           # load each shipped file and print what it holds
    python benchmarks/train_shipped.py --smoke           # what CI runs: --check (training is minutes, not seconds)

The recipes (what is trained, with which arguments) live in :data:`attnwidgets.teaching.shipped.RECIPES`, the studies
of the bundled model (a head sweep, pruning curves) in :data:`attnwidgets.studies.shipped.STUDIES`; this script only
runs them and writes the files, one thread, so the times recorded in each file (and printed by the notebooks as the
estimate for ``train=True``) are one CPU core's. ``tests/project/test_shipped_checkpoints.py`` checks that each file is
what its recipe or study makes; run this script again after changing a recipe, a study, or the code they run, and commit
the files.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def describe(run: object) -> str:
    """A shipped run's repr; a study's numbers in one line (a sweep's baseline and range, a curve's metric at
    each point)."""
    from attnwidgets.studies.pruning import PruningCurve
    from attnwidgets.studies.sweeps import SweepResult

    if isinstance(run, SweepResult):
        return (f"SweepResult of {run.heads.size} heads and {run.layers.size} layers ({run.mode}): baseline "
                f"{run.metric} {run.baseline:.4f}, heads {run.heads.min():.4f}..{run.heads.max():.4f}, layers "
                f"{run.layers.min():.4f}..{run.layers.max():.4f}")
    if isinstance(run, PruningCurve):
        points = ", ".join(f"{n}: {m:.4f}" for n, m in zip(run.frame["n_pruned"], run.frame["metric"]))
        return f"PruningCurve, {run.metric} by heads pruned: {points}"
    return str(run)


INDUCTION_GPT2 = "induction-gpt2"


def induction_gpt2(check: bool) -> int:
    """Train (unless ``check``) and load the induction decoder of notebook 07 (attnwidgets.studies.induction_model);
    returns its file's size."""
    from attnwidgets.studies import induction_model as im

    path = im.SHIPPED
    if not check:
        start = time.perf_counter()
        model, history = im.train_induction_decoder()
        seconds = time.perf_counter() - start
        im.save_weights(model, history, path, seconds)
        print(f"{INDUCTION_GPT2}: train_induction_decoder(**{im.RECIPE}) -> {path.relative_to(ROOT)} "
              f"({path.stat().st_size / 1024:.0f} KiB, {seconds:.0f} s)")
    _, history, seconds = im.load_weights()
    print(f"  {INDUCTION_GPT2}: second-copy loss {history['second_copy_loss'][:50].mean():.3f} over the first 50 "
          f"steps, {history['second_copy_loss'][-50:].mean():.3f} over the last 50; trained in {seconds:.0f} s")
    return path.stat().st_size


def main(argv: list[str] | None = None) -> int:
    import torch

    from attnwidgets.studies.shipped import STUDIES, load_study, make_study, study_path
    from attnwidgets.studies.shipped_finetune import finetune_path, make_finetune, shipped_finetune
    from attnwidgets.teaching.shipped import RECIPES, load_shipped, make_shipped, shipped_path
    from attnwidgets.teaching.shipped_norms import COMPARISONS, make_norms, norms_path, shipped_norms

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=sorted([*RECIPES, *STUDIES, "norms", "finetune", INDUCTION_GPT2]),
                        help="make only these")
    parser.add_argument("--check", action="store_true", help="load the shipped files and print them; train nothing")
    parser.add_argument("--smoke", action="store_true", help="as --check (CI's benchmark tier; tests/"
                        "test_shipped_checkpoints.py re-makes the first steps of each run against its file)")
    args = parser.parse_args(argv)
    args.check = args.check or args.smoke
    names = args.only or [*RECIPES, *STUDIES, "norms", "finetune", INDUCTION_GPT2]
    torch.set_num_threads(1)
    total = 0
    if INDUCTION_GPT2 in names:
        total += induction_gpt2(args.check)
        names = [n for n in names if n != INDUCTION_GPT2]
    for name in names:
        if name == "norms":      # notebook 01 §6b's compare_norms calls, one file
            if not args.check:
                start = time.perf_counter()
                path = make_norms()
                print(f"norms: compare_norms for {', '.join(COMPARISONS)} -> {path.relative_to(ROOT)} "
                      f"({path.stat().st_size / 1024:.0f} KiB, {time.perf_counter() - start:.0f} s)")
            for comparison in COMPARISONS:
                print(f"  {comparison}: {shipped_norms(comparison)}")
            total += norms_path().stat().st_size
            continue
        if name == "finetune":   # notebook 02 §7's compare_finetuning on the bundled model
            from attnwidgets.runner import get_runner

            if not args.check:
                start = time.perf_counter()
                path = make_finetune()
                print(f"finetune: compare_finetuning -> {path.relative_to(ROOT)} "
                      f"({path.stat().st_size / 1024:.0f} KiB, {time.perf_counter() - start:.0f} s)")
            cmp = shipped_finetune(get_runner(), progress=False)
            print(f"  held-out accuracy {cmp.log['heldout_accuracy']:.3f}, similarity "
                  f"{cmp.similarity.min():.3f}..{cmp.similarity.max():.3f}")
            total += finetune_path().stat().st_size
            continue
        study = name in STUDIES
        if not args.check:
            start = time.perf_counter()
            path = make_study(name, progress=False) if study else make_shipped(name, progress=False)
            call = STUDIES[name].call() if study else RECIPES[name].call()
            print(f"{name}: {call} -> {path.relative_to(ROOT)} "
                  f"({path.stat().st_size / 1024:.0f} KiB, {time.perf_counter() - start:.0f} s)")
        start = time.perf_counter()
        run = load_study(name) if study else load_shipped(name)
        print(f"  loads in {time.perf_counter() - start:.2f} s: {describe(run)}")
        total += (study_path(name) if study else shipped_path(name)).stat().st_size
    print(f"{len(names)} file(s), {total / 2**20:.2f} MiB together")
    return 0


if __name__ == "__main__":
    sys.exit(main())
