"""Coreference files read into documents: CorefUD's CoNLL-U (``Entity=`` in MISC) and CoNLL-2012 brackets, each
mention with its head word. What is done with them (segments, scoring against Clark et al.'s baselines) is
:mod:`attnwidgets.analysis.coref`, whose docstring states the rules (mention heads included) both modules follow.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from .dependency import Sentence

__all__ = ["CorefDocument", "Mention", "read_coref"]

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
    words : tuple[int, ...]
        The words of the mention (all of start..end, except for a discontinuous mention).
    """

    entity: str
    start: int
    end: int
    head: int
    words: tuple[int, ...] = ()


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
    out = []
    for i in range(len(heads)):
        d, j, seen = 0, i, set()
        while 0 <= heads[j] < len(heads) and j not in seen:
            seen.add(j)
            j = heads[j]
            d += 1
        out.append(d)
    return out


def _rule_head(words: Sequence[int], tags: Sequence[str]) -> int:
    """The head word of a mention without dependencies (see the module docstring)."""
    if not any(t not in ("", "_", "-") for t in (tags[w] for w in words)):
        return words[-1]
    prefix = [words[0]]
    for w in words[1:]:
        t = tags[w]
        if _PTB_CUT.match(t) or t in _UD_CUT:
            break
        prefix.append(w)
    nouns = [w for w in prefix if _PTB_NOUN.match(tags[w]) or tags[w] in _UD_NOUN]
    return nouns[-1] if nouns else prefix[-1]


def _mention_head(words: Sequence[int], heads: Sequence[int], deprels: Sequence[str], tags: Sequence[str],
                  depth: Sequence[int], has_deps: bool) -> int:
    if not has_deps:
        return _rule_head(words, tags)
    inside = set(words)
    tops = [w for w in words if heads[w] not in inside]
    if not tops:  # a cycle in the annotation: no word leaves the mention
        return _rule_head(words, tags)
    plain = [w for w in tops if deprels[w].split(":")[0] != "punct"] or tops
    return min(plain, key=lambda w: (depth[w], w))


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
    open: list[_Open] = field(default_factory=list)
    parts: dict[tuple[str, str], list[int]] = field(default_factory=dict)  # discontinuous: (entity, id/total)
    spans: list[tuple[str, list[int], bool]] = field(default_factory=list)  # entity, words, spans sentences
    n_words: int = 0
    empty_only: int = 0

    def add_sentence(self, s: Sentence, feats: list[str], has_deps: bool) -> None:
        offset = self.n_words
        self.sentences.append(s)
        self.feats += feats
        self.deprels += s.relations
        self.heads += [offset + int(h) if h >= 0 else -1 for h in s.heads]
        self.has_deps += [has_deps] * len(s.words)
        self.n_words += len(s.words)

    def opened(self, key: str, entity: str, start: int, line: int) -> None:
        self.open.append(_Open(key, entity, start, len(self.sentences), line))

    def closed(self, key: str, end: int, line: int, what: str) -> None:
        for k in range(len(self.open) - 1, -1, -1):
            if self.open[k].key == key:
                o = self.open.pop(k)
                break
        else:
            raise ValueError(f"line {line}: {what} closes {key!r}, which is not open")
        if end < o.start:
            self.empty_only += 1
            return
        base, part = _split_part(key)
        words = list(range(o.start, end + 1))
        if part is not None:  # one part of a discontinuous mention: collect until its last part closes
            slot = (o.entity, f"{base}/{part[1]}")
            self.parts.setdefault(slot, []).extend(words)
            if part[0] != part[1]:
                return
            words = sorted(set(self.parts.pop(slot)))
        sentences = {self._sentence_of(w) for w in (words[0], words[-1])}
        self.spans.append((o.entity, words, len(sentences) > 1))

    def _sentence_of(self, w: int) -> int:
        total = 0
        for i, s in enumerate(self.sentences):
            total += len(s.words)
            if w < total:
                return i
        return len(self.sentences)

    def finish(self, line: int) -> CorefDocument:
        if self.open:
            o = self.open[0]
            raise ValueError(f"line {o.line}: mention of {o.key!r} opened here is never closed (document "
                             f"{self.doc_id!r} ends at line {line})")
        if self.parts:
            (entity, key), _ = next(iter(self.parts.items()))
            raise ValueError(f"document {self.doc_id!r}: discontinuous mention of {entity!r} ({key}) lacks its "
                             "last part")
        tags = [t for s in self.sentences for t in (s.upos or ["_"] * len(s.words))]
        depth = _depths(self.heads)
        mentions: dict[tuple[str, int, int, tuple[int, ...]], Mention] = {}
        spanning = 0
        for entity, words, crosses in self.spans:
            if crosses:
                spanning += 1
                continue
            has_deps = all(self.has_deps[w] for w in words)
            head = _mention_head(words, self.heads, self.deprels, tags, depth, has_deps)
            m = Mention(entity, words[0], words[-1], head, tuple(words))
            mentions[(entity, m.start, m.end, m.words)] = m
        if spanning:
            warnings.warn(f"document {self.doc_id!r}: {spanning} mention(s) spanning sentences left out (a head word "
                          "is found within one sentence)", stacklevel=4)
        ordered = sorted(mentions.values(), key=lambda m: (m.start, m.end, m.entity))
        return CorefDocument(self.doc_id, self.sentences, ordered, self.feats, spanning + self.empty_only)


def _split_part(key: str) -> tuple[str, tuple[int, int] | None]:
    m = re.fullmatch(r"(.+?)\[(\d+)/(\d+)\]", key)
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
        raise ValueError(f"line {line}: malformed Entity={value!r} (expected brackets like '(e1-person-1', 'e1)' or "
                         "'(e2-place-1)')")
    return out


def _eid(content: str) -> tuple[str, str]:
    """(key with any [i/n] part marker, entity id) from an opening bracket's content ``e1[1/2]-person-1-...``."""
    key = content.split("-", 1)[0]
    return key, _split_part(key)[0]


def _read_corefud(lines: Iterable[str]) -> Iterator[CorefDocument]:
    doc: _Builder | None = None
    words: list[str] = []
    heads: list[int] = []
    rels: list[str] = []
    tags: list[str] = []
    feats: list[str] = []
    surface: list[tuple[str, tuple[int, ...]]] = []
    built = ""
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
        text = own_text if own_text is not None else built.strip()
        doc.add_sentence(Sentence(words, np.array(heads, dtype=np.int64) - 1, rels, text, sent_id, tags, surface),
                         feats, has_deps)

    for number, raw in enumerate(lines, 1):
        line = raw.rstrip("\n").rstrip("\r")
        if not line.strip():
            if words:
                flush()
            words, heads, rels, tags, feats, surface, built, own_text, sent_id = [], [], [], [], [], [], "", None, None
            span_end, has_deps = 0, True
            continue
        if line.startswith("#"):
            key, eq, value = line[1:].partition("=")
            key = key.strip()
            if key in ("newdoc id", "newdoc"):
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
            raise ValueError(f"CoNLL-U line {number} has {len(cols)} tab-separated columns, expected 10: {line[:60]!r}")
        if doc is None:
            doc = _Builder(f"doc{n_docs}")
            n_docs += 1
        misc = cols[9]
        space = "" if "SpaceAfter=No" in misc else " "
        empty = "." in cols[0]
        if "-" in cols[0]:
            first, last = (int(x) for x in cols[0].split("-"))
            surface.append((cols[1], tuple(range(first - 1, last))))
            built += cols[1] + space
            span_end = last
            continue
        index = doc.n_words + len(words)  # this word's document index (the next word's, for an empty node)
        for item in misc.split("|"):
            if not item.startswith("Entity="):
                continue
            seen_entity = True
            for kind, content in _entity_brackets(item[len("Entity="):], number):
                if kind in ("open", "single"):
                    key, entity = _eid(content)
                    doc.opened(key, entity, index, number)
                if kind in ("close", "single"):
                    key = content.strip() if kind == "close" else _eid(content)[0]
                    doc.closed(key, index - 1 if empty else index, number, f"Entity={item[7:]!r}")
        if empty:
            continue
        if int(cols[0]) != len(words) + 1:
            raise ValueError(f"CoNLL-U line {number}: word ids must run 1, 2, 3...; got {cols[0]}")
        words.append(cols[1])
        if cols[6] == "_":
            has_deps = False
        heads.append(int(cols[6]) if cols[6] not in ("_", "") else 0)
        rels.append(cols[7])
        tags.append(cols[3])
        feats.append(cols[5])
        if len(words) > span_end:
            surface.append((cols[1], (len(words) - 1,)))
            built += cols[1] + space
    if words:
        flush()
    if doc is not None:
        yield doc.finish(number)
    if not seen_entity:
        raise ValueError("this CoNLL-U file has no coreference annotation (no Entity= in any MISC column); CorefUD "
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
                raise ValueError(f"line {number}: #begin document before the previous #end document")
            name = line[len("#begin document"):].strip()
            m = re.match(r"\((.*)\);\s*part\s*(\S+)", name)
            doc = _Builder(f"{m.group(1)}/{m.group(2)}" if m else name)
            continue
        if line.startswith("#end document"):
            if doc is None:
                raise ValueError(f"line {number}: #end document without #begin document")
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
            raise ValueError(f"line {number}: a token outside #begin document ... #end document")
        cols = line.split()
        if len(cols) < 4:
            raise ValueError(f"CoNLL-2012 line {number} has {len(cols)} columns; expected document, part, word number, "
                             "word, ..., coreference")
        index = doc.n_words + len(words)
        coref = cols[-1]
        if coref not in ("-", "_"):
            items = coref.split("|")
            for item in items:
                m = _CONLL_PART.fullmatch(item)
                if m is None:
                    raise ValueError(f"line {number}: malformed coreference {coref!r} (expected '-', '(1', '1)', '(1)' "
                                     "joined by '|')")
                seen = True
                single, opening, closing = m.groups()
                if single or opening:
                    doc.opened(single or opening, single or opening, index, number)
                if single or closing:
                    doc.closed(single or closing, index, number, f"coreference {coref!r}")
        words.append(_PTB_WORDS.get(cols[3], cols[3]))
        tags.append(cols[4] if len(cols) >= 6 else "_")
    if doc is not None:
        raise ValueError(f"document {doc.doc_id!r} has no #end document")
    if not seen:
        raise ValueError("this CoNLL-2012 file has no coreference annotation (every coreference column is '-')")


def read_coref(source: str | Path | Iterable[str], *, format: Literal["auto", "corefud", "conll2012"] = "auto"
               ) -> list[CorefDocument]:
    """Read the documents of a coreference file: CorefUD's CoNLL-U (``Entity=`` in MISC) or CoNLL-2012.

    Parameters
    ----------
    source : path, file text (a string with newlines) or iterable of lines
    format : {"auto", "corefud", "conll2012"}
        "auto" takes CoNLL-2012 when a line starts with ``#begin document``, else CorefUD.

    Returns
    -------
    list[CorefDocument]
        Documents in file order, each with its mentions sorted by (start, end) and their head words. See the module
        docstring for nested, discontinuous and sentence-spanning mentions.

    Examples
    --------
    >>> rows = ["# newdoc id = d", "1 Ann Ann PROPN _ _ 2 nsubj _ Entity=(e1-person-1)",
    ...         "2 said say VERB _ _ 0 root _ _", "3 she she PRON _ _ 2 obj _ Entity=(e1-person-1)"]
    >>> doc = read_coref([r.replace(" ", "\\t") if r[0] != "#" else r for r in rows])[0]
    >>> doc, [(m.entity, m.start, m.head) for m in doc.mentions]
    (CorefDocument('d', 1 sentences, 2 mentions, 1 entities), [('e1', 0, 0), ('e1', 2, 2)])
    """
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"no coreference file at {str(path)!r}")
        lines = path.read_text(encoding="utf-8").splitlines()
    elif isinstance(source, str):
        lines = source.splitlines()
    else:
        lines = list(source)
    if format not in ("auto", "corefud", "conll2012"):
        raise ValueError(f"format must be 'auto', 'corefud' or 'conll2012', got {format!r}")
    if format == "auto":
        format = "conll2012" if any(line.startswith("#begin document") for line in lines) else "corefud"
    docs = list(_read_conll2012(lines) if format == "conll2012" else _read_corefud(lines))
    if not docs or not any(d.sentences for d in docs):
        raise ValueError("the coreference file has no sentences")
    return docs
