"""Watch an induction head form: train the toy decoder on repeated random tokens and record every head's scores.

Olsson et al. 2022 saw induction heads appear in a sudden "phase change": the loss sits on a plateau, then drops in
a bump at the moment a head starts attending from each token to the token that followed its earlier occurrence. This
module reproduces that in seconds on a CPU. The data is ``<bos> r r`` with ``r`` a fresh random block for every
batch: the first copy cannot be predicted at all (loss ``log(vocab)``), the second only by copying in context.

Two choices make it an induction head and make it quick:

- the block's length varies from batch to batch (``seq_len // 2`` to ``seq_len``), so "copy the token a fixed
  distance back" (a purely positional head, which a fixed length lets layer 0 learn) does not solve the task: the
  head has to find the earlier occurrence by its content;
- the keys are *smeared* (Olsson et al.'s "smeared key" models, :class:`SmearedKeys`): each key mixes in the previous
  position's key, so a key says which token came before it. A plain 2-layer model needs a previous-token head in
  layer 0 composed with a head in layer 1 for that, and learns it only after thousands of steps; with smeared keys one
  head can do it alone, and it forms in a few hundred. ``smeared_keys=False`` trains the plain model.

Torch, like the rest of the teaching kit's models. The scores are :func:`attnwidgets.analysis.roles.role_scores`,
the same definitions :func:`attnwidgets.studies.head_roles` uses on a Hugging Face decoder.

Examples
--------
A few steps only (the default, 500 steps, forms the head: ``tests/teaching/test_teaching_induction.py`` checks it).

>>> run = train_induction(steps=20, eval_every=10, progress=False)
>>> run.eval_steps.tolist(), run.induction.shape          # evaluations x layers x heads
([0, 10, 20], (3, 2, 4))
>>> run.result().tokens[:2], run.result().attention.shape  # <bos> + 2 x 10 tokens
(['<bos>', 'J'], (2, 4, 21, 21))
"""

from __future__ import annotations

import string
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..analysis.roles import HeadRoles, RoleCheck, role_scores
from ..result import AttentionResult, ModelInfo
from .transformer import DecoderOnlyTransformer, EncoderLayer, TransformerConfig

__all__ = ["InductionRun", "induction_model", "induction_probe", "probe_scores", "random_repeats", "train_induction"]

BOS = "<bos>"


def token_names(vocab: int) -> list[str]:
    """``<bos>`` then one letter per token (A..Z, a..z), or ``t1``, ``t2``... for a larger vocabulary."""
    letters = string.ascii_uppercase + string.ascii_lowercase
    names = list(letters[:vocab]) if vocab <= len(letters) else [f"t{i}" for i in range(1, vocab + 1)]
    return [BOS, *names]


def random_repeats(batch: int, seq_len: int, vocab: int, generator: torch.Generator, *,
                   distinct: bool = True) -> torch.Tensor:
    """(batch, 1 + 2 * seq_len) ids ``<bos> r r``: ``<bos>`` is id 0, ``r`` is ``seq_len`` ids in 1..vocab.

    ``distinct``: no token twice within ``r`` (what the scores need: each token of the second copy has exactly one
    earlier occurrence); else each drawn independently (the training data: the chance repeats inside ``r`` give an
    early signal that makes the head form sooner and more reliably).

    Examples
    --------
    >>> x = random_repeats(2, 3, 8, torch.Generator().manual_seed(0))
    >>> x.shape, x[:, 0].tolist(), bool((x[:, 1:4] == x[:, 4:]).all())
    (torch.Size([2, 7]), [0, 0], True)
    """
    if distinct:
        r = torch.rand(batch, vocab, generator=generator).argsort(dim=1)[:, :seq_len] + 1
    else:
        r = torch.randint(1, vocab + 1, (batch, seq_len), generator=generator)
    return torch.cat([torch.zeros(batch, 1, dtype=torch.long), r, r], dim=1)


@dataclass(eq=False)
class InductionRun:
    """What :func:`train_induction` hands back.

    Attributes
    ----------
    model : DecoderOnlyTransformer
        The trained model (eval mode).
    seq_len, vocab : int
        Length of the repeated block and number of ordinary tokens (``<bos>`` is id 0, tokens 1..vocab).
    losses : np.ndarray
        (steps,) training loss per step (next-token cross-entropy over the whole sequence).
    eval_steps : np.ndarray
        (K,) the steps at which the probe batch was scored (0 = before training).
    eval_loss : np.ndarray
        (K,) loss on the probe batch's second copy (after its first token) at each of them: the loss induction lowers.
    induction, previous_token, duplicate_token : np.ndarray
        (K, layers, heads) scores on the probe batch at each evaluation (:func:`~attnwidgets.analysis.role_scores`).
    probe : np.ndarray
        (n_probe, 1 + 2 * seq_len) the held-out probe sequences (never trained on: the training data is drawn from a
        different random stream).
    seconds, cpu_seconds : float
        Wall-clock and process CPU time of the whole call.
    shipped : str | None
        None for a run trained here; for one loaded from the package
        (:func:`attnwidgets.teaching.shipped.shipped_run`), where it came from (the times are then that training's).
    """

    model: DecoderOnlyTransformer
    seq_len: int
    vocab: int
    losses: np.ndarray
    eval_steps: np.ndarray
    eval_loss: np.ndarray
    induction: np.ndarray
    previous_token: np.ndarray
    duplicate_token: np.ndarray
    probe: np.ndarray
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    tokens: list[str] = field(default_factory=list)
    shipped: str | None = None

    @property
    def steps(self) -> int:
        return len(self.losses)

    @property
    def max_induction(self) -> np.ndarray:
        """(K,) the highest induction score over all heads at each evaluation."""
        return self.induction.reshape(len(self.induction), -1).max(axis=1)

    def frame(self) -> Any:
        """A DataFrame, one row per evaluation: step, training loss (mean over the steps since the last
        evaluation; NaN at step 0), second-copy loss, max induction score and the head that has it."""
        import pandas as pd

        rows = []
        prev = 0
        for i, s in enumerate(self.eval_steps.tolist()):
            best = np.unravel_index(int(np.argmax(self.induction[i])), self.induction[i].shape)
            rows.append({"step": s, "loss": float(self.losses[prev:s].mean()) if s > prev else float("nan"),
                         "second_copy_loss": float(self.eval_loss[i]), "max_induction": float(self.max_induction[i]),
                         "best_head": (int(best[0]), int(best[1]))})
            prev = s
        return pd.DataFrame(rows)

    def result(self, row: int = 0) -> AttentionResult:
        """The trained model's attention on probe sequence ``row`` as an :class:`AttentionResult` (decoder)."""
        ids = self.probe[row]
        names = self.tokens
        tokens = [names[i] for i in ids.tolist()]
        with torch.no_grad():
            self.model.eval()
            logits = self.model(torch.from_numpy(ids)[None])[0]
        attention = torch.cat(self.model.attention()["self"]).numpy().astype(np.float32)  # (L, H, T, T)
        cfg = self.model.cfg
        info = ModelInfo(name="attnwidgets.teaching/induction", kind="decoder", n_layers=cfg.n_decoder_layers,
                         n_heads=cfg.n_heads, max_length=cfg.max_len, model_type="toy-transformer",
                         n_kv_heads=cfg.n_kv_heads or cfg.n_heads, head_dim=cfg.head_dim)
        special = np.array([t == BOS for t in tokens])
        return AttentionResult.from_arrays(attention, tokens, special_mask=special, token_ids=ids, kind="decoder",
                                           model=info, text=" ".join(tokens[1:]),
                                           outputs={"logits_per_position": logits.numpy().astype(np.float32)})

    def roles(self) -> HeadRoles:
        """The trained model's :class:`~attnwidgets.analysis.roles.HeadRoles` on the probe batch (what
        :class:`attnwidgets.HeadRolesView` and :func:`attnwidgets.plots.plot_head_roles` show)."""
        scores = {"previous_token": self.previous_token[-1], "duplicate_token": self.duplicate_token[-1],
                  "induction": self.induction[-1]}
        return HeadRoles(scores, self.result(), self.seq_len, 1, len(self.probe), 0, "attnwidgets.teaching/induction",
                         {"token_ids": self.probe, "induction_loss": np.array([self.eval_loss[-1]])})

    def induction_loss(self, heads: Iterable[tuple[int, int]] = ()) -> float:
        """Second-copy loss on the probe batch with ``heads`` (layer, head) ablated (their output zeroed, which is
        zeroing their attention weights)."""
        return _probe_eval(self.model, torch.from_numpy(self.probe), self.seq_len, list(heads))[0]

    def confirm_role(self, k: int = 1, n_random: int = 5, seed: int = 0) -> RoleCheck:
        """Ablate the ``k`` heads with the highest final induction score and, for comparison, ``n_random`` random sets
        of ``k`` other heads; the second-copy loss of each (as :func:`attnwidgets.studies.confirm_role` does on a
        Hugging Face decoder)."""
        roles = self.roles()
        top = roles.top("induction", k)
        n_layers, n_heads = roles.shape
        others = [(la, h) for la in range(n_layers) for h in range(n_heads) if (la, h) not in top]
        if not 1 <= len(top) <= len(others):
            raise ValueError(f"k={k} must leave at least as many other heads to compare with ({n_layers * n_heads} "
                             "heads in all)")
        rng = np.random.default_rng(seed)
        sets = [[others[i] for i in sorted(rng.choice(len(others), len(top), replace=False))] for _ in range(n_random)]
        return RoleCheck("induction", top, self.induction_loss(), self.induction_loss(top), sets,
                         np.array([self.induction_loss(s) for s in sets]))

    def __repr__(self) -> str:
        best = self.max_induction
        took = "shipped" if self.shipped else f"{self.seconds:.1f} s"
        return (f"InductionRun({self.steps} steps, {took}; max induction score {best[0]:.2f} -> "
                f"{best[-1]:.2f}, second-copy loss {self.eval_loss[0]:.2f} -> {self.eval_loss[-1]:.2f})"
                + (f"\n  {self.shipped}" if self.shipped else ""))


class SmearedKeys(nn.Module):
    """A key projection whose key at position j mixes in the key of j - 1: ``σ(a_h) k_j + (1 − σ(a_h)) k_{j−1}``, one
    learned ``a_h`` per head (Olsson et al. 2022's "smeared key" architecture). A key then says what token came
    before it, which an induction head otherwise needs a previous-token head in an earlier layer for; so a head can
    find "the token after an earlier X" on its own, and the model learns it in a few hundred steps instead of
    thousands."""

    def __init__(self, proj: nn.Linear, n_heads: int) -> None:
        super().__init__()
        self.proj = proj
        self.n_heads = n_heads
        self.alpha = nn.Parameter(torch.zeros(n_heads))  # σ(0) = 0.5: half this key, half the previous one

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k = self.proj(x)  # (B, S, nkv * hs)
        B, S, D = k.shape
        k = k.view(B, S, self.n_heads, D // self.n_heads)
        mix = torch.sigmoid(self.alpha).view(1, 1, -1, 1)
        prev = torch.cat([k[:, :1], k[:, :-1]], dim=1)  # the first position has no previous key: itself
        return (mix * k + (1 - mix) * prev).view(B, S, D)


def _smear_keys(model: DecoderOnlyTransformer) -> None:
    for block in model.blocks:
        attn = cast(EncoderLayer, block).self_attn
        attn.k_proj = SmearedKeys(cast(nn.Linear, attn.k_proj), attn.n_kv_heads)  # type: ignore[assignment]


@contextmanager
def _ablated(model: DecoderOnlyTransformer, heads: list[tuple[int, int]]) -> Iterator[None]:
    """Zero the out-projection columns of ``heads`` inside the block (a head's output, and so its weights, off)."""
    saved: list[tuple[torch.Tensor, torch.Tensor, int]] = []
    hs = model.cfg.head_dim
    for layer, head in heads:
        if not (0 <= layer < len(model.blocks) and 0 <= head < model.cfg.n_heads):
            raise ValueError(f"no head ({layer}, {head}) in a {len(model.blocks)} x {model.cfg.n_heads} model")
        block = cast(EncoderLayer, model.blocks[layer])
        w = block.self_attn.out_proj.weight
        saved.append((w, w[:, head * hs:(head + 1) * hs].clone(), head))
    try:
        with torch.no_grad():
            for w, _, head in saved:
                w[:, head * hs:(head + 1) * hs] = 0
        yield
    finally:
        with torch.no_grad():
            for w, old, head in saved:
                w[:, head * hs:(head + 1) * hs] = old


@torch.no_grad()
def _probe_eval(model: DecoderOnlyTransformer, probe: torch.Tensor, seq_len: int,
                heads: list[tuple[int, int]] | None = None) -> tuple[float, dict[str, np.ndarray]]:
    """(second-copy loss, role scores) of the model on the probe batch."""
    was_training = model.training
    model.eval()
    with _ablated(model, heads or []):
        logits = model(probe)
    start = 1 + seq_len
    loss = F.cross_entropy(logits[:, start:2 * seq_len].transpose(1, 2), probe[:, start + 1:])
    attention = torch.stack(model.attention()["self"], dim=1)  # (B, L, H, T, T)
    model.train(was_training)
    return float(loss), role_scores(attention.numpy(), seq_len, 1)


def induction_model(seq_len: int = 10, vocab: int = 16, config: dict[str, Any] | None = None, *,
                    smeared_keys: bool = True) -> DecoderOnlyTransformer:
    """A fresh (randomly initialised from torch's current seed) induction model: what :func:`train_induction`
    trains, and what a shipped run's weights are loaded into. Default: 2 layers, 4 heads, d_model 32, d_ff 32."""
    settings = dict(d_model=32, n_heads=4, n_decoder_layers=2, d_ff=32, max_len=1 + 2 * seq_len, pad_id=-1)
    settings.update(config or {})
    settings["max_len"] = max(int(settings["max_len"]), 1 + 2 * seq_len)
    model = DecoderOnlyTransformer(TransformerConfig(vocab_size=vocab + 1, **settings))  # type: ignore[arg-type]
    if smeared_keys:
        _smear_keys(model)
    return model


def induction_probe(seed: int = 0, n_probe: int = 32, seq_len: int = 10, vocab: int = 16) -> torch.Tensor:
    """The held-out probe batch of :func:`train_induction` with ``seed`` (distinct tokens, its own random stream)."""
    return random_repeats(n_probe, seq_len, vocab, torch.Generator().manual_seed(int(seed) * 2 + 2))


def probe_scores(run: InductionRun) -> tuple[float, dict[str, np.ndarray]]:
    """(second-copy loss, role scores) of ``run``'s model on its probe batch now: what the run recorded at its last
    evaluation (a check of a shipped run against its weights)."""
    return _probe_eval(run.model, torch.from_numpy(run.probe), run.seq_len)


def _check(value: Any, what: str, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ValueError(f"{what} must be an integer of at least {least}, got {value!r}")
    return int(value)


def train_induction(
    *,
    steps: int = 500,
    seq_len: int = 10,
    vocab: int = 16,
    batch_size: int = 32,
    lr: float = 3e-3,
    seed: int = 0,
    eval_every: int = 10,
    n_probe: int = 32,
    config: dict[str, Any] | None = None,
    callback: Callable[[int, float, np.ndarray], None] | None = None,
    progress: bool = True,
    threads: int | None = 1,
    smeared_keys: bool = True,
) -> InductionRun:
    """Train a 2-layer toy decoder on ``<bos> r r`` (fresh random ``r`` each time) and record the heads' scores.

    Parameters
    ----------
    steps : int
        Optimizer steps (AdamW, constant learning rate). 500 take about 10 s of one CPU core; with the defaults the
        induction head forms around step 250-350.
    seq_len : int
        Longest random block ``r`` in training (each batch draws its length from ``seq_len // 2`` .. ``seq_len``) and
        the length of the probe's blocks (distinct tokens).
    vocab : int
        Ordinary tokens (ids 1..vocab); ``<bos>`` is id 0. Must be at least ``seq_len``.
    batch_size : int
        Sequences per step.
    lr : float
        Learning rate.
    seed : int
        Seeds the weights and both data streams (training and probe): the same seed gives the same run.
    eval_every : int
        Score the heads on the probe batch every this many steps (and at 0 and at the end).
    n_probe : int
        Probe sequences the scores are averaged over.
    config : dict, optional
        Overrides for :class:`~attnwidgets.teaching.transformer.TransformerConfig` (default: 2 layers, 4 heads,
        d_model 32, d_ff 32, sinusoidal positions, pre-norm).
    callback : Callable[[int, float, np.ndarray], None], optional
        Called after each evaluation as ``callback(step, second_copy_loss, induction)`` with the (layers, heads)
        induction scores, for live plots (:class:`attnwidgets.plots.LiveInductionCurve`).
    progress : bool
        Show a ``tqdm.auto`` progress bar.
    threads : int | None
        torch CPU threads while training (restored afterwards); 1 is fastest for a model this small.
    smeared_keys : bool
        Smear every attention layer's keys (see the module docstring); False trains the plain toy decoder.

    Returns
    -------
    InductionRun
    """
    start_time, cpu_start = time.perf_counter(), time.process_time()
    steps, seq_len, vocab = _check(steps, "steps", 0), _check(seq_len, "seq_len", 2), _check(vocab, "vocab", 2)
    batch_size, eval_every, n_probe = (_check(batch_size, "batch_size"), _check(eval_every, "eval_every"),
                                       _check(n_probe, "n_probe"))
    if vocab < seq_len:
        raise ValueError(f"vocab={vocab} tokens cannot make a block of seq_len={seq_len} distinct tokens")
    shortest = max(2, seq_len // 2)
    previous_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        torch.manual_seed(seed)
        model = induction_model(seq_len, vocab, config, smeared_keys=smeared_keys)
        opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.01)
        data = torch.Generator().manual_seed(int(seed) * 2 + 1)
        probe = induction_probe(seed, n_probe, seq_len, vocab)
        losses = np.zeros(steps, np.float32)
        marks = sorted({*range(0, steps, eval_every), steps})
        records: list[tuple[float, dict[str, np.ndarray]]] = []
        bar = _bar(steps, progress)
        try:
            for step in range(steps + 1):
                if step in marks:
                    records.append(_probe_eval(model, probe, seq_len))
                    if bar is not None:
                        bar.set_postfix(loss=f"{records[-1][0]:.2f}",
                                        induction=f"{records[-1][1]['induction'].max():.2f}", refresh=False)
                    if callback is not None:
                        callback(step, records[-1][0], records[-1][1]["induction"])
                if step == steps:
                    break
                model.train()
                n = int(torch.randint(shortest, seq_len + 1, (1,), generator=data))  # the period varies by step
                x = random_repeats(batch_size, n, vocab, data, distinct=False)
                logits = model(x[:, :-1])
                loss = F.cross_entropy(logits.flatten(0, 1), x[:, 1:].flatten())
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                losses[step] = loss.item()
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()
    finally:
        torch.set_num_threads(previous_threads)
    model.eval()

    def stack(name: str) -> np.ndarray:
        return np.stack([r[name] for _, r in records]).astype(np.float64)

    return InductionRun(model, seq_len, vocab, losses, np.array(marks, np.int64),
                        np.array([loss for loss, _ in records]), stack("induction"), stack("previous_token"),
                        stack("duplicate_token"), probe.numpy(), time.perf_counter() - start_time,
                        time.process_time() - cpu_start, token_names(vocab))


def _bar(total: int, show: bool) -> Any:
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="training", unit="step")
