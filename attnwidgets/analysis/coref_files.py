"""Coreference files read into documents: CorefUD's CoNLL-U (``Entity=`` in MISC) and CoNLL-2012 brackets, each
mention with its head word. What is done with them (segments, scoring against Clark et al.'s baselines) is
:mod:`attnwidgets.analysis.coref`, whose docstring states the rules (mention heads included) both modules follow.
"""

from __future__ import annotations

import bisect
import re
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import numpy as np

from .conllu import ParseError, Sentence, TextMode, check_tree, conllu_head, conllu_id, source_lines, words_text

__all__ = ["CorefDocument", "Mention", "document_words_text", "read_coref"]

_PTB_NOUN = re.compile(r"^(NN|NNS|NNP|NNPS|PRP|PRP\$|CD)$")
_PTB_CUT = re.compile(r"^(IN|TO|WDT|WP|WP\$|WRB|MD|VB.?|,|:|-LRB-)$")
_UD_NOUN = {"NOUN", "PROPN", "PRON", "NUM"}
_UD_CUT = {"ADP", "SCONJ", "VERB", "AUX", "PUNCT"}


@dataclass(frozen=True)
class Mention:
    """One mention: word indices in its document (or segment), inclusive.

    Attributes
    ----------
    entity : str
        The entity (cluster) id as the file spells it.
    start, end : int
        First and last word (0-based, inclusive).
    head : int
        The head word (the rule is stated in :mod:`attnwidgets.analysis.coref`).
    words : Sequence[int]
        The words of the mention: ``range(start, end + 1)`` for a contiguous mention (left out, it is filled in; a
        range, so that nested mentions cost no list of their words), a tuple of the parts' words for a discontinuous
        one.
    """

    entity: str
    start: int
    end: int
    head: int
    words: Sequence[int] = ()

    def __post_init__(self) -> None:
        if len(self.words) == 0:
            object.__setattr__(self, "words", range(self.start, self.end + 1))


@dataclass
class CorefDocument:
    """A document of a coreference file: its sentences (for the text the model reads) and its mentions.

    Attributes
    ----------
    doc_id : str
    sentences : list[Sentence]
        The sentences (words, dependency heads within the sentence, relations, text, tags).
    mentions : list[Mention]
        Sorted by (start, end); word indices count over the whole document.
    feats : list[str]
        The FEATS column of each word ("_" when absent), for the rule-based baseline.
    dropped : int
        Mentions left out (spanning sentences, or of empty nodes only).
    """

    doc_id: str
    sentences: list[Sentence]
    mentions: list[Mention]
    feats: list[str] = field(default_factory=list)
    dropped: int = 0

    @property
    def words(self) -> list[str]:
        return [w for s in self.sentences for w in s.words]

    @property
    def offsets(self) -> list[int]:
        """The document index of each sentence's first word."""
        return [int(x) for x in np.cumsum([0] + [len(s.words) for s in self.sentences])[:-1]]

    @property
    def n_entities(self) -> int:
        return len({m.entity for m in self.mentions})

    def __repr__(self) -> str:
        return (f"CorefDocument({self.doc_id!r}, {len(self.sentences)} sentences, {len(self.mentions)} mentions, "
                f"{self.n_entities} entities)")


# -- head words ------------------------------------------------------------------------------------------------------


def _depths(heads: Sequence[int]) -> list[int]:
    """Steps from each word up to its root (0 for a root, whose head is -1); the heads form no cycle (read_coref
    refuses one). Each word is walked once: linear in the words."""
    depth = [-1] * len(heads)
    for i in range(len(heads)):
        path = []
        j = i
        while j >= 0 and depth[j] < 0:
            path.append(j)
            j = heads[j]
        d = depth[j] if j >= 0 else -1
        for w in reversed(path):
            d += 1
            depth[w] = d
    return depth


def _is_noun(tag: str) -> bool:
    return bool(_PTB_NOUN.match(tag)) or tag in _UD_NOUN


def _is_cut(tag: str) -> bool:
    return bool(_PTB_CUT.match(tag)) or tag in _UD_CUT


def _is_tagged(tag: str) -> bool:
    return tag not in ("", "_", "-")


def _rule_head(words: Sequence[int], tags: Sequence[str]) -> int:
    """The head word of a mention without dependencies (see :mod:`attnwidgets.analysis.coref`), by scanning its
    words: for a discontinuous mention (contiguous ones use :class:`_Heads`, which needs no scan)."""
    if not any(_is_tagged(tags[w]) for w in words):
        return words[-1]
    prefix = [words[0]]
    for w in words[1:]:
        if _is_cut(tags[w]):
            break
        prefix.append(w)
    nouns = [w for w in prefix if _is_noun(tags[w])]
    return nouns[-1] if nouns else prefix[-1]


def _range_min(keys: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """min(keys[lo[i]..hi[i]]) (inclusive) for every i, by a sparse table built one level at a time: O(n log n) time
    for n keys and O(1) a query, never more than one level in memory."""
    out = np.empty(len(lo), dtype=keys.dtype)
    if not len(lo):
        return out
    level = np.frexp((hi - lo + 1).astype(np.float64))[1] - 1  # floor(log2(length)), exact for integers
    table = keys
    for k in range(int(level.max()) + 1):
        span = 1 << k
        sel = level == k
        if sel.any():
            out[sel] = np.minimum(table[lo[sel]], table[hi[sel] - span + 1])
        if k < int(level.max()):
            table = np.minimum(table[:-span], table[span:])  # min over 2 * span words from each start
    return out


class _Heads:
    """Head words of many mentions of one document in time linear in its words and mentions, however the mentions
    nest (no mention's words are scanned).

    With dependencies: the word of the mention closest to the root (fewest steps up its heads), punctuation left out
    unless the mention is all punctuation, then the leftmost -- a range minimum of (depth, index). Without: the rule
    of :func:`_rule_head`, from the next cutting tag after each word and the last noun up to each word.
    """

    def __init__(self, heads: Sequence[int], deprels: Sequence[str], tags: Sequence[str]) -> None:
        n = len(heads)
        self.tags = tags
        depth = np.asarray(_depths(heads), dtype=np.int64)
        index = np.arange(n, dtype=np.int64)
        self.n = max(n, 1)
        self.every = depth * self.n + index
        punct = np.array([r.split(":")[0] == "punct" for r in deprels], dtype=bool)
        self.plain = np.where(punct, np.iinfo(np.int64).max, self.every)
        tagged = np.array([_is_tagged(t) for t in tags], dtype=np.int64)
        self.tagged = np.concatenate([[0], np.cumsum(tagged)])
        self.next_cut = [n] * (n + 1)  # the first word >= i with a cutting tag
        for i in range(n - 1, -1, -1):
            self.next_cut[i] = i if _is_cut(tags[i]) else self.next_cut[i + 1]
        self.last_noun = [-1] * n  # the last word <= i with a noun tag
        for i in range(n):
            self.last_noun[i] = i if _is_noun(tags[i]) else (self.last_noun[i - 1] if i else -1)

    def by_dependencies(self, spans: Sequence[tuple[int, int]]) -> list[int]:
        if not spans:
            return []
        lo = np.array([a for a, _ in spans], dtype=np.int64)
        hi = np.array([b for _, b in spans], dtype=np.int64)
        best = _range_min(self.plain, lo, hi)
        alone = best == np.iinfo(np.int64).max  # all punctuation
        if alone.any():
            best[alone] = _range_min(self.every, lo[alone], hi[alone])
        return (best % self.n).tolist()

    def by_rule(self, start: int, end: int) -> int:
        if self.tagged[end + 1] == self.tagged[start]:
            return end
        stop = min(end, self.next_cut[start + 1] - 1) if start < end else start
        noun = self.last_noun[stop]
        return noun if noun >= start else stop

    def of_words(self, words: Sequence[int], has_deps: bool) -> int:
        """A discontinuous mention's head: the same rules over its words only."""
        if not has_deps:
            return _rule_head(words, self.tags)
        at = np.asarray(words, dtype=np.int64)
        best = int(self.plain[at].min())
        if best == np.iinfo(np.int64).max:
            best = int(self.every[at].min())
        return best % self.n


# -- reading ---------------------------------------------------------------------------------------------------------

_ENTITY_PART = re.compile(r"\(([^()]+)\)|\(([^()]+)|([^()]+)\)")


@dataclass
class _Open:
    key: str
    entity: str
    start: int
    sentence: int
    line: int


@dataclass
class _Builder:
    """Collects one document's sentences and brackets."""

    doc_id: str
    sentences: list[Sentence] = field(default_factory=list)
    feats: list[str] = field(default_factory=list)
    deprels: list[str] = field(default_factory=list)
    heads: list[int] = field(default_factory=list)  # document-level, -1 for a root
    has_deps: list[bool] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)  # each sentence's first word
    open: dict[str, list[_Open]] = field(default_factory=dict)  # by key, the innermost last
    parts: dict[tuple[str, str], list[int]] = field(default_factory=dict)  # discontinuous: (entity, id/total)
    spans: list[tuple[str, Sequence[int], bool]] = field(default_factory=list)  # entity, words, spans sentences
    n_words: int = 0
    empty_only: int = 0

    def add_sentence(self, s: Sentence, feats: list[str], has_deps: bool) -> None:
        offset = self.n_words
        self.sentences.append(s)
        self.starts.append(offset)
        self.feats += feats
        self.deprels += s.relations
        self.heads += [offset + int(h) if h >= 0 else -1 for h in s.heads]
        self.has_deps += [has_deps] * len(s.words)
        self.n_words += len(s.words)

    def opened(self, key: str, entity: str, start: int, line: int) -> None:
        self.open.setdefault(key, []).append(_Open(key, entity, start, len(self.sentences), line))

    def closed(self, key: str, end: int, line: int, what: str) -> None:
        stack = self.open.get(key)
        if not stack:
            raise ParseError(f"{what} closes {key!r}, which is not open; every closing bracket needs an opening one "
                             "before it in the same document", line=line)
        o = stack.pop()
        if not stack:
            del self.open[key]
        if end < o.start:
            self.empty_only += 1
            return
        base, part = _split_part(key)
        words: Sequence[int] = range(o.start, end + 1)
        if part is not None:  # one part of a discontinuous mention: collect until its last part closes
            slot = (o.entity, f"{base}/{part[1]}")
            self.parts.setdefault(slot, []).extend(words)
            if part[0] != part[1]:
                return
            words = tuple(sorted(set(self.parts.pop(slot))))
        crosses = self._sentence_of(words[0]) != self._sentence_of(words[-1])
        self.spans.append((o.entity, words, crosses))

    def _sentence_of(self, w: int) -> int:
        return bisect.bisect_right(self.starts, w) - 1 if w < self.n_words else len(self.sentences)

    def finish(self, line: int) -> CorefDocument:
        if self.open:
            o = min((o for stack in self.open.values() for o in stack), key=lambda o: o.line)
            raise ParseError(f"mention of {o.key!r} opened here is never closed (document {self.doc_id!r} ends at "
                             f"line {line}); close it with {o.key + ')'!r} on its last word", line=o.line)
        if self.parts:
            (entity, key), _ = next(iter(self.parts.items()))
            raise ParseError(f"document {self.doc_id!r}: discontinuous mention of {entity!r} ({key}) lacks its last "
                             "part; a mention in n parts marks them [1/n] ... [n/n]")
        tags = [t for s in self.sentences for t in (s.upos or ["_"] * len(s.words))]
        heads = _Heads(self.heads, self.deprels, tags)
        kept = [(entity, words) for entity, words, crosses in self.spans if not crosses]
        spanning = len(self.spans) - len(kept)
        contiguous = [i for i, (_, words) in enumerate(kept)
                      if isinstance(words, range) and self.has_deps[words[0]]]
        found = dict(zip(contiguous, heads.by_dependencies([(kept[i][1][0], kept[i][1][-1]) for i in contiguous]),
                         strict=True))
        mentions: dict[tuple[str, int, int, Sequence[int]], Mention] = {}
        for i, (entity, words) in enumerate(kept):
            if i in found:
                head = found[i]
            elif isinstance(words, range):
                head = heads.by_rule(words[0], words[-1])
            else:
                head = heads.of_words(words, self.has_deps[words[0]])
            m = Mention(entity, words[0], words[-1], head, words)
            mentions[(entity, m.start, m.end, m.words)] = m
        if spanning:
            warnings.warn(f"document {self.doc_id!r}: {spanning} mention(s) spanning sentences left out (a head word "
                          "is found within one sentence)", stacklevel=4)
        ordered = sorted(mentions.values(), key=lambda m: (m.start, m.end, m.entity))
        return CorefDocument(self.doc_id, self.sentences, ordered, self.feats, spanning + self.empty_only)


_PART = re.compile(r"(.+?)\[(\d+)/(\d+)\]")


def _split_part(key: str) -> tuple[str, tuple[int, int] | None]:
    if not key.endswith("]"):
        return key, None
    m = _PART.fullmatch(key)
    if not m:
        return key, None
    return m.group(1), (int(m.group(2)), int(m.group(3)))


def _entity_brackets(value: str, line: int) -> list[tuple[str, str]]:
    """('open' | 'close' | 'single', content) of a CorefUD ``Entity=`` value, in order."""
    out: list[tuple[str, str]] = []
    pos = 0
    for m in _ENTITY_PART.finditer(value):
        if m.start() != pos:
            break
        single, opening, closing = m.groups()
        out.append(("single", single) if single else ("open", opening) if opening else ("close", closing))
        pos = m.end()
    if pos != len(value) or not out:
        raise ParseError(f"malformed Entity={value[:60]!r}{'...' if len(value) > 60 else ''} at character {pos + 1} "
                         "(expected brackets like '(e1-person-1', 'e1)' or '(e2-place-1)'); fix the MISC column",
                         line=line)
    return out


def _eid(content: str) -> tuple[str, str]:
    """(key with any [i/n] part marker, entity id) from an opening bracket's content ``e1[1/2]-person-1-...``."""
    key = content.split("-", 1)[0]
    return key, _split_part(key)[0]


def _read_corefud(lines: Iterable[str]) -> Iterator[CorefDocument]:
    doc: _Builder | None = None
    words: list[str] = []
    heads: list[int] = []
    numbers: list[int] = []
    rels: list[str] = []
    tags: list[str] = []
    feats: list[str] = []
    surface: list[tuple[str, tuple[int, ...]]] = []
    built: list[str] = []  # the surface tokens and their spaces, for a sentence without "# text ="
    own_text: str | None = None
    sent_id: str | None = None
    span_end = 0
    has_deps = True
    number = 0
    seen_entity = False
    n_docs = 0

    def flush() -> None:
        nonlocal doc, n_docs
        if doc is None:
            doc = _Builder(f"doc{n_docs}")
            n_docs += 1
        check_tree(heads, numbers, sent_id)
        text = own_text if own_text is not None else "".join(built).strip()
        doc.add_sentence(Sentence(words, np.array(heads, dtype=np.int64) - 1, rels, text, sent_id, tags, surface),
                         feats, has_deps)

    for number, raw in enumerate(lines, 1):
        line = raw.rstrip("\n").rstrip("\r")
        if not line.strip():
            if words:
                flush()
            words, heads, numbers, rels, tags, feats, surface = [], [], [], [], [], [], []
            built, own_text, sent_id, span_end, has_deps = [], None, None, 0, True
            continue
        if line.startswith("#"):
            key, eq, value = line[1:].partition("=")
            key = key.strip()
            if key in ("newdoc id", "newdoc"):
                if words:
                    raise ParseError("# newdoc inside a sentence: a new document starts after a blank line",
                                     line=number)
                if doc is not None:
                    yield doc.finish(number)
                doc = _Builder(value.strip() or f"doc{n_docs}")
                n_docs += 1
            elif eq and key == "sent_id":
                sent_id = value.strip()
            elif eq and key == "text":
                own_text = value.strip()
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise ParseError(f"{len(cols)} tab-separated columns, expected 10 (ID FORM LEMMA UPOS XPOS FEATS HEAD "
                             f"DEPREL DEPS MISC): {line[:60]!r}; is this a CorefUD CoNLL-U file?", line=number)
        if doc is None:
            doc = _Builder(f"doc{n_docs}")
            n_docs += 1
        misc = cols[9]
        space = "" if "SpaceAfter=No" in misc else " "
        kind, first, last = conllu_id(cols[0], number, len(words) + 1)
        if kind == "range":
            surface.append((cols[1], tuple(range(first - 1, last))))
            built += (cols[1], space)
            span_end = last
            continue
        empty = kind == "empty"
        index = doc.n_words + len(words)  # this word's document index (the next word's, for an empty node)
        for item in misc.split("|"):
            if not item.startswith("Entity="):
                continue
            seen_entity = True
            for bracket, content in _entity_brackets(item[len("Entity="):], number):
                if bracket in ("open", "single"):
                    key, entity = _eid(content)
                    doc.opened(key, entity, index, number)
                if bracket in ("close", "single"):
                    key = content.strip() if bracket == "close" else _eid(content)[0]
                    doc.closed(key, index - 1 if empty else index, number, f"Entity bracket {key + ')'!r}")
        if empty:
            continue
        head = conllu_head(cols[6], number)
        if head is None:
            has_deps = False
        words.append(cols[1])
        heads.append(head if head is not None else 0)
        numbers.append(number)
        rels.append(cols[7])
        tags.append(cols[3])
        feats.append(cols[5])
        if len(words) > span_end:
            surface.append((cols[1], (len(words) - 1,)))
            built += (cols[1], space)
    if words:
        flush()
    if doc is not None:
        yield doc.finish(number)
    if not seen_entity:
        raise ParseError("this CoNLL-U file has no coreference annotation (no Entity= in any MISC column); CorefUD "
                         "files mark mentions as Entity=(e1-... / e1)")


_PTB_WORDS = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}", "/.": ".",
              "/?": "?", "/-": "-"}
"""OntoNotes' escaped brackets and conversational punctuation, read as the characters the model should see."""

_CONLL_PART = re.compile(r"\(([^()|\s]+)\)|\(([^()|\s]+)|([^()|\s]+)\)")


def _read_conll2012(lines: Iterable[str]) -> Iterator[CorefDocument]:
    doc: _Builder | None = None
    words: list[str] = []
    tags: list[str] = []
    seen = False
    number = 0

    def flush() -> None:
        assert doc is not None
        n = len(words)
        s = Sentence(list(words), np.full(n, -1, dtype=np.int64), ["_"] * n, " ".join(words), None, list(tags), [])
        doc.add_sentence(s, ["_"] * n, False)

    for number, raw in enumerate(lines, 1):
        line = raw.rstrip("\n").rstrip("\r")
        if line.startswith("#begin document"):
            if doc is not None:
                raise ParseError("#begin document before the previous #end document; end each document first",
                                 line=number)
            name = line[len("#begin document"):].strip()
            m = re.match(r"\((.*)\);\s*part\s*(\S+)", name)
            doc = _Builder(f"{m.group(1)}/{m.group(2)}" if m else name)
            continue
        if line.startswith("#end document"):
            if doc is None:
                raise ParseError("#end document without #begin document", line=number)
            if words:
                flush()
                words, tags = [], []
            yield doc.finish(number)
            doc = None
            continue
        if not line.strip():
            if words and doc is not None:
                flush()
            words, tags = [], []
            continue
        if line.startswith("#"):
            continue
        if doc is None:
            raise ParseError("a token outside #begin document ... #end document", line=number)
        cols = line.split()
        if len(cols) < 4:
            raise ParseError(f"{len(cols)} columns; a CoNLL-2012 token line holds document, part, word number, word, "
                             "..., coreference (the last column)", line=number)
        index = doc.n_words + len(words)
        coref = cols[-1]
        if coref not in ("-", "_"):
            for item in coref.split("|"):
                m = _CONLL_PART.fullmatch(item)
                if m is None:
                    raise ParseError(f"malformed coreference {coref[:60]!r} (expected '-', '(1', '1)', '(1)' joined by "
                                     "'|'); fix the last column", line=number)
                seen = True
                single, opening, closing = m.groups()
                if single or opening:
                    doc.opened(single or opening, single or opening, index, number)
                if single or closing:
                    key = single or closing
                    doc.closed(key, index, number, f"coreference bracket {key + ')'!r}")
        words.append(_PTB_WORDS.get(cols[3], cols[3]))
        tags.append(cols[4] if len(cols) >= 6 else "_")
    if doc is not None:
        raise ParseError(f"document {doc.doc_id!r} has no #end document; the file may be cut short")
    if not seen:
        raise ParseError("this CoNLL-2012 file has no coreference annotation (every coreference column is '-')")


def document_words_text(document: CorefDocument) -> CorefDocument:
    """``document`` with each sentence read as its syntactic words joined by spaces (:func:`read_coref`'s
    ``text="words"``); its mentions and word indices, which count syntactic words either way, unchanged."""
    return replace(document, sentences=[words_text(s) for s in document.sentences])


def read_coref(source: str | Path | Iterable[str], *, format: Literal["auto", "corefud", "conll2012"] = "auto",
               text: TextMode = "surface") -> list[CorefDocument]:
    """Read the documents of a coreference file: CorefUD's CoNLL-U (``Entity=`` in MISC) or CoNLL-2012.

    Parameters
    ----------
    source : path, file text (a string with newlines) or iterable of lines
    format : {"auto", "corefud", "conll2012"}
        "auto" takes CoNLL-2012 when a line starts with ``#begin document``, else CorefUD.
    text : {"surface", "words"}
        What the model reads of each sentence, as :func:`~attnwidgets.analysis.conllu.read_conllu`'s ``text``.
        "surface" (default): a CorefUD sentence's own ``# text``, so a multiword token ("didn't") is read whole and
        its words share its pieces; "words": the syntactic words joined by spaces, each with pieces of its own. A
        CoNLL-2012 file, whose text is its words joined by spaces, reads the same either way.

    Returns
    -------
    list[CorefDocument]
        Documents in file order, each with its mentions sorted by (start, end) and their head words. See the module
        docstring for nested, discontinuous and sentence-spanning mentions. Time and memory grow linearly with the
        file, however deeply its mentions nest.

    Raises
    ------
    ParseError
        A ``ValueError`` naming the file, the line and what to fix: brackets that do not open and close in pairs or
        are malformed, a line that is not CoNLL-U or CoNLL-2012 (column count, ID, HEAD), a HEAD past its sentence,
        HEADs that form a cycle (the sentence is named), a file with no coreference annotation, a file that is not
        UTF-8 text.

    Examples
    --------
    >>> rows = ["# newdoc id = d", "1 Ann Ann PROPN _ _ 2 nsubj _ Entity=(e1-person-1)",
    ...         "2 said say VERB _ _ 0 root _ _", "3 she she PRON _ _ 2 obj _ Entity=(e1-person-1)"]
    >>> doc = read_coref([r.replace(" ", "\\t") if r[0] != "#" else r for r in rows])[0]
    >>> doc, [(m.entity, m.start, m.head) for m in doc.mentions]
    (CorefDocument('d', 1 sentences, 2 mentions, 1 entities), [('e1', 0, 0), ('e1', 2, 2)])

    A multiword token, read whole or as its words:

    >>> rows = ["# newdoc id = d", "# text = Ann didn't go.", "1 Ann Ann PROPN _ _ 4 nsubj _ Entity=(e1-person-1)",
    ...         "2-3 didn't _ _ _ _ _ _ _ _", "2 did do AUX _ _ 4 aux _ _", "3 n't not PART _ _ 4 advmod _ _",
    ...         "4 go go VERB _ _ 0 root _ SpaceAfter=No", "5 . . PUNCT _ _ 4 punct _ _"]
    >>> lines = [r.replace(" ", "\\t") if r[0] != "#" else r for r in rows]
    >>> [read_coref(lines, text=t)[0].sentences[0].text for t in ("surface", "words")]
    ["Ann didn't go.", "Ann did n't go ."]
    """
    if format not in ("auto", "corefud", "conll2012"):
        raise ValueError(f"format must be 'auto', 'corefud' or 'conll2012', got {format!r}")
    if text not in ("surface", "words"):
        raise ValueError(f"text must be 'surface' or 'words', got {text!r}")
    name, read = source_lines(source, "coreference")
    try:
        lines = list(read)
        if format == "auto":
            format = "conll2012" if any(line.startswith("#begin document") for line in lines) else "corefud"
        docs = list(_read_conll2012(lines) if format == "conll2012" else _read_corefud(lines))
        if not docs or not any(d.sentences for d in docs):
            raise ParseError("the coreference file has no sentences")
    except ParseError as exc:
        raise exc.at(name) from None
    return [document_words_text(d) for d in docs] if text == "words" else docs
