"""Head roles of a decoder on repeated random tokens (Olsson et al. 2022), and an ablation that confirms a role.

:func:`head_roles` runs the model on ``[BOS] r r`` (``r``: random tokens, no special ones) and scores every head as a
previous-token, duplicate-token and induction head (definitions: :mod:`attnwidgets.analysis.roles`).
:func:`confirm_role` ablates the best heads of a role and compares the *induction loss* (the loss on the second copy,
which only in-context copying can bring down) with ablating as many random heads.

Decoders only (GPT-2, Llama, Mistral, ... any causal LM the runner loads): an encoder sees the whole sequence, so
"attend to the token after the earlier occurrence" is not what it has to do to predict anything, and an
encoder-decoder splits the sequence over two stacks; both are refused with a message saying so.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import torch
import torch.nn.functional as F

from ..analysis.roles import ROLES, HeadRoles, RoleCheck, role_scores
from ..result import AttentionResult
from ..runner import Encoded, Runner, get_runner
from ..runner.ablation import Ablation
from ..runner.encoding import token_texts

__all__ = ["confirm_role", "head_roles", "induction_loss", "repeated_tokens"]


def _decoder_runner(model: Any, what: str) -> Runner:
    runner = get_runner(model)
    kind = runner.info.kind
    if kind != "decoder":
        raise ValueError(
            f"{what} needs a decoder (causal language model such as GPT-2 or Llama); {runner.info.name!r} is an "
            f"{kind}. Induction and previous-token heads are defined for causal attention, where a token can only "
            "look back; pass model='gpt2' or a local decoder folder")
    return runner


def _count(value: Any, what: str, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ValueError(f"{what} must be an integer of at least {least}, got {value!r}")
    return int(value)


def repeated_tokens(model: Any = None, *, seq_len: int = 20, n_seqs: int = 8, seed: int = 0) -> tuple[np.ndarray, int]:
    """Token ids of ``n_seqs`` sequences ``[BOS] r r`` for a decoder: (ids (n_seqs, prefix + 2 * seq_len), prefix).

    ``r`` is ``seq_len`` distinct tokens drawn at random from the vocabulary, special tokens (BOS, EOS, PAD, UNK and
    added tokens) left out; distinct, so each token of the second copy has exactly one earlier occurrence. The BOS
    comes first when the tokenizer has one (``prefix`` = 1), else nothing (``prefix`` = 0).
    """
    runner = _decoder_runner(model, "repeated_tokens")
    seq_len, n_seqs = _count(seq_len, "seq_len"), _count(n_seqs, "n_seqs")
    tok = runner.tokenizer
    embeddings = cast(Any, runner.model).get_input_embeddings()
    vocab = min(len(tok), int(getattr(embeddings, "num_embeddings", len(tok))))
    special = set(tok.all_special_ids) | set(getattr(tok, "added_tokens_decoder", {}) or {})
    eligible = np.array([i for i in range(vocab) if i not in special], dtype=np.int64)
    if seq_len > len(eligible):
        raise ValueError(f"seq_len={seq_len} distinct tokens do not fit the {len(eligible)} non-special tokens of "
                         f"{runner.info.name!r}")
    bos = tok.bos_token_id
    prefix = 0 if bos is None else 1
    length = prefix + 2 * seq_len
    if runner.info.max_length and length > runner.info.max_length:
        raise ValueError(f"{'a BOS and ' if prefix else ''}two copies of seq_len={seq_len} tokens are {length} "
                         f"positions; {runner.info.name!r} takes at most {runner.info.max_length}")
    rng = np.random.default_rng(seed)
    r = np.stack([rng.choice(eligible, seq_len, replace=False) for _ in range(n_seqs)])
    head = np.full((n_seqs, prefix), -1 if bos is None else bos, dtype=np.int64)
    return np.concatenate([head, r, r], axis=1), prefix


def _forward(runner: Runner, ids: np.ndarray, ablation: Ablation | None, batch_size: int):
    """Yield (attention (B, L, H, T, T) float32, logits (B, T, V) float32) per batch."""
    hooks = ablation.hooks(runner.info) if ablation else []
    for start in range(0, len(ids), batch_size):
        t = torch.from_numpy(ids[start:start + batch_size])
        rows = len(t)
        enc = Encoded({"input_ids": t, "attention_mask": torch.ones_like(t)}, [""] * rows, [None] * rows, [None] * rows)
        out = runner.forward(enc, hooks)
        attention = torch.stack([a.float() for a in out.attentions], dim=1).cpu().numpy()
        logits = out.logits.float().cpu() if getattr(out, "logits", None) is not None else None
        yield attention, logits


def _second_copy_loss(logits: torch.Tensor, ids: torch.Tensor, seq_len: int, prefix: int) -> np.ndarray:
    """(B,) mean cross-entropy of predicting the second copy's tokens after its first (positions p+n+1 .. p+2n-1)."""
    start = prefix + seq_len  # the first token of the second copy; the queries that predict the rest start here
    pred = logits[:, start:prefix + 2 * seq_len - 1]  # (B, n-1, V)
    target = ids[:, start + 1:prefix + 2 * seq_len]  # (B, n-1)
    return F.cross_entropy(pred.transpose(1, 2), target, reduction="none").mean(-1).numpy().astype(np.float64)


def head_roles(
    model: Any = None,
    *,
    seq_len: int = 20,
    n_seqs: int = 8,
    seed: int = 0,
    batch_size: int = 8,
    ablation: Ablation | None = None,
) -> HeadRoles:
    """Previous-token, duplicate-token and induction score of every head of a decoder, on repeated random tokens.

    The model reads ``n_seqs`` sequences ``[BOS] r r`` (:func:`repeated_tokens`: ``seq_len`` distinct random
    non-special tokens, twice; no BOS when the tokenizer has none). With ``n = seq_len`` and ``p`` = 1 (BOS) or 0,
    averaged over the sequences:

    - previous-token score = mean of ``A[i, i-1]`` over all positions ``i >= 1``;
    - duplicate-token score = mean of ``A[i, i-n]`` over the second copy ``i = p+n .. p+2n-1``;
    - induction score = mean of ``A[i, i-n+1]`` over the second copy ``i = p+n .. p+2n-1``

    (:func:`attnwidgets.analysis.roles.role_scores`). Each is a share of attention: 1.0 is a head that does exactly
    that. Olsson et al. call heads with a high induction score (and that raise the in-context copying) induction heads.

    Parameters
    ----------
    model : str, path or Runner
        A decoder (causal LM). The default (None, the bundled BERT encoder) and other encoders or encoder-decoders
        are refused with a ValueError.
    seq_len : int
        Length of the repeated random block.
    n_seqs : int
        Sequences averaged.
    seed : int
        Seeds the random tokens: the same seed gives the same sequences and scores.
    batch_size : int
        Sequences per forward pass.
    ablation : Ablation, optional
        Score the heads with these edits applied (e.g. to see what disabling a layer does to the heads above it).

    Returns
    -------
    HeadRoles
        ``scores`` per role (layers, heads), the first sequence's attention as ``example`` (what
        :class:`attnwidgets.HeadRolesView` opens on a click) and ``extra["induction_loss"]`` (n_seqs,): the
        loss of predicting the second copy's tokens after its first.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> aw.studies.head_roles()                                    # the bundled model is an encoder
    Traceback (most recent call last):
    ...
    ValueError: head_roles needs a decoder (causal language model such as GPT-2 or Llama); ...
    """
    runner = _decoder_runner(model, "head_roles")
    batch_size = _count(batch_size, "batch_size")
    ids, prefix = repeated_tokens(runner, seq_len=seq_len, n_seqs=n_seqs, seed=seed)
    totals: dict[str, np.ndarray] = {}
    losses: list[np.ndarray] = []
    first: np.ndarray | None = None
    for start, (attention, logits) in zip(range(0, len(ids), batch_size), _forward(runner, ids, ablation, batch_size)):
        if first is None:
            first = attention[0]
        for name, v in role_scores(attention, seq_len, prefix).items():
            totals[name] = totals.get(name, 0.0) + v * len(attention)
        if logits is not None:
            losses.append(_second_copy_loss(logits, torch.from_numpy(ids[start:start + len(attention)]), seq_len,
                                            prefix))
    assert first is not None
    scores = {name: totals[name] / len(ids) for name in ROLES}
    row = ids[0]
    special = np.zeros(len(row), dtype=bool)
    special[:prefix] = True
    tokens = token_texts(runner.tokenizer, row.tolist(), special.tolist())
    example = AttentionResult.from_arrays(
        first, tokens, special_mask=special, token_ids=row, kind="decoder", model=runner.info,
        text=f"[BOS] + 2 x {seq_len} random tokens" if prefix else f"2 x {seq_len} random tokens", ablation=ablation,
    )
    extra: dict[str, Any] = {"token_ids": ids}
    if losses:
        extra["induction_loss"] = np.concatenate(losses)
    return HeadRoles(scores, example, seq_len, prefix, len(ids), int(seed), runner.info.name, extra)


def induction_loss(model: Any = None, *, heads: Any = (), mode: str | float = "zero", seq_len: int = 20,
                   n_seqs: int = 8, seed: int = 0, batch_size: int = 8) -> float:
    """Mean loss of predicting the second copy of ``[BOS] r r`` after its first token, with ``heads`` ablated.

    ``heads``: an iterable of (layer, head) (or an :class:`~attnwidgets.runner.Ablation`); ``mode`` as in
    :meth:`Ablation.heads` ("zero", "uniform" or a scale). A model that copies in context scores far below the
    ``log(vocabulary)`` of guessing.
    """
    runner = _decoder_runner(model, "induction_loss")
    if runner.head != "causal-lm":
        raise ValueError(f"{runner.info.name!r} was loaded without a language-model head, so it has no loss to "
                         "measure; load a causal LM checkpoint (e.g. GPT2LMHeadModel, LlamaForCausalLM)")
    ablation = heads if isinstance(heads, Ablation) else Ablation.heads(list(heads), mode) if heads else None
    ids, prefix = repeated_tokens(runner, seq_len=seq_len, n_seqs=n_seqs, seed=seed)
    losses = [_second_copy_loss(logits, torch.from_numpy(ids[s:s + batch_size]), seq_len, prefix)
              for s, (_, logits) in zip(range(0, len(ids), batch_size), _forward(runner, ids, ablation, batch_size))]
    return float(np.concatenate(losses).mean())


def confirm_role(
    model: Any = None,
    roles: HeadRoles | None = None,
    *,
    role: str = "induction",
    k: int = 2,
    n_random: int = 5,
    mode: str | float = "zero",
    seq_len: int = 20,
    n_seqs: int = 8,
    seed: int = 0,
) -> RoleCheck:
    """Ablate the ``k`` best heads of ``role`` and compare the induction loss with ablating ``k`` random heads.

    If the heads really copy in context, the loss on the second copy rises far more when they are ablated than when
    as many other heads are. ``roles`` is a :func:`head_roles` result of the same model (computed with the same
    ``seq_len``/``n_seqs``/``seed`` when not given); the random sets are drawn (seeded) from the heads not in the top
    ``k``. The loss is measured on fresh sequences (``seed + 1``), not the ones the heads were picked on.

    Examples
    --------
    >>> confirm_role(None)
    Traceback (most recent call last):
    ...
    ValueError: confirm_role needs a decoder (causal language model such as GPT-2 or Llama); ...
    """
    runner = _decoder_runner(model, "confirm_role")
    if roles is None:
        roles = head_roles(runner, seq_len=seq_len, n_seqs=n_seqs, seed=seed)
    if roles.model != runner.info.name:
        raise ValueError(f"these roles were measured on {roles.model!r}, not {runner.info.name!r}")
    n_layers, n_heads = roles.shape
    k = _count(k, "k")
    if k >= n_layers * n_heads:
        raise ValueError(f"k={k} leaves no other heads to compare with: the model has {n_layers * n_heads}")
    top = roles.top(role, k)
    kw = dict(mode=mode, seq_len=seq_len, n_seqs=n_seqs, seed=seed + 1)
    clean = induction_loss(runner, **kw)  # type: ignore[arg-type]
    ablated = induction_loss(runner, heads=top, **kw)  # type: ignore[arg-type]
    others = [(la, h) for la in range(n_layers) for h in range(n_heads) if (la, h) not in top]
    rng = np.random.default_rng(seed)
    random_sets = [[others[i] for i in sorted(rng.choice(len(others), k, replace=False))]
                   for _ in range(_count(n_random, "n_random", 0))]
    random = np.array([induction_loss(runner, heads=s, **kw) for s in random_sets])  # type: ignore[arg-type]
    return RoleCheck(role, top, clean, ablated, random_sets, random)
