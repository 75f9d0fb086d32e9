"""Every script in benchmarks/ runs in its ``--smoke`` size (tiny models, seconds) and prints its table, so a change
that breaks a benchmark fails CI instead of waiting for the next person who measures. Each runs as its own process,
as ``python script --smoke`` (``__main__``, its own argv, working folder and exit status); peers that are not
installed (bertviz) are skipped by the script with a printed line.

The processes fork from one that imported torch, transformers, matplotlib and attnwidgets once (multiprocessing's
forkserver with those modules preloaded): those imports were 2-3 s of each smoke run, a third of the tier. A
smoke run reports nothing: its figures in a forked process (import times, peak RSS) are not the script's real ones,
which come from running it as a person does.

``.ci/run`` runs this file as its own tier (``-m benchmark``), after the unit tests; each script's output is left in
``test-artifacts/benchmarks-smoke/``.
"""

from __future__ import annotations

import multiprocessing
import os
import runpy
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.benchmark

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))
ARTIFACTS = ROOT / "test-artifacts" / "benchmarks-smoke"

# What each script's table prints (its header): a smoke run that printed no table did not get to its measurements.
TABLES = {
    "bench_ablation.py": "slider/full",
    "bench_corpus.py": "| path | CPU s | ms / sentence | / SDPA fwd |",
    "bench_export.py": "| notebook | views (live) |",
    "bench_analysis.py": "/ bare: wall",
    "bench_fallback.py": "bundle off",
    "bench_generation.py": "| model | aw.generate",
    "bench_first_paint.py": "| view | build | first paint ms |",
    "bench_head_view_payload.py": "| setup | heads x tokens |",
    "bench_import.py": "| tree | statement | bytecode |",
    "bench_long_context.py": "run / SDPA fwd",
    "bench_long_views.py": "| figure |",
    "bench_notebooks.py": "Run All per notebook",
    "bench_patching.py": "| side | tokens | runs |",
    "bench_probe.py": "| sentences | data MiB | side |",
    "bench_saved_views.py": "| view | scope | state ms per display |",
    "bench_scale.py": "| work | 1 process",
    "bench_span_share.py": "span_share(",
    "bench_views.py": "result->widget",
    "gpu_check.py": "| model | check | device/dtype |",  # without CUDA its smoke run compares the CPU with itself
    "layer_crossings.py": "| action | crossings |",
    "train_mlm_head.py": "chosen on validation",  # a training script; its smoke run trains on 4 documents
    "train_shipped.py": "MiB together",  # makes the shipped runs; its smoke run loads and checks each file
}


def test_every_benchmark_has_a_smoke_check():
    missing = sorted(p.name for p in SCRIPTS if p.name not in TABLES)
    assert not missing, (f"{missing}: give each a --smoke flag (tiny sizes, seconds, still printing its table) and "
                         "add its table's header to TABLES here")


#: What the process the scripts fork from imports once (each script imports them again in a fresh process).
PRELOAD = ["numpy", "torch", "transformers", "matplotlib.pyplot", "attnwidgets", "attnwidgets.runner",
           "attnwidgets.widgets", "attnwidgets.plots", "attnwidgets.studies"]


def _run_script(script: str, cwd: str, out: str, err: str, env: dict[str, str]) -> None:
    """In the forked process: ``python script --smoke`` with stdout and stderr to files (the descriptors, so its own
    subprocesses write there too), exiting with the script's status."""
    os.chdir(cwd)
    os.environ.update(env)
    with open(out, "wb") as fo, open(err, "wb") as fe:
        os.dup2(fo.fileno(), 1)
        os.dup2(fe.fileno(), 2)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # lives as long as the process
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    sys.argv = [script, "--smoke"]
    sys.path[0] = str(Path(script).parent)  # as `python script` puts the script's folder first
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


@pytest.fixture(scope="module")
def forkserver():
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


ENV = {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), "HF_HUB_OFFLINE": "1",
       "TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false", "MPLBACKEND": "Agg"}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_benchmark_runs_in_smoke_size(script: Path, tmp_path: Path, forkserver):
    out_file, err_file = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    os.environ.update(ENV)  # the forkserver starts with the first script, in this environment (PYTHONPATH)
    proc = forkserver.Process(target=_run_script, args=(str(script), str(tmp_path), str(out_file), str(err_file), ENV))
    proc.start()
    proc.join(300)
    if proc.is_alive():
        proc.kill()
        proc.join()
    out = out_file.read_text(encoding="utf-8", errors="replace") if out_file.exists() else ""
    err = err_file.read_text(encoding="utf-8", errors="replace") if err_file.exists() else ""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)  # what each printed, to read after a CI run
    (ARTIFACTS / f"{script.stem}.txt").write_text(out + "\n--- stderr ---\n" + err[-5000:], encoding="utf-8")
    assert proc.exitcode == 0, f"{script.name} --smoke exited {proc.exitcode}:\n{out[-3000:]}\n{err[-3000:]}"
    table = TABLES.get(script.name)
    assert table is not None and table in out, f"{script.name} --smoke printed no table ({table!r}):\n{out[-3000:]}"
