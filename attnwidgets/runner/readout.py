"""One batch row of a forward pass's output read out as a frozen, checked
:class:`~attnwidgets.result.AttentionResult`: the runner's :class:`Reading` half (``Runner.to_result``), with the
attention of every layer as numpy, padding removed (:func:`stack_row`), and what the model's head gave
(:func:`head_outputs`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import torch

from ..attention_stack import LazyStack
from ..result import AttentionResult, InvalidAttentionError, check_attention
from . import headstats
from .capture import Capture
from .checks import attention_error, check_captured, check_layer_shapes, check_weights_returned, lazy_sample
from .encoding import Encoded, Tokenising

__all__ = ["Reading", "head_outputs", "stack_row"]


class Reading(Tokenising):
    """The half of :class:`~attnwidgets.runner.runner.Runner` that turns a forward pass's rows into results (a mixin
    over :class:`~attnwidgets.runner.encoding.Tokenising`: it needs these attributes)."""

    head: str

    @property
    def device(self) -> torch.device:
        raise NotImplementedError

    @property
    def has_sinks(self) -> bool:
        raise NotImplementedError

    def to_result(
        self, enc: Encoded, out: Any, row: int, ablation: Any, capture: Capture | None = None
    ) -> AttentionResult:
        """Row ``row`` of a forward pass's output (:meth:`forward` of ``enc``) as a frozen, checked result.

        Padding is removed; the attention is checked to be one (head, query, key) map per layer whose rows sum to 1
        (not with an ``ablation``, which may zero or scale heads on purpose); the outputs the model's head gives are
        added (embeddings, logits, masked-token logits). With the ``capture`` of a capture-mode forward, the result's
        attention is a :class:`~attnwidgets.attention_stack.LazyStack` of queries and keys.
        """
        src = self.token_fields(enc, row)
        valid = src.pop("valid")
        kind = self.info.kind
        if capture is not None:
            return self._lazy_result(enc, out, row, capture, src, valid)
        self_att = check_weights_returned(
            self.info.name, getattr(out, "encoder_attentions" if kind == "encoder-decoder" else "attentions", None)
        )
        rows = ablation is None  # an ablation may zero or scale heads on purpose
        attention = self._attention(
            self_att,
            row,
            valid,
            valid,
            "self-attention" if kind != "encoder-decoder" else "encoder self-attention",
            rows,
        )
        fields: dict[str, Any] = {}
        if kind == "encoder-decoder":
            tgt = self.token_fields(enc, row, side="target")
            tvalid = tgt["valid"]
            fields.update(
                target_text=enc.targets[row],
                target_tokens=tgt["tokens"],
                target_token_ids=tgt["token_ids"],
                decoder_attention=self._attention(
                    out.decoder_attentions, row, tvalid, tvalid, "decoder self-attention", rows
                ),
                cross_attention=self._attention(out.cross_attentions, row, tvalid, valid, "cross-attention", rows),
            )
        return AttentionResult(
            attention=attention,
            model=self.info,
            text=enc.texts[row],
            text_pair=enc.pairs[row],
            outputs=head_outputs(out, row, valid, self.head, enc.inputs["input_ids"], self.tokenizer),
            ablation=ablation,
            truncated=enc.truncated[row] if enc.truncated else 0,
            **src,
            **fields,
        ).freeze()  # cached and shared by every later run of this input: nobody may write into it

    def _lazy_result(
        self, enc: Encoded, out: Any, row: int, capture: Capture, src: dict[str, Any], valid: torch.Tensor
    ) -> AttentionResult:
        """A capture-mode run's result: each stack as queries and keys, padding removed, a sample of rows checked."""
        kind = self.info.kind
        sidx = torch.nonzero(valid).flatten().numpy()
        first = "encoder" if kind == "encoder-decoder" else "self"
        attention = check_captured(self.info.name, capture.stack(first, row, sidx, sidx))
        self._check_lazy(attention, "self-attention" if kind != "encoder-decoder" else "encoder self-attention")
        # every head's statistics sums and overview, made on the model's device by one pass when a statistic or a
        # view first asks (so a run costs its forward), then kept
        attention.defer_summary(
            functools.partial(
                headstats.summarise,
                causal=kind == "decoder",
                special_rows=np.flatnonzero(src["special_mask"]),
                device=self.device,
            )
        )
        fields: dict[str, Any] = {}
        if kind == "encoder-decoder":
            tgt = self.token_fields(enc, row, side="target")
            tidx = torch.nonzero(tgt["valid"]).flatten().numpy()
            decoder = check_captured(
                self.info.name, capture.stack("decoder", row, tidx, tidx), "decoder self-attention"
            )
            cross = check_captured(self.info.name, capture.stack("cross", row, tidx, sidx), "cross-attention")
            self._check_lazy(decoder, "decoder self-attention")
            self._check_lazy(cross, "cross-attention")
            fields.update(
                target_text=enc.targets[row],
                target_tokens=tgt["tokens"],
                target_token_ids=tgt["token_ids"],
                decoder_attention=decoder,
                cross_attention=cross,
            )
        return AttentionResult(
            attention=cast(np.ndarray, attention),  # a LazyStack: result.attention builds or refuses the array
            model=self.info,
            text=enc.texts[row],
            text_pair=enc.pairs[row],
            outputs=head_outputs(out, row, valid, self.head, enc.inputs["input_ids"], self.tokenizer),
            truncated=enc.truncated[row] if enc.truncated else 0,
            **src,
            **fields,
        ).freeze()

    def check_lazy(self, stack: LazyStack, what: str, sample: int = 16) -> None:
        """:meth:`check_attention` on a captured stack's first and last rows (what capture-mode runs and
        :func:`attnwidgets.runner.generation.generate` check)."""
        self._check_lazy(stack, what, sample)

    def _check_lazy(self, stack: LazyStack, what: str, sample: int = 16) -> None:
        """:meth:`check_attention` on the first and last ``sample`` rows of every layer (rebuilt from queries and keys,
        :func:`~.checks.lazy_sample`): NaN in the model or weights that are not probabilities show there as they would
        anywhere."""
        self.check_attention(lazy_sample(stack, sample), what)

    def _attention(
        self,
        layers: Sequence[torch.Tensor],
        row: int,
        qvalid: torch.Tensor,
        kvalid: torch.Tensor,
        what: str,
        rows: bool = True,
    ) -> np.ndarray:
        """One row's [layer, head, query, key] array, checked to be attention we can show.

        Every layer must be (batch, head, query, key) over the batch's positions (:func:`~.checks.check_layer_shapes`),
        and its weights probabilities (:meth:`check_attention`; ``rows=False``, for ablations, lets rows sum to less
        than 1); otherwise :class:`AttentionUnavailableError` says so.
        """
        check_layer_shapes(self.info.name, what, [tuple(a.shape) for a in layers], qvalid.shape[0], kvalid.shape[0])
        a = stack_row(layers, row, qvalid, kvalid)
        dtype = layers[0].dtype
        tol = max(1e-3, torch.finfo(dtype).eps) if dtype.is_floating_point else 1e-3  # bfloat16: 8e-3
        self.check_attention(a, what, ablated=not rows, tol=tol)
        return a

    def check_attention(
        self,
        attention: np.ndarray,
        what: str,
        *,
        ablated: bool = False,
        tol: float = 1e-3,
        query_mask: np.ndarray | None = None,
    ) -> None:
        """:func:`attnwidgets.result.check_attention` on this model's ``attention`` (..., L, H, q, k), raising
        :class:`AttentionUnavailableError` with what to do next: a model with NaN or inf weights needs its
        checkpoint checked, one whose attention is not softmax weights a supported architecture.
        """
        try:
            check_attention(
                attention,
                f"{self.info.name!r} returned {what}",
                sinks=self.has_sinks,
                ablated=ablated,
                tol=tol,
                query_mask=query_mask,
            )
        except InvalidAttentionError as exc:
            raise attention_error(exc) from None


def stack_row(layers: Sequence[torch.Tensor], row: int, qvalid: torch.Tensor, kvalid: torch.Tensor) -> np.ndarray:
    """Per-layer (B, H, T, S) tensors -> one [layer, head, query, key] float32 array for one row, padding removed.

    Each layer is copied once, straight into the output: ``torch.stack`` and a contiguous copy after it cost two to
    three times as much, and this is on the path of every run (a 512-token result of 6 x 12 heads is 75 MB).
    """
    first = layers[0][row]
    kvalid = kvalid[: first.shape[-1]]
    nq, nk = int(qvalid.sum()), int(kvalid.sum())
    prefix = bool(qvalid[:nq].all()) and bool(kvalid[:nk].all())  # right padding: slice views, no index copies
    out = np.empty((len(layers), first.shape[0], nq, nk), dtype=np.float32)  # (L, H, T, S)
    for i, layer in enumerate(layers):
        a = layer[row].detach()
        a = a[:, :nq, :nk] if prefix else a[:, qvalid][:, :, kvalid]
        out[i] = a.float().cpu().numpy()
    return out


def head_outputs(
    out: Any, row: int, valid: torch.Tensor, head: str, input_ids: torch.Tensor, tokenizer: Any
) -> dict[str, np.ndarray]:
    """What the model's ``head`` gave for batch row ``row`` of a forward pass's output ``out``, padding removed
    (``valid``: the row's (T,) bool mask; ``input_ids`` (B, T): the batch, where [MASK] positions are found): mean
    and [CLS] embeddings, the pooler's output, a classifier's logits and probabilities, the masked-LM logits at each
    [MASK], a causal LM's next-token logits."""
    outputs: dict[str, np.ndarray] = {}
    hidden = getattr(out, "encoder_last_hidden_state", None)
    if hidden is None:
        hidden = getattr(out, "last_hidden_state", None)
    if hidden is None and getattr(out, "hidden_states", None):
        hidden = out.hidden_states[-1]
    if hidden is not None:
        h = hidden[row].detach().float().cpu()[valid]
        outputs["embedding"] = h.mean(0).numpy().astype(np.float32)
        outputs["cls_embedding"] = h[0].numpy().astype(np.float32)
    pooled = getattr(out, "pooler_output", None)
    if pooled is not None:
        outputs["pooler_output"] = pooled[row].detach().float().cpu().numpy()
    logits = getattr(out, "logits", None)
    if logits is not None:
        logits = logits[row].detach().float().cpu()
        if head == "classification":
            outputs["logits"] = logits.numpy()
            outputs["probs"] = torch.softmax(logits, -1).numpy()
        elif head == "masked-lm":
            ids = input_ids[row][valid]
            positions = torch.nonzero(ids == tokenizer.mask_token_id).flatten()
            outputs["mask_positions"] = positions.numpy().astype(np.int64)
            outputs["mask_logits"] = logits[valid][positions].numpy()
        elif head == "causal-lm":
            kept = logits[valid] if logits.shape[0] == valid.shape[0] else logits  # logits_to_keep=1: the last
            outputs["next_token_logits"] = kept[-1].numpy()
    return outputs
