"""Mixture-of-experts routing, captured from the real model: each MoE block's router (a ``gate`` beside its
``experts``, as Mixtral, Qwen2-MoE and OLMoE have them in transformers 5) hands back its logits, the gate weights and
the experts it chose; a forward hook keeps them, so the result is what the model did, not a recomputation.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ..router_result import RouterResult
from .runner import Runner, get_runner

__all__ = ["route"]


def _routers(model: torch.nn.Module) -> list[tuple[int, torch.nn.Module]]:
    """(layer, router) of each mixture-of-experts block: a module with both a ``gate`` and an ``experts`` child."""
    out = []
    for name, module in model.named_modules():
        gate, experts = getattr(module, "gate", None), getattr(module, "experts", None)
        if isinstance(gate, torch.nn.Module) and isinstance(experts, torch.nn.Module):
            numbers = re.findall(r"\.(\d+)(?:\.|$)", "." + name)
            if numbers:
                out.append((int(numbers[0]), gate))
    return out


def route(text: str, *, model: str | Runner | None = None, revision: str | None = None) -> RouterResult:
    """Run ``text`` once and keep, for every mixture-of-experts layer, each token's router logits, chosen experts
    and gate weights.

    Parameters
    ----------
    text : str
    model : str | Runner, optional
        A mixture-of-experts decoder (Mixtral, Qwen2-MoE, OLMoE): hub id, local folder or runner.

    Returns
    -------
    RouterResult

    Raises
    ------
    ValueError
        A model without mixture-of-experts layers (a dense model).

    Examples
    --------
    >>> import attnwidgets as aw
    >>> aw.runner.route("The cat sat.", model="mistralai/Mixtral-8x7B-v0.1").top_k  # doctest: +SKIP
    2
    """
    runner = get_runner(model, revision)
    routers = _routers(runner.model)
    if not routers:
        raise ValueError(f"{runner.info.name!r} ({runner.info.model_type}) has no mixture-of-experts layers (no "
                         "block with a router 'gate' and 'experts'): routing needs a MoE decoder such as Mixtral, "
                         "Qwen2-MoE or OLMoE")
    seen: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}

    def keep(layer: int) -> Callable[[torch.nn.Module, tuple[Any, ...], object], None]:
        def hook(module: torch.nn.Module, args: tuple[Any, ...], out: object) -> None:
            if not (isinstance(out, tuple) and len(out) == 3):
                raise RuntimeError(f"the router of layer {layer} ({type(module).__name__}) returned "
                                   f"{type(out).__name__}, not (logits, weights, experts) as transformers 5's "
                                   "MoE routers do")
            logits, weights, experts = out
            seen[layer] = (logits.detach(), weights.detach(), experts.detach())
        return hook

    handles = [gate.register_forward_hook(keep(layer)) for layer, gate in routers]
    try:
        enc = runner.encode([text], [None], [None])
        runner.forward(enc)
    finally:
        for handle in handles:
            handle.remove()
    tokens = list(runner.run(text).tokens)  # cached: the same input's tokens
    layers = sorted(seen)
    n = len(tokens)
    as_np = lambda x: x.float().cpu().numpy().reshape(n, -1)  # noqa: E731  (B*T, .) -> (T, .), batch of one
    return RouterResult(
        tokens=tokens, layers=layers,
        logits=np.stack([as_np(seen[i][0]) for i in layers]).astype(np.float32),
        experts=np.stack([seen[i][2].cpu().numpy().reshape(n, -1) for i in layers]).astype(np.int64),
        weights=np.stack([as_np(seen[i][1]) for i in layers]).astype(np.float32),
        model=runner.info)
