"""Length extrapolation: train the toy decoder on short inputs with four position schemes, test it on longer ones.

The task needs position: **copy** a string of ``n`` digits, ``<bos> x₁ … xₙ <sep> x₁ … xₙ``: after ``<sep>`` the
model writes the string again, so at every step it has to find *where* in the source the next digit sits. Digits
repeat (ten of them, drawn with replacement), so what comes next cannot be looked up by content alone: the model
must count. The same toy decoder (:class:`~attnwidgets.teaching.transformer.DecoderOnlyTransformer`, same sizes,
same seed, same batches) is trained with each of

- ``"sinusoidal"``: fixed sin/cos vectors added to the embeddings (Vaswani et al. 2017), defined for any position;
- ``"learned"``: a learned table added to the embeddings (BERT, GPT-2), with as many rows as the longest training
  input: past it there is no row, so the model cannot read a longer input at all (its accuracy there is NaN, and
  :meth:`ExtrapolationRun.limit` says where it stops);
- ``"rope"``: queries and keys rotated by their positions (Su et al. 2021);
- ``"alibi"``: a penalty ``−slope · distance`` on the attention logits (Press et al. 2022), no position vectors;

on strings of ``1 … train_max`` symbols, then tested on strings of every length in ``test_lengths``, teacher-forced
(the right prefix fed, so a mistake does not snowball): the share of copied symbols it gets right, per length. The
rotation angles and ALiBi's slopes are those of :mod:`attnwidgets.viewdata.positional`, what the positional explorer
draws.

Training takes minutes, so the package ships the run (``shipped_run("extrapolation")``; ``train=True`` trains it
here); :func:`train_extrapolation` is what the shipped copy was made with.

Examples
--------
>>> run = train_extrapolation(steps=2, train_max=4, test_lengths=(2, 4, 6), n_eval=4, progress=False)
>>> run.accuracy.shape, bool(np.isnan(run.accuracy[1, 2]))     # learned: no row for a 6-symbol copy
((4, 3), True)
>>> run.limit("learned"), run.limit("rope")
(4, None)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import torch
import torch.nn.functional as F

from .transformer import DecoderOnlyTransformer, TransformerConfig

__all__ = ["SCHEMES", "SIZES", "ExtrapolationRun", "copy_accuracy", "copy_batch", "extrapolation_model",
           "train_extrapolation"]

#: The four position schemes, in the order they are drawn.
SCHEMES = ("sinusoidal", "learned", "rope", "alibi")

#: The toy's sizes for this task (2 layers of 4 heads, width 48): small enough that four of them ship in a file of
#: about 200 KB, large enough to learn the copy within the lengths it is trained on.
SIZES: dict[str, Any] = {"d_model": 48, "n_heads": 4, "n_decoder_layers": 2, "d_ff": 64}

PAD, BOS, SEP = 0, 1, 2
#: Ids of the special tokens; the symbols are ids 3 …
N_SPECIAL = 3


def copy_batch(rng: np.random.Generator, batch: int, lengths: int | tuple[int, int], n_symbols: int
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of copy examples: ``(inputs, labels)``, (B, 2·n_max + 1) int64 each, padded with ``<pad>`` (0).

    ``lengths`` is one length ``n`` or a range ``(lo, hi)`` drawn per example; each string is ``n`` symbols drawn
    with replacement (ids 3 … 3 + n_symbols − 1). ``inputs`` is ``<bos> x <sep> x`` without its last symbol,
    ``labels`` the next token where it is a copied symbol and −100 (ignored) elsewhere.

    >>> x, y = copy_batch(np.random.default_rng(0), 1, 3, n_symbols=10)
    >>> x.shape, (y >= 0).sum().item(), bool((y[0, 4:] == x[0, 1:4]).all())   # <sep> predicts x₁, ...; x₃ is last
    (torch.Size([1, 7]), 3, True)
    """
    lo, hi = (lengths, lengths) if isinstance(lengths, int) else lengths
    if not 1 <= lo <= hi:
        raise ValueError(f"copy lengths must be at least 1, got {lengths!r}")
    ns = rng.integers(lo, hi + 1, batch)
    width = 2 * int(ns.max()) + 1
    seq = np.full((batch, width + 1), PAD, np.int64)
    lab = np.full((batch, width + 1), -100, np.int64)
    for b, n in enumerate(ns.tolist()):
        x = rng.integers(0, n_symbols, n) + N_SPECIAL
        seq[b, : 2 * n + 2] = [BOS, *x, SEP, *x]
        lab[b, n + 1: 2 * n + 1] = x  # the token after position n+1+j is x_j: predicted at <sep> and each copy
    return torch.from_numpy(seq[:, :-1]), torch.from_numpy(lab[:, :-1])


def extrapolation_model(scheme: str, *, n_symbols: int, train_max: int, test_max: int,
                        config: dict[str, Any] | None = None) -> DecoderOnlyTransformer:
    """A fresh toy decoder for the copy task with position scheme ``scheme`` (weights from torch's current seed).

    The learned table has ``2 · train_max + 1`` rows, the longest training input, and no more; the sinusoidal table
    is computed for ``2 · max(train_max, test_max) + 1`` positions (a formula, not trained: it exists for any
    length)."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(SCHEMES)}, got {scheme!r}")
    longest = 2 * (train_max if scheme == "learned" else max(train_max, test_max)) + 1
    cfg = TransformerConfig(vocab_size=n_symbols + N_SPECIAL, pad_id=PAD, max_len=longest,
                            positional=cast(Any, scheme), **{**SIZES, **(config or {})})
    return DecoderOnlyTransformer(cfg)


@torch.no_grad()
def copy_accuracy(model: DecoderOnlyTransformer, n: int, *, n_symbols: int, n_eval: int = 64, seed: int = 1
                  ) -> float:
    """Teacher-forced accuracy of ``model`` copying ``n_eval`` strings of ``n`` symbols (a fixed sample for a seed):
    the share of copied symbols predicted right with the right prefix fed. NaN when the input (2n + 1 tokens) is
    longer than the model's learned position table: it cannot be run at all."""
    table = model.embed.pos
    if model.cfg.positional == "learned" and table is not None and 2 * n + 1 > table.size(0):
        return float("nan")
    model.eval()
    x, y = copy_batch(np.random.default_rng([seed, n]), n_eval, n, n_symbols)
    pred = model(x).argmax(-1)
    scored = y != -100
    return float((pred[scored] == y[scored]).float().mean())


@dataclass(eq=False)
class ExtrapolationRun:
    """What :func:`train_extrapolation` hands back.

    Attributes
    ----------
    models : dict[str, DecoderOnlyTransformer]
        Scheme → its trained model (eval mode).
    train_max : int
        Longest copied string in training (training drew 1 … train_max symbols).
    test_lengths : np.ndarray
        (L,) int, the lengths tested.
    accuracy : np.ndarray
        (4, L) float, per scheme (:data:`SCHEMES` order) and length; NaN where the model cannot run.
    losses : np.ndarray
        (4, steps) float32, training loss per step.
    settings : dict
        The call's arguments (seed, steps, sizes, ...).
    seconds, cpu_seconds : float
        Wall-clock and CPU time of the training (the shipped copy's, when loaded).
    shipped : str | None
        Where a loaded run came from (None when trained here).
    """

    models: dict[str, DecoderOnlyTransformer]
    train_max: int
    test_lengths: np.ndarray
    accuracy: np.ndarray
    losses: np.ndarray
    settings: dict[str, Any]
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    shipped: str | None = None
    schemes: tuple[str, ...] = field(default=SCHEMES)

    @property
    def steps(self) -> int:
        return int(self.losses.shape[1])

    def limit(self, scheme: str) -> int | None:
        """The longest string the scheme's model can read at all (learned: its table), None when there is no limit."""
        model = self.models[scheme]
        if model.cfg.positional != "learned":
            return None
        return (model.cfg.max_len - 1) // 2

    def table(self) -> Any:
        """A pandas DataFrame: accuracy per test length (rows) and scheme (columns); NaN = cannot run."""
        import pandas as pd

        return pd.DataFrame(self.accuracy.T, index=pd.Index(self.test_lengths, name="symbols copied"),
                            columns=list(self.schemes))

    def holds_up_to(self, threshold: float = 0.9) -> dict[str, int | None]:
        """Per scheme, the longest tested length up to which every tested length reaches ``threshold`` (None: not even
        the shortest)."""
        out: dict[str, int | None] = {}
        for k, scheme in enumerate(self.schemes):
            ok = np.nan_to_num(self.accuracy[k], nan=-1.0) >= threshold
            bad = np.flatnonzero(~ok)
            last = len(ok) if bad.size == 0 else int(bad[0])
            out[scheme] = int(self.test_lengths[last - 1]) if last > 0 else None
        return out

    def evaluate(self, n_eval: int | None = None) -> np.ndarray:
        """Measure the accuracy table again on the models as they are now ((4, L), the stored run's evaluation
        sample)."""
        n_eval = int(self.settings["n_eval"] if n_eval is None else n_eval)
        return np.array([[copy_accuracy(self.models[s], int(n), n_symbols=int(self.settings["n_symbols"]),
                                        n_eval=n_eval, seed=int(self.settings["seed"]) + 1)
                          for n in self.test_lengths] for s in self.schemes])

    def __repr__(self) -> str:
        held = ", ".join(f"{s} {'-' if v is None else v}" for s, v in self.holds_up_to().items())
        return (f"ExtrapolationRun(copy, trained on 1..{self.train_max} symbols, tested on "
                f"{int(self.test_lengths.min())}..{int(self.test_lengths.max())}; accuracy >= 0.9 up to: {held})"
                + (f"\n  {self.shipped}" if self.shipped else "")
                + ("" if self.shipped else f"\n  trained here in {self.seconds:.0f} s"))


def train_extrapolation(
    *,
    steps: int = 2500,
    train_max: int = 8,
    test_lengths: Sequence[int] = (4, 8, 12, 16, 24, 32),
    n_symbols: int = 10,
    batch_size: int = 32,
    lr: float = 2e-3,
    warmup: int = 100,
    seed: int = 0,
    n_eval: int = 64,
    config: dict[str, Any] | None = None,
    schemes: Sequence[str] = SCHEMES,
    callback: Callable[[str, int, float], None] | None = None,
    threads: int | None = 1,
    progress: bool = True,
) -> ExtrapolationRun:
    """Train one toy decoder per position scheme on copying 1 … ``train_max`` digits, then measure each on
    every length in ``test_lengths``.

    Every scheme starts from the same seed and sees the same batches (the data stream is seeded apart from the
    weights), so the schemes differ in position only. AdamW, ``warmup`` linear steps to ``lr``, cosine decay to 10 %,
    gradients clipped at 1.

    Parameters
    ----------
    steps : int
        Optimizer steps per scheme.
    train_max : int
        Longest string in training; the learned table has room for exactly this much.
    test_lengths : Sequence[int]
        Lengths to test.
    n_symbols : int
        Size of the alphabet (10: the digits).
    batch_size, lr, warmup, seed : as above.
    n_eval : int
        Strings per tested length.
    config : dict, optional
        Overrides of the toy's sizes (:data:`SIZES`: ``d_model``, ``n_heads``, ``n_decoder_layers``, ``d_ff``).
    schemes : Sequence[str]
        Which of :data:`SCHEMES` to train (all four by default).
    callback : Callable[[str, int, float], None], optional
        Called as ``callback(scheme, step, loss)`` after every step.
    threads : int | None
        torch CPU threads while training, restored afterwards.
    progress : bool
        A ``tqdm.auto`` bar over all schemes' steps.
    """
    start, cpu_start = time.perf_counter(), time.process_time()
    schemes = tuple(schemes)
    if not schemes or any(s not in SCHEMES for s in schemes):
        raise ValueError(f"schemes must be some of {', '.join(SCHEMES)}, got {schemes!r}")
    lengths = np.array(sorted({int(n) for n in test_lengths}), np.int64)
    if lengths.size == 0 or lengths[0] < 1 or train_max < 1:
        raise ValueError(f"train_max and test_lengths must be at least 1, got train_max={train_max}, "
                         f"test_lengths={lengths.tolist()}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    settings = dict(steps=steps, train_max=train_max, test_lengths=lengths.tolist(), n_symbols=n_symbols,
                    batch_size=batch_size, lr=lr, warmup=warmup, seed=seed, n_eval=n_eval, config=dict(config or {}))
    bar: Any = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps * len(schemes), desc="training 4 position schemes", unit="step", delay=2.0)

    def lr_at(step: int) -> float:  # linear warm-up, then cosine to 10 %
        if step < warmup:
            return lr * (step + 1) / warmup
        t = (step - warmup) / max(steps - warmup, 1)
        return lr * (0.1 + 0.9 * 0.5 * (1 + float(np.cos(np.pi * t))))

    models: dict[str, DecoderOnlyTransformer] = {}
    losses = np.zeros((len(schemes), steps), np.float32)
    previous = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        for k, scheme in enumerate(schemes):
            torch.manual_seed(seed)
            model = extrapolation_model(scheme, n_symbols=n_symbols, train_max=train_max, test_max=int(lengths[-1]),
                                        config=config)
            rng = np.random.default_rng([seed, 0])  # the same batches for every scheme
            opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.01)
            model.train()
            for step in range(steps):
                for group in opt.param_groups:
                    group["lr"] = lr_at(step)
                x, y = copy_batch(rng, batch_size, (1, train_max), n_symbols)
                loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten(), ignore_index=-100)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                losses[k, step] = loss.item()
                if callback is not None:
                    callback(scheme, step + 1, float(losses[k, step]))
                if bar is not None:
                    bar.update(1)
            model.eval()
            models[scheme] = model
    finally:
        if bar is not None:
            bar.close()
        torch.set_num_threads(previous)
    run = ExtrapolationRun(models, train_max, lengths, np.zeros((len(schemes), lengths.size)), losses, settings,
                           schemes=schemes)
    run.accuracy = run.evaluate()
    run.seconds = time.perf_counter() - start
    run.cpu_seconds = time.process_time() - cpu_start
    return run
