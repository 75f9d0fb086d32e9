"""One local Ray for the test files that need a real one (test_pool.py, test_scale.py): a start costs 10 s and more on
two cores, and every Ray test before shared two of them."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    """A local Ray with 2 worker CPUs and 1 GPU declared as a logical resource (so a GPU worker's reservation can be
    read back on a machine without one); its workers can import the test modules here. Each file that uses it ends
    its own workers (``shutdown_pool``) when it ends; Ray itself stops at the end of the session, or earlier when a
    file calls ``ray.shutdown()``."""
    ray = pytest.importorskip("ray")
    from attnwidgets.studies import pool

    here = Path(__file__).resolve().parent
    path = [str(here.parents[1]), str(here.parent), str(here), os.environ.get("PYTHONPATH", "")]  # root, tests, here
    env = {"PYTHONPATH": os.pathsep.join(path),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false",
           "OMP_NUM_THREADS": "1"}
    ours = not ray.is_initialized()
    started = time.perf_counter()
    if ours:
        pool.start_local_ray(ray, 2, env, num_gpus=1)
    print(f"ray start-up {time.perf_counter() - started:.1f} s")
    yield ray
    pool.shutdown_pool()
    if ours and ray.is_initialized():
        ray.shutdown()
