"""The bundled corpus, pairs and treebank load offline, through importlib.resources."""

from __future__ import annotations

from attnwidgets.data import load_corpus, load_pairs, load_paragraphs, ud_sample_path


def test_corpus_and_pairs():
    sentences = load_corpus()
    assert len(sentences) >= 250
    assert len(set(sentences)) > 0.95 * len(sentences)
    assert all(s.strip() == s and s for s in sentences)
    assert not any(s.startswith("#") for s in sentences)
    paragraphs = load_paragraphs()
    assert len(load_corpus(paragraphs=True)) == len(paragraphs) >= 40
    pairs = load_pairs()
    assert len(pairs) == sum(len(p) - 1 for p in paragraphs)
    first = paragraphs[0]
    assert pairs[0] == (first[0], first[1])
    assert len(load_corpus("sentences")) + len(load_corpus("paragraph_sentences")) == len(sentences)


def test_treebank_path():
    path = ud_sample_path()
    assert path.suffix == ".conllu" and path.is_file()
