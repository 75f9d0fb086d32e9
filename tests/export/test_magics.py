"""The IPython extension: %load_ext attnwidgets, %attention, %%attention, %attention_model."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from attnwidgets.cli import UsageError
from attnwidgets.magics import OPTIONS, parse_line


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


@pytest.mark.parametrize("line", ["", "--view nope hi", "hi --layer x", "hi --layer", "hi --layer 99",
                                  "hi --layer 1 --layer 2", "hi --pair", "hi --model 'unclosed"])
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


def test_text_is_taken_as_typed_quotes_and_apostrophes_included():
    assert parse_line("I don't know")[0] == "I don't know"  # shlex: "No closing quotation"
    text, opts = parse_line('The "cat" sat --view head')
    assert text == 'The "cat" sat' and opts.view == "head"  # shlex dropped the quotes
    assert parse_line("'unclosed")[0] == "'unclosed"
    assert parse_line("  two  spaces\tand a tab ")[0] == "two  spaces\tand a tab"


def test_pair_is_every_word_up_to_the_next_option():
    text, opts = parse_line("The chef cooked the meal. --pair It was delicious.")
    assert (text, opts.pair) == ("The chef cooked the meal.", "It was delicious.")
    text, opts = parse_line("The chef cooked. --pair It was 'delicious'. --view head --layer 1")
    assert (text, opts.pair, opts.view, opts.layer) == ("The chef cooked.", "It was 'delicious'.", "head", 1)
    assert parse_line("A. --pair=It was. --head 2")[1].pair == "It was."


def test_single_word_values_and_quoted_values():
    text, opts = parse_line("--view=qk --model 'my models/tiny bert' The cat sat. --theme lecture")
    assert (text, opts.view, opts.model, opts.theme) == ("The cat sat.", "qk", "my models/tiny bert", "lecture")
    with pytest.raises(UsageError, match="needs a value"):
        parse_line("hi --view")
    with pytest.raises(UsageError, match="given twice"):
        parse_line("hi --layer 1 --layer 2")


def test_words_that_are_not_known_options_are_text():
    # argparse's prefix matching used to read "--mod of" as "--model of"; now only full option names are options.
    assert parse_line("I like the --mod of it")[0] == "I like the --mod of it"
    assert parse_line("I like the --he of it --verbose")[0] == "I like the --he of it --verbose"


def test_a_mistyped_option_is_text_with_a_note(shell, capsys, tiny_bert):
    w = shell.run_line_magic("attention", f"The cat sat --layr 1 --model {tiny_bert}")
    assert w is not None and "--layr" in w.result.text
    assert "note: --layr (--layer?) read as text" in capsys.readouterr().out


def test_a_bare_dashdash_ends_the_options():
    text, opts = parse_line("--view head -- I like the --mod of it")
    assert text == "I like the --mod of it" and opts.view == "head" and opts.model is None
    text, opts = parse_line("I like it --layer 2 -- --layer 3")
    assert text == "I like it --layer 3" and opts.layer == 2
    assert parse_line("I came -- and left")[0] == "I came -- and left", "a -- inside the text is text"


_KNOWN = {*OPTIONS}


def _plain(text: str) -> bool:
    """No word of ``text`` is a known option (``--layer`` or ``--layer=...``), and it does not open with ``--``."""
    words = text.split()
    return bool(words) and words[0] != "--" and not any(w.partition("=")[0] in _KNOWN for w in words)


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40) | st.lists(
    st.sampled_from(["--", "-", "'", '"', "don't", "--mod", "--layr", "=", "--pair=", "a", " ", "\t", "x--layer"]),
    min_size=1, max_size=8).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_any_text_without_an_option_word_comes_back_exactly(text):
    assume(_plain(text))
    got, opts = parse_line(text)
    assert got == text.strip()
    assert (opts.model, opts.view, opts.layer, opts.head, opts.pair, opts.theme, opts.query) == (
        None, "heatmap", None, None, None, None, None)


@settings(max_examples=300, deadline=None)
@given(_TEXT, _TEXT, st.integers(-3, 30))
def test_text_and_pair_come_back_exactly_around_options(text, pair, layer):
    assume(_plain(text) and _plain(pair))
    got, opts = parse_line(f"{text} --pair {pair} --layer {layer}")
    assert (got, opts.pair, opts.layer) == (text.strip(), pair.strip(), layer)
    got, opts = parse_line(f"--pair {pair} --view head -- {text}")
    assert (got, opts.pair, opts.view) == (text.strip(), pair.strip(), "head")


def test_query_opens_the_head_and_qk_views_on_a_token(shell, tiny_bert):
    w = shell.run_line_magic("attention", f"The cat sat. --model {tiny_bert} --view head --query cat")
    assert w.selected == [2]
    w = shell.run_line_magic("attention", f"The cat sat. --model {tiny_bert} --view qk --query sat")
    assert w.query == 3


def test_query_that_cannot_work_is_a_usage_error(shell, capsys, tiny_bert):
    assert shell.run_line_magic("attention", "The cat sat. --query cat") is None
    assert "--query is for --view head or qk" in capsys.readouterr().out
    assert shell.run_line_magic("attention", f"The cat sat. --model {tiny_bert} --view head --query dog") is None
    assert "not a token of the text" in capsys.readouterr().out


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
