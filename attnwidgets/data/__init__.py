"""Text shipped with attnwidgets so every analysis runs offline.

Everything here was written by the attnwidgets team for this package (nothing is copied from other corpora):

- ``corpus.txt``: short paragraphs on mixed topics, one sentence per line, paragraphs separated by blank lines;
- ``sentences.txt``: single sentences of varied structure;
- ``ud_sample.conllu``: 45 sentences annotated by hand in Universal Dependencies (v2) style;
- ``coref_sample.conllu``: 6 short documents (29 sentences) annotated by hand with dependencies and coreference in
  CorefUD style (``Entity=`` brackets in MISC).

And one file of numbers from papers: ``paper_numbers.json``, every number the tutorials quote from a paper, cited to
its table and page (read it with :mod:`attnwidgets.data.papers`).

Examples
--------
>>> from attnwidgets.data import load_corpus, load_pairs
>>> len(load_corpus()) > 200, len(load_pairs()[0])
(True, 2)
"""

from __future__ import annotations

import csv
import zlib
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Literal

__all__ = ["coref_sample_path", "data_path", "documents", "load_corpus", "load_pairs", "load_paragraphs",
           "split_documents", "ud_sample_path"]

Kind = Literal["all", "sentences", "paragraph_sentences"]


def data_path(name: str) -> Path:
    """Path of a bundled data file (``"corpus.txt"``, ``"sentences.txt"``, ``"ud_sample.conllu"``)."""
    path = resources.files(__name__).joinpath(name)
    if not path.is_file():
        raise FileNotFoundError(f"no bundled data file {name!r}; the package ships corpus.txt, sentences.txt, "
                                "ud_sample.conllu and coref_sample.conllu")
    return Path(str(path))


def _lines(name: str) -> list[str]:
    text = data_path(name).read_text(encoding="utf-8")
    return [line.rstrip() for line in text.splitlines() if not line.startswith("#")]


def load_paragraphs() -> list[list[str]]:
    """The paragraphs of ``corpus.txt``, each a list of its sentences."""
    paragraphs: list[list[str]] = []
    current: list[str] = []
    for line in _lines("corpus.txt"):
        if line.strip():
            current.append(line.strip())
        elif current:
            paragraphs.append(current)
            current = []
    if current:
        paragraphs.append(current)
    return paragraphs


def load_corpus(kind: Kind = "all", *, paragraphs: bool = False) -> list[str]:
    """The bundled texts, in a fixed order.

    Parameters
    ----------
    kind : {"all", "sentences", "paragraph_sentences"}
        ``"sentences"``: the single sentences of ``sentences.txt``; ``"paragraph_sentences"``: the sentences of the
        paragraphs in ``corpus.txt``; ``"all"`` (default): both, paragraph sentences first.
    paragraphs : bool
        Return each paragraph of ``corpus.txt`` as one text instead of its sentences (``kind`` is then ignored).

    Examples
    --------
    >>> load_corpus(paragraphs=True)[0].startswith("The kettle clicked off")
    True
    """
    if paragraphs:
        return [" ".join(p) for p in load_paragraphs()]
    if kind not in ("all", "sentences", "paragraph_sentences"):
        raise ValueError(f"kind must be 'all', 'sentences' or 'paragraph_sentences', got {kind!r}")
    out: list[str] = []
    if kind in ("all", "paragraph_sentences"):
        out += [s for p in load_paragraphs() for s in p]
    if kind in ("all", "sentences"):
        out += [line.strip() for line in _lines("sentences.txt") if line.strip()]
    return out


def load_pairs() -> list[tuple[str, str]]:
    """Sentence pairs (A, B): every two consecutive sentences of a paragraph, for [SEP]-pair statistics.

    Examples
    --------
    >>> load_pairs()[0][1].startswith("Mara poured")
    True
    """
    return [(p[i], p[i + 1]) for p in load_paragraphs() for i in range(len(p) - 1)]


def ud_sample_path() -> Path:
    """Path of the hand-annotated CoNLL-U sample (45 sentences), for :func:`attnwidgets.analysis.read_conllu`."""
    return data_path("ud_sample.conllu")


def coref_sample_path() -> Path:
    """Path of the hand-annotated coreference sample (CorefUD CoNLL-U: 6 documents, 29 sentences, 80 mentions), for
    :func:`attnwidgets.studies.coref_scores` and :func:`attnwidgets.analysis.read_coref`.

    Examples
    --------
    >>> coref_sample_path().name
    'coref_sample.conllu'
    """
    return data_path("coref_sample.conllu")


def documents() -> list[str]:
    """Every document the package ships, once each, in a fixed order: a paragraph of ``corpus.txt``, a line of
    ``sentences.txt``, a review of ``sentiment.tsv``, a pair of ``sts_pairs.tsv`` (joined), a sentence of
    ``ud_sample.conllu``."""
    docs = [" ".join(p) for p in load_paragraphs()]
    docs += load_corpus("sentences")
    with open(data_path("sentiment.tsv"), encoding="utf-8") as f:
        docs += [row["text"].strip() for row in csv.DictReader(f, delimiter="\t")]
    with open(data_path("sts_pairs.tsv"), encoding="utf-8") as f:
        docs += [f"{row['sentence_a'].strip()} {row['sentence_b'].strip()}"
                 for row in csv.DictReader(f, delimiter="\t")]
    for line in data_path("ud_sample.conllu").read_text(encoding="utf-8").splitlines():
        if line.startswith("# text = "):
            docs.append(line[len("# text = "):].strip())
    seen: set[str] = set()
    out = []
    for d in docs:
        if d and d not in seen:
            seen.add(d)
            out.append(d)
    return out


def split_documents(docs: Sequence[str] | None = None) -> dict[str, list[str]]:
    """``{"train", "validation", "held_out"}`` of :func:`documents`, fixed before anything is trained: a document
    is held out when the CRC-32 of its UTF-8 text is 0 mod 10 (about 10 %), validation when it is 3 mod 10.

    Every model trained on the shipped text (a masked-LM head, a tiny BERT) uses this split, so their held-out
    scores are comparable.

    Examples
    --------
    >>> parts = split_documents()
    >>> sorted(parts), set(parts["held_out"]).isdisjoint(parts["train"])
    (['held_out', 'train', 'validation'], True)
    """
    parts: dict[str, list[str]] = {"train": [], "validation": [], "held_out": []}
    for d in documents() if docs is None else docs:
        r = zlib.crc32(d.encode("utf-8")) % 10
        parts["held_out" if r == 0 else "validation" if r == 3 else "train"].append(d)
    return parts
