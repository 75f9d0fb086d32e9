"""From where a head looks to what it does: each head's direct push on a token's logit, and what the residual
stream predicts after each layer (the logit lens). The mechanics, the papers and what is frozen are in
:mod:`attnwidgets.runner.logits`.

Examples
--------
>>> from attnwidgets.studies import logit_attribution
>>> try:
...     logit_attribution("The cat sat.")     # the bundled model is a sentence encoder without an LM head
... except NotImplementedError as e:
...     print(str(e).split(":")[0])
'all-MiniLM-L6-v2 (bundled)' was loaded with a 'base' head and has no unembedding
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from ..html_repr import repr_html
from ..result import AttentionResult
from ..runner import Runner, get_runner
from ..runner.logits import LogitsUnavailableError, lens_logits, logit_parts
from ..runner.patching import single_token
from ..runner.runner import runner_for

__all__ = ["LogitAttribution", "LogitLens", "LogitsUnavailableError", "logit_attribution", "logit_lens"]


@dataclass(frozen=True)
class LogitAttribution:
    """Each part's direct share of one logit (or logit difference) at one position; the parts sum to
    :attr:`logit`.

    Attributes
    ----------
    heads : np.ndarray
        float64 [layer, head].
    attention_bias, mlp : np.ndarray
        float64 [layer]: the attention output projection's bias, and each MLP.
    embeddings, offset : float
        The embeddings' share, and the final norm's offset (with the unembedding's bias).
    logit : float
        The model's own logit (or difference).
    answer : tuple[str, ...]
        The token (or the two tokens) scored.
    position : int
        The position read (the logits there predict the next token).
    tokens : list[str]
    model : str
    """

    _repr_html_ = repr_html

    heads: np.ndarray
    attention_bias: np.ndarray
    mlp: np.ndarray
    embeddings: float
    offset: float
    logit: float
    answer: tuple[str, ...]
    position: int
    tokens: list[str] = field(repr=False)
    model: str = ""

    def total(self) -> float:
        """Every part added up: the logit, to float rounding."""
        return float(self.heads.sum() + self.attention_bias.sum() + self.mlp.sum() + self.embeddings + self.offset)

    def top(self, k: int = 5) -> list[tuple[int, int, float]]:
        """The ``k`` heads with the largest |share|, as (layer, head, share)."""
        order = np.argsort(-np.abs(self.heads), axis=None)[:k]
        return [(int(i // self.heads.shape[1]), int(i % self.heads.shape[1]), float(self.heads.flat[i]))
                for i in order]


@dataclass(frozen=True)
class LogitLens:
    """The top-k tokens read from the residual stream after the embeddings (row 0) and after each layer.

    Attributes
    ----------
    top_tokens : list[list[list[str]]]
        ``[layer + 1][position][k]``.
    top_probs : np.ndarray
        float32 [layer + 1, position, k]: their probabilities under that layer's read-out.
    tokens : list[str]
    model : str
    """

    _repr_html_ = repr_html

    top_tokens: list[list[list[str]]] = field(repr=False)
    top_probs: np.ndarray
    tokens: list[str]
    model: str = ""

    def at(self, position: int = -1) -> list[tuple[str, float]]:
        """Each layer's top token at ``position`` and its probability (row 0: the embeddings)."""
        return [(self.top_tokens[layer][position][0], float(self.top_probs[layer, position, 0]))
                for layer in range(len(self.top_tokens))]


def _runner_text(source: AttentionResult | str, model: str | os.PathLike[str] | Runner | None) -> tuple[Runner, str]:
    if isinstance(source, str):
        return get_runner(model), source
    if not isinstance(source, AttentionResult):
        raise TypeError(f"expected an AttentionResult or a text, got {type(source).__name__}")
    if not source.text or source.text_pair is not None:
        raise ValueError("this result has no single text to run again (a pair, or made from arrays): pass a text")
    return (runner_for(source.model) if model is None else get_runner(model)), source.text


def logit_attribution(source: AttentionResult | str, token: str | Sequence[str] | None = None, *,
                      position: int = -1, model: str | os.PathLike[str] | Runner | None = None) -> LogitAttribution:
    """Each head's (and MLP's, the embeddings', the norm offset's) direct share of a token's logit at ``position``.

    Parameters
    ----------
    source : AttentionResult or str
        A result of ``aw.run`` on a decoder, or a text run with ``model``.
    token : str or (str, str), optional
        The token scored (exactly one token; a BPE word inside a sentence usually needs its leading space), or two
        for their logit difference. Default: the model's own top prediction at ``position``.
    position : int
        Which position's next-token logits (default the last).

    Raises
    ------
    LogitsUnavailableError
        A model without an unembedding (an encoder without an LM head), a post-LN encoder, or blocks whose parts do
        not add up to the logit.
    """
    runner, text = _runner_text(source, model)
    if token is None:
        enc = runner.encode([text], truncation="error")
        if runner.head != "causal-lm":
            logit_parts(runner, text, (0,), position)  # raises the clear error for a model it cannot attribute
        out = runner.forward(enc)
        ids: tuple[int, ...] = (int(out.logits[0, position].argmax()),)
    else:
        words = (token,) if isinstance(token, str) else tuple(token)
        if len(words) not in (1, 2):
            raise ValueError(f"token must be one token or a pair, got {len(words)}: {token!r}")
        ids = tuple(single_token(runner.tokenizer, w) for w in words)
    parts = logit_parts(runner, text, ids, position)
    enc = runner.encode([text], truncation="error")
    toks = [str(t) for t in runner.tokenizer.convert_ids_to_tokens(enc.inputs["input_ids"][0].tolist())]
    pos = position % len(toks)
    answer = tuple(str(t) for t in runner.tokenizer.convert_ids_to_tokens(list(ids)))
    return LogitAttribution(heads=parts.heads, attention_bias=parts.attention_bias, mlp=parts.mlp,
                            embeddings=parts.embeddings, offset=parts.offset, logit=parts.logit, answer=answer,
                            position=pos, tokens=toks, model=runner.info.name)


def logit_lens(source: AttentionResult | str, k: int = 5, *,
               model: str | os.PathLike[str] | Runner | None = None) -> LogitLens:
    """The logit lens: the top ``k`` tokens the stream predicts after the embeddings and after each layer, at every
    position (a decoder: the next token; a masked LM: the token at that position).

    Examples
    --------
    A decoder's last layer reads exactly what the model predicts; see ``tests/studies/test_logits.py``.
    """
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    runner, text = _runner_text(source, model)
    logits, tokens = lens_logits(runner, text)
    probs = torch.softmax(logits.double(), -1)
    k = min(k, probs.shape[-1])
    top = probs.topk(k, dim=-1)
    names = runner.tokenizer.convert_ids_to_tokens
    top_tokens = [[[str(t) for t in names(row.tolist())] for row in layer] for layer in top.indices]
    return LogitLens(top_tokens=top_tokens, top_probs=top.values.float().numpy(), tokens=tokens,
                     model=runner.info.name)
