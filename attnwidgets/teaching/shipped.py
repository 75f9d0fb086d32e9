"""What the notebooks train, trained once and shipped: load it in a second, or train it here with ``train=True``.

A lecture cannot wait a minute for a demo to train (on a busy laptop, several). The demos that train (the toy
encoder-decoder that learns to reverse digits, the decoder-only toy, the induction run, the tiny BERT) were trained
once, from fixed seeds, by ``python benchmarks/train_shipped.py``, and their trained state ships with the package in
``attnwidgets/data/shipped_<name>.npz`` (:mod:`attnwidgets.persist`'s format: weights, float16 where a recipe says so,
the recorded loss curves per step, the attention at each checkpoint, and metrics measured on the shipped weights).

:func:`shipped_run` hands back the same object the training function returns (a
:class:`~attnwidgets.teaching.training.TrainingRun`, an :class:`~attnwidgets.teaching.induction.InductionRun` or a
:class:`~attnwidgets.teaching.pretrain.PretrainRun`) and replays the recorded curve through ``callback`` exactly as
training would have called it, so a live figure still draws point by point. ``shipped_run(name, train=True)`` trains
it here instead (progress bar, and a stated estimate of the time it takes).

The file is read as untrusted: no pickle, the recipe it was made by, every weight's name, shape and dtype, the curves'
lengths and the attention's shapes are checked against what the code builds today, and a mismatch is a
:class:`~attnwidgets.persist.SavedFileError` naming the file and how to make it again.
``tests/project/test_shipped_checkpoints.py`` checks that each file is what its recipe makes (the first steps reproduce
the recorded losses, the metrics match a re-evaluation of the shipped weights).

Examples
--------
>>> sorted(RECIPES)
['extrapolation', 'induction', 'reverse', 'reverse-decoder', 'reverse-decoder-short', 'tiny-bert']
>>> run = shipped_run("induction")
>>> run.steps, run.shipped is not None
(500, True)
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from ..persist import TAGS, SavedFileError, machine_description, read, read_tags, write

__all__ = ["KIND", "RECIPES", "Recipe", "bert_metrics", "first_losses", "load_shipped", "make_shipped", "replay",
           "shipped_path", "shipped_run"]

KIND = "ShippedRun"
"""The ``kind`` tag of a shipped file (:mod:`attnwidgets.persist`)."""

SCRIPT = "benchmarks/train_shipped.py"


@dataclass(frozen=True)
class Recipe:
    """How one shipped run is made: the training function (``kind``) and its arguments (JSON), whether weights of
    two or more dimensions are stored as float16 (``half``), and what it is."""

    name: str
    kind: Literal["toy", "induction", "bert", "extrapolation"]
    kwargs: dict[str, Any] = field(default_factory=dict)
    half: bool = True
    what: str = ""

    def call(self) -> str:
        """The training call, as code."""
        fn = _function(self.kind).__name__
        args = [repr(v) for k, v in self.kwargs.items() if k == "task"]
        args += [f"{k}={v!r}" for k, v in self.kwargs.items() if k != "task"]
        return f"{fn}({', '.join(args)})"


RECIPES: dict[str, Recipe] = {r.name: r for r in [
    Recipe("reverse", "toy", {"task": "reverse", "checkpoints": [0, 25, 50, 100, 300]},
           what="the toy encoder-decoder that learns to reverse digits (notebook 01 §5-6, 05 Demo 9)"),
    Recipe("reverse-decoder", "toy", {"task": "reverse", "architecture": "decoder"},
           what="the decoder-only toy on the same task (notebook 01 §7)"),
    Recipe("reverse-decoder-short", "toy", {"task": "reverse_short", "architecture": "decoder", "seed": 0,
                                             "steps": 250, "n_held_out": 30, "lr": 5e-3, "warmup": 30},
           what="a decoder-only toy reversing 3 or 4 digits, the generation demo (notebook 06 §3)"),
    Recipe("induction", "induction", {"steps": 500, "seed": 0}, half=False,
           what="the toy decoder with smeared keys on <bos> r r, where an induction head forms (notebook 06 §4)"),
    Recipe("tiny-bert", "bert", {"steps": 800, "seed": 0, "every": 20},
           what="a tiny BERT pre-trained with masked-LM and NSP on the shipped text (notebook 02 §11)"),
    Recipe("extrapolation", "extrapolation", {"seed": 0},
           what="the toy decoder copying short strings with four position schemes, tested on longer ones "
                "(notebook 01 §4b)"),
]}


def _function(kind: str) -> Callable[..., Any]:
    if kind == "toy":
        from .training import train

        return train
    if kind == "induction":
        from .induction import train_induction

        return train_induction
    if kind == "extrapolation":
        from .extrapolation import train_extrapolation

        return train_extrapolation
    from .pretrain import pretrain_bert

    return pretrain_bert


def _recipe(name: str) -> Recipe:
    if name not in RECIPES:
        raise ValueError(f"no shipped run {name!r}; the package ships {', '.join(sorted(RECIPES))}")
    return RECIPES[name]


def _arguments(recipe: Recipe) -> dict[str, Any]:
    """Every argument of the recipe's call: the function's defaults, then the recipe's own."""
    params = inspect.signature(_function(recipe.kind)).parameters
    return {**{k: p.default for k, p in params.items() if p.default is not inspect.Parameter.empty},
            **recipe.kwargs}


def shipped_path(name: str) -> Path:
    """Where the shipped file of run ``name`` lives (``attnwidgets/data/shipped_<name>.npz``)."""
    from .. import data

    _recipe(name)
    return Path(data.__file__).resolve().parent / f"shipped_{name.replace('-', '_')}.npz"


# -- training ------------------------------------------------------------------------------------------------------

def _train(recipe: Recipe, *, callback: Callable[..., None] | None, progress: bool,
           steps: int | None = None) -> Any:
    kwargs = dict(recipe.kwargs)
    if steps is not None:  # the first steps only (the learning-rate schedules' warm-up does not depend on the total)
        kwargs["steps"] = steps
        if "checkpoints" in kwargs:
            kwargs["checkpoints"] = [c for c in kwargs["checkpoints"] if c <= steps]
    return _function(recipe.kind)(**kwargs, callback=callback, progress=progress)


def _estimate(name: str) -> str:
    try:
        attrs = read_tags(shipped_path(name)).get("attrs") or {}
        return (f"about {float(attrs['cpu_seconds']):.0f} s of one CPU core (what it took to make the shipped copy, "
                f"on {attrs.get('machine', 'a CPU')}); longer on a busy machine")
    except (OSError, SavedFileError, KeyError, TypeError, ValueError):
        return "time unknown (the shipped copy is missing)"


def shipped_run(name: str, *, train: bool = False, callback: Callable[..., None] | None = None,
                progress: bool = True) -> Any:
    """The run ``name`` (one of :data:`RECIPES`): loaded from the package, or trained here with ``train=True``.

    Parameters
    ----------
    name : str
        ``"reverse"``, ``"reverse-decoder"``, ``"induction"`` or ``"tiny-bert"``.
    train : bool
        Train it here (the recipe's call, seeded as the shipped copy was; a progress bar, and the time it took to make
        the shipped copy printed first as an estimate) instead of loading it.
    callback : optional
        The training function's callback (a live figure's ``update``): called during training, or, for a loaded
        run, with the recorded curve, point by point, exactly as training called it.
    progress : bool
        Show the progress bar while training here.

    Returns
    -------
    TrainingRun | InductionRun | PretrainRun
        What the recipe's training function returns; a loaded run's ``shipped`` says where it came from.
    """
    recipe = _recipe(name)
    if not isinstance(train, bool):
        raise TypeError(f"train must be True or False, got {train!r}")
    if train:
        print(f"training {name} here: {recipe.call()}; {_estimate(name)}")
        return _train(recipe, callback=callback, progress=progress)
    run = load_shipped(name)
    if callback is not None:
        replay(run, callback, name)
    return run


def replay(run: Any, callback: Callable[..., None], name: str | None = None) -> None:
    """Call ``callback`` with ``run``'s recorded curve as its training function did, point by point: ``(step, loss)``
    per step for a toy run, ``(scheme, step, loss)`` per step and scheme for the extrapolation run,
    ``(step, second_copy_loss, induction)`` per evaluation for an induction run,
    ``(step, mlm, nsp)`` per ``every`` steps (the recipe's) for a tiny BERT."""
    from .extrapolation import ExtrapolationRun
    from .induction import InductionRun
    from .pretrain import PretrainRun, curve_point

    if isinstance(run, ExtrapolationRun):
        for k, scheme in enumerate(run.schemes):
            for step, loss in enumerate(run.losses[k].tolist()):
                callback(scheme, step + 1, float(loss))
    elif isinstance(run, InductionRun):
        for step, loss, scores in zip(run.eval_steps.tolist(), run.eval_loss.tolist(), run.induction):
            callback(int(step), float(loss), scores)
    elif isinstance(run, PretrainRun):
        every = int(_arguments(_recipe(name or "tiny-bert"))["every"])
        last = 0
        for step in range(run.steps):
            if (step + 1) % every == 0 or step + 1 == run.steps:
                callback(*curve_point(run.mlm_loss, run.nsp_loss, last, step + 1))
                last = step + 1
    else:
        for step, loss in enumerate(run.losses.tolist()):
            callback(step + 1, float(loss))


def first_losses(name: str, steps: int = 3) -> Any:
    """Run ``name``'s recipe for its first ``steps`` steps only (same seeds; no progress bar): the run it returns
    starts exactly as the shipped one did (what ``tests/project/test_shipped_checkpoints.py`` compares)."""
    return _train(_recipe(name), callback=None, progress=False, steps=steps)


# -- the weights ---------------------------------------------------------------------------------------------------

def _stored_dtype(recipe: Recipe, param: torch.Tensor) -> np.dtype:
    return np.dtype(np.float16 if recipe.half and param.ndim >= 2 else np.float32)


def _weights(recipe: Recipe, model: torch.nn.Module) -> dict[str, np.ndarray]:
    """The model's parameters (tied ones once) as arrays, float16 where the recipe says."""
    return {f"param.{n}": p.detach().numpy().astype(_stored_dtype(recipe, p))
            for n, p in model.named_parameters()}


def _round_to_stored(recipe: Recipe, model: torch.nn.Module) -> None:
    """Round the model's weights to what is stored, so the metrics are measured on the weights that ship."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.from_numpy(p.detach().numpy().astype(_stored_dtype(recipe, p)).astype(np.float32)))


def _load_weights(recipe: Recipe, model: torch.nn.Module, arrays: dict[str, np.ndarray], where: str) -> None:
    params = dict(model.named_parameters())
    stored = {k.removeprefix("param."): v for k, v in arrays.items() if k.startswith("param.")}
    missing, extra = sorted(set(params) - set(stored)), sorted(set(stored) - set(params))
    if missing or extra:
        raise SavedFileError(f"{where} does not hold this model's weights (missing {missing[:3]}, unexpected "
                             f"{extra[:3]}): {_remake(recipe)}")
    with torch.no_grad():
        for n, p in params.items():
            value, want = stored[n], _stored_dtype(recipe, p)
            if value.shape != tuple(p.shape) or value.dtype != want:
                raise SavedFileError(f"{where}: weight {n!r} is {value.dtype} {value.shape}, the model needs {want} "
                                     f"{tuple(p.shape)}: {_remake(recipe)}")
            if not np.isfinite(value).all():
                raise SavedFileError(f"{where}: weight {n!r} holds NaN or infinity: {_remake(recipe)}")
            p.copy_(torch.from_numpy(value.astype(np.float32)))
    model.eval()


def _remake(recipe: Recipe) -> str:
    return f"make it again with `python {SCRIPT} --only {recipe.name}` (or pass train=True to train it here)"


def _vocab_hash(tokenizer: Any) -> str:
    vocab = tokenizer.get_vocab()
    return hashlib.sha256("\n".join(sorted(vocab, key=vocab.__getitem__)).encode()).hexdigest()


# -- making a file -------------------------------------------------------------------------------------------------

def make_shipped(name: str, path: str | os.PathLike[str] | None = None, *, progress: bool = True) -> Path:
    """Train run ``name`` by its recipe and write its shipped file (default :func:`shipped_path`): the weights,
    the recorded curves, the checkpoints' attention and metrics measured on the weights as stored."""
    recipe = _recipe(name)
    run = _train(recipe, callback=None, progress=progress)
    model: Any = torch.nn.ModuleDict(run.models) if recipe.kind == "extrapolation" else run.model
    _round_to_stored(recipe, model)
    model.eval()
    arrays: dict[str, np.ndarray] = _weights(recipe, model)
    metrics: dict[str, Any] = {}
    attrs: dict[str, Any] = {"seconds": float(run.seconds), "cpu_seconds": float(run.cpu_seconds),
                             "machine": machine_description(), "script": SCRIPT}
    if recipe.kind == "toy":
        from .training import at_step, attention_result, evaluate

        metrics["accuracy_as_trained"] = float(run.accuracy)
        metrics["accuracy"] = evaluate(model, run.task, run.held_out)
        if run.steps in run.checkpoints:  # the last checkpoint is the shipped model: measured on its stored weights
            r = attention_result(model, run.task, run.probe, run.task.target(run.probe))
            run.checkpoints[run.steps] = at_step(r, run.steps)
            run.checkpoint_accuracy[run.steps] = metrics["accuracy"]
        arrays["losses"], arrays["grad_norms"] = run.losses, run.grad_norms
        for step, r in run.checkpoints.items():
            for key, value in _checkpoint_arrays(r).items():
                arrays[f"checkpoint.{step}.{key}"] = value
        attrs["probe"] = list(run.probe)
        attrs["checkpoint_accuracy"] = {str(k): float(v) for k, v in run.checkpoint_accuracy.items()}
    elif recipe.kind == "extrapolation":
        run.accuracy = run.evaluate()  # measured on the weights as stored
        arrays["losses"], arrays["accuracy"] = run.losses, run.accuracy
        metrics["accuracy"] = [[None if np.isnan(v) else float(v) for v in row] for row in run.accuracy]
    elif recipe.kind == "induction":
        for key in ("losses", "eval_steps", "eval_loss", "induction", "previous_token", "duplicate_token"):
            arrays[key] = getattr(run, key)
        metrics["second_copy_loss"] = float(run.eval_loss[-1])
        metrics["max_induction"] = float(run.max_induction[-1])
    else:
        arrays["mlm_loss"], arrays["nsp_loss"] = run.mlm_loss, run.nsp_loss
        metrics.update(bert_metrics(run))
        attrs["vocab_sha256"] = _vocab_hash(run.tokenizer)
        attrs["config"] = run.config
    attrs["metrics"] = metrics
    return write(path or shipped_path(name), KIND, arrays, settings={"name": name, "recipe": recipe.kwargs,
                                                                     "half": recipe.half}, attrs=attrs)


def _checkpoint_arrays(result: Any) -> dict[str, np.ndarray]:
    if result.model.kind == "decoder":
        return {"self": result.attention, "logits": result.outputs["logits_per_position"]}
    return {"encoder": result.attention, "decoder": result.decoder_attention, "cross": result.cross_attention,
            "logits": result.outputs["decoder_logits"]}


def bert_metrics(run: Any) -> dict[str, Any]:
    """What :func:`make_shipped` stores as a tiny BERT's metrics, measured now on ``run``'s model: the held-out NSP
    probabilities and accuracy, and the held-out masked-LM loss."""
    from ..data import split_documents
    from .pretrain import masked_lm_loss, nsp_pairs, nsp_probabilities

    pairs = nsp_pairs(split_documents()["held_out"], np.random.default_rng(0))
    p = nsp_probabilities(run, pairs)
    truth = np.array([q.is_next for q in pairs])
    return {"nsp_heldout_p_isnext": [float(x) for x in p], "nsp_heldout_accuracy": float(((p > 0.5) == truth).mean()),
            "mlm_heldout_loss": masked_lm_loss(run, pairs, seed=0)}


# -- loading -------------------------------------------------------------------------------------------------------

def _curve(arrays: dict[str, np.ndarray], key: str, shape: tuple[int, ...], where: str, recipe: Recipe,
           dtype: Any = np.floating) -> np.ndarray:
    if key not in arrays:
        raise SavedFileError(f"{where} has no {key!r}: {_remake(recipe)}")
    value = arrays[key]
    if value.shape != shape or not np.issubdtype(value.dtype, dtype):
        raise SavedFileError(f"{where}: {key!r} is {value.dtype} {value.shape}, expected {shape}: {_remake(recipe)}")
    if np.issubdtype(value.dtype, np.floating) and not np.isfinite(value).all():
        raise SavedFileError(f"{where}: {key!r} holds NaN or infinity: {_remake(recipe)}")
    return value


def load_shipped(name: str, path: str | os.PathLike[str] | None = None, *, tokenizer: Any = None) -> Any:
    """Load the shipped run ``name`` from ``path`` (default :func:`shipped_path`), checked against its recipe and
    the model the code builds today; :class:`~attnwidgets.persist.SavedFileError` for a file that does not fit.
    A file given by ``path`` is also measured again: its weights must give the metric stored with them (held-out
    accuracy, second-copy loss, masked-LM loss; the extrapolation run's accuracies are its only numbers)."""
    recipe = _recipe(name)
    file = Path(path) if path is not None else shipped_path(name)
    where = repr(str(file))
    if not file.is_file():
        raise SavedFileError(f"the shipped run {name!r} is missing ({where}): {_remake(recipe)}")
    saved = read(file, KIND)
    # Every array the file's tags name, each read only after its header passes persist's checks (type, size);
    # the loaders below check each one's shape against the model the code builds today.
    settings, attrs = saved.settings, saved.attrs
    arrays = {key: saved.array(key) for key in sorted(saved.names) if key != TAGS}
    if settings.get("name") != name:
        raise SavedFileError(f"{where} holds the run {settings.get('name')!r}, not {name!r}")
    if json.loads(json.dumps(recipe.kwargs)) != settings.get("recipe") or settings.get("half") != recipe.half:
        raise SavedFileError(f"{where} was made by another recipe ({settings.get('recipe')}) than {name!r}'s today "
                             f"({recipe.kwargs}): {_remake(recipe)}")
    try:
        seconds, cpu_seconds = float(attrs["seconds"]), float(attrs["cpu_seconds"])
        note = (f"shipped with attnwidgets: {recipe.call()} took {cpu_seconds:.0f} s of one CPU core ({seconds:.0f} s "
                f"wall clock) on {attrs.get('machine', 'a CPU')} when {SCRIPT} made it; train=True trains it here")
        args = _arguments(recipe)
        # A fresh model draws its initial weights (overwritten at once) from torch's generator: leave the session's.
        with torch.random.fork_rng(devices=[]):
            if recipe.kind == "toy":
                run = _load_toy(recipe, args, arrays, attrs, where, seconds, cpu_seconds, note)
            elif recipe.kind == "induction":
                run = _load_induction(recipe, args, arrays, where, seconds, cpu_seconds, note)
            elif recipe.kind == "extrapolation":
                return _load_extrapolation(recipe, args, arrays, where, seconds, cpu_seconds, note)
            else:
                run = _load_bert(recipe, args, arrays, attrs, where, seconds, cpu_seconds, note, tokenizer)
        if path is not None:     # a file from elsewhere: its weights must give the metrics stored with them
            _check_metrics(recipe, run, attrs, where)
        return run
    except SavedFileError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SavedFileError(f"{where} is damaged or does not fit run {name!r} ({type(exc).__name__}: {exc}): "
                             f"{_remake(recipe)}") from exc


def _check_metrics(recipe: Recipe, run: Any, attrs: dict[str, Any], where: str) -> None:
    """Measure the loaded weights again and compare with the metrics stored beside them (what
    ``tests/project/test_shipped_checkpoints.py`` checks of the packaged files): weights edited after the file was made
    give other numbers. Not a signature: whoever rewrites the weights can rewrite the metrics too, so a file from
    elsewhere is still trusted like code; this catches a file changed by accident or by a careless hand."""
    metrics = attrs["metrics"]
    if recipe.kind == "toy":
        from .training import evaluate

        now, stored, what = evaluate(run.model, run.task, run.held_out), float(metrics["accuracy"]), "held-out accuracy"
        same = now == stored
    elif recipe.kind == "induction":
        from .induction import probe_scores

        now, stored, what = float(probe_scores(run)[0]), float(metrics["second_copy_loss"]), "second-copy loss"
        same = abs(now - stored) <= 1e-5 * max(1.0, abs(stored))
    else:
        now, stored, what = bert_metrics(run)["mlm_heldout_loss"], float(metrics["mlm_heldout_loss"]), \
            "held-out masked-LM loss"
        same = abs(now - stored) <= 1e-5 * max(1.0, abs(stored))
    if not same:
        raise SavedFileError(f"{where}: its weights give a {what} of {now:.6g}, the file records {stored:.6g}: the "
                             f"weights were changed after it was made; {_remake(recipe)}")


def _load_toy(recipe: Recipe, args: dict[str, Any], arrays: dict[str, np.ndarray], attrs: dict[str, Any], where: str,
              seconds: float, cpu_seconds: float, note: str) -> Any:
    from .tasks import get_task, held_out_sources
    from .training import TrainingRun, at_step, attention_result, toy_model, toy_result

    task = get_task(args["task"])
    architecture = args["architecture"]
    model = toy_model(task, architecture, args["config"])
    _load_weights(recipe, model, arrays, where)
    steps = int(args["steps"] if args["steps"] is not None else (300 if architecture == "encoder-decoder" else 800))
    losses = _curve(arrays, "losses", (steps,), where, recipe).astype(np.float32)
    grad_norms = _curve(arrays, "grad_norms", (steps,), where, recipe).astype(np.float32)
    probe = task.parse([str(t) for t in attrs["probe"]])
    target = task.target(probe)
    reference = _checkpoint_arrays(attention_result(model, task, probe, target))  # the shapes the code makes today
    marks = sorted({int(c) for c in args["checkpoints"]})
    accuracy_at = {int(k): float(v) for k, v in attrs["checkpoint_accuracy"].items()}
    if sorted(accuracy_at) != marks:
        raise SavedFileError(f"{where} has accuracies at steps {sorted(accuracy_at)}, the recipe checkpoints {marks}: "
                             f"{_remake(recipe)}")
    checkpoints = {}
    for step in marks:
        stored = {key: _curve(arrays, f"checkpoint.{step}.{key}", ref.shape, where, recipe).astype(np.float32)
                  for key, ref in reference.items()}
        checkpoints[step] = at_step(toy_result(task, model.cfg, architecture == "decoder", probe, target, stored),
                                    step)
    accuracy = float(attrs["metrics"]["accuracy"])
    return TrainingRun(model, task, steps, losses, accuracy, seconds, held_out_sources(task, args["n_held_out"],
                                                                                     args["seed"]),
                       list(probe), checkpoints, accuracy_at, cpu_seconds, grad_norms, shipped=note)


def _load_induction(recipe: Recipe, args: dict[str, Any], arrays: dict[str, np.ndarray], where: str, seconds: float,
                    cpu_seconds: float, note: str) -> Any:
    from .induction import InductionRun, induction_model, induction_probe, token_names

    steps, seq_len, vocab = int(args["steps"]), int(args["seq_len"]), int(args["vocab"])
    model = induction_model(seq_len, vocab, args["config"], smeared_keys=args["smeared_keys"])
    _load_weights(recipe, model, arrays, where)
    marks = np.array(sorted({*range(0, steps, int(args["eval_every"])), steps}), np.int64)
    k, shape = len(marks), (len(marks), model.cfg.n_decoder_layers, model.cfg.n_heads)
    eval_steps = _curve(arrays, "eval_steps", (k,), where, recipe, np.integer)
    if not np.array_equal(eval_steps, marks):
        raise SavedFileError(f"{where}: the evaluation steps are not the recipe's: {_remake(recipe)}")
    scores = {key: _curve(arrays, key, shape, where, recipe).astype(np.float64)
              for key in ("induction", "previous_token", "duplicate_token")}
    probe = induction_probe(int(args["seed"]), int(args["n_probe"]), seq_len, vocab).numpy()
    return InductionRun(model, seq_len, vocab, _curve(arrays, "losses", (steps,), where, recipe).astype(np.float32),
                        marks, _curve(arrays, "eval_loss", (k,), where, recipe).astype(np.float64),
                        scores["induction"], scores["previous_token"], scores["duplicate_token"], probe, seconds,
                        cpu_seconds, token_names(vocab), shipped=note)


def _load_extrapolation(recipe: Recipe, args: dict[str, Any], arrays: dict[str, np.ndarray], where: str,
                        seconds: float, cpu_seconds: float, note: str) -> Any:
    from .extrapolation import SCHEMES, ExtrapolationRun, extrapolation_model

    lengths = np.array(sorted({int(n) for n in args["test_lengths"]}), np.int64)
    schemes = tuple(args["schemes"])
    models = {s: extrapolation_model(s, n_symbols=int(args["n_symbols"]), train_max=int(args["train_max"]),
                                     test_max=int(lengths[-1]), config=args["config"]) for s in schemes}
    if not set(schemes) <= set(SCHEMES):
        raise SavedFileError(f"{where}: unknown position schemes {schemes}: {_remake(recipe)}")
    _load_weights(recipe, torch.nn.ModuleDict(models), arrays, where)
    steps = int(args["steps"])
    losses = _curve(arrays, "losses", (len(schemes), steps), where, recipe).astype(np.float32)
    accuracy = arrays.get("accuracy")
    if accuracy is None or accuracy.shape != (len(schemes), lengths.size) or accuracy.dtype != np.float64:
        raise SavedFileError(f"{where}: 'accuracy' is missing or not ({len(schemes)}, {lengths.size}) float64: "
                             f"{_remake(recipe)}")
    finite = accuracy[np.isfinite(accuracy)]
    if ((finite < 0) | (finite > 1)).any():
        raise SavedFileError(f"{where}: 'accuracy' holds values outside 0..1: {_remake(recipe)}")
    settings = {k: args[k] for k in ("steps", "train_max", "n_symbols", "batch_size", "lr", "warmup", "seed",
                                     "n_eval", "config")}
    settings["test_lengths"] = lengths.tolist()
    return ExtrapolationRun(models, int(args["train_max"]), lengths, accuracy.copy(), losses, settings, seconds,
                            cpu_seconds, shipped=note, schemes=schemes)


def _load_bert(recipe: Recipe, args: dict[str, Any], arrays: dict[str, np.ndarray], attrs: dict[str, Any], where: str,
               seconds: float, cpu_seconds: float, note: str, tokenizer: Any) -> Any:
    from .pretrain import PretrainRun, compact_tokenizer, save_tiny_bert, tiny_bert

    tok = compact_tokenizer() if tokenizer is None else tokenizer
    if _vocab_hash(tok) != attrs["vocab_sha256"]:
        raise SavedFileError(f"{where} was trained with another vocabulary than this tokenizer's ({len(tok)} pieces): "
                             f"pass the compact tokenizer it was made with, or {_remake(recipe)}")
    model = tiny_bert(tok, layers=args["layers"], heads=args["heads"], hidden=args["hidden"], max_len=args["max_len"])
    _load_weights(recipe, model, arrays, where)
    steps = int(args["steps"])
    mlm = _curve(arrays, "mlm_loss", (steps,), where, recipe).astype(np.float32)
    nsp = _curve(arrays, "nsp_loss", (steps,), where, recipe).astype(np.float32)
    return PretrainRun(save_tiny_bert(model, tok), model, tok, steps, mlm, nsp, seconds, cpu_seconds,
                       dict(attrs["config"]), shipped=note)
