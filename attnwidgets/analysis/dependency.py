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

The sentences come from :func:`attnwidgets.analysis.conllu.read_conllu`. What the model reads of a sentence is its
``# text`` line, so a multiword token is read whole, as written ("didn't", Spanish "del") and its syntactic words
("did" + "n't", "de" + "el") share its pieces; ``text="words"`` (``read_conllu``, ``aw.studies.dependency_scores``)
reads the syntactic words joined by spaces instead, so each word has pieces of its own. The choice moves the scores of
the relations that multiword tokens carry (``aux`` and ``advmod`` of English "didn't", ``case`` and ``det`` of Spanish
"del").

This module scores results already run (:func:`score_dependencies`); running a treebank through a model is
:func:`attnwidgets.studies.dependency.dependency_scores` (``aw.studies.dependency_scores``).

At any length: for a long input (``result.is_lazy``) each head's word-level rows are made a block at a time from the
pieces' rows (:class:`~attnwidgets.analysis.words.WordMap`) and only their argmax is kept, so no
``[layer, head, query, key]`` array, piece-level or word-level, is built.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..attention_stack import block_rows
from ..html_repr import repr_html
from ..result import AttentionResult, ModelInfo
from .conllu import Sentence
from .merging import check_same_model, check_same_settings
from .naming import both_names, paper_label
from .words import RowMode, WordMap, WordStack

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DIRECTIONS", "DependencyScores", "align_words", "piece_word_matrix", "score_dependencies",
           "sentence_word_matrices"]

DIRECTIONS = ("dependent->head", "head->dependent")
OFFSETS = (-3, -2, -1, 1, 2, 3)


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
    >>> from attnwidgets.analysis.conllu import read_conllu
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


def sentence_word_matrices(sentence: Sentence, tokens: Sequence[str], special_mask: np.ndarray | None = None,
                           rows: RowMode = "mean") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(R, C, present) of a treebank sentence read as ``tokens``: word-level attention is ``W = R @ A @ C``.

    C (n, m) is :func:`piece_word_matrix` (attention to a word: the sum over its pieces); R (m, n) makes a word's
    row the mean of its pieces' rows (``rows="mean"``, the paper) or its first piece's row (``"first"``, Clark et
    al.'s code); ``present`` (m,) marks the words that have a piece (a word truncated away has none, and an empty row).

    Examples
    --------
    >>> from attnwidgets.analysis.conllu import Sentence
    >>> s = Sentence(["He", "didn't"], np.array([1, -1]), ["nsubj", "root"], "He didn't")
    >>> r, c, present = sentence_word_matrices(s, ["he", "didn", "'", "t"], rows="mean")
    >>> (3 * r).round().astype(int).tolist(), c.sum(0).tolist(), present.tolist()   # "didn't": a third of each piece
    ([[3, 0, 0, 0], [0, 1, 1, 1]], [1.0, 3.0], [True, True])
    >>> sentence_word_matrices(s, ["he", "didn"], rows="first")[0].tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    if rows not in ("mean", "first"):
        raise ValueError(f"rows must be 'mean' or 'first', got {rows!r}")
    c = piece_word_matrix(sentence, tokens, special_mask)
    sizes = c.sum(0)  # pieces per word
    present = sizes > 0
    if rows == "mean":
        r = (c / np.maximum(sizes, 1)).T
    else:
        r = np.zeros(c.T.shape, dtype=np.float32)
        r[np.flatnonzero(present), np.argmax(c > 0, axis=0)[present]] = 1.0
    return r, c, present


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
    r, c, present = sentence_word_matrices(sentence, result.tokens, result.special_mask, rows)
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
        From :func:`~attnwidgets.analysis.conllu.read_conllu`. Each result is the model's reading of
        ``sentence.text``: the ``# text`` line, with multiword tokens whole, unless the sentences were read with
        ``text="words"`` (the syntactic words joined by spaces; module docstring).
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
