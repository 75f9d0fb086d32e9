"""Every script in benchmarks/ runs in its ``--smoke`` size (tiny models, seconds) and prints its table, so a change
that breaks a benchmark fails CI instead of waiting for the next person who measures. Each runs as its own process,
as a person runs it; peers that are not installed (bertviz) are skipped by the script with a printed line.

``.ci/run`` runs this file as its own tier (``-m benchmark``), after the unit tests; each script's output is left in
``test-artifacts/benchmarks-smoke/``.
"""

from __future__ import annotations

import os
import subprocess
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


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_benchmark_runs_in_smoke_size(script: Path, tmp_path: Path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false",
           "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, str(script), "--smoke"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    out = proc.stdout
    ARTIFACTS.mkdir(parents=True, exist_ok=True)  # what each printed, to read after a CI run
    (ARTIFACTS / f"{script.stem}.txt").write_text(out + "\n--- stderr ---\n" + proc.stderr[-5000:], encoding="utf-8")
    assert proc.returncode == 0, (f"{script.name} --smoke exited {proc.returncode}:\n{out[-3000:]}\n"
                                  f"{proc.stderr[-3000:]}")
    table = TABLES.get(script.name)
    assert table is not None and table in out, f"{script.name} --smoke printed no table ({table!r}):\n{out[-3000:]}"
