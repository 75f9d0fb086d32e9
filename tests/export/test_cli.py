"""The `attnwidgets show` command: writes a page; bad arguments print the usage line and exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from attnwidgets.cli import main

CMD = [sys.executable, "-m", "attnwidgets.cli"]


def test_show_writes_a_page_in_a_subprocess(tmp_path, tiny_bert):
    out = tmp_path / "page.html"
    proc = subprocess.run([*CMD, "show", "The cat sat.", "--model", tiny_bert, "--out", str(out), "--layer", "1",
                           "--head", "-1"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stdout
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and "aw-data" in page


@pytest.mark.parametrize("args", [
    [],                                              # no command
    ["show"],                                        # no text, no --out
    ["show", "hi"],                                  # no --out
    ["show", "hi", "--out", "x.html", "--view", "nope"],
    ["show", "hi", "--out", "x.html", "--layer", "two"],
])
def test_bad_arguments_print_usage_and_exit_2(args):
    proc = subprocess.run([*CMD, *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "usage:" in proc.stderr and "Traceback" not in proc.stderr


def test_out_of_range_layer_is_a_usage_error(tmp_path, tiny_bert, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["show", "The cat sat.", "--model", tiny_bert, "--out", str(tmp_path / "p.html"), "--layer", "7"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "usage:" in err and "out of range" in err


def test_qk_view_and_missing_model(tmp_path, tiny_bert, capsys):
    assert main(["show", "The cat sat.", "--model", tiny_bert, "--out", str(tmp_path / "qk.html"), "--view", "qk",
                 "--theme", "lecture"]) == 0
    assert (tmp_path / "qk.html").stat().st_size > 1000
    assert main(["show", "hi", "--model", str(tmp_path / "missing"), "--out", str(tmp_path / "x.html")]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_options_are_never_abbreviated_and_a_bare_dashdash_starts_the_text(tmp_path, tiny_bert, capsys):
    # "--mod" used to be read as --model (argparse's prefix matching): now it is an unknown argument.
    with pytest.raises(SystemExit) as exc:
        main(["show", "hi", "--mod", tiny_bert, "--out", str(tmp_path / "p.html")])
    assert exc.value.code == 2
    assert "--mod" in capsys.readouterr().err
    # After a bare --, a text that looks like an option is text.
    out = tmp_path / "dash.html"
    assert main(["show", "--out", str(out), "--model", tiny_bert, "--", "--mod of it"]) == 0
    assert out.stat().st_size > 1000


@pytest.fixture
def no_model(monkeypatch):
    """Loading a model fails the test: arguments that cannot work must be refused before any model loads."""
    import attnwidgets.runner

    def refuse(*_args, **_kwargs):
        raise AssertionError("a model was loaded for arguments that cannot work")

    monkeypatch.setattr(attnwidgets.runner, "get_runner", refuse)


@pytest.mark.parametrize(("view", "args", "says"), [
    ("model", ["--head", "-1"], "heatmap and head only"),   # every head: heatmap (mean) and head view (all lines)
    ("head", ["--head", "-2"], "out of range"),
    ("qk", ["--head", "-1"], "heatmap and head only"),
    ("heatmap", ["--head", "-2"], "out of range"),
    ("model", ["--layer", "-1"], "out of range"),
])
def test_view_specific_arguments_are_checked_before_the_model_loads(tmp_path, capsys, no_model, view, args, says):
    with pytest.raises(SystemExit) as exc:
        main(["show", "The cat sat.", "--out", str(tmp_path / "p.html"), "--view", view, *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "usage:" in err and says in err
    assert not (tmp_path / "p.html").exists()
