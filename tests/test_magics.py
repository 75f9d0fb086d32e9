"""The IPython extension: %load_ext attnwidgets, %attention, %%attention, %attention_model."""

from __future__ import annotations

import pytest

from attnwidgets.cli import UsageError
from attnwidgets.magics import parse_line


@pytest.fixture(scope="module")
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "attnwidgets")
    yield sh
    sh.run_line_magic("attention_model", "--default")


def test_line_magic_returns_a_widget(shell):
    w = shell.run_line_magic("attention", "The cat sat on the mat. --layer 2 --head 3 --theme lecture")
    assert type(w).__name__ == "AttentionHeatmap"
    assert (w.layer, w.head, w.theme) == (2, 3, "lecture")


def test_cell_magic_and_session_model(shell, tiny_bert, capsys):
    shell.run_line_magic("attention_model", tiny_bert)
    assert "2 layers x 4 heads" in capsys.readouterr().out
    w = shell.run_cell_magic("attention", "--view qk --head 1", "The cat sat.\n")
    assert type(w).__name__ == "QKStepThrough"
    assert w.head == 1 and w._meta["n_heads"] == 4, "the session's model was used"
    shell.run_line_magic("attention_model", "--default")
    w = shell.run_line_magic("attention", "The cat sat.")
    assert w.result.model.n_layers == 6


def test_run_cell_displays_the_widget(shell):
    res = shell.run_cell("%attention The cat sat. --view qk")
    assert res.success and type(res.result).__name__ == "QKStepThrough"


@pytest.mark.parametrize("line", ["", "--view nope hi", "hi --layer x", "hi --bogus 3", "hi --layer 99",
                                  "'unclosed"])
def test_bad_arguments_print_usage(shell, capsys, line):
    assert shell.run_line_magic("attention", line) is None
    out = capsys.readouterr().out
    assert "usage: %attention" in out or "out of range" in out
    assert "Traceback" not in out


def test_bad_cell_magic_and_model(shell, capsys):
    assert shell.run_cell_magic("attention", "stray words", "The cat.") is None
    assert "usage" in capsys.readouterr().out
    assert shell.run_cell_magic("attention", "", "   ") is None
    assert "empty" in capsys.readouterr().out
    shell.run_line_magic("attention_model", "/no/such/folder")
    assert "does not exist" in capsys.readouterr().out


def test_parse_line_keeps_quoted_text():
    text, opts = parse_line('"--not an option" and more --view head')
    assert text == "--not an option and more" and opts.view == "head"
    with pytest.raises(UsageError):
        parse_line("hi --view")


def test_words_of_the_text_are_never_abbreviated_options():
    # argparse's prefix matching used to read "--mod of" as "--model of" and try to load a model named "of".
    with pytest.raises(UsageError, match=r"--mod.*bare --"):
        parse_line("I like the --mod of it")
    with pytest.raises(UsageError, match="--he"):
        parse_line("I like the --he of it")


def test_a_bare_dashdash_ends_the_options():
    text, opts = parse_line("--view head -- I like the --mod of it")
    assert text == "I like the --mod of it" and opts.view == "head" and opts.model is None
    text, opts = parse_line("I like it --layer 2 -- --layer 3")
    assert text == "I like it --layer 3" and opts.layer == 2
    text, _ = parse_line("'I came -- and left'")
    assert text == "I came -- and left", "a quoted -- stays in the text"


@pytest.mark.parametrize("line", ["The cat. --view model --head -1", "The cat. --view qk --head -1",
                                  "The cat. --layer -1"])
def test_view_specific_arguments_fail_before_a_model_loads(shell, capsys, monkeypatch, line):
    import attnwidgets.runner

    def refuse(*_args, **_kwargs):
        raise AssertionError("a model was loaded for arguments that cannot work")

    monkeypatch.setattr(attnwidgets.runner, "get_runner", refuse)
    assert shell.run_line_magic("attention", line) is None
    out = capsys.readouterr().out
    assert "usage: %attention" in out and ("out of range" in out or "heatmap and head only" in out)
    assert "Traceback" not in out
