"""A local Ray start that fails leaves nothing of ours running and the caller's environment as it was, and says what
to set; one that works leaves the environment as it was too.

No Ray cluster is started here (they take 10 s and more on two cores): ``ray.init`` is replaced by one that raises
what Ray raises under load, after spawning a process named like Ray's GCS server, as a real half-started Ray does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from attnwidgets.studies import pool

#: What ray.init raised on a busy machine (the raylet did not register within ray.init's 30 s wait).
NODE_INFO = ("Failed to get node info for possible node ids: ['ab12'] when trying to resolve node to connect to "
             "(raylet start wait time exceeded)")
STARTUP = ("The current node timed out during startup. This could happen because some of the raylet failed to "
           "startup or the GCS has become overloaded.")
VAR = "RAY_agent_register_timeout_ms"


class FakeRay:
    """``init`` spawns a stand-in for Ray's gcs_server (a child process whose command line names it), records the
    environment it saw, then raises ``error`` (None: it starts)."""

    def __init__(self, error: str | None, fail_times: int = 99) -> None:
        self.error, self.fail_times = error, fail_times
        self.inits: list[str | None] = []
        self.shutdowns = 0
        self.spawned: list[subprocess.Popen[bytes]] = []

    def init(self, **kwargs: Any) -> None:
        self.inits.append(os.environ.get(VAR))
        self.spawned.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)",
                                              "ray/core/src/ray/gcs/gcs_server"]))
        if self.error is not None and len(self.inits) <= self.fail_times:
            raise Exception(self.error)  # Ray raises a bare Exception

    def shutdown(self) -> None:
        self.shutdowns += 1


@pytest.fixture
def fake_ray():
    made: list[FakeRay] = []

    def make(error: str | None, fail_times: int = 99) -> FakeRay:
        made.append(FakeRay(error, fail_times))
        return made[-1]

    yield make
    for ray in made:  # whatever the test found, leave no process behind
        for proc in ray.spawned:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


@pytest.mark.parametrize("error", [NODE_INFO, STARTUP])
def test_a_start_that_times_out_leaves_nothing_running_and_the_environment_as_it_was(fake_ray, monkeypatch, error):
    monkeypatch.delenv(VAR, raising=False)
    before = dict(os.environ)
    ray = fake_ray(error)
    with pytest.raises(RuntimeError, match=r"did not start in 3 tries.*nothing of that start is left running.*"
                                           r"RAY_agent_register_timeout_ms higher than the 120000.*ray_address='auto'"):
        pool.start_local_ray(ray, 2, {})
    assert ray.inits == ["120000"] * 3, "each try starts with the agents' 2 min"
    assert ray.shutdowns == 3
    assert dict(os.environ) == before, "the environment is as it was"
    for proc in ray.spawned:
        assert proc.wait(timeout=10) is not None, "the half-started GCS server was ended"


def test_another_error_is_raised_as_it_is_after_the_same_cleaning_up(fake_ray, monkeypatch):
    monkeypatch.setenv(VAR, "300000")  # the caller's own value is used, and kept
    before = dict(os.environ)
    ray = fake_ray("Port 6379 is already in use")
    with pytest.raises(Exception, match="already in use"):
        pool.start_local_ray(ray, 2, {})
    assert ray.inits == ["300000"] and ray.shutdowns == 1
    assert dict(os.environ) == before
    assert ray.spawned[0].wait(timeout=10) is not None


def test_a_start_that_works_on_a_second_try_leaves_the_environment_as_it_was(fake_ray, monkeypatch):
    monkeypatch.delenv(VAR, raising=False)
    ray = fake_ray(STARTUP, fail_times=1)
    pool.start_local_ray(ray, 2, {})
    assert ray.inits == ["120000", "120000"] and ray.shutdowns == 1
    assert VAR not in os.environ
    assert ray.spawned[0].wait(timeout=10) is not None, "the first try's leftovers were ended"
    assert ray.spawned[1].poll() is None, "the started Ray is left running"


def test_corpus_stats_on_ray_cleans_up_a_failed_start(tiny_bert, monkeypatch):
    """The public path: backend="ray" with ray.init failing as it did under load."""
    ray = pytest.importorskip("ray")
    import attnwidgets as aw

    monkeypatch.delenv(VAR, raising=False)
    before = dict(os.environ)
    calls: list[str] = []

    def init(**kwargs: Any) -> None:
        calls.append("init")
        raise Exception(NODE_INFO)

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray, "shutdown", lambda: calls.append("shutdown"))
    with pytest.raises(RuntimeError, match="RAY_agent_register_timeout_ms"):
        aw.studies.corpus_stats(["The cat sat.", "A dog barked."], model=tiny_bert, backend="ray", num_workers=1,
                        progress=False)
    assert calls == ["init", "shutdown"] * 3
    assert dict(os.environ) == before


def _in_session(folder: Path) -> list[Any]:
    """Every process on the machine whose command line names ``folder`` (as Ray's do: --session-dir=...)."""
    import psutil

    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if str(folder) in " ".join(proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            continue
    return found


class OrphaningRay(FakeRay):
    """``init`` makes a session folder under the Ray root (RAY_TMPDIR/ray) and starts a stand-in for an agent that
    names it and is no child of ours (its parent exits: it is re-parented to init, as a raylet's agents are when the
    raylet dies first), then raises ``error``."""

    def __init__(self, error: str, root: Path) -> None:
        super().__init__(error)
        self.root = root
        self.sessions: list[Path] = []

    def init(self, **kwargs: Any) -> None:
        self.inits.append(os.environ.get(VAR))
        session = self.root / f"session_2026-01-01_00-00-0{len(self.sessions)}_{os.getpid()}"
        session.mkdir(parents=True)
        self.sessions.append(session)
        agent = [sys.executable, "-c", "import time; time.sleep(120)", f"--session-dir={session}",
                 "ray/dashboard/agent.py"]
        subprocess.run([sys.executable, "-c", f"import subprocess; subprocess.Popen({agent!r}, "
                        "start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)"], check=True)
        raise Exception(self.error)


def test_a_failed_start_ends_the_processes_of_its_session_even_those_no_longer_our_children(monkeypatch, tmp_path):
    """Issue 33 §3: on a busy machine a failed start left Ray's agents running with no parent. What a start leaves is
    found by its Ray session folder, not by who its parent is or by a process name."""
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    monkeypatch.delenv(VAR, raising=False)
    ray = OrphaningRay(NODE_INFO, tmp_path / "ray")
    (tmp_path / "ray" / "session_2025-12-31_23-59-59_1").mkdir(parents=True)  # an older session: not this start's
    try:
        with pytest.raises(RuntimeError, match="did not start in 2 tries"):
            pool.start_local_ray(ray, 2, {}, attempts=2)
        assert len(ray.sessions) == 2
        import psutil

        for session in ray.sessions:
            left = _in_session(session)
            _, alive = psutil.wait_procs(left, timeout=10)
            assert not alive, f"processes of the failed start's session {session.name} still run: {alive}"
    finally:
        for session in ray.sessions:  # whatever the test found, leave no process behind
            for proc in _in_session(session):
                proc.kill()
