"""Train the toy Transformer on a synthetic task in seconds, and get its attention out as an ``AttentionResult``.

Torch, like :mod:`~attnwidgets.teaching.transformer` (the teaching kit is the one deliberate exception to "only the
runner imports torch"). What leaves this module is numpy: :func:`attention_result` returns the same
:class:`~attnwidgets.result.AttentionResult` the runner does, so every widget and analysis works on the toy model.

Examples
--------
Two steps and a small held-out set keep this example fast; it shows the shapes, not a trained model (the default,
300 steps, reaches at least 98 % held-out exact match: ``tests/teaching/test_teaching_training.py`` checks it).

>>> run = train("reverse", steps=2, n_held_out=20, checkpoints=[0, 2])
>>> run.steps, sorted(run.checkpoints)
(2, [0, 2])
>>> r = run.result("3 1 4 1 5", target="5 1 4 1 3")  # teacher-forced, so the shapes do not depend on training
>>> r.cross_attention.shape  # [layer, head, target (<bos> + 5), source (5 + <eos>)]
(2, 4, 6, 6)
>>> r.tokens, r.special_mask.tolist()
(['3', '1', '4', '1', '5', '<eos>'], [False, False, False, False, False, True])
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F

from ..generation_result import GenerationResult
from ..result import AttentionResult, ModelInfo
from .tasks import BOS, EOS, SEP, SPECIALS, Task, encode_batch, get_task, held_out_sources, sample_pairs
from .transformer import DecoderOnlyTransformer, EncoderDecoderTransformer, TransformerConfig

__all__ = ["TrainingRun", "attention_result", "checkpoint_attention", "evaluate", "generate_toy", "predict",
           "toy_model", "toy_result", "train"]

Architecture = Literal["encoder-decoder", "decoder"]
ToyModel = EncoderDecoderTransformer | DecoderOnlyTransformer


@dataclass(eq=False)
class TrainingRun:
    """What :func:`train` hands back.

    Attributes
    ----------
    model : EncoderDecoderTransformer | DecoderOnlyTransformer
        The trained model (in eval mode).
    task : Task
        The task it learned.
    steps : int
        Optimizer steps taken.
    losses : np.ndarray
        (steps,) float32 training loss per step.
    accuracy : float
        Exact-match accuracy of greedy decoding on the held-out sources (never seen in training).
    seconds : float
        Wall-clock time of the whole call, checkpoints included.
    cpu_seconds : float
        CPU time of this process over the call: what the training itself cost, whatever else the machine was doing.
    grad_norms : np.ndarray
        (steps,) float32 global gradient norm per step, measured before clipping (a spike is what clipping hides).
    held_out : list[tuple[str, ...]]
        The held-out sources.
    probe : list[str]
        The source whose attention is recorded at each checkpoint.
    checkpoints : dict[int, AttentionResult]
        Step → attention on ``probe`` with the correct target teacher-forced (so every checkpoint has the same
        tokens and shapes; step 0 is the untrained model).
    checkpoint_accuracy : dict[int, float]
        Step → held-out accuracy at that checkpoint.
    shipped : str | None
        None for a run trained here; for a run loaded from the package
        (:func:`attnwidgets.teaching.shipped.shipped_run`), where it came from and how long it took to make
        (``seconds`` and ``cpu_seconds`` are then that training's, not this session's).
    """

    model: ToyModel
    task: Task
    steps: int
    losses: np.ndarray
    accuracy: float
    seconds: float
    held_out: list[tuple[str, ...]]
    probe: list[str]
    checkpoints: dict[int, AttentionResult] = field(default_factory=dict)
    checkpoint_accuracy: dict[int, float] = field(default_factory=dict)
    cpu_seconds: float = 0.0
    grad_norms: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    shipped: str | None = None

    @property
    def architecture(self) -> Architecture:
        return "decoder" if isinstance(self.model, DecoderOnlyTransformer) else "encoder-decoder"

    def result(self, source: str | Sequence[str], target: str | Sequence[str] | None = None) -> AttentionResult:
        """Attention of the trained model on ``source`` (see :func:`attention_result`)."""
        return attention_result(self.model, self.task, source, target)

    def generate(self, source: str | Sequence[str], max_new_tokens: int | None = None,
                 top_k: int = 5) -> GenerationResult:
        """:func:`generate_toy` with this run's model and task."""
        return generate_toy(self.model, self.task, source, max_new_tokens, top_k=top_k)

    def predict(self, source: str | Sequence[str]) -> list[str]:
        """The model's greedy output for ``source``."""
        return predict(self.model, self.task, [self.task.parse(source)])[0]

    def __repr__(self) -> str:
        return (
            f"TrainingRun({self.task.name!r}, {self.architecture}, {self.steps} steps, "
            f"accuracy={self.accuracy:.3f}, {'shipped' if self.shipped else f'{self.seconds:.1f} s'}, "
            f"checkpoints={sorted(self.checkpoints)})"
            + (f"\n  {self.shipped}" if self.shipped else "")
        )


def _decoder_only_batch(task: Task, pairs: Sequence[tuple[Sequence[str], Sequence[str]]]):
    """``<bos> source <sep> target <eos>`` as (inputs, labels), (B, L) each; loss only on target and ``<eos>``."""
    v = task.vocab
    rows = [[v.bos_id, *v.encode(s), v.sep_id, *v.encode(t), v.eos_id] for s, t in pairs]
    width = max(map(len, rows))
    seq = np.full((len(rows), width), v.pad_id, dtype=np.int64)
    labels = np.full((len(rows), width), -100, dtype=np.int64)  # -100: ignored by cross_entropy
    for b, (row, (s, _)) in enumerate(zip(rows, pairs)):
        seq[b, : len(row)] = row
        start = len(s) + 2  # first target token
        labels[b, start : len(row)] = row[start:]
    return torch.from_numpy(seq[:, :-1]), torch.from_numpy(labels[:, 1:])


def _loss(model: ToyModel, task: Task, pairs) -> torch.Tensor:
    if isinstance(model, DecoderOnlyTransformer):
        idx, labels = _decoder_only_batch(task, pairs)
        logits = model(idx)  # (B, L, V)
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)
    src, tgt_in, tgt_out = (torch.from_numpy(a) for a in encode_batch(task.vocab, pairs))
    logits = model(src, tgt_in)  # (B, T, V)
    return F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=task.vocab.pad_id)


@torch.no_grad()
def predict(model: ToyModel, task: Task, sources: Sequence[Sequence[str]]) -> list[list[str]]:
    """Greedy outputs for many sources (batched; the decoder-only model is batched by source length)."""
    model.eval()
    v = task.vocab
    limit = task.max_target_len + 1
    if isinstance(model, EncoderDecoderTransformer):
        src, _, _ = encode_batch(v, [(s, []) for s in sources])
        out = model.generate(torch.from_numpy(src), limit, v.bos_id, v.eos_id)
        return [v.decode(row[1:]) for row in out.numpy()]
    results: list[list[str]] = [[] for _ in sources]
    by_len: dict[int, list[int]] = {}
    for i, s in enumerate(sources):
        by_len.setdefault(len(s), []).append(i)
    for n, idxs in by_len.items():  # equal lengths: no padding inside the prompt
        prompt = torch.tensor([[v.bos_id, *v.encode(sources[i]), v.sep_id] for i in idxs])
        out = model.generate(prompt, limit, v.eos_id)
        for i, row in zip(idxs, out.numpy()):
            results[i] = v.decode(row[n + 2 :])
    return results


def evaluate(model: ToyModel, task: Task, sources: Sequence[Sequence[str]]) -> float:
    """Exact-match accuracy of greedy decoding on ``sources`` (share of outputs equal to the correct target)."""
    outputs = predict(model, task, sources)
    return float(np.mean([out == task.target(s) for out, s in zip(outputs, sources)]))


@torch.no_grad()
def attention_result(
    model: ToyModel, task: Task | str, source: str | Sequence[str], target: str | Sequence[str] | None = None
) -> AttentionResult:
    """Run the toy model on one source and return its attention as an :class:`AttentionResult` (numpy).

    Parameters
    ----------
    model : EncoderDecoderTransformer | DecoderOnlyTransformer
    task : Task | str
        The task (for its vocabulary).
    source : str | Sequence[str]
        ``"3 1 4"``, ``"314"`` or ``["3", "1", "4"]``.
    target : str | Sequence[str], optional
        Teacher-force this target; default: the model's own greedy output.

    Returns
    -------
    AttentionResult
        Encoder-decoder: ``tokens`` = source + ``<eos>`` (n), ``attention`` encoder self (L, H, n, n);
        ``target_tokens`` = ``<bos>`` + target (m), ``decoder_attention`` (Ld, H, m, m) causal,
        ``cross_attention`` (Ld, H, m, n); ``outputs["decoder_logits"]`` (m, V). Decoder-only: ``tokens`` =
        ``<bos>`` source ``<sep>`` target, ``attention`` causal (L, H, n, n), ``outputs["logits_per_position"]``
        (n, V). ``ModelInfo.kind`` says which. ``special_mask`` marks the task's special symbols (``<eos>``,
        ``<bos>``, ``<sep>``, ``<pad>``) among ``tokens``, and their ``word_ids`` are -1, as for [CLS]/[SEP] in a real
        model, so statistics and views that leave special tokens out treat them the same way.
    """
    task = get_task(task)
    v = task.vocab
    src = task.parse(source)
    if target is None:
        tgt = predict(model, task, [src])[0]
    else:
        tgt = target.split() if isinstance(target, str) else list(target)
        if len(tgt) == 1 and tgt[0] not in v.index:  # "413" written without spaces
            tgt = list(tgt[0])
    model.eval()
    if isinstance(model, DecoderOnlyTransformer):
        ids = torch.from_numpy(v.encode([BOS, *src, SEP, *tgt]))[None]  # (1, n)
        logits = model(ids)[0]  # (n, V)
        arrays = {"self": _stack(model.attention()["self"]), "logits": logits.numpy().astype(np.float32)}
    else:
        src_ids = torch.from_numpy(v.encode([*src, EOS]))[None]  # (1, n)
        tgt_ids = torch.from_numpy(v.encode([BOS, *tgt]))[None]  # (1, m)
        logits = model(src_ids, tgt_ids)[0]  # (m, V)
        att = model.attention()
        arrays = {"encoder": _stack(att["encoder"]), "decoder": _stack(att["decoder"]), "cross": _stack(att["cross"]),
                  "logits": logits.numpy().astype(np.float32)}
    return toy_result(task, model.cfg, isinstance(model, DecoderOnlyTransformer), src, tgt, arrays)


def _stack(weights: list[torch.Tensor]) -> np.ndarray:  # L x (1, nh, T, S) -> (L, nh, T, S)
    return torch.cat(weights).numpy().astype(np.float32)


def at_step(result: AttentionResult, step: int) -> AttentionResult:
    """A training checkpoint's result: ``result`` with its step among the outputs and in the model's name, so the
    title of every view and figure of it says which step it shows (two maps of one run otherwise read the same)."""
    import dataclasses

    model = dataclasses.replace(result.model, name=f"{result.model.name.split(' · step ')[0]} · step {step}")
    return result.replace(model=model, outputs={**result.outputs, "step": np.array(step)})


def toy_result(task: Task, cfg: TransformerConfig, decoder_only: bool, source: Sequence[str], target: Sequence[str],
               arrays: dict[str, np.ndarray], outputs: dict[str, Any] | None = None) -> AttentionResult:
    """The :class:`AttentionResult` of the toy model on ``source`` / ``target`` (token lists) from its arrays:
    ``"self"`` (decoder-only) or ``"encoder"``, ``"decoder"``, ``"cross"`` attention, and ``"logits"``; ``outputs``
    adds more outputs. What :func:`attention_result` returns, and what a shipped run's checkpoints are rebuilt with
    (:mod:`attnwidgets.teaching.shipped`), so both read the same."""
    v = task.vocab
    src, tgt = list(source), list(target)
    common: dict[str, Any] = dict(
        name=f"attnwidgets.teaching/{task.name}", max_length=cfg.max_len, model_type="toy-transformer",
        n_kv_heads=cfg.n_kv_heads or cfg.n_heads, head_dim=cfg.head_dim,
    )

    def special(tokens: list[str]) -> np.ndarray:  # (n,) bool: the task's <pad>, <bos>, <eos>, <sep>
        return np.array([t in SPECIALS for t in tokens], dtype=bool)

    if decoder_only:
        tokens = [BOS, *src, SEP, *tgt]
        info = ModelInfo(kind="decoder", n_layers=cfg.n_decoder_layers, n_heads=cfg.n_heads, **common)
        return AttentionResult.from_arrays(
            arrays["self"], tokens, special_mask=special(tokens), token_ids=v.encode(tokens),
            model=info, text=" ".join(src), target_text=" ".join(tgt),
            outputs={"logits_per_position": arrays["logits"], **(outputs or {})},
        )

    src_tokens, tgt_tokens = [*src, EOS], [BOS, *tgt]
    info = ModelInfo(kind="encoder-decoder", n_layers=cfg.n_encoder_layers, n_heads=cfg.n_heads,
                     n_decoder_layers=cfg.n_decoder_layers, n_decoder_heads=cfg.n_heads, **common)
    return AttentionResult.from_arrays(
        arrays["encoder"], src_tokens, special_mask=special(src_tokens), token_ids=v.encode(src_tokens),
        model=info, text=" ".join(src), target_text=" ".join(tgt), target_tokens=tgt_tokens,
        target_token_ids=v.encode(tgt_tokens), decoder_attention=arrays["decoder"],
        cross_attention=arrays["cross"], outputs={"decoder_logits": arrays["logits"], **(outputs or {})},
    )


@torch.no_grad()
def generate_toy(model: ToyModel, task: Task | str, source: str | Sequence[str], max_new_tokens: int | None = None,
                 *, top_k: int = 5) -> GenerationResult:
    """Let the toy model write its answer to ``source`` greedily and record, per step, its attention and top-k tokens.

    The same :class:`~attnwidgets.generation_result.GenerationResult` as :func:`attnwidgets.generate`. The toy model
    has no key/value cache: each step reruns the whole (causal) sequence, so one forward over the fed positions
    gives every step's row exactly (dense: the toy is small).

    Parameters
    ----------
    model : EncoderDecoderTransformer | DecoderOnlyTransformer
    task : Task | str
    source : str | Sequence[str]
        ``"3 1 4"`` or ``"314"``. The decoder-only prompt is ``<bos> source <sep>``; the encoder-decoder reads
        ``source <eos>`` and its decoder starts from ``<bos>``.
    max_new_tokens : int, optional
        Default: the task's longest target + 1 (for ``<eos>``).
    top_k : int

    Examples
    --------
    >>> run = train("reverse", steps=2, n_held_out=5, architecture="decoder")
    >>> g = generate_toy(run.model, run.task, "3 1 4", max_new_tokens=4)
    >>> g.prompt_tokens, g.n_steps, g.steps_matrix(0).shape
    (['<bos>', '3', '1', '4', '<sep>'], 4, (4, 8))
    """
    task = get_task(task)
    v = task.vocab
    src = task.parse(source)
    limit = task.max_target_len + 1 if max_new_tokens is None else max_new_tokens
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"max_new_tokens must be a positive integer, got {type(limit).__name__} {limit!r}")
    if limit < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {limit}")
    model.eval()
    decoder_only = isinstance(model, DecoderOnlyTransformer)
    prompt_tokens = [BOS, *src, SEP] if decoder_only else [*src, EOS]
    room = model.cfg.max_len - (len(prompt_tokens) if decoder_only else 1)
    if limit > room:
        raise ValueError(f"max_new_tokens={limit} does not fit the toy model's {model.cfg.max_len} positions "
                         f"(at most {room} here)")
    prompt_ids = torch.from_numpy(v.encode(prompt_tokens))[None]
    if isinstance(model, DecoderOnlyTransformer):
        out = model.generate(prompt_ids, limit, v.eos_id)[0, len(prompt_tokens):]
    else:
        out = model.generate(prompt_ids, limit, v.bos_id, v.eos_id)[0, 1:]
    ids = out.tolist()
    if v.eos_id in ids:
        ids = ids[: ids.index(v.eos_id) + 1]
    generated = [v.tokens[i] for i in ids]
    res = attention_result(model, task, src, target=generated[:-1])
    logits = torch.from_numpy(np.array(res.outputs["logits_per_position" if decoder_only else "decoder_logits"]))
    first = len(prompt_tokens) - 1 if decoder_only else 0
    probs = torch.softmax(logits[first:first + len(ids)].float(), -1)
    k = min(top_k, probs.shape[-1])
    top = torch.topk(probs, k, dim=-1)
    topk_ids = top.indices.numpy().astype(np.int64)
    return GenerationResult(
        result=res, prompt=" ".join(src), prompt_tokens=prompt_tokens, prompt_ids=v.encode(prompt_tokens),
        generated_tokens=generated, generated_ids=np.array(ids, np.int64), topk_ids=topk_ids,
        topk_probs=top.values.numpy().astype(np.float32),
        topk_tokens=[[v.tokens[i] for i in row] for row in topk_ids.tolist()],
        text=" ".join(v.decode(ids)), settings={"max_new_tokens": limit, "do_sample": False, "top_k": top_k},
    )


def toy_model(task: Task, architecture: Architecture = "encoder-decoder",
              config: dict[str, Any] | None = None) -> ToyModel:
    """A fresh (randomly initialised from torch's current seed) toy model for ``task``: what :func:`train` starts
    from, and what a shipped run's weights are loaded into."""
    cfg = TransformerConfig(vocab_size=len(task.vocab), pad_id=task.vocab.pad_id, **(config or {}))
    return (EncoderDecoderTransformer if architecture == "encoder-decoder" else DecoderOnlyTransformer)(cfg)


def _adamw(model: ToyModel, lr: float) -> torch.optim.Optimizer:
    """AdamW, fused where torch has it for CPU (≥ 2.4): a tiny model spends much of a step in the optimizer."""
    kw: dict[str, Any] = dict(lr=lr, betas=(0.9, 0.98), weight_decay=0.01)
    try:
        return torch.optim.AdamW(model.parameters(), fused=True, **kw)
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.AdamW(model.parameters(), **kw)


@contextmanager
def _torch_threads(threads: int | None) -> Iterator[None]:
    """Use ``threads`` torch CPU threads inside the block, then put the old setting back."""
    previous = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def train(
    task: str | Task = "reverse",
    *,
    architecture: Architecture = "encoder-decoder",
    steps: int | None = None,
    batch_size: int = 64,
    lr: float = 3e-3,
    warmup: int = 100,
    seed: int = 0,
    checkpoints: Iterable[int] = (),
    probe: str | Sequence[str] | None = None,
    n_held_out: int = 500,
    config: dict[str, Any] | None = None,
    callback: Callable[[int, float], None] | None = None,
    threads: int | None = 1,
    progress: bool = True,
    clip: float | None = 1.0,
) -> TrainingRun:
    """Train a toy Transformer from scratch on a synthetic task; seeded, deterministic, seconds on a CPU.

    Parameters
    ----------
    task : str | Task
        ``"reverse"`` (default) or ``"number_words"``, or a :class:`~attnwidgets.teaching.tasks.Task`.
    architecture : {"encoder-decoder", "decoder"}
        The original Transformer, or a decoder-only (GPT-style) model reading ``source <sep> target``.
    steps : int, optional
        Optimizer steps; default 300 for the encoder-decoder, 800 for the decoder-only model (which has to learn to
        find the source digits without cross-attention).
    batch_size : int
        Pairs per step; every batch is freshly drawn (endless data), never from the held-out set.
    lr, warmup : float, int
        AdamW peak learning rate, reached after ``warmup`` linear steps, then cosine decay to 10 % of it.
    seed : int
        Seeds torch (initial weights) and the data streams: the same seed gives the same run.
    checkpoints : Iterable[int]
        Steps at which to record attention on ``probe`` (0 = before training, ``steps`` = the end).
    probe : str | Sequence[str], optional
        Source to watch; default ``"3 1 4 1 5 9 2"`` for digit tasks (cut to the task's length).
    n_held_out : int
        Size of the held-out set used for :attr:`TrainingRun.accuracy`.
    config : dict, optional
        Overrides for :class:`~attnwidgets.teaching.transformer.TransformerConfig` (``d_model``, ``n_heads``,
        ``n_kv_heads``, ``norm_first``, ``norm``, ``positional``, ...).
    callback : Callable[[int, float], None], optional
        Called as ``callback(step, loss)`` after every step (progress bars, live plots).
    threads : int | None
        torch CPU threads while training, restored afterwards. 1 is fastest for a model this small (more threads
        spend longer synchronising than computing, badly so on a busy machine); None leaves torch's setting.
    progress : bool
        Show a ``tqdm.auto`` bar (steps, with the current loss) once training has taken more than two seconds.
    clip : float | None
        Clip the global gradient norm to this value before each step (default 1.0); None: no clipping. The norm
        before clipping is recorded either way in :attr:`TrainingRun.grad_norms`.

    Returns
    -------
    TrainingRun
        The model, losses, held-out accuracy, time taken and the attention at each checkpoint.
    """
    start, cpu_start = time.perf_counter(), time.process_time()
    task = get_task(task)
    if architecture not in ("encoder-decoder", "decoder"):
        raise ValueError(f"architecture must be 'encoder-decoder' or 'decoder', got {architecture!r}")
    if steps is None:
        steps = 300 if architecture == "encoder-decoder" else 800
    marks = sorted(set(int(c) for c in checkpoints))
    if marks and (marks[0] < 0 or marks[-1] > steps):
        raise ValueError(f"checkpoints must lie in 0..steps={steps}, got {marks}")
    probe_tokens = task.parse(probe if probe is not None else "3141592"[: task.max_source_len])
    probe_target = task.target(probe_tokens)
    if clip is not None and not (isinstance(clip, (int, float)) and not isinstance(clip, bool) and clip > 0):
        raise ValueError(f"clip must be a positive number or None, got {clip!r}")

    torch.manual_seed(seed)
    model = toy_model(task, architecture, config)
    held_out = held_out_sources(task, n_held_out, seed)
    excluded = set(held_out)
    rng = np.random.default_rng([seed, 0])
    opt = _adamw(model, lr)

    def lr_at(step: int) -> float:  # linear warm-up, then cosine to 10 %
        if step < warmup:
            return lr * (step + 1) / warmup
        t = (step - warmup) / max(steps - warmup, 1)
        return lr * (0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * t)))

    run = TrainingRun(model, task, steps, np.zeros(steps, np.float32), 0.0, 0.0, held_out, probe_tokens,
                      grad_norms=np.zeros(steps, np.float32))

    def snapshot(step: int) -> None:
        result = attention_result(model, task, probe_tokens, probe_target)
        run.checkpoints[step] = at_step(result, step)
        run.checkpoint_accuracy[step] = evaluate(model, task, held_out)

    bar: Any = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, desc=f"training ({architecture})", unit="step", delay=2.0)
    with _torch_threads(threads):
        for step in range(steps):
            if step in marks:
                snapshot(step)
            model.train()
            for group in opt.param_groups:
                group["lr"] = lr_at(step)
            loss = _loss(model, task, sample_pairs(task, rng, batch_size, excluded))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            params = [p for p in model.parameters() if p.grad is not None]
            total = torch.nn.utils.clip_grad_norm_(params, clip if clip is not None else float("inf"))
            opt.step()
            run.losses[step] = loss.item()
            run.grad_norms[step] = float(total)
            if callback is not None:
                callback(step + 1, run.losses[step])
            if bar is not None:
                bar.update(1)
                if step % 25 == 0:
                    bar.set_postfix(loss=f"{run.losses[step]:.3f}", refresh=False)
        if bar is not None:
            bar.close()
        if steps in marks:
            snapshot(steps)
        model.eval()
        run.accuracy = run.checkpoint_accuracy[steps] if steps in marks else evaluate(model, task, held_out)
    run.seconds = time.perf_counter() - start
    run.cpu_seconds = time.process_time() - cpu_start
    return run


def checkpoint_attention(run: TrainingRun, kind: str = "cross") -> tuple[np.ndarray, np.ndarray]:
    """Stack the checkpoints' attention for a slider: ``(steps (K,), attention [step, layer, head, query, key])``.

    ``kind`` is ``"cross"``, ``"decoder"``, ``"encoder"`` (encoder-decoder) or ``"self"``.

    Examples
    --------
    >>> run = train("reverse", steps=2, n_held_out=20, checkpoints=[0, 2])
    >>> steps, att = checkpoint_attention(run, "cross")             # probe "3 1 4 1 5 9 2": 7 digits + <eos>
    >>> steps.tolist(), att.shape
    ([0, 2], (2, 2, 4, 8, 8))
    """
    if not run.checkpoints:
        raise ValueError("this run has no checkpoints: train(..., checkpoints=[0, 100, ...]) records some")
    steps = sorted(run.checkpoints)
    arrays = [run.checkpoints[s].attention_of(kind)[0] for s in steps]  # type: ignore[arg-type]
    return np.array(steps, dtype=np.int64), np.stack(arrays)
