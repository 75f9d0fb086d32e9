"""Reading CoNLL-U treebanks (Universal Dependencies): :func:`read_conllu` gives one :class:`Sentence` per sentence,
with its words, gold heads and relations, and the text a model reads of it.

What the model reads of a sentence is its ``# text`` line, so a multiword token is read whole, as written ("didn't",
Spanish "del"), and its syntactic words ("did" + "n't", "de" + "el") share its pieces; ``text="words"`` reads the
syntactic words joined by spaces instead (:func:`words_text`). A HEAD past its sentence, HEADs forming a cycle and any
line that is not CoNLL-U are refused with a :class:`ParseError` naming the file, the line and the sentence. The
pieces of the model's reading are matched to the words by :func:`attnwidgets.analysis.dependency.piece_word_matrix`.

The line-level checks (:func:`source_lines`, :func:`conllu_id`, :func:`conllu_head`, :func:`check_tree`) serve the
CorefUD reader of :mod:`attnwidgets.analysis.coref_files` too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

__all__ = ["ParseError", "Sentence", "TextMode", "check_tree", "conllu_head", "conllu_id", "read_conllu",
           "source_lines", "words_text"]


@dataclass(frozen=True)
class Sentence:
    """One treebank sentence.

    Attributes
    ----------
    words : list[str]
        The syntactic words (a multiword token such as "didn't" = "do" + "n't" counts as its words).
    heads : np.ndarray
        (m,) int64 gold head of each word, 0-based; -1 for the root.
    relations : list[str]
        Dependency relation of each word to its head ("nsubj", "obl:tmod", ...).
    text : str
        What the model reads: the sentence's own ``# text``, or else its surface tokens (a multiword token's own form,
        not its words) joined with spaces, honouring ``SpaceAfter=No``; with ``read_conllu(..., text="words")`` the
        syntactic words joined by spaces (:func:`words_text`).
    sent_id : str | None
    upos : list[str]
    surface : list[tuple[str, tuple[int, ...]]]
        The surface tokens in order, each with the 0-based indices of its words: ``("didn't", (1, 2))`` for a
        multiword token, ``("go", (3,))`` for a plain word. Empty means one token per word.
    """

    words: list[str]
    heads: np.ndarray
    relations: list[str]
    text: str
    sent_id: str | None = None
    upos: list[str] = field(default_factory=list)
    surface: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)


class ParseError(ValueError):
    """A data file that cannot be read as its format (CoNLL-U, CorefUD, CoNLL-2012): the message names the file, the
    line and what to do. A ``ValueError``, so code that caught those before still does.

    Attributes
    ----------
    source : str
        The file (its path, or "CoNLL-U text" / "CoNLL-U lines" for text handed over directly).
    line : int or None
        The 1-based line the problem is on (None when it is not one line's).
    """

    def __init__(self, message: str, *, line: int | None = None, source: str = "") -> None:
        self.reason, self.line, self.source = message, line, source
        where = ", ".join(x for x in (source, f"line {line}" if line else "") if x)
        super().__init__(f"{where}: {message}" if where else message)

    def at(self, source: str) -> ParseError:
        """The same error, naming ``source`` (the reader adds the file once it knows it)."""
        return self if self.source else ParseError(self.reason, line=self.line, source=source)


def source_lines(source: str | Path | Iterable[str], what: str) -> tuple[str, Iterable[str]]:
    """(name for messages, lines) of a path, a text with newlines or an iterable of lines.

    A file is read as UTF-8 (``utf-8-sig``: a byte-order mark is dropped); a file that is not UTF-8 text (a binary
    file, another encoding) is a :class:`ParseError` naming the line of the first bad byte.
    """
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"no {what} file at {str(path)!r}")
        data = path.read_bytes()
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise ParseError(f"byte 0x{data[exc.start]:02x} is not UTF-8 text: a {what} file is UTF-8 text; check "
                             "that this is the file you meant (a binary file or another encoding cannot be read; "
                             "re-save it as UTF-8)", line=line, source=str(path)) from None
        return str(path), text.splitlines()
    if isinstance(source, str):
        return f"{what} text", source.splitlines()
    if isinstance(source, bytes | bytearray):
        raise TypeError(f"{what} source must be a path, a text or lines of text, got bytes: decode them first")
    return f"{what} lines", _text_lines(source, what)


def _text_lines(lines: Iterable[Any], what: str) -> Iterator[str]:
    for number, raw in enumerate(lines, 1):
        if isinstance(raw, bytes | bytearray):
            try:
                raw = bytes(raw).decode("utf-8")
            except UnicodeDecodeError:
                raise ParseError(f"this line is not UTF-8 text: a {what} file is UTF-8 text; open the file as text "
                                 "(open(path, encoding='utf-8')) or pass its path", line=number) from None
        elif not isinstance(raw, str):
            raise TypeError(f"{what} lines must be strings, got {type(raw).__name__} at line {number}")
        yield raw


_ID = re.compile(r"([1-9][0-9]*)(?:-([1-9][0-9]*)|\.([1-9][0-9]*))?")


def conllu_id(value: str, line: int, expected: int) -> tuple[str, int, int]:
    """("word", n, n), ("range", first, last) or ("empty", n, k) from a CoNLL-U ID column; ``expected`` is the id the
    next word must have (words run 1, 2, 3... in a sentence)."""
    m = _ID.fullmatch(value)
    if m is None:
        raise ParseError(f"ID {value!r} is not a word id: column 1 holds a word number ('3'), a multiword token's "
                         "range ('3-4') or an empty node ('3.1'); fix the ID column", line=line)
    first = int(m.group(1))
    if m.group(2) is not None:
        last = int(m.group(2))
        if first != expected or last <= first:
            raise ParseError(f"multiword token {value!r} must cover the next words, {expected}-N with N > {expected}; "
                             "fix its range", line=line)
        return "range", first, last
    if m.group(3) is not None:
        return "empty", first, int(m.group(3))
    if first != expected:
        raise ParseError(f"word ids must run 1, 2, 3... within a sentence; got {value} where {expected} was next "
                         "(a missing blank line between sentences?)", line=line)
    return "word", first, first


def conllu_head(value: str, line: int) -> int | None:
    """The HEAD column as an int (0: the root), or None for ``_`` (no dependency annotation)."""
    if value == "_":
        return None
    if not value.isascii() or not value.isdigit():
        raise ParseError(f"HEAD {value!r} is not a word id: column 7 holds the id of the word's head (0 for the "
                         "root) or '_'; fix the HEAD column", line=line)
    return int(value)


def check_tree(heads: Sequence[int], lines: Sequence[int], sent_id: str | None) -> None:
    """Refuse a sentence whose HEADs (1-based, 0 the root, as in the file) point past it or form a cycle."""
    n = len(heads)
    name = f"sentence {sent_id!r}" if sent_id else f"the sentence starting at line {lines[0]}"
    for i, h in enumerate(heads):
        if h > n:
            raise ParseError(f"HEAD {h} of word {i + 1} points past {name}, which has {n} words: the head must be "
                             f"one of its words (1-{n}) or 0 for the root; fix the HEAD column", line=lines[i])
    state = [0] * (n + 1)  # 0 unseen, 1 on the current path, 2 reaches the root
    state[0] = 2
    for i in range(1, n + 1):
        path = []
        j = i
        while state[j] == 0:
            state[j] = 1
            path.append(j)
            j = heads[j - 1]
        if state[j] == 1:  # back on the current path: a cycle
            cycle = path[path.index(j):]
            shown = " -> ".join(str(w) for w in [*cycle, j])
            raise ParseError(f"{name}: the HEADs of words {shown} form a cycle, so the sentence is not a tree and "
                             "no head word can be scored; fix the HEAD column of those words", line=lines[j - 1])
        for w in path:
            state[w] = 2


def words_text(sentence: Sentence) -> Sentence:
    """``sentence`` read as its syntactic words joined by spaces ("do n't go"), one surface token per word: the other
    reading of a sentence with multiword tokens (:func:`read_conllu`'s ``text="words"``)."""
    return replace(sentence, text=" ".join(sentence.words), surface=[])


def _parse(lines: Iterable[str], subtypes: bool) -> Iterator[Sentence]:
    words: list[str] = []
    heads: list[int] = []
    rels: list[str] = []
    upos: list[str] = []
    numbers: list[int] = []
    surface: list[tuple[str, tuple[int, ...]]] = []
    built: list[str] = []  # the surface tokens and their spaces, for a sentence without "# text ="
    own_text: str | None = None
    sent_id = None
    span_end = 0  # the last word id of the multiword token being read (0: none)

    def flush() -> Sentence:
        check_tree(heads, numbers, sent_id)
        text = own_text if own_text is not None else "".join(built).strip()
        return Sentence(words, np.array(heads, dtype=np.int64) - 1, rels, text, sent_id, upos, surface)

    for number, raw in enumerate(lines, 1):
        line = raw.rstrip("\n").rstrip("\r")
        if not line.strip():
            if words:
                yield flush()
            words, heads, rels, upos, numbers, surface, built, own_text, sent_id, span_end = [], [], [], [], [], [], \
                [], None, None, 0
            continue
        if line.startswith("#"):
            key, eq, value = line[1:].partition("=")
            if eq and key.strip() == "sent_id":
                sent_id = value.strip()
            elif eq and key.strip() == "text":
                own_text = value.strip()
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise ParseError(f"{len(cols)} tab-separated columns, expected 10 (ID FORM LEMMA UPOS XPOS FEATS HEAD "
                             f"DEPREL DEPS MISC): {line[:60]!r}; is this a CoNLL-U file?", line=number)
        space = "" if "SpaceAfter=No" in cols[9] else " "
        kind, first, last = conllu_id(cols[0], number, len(words) + 1)
        if kind == "empty":  # an empty node: not a word of the surface text
            continue
        if kind == "range":  # a multiword token: its form is what the text shows; its words follow
            surface.append((cols[1], tuple(range(first - 1, last))))
            built += (cols[1], space)
            span_end = last
            continue
        head = conllu_head(cols[6], number)
        words.append(cols[1])
        heads.append(head if head is not None else 0)
        numbers.append(number)
        rels.append(cols[7] if subtypes else cols[7].split(":")[0])
        upos.append(cols[3])
        if len(words) > span_end:  # not inside a multiword token
            surface.append((cols[1], (len(words) - 1,)))
            built += (cols[1], space)
    if words:
        yield flush()


TextMode = Literal["surface", "words"]


def read_conllu(source: str | Path | Iterable[str], *, subtypes: bool = True, text: TextMode = "surface"
                ) -> list[Sentence]:
    """Read sentences from a CoNLL-U file (a path), CoNLL-U text (a string with newlines) or an iterable of lines.

    Parameters
    ----------
    subtypes : bool
        Keep relation subtypes ("nmod:poss"); False keeps only the universal part ("nmod").
    text : {"surface", "words"}
        What the model reads of each sentence (:attr:`Sentence.text`). "surface" (default): the sentence's own
        ``# text``, or else its surface tokens joined with spaces, honouring ``SpaceAfter=No`` -- a multiword token
        is read whole, as written ("didn't go"), and its syntactic words share its pieces
        (:func:`piece_word_matrix`). "words": the syntactic words joined by single spaces ("did n't go"; "de el"
        for Spanish "del"), each word its own surface token: the text a model never sees in the wild, but every
        word gets pieces of its own. The choice moves the scores of relations that multiword tokens carry
        (``aux`` in English).

    Raises
    ------
    ParseError
        For a line that is not CoNLL-U (column count, ID, HEAD), a HEAD past its sentence, HEADs that form a cycle,
        or a file that is not UTF-8 text; the message names the file, the line (and the sentence) and what to fix.

    Examples
    --------
    >>> rows = ["1 Hi hi INTJ _ _ 0 root _ SpaceAfter=No", "2 ! ! PUNCT _ _ 1 punct _ _"]
    >>> s = read_conllu([r.replace(" ", "\\t") for r in rows])
    >>> s[0].words, s[0].heads.tolist(), s[0].text
    (['Hi', '!'], [-1, 0], 'Hi!')
    >>> rows = ["1-2 didn't _ _ _ _ _ _ _ _", "1 did do AUX _ _ 3 aux _ _", "2 n't not PART _ _ 3 advmod _ _",
    ...         "3 go go VERB _ _ 0 root _ _"]
    >>> [read_conllu([r.replace(" ", "\\t") for r in rows], text=t)[0].text for t in ("surface", "words")]
    ["didn't go", "did n't go"]
    """
    if text not in ("surface", "words"):
        raise ValueError(f"text must be 'surface' or 'words', got {text!r}")
    name, lines = source_lines(source, "CoNLL-U")
    try:
        sentences = list(_parse(lines, subtypes))
    except ParseError as exc:
        raise exc.at(name) from None
    return [words_text(s) for s in sentences] if text == "words" else sentences
