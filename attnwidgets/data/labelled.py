"""Small labelled sets shipped with the package, so the bundled model has a task metric offline.

Both were written for attnwidgets (not taken from a benchmark), in plain English, and labelled by hand:

- ``sentiment.tsv``: 200 short sentences, 100 ``pos`` and 100 ``neg``. Most negative sentences are minimal edits of a
  positive one ("The food was delicious..." / "The food was cold..."), so topic alone does not give the label away.
- ``sts_pairs.tsv``: 152 sentence pairs with a similarity judgement from 0 (unrelated) to 5 (same meaning), in the
  spirit of the STS benchmark: paraphrases (4-5), one changed role or object (2-3), same topic (1-2), unrelated (0).

Examples
--------
>>> from attnwidgets.data.labelled import load_sentiment, load_sts_pairs, train_test_split_frame
>>> df = load_sentiment()
>>> df.shape, sorted(df.label.unique())
((200, 2), ['neg', 'pos'])
>>> train, test = train_test_split_frame(df, test_size=0.25, seed=0)
>>> len(train), len(test), (test.label == "pos").sum()
(150, 50, np.int64(25))
>>> load_sts_pairs().score.between(0, 5).all()
np.True_
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

DATA_DIR = Path(__file__).resolve().parent

__all__ = ["DATA_DIR", "load_sentiment", "load_sts_pairs", "train_test_split_frame"]


def _read(name: str) -> pd.DataFrame:
    path = DATA_DIR / name
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: reinstall attnwidgets (the file ships inside the package)")
    return pd.read_csv(path, sep="\t", quoting=3, keep_default_na=False)


def load_sentiment() -> pd.DataFrame:
    """200 sentences with a ``label`` of ``"pos"`` or ``"neg"`` (columns ``text``, ``label``)."""
    return _read("sentiment.tsv")


def load_sts_pairs() -> pd.DataFrame:
    """152 sentence pairs with a similarity ``score`` 0-5 (columns ``sentence_a``, ``sentence_b``, ``score``)."""
    df = _read("sts_pairs.tsv")
    df["score"] = df["score"].astype(float)
    return df


def train_test_split_frame(df: pd.DataFrame, test_size: float = 0.3, seed: int = 0,
                           stratify: str | None = "label") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seeded split of a frame, stratified by a column when it exists (each class split in the same ratio)."""
    if not 0 < test_size < 1:
        raise ValueError(f"test_size is a share between 0 and 1, got {test_size}")
    rng = np.random.default_rng(seed)
    groups = [df.index[df[stratify] == v] for v in sorted(df[stratify].unique())] \
        if stratify is not None and stratify in df else [df.index]
    test_idx: list[int] = []
    for g in groups:
        g = rng.permutation(np.asarray(g))
        test_idx.extend(g[: round(len(g) * test_size)].tolist())
    test_mask = df.index.isin(test_idx)
    return df[~test_mask].reset_index(drop=True), df[test_mask].reset_index(drop=True)
