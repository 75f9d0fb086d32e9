"""Texts the tests share (a module of its own: ``from conftest import`` would find tests/browser/conftest.py when
pytest collects the whole tree)."""

SENTENCES = [
    "The cat sat on the mat because it was tired.",
    "A dog barked, and the children laughed.",
    "She gave him the book that he wanted.",
]
