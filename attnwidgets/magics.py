"""IPython magics: one line per demo on a projector.

>>> %load_ext attnwidgets                                    # doctest: +SKIP
>>> %attention_model bert-base-uncased                       # doctest: +SKIP
>>> %attention The cat sat on the mat. --view qk --layer 2   # doctest: +SKIP

``%attention TEXT [options]`` returns the widget (so it displays as the cell's result); ``%%attention [options]``
uses the cell body as the text. The text is taken as typed: quotes and apostrophes are part of it (``%attention I
don't know`` runs "I don't know", ``%attention The "cat" sat`` keeps its quotes).

Options: ``--model NAME``, ``--view heatmap|model|head|qk``, ``--layer L``, ``--head H``, ``--theme light|lecture``,
``--query WORD`` (views with a chosen query token: ``head`` selects that token's lines, ``qk`` steps through it), each
followed by one word (``--name=value`` works too; a value with spaces, such as a folder, goes in quotes), and ``--pair
TEXT_B``, whose value is every word up to the next option (a ``--`` among them included): ``%attention The chef
cooked. --pair It was delicious.`` runs the pair ("The chef cooked.", "It was delicious."). An option is one of these
names written in full as a word of its own, so a word of the text such as ``--mod`` or ``--verbose`` stays text (the
magic prints a note when such a word looks like a mistyped option). A bare ``--`` where an option could start (first,
or right after an option's value) ends the options: everything after it is text, even a word such as ``--layer``;
elsewhere ``--`` is text ("I came -- and left").

``%attention_model NAME`` sets the model every later ``%attention`` uses (``%attention_model`` alone prints it;
``%attention_model --default`` goes back to the bundled one). Bad arguments print a usage message, never a
traceback, and are caught before any model loads.
"""

from __future__ import annotations

import argparse
import difflib
import re
import shlex
from typing import Any

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from traitlets import TraitError

from .cli import THEMES, VIEWS, UsageError, build_view

USAGE = f"""usage: %attention TEXT [--model NAME] [--view {{{','.join(VIEWS)}}}] [--layer L] [--head H]
                  [--pair TEXT_B] [--theme {{{','.join(THEMES)}}}] [--query WORD]
       %attention [options] -- TEXT     (after a bare --, every word is text, even --layer)
       %%attention [same options]      (the cell body is the text)
       %attention_model [NAME | --default]   (set or show the session's model)"""

OPTIONS = ("--model", "--view", "--layer", "--head", "--pair", "--theme", "--query")
_WORD = re.compile(r"\S+")


def _option(word: str) -> tuple[str, str | None] | None:
    """``(name, inline value or None)`` when ``word`` is a known option (``--layer`` or ``--layer=2``), else None."""
    name, eq, value = word.partition("=")
    if name not in OPTIONS:
        return None
    return name, (value if eq else None)


def _convert(values: dict[str, str]) -> argparse.Namespace:
    opts = argparse.Namespace(model=None, view="heatmap", layer=None, head=None, pair=None, theme=None, query=None)
    for name, value in values.items():
        key = name[2:]
        if key in ("layer", "head"):
            try:
                setattr(opts, key, int(value))
            except ValueError:
                raise UsageError(f"{name} takes a whole number, got {value!r}") from None
        elif key == "view" and value not in VIEWS:
            raise UsageError(f"--view {value!r} is not a view; choose one of {', '.join(VIEWS)}")
        elif key == "theme" and value not in THEMES:
            raise UsageError(f"--theme {value!r} is not a theme; choose one of {', '.join(THEMES)}")
        else:
            setattr(opts, key, value)
    return opts


def parse_line(line: str) -> tuple[str, argparse.Namespace]:
    """Split ``%attention`` arguments into the text, taken as typed, and the options.

    The words that are not options (nor their values) are the text, with their spacing, quotes and apostrophes as
    typed; only the ends are stripped (and pieces of text on both sides of an option are joined by one space). See
    the module docstring for the rules.

    Examples
    --------
    >>> text, opts = parse_line('The cat sat. --view qk --layer 2')
    >>> text, opts.view, opts.layer
    ('The cat sat.', 'qk', 2)
    >>> parse_line("I don't know")[0]
    "I don't know"
    >>> text, opts = parse_line('The chef cooked the meal. --pair It was delicious. --layer 1')
    >>> text, opts.pair, opts.layer
    ('The chef cooked the meal.', 'It was delicious.', 1)
    >>> parse_line('--view head -- I like the --layer of it')[0]
    'I like the --layer of it'
    """
    words = list(_WORD.finditer(line))
    values: dict[str, str] = {}
    pieces: list[str] = []
    piece_start: int | None = None  # where the text piece being read began, None between pieces
    i = 0
    while i < len(words):
        word = words[i]
        found = _option(word.group())
        if word.group() == "--" and piece_start is None:  # first, or right after an option's value: text follows
            pieces.append(line[word.end():])
            break
        if found is None:
            if piece_start is None:
                piece_start = word.start()
            i += 1
            continue
        if piece_start is not None:
            pieces.append(line[piece_start:word.start()])
            piece_start = None
        name, inline = found
        if name in values:
            raise UsageError(f"{name} is given twice")
        value_start = word.start() + len(name) + 1 if inline is not None else word.end()
        i += 1
        if name == "--pair":  # every word up to the next option
            while i < len(words) and _option(words[i].group()) is None:
                i += 1
            value = line[value_start:words[i].start() if i < len(words) else len(line)]
        elif inline is not None:
            value = inline
        else:
            if i == len(words) or _option(words[i].group()) is not None or words[i].group() == "--":
                raise UsageError(f"{name} needs a value")
            value, i = _quoted_value(line, words, i)
        if not value.strip():
            raise UsageError(f"{name} needs a value")
        values[name] = value.strip()
    else:
        if piece_start is not None:
            pieces.append(line[piece_start:])
    text = " ".join(p.strip() for p in pieces if p.strip())
    return text, _convert(values)


def _quoted_value(line: str, words: list[re.Match[str]], i: int) -> tuple[str, int]:
    """The value that starts at ``words[i]``: that word, or for a word opening a quote, up to the closing quote."""
    first = words[i].group()
    quote = first[0]
    if quote not in "\"'":
        return first, i + 1
    close = line.find(quote, words[i].start() + 1)
    if close < 0:
        raise UsageError(f"the value {first!r} opens a quote that is never closed")
    j = i
    while j < len(words) and words[j].end() <= close:
        j += 1
    return line[words[i].start() + 1:close], j + 1


def lookalike_options(text: str) -> list[str]:
    """Words of ``text`` that look like mistyped options (``--layr``), to mention them; they stay text.

    Examples
    --------
    >>> lookalike_options("I like the --layr of it --verbose")
    ['--layr (--layer?)']
    """
    out = []
    for word in text.split():
        name = word.partition("=")[0]
        if name.startswith("--") and len(name) > 2:
            close = difflib.get_close_matches(name, OPTIONS, n=1, cutoff=0.75)
            if close:
                out.append(f"{name} ({close[0]}?)")
    return out


@magics_class
class AttentionMagics(Magics):
    """``%attention``, ``%%attention`` and ``%attention_model``."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.model: str | None = None

    def _show(self, text: str, opts: argparse.Namespace) -> Any:
        odd = lookalike_options(text)
        if odd:
            print(f"note: {', '.join(odd)} read as text, not an option (the options are {', '.join(OPTIONS)})")
        return build_view(text, view=opts.view, model=opts.model or self.model, pair=opts.pair, layer=opts.layer,
                          head=opts.head, theme=opts.theme, query=opts.query)

    @line_magic
    def attention(self, line: str) -> Any:
        """``%attention TEXT [--model NAME] [--view V] [--layer L] [--head H] [--pair B] [--theme T] [--query W]``."""
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
