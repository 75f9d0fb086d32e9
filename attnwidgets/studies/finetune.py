"""What fine-tuning changes: fine-tune the encoder briefly on the shipped sentiment set and compare attention.

:func:`finetune_classifier` trains a copy of the runner's model (all weights) with a small linear head on the
mean-pooled embedding, seeded, for an epoch or two with AdamW: about a minute on two CPU cores for the bundled
model. It returns a new :class:`Runner` over the fine-tuned copy (the original is untouched), so every widget and
analysis works on it as on any model.

:func:`compare_finetuning` then runs held-out texts through both runners and compares every head's maps with
:func:`attnwidgets.analysis.compare.mean_head_similarity` (cosine of flattened maps, as Kovaleva et al.).
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..analysis.compare import mean_head_similarity, similarity_by_layer
from ..data.labelled import load_sentiment, train_test_split_frame
from ..html_repr import repr_html
from ..runner import Runner, control
from ..runner.loading import LoadedModel
from .tasks import pooled_embedding

__all__ = ["FinetuneComparison", "compare_finetuning", "finetune_classifier"]


def finetune_classifier(
    runner: Runner,
    texts: Sequence[str],
    labels: Sequence[Any],
    *,
    epochs: int = 2,
    lr: float = 5e-5,
    batch_size: int = 16,
    seed: int = 0,
    progress: bool = True,
) -> tuple[Runner, dict[str, Any]]:
    """Fine-tune a copy of ``runner``'s model with a linear classification head on the pooled embedding.

    Returns
    -------
    tuned : Runner
        A runner over the fine-tuned encoder (named ``"<name> (fine-tuned)"``).
    log : dict
        ``losses`` (per step), ``classes``, ``train_accuracy`` (last epoch, on the fly), ``seconds``, and ``head``
        (the trained torch.nn.Linear).
    """
    if len(texts) != len(labels) or not texts:
        raise ValueError(f"need one label per text, got {len(texts)} texts and {len(labels)} labels")
    start = time.perf_counter()
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    classes = sorted(set(labels))
    y = torch.tensor([classes.index(v) for v in labels])
    model = copy.deepcopy(runner.model)
    control.register_sites(model, runner.info.kind)
    config: Any = model.config  # a transformers config (nn.Module's __getattr__ types it as Tensor | Module)
    hidden = int(getattr(config, "hidden_size", 0) or config.d_model)
    head = torch.nn.Linear(hidden, len(classes))
    params = [p for p in model.parameters() if p.requires_grad] + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=lr)
    losses: list[float] = []
    correct = 0
    bar: Any = None
    steps_per_epoch = int(np.ceil(len(texts) / batch_size))
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=epochs * steps_per_epoch, desc="fine-tuning", unit="step", delay=1.0)
    model.train()
    try:
        for epoch in range(epochs):
            order = rng.permutation(len(texts))
            correct = 0
            for s in range(steps_per_epoch):
                idx = order[s * batch_size:(s + 1) * batch_size]
                enc = runner.encode([texts[i] for i in idx])
                out = model(**enc.inputs, return_dict=True)
                mask = enc.inputs.get("attention_mask", torch.ones_like(enc.inputs["input_ids"]))
                logits = head(pooled_embedding(out, mask))
                loss = torch.nn.functional.cross_entropy(logits, y[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
                correct += int((logits.argmax(-1) == y[idx]).sum())
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(epoch=epoch, loss=f"{losses[-1]:.3f}")
    finally:
        model.eval()
        if bar is not None:
            bar.close()
    # source=None: these weights live only in memory; loading the base model's source again would be the wrong model
    info = dataclasses.replace(runner.info, name=f"{runner.info.name} (fine-tuned)", source=None)
    tuned = Runner(LoadedModel(model=model, tokenizer=runner.tokenizer, info=info, head="base"))
    log = dict(losses=losses, classes=classes, train_accuracy=correct / len(texts),
               seconds=time.perf_counter() - start, head=head)
    return tuned, log


@dataclass
class FinetuneComparison:
    """Attention before vs after fine-tuning.

    Attributes
    ----------
    similarity : np.ndarray
        (L, H) mean cosine similarity of each head's maps, before vs after, over the held-out texts.
    by_layer : pandas.DataFrame
        Per-layer summary (``layer, mean, min, max, least_similar_head``).
    tuned : Runner
        The fine-tuned model's runner.
    log : dict
        From :func:`finetune_classifier`, plus ``heldout_accuracy`` of the fine-tuned classifier.
    texts : list[str]
        The held-out texts compared.
    example : AttentionResult or None
        The fine-tuned model's run of ``texts[0]`` (what a notebook draws beside the pre-trained model's); a shipped
        comparison (:func:`attnwidgets.studies.shipped_finetune.shipped_finetune`) has it though its ``tuned`` is
        None (the fine-tuned weights are not stored).
    """

    _repr_html_ = repr_html  # the compact table a notebook shows (html_repr.py)

    similarity: np.ndarray
    by_layer: pd.DataFrame
    tuned: Runner | None
    log: dict[str, Any]
    texts: list[str]
    example: Any = None

    @property
    def change_percent(self) -> np.ndarray:
        """(L, H) how much each head's maps changed: ``100 · (1 − similarity)``, in % (0 = unchanged).

        A cosine of 0.98 is a 2 % change: plot this on a fixed axis (``plot_head_grid(..., limits=(0, 10))``)
        rather than the cosines on their own 0.98–1.00 range, where a 2 % change fills every colour.
        """
        return 100.0 * (1.0 - np.asarray(self.similarity, dtype=np.float64))


def compare_finetuning(
    runner: Runner,
    *,
    epochs: int = 2,
    test_size: float = 0.3,
    seed: int = 0,
    lr: float = 5e-5,
    progress: bool = True,
) -> FinetuneComparison:
    """Fine-tune on the shipped sentiment set's training split and compare attention on its held-out split.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> cmp = compare_finetuning(aw.runner.get_runner(), progress=False)     # doctest: +SKIP
    >>> cmp.by_layer[["layer", "mean"]]                                 # doctest: +SKIP
    """
    train, test = train_test_split_frame(load_sentiment(), test_size=test_size, seed=seed)
    tuned, log = finetune_classifier(runner, list(train.text), list(train.label), epochs=epochs, lr=lr, seed=seed,
                                     progress=progress)
    texts = list(test.text)
    before = runner.run_batch(texts, progress=progress)
    after = tuned.run_batch(texts, progress=progress)
    head = log["head"]
    with torch.no_grad():
        emb = torch.from_numpy(np.stack([r.outputs["embedding"] for r in after]))
        pred = head(emb).argmax(-1).numpy()
    log["heldout_accuracy"] = float(np.mean(np.array(log["classes"])[pred] == test.label.to_numpy()))
    sim = mean_head_similarity(before, after)
    return FinetuneComparison(sim, similarity_by_layer(sim), tuned, log, texts, after[0])
