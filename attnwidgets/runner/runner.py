"""The cached model runner: text in, :class:`~attnwidgets.result.AttentionResult` out."""

from __future__ import annotations

import dataclasses
import os
import weakref
from collections.abc import Hashable, Iterator, Sequence
from typing import Any, Protocol

import torch

from ..attention_stack import dense_budget
from ..result import BUNDLED_SOURCE, AttentionResult, ModelInfo
from . import control
from .cache import ByteLRU, Entry, Kept
from .capture import Capture, capturing
from .checks import check_inputs, check_run_inputs, check_same_runner, dense_ablation_error
from .encoding import Encoded, Truncation
from .loading import (
    BUNDLED_NAME,
    LoadedModel,
    ModelLoadError,
    load,
    model_key,
    resolve_device,
    resolve_dtype,
)
from .partial import ReplayState, forward_ablated
from .readout import Reading

__all__ = ["AblationLike", "Encoded", "Runner", "Truncation", "get_runner", "run", "run_batch", "runner_for"]


class AblationLike(Protocol):
    """What the runner needs of an ablation: hashable, and able to make attention hooks for a model."""

    def __hash__(self) -> int: ...

    def hooks(self, info: ModelInfo) -> Sequence[control.AttentionHook]: ...


class Runner(Reading):
    """One loaded model, a result cache, and a count of forward passes.

    Get one with :func:`get_runner` (shared per model id, revision, device and dtype) rather than building it
    yourself.

    Parameters
    ----------
    loaded : LoadedModel
        From :func:`attnwidgets.runner.loading.load`.
    cache_bytes : int
        Budget of the result cache (default 1 GiB).
    device, dtype : optional
        Move the loaded model to this device, or cast its weights to this dtype (see
        :func:`~attnwidgets.runner.loading.resolve_device`); None keeps what :func:`load` gave it. Results are float32
        numpy arrays on the CPU whatever these are.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> r = aw.runner.get_runner()
    >>> res = r.run("The cat sat.")
    >>> res.attention.shape[:2]
    (6, 12)
    >>> before = r.n_forward; _ = r.run("The cat sat."); r.n_forward - before
    0
    """

    def __init__(
        self,
        loaded: LoadedModel,
        cache_bytes: int = 1 << 30,
        *,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | None = None,
    ) -> None:
        if device is not None or dtype is not None:
            to_device = loaded.device if device is None else resolve_device(device)
            to_dtype = loaded.dtype if dtype is None else resolve_dtype(dtype)
            if (to_device, to_dtype) != (loaded.device, loaded.dtype):
                loaded.model.to(device=to_device, dtype=to_dtype)
                info = dataclasses.replace(
                    loaded.info, device=str(to_device), dtype=str(to_dtype).removeprefix("torch.")
                )
                loaded = dataclasses.replace(loaded, device=to_device, dtype=to_dtype, info=info)
        self._loaded = loaded
        self.info: ModelInfo = loaded.info
        self.tokenizer = loaded.tokenizer
        self.head = loaded.head
        self.cache: ByteLRU[AttentionResult] = ByteLRU(cache_bytes)
        self.n_forward = 0
        self.replay = ReplayState()  # partial recomputation's layer modules and clean runs (runner.partial)
        self._has_sinks: bool | None = None
        _live.add(self)  # runner_for finds a model made in memory (fine-tuned) while its runner lives

    @property
    def model(self) -> torch.nn.Module:
        """The torch model. Analysis code should not need it; it is here for the runner's own modules."""
        return self._loaded.model

    @property
    def device(self) -> torch.device:
        """Where the model runs (the CPU unless asked otherwise)."""
        return self._loaded.device

    @property
    def dtype(self) -> torch.dtype:
        """What the model's weights are stored in (attention itself is computed in float32)."""
        return self._loaded.dtype

    @property
    def has_sinks(self) -> bool:
        """Whether the model's attention has learned sinks (gpt-oss), so each row's weights sum to at most 1."""
        found = self._has_sinks
        if found is None:
            found = any(isinstance(getattr(m, "sinks", None), torch.Tensor) for m in self.model.modules())
            self._has_sinks = found
        return found

    @property
    def partial_recompute(self) -> bool:
        """Whether an ablated run replays the layers below the first edited one (default True; see
        :mod:`attnwidgets.runner.partial`). Set it to False to always run the whole model."""
        return self.replay.enabled

    @partial_recompute.setter
    def partial_recompute(self, value: bool) -> None:
        self.replay.enabled = bool(value)

    def __repr__(self) -> str:
        i = self.info
        where = "" if (i.device, i.dtype) == ("cpu", "float32") else f", {i.device}, {i.dtype}"
        return (
            f"Runner({i.name!r}, {i.kind}, {i.n_layers} layers x {i.n_heads} heads{where}, "
            f"forward passes={self.n_forward})"
        )

    # -- running -------------------------------------------------------------------------------------------------

    def forward(
        self,
        enc: Encoded,
        hooks: Sequence[control.AttentionHook] = (),
        grad: bool = False,
        capture: Capture | None = None,
        stop_after: tuple[str, int] | None = None,
        keep_weights: bool = True,
        **kwargs: Any,
    ) -> Any:
        """One forward pass with attention weights (and hidden states) returned; counted in ``n_forward``.

        ``keep_weights=False`` returns neither: the attention function still builds each layer's weights (and
        ``hooks`` still see and edit them), but each layer's are freed once used, instead of all of them being held in
        the output (what activation patching's batches of many rows need, reading only logits or the last hidden
        state).

        ``enc`` stays on the CPU; its tensors (and tensor ``kwargs``, such as labels) are moved to :attr:`device` for
        the call, and the outputs stay there (callers take what they keep to the CPU).

        With a ``capture`` (:mod:`attnwidgets.runner.capture`), no attention weights are built: each layer's queries
        and keys go into the capture, its output comes from a fused kernel, and the model returns no attentions.
        ``stop_after=(stack, layer)`` (with a capture) ends the pass at the first attention module of another stack or
        of a layer above ``layer``: the layers above are not run, the capture holds what came before, and the call
        returns None.
        """
        if stop_after is not None:
            if capture is None:
                raise ValueError("stop_after ends a pass before its outputs exist: use it with a capture")
            with control.stop_after(self.model, *stop_after):
                self.forward(enc, hooks, grad, capture, **kwargs)
            return None
        self.n_forward += 1
        context = torch.enable_grad() if grad else torch.inference_mode()
        device = self.device
        inputs = {k: v.to(device) for k, v in enc.inputs.items()}
        kwargs = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
        if capture is not None:
            if hooks:
                raise ValueError("hooks edit attention weights, and capture mode builds none: run them without it")
            if self.head == "causal-lm" and inputs["input_ids"].shape[0] == 1:
                kwargs.setdefault("logits_to_keep", 1)  # the next token's logits only, not n x vocab
            with context, capturing(capture):
                return self.model(
                    **inputs,
                    output_attentions=False,
                    output_hidden_states=self.head == "causal-lm",
                    return_dict=True,
                    **kwargs,
                )
        with context, control.attention_hooks(hooks):
            return self.model(
                **inputs, output_attentions=keep_weights, output_hidden_states=keep_weights, return_dict=True, **kwargs
            )

    def dense_nbytes(self, n_source: int, n_target: int = 0) -> int:
        """Bytes a result's dense float32 attention takes for ``n_source`` (and ``n_target``) tokens."""
        i = self.info
        total = i.n_layers * i.n_heads * n_source * n_source
        if i.kind == "encoder-decoder":
            total += i.n_decoder_layers * i.n_decoder_heads * (n_target * n_target + n_target * n_source)
        return 4 * total

    def keeps_lazy(self, enc: Encoded, budget: int | None = None) -> bool:
        """Whether the batch ``enc``'s attention is kept as queries and keys: some input's dense attention would be
        bigger than :func:`~attnwidgets.attention_stack.dense_budget` (``budget``: that budget, read once by a caller
        that asks many times; default: read now)."""
        return max(self.dense_needs(enc)) > (dense_budget() if budget is None else budget)

    def dense_needs(self, enc: Encoded) -> list[int]:
        """Bytes each input of the batch ``enc`` takes as dense attention (worked out once per tokenisation)."""
        inputs = enc.inputs
        tensors = (inputs["input_ids"], inputs.get("attention_mask"), inputs.get("decoder_attention_mask"))

        def needs() -> list[int]:
            ids, mask, target = tensors
            src = mask.sum(1) if mask is not None else torch.full((ids.shape[0],), ids.shape[1])
            tgt = target.sum(1) if target is not None else torch.zeros_like(src)
            return [self.dense_nbytes(int(a), int(b)) for a, b in zip(src.tolist(), tgt.tolist(), strict=True)]

        return enc.memo("dense_needs", tensors, needs)

    def cached(self, key: Hashable, budget: int | None = None) -> AttentionResult | None:
        """The result cached under ``key`` (:meth:`cache_key`) if it is kept as the dense budget keeps it now: dense
        within :func:`~attnwidgets.attention_stack.dense_budget`, as queries and keys above it. A result kept the other
        way (the budget changed since it was run) is no hit, and the next run replaces it. Ablated results are dense
        whatever the budget (an ablation edits dense weights), so they always count. ``budget``: the dense budget,
        read once by a caller that looks up many keys (default: read now)."""
        found = self.cached_entry(key, budget)
        return None if found is None else found.value

    def cached_entry(self, key: Hashable, budget: int | None = None) -> Entry[AttentionResult] | None:
        """:meth:`cached`, with the bytes the cache counts the result as. How a result is kept is noted when it is
        put (:class:`Kept`), so a lookup asks the result nothing."""
        found = self.cache.entry(key)
        if found is None or found.value.ablation is not None:
            return found
        kept = found.note
        if not isinstance(kept, Kept):  # put by other code, without a note: ask the result
            hit = found.value
            n_target = len(hit.target_tokens) if hit.target_tokens is not None else 0
            kept = Kept(self.dense_nbytes(hit.n_tokens, n_target), hit.is_lazy)
        lazy = kept.need > (dense_budget() if budget is None else budget)
        return found if kept.lazy == lazy else None

    def run(
        self,
        text: str,
        text_pair: str | None = None,
        *,
        target: str | None = None,
        ablation: AblationLike | None = None,
        truncation: Truncation = "warn",
    ) -> AttentionResult:
        """Run one text (or sentence pair, or source + target) and return its attention; cached.

        Parameters
        ----------
        text : str
            The input (segment A; the source of an encoder-decoder).
        text_pair : str, optional
            Segment B of a sentence pair (encoders).
        target : str, optional
            Target text of an encoder-decoder (default: the source text itself).
        ablation : optional
            Heads to disable or scale; see :mod:`attnwidgets.runner.ablation`. Part of the cache key.
        truncation : {"warn", "error"}
            What to do when the text is longer than the model accepts.
        """
        check_run_inputs(text, text_pair, target)
        key = self.cache_key(text, text_pair, target, ablation, truncation)
        hit = self.cached(key)
        if hit is not None:
            if hit.truncated:  # say again what was dropped (or raise): tokenising costs little, no forward pass
                self.encode([text], [text_pair], [target], truncation)
            return hit
        return self.run_batch(
            [text], [text_pair], targets=[target], ablation=ablation, truncation=truncation, progress=False
        )[0]

    def cache_key(
        self,
        text: str,
        pair: str | None = None,
        target: str | None = None,
        ablation: Hashable | None = None,
        truncation: str = "warn",
    ) -> Hashable:
        """The key :meth:`run` caches the result of these inputs under (and partial recomputation its clean run).

        How the attention is kept (dense, or queries and keys) is not in the key: :meth:`cached` takes a result as
        a hit only when it is kept as the dense budget says now, so ``set_dense_budget`` takes effect on cached
        inputs too."""
        return (self.info.name, self.info.revision, text, pair, target, ablation, truncation)

    def run_batch(
        self,
        texts: Sequence[str],
        text_pairs: Sequence[str | None] | None = None,
        *,
        targets: Sequence[str | None] | None = None,
        ablation: AblationLike | None = None,
        batch_size: int = 16,
        truncation: Truncation = "warn",
        progress: bool = True,
    ) -> list[AttentionResult]:
        """Run many texts in padded batches (padding masked out of every result); each result is cached.

        ``progress`` shows a ``tqdm.auto`` bar once the run has lasted a second (``False``: never).
        """
        return list(
            self.iter_results(
                texts,
                text_pairs,
                targets=targets,
                ablation=ablation,
                batch_size=batch_size,
                truncation=truncation,
                progress=progress,
            )
        )

    def iter_results(
        self,
        texts: Sequence[str],
        text_pairs: Sequence[str | None] | None = None,
        *,
        targets: Sequence[str | None] | None = None,
        ablation: AblationLike | None = None,
        batch_size: int = 16,
        truncation: Truncation = "warn",
        progress: bool = True,
        cache: bool = True,
    ) -> Iterator[AttentionResult]:
        """Yield one result per text, in order, running the model ``batch_size`` texts at a time.

        With ``cache=False`` results are neither looked up nor stored (corpus statistics use this to keep memory
        bounded). ``progress`` shows a ``tqdm.auto`` bar once the run has lasted a second (``False``: never).
        """
        pairs, tgts = check_inputs(texts, text_pairs, targets, batch_size)
        n = len(texts)
        hooks = list(ablation.hooks(self.info)) if ablation is not None else []
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=n, desc=f"running {self.info.name}", unit="text", delay=1.0)
        try:
            for start in range(0, n, batch_size):
                idx = range(start, min(n, start + batch_size))
                keys = [self.cache_key(texts[i], pairs[i], tgts[i], ablation, truncation) for i in idx]
                budget = dense_budget()  # read once per batch, not once per lookup
                found = [self.cached(k, budget) if cache else None for k in keys]
                todo = [i for i, f in zip(idx, found, strict=True) if f is None]
                stale = [i for i, f in zip(idx, found, strict=True) if f is not None and f.truncated]
                if stale:  # cached but cut: say so again (or raise), as the first run did
                    self.encode(
                        [texts[i] for i in stale], [pairs[i] for i in stale], [tgts[i] for i in stale], truncation
                    )
                fresh: dict[int, AttentionResult] = {}
                if todo:
                    enc = self.encode(  # a corpus read once (cache=False) keeps no tokenisation either
                        [texts[i] for i in todo],
                        [pairs[i] for i in todo],
                        [tgts[i] for i in todo],
                        truncation,
                        keep=cache,
                    )
                    held = Capture() if self.keeps_lazy(enc, budget) else None
                    if held is not None and hooks:
                        longest = int(enc.inputs["input_ids"].shape[1])
                        raise dense_ablation_error(self.info.name, longest, self.dense_nbytes(longest))
                    if hooks:  # ablated: replay the layers below the first edited one from the clean run
                        clean = [self.cache_key(texts[i], pairs[i], tgts[i], None, truncation) for i in todo]
                        out = forward_ablated(self, enc, hooks, ablation, clean)
                    else:
                        out = self.forward(enc, hooks, capture=held)
                    needs = self.dense_needs(enc)
                    for row, i in enumerate(todo):
                        res = self.to_result(enc, out, row, ablation, capture=held)
                        fresh[i] = res
                        if cache:
                            self.cache.put(keys[i - start], res, res.nbytes, Kept(needs[row], held is not None))
                for i, f in zip(idx, found, strict=True):
                    yield f if f is not None else fresh[i]
                if bar is not None:
                    bar.update(len(idx))
        finally:
            if bar is not None:
                bar.close()


_runners: dict[tuple[str, str | None, str, str], Runner] = {}
_live: weakref.WeakSet[Runner] = weakref.WeakSet()  # every Runner of this process, shared or not


def get_runner(
    model: str | os.PathLike[str] | Runner | None = None,
    revision: str | None = None,
    *,
    device: str | torch.device | None = None,
    dtype: str | torch.dtype | None = None,
) -> Runner:
    """The shared runner for a model id or local folder (the bundled model when None); loaded once per (model,
    revision, device, dtype).

    Runners are shared by what they load, not by how it was named: ``None`` and the bundled model's folder, or a
    folder given as a relative and as an absolute path, get the same runner; so do ``device="auto"`` and the device
    it picks.

    Parameters
    ----------
    device : {"cpu", "cuda", "cuda:N", "mps", "auto"}, optional
        Where the model runs (default the CPU); "auto" takes CUDA, else MPS, else the CPU.
    dtype : {"float32", "float16", "bfloat16"} or torch.dtype, optional
        What the weights are loaded in (default float32). Attention weights are computed and recorded in float32
        either way, and results are float32 numpy arrays.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> aw.runner.get_runner(device="cpu") is aw.runner.get_runner()
    True
    """
    if isinstance(model, Runner):
        check_same_runner(model, device, dtype)
        return model
    torch_device, torch_dtype = resolve_device(device), resolve_dtype(dtype)
    key = (model_key(model), revision, str(torch_device), str(torch_dtype))
    runner = _runners.get(key)
    if runner is None:
        runner = Runner(load(None if model is None else str(model), revision, device=torch_device, dtype=torch_dtype))
        _runners[key] = runner
    return runner


def runner_for(info: ModelInfo) -> Runner:
    """The runner that made results of model ``info`` (a result's ``.model``): a runner alive in this process with
    equal info (the shared ones, and one made in memory such as a fine-tuned model's), else one loaded from
    ``info.source`` at its revision, device and dtype.

    ``info.name`` is only the model's display name and is never loaded (a file saved before results recorded their
    ``source`` is read as the bundled model when its name says so).

    Raises
    ------
    ModelLoadError
        When the model cannot be loaded again (fine-tuned in memory and its runner gone, a toy model, a result built
        from arrays) or its source fails to load, saying to pass the model or its runner.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> runner_for(aw.run("Hi.").model) is aw.runner.get_runner()
    True
    """
    for runner in list(_live):
        if runner.info == info:
            return runner
    source = info.source
    if source is None and info.name == BUNDLED_NAME:  # a file from before `source`: the name was the way back
        source = BUNDLED_SOURCE
    if source is None:
        raise ModelLoadError(
            f"this result's model {info.name!r} cannot be loaded again: it does not say where it came from (a model "
            "fine-tuned or built in memory whose runner is gone, a toy model, a result made from arrays, or a file "
            "saved by an older attnwidgets). Pass the model it came from: model= its hub id, folder or runner"
        )
    try:
        return get_runner(source, info.revision, device=info.device, dtype=info.dtype)
    except ModelLoadError as exc:
        raise ModelLoadError(
            f"this result's model {info.name!r} could not be loaded again from {source!r}: {exc}. "
            "Pass model= its hub id, folder or runner"
        ) from exc


def run(
    text: str,
    text_pair: str | None = None,
    *,
    model: str | Runner | None = None,
    revision: str | None = None,
    target: str | None = None,
    ablation: AblationLike | None = None,
    truncation: Truncation = "warn",
    device: str | torch.device | None = None,
    dtype: str | torch.dtype | None = None,
) -> AttentionResult:
    """Run ``text`` through ``model`` (the bundled all-MiniLM-L6-v2 by default) and return its attention.

    ``device`` and ``dtype`` choose the shared runner (see :func:`get_runner`); the result is float32 numpy either way.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> res = aw.run("The cat sat on the mat.")
    >>> res.tokens[:3], res.attention.shape[:2]
    (['[CLS]', 'the', 'cat'], (6, 12))
    """
    return get_runner(model, revision, device=device, dtype=dtype).run(
        text, text_pair, target=target, ablation=ablation, truncation=truncation
    )


def run_batch(
    texts: Sequence[str],
    text_pairs: Sequence[str | None] | None = None,
    *,
    model: str | Runner | None = None,
    revision: str | None = None,
    batch_size: int = 16,
    progress: bool = True,
    device: str | torch.device | None = None,
    dtype: str | torch.dtype | None = None,
    **kwargs: Any,
) -> list[AttentionResult]:
    """Run many texts in batches with the shared runner (chosen by ``model``, ``revision``, ``device`` and ``dtype``;
    see :func:`get_runner`); see :meth:`Runner.run_batch`."""
    runner = get_runner(model, revision, device=device, dtype=dtype)
    return runner.run_batch(texts, text_pairs, batch_size=batch_size, progress=progress, **kwargs)
