"""Logistic-regression probes on frozen features ("BERT features + logistic regression"). numpy and sklearn only.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = np.r_[rng.normal(-1, 1, (40, 5)), rng.normal(1, 1, (40, 5))]
>>> y = np.array(["neg"] * 40 + ["pos"] * 40)
>>> probe = fit_probe(X, y)
>>> probe.accuracy(X, y) > 0.9
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

__all__ = ["Probe", "cross_validated_accuracy", "fit_probe"]


@dataclass
class Probe:
    """A fitted probe: standardise the features, then multinomial logistic regression.

    Attributes
    ----------
    classes : np.ndarray
        (C,) class labels, in the order of the probability columns.
    weight : np.ndarray
        (C', d) float64 weights acting on *raw* features (standardisation folded in); C' = 1 for two classes.
    bias : np.ndarray
        (C',) float64. ``logit = X @ weight.T + bias``.
    """

    pipeline: object
    classes: np.ndarray
    weight: np.ndarray
    bias: np.ndarray

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """(N, C) class probabilities of features X (N, d)."""
        return self.pipeline.predict_proba(np.asarray(X, dtype=np.float64))  # type: ignore[attr-defined]

    def predict(self, X: np.ndarray) -> np.ndarray:
        """(N,) predicted labels."""
        return self.classes[self.predict_proba(X).argmax(1)]

    def accuracy(self, X: np.ndarray, y: Sequence) -> float:
        """Share of ``y`` predicted right."""
        return float(np.mean(self.predict(X) == np.asarray(y)))

    def log_likelihood(self, X: np.ndarray, y: Sequence) -> float:
        """Mean log-probability of the true class (higher is better; 0 is perfect)."""
        p = self.predict_proba(X)
        idx = np.searchsorted(self.classes, np.asarray(y))
        return float(np.mean(np.log(np.clip(p[np.arange(len(idx)), idx], 1e-12, 1.0))))


def fit_probe(X: np.ndarray, y: Sequence, *, C: float = 1.0, seed: int = 0, max_iter: int = 2000) -> Probe:
    """Fit a seeded, L2-regularised logistic regression on standardised features X (N, d) with labels y (N,)."""
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(y)
    if X.ndim != 2 or len(X) != len(labels):
        raise ValueError(f"need features (N, d) and N labels, got {X.shape} and {len(labels)} labels")
    if len(np.unique(labels)) < 2:
        raise ValueError("a probe needs at least two classes in the labels")
    pipe = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=max_iter, random_state=seed))
    pipe.fit(X, labels)
    scaler, lr = pipe[0], pipe[1]
    scale = np.where(scaler.scale_ == 0, 1.0, scaler.scale_)
    weight = lr.coef_ / scale
    bias = lr.intercept_ - (lr.coef_ * scaler.mean_ / scale).sum(1)
    return Probe(pipe, lr.classes_, weight, bias)


def cross_validated_accuracy(X: np.ndarray, y: Sequence, *, folds: int = 5, C: float = 1.0, seed: int = 0) -> float:
    """Mean accuracy of the probe over stratified, seeded k folds."""
    pipe = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=2000, random_state=seed))
    cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    return float(np.mean(cross_val_score(pipe, np.asarray(X, np.float64), np.asarray(y), cv=cv)))
