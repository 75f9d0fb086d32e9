"""Attention heads as dependency parsers (Clark et al. 2019, section 4.2 and Table 1).

For each word, a head's prediction is the argmax of its word-level attention row over the other words ([CLS], [SEP]
and the word itself excluded). Word-level attention follows :mod:`attnwidgets.analysis.words`: to a word, the sum
over its pieces; from a word, the mean of its pieces' rows (``rows="first"`` for Clark et al.'s code). For a relation
R, a head's accuracy is the share of the dependents of R whose prediction is right, in two directions:

- ``dependent->head``: the dependent's row points at its gold head;
- ``head->dependent``: the gold head's row points at the dependent (a head with several dependents of R can get at
  most one of them right per sentence).

The better direction is kept per relation. The baseline is the best fixed offset (the word k to the left or right,
k = 1..3) for that relation. Words are aligned to pieces by their characters, so treebank tokenisation ("did" +
"n't") and the model's ("didn", "'", "t") need not agree; a piece belongs to the word its first character is in.
Words whose pieces were truncated away are left out.

What the model reads of a sentence is its ``# text`` line, so a multiword token is read whole, as written ("didn't",
Spanish "del") and its syntactic words ("did" + "n't", "de" + "el") share its pieces; ``text="words"``
(:func:`read_conllu`, ``aw.studies.dependency_scores``) reads the syntactic words joined by spaces instead, so each word
has pieces of its own. The choice moves the scores of the relations that multiword tokens carry (``aux`` and ``advmod``
of English "didn't", ``case`` and ``det`` of Spanish "del"). A HEAD past its sentence, HEADs forming a cycle and any
line that is not CoNLL-U are refused with a :class:`ParseError` naming the file, the line and the sentence.

This module scores results already run (:func:`score_dependencies`); running a treebank through a model is
:func:`attnwidgets.studies.dependency.dependency_scores` (``aw.studies.dependency_scores``).

At any length: for a long input (``result.is_lazy``) each head's word-level rows are made a block at a time from the
pieces' rows (:class:`~attnwidgets.analysis.words.WordMap`) and only their argmax is kept, so no
``[layer, head, query, key]`` array, piece-level or word-level, is built.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..attention_stack import block_rows
from ..html_repr import repr_html
from ..result import AttentionResult, ModelInfo
from .merging import check_same_model, check_same_settings
from .naming import both_names, paper_label
from .words import RowMode, WordMap, WordStack

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DIRECTIONS", "DependencyScores", "ParseError", "Sentence", "align_words", "piece_word_matrix",
           "read_conllu", "score_dependencies", "words_text"]

DIRECTIONS = ("dependent->head", "head->dependent")
OFFSETS = (-3, -2, -1, 1, 2, 3)


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


def _norm(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c) and not c.isspace()).lower()


def align_words(words: Sequence[str], tokens: Sequence[str], special_mask: np.ndarray | None = None) -> np.ndarray:
    """(n,) index of the word each piece belongs to (-1 for special tokens), matched by characters.

    Case, accents and spaces are ignored, "##" continuation marks dropped. A piece that does not match (e.g. [UNK])
    is given the word at the current position, and the match resumes at the next word.

    Examples
    --------
    >>> align_words(["He", "did", "n't", "go"], ["[CLS]", "he", "didn", "'", "t", "go", "[SEP]"],
    ...             np.array([1, 0, 0, 0, 0, 0, 1], bool)).tolist()
    [-1, 0, 1, 2, 2, 3, -1]
    """
    chars: list[str] = []
    owner: list[int] = []
    starts: list[int] = []
    for w, word in enumerate(words):
        starts.append(len(chars))
        for c in _norm(word):
            chars.append(c)
            owner.append(w)
    full = "".join(chars)
    special = np.zeros(len(tokens), bool) if special_mask is None else np.asarray(special_mask, dtype=bool)
    out = np.full(len(tokens), -1, dtype=np.int64)
    pos = 0
    for k, token in enumerate(tokens):
        if special[k] or pos >= len(full):
            continue
        piece = _norm(token[2:] if token.startswith("##") else token)
        if not piece:
            out[k] = owner[pos]
            continue
        if full.startswith(piece, pos):
            out[k] = owner[pos]
            pos += len(piece)
            continue
        w = owner[pos]  # [UNK] or a mismatch: give it the current word and skip to the next one
        out[k] = w
        pos = starts[w + 1] if w + 1 < len(words) else len(full)
    return out


def piece_word_matrix(sentence: Sentence, tokens: Sequence[str], special_mask: np.ndarray | None = None
                      ) -> np.ndarray:
    """(n, m) float32: 1 where piece k belongs to word w, matched by characters against the sentence's surface tokens.

    A multiword token whose words spell it ("did" + "n't" = "didn't") is split between its words by characters like
    any other text; one whose words do not ("do" + "n't" for "didn't", "de" + "el" for "del"), or one whose split
    leaves a word without a piece ("gonna" as one piece for "gon" + "na"), is matched as its surface form, and each
    of its words owns all of its pieces: they share the surface token's character span.

    Examples
    --------
    >>> rows = ["1-2 didn't _ _ _ _ _ _ _ _", "1 do do AUX _ _ 3 aux _ _", "2 n't not PART _ _ 3 advmod _ _",
    ...         "3 go go VERB _ _ 0 root _ _"]
    >>> s = read_conllu([r.replace(" ", "\\t") for r in rows])[0]
    >>> s.text
    "didn't go"
    >>> piece_word_matrix(s, ["didn", "'", "t", "go"]).astype(int).tolist()
    [[1, 1, 0], [1, 1, 0], [1, 1, 0], [0, 0, 1]]
    """
    units = sentence.surface or [(w, (i,)) for i, w in enumerate(sentence.words)]
    flat: list[tuple[str, tuple[int, ...]]] = []
    for form, ids in units:
        if len(ids) > 1 and _norm("".join(sentence.words[i] for i in ids)) == _norm(form):
            flat.extend((sentence.words[i], (i,)) for i in ids)
        else:
            flat.append((form, ids))
    piece_unit = align_words([form for form, _ in flat], tokens, special_mask)
    c = np.zeros((len(tokens), len(sentence.words)), dtype=np.float32)
    for k, u in enumerate(piece_unit):
        if u >= 0:
            c[k, list(flat[u][1])] = 1.0
    for _, ids in units:  # a token split by characters in which a word got no piece of its own ("gonna" read as
        # one piece for "gon" + "na"): its words share all its pieces, as for a token whose words do not spell it
        group = list(ids)
        if len(group) > 1 and not c[:, group].any(0).all():
            c[:, group] = c[:, group].max(1, keepdims=True)
    return c


@dataclass
class DependencyScores:
    """Per-head accuracy of attention as a dependency parser, by relation and direction.

    Attributes
    ----------
    relations : list[str]
        Relation names, the last axis of the arrays.
    counts : np.ndarray
        (R,) number of dependents of each relation that were scored.
    correct : np.ndarray
        (2, L, H, R) dependents predicted right, by direction (:data:`DIRECTIONS`), layer, head, relation.
    baseline_correct : np.ndarray
        (6, R) dependents whose head is at each fixed offset of :data:`OFFSETS` (-3..3 without 0).
    n_sentences : int
    model : str
        Name of the model that was scored ("" when unknown).
    model_info : ModelInfo | None
        The model that was scored, in full (what a saved file is tagged with); None when unknown.
    settings : dict
        How the heads were scored (``rows``, ``subtypes``).
    rows : str
        How a word's row was read ("mean" or "first"; "" when unknown).
    subtypes : bool or None
        Whether relation subtypes were scored apart (None when unknown).
    """

    _repr_html_ = repr_html  # the compact table a notebook shows (html_repr.py)

    relations: list[str]
    counts: np.ndarray
    correct: np.ndarray
    baseline_correct: np.ndarray
    n_sentences: int = 0
    model: str = ""
    model_info: ModelInfo | None = field(default=None, repr=False)
    settings: dict[str, Any] = field(default_factory=dict, repr=False)
    rows: str = ""
    subtypes: bool | None = None

    def __post_init__(self) -> None:
        # a saved file records rows and subtypes in its settings: merging checks them either way
        if not self.rows and self.settings.get("rows"):
            self.rows = str(self.settings["rows"])
        if self.subtypes is None and self.settings.get("subtypes") is not None:
            self.subtypes = bool(self.settings["subtypes"])

    def merge(self, *others: DependencyScores) -> DependencyScores:
        """The scores over this treebank's sentences and the others' together, as a new :class:`DependencyScores`.

        Each part is counts (dependents per relation, right guesses per head and relation), so merging adds them:
        associative and independent of the order. Parts may have seen different relations; the merged relations are
        the sorted union, as :func:`score_dependencies` over all the sentences would list them.

        Raises
        ------
        ValueError
            When the parts come from different models, or were scored with different ``rows`` or ``subtypes``, or
            their heads differ in shape.

        Examples
        --------
        >>> a = DependencyScores(["det"], np.array([2]), np.ones((2, 1, 1, 1)), np.zeros((6, 1)), 1, "m")
        >>> b = DependencyScores(["amod", "det"], np.array([1, 2]), np.ones((2, 1, 1, 2)), np.zeros((6, 2)), 1, "m")
        >>> m = a.merge(b)
        >>> m.relations, m.counts.tolist(), m.correct[0, 0, 0].tolist(), m.n_sentences
        (['amod', 'det'], [1, 4], [1.0, 2.0], 2)
        """
        parts = [self, *others]
        for part in parts:
            if not isinstance(part, DependencyScores):
                raise TypeError(f"DependencyScores.merge takes DependencyScores, got {type(part).__name__}")
        # "" and None are "not recorded" (scores built by hand, or read from a file without them): they merge with any
        check_same_settings("DependencyScores", [{k: v for k, v in (("rows", p.rows), ("subtypes", p.subtypes))
                                                  if v not in ("", None)} for p in parts])
        rows = next((p.rows for p in parts if p.rows), "")
        subtypes = next((p.subtypes for p in parts if p.subtypes is not None), None)
        model = check_same_model("DependencyScores", [p.model for p in parts]) or ""
        shapes = {p.correct.shape[:3] for p in parts}
        if len(shapes) > 1:
            raise ValueError(f"cannot merge DependencyScores of heads shaped {sorted(shapes)}: different models")
        relations = sorted({r for p in parts for r in p.relations})
        index = {r: i for i, r in enumerate(relations)}
        counts = np.zeros(len(relations), np.int64)
        correct = np.zeros((*self.correct.shape[:3], len(relations)))
        base = np.zeros((self.baseline_correct.shape[0], len(relations)))
        for p in parts:
            at = np.array([index[r] for r in p.relations], dtype=np.int64)
            counts[at] += p.counts.astype(np.int64)
            correct[..., at] += p.correct
            base[:, at] += p.baseline_correct
        info = next((p.model_info for p in parts if p.model_info is not None), None)
        settings = next((p.settings for p in parts if p.settings), {})
        return DependencyScores(relations, counts, correct, base, sum(p.n_sentences for p in parts), model,
                                model_info=info, settings=dict(settings), rows=rows, subtypes=subtypes)

    def to_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """(arrays, metadata) for a file; :meth:`from_state` builds the scores back."""
        arrays = {"counts": self.counts, "correct": self.correct, "baseline_correct": self.baseline_correct}
        meta = {"relations": list(self.relations), "n_sentences": self.n_sentences, "model": self.model,
                "rows": self.rows, "subtypes": self.subtypes}
        return arrays, meta

    @classmethod
    def from_state(cls, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> DependencyScores:
        """The :class:`DependencyScores` that :meth:`to_state` described; ValueError when they fail :meth:`check`
        (a shard file changed on disk)."""
        out = cls(list(meta["relations"]), np.asarray(arrays["counts"]), np.asarray(arrays["correct"]),
                  np.asarray(arrays["baseline_correct"]), meta["n_sentences"], str(meta["model"]),
                  rows=str(meta["rows"]), subtypes=meta["subtypes"])
        out.check()
        return out

    def check(self) -> None:
        """Raise ValueError unless these are counts that scoring can make: relation names (text, each once), counts
        of dependents (whole numbers, 0 or more), right guesses of every head and of every offset between 0 and the
        count of their relation, shaped (2, layers, heads, relations) and (6, relations) (the model's layers and
        heads when known). Loading a file or a resumed shard calls it: a file changed by hand is refused rather
        than shown."""
        rel = self.relations
        if not isinstance(rel, list) or not all(isinstance(r, str) for r in rel) or len(set(rel)) != len(rel):
            raise ValueError("its relations are not a list of distinct names")
        n_rel = len(rel)
        n = self.n_sentences
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"its n_sentences is {n!r}, not a count")
        counts, correct, base = self.counts, self.correct, self.baseline_correct
        for name, arr in (("counts", counts), ("correct", correct), ("baseline_correct", base)):
            if arr.dtype.kind not in ("iu" if name == "counts" else "iuf"):
                raise ValueError(f"its {name} is an array of {arr.dtype}, not of numbers")
        info = self.model_info
        heads = (None, None) if info is None else (info.n_layers, info.n_heads)
        want = {"counts": (n_rel,), "correct": (len(DIRECTIONS), *heads, n_rel), "baseline_correct": (len(OFFSETS),
                                                                                                   n_rel)}
        for name, arr in (("counts", counts), ("correct", correct), ("baseline_correct", base)):
            shape = want[name]
            if arr.ndim != len(shape) or any(w is not None and g != w for g, w in zip(arr.shape, shape)):
                expected = tuple("any" if w is None else w for w in shape)
                raise ValueError(f"its {name} is shaped {arr.shape}, not {expected} ({n_rel} relations)")
        if counts.min(initial=0) < 0:
            raise ValueError("its counts of dependents hold negative numbers")
        for name, arr in (("correct", correct), ("baseline_correct", base)):
            if not np.isfinite(arr).all() or arr.min(initial=0) < 0 or (arr > counts + 1e-6).any():
                raise ValueError(f"its {name} holds numbers outside 0..the count of their relation (a head cannot "
                                 "get more dependents right than there are)")

    def __repr__(self) -> str:
        _, n_layers, n_heads, n_rel = self.correct.shape
        head = ""
        if self.counts.sum() > 0:
            best = self.table().iloc[-1]
            head = (f"; best head overall {both_names(best['layer'], best['head'])} ({best['direction']}) "
                    f"{best['accuracy']:.2f} vs offset baseline {best['baseline_accuracy']:.2f}")
        model = f"{self.model!r}, " if self.model else ""
        return (f"DependencyScores({model}{self.n_sentences} sentences, {int(self.counts.sum())} dependents, "
                f"{n_rel} relations, {n_layers} layers x {n_heads} heads{head})")

    @property
    def accuracy(self) -> np.ndarray:
        """(2, L, H, R) accuracy by direction, layer, head and relation (NaN for relations never seen)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.correct / np.where(self.counts > 0, self.counts, np.nan)

    @property
    def accuracy_all(self) -> np.ndarray:
        """(2, L, H) accuracy over all relations together."""
        return self.correct.sum(-1) / max(int(self.counts.sum()), 1)

    @property
    def baseline(self) -> np.ndarray:
        """(6, R) accuracy of each fixed offset."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.baseline_correct / np.where(self.counts > 0, self.counts, np.nan)

    def table(self, min_count: int = 1) -> pd.DataFrame:
        """Clark et al.'s Table 1: the best head per relation (better direction) beside the best offset baseline.

        Columns: relation, count, layer, head (0-based), label ("layer-head", 1-based as in the paper), direction,
        accuracy, tied, baseline_offset, baseline_accuracy. Sorted by count; the last row, "all", pools every
        relation. When several heads (or directions) share the best accuracy, layer/head/direction name the first in
        (direction, layer, head) order and ``tied`` lists every one of them as (layer, head, direction) tuples; it
        holds just the one head otherwise.

        Examples
        --------
        >>> correct = np.zeros((2, 1, 2, 1)); correct[0, 0, :, 0] = 3          # both heads get 3 of 4 right
        >>> s = DependencyScores(["det"], np.array([4]), correct, np.zeros((6, 1)))
        >>> s.table().loc[0, "tied"]
        [(0, 0, 'dependent->head'), (0, 1, 'dependent->head')]
        """
        import pandas as pd

        rows = []
        acc = self.accuracy
        base = self.baseline

        def best(values: np.ndarray) -> tuple[tuple[int, int, int], list[tuple[int, int, str]]]:
            top = np.nanmax(values)
            ties = [(int(layer), int(head), DIRECTIONS[d]) for d, layer, head in np.argwhere(values == top)]
            d, layer, head = (int(x) for x in np.argwhere(values == top)[0])
            return (d, layer, head), ties

        order = np.argsort(-self.counts, kind="stable")
        for r in order:
            if self.counts[r] < max(min_count, 1):  # a relation never seen has no accuracy to rank
                continue
            (d, layer, head), tied = best(acc[..., r])
            b = int(np.nanargmax(base[:, r]))
            rows.append(dict(relation=self.relations[r], count=int(self.counts[r]), layer=layer, head=head,
                             label=paper_label(layer, head), direction=DIRECTIONS[d],
                             accuracy=float(acc[d, layer, head, r]), tied=tied, baseline_offset=OFFSETS[b],
                             baseline_accuracy=float(base[b, r])))
        total = max(int(self.counts.sum()), 1)
        all_acc = self.accuracy_all
        (d, layer, head), tied = best(all_acc)
        base_all = self.baseline_correct.sum(-1) / total
        b = int(np.argmax(base_all))
        rows.append(dict(relation="all", count=int(self.counts.sum()), layer=layer, head=head,
                         label=paper_label(layer, head), direction=DIRECTIONS[d],
                         accuracy=float(all_acc[d, layer, head]), tied=tied,
                         baseline_offset=OFFSETS[b], baseline_accuracy=float(base_all[b])))
        return pd.DataFrame(rows)

    def frame(self) -> pd.DataFrame:
        """Tidy DataFrame (layer, head, relation, direction, accuracy, count) of every head and relation."""
        import pandas as pd

        acc = self.accuracy
        d, layer, head, r = np.meshgrid(*(np.arange(s) for s in acc.shape), indexing="ij")
        return pd.DataFrame({
            "layer": layer.ravel(), "head": head.ravel(),
            "relation": np.asarray(self.relations, dtype=object)[r.ravel()],
            "direction": np.asarray(DIRECTIONS, dtype=object)[d.ravel()],
            "accuracy": acc.ravel(), "count": self.counts[r.ravel()],
        })

    # -- saving --------------------------------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save the counts to ``path``, an ``.npz`` archive tagged with the model and the settings
        (:mod:`attnwidgets.persist`); :meth:`load` reads them back. Returns the path.

        Examples
        --------
        >>> import tempfile
        >>> correct = np.zeros((2, 1, 2, 1)); correct[0, 0, :, 0] = 3
        >>> s = DependencyScores(["det"], np.array([4]), correct, np.zeros((6, 1)), 1, "tiny")
        >>> back = DependencyScores.load(s.save(tempfile.mkdtemp() + "/deps.npz"), model="tiny")
        >>> back.table().equals(s.table()), back.model
        (True, 'tiny')
        """
        from ..persist import write

        arrays = {"relations": np.asarray(self.relations, dtype=str).reshape(len(self.relations)),
                  "counts": self.counts, "correct": self.correct, "baseline_correct": self.baseline_correct}
        model = self.model_info if self.model_info is not None else (self.model or None)
        return write(path, "DependencyScores", arrays, model=model, settings=self.settings,
                     attrs={"n_sentences": int(self.n_sentences), "model": self.model})

    @classmethod
    def load(cls, path: str | os.PathLike[str], model: Any = None) -> DependencyScores:
        """Load what :meth:`save` wrote. ``model`` (a runner, a ModelInfo, a model id or folder; None: no check) must
        be the model that was scored, else :class:`~attnwidgets.persist.ModelMismatchError` names both."""
        from ..persist import Saved, info_from_tags, load_checked

        def build(saved: Saved) -> DependencyScores:
            info = info_from_tags(saved.model)
            heads = (None, None) if info is None else (info.n_layers, info.n_heads)
            rel = saved.array("relations", (None,), "U")
            n_rel = len(rel)
            scores = cls(rel.tolist(), saved.array("counts", (n_rel,), "iu"),
                         saved.array("correct", (len(DIRECTIONS), *heads, n_rel), "iuf"),
                         saved.array("baseline_correct", (len(OFFSETS), n_rel), "iuf"), saved.attrs["n_sentences"],
                         _name(saved.attrs["model"]), info, saved.settings)
            scores.check()
            return scores

        return load_checked(path, "DependencyScores", build, model=model)


def _name(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"its model name is {type(value).__name__}, not text")
    return value


def _sentence_counts(result: AttentionResult, sentence: Sentence, rel_index: np.ndarray, n_rel: int,
                     rows: RowMode) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(2, L, H, R) correct, (R,) counts, (6, R) baseline correct for one sentence."""
    m = len(sentence.words)
    c = piece_word_matrix(sentence, result.tokens, result.special_mask)  # (n, m) pieces -> words
    sizes = c.sum(0)  # pieces per word
    present = sizes > 0
    if rows == "mean":
        r = (c / np.maximum(sizes, 1)).T
    else:
        r = np.zeros((m, result.n_tokens), dtype=np.float32)
        first = np.argmax(c > 0, axis=0)
        r[np.flatnonzero(present), first[present]] = 1.0
    if result.is_lazy:
        pred = _predictions_blocks(result, r, c, present)
    else:
        w = np.matmul(np.matmul(r, result.attention), c)  # (L, H, m, m) word-level, specials dropped
        w[..., np.arange(m), np.arange(m)] = -np.inf  # a word may not choose itself
        w[..., ~present] = -np.inf
        pred = w.argmax(-1)  # (L, H, m)
    gold = sentence.heads
    dep = np.flatnonzero((gold >= 0) & present & present[np.maximum(gold, 0)])
    onehot = np.zeros((dep.size, n_rel), dtype=np.float64)
    onehot[np.arange(dep.size), rel_index[dep]] = 1.0
    d2h = pred[..., dep] == gold[dep]  # (L, H, D)
    h2d = pred[..., gold[dep]] == dep
    correct = np.stack([d2h, h2d]).astype(np.float64) @ onehot  # (2, L, H, R)
    offsets = np.array(OFFSETS)[:, None]
    base = (gold[dep][None] == dep[None] + offsets).astype(np.float64) @ onehot  # (6, R)
    return correct, onehot.sum(0), base


def _predictions_blocks(result: AttentionResult, r: np.ndarray, c: np.ndarray, present: np.ndarray) -> np.ndarray:
    """(L, H, m) argmax of each word's word-level row (itself and absent words excluded), a block of words at a time."""
    words = WordStack(layers=(), source=result.stack("self"), word_map=WordMap(r, c))
    n_layers, n_heads, m, _ = words.shape
    pred = np.zeros((n_layers, n_heads, m), dtype=np.int64)
    step = block_rows(n_heads, max(m, result.n_tokens))
    for layer in range(n_layers):
        for start in range(0, m, step):
            stop = min(m, start + step)
            w = words.rows(layer, start, stop)  # (H, rows, m)
            w[:, np.arange(stop - start), np.arange(start, stop)] = -np.inf
            w[..., ~present] = -np.inf
            pred[layer, :, start:stop] = w.argmax(-1)
    return pred


def score_dependencies(
    results: Iterable[AttentionResult],
    sentences: Sequence[Sentence],
    *,
    rows: RowMode = "mean",
    progress: bool = True,
    subtypes: bool = True,
) -> DependencyScores:
    """Score every head on every relation, from results already run on the sentences' ``text``, in order.

    Parameters
    ----------
    results : iterable of AttentionResult
        One per sentence (a generator is fine: results are scored and dropped one by one).
    sentences : sequence of Sentence
        From :func:`read_conllu`. Each result is the model's reading of ``sentence.text``: the ``# text`` line, with
        multiword tokens whole, unless the sentences were read with ``text="words"`` (the syntactic words joined by
        spaces; module docstring).
    rows : {"mean", "first"}
        A word's row: mean of its pieces (paper) or first piece (Clark et al.'s code).
    progress : bool
        Show a ``tqdm.auto`` bar.
    subtypes : bool
        Score relation subtypes apart ("nmod:poss"); False pools them under their universal part ("nmod"), whatever
        the sentences were read with.
    """
    def labels(sentence: Sentence) -> list[str]:
        return sentence.relations if subtypes else [rel.split(":")[0] for rel in sentence.relations]

    relations = sorted({rel for s in sentences for rel in labels(s) if rel != "root"})
    index = {rel: i for i, rel in enumerate(relations)}
    n_rel = len(relations)
    correct: np.ndarray | None = None
    counts = np.zeros(n_rel)
    base = np.zeros((len(OFFSETS), n_rel))
    bar: Any = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(sentences), desc="dependency scores", unit="sentence", delay=1.0)
    n = 0
    model = ""
    info = None
    try:
        for result, sentence in zip(results, sentences):
            model = model or result.model.name
            info = info or result.model
            rel_index = np.array([index.get(rel, 0) for rel in labels(sentence)], dtype=np.int64)
            c, k, b = _sentence_counts(result, sentence, rel_index, n_rel, rows)
            correct = c if correct is None else correct + c
            counts += k
            base += b
            n += 1
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    if correct is None:
        raise ValueError("no sentences were scored")
    return DependencyScores(relations, counts.astype(np.int64), correct, base, n, model, info,
                            {"rows": rows, "subtypes": subtypes}, rows, subtypes)
