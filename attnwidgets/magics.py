"""IPython magics: one line per demo on a projector.

>>> %load_ext attnwidgets                                    # doctest: +SKIP
>>> %attention_model bert-base-uncased                       # doctest: +SKIP
>>> %attention The cat sat on the mat. --view qk --layer 2   # doctest: +SKIP

``%attention TEXT [options]`` returns the widget (so it displays as the cell's result); ``%%attention [options]``
uses the cell body as the text. Options: ``--model NAME``, ``--view heatmap|model|head|qk``, ``--layer L``,
``--head H``, ``--pair TEXT_B``, ``--theme light|lecture``, written in full (never abbreviated, so a word of the text
such as ``--mod`` is never read as ``--model``). A bare ``--`` ends the options: everything after it is text, even
words that start with ``--``. ``%attention_model NAME`` sets the model every later ``%attention`` uses
(``%attention_model`` alone prints it; ``%attention_model --default`` goes back to the bundled one). Bad arguments
print a usage message, never a traceback, and are caught before any model loads.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from traitlets import TraitError

from .cli import THEMES, VIEWS, UsageError, build_view

USAGE = """usage: %attention TEXT [--model NAME] [--view {heatmap,model,head,qk}] [--layer L] [--head H]
                  [--pair TEXT_B] [--theme {light,lecture}]
       %attention [options] -- TEXT     (after a bare --, every word is text, even --words)
       %%attention [same options]      (the cell body is the text)
       %attention_model [NAME | --default]   (set or show the session's model)"""


class _Parser(argparse.ArgumentParser):
    """An argparse parser that raises instead of exiting (a magic must never end the kernel)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        raise UsageError(message or "")


OPTIONS = ("--model", "--view", "--layer", "--head", "--pair", "--theme")


def _options_parser() -> _Parser:
    # allow_abbrev=False: argparse would otherwise read a word of the text such as "--mod" as "--model".
    p = _Parser(prog="%attention", add_help=False, allow_abbrev=False)
    p.add_argument("--model", default=None)
    p.add_argument("--view", choices=VIEWS, default="heatmap")
    p.add_argument("--layer", type=int, default=None)
    p.add_argument("--head", type=int, default=None)
    p.add_argument("--pair", default=None)
    p.add_argument("--theme", choices=THEMES, default=None)
    return p


def parse_line(line: str) -> tuple[str, argparse.Namespace]:
    """Split ``%attention`` arguments into the text (every word that is not an option) and the options.

    Options are only ever their full names. A bare ``--`` ends the options: the words after it are text as they are.

    Examples
    --------
    >>> text, opts = parse_line('The cat sat. --view qk --layer 2')
    >>> text, opts.view, opts.layer
    ('The cat sat.', 'qk', 2)
    >>> parse_line('--view head -- I like the --mod of it')[0]
    'I like the --mod of it'
    """
    try:
        words = shlex.split(line, posix=True)
    except ValueError as exc:  # an unclosed quote
        raise UsageError(f"could not read the arguments: {exc}") from exc
    tail: list[str] = []
    if "--" in words:
        at = words.index("--")
        words, tail = words[:at], words[at + 1:]
    opts, rest = _options_parser().parse_known_args(words)
    unknown = [w for w in rest if w.startswith("--") and " " not in w]
    if unknown:
        raise UsageError(
            f"unknown option(s) {' '.join(unknown)}: the options are {', '.join(OPTIONS)}, written in full. "
            "For text with words that start with --, put it after a bare --: %attention --view qk -- TEXT"
        )
    return " ".join(rest + tail), opts


@magics_class
class AttentionMagics(Magics):
    """``%attention``, ``%%attention`` and ``%attention_model``."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.model: str | None = None

    def _show(self, text: str, opts: argparse.Namespace) -> Any:
        return build_view(text, view=opts.view, model=opts.model or self.model, pair=opts.pair, layer=opts.layer,
                          head=opts.head, theme=opts.theme)

    @line_magic
    def attention(self, line: str) -> Any:
        """``%attention TEXT [--model NAME] [--view V] [--layer L] [--head H] [--pair B] [--theme T]``."""
        try:
            text, opts = parse_line(line)
            if not text.strip():
                raise UsageError("no text given")
            return self._show(text, opts)
        except UsageError as exc:
            print(f"%attention: {exc}\n{USAGE}")
        except (OSError, ValueError, RuntimeError, IndexError, TypeError, TraitError) as exc:
            print(f"%attention: error: {exc}")
        return None

    @cell_magic("attention")  # type: ignore[arg-type]  # IPython types the named form loosely
    def attention_cell(self, line: str, cell: str) -> Any:
        """``%%attention [options]`` with the text in the cell body."""
        try:
            extra, opts = parse_line(line)
            if extra.strip():
                raise UsageError(f"%%attention takes only options on its line; put the text {extra!r} in the cell")
            if not cell.strip():
                raise UsageError("the cell is empty: write the text to run in it")
            return self._show(cell.strip(), opts)
        except UsageError as exc:
            print(f"%%attention: {exc}\n{USAGE}")
        except (OSError, ValueError, RuntimeError, IndexError, TypeError, TraitError) as exc:
            print(f"%%attention: error: {exc}")
        return None

    @line_magic
    def attention_model(self, line: str) -> None:
        """``%attention_model NAME`` sets the session's model; alone it prints it; ``--default`` resets it."""
        name = line.strip()
        if not name:
            print(f"model: {self.model or 'all-MiniLM-L6-v2 (bundled default)'}")
            return
        if name == "--default":
            self.model = None
            print("model: all-MiniLM-L6-v2 (bundled default)")
            return
        if name.startswith("-") or len(shlex.split(name)) != 1:
            print(f"%attention_model: give one model name or folder, got {name!r}\n{USAGE}")
            return
        from .runner import get_runner

        try:
            runner = get_runner(shlex.split(name)[0])
        except (OSError, ValueError, RuntimeError) as exc:
            print(f"%attention_model: error: {exc}")
            return
        self.model = shlex.split(name)[0]
        i = runner.info
        print(f"model: {i.name} ({i.kind}, {i.n_layers} layers x {i.n_heads} heads)")


def load_ipython_extension(ipython: Any) -> None:
    """Called by ``%load_ext attnwidgets``."""
    ipython.register_magics(AttentionMagics)
