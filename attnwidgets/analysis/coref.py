"""Attention heads as coreference resolvers (Clark et al. 2019, section 4.3 "Coreference Resolution" and Table 2).

Definitions (as in the paper, with every choice it leaves open stated here):

- **Antecedent selection accuracy** of a head: the share of coreferent mentions whose *head word* attends most to
  the head word of one of that mention's antecedents. "Attends most" is the argmax of the head's word-level attention
  row of the mention's head word over the other words of the input ([CLS], [SEP] and the word itself excluded).
  Word-level attention is :mod:`attnwidgets.analysis.words`'s, as for the dependency scores: to a word, the sum over
  its pieces; from a word, the mean of its pieces' rows (``rows="first"``: the first piece's row).
- **Mentions, order, antecedents.** Mentions are ordered by (start, end) in the document (``order="inner_first"``:
  of two mentions starting at the same word, the shorter, inner one comes first); ``order="outer_first"`` orders by
  (start, -end), the longer one first. The paper does not say which; the order decides which of two mentions that
  start together is the other's candidate. The antecedents of a mention are the mentions of the same entity that come
  before it in that order *and lie in the same input segment* (see below). A mention is scored when at least one
  antecedent has a head word other than its own (a word cannot choose itself); mentions of the same entity with the
  same span are one mention. :attr:`CorefScores.mentions` gives each scored mention's span and head word both in its
  segment and in its document.
- **Input segments.** BERT reads at most a fixed number of word pieces (Clark et al. ran their coreference analysis
  on inputs of at most 128 tokens). Each document is cut into segments of consecutive *whole sentences*, as many as fit
  ``max_tokens`` pieces with the special tokens; a sentence that does not fit alone is its own segment, read whole up
  to the model's maximum length (beyond it the runner truncates with a warning; mentions whose head word was cut are
  not scored, and cut words are no one's antecedent).
  Antecedents are looked for only inside the segment the mention is in; ``window="truncate"`` keeps only each
  document's first segment (a document cut to its start, the other reading of "truncated documents").
- **Mention head word.** Where the file has a dependency annotation (CoNLL-U): the word of the mention closest to
  the root (fewest steps up its dependency heads), punctuation skipped unless the mention is all punctuation, then
  the leftmost: in a mention that is one subtree, the word whose dependency head lies outside it; when several
  words' heads do, the one of them closest to the root. (HEADs that form a cycle are refused when the file is
  read.) Without dependencies (CoNLL-2012 files, CoNLL-U with ``_`` heads): cut the mention before its first
  preposition, subordinator, wh-word, verb or punctuation after its first word (PTB ``IN TO WDT WP WP$ WRB MD VB* ,
  : -LRB-``; UD ``ADP SCONJ VERB AUX PUNCT``) and take the last noun, pronoun or number of what is left (PTB ``NN*
  PRP* CD``; UD ``NOUN PROPN PRON NUM``), else its last word; with no tags at all, the last word of the mention. So
  "the president of the company" is headed by "president" either way.
- **Baselines** (the paper's first three rows of Table 2; the same candidates, the same "correct" test — the chosen
  word is the head word of an antecedent):

  - ``nearest``: the nearest preceding mention (the last before it in the order above);
  - ``same_head``: the nearest preceding mention whose head word is the same word (case-insensitive); when there is
    none, the nearest preceding mention (``no_same_head="nearest"``, the default), or the mention counts as wrong
    (``no_same_head="wrong"``: the baseline guesses only by head word, the other reading of the paper's "most recent
    mention with the same head word");
  - ``rules``: a sieve system after Lee et al. (2011), as the paper's: the nearest preceding mention passing the
    first sieve that any passes, of (1) the same full text, (2) the same head word, (3) agreeing in number, gender
    and person (pronouns from a small English lexicon; other mentions: number from ``Number=`` or the PTB tag,
    person 3, gender from ``Gender=`` if given; an attribute unknown on either side agrees), (4) any mention.

  Candidates are the mentions before the mention in its segment whose head word is in the input and differs from the
  mention's own. Singletons (entities mentioned once in the document) are left out by default, since the paper's
  CoNLL-2012 data annotates none: its candidates are coreferent mentions only (``singletons=True`` keeps them as
  candidates, as a corpus with singletons, such as many CorefUD ones, would offer them).
- **Mention type** (Table 2's columns): pronoun (``PRON``, PTB ``PRP PRP$ WP WP$`` or an English pronoun), proper
  (``PROPN``, ``NNP NNPS``) or nominal, by the head word.

Input formats: :func:`read_coref` reads CorefUD (CoNLL-U with ``Entity=`` in MISC) and CoNLL-2012 (``#begin
document`` ... ``#end document``, coreference in the last column; the words, joined by spaces, are what the model
reads, with OntoNotes' ``-LRB-`` etc. read as brackets) files. What they do with unusual annotation:

- nested and crossing mentions are read (brackets close by entity id, the innermost open one first);
- a discontinuous mention (CorefUD ``e1[1/2]`` ... ``e1[2/2]``) is one mention over its parts: it spans from the first
  part's start to the last part's end, and its head word is found among the parts' words only;
- a mention spanning sentences is dropped (neither scored nor anyone's antecedent), with a warning giving the count;
- brackets on an empty node (CorefUD ``8.1``) open at the next word and close at the previous one; a mention of
  empty nodes only is dropped;
- singletons are read (never scored; candidates for the baselines only with ``singletons=True``); a file whose
  entities are all singletons can be read, but scoring it raises ``ValueError`` (nothing has an antecedent);
- a file with no coreference annotation at all, an unclosed bracket, a bracket closing an entity that is not open,
  any other bracket syntax, a line that is not CoNLL-U or CoNLL-2012, a HEAD past its sentence and HEADs forming a
  cycle raise :class:`ParseError` (a ``ValueError``) naming the file, the line and what to fix;
- reading is linear in the file, however deeply mentions nest (a contiguous mention's ``words`` is a ``range``).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..html_repr import repr_html
from ..result import AttentionResult
from .conllu import ParseError, Sentence
from .coref_files import CorefDocument, Mention, read_coref
from .dependency import piece_word_matrix, sentence_word_matrices
from .naming import both_names, paper_label
from .words import RowMode, WordMap, WordStack

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["BASELINES", "CorefDocument", "CorefScores", "CorefSegment", "Mention", "ParseError", "coref_segments",
           "read_coref", "score_coref"]

BASELINES = ("nearest", "same_head", "rules")
"""The baselines of Clark et al.'s Table 2 that need only the file, in its row order."""

BASELINE_LABELS = {"nearest": "nearest mention", "same_head": "same head word", "rules": "rule-based sieves"}
_SHORT = {"nearest": "nearest", "same_head": "same head", "rules": "rules"}
KINDS = ("pronoun", "proper", "nominal")

# person, number, gender of English pronouns (None: unknown)
_PRONOUNS: dict[str, tuple[int | None, str | None, str | None]] = {}
for _forms, _agreement in (
    ("i me my mine myself", (1, "sing", None)), ("we us our ours ourselves", (1, "plur", None)),
    ("you your yours yourself yourselves", (2, None, None)), ("he him his himself", (3, "sing", "masc")),
    ("she her hers herself", (3, "sing", "fem")), ("it its itself", (3, "sing", "neut")),
    ("they them their theirs themselves", (3, "plur", None)), ("this that", (3, "sing", None)),
    ("these those", (3, "plur", None)), ("who whom whose which", (None, None, None)),
):
    for _w in _forms.split():
        _PRONOUNS[_w] = _agreement


@dataclass
class CorefSegment:
    """What the model reads at once: consecutive whole sentences of one document, and their mentions.

    Attributes
    ----------
    doc_id : str
    index : int
        The segment's number within its document (0, 1, ...).
    sentence : Sentence
        The segment's sentences as one (words, text, tags), what :func:`piece_word_matrix` aligns to the pieces.
    mentions : list[Mention]
        The mentions inside the segment, word indices counted from its first word.
    feats : list[str]
    offset : int
        The document index of the segment's first word (add it to a segment index for the document's).
    """

    doc_id: str
    index: int
    sentence: Sentence
    mentions: list[Mention]
    feats: list[str] = field(default_factory=list)
    offset: int = 0

    @property
    def text(self) -> str:
        return self.sentence.text


# -- segments --------------------------------------------------------------------------------------------------------


def _join(sentences: Sequence[Sentence]) -> Sentence:
    words: list[str] = []
    heads: list[int] = []
    rels: list[str] = []
    tags: list[str] = []
    surface: list[tuple[str, tuple[int, ...]]] = []
    for s in sentences:
        off = len(words)
        words += s.words
        heads += [off + int(h) if h >= 0 else -1 for h in s.heads]
        rels += s.relations
        tags += s.upos or ["_"] * len(s.words)
        units = s.surface or [(w, (i,)) for i, w in enumerate(s.words)]
        surface += [(form, tuple(off + i for i in ids)) for form, ids in units]
    text = " ".join(s.text for s in sentences)
    return Sentence(words, np.array(heads, dtype=np.int64), rels, text, sentences[0].sent_id, tags, surface)


def coref_segments(documents: Sequence[CorefDocument], count: Callable[[str], int] | None = None,
                   max_tokens: int = 128, *, special: int = 2,
                   window: Literal["segments", "truncate", "document"] = "segments",
                   singletons: bool = False) -> list[CorefSegment]:
    """Cut documents into what the model reads: consecutive whole sentences within ``max_tokens`` pieces.

    Parameters
    ----------
    documents : sequence of CorefDocument
    count : callable, optional
        Word pieces of a text without special tokens (the tokenizer's); None counts words.
    max_tokens : int
        Pieces per input with the special tokens (128: Clark et al.'s inputs).
    special : int
        Special tokens the model adds ([CLS] and [SEP]: 2).
    window : {"segments", "truncate", "document"}
        "segments": every segment; "truncate": only each document's first; "document": the whole document as one
        input (the runner keeps long inputs lazily; a model with a maximum length truncates it).
    singletons : bool
        Keep mentions of entities mentioned once in their document (as baseline candidates; they are never scored).
        Default False, as the paper's data has none.

    Examples
    --------
    >>> rows = ["1 Ann Ann PROPN _ _ 0 root _ Entity=(e1-person-1)", "", "1 She she PRON _ _ 0 root _ Entity=(e1)"]
    >>> doc = read_coref([r.replace(" ", "\\t") for r in rows])
    >>> [len(s.mentions) for s in coref_segments(doc, max_tokens=3)], len(coref_segments(doc)[0].mentions)
    ([1, 1], 2)
    """
    if window not in ("segments", "truncate", "document"):
        raise ValueError(f"window must be 'segments', 'truncate' or 'document', got {window!r}")
    budget = max_tokens - special
    if budget < 1:
        raise ValueError(f"max_tokens={max_tokens} leaves no room for words after {special} special tokens")
    size = count if count is not None else (lambda text: len(text.split()))
    out: list[CorefSegment] = []
    for doc in documents:
        if not doc.sentences:
            continue
        groups: list[list[int]] = []
        used = 0
        for i, s in enumerate(doc.sentences):
            n = size(s.text)
            if window != "document" and groups and used + n <= budget:
                groups[-1].append(i)
                used += n
            elif window == "document" and groups:
                groups[-1].append(i)
            else:
                groups.append([i])
                used = n
        if window == "truncate":
            groups = groups[:1]
        offsets = [*doc.offsets, len(doc.feats)]
        size_of = Counter(m.entity for m in doc.mentions)
        kept = [m for m in doc.mentions if singletons or size_of[m.entity] > 1]  # sorted by start
        starts = [m.start for m in kept]
        for k, group in enumerate(groups):
            lo, hi = offsets[group[0]], offsets[group[-1] + 1]
            inside = kept[bisect.bisect_left(starts, lo):bisect.bisect_left(starts, hi)]
            mentions = [Mention(m.entity, m.start - lo, m.end - lo, m.head - lo, _shift(m.words, lo))
                        for m in inside if m.end < hi]
            out.append(CorefSegment(doc.doc_id, k, _join([doc.sentences[i] for i in group]), mentions,
                                    doc.feats[lo:hi], lo))
    return out


def _shift(words: Sequence[int], by: int) -> Sequence[int]:
    if isinstance(words, range):
        return range(words.start - by, words.stop - by)
    return tuple(w - by for w in words)


# -- scoring ---------------------------------------------------------------------------------------------------------


def _kind(word: str, tag: str) -> str:
    if tag in ("PRON", "PRP", "PRP$", "WP", "WP$") or word.lower() in _PRONOUNS:
        return "pronoun"
    if tag in ("PROPN", "NNP", "NNPS"):
        return "proper"
    return "nominal"


def _attrs(word: str, tag: str, feats: str) -> tuple[int | None, str | None, str | None]:
    lower = word.lower()
    if lower in _PRONOUNS and tag not in ("NOUN", "PROPN", "NN", "NNS", "NNP", "NNPS"):
        return _PRONOUNS[lower]
    fs = dict(f.split("=", 1) for f in feats.split("|") if "=" in f)
    number = {"Sing": "sing", "Plur": "plur"}.get(fs.get("Number", ""))
    if number is None and tag in ("NNS", "NNPS"):
        number = "plur"
    elif number is None and tag in ("NN", "NNP"):
        number = "sing"
    gender = {"Masc": "masc", "Fem": "fem", "Neut": "neut"}.get(fs.get("Gender", ""))
    return 3, number, gender


def _agree(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return all(x is None or y is None or x == y for x, y in zip(a, b))


@dataclass
class _Scored:
    """What one segment contributes."""

    index: list[int]  # scored mentions (positions in the segment's mention list)
    antecedents: list[set[int]]  # their antecedents' head words
    baselines: dict[str, list[bool]]
    info: list[dict[str, Any]]


Order = Literal["inner_first", "outer_first"]
NoSameHead = Literal["nearest", "wrong"]


def check_coref_options(order: str, no_same_head: str) -> None:
    """ValueError unless ``order`` and ``no_same_head`` are accepted values (:func:`score_coref`)."""
    if order not in ("inner_first", "outer_first"):
        raise ValueError(f"order must be 'inner_first' (by (start, end)) or 'outer_first' (by (start, -end)), got "
                         f"{order!r}")
    if no_same_head not in ("nearest", "wrong"):
        raise ValueError(f"no_same_head must be 'nearest' or 'wrong', got {no_same_head!r}")


def _score_segment_mentions(seg: CorefSegment, present: np.ndarray, order: Order = "inner_first",
                            no_same_head: NoSameHead = "nearest") -> _Scored:
    words = seg.sentence.words
    tags = seg.sentence.upos or ["_"] * len(words)
    feats = seg.feats or ["_"] * len(words)
    sign = 1 if order == "inner_first" else -1
    ranked = sorted(range(len(seg.mentions)), key=lambda i: (seg.mentions[i].start, sign * seg.mentions[i].end,
                                                             seg.mentions[i].entity))
    kept = [i for i in ranked if present[seg.mentions[i].head]]
    mentions = [seg.mentions[i] for i in kept]
    text = [" ".join(words[w] for w in m.words).lower() for m in mentions]
    heads_lower = [words[m.head].lower() for m in mentions]
    attrs = [_attrs(words[m.head], tags[m.head], feats[m.head]) for m in mentions]
    out = _Scored([], [], {b: [] for b in BASELINES}, [])
    for i, m in enumerate(mentions):
        before = [j for j in range(i) if mentions[j].head != m.head]
        ante = {mentions[j].head for j in before if mentions[j].entity == m.entity}
        if not ante:
            continue
        nearest = mentions[before[-1]].head
        same = [j for j in before if heads_lower[j] == heads_lower[i]]
        same_head = mentions[same[-1]].head if same else nearest if no_same_head == "nearest" else -1
        rule = nearest
        for hits in ([j for j in before if text[j] == text[i]], [j for j in before if heads_lower[j] == heads_lower[i]],
                     [j for j in before if _agree(attrs[j], attrs[i])]):
            if hits:
                rule = mentions[hits[-1]].head
                break
        out.index.append(kept[i])
        out.antecedents.append(ante)
        out.baselines["nearest"].append(nearest in ante)
        out.baselines["same_head"].append(same_head in ante)
        out.baselines["rules"].append(rule in ante)
        off = seg.offset
        out.info.append(dict(document=seg.doc_id, segment=seg.index, entity=m.entity,
                             mention=" ".join(words[w] for w in m.words), head_word=words[m.head], head_index=m.head,
                             start=m.start, end=m.end, doc_head_index=m.head + off, doc_start=m.start + off,
                             doc_end=m.end + off, kind=_kind(words[m.head], tags[m.head]), n_antecedents=len(ante)))
    return out


def _head_predictions(result: AttentionResult, seg: CorefSegment, rows: RowMode, queries: Sequence[int]
                      ) -> tuple[np.ndarray, np.ndarray]:
    """((L, H, q) argmax word of each query word's row, (m,) words present in the input)."""
    r, c, present = sentence_word_matrices(seg.sentence, result.tokens, result.special_mask, rows)
    q = np.asarray(list(queries), dtype=np.int64)
    n_layers, n_heads = result.n_layers, result.n_heads
    pred = np.zeros((n_layers, n_heads, q.size), dtype=np.int64)
    if not q.size:
        return pred, present
    words = WordStack(layers=(), source=result.stack("self"), word_map=WordMap(r[q], c))
    for layer in range(n_layers):
        w = np.array(words.rows(layer, 0, q.size), dtype=np.float32)  # (H, q, m)
        w[:, np.arange(q.size), q] = -np.inf  # a word may not choose itself
        w[..., ~present] = -np.inf
        pred[layer] = w.argmax(-1)
    return pred, present


@dataclass
class CorefScores:
    """Antecedent selection accuracy of every head, beside Clark et al.'s baselines (module docstring: definitions).

    Attributes
    ----------
    correct : np.ndarray
        (L, H, M) bool: head (layer, head) chose an antecedent's head word for scored mention M.
    baselines : dict[str, np.ndarray]
        Baseline name (:data:`BASELINES`) -> (M,) bool.
    mentions : list[dict]
        One per scored mention, in scoring order: document, segment, entity, mention (its words' text), head_word,
        kind, n_antecedents, and where it is -- in its segment: head_index, start, end (word indices from the
        segment's first word, end inclusive); in its document: doc_head_index, doc_start, doc_end.
    n_documents, n_segments : int
    model : str
    max_tokens : int
    order : {"inner_first", "outer_first"}
        How mentions were ordered: by (start, end) or by (start, -end) (module docstring).
    no_same_head : {"nearest", "wrong"}
        What the same-head baseline did for a mention with no earlier same-head candidate.
    """

    _repr_html_ = repr_html  # the compact table a notebook shows (html_repr.py)

    correct: np.ndarray
    baselines: dict[str, np.ndarray]
    mentions: list[dict[str, Any]]
    n_documents: int = 0
    n_segments: int = 0
    model: str = ""
    max_tokens: int = 128
    order: str = "inner_first"
    no_same_head: str = "nearest"

    @property
    def n_mentions(self) -> int:
        return int(self.correct.shape[-1])

    @property
    def accuracy(self) -> np.ndarray:
        """(L, H) antecedent selection accuracy of each head."""
        return self.correct.mean(-1)

    @property
    def kinds(self) -> np.ndarray:
        return np.array([m["kind"] for m in self.mentions], dtype=object)

    def baseline_accuracy(self) -> dict[str, float]:
        """Accuracy of each baseline, in :data:`BASELINES` order.

        "nearest": the nearest earlier mention in the segment; "same_head": the nearest earlier mention with the same
        head word (case-insensitive) -- when no earlier mention shares it, the nearest earlier mention
        (``no_same_head="nearest"``, the default) or counted wrong (``no_same_head="wrong"``; :attr:`no_same_head`
        says which these scores used); "rules": the sieves of the module docstring. Candidates are the earlier
        mentions in :attr:`order` whose head word differs from the mention's own.
        """
        return {k: float(self.baselines[k].mean()) for k in BASELINES}

    def best_heads(self, k: int = 5) -> pd.DataFrame:
        """The ``k`` best heads: layer, head (0-based), label ("layer-head", 1-based as in the paper), accuracy,
        correct, count; sorted by accuracy, then layer and head."""
        table = self.table()
        return table.sort_values(["accuracy", "layer", "head"], ascending=[False, True, True], kind="stable"
                                 ).head(k).reset_index(drop=True)

    def table(self) -> pd.DataFrame:
        """Every head: layer, head, label, accuracy, correct, count (and the accuracy on pronoun, proper and nominal
        mentions), in layer-head order."""
        import pandas as pd

        n_layers, n_heads, _ = self.correct.shape
        layer, head = np.meshgrid(np.arange(n_layers), np.arange(n_heads), indexing="ij")
        frame = pd.DataFrame({
            "layer": layer.ravel(), "head": head.ravel(),
            "label": [paper_label(int(a), int(b)) for a, b in zip(layer.ravel(), head.ravel())],
            "accuracy": self.accuracy.ravel(), "correct": self.correct.sum(-1).ravel(),
            "count": self.n_mentions,
        })
        kinds = self.kinds
        for kind in KINDS:
            sel = kinds == kind
            with np.errstate(invalid="ignore"):
                frame[kind] = (self.correct[..., sel].mean(-1) if sel.any() else np.full((n_layers, n_heads), np.nan)
                               ).ravel()
        return frame

    def summary(self) -> pd.DataFrame:
        """Clark et al.'s Table 2: the three baselines and the best head, accuracy on all mentions and by type
        (pronoun, proper, nominal), with the number of mentions in the last row."""
        import pandas as pd

        kinds = self.kinds
        best = self.best_heads(1).iloc[0]
        rows: dict[str, np.ndarray] = {BASELINE_LABELS[b]: self.baselines[b] for b in BASELINES}
        rows[f"head {best['label']}"] = self.correct[int(best["layer"]), int(best["head"])]

        def acc(x: np.ndarray, sel: np.ndarray) -> float:
            return float(x[sel].mean()) if sel.any() else float("nan")

        data = {name: {"all": acc(x, np.ones(len(x), bool)), **{k: acc(x, kinds == k) for k in KINDS}}
                for name, x in rows.items()}
        frame = pd.DataFrame(data).T
        frame.loc["mentions"] = [float(len(kinds))] + [float((kinds == k).sum()) for k in KINDS]
        return frame

    def caption(self) -> str:
        """One line: what was scored and the baselines (the grid's and the figure's title)."""
        base = ", ".join(f"{_SHORT[k]} {v:.2f}" for k, v in self.baseline_accuracy().items())
        model = f"{self.model} · " if self.model else ""
        return f"{model}{self.n_mentions} coreferent mentions · baselines: {base}"

    def __repr__(self) -> str:
        n_layers, n_heads, _ = self.correct.shape
        best = self.best_heads(1).iloc[0]
        base = ", ".join(f"{k} {v:.2f}" for k, v in self.baseline_accuracy().items())
        model = f"{self.model!r}, " if self.model else ""
        return (f"CorefScores({model}{self.n_documents} documents, {self.n_segments} segments, {self.n_mentions} "
                f"mentions, {n_layers} layers x {n_heads} heads; best head {both_names(best['layer'], best['head'])} "
                f"{best['accuracy']:.2f}; "
                f"baselines {base})")


def score_coref(results: Iterable[AttentionResult], segments: Sequence[CorefSegment], *, rows: RowMode = "mean",
                max_tokens: int = 128, order: Order = "inner_first", no_same_head: NoSameHead = "nearest"
                ) -> CorefScores:
    """Score every head's antecedent selection on segments already run (``results[i]`` is ``segments[i].text``).

    Parameters
    ----------
    results : iterable of AttentionResult
        One per segment, in order (a generator is fine).
    segments : sequence of CorefSegment
        From :func:`coref_segments`.
    rows : {"mean", "first"}
        A word's row: the mean of its pieces' rows (paper) or its first piece's (Clark et al.'s code).
    order : {"inner_first", "outer_first"}
        Mentions in (start, end) order (default: of two starting at the same word, the inner one first) or in
        (start, -end) order (the outer one first); it decides which mentions come "before" one another.
    no_same_head : {"nearest", "wrong"}
        The same-head baseline when no earlier mention shares the mention's head word: fall back to the nearest
        earlier mention (default), or count the mention wrong.

    Examples
    --------
    "Ann said she" with "Ann" and "she" one entity; a head that sends "she" to "Ann" is right, one that sends it to
    "said" is wrong:

    >>> rows = ["1 Ann Ann PROPN _ _ 2 nsubj _ Entity=(e1-person-1)", "2 said say VERB _ _ 0 root _ _",
    ...         "3 she she PRON _ _ 2 obj _ Entity=(e1-person-1)"]
    >>> segs = coref_segments(read_coref([r.replace(" ", "\\t") for r in rows]))
    >>> a = np.full((1, 2, 5, 5), 0.2, np.float32)
    >>> a[0, 0, 3], a[0, 1, 3] = [.1, .6, .1, .1, .1], [.1, .1, .6, .1, .1]   # "she": head 0 -> Ann, 1 -> said
    >>> r = AttentionResult.from_arrays(a, ["[CLS]", "ann", "said", "she", "[SEP]"],
    ...                                 special_mask=np.array([1, 0, 0, 0, 1], bool))
    >>> s = score_coref([r], segs)
    >>> s.accuracy.tolist(), s.baseline_accuracy()
    ([[1.0, 0.0]], {'nearest': 1.0, 'same_head': 1.0, 'rules': 1.0})
    """
    check_coref_options(order, no_same_head)
    correct: list[np.ndarray] = []
    baselines: dict[str, list[bool]] = {b: [] for b in BASELINES}
    info: list[dict[str, Any]] = []
    model = ""
    shape: tuple[int, int] | None = None
    n_segments = 0
    docs: set[str] = set()
    total_mentions = 0
    for result, seg in zip(results, segments):
        model = model or result.model.name
        n_segments += 1
        docs.add(seg.doc_id)
        total_mentions += len(seg.mentions)
        if shape is None:
            shape = (result.n_layers, result.n_heads)
        present = piece_word_matrix(seg.sentence, result.tokens, result.special_mask).sum(0) > 0
        scored = _score_segment_mentions(seg, present, order, no_same_head)
        if not scored.index:
            continue
        pred, _ = _head_predictions(result, seg, rows, [seg.mentions[i].head for i in scored.index])
        for k, ante in enumerate(scored.antecedents):
            correct.append(np.isin(pred[..., k], list(ante)))
        for b in BASELINES:
            baselines[b] += scored.baselines[b]
        info += scored.info
    if n_segments == 0:
        raise ValueError("no segments were scored (no results, or no segments)")
    if not correct:
        raise ValueError(f"no mention has an antecedent in its segment ({total_mentions} mentions in {n_segments} "
                         "segments): the file holds singletons only, or its coreferent mentions fall in different "
                         "segments (raise max_tokens)")
    return CorefScores(np.stack(correct, -1), {b: np.array(v, dtype=bool) for b, v in baselines.items()}, info,
                       len(docs), n_segments, model, max_tokens, order, no_same_head)
