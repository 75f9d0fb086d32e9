"""A tiny Hugging Face GPT-2 in which induction heads form, shipped trained: the model notebook 07 patches and
attributes (the toy induction run of :mod:`attnwidgets.teaching` is our own Transformer class, which the runner
cannot load; this one runs through the same code as any Hugging Face decoder).

The task is Olsson et al.'s (2022) repeated random tokens: ``<bos> r r`` with ``r`` a block of 4 to 20 distinct
random tokens, its length drawn for each batch; the loss is on every next token, and only the second copy can be
predicted. The model learns to copy; *how* it finds the earlier copy is what notebook 07 asks of it (a textbook
induction head would match content; a small model may also lean on positions, since the block always starts right
after ``<bos>``). Two layers of four heads, no
MLP's worth mentioning (a narrow one), 64 word-level tokens ``t0`` … ``t63``, so a sentence is written as
``"<bos> t5 t17 t3 ..."``.

The weights are ``attnwidgets/data/shipped_induction_gpt2.npz`` (made by ``benchmarks/train_shipped.py --only
induction-gpt2`` from a fixed seed; ``tests/studies/test_induction_model.py`` re-makes its first steps).
:func:`induction_decoder` writes the model and its tokenizer to a folder once per session and returns the folder,
which ``aw.run(..., model=folder)`` and every study take; ``train=True`` trains it here instead (``steps`` steps,
minutes on one core; the shipped file records how long its training took).

Examples
--------
>>> from attnwidgets.studies.induction_model import induction_decoder, copy_text
>>> import attnwidgets as aw
>>> folder = induction_decoder()
>>> text = copy_text(8, seed=1)
>>> text.split()[:3]
['<bos>', 't57', 't26']
>>> aw.run(text, model=folder).model.n_layers
2
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..persist import atomic_write

__all__ = ["CONFIG", "RECIPE", "SHIPPED", "VOCAB", "copy_text", "induction_decoder", "load_weights", "save_weights",
           "tokenizer", "train_induction_decoder"]

#: Word-level vocabulary: <bos>, then t0 ... t63.
VOCAB = ["<bos>", *[f"t{i}" for i in range(64)]]

#: The GPT-2 configuration (2 layers x 4 heads, width 64).
CONFIG: dict[str, Any] = {"n_layer": 2, "n_head": 4, "n_embd": 64, "n_inner": 64, "n_positions": 64,
                          "vocab_size": len(VOCAB), "bos_token_id": 0, "eos_token_id": 0, "pad_token_id": 0,
                          "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0}

#: What the shipped file was trained with (and ``train=True`` uses by default).
RECIPE: dict[str, Any] = {"steps": 3000, "seed": 0, "seq_len": 20, "batch": 64, "lr": 1e-3}

SHIPPED = Path(__file__).resolve().parents[1] / "data" / "shipped_induction_gpt2.npz"
_FOLDERS: dict[str, str] = {}


def copy_text(seq_len: int = 8, *, seed: int = 0) -> str:
    """``"<bos> r r"``: a block of ``seq_len`` distinct random tokens, twice, as the model's text."""
    rng = np.random.default_rng(seed)
    r = rng.choice(len(VOCAB) - 1, size=seq_len, replace=False) + 1
    return " ".join(["<bos>", *(VOCAB[i] for i in r), *(VOCAB[i] for i in r)])


def tokenizer() -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="<bos>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", eos_token="<bos>", unk_token="<bos>",
                                   pad_token="<bos>")


def _model(seed: int) -> Any:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    return GPT2LMHeadModel(GPT2Config(**CONFIG, architectures=["GPT2LMHeadModel"]))


def _batch(rng: np.random.Generator, batch: int, seq_len: int) -> tuple[Any, int]:
    """A batch of ``<bos> r r``, ``r`` of a length drawn from 4 .. ``seq_len`` for the batch, so no one fixed
    distance finds the earlier copy. Returns the ids and where the second copy starts."""
    import torch

    n = int(rng.integers(4, seq_len + 1))
    r = np.stack([rng.choice(len(VOCAB) - 1, size=n, replace=False) + 1 for _ in range(batch)])
    ids = np.concatenate([np.zeros((batch, 1), dtype=np.int64), r, r], axis=1)
    return torch.from_numpy(ids), 1 + n


def train_induction_decoder(steps: int = RECIPE["steps"], *, seed: int = RECIPE["seed"],
                            seq_len: int = RECIPE["seq_len"], batch: int = RECIPE["batch"], lr: float = RECIPE["lr"]
                            ) -> tuple[Any, dict[str, np.ndarray]]:
    """Train the model from ``seed``: (the model, {"loss": per step, "second_copy_loss": per step}).

    The loss is the mean next-token cross-entropy over the whole sequence; the second copy's part of it is recorded
    too (the first copy is random and cannot be learned: its loss stays near ln 64)."""
    import torch

    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    model = _model(seed)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    rng = np.random.default_rng(seed)
    losses, second = np.empty(steps), np.empty(steps)
    for step in range(steps):
        ids, second_copy = _batch(rng, batch, seq_len)
        logits = model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[:, :-1]
        per = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1),
                                                reduction="none").view(batch, -1)
        loss = per.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses[step] = float(loss.detach())
        second[step] = float(per[:, second_copy:].mean().detach())  # per[:, i] predicts token i + 1
    model.eval()
    return model, {"loss": losses, "second_copy_loss": second}


def save_weights(model: Any, history: dict[str, np.ndarray], path: Path, seconds: float) -> None:
    """Write the shipped file: the model's float32 weights and the training history."""
    import io

    arrays = {f"w/{k}": v.detach().cpu().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    arrays.update({f"h/{k}": v for k, v in history.items()})
    arrays["seconds"] = np.array(seconds)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    atomic_write(path, lambda f: f.write(buffer.getvalue()))


def load_weights(path: Path = SHIPPED) -> tuple[Any, dict[str, np.ndarray], float]:
    """The shipped model (eval mode), its history and the training's seconds. The file's entries are checked
    against the configuration's parameter shapes before any weight is used."""
    import torch

    model = _model(0)
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    with np.load(path, allow_pickle=False) as f:
        names = set(f.files)
        weights = {k[2:]: f[k] for k in names if k.startswith("w/")}
        history = {k[2:]: f[k] for k in names if k.startswith("h/")}
        seconds = float(f["seconds"]) if "seconds" in names else float("nan")
    if set(weights) != set(expected) or any(weights[k].shape != expected[k] for k in expected):
        raise ValueError(f"{path}: not the shipped induction decoder's weights (its entries do not match the "
                         "configuration's parameters)")
    model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in weights.items()})
    model.eval()
    return model, history, seconds


def induction_decoder(*, train: bool = False, steps: int = RECIPE["steps"]) -> str:
    """A folder holding the induction decoder and its tokenizer, for ``model=`` anywhere (written once per session
    and per weights). ``train=True`` trains it here first (``steps`` steps) instead of loading the shipped file."""
    if train:
        started = time.perf_counter()
        model, _ = train_induction_decoder(steps)
        print(f"trained the induction decoder for {steps} steps in {time.perf_counter() - started:.1f} s")
        key = f"trained-{steps}-{id(model)}"
    else:
        key = hashlib.sha256(SHIPPED.read_bytes()).hexdigest()[:16]
        if key in _FOLDERS and Path(_FOLDERS[key]).is_dir():
            return _FOLDERS[key]
        model, _, _ = load_weights()
    folder = Path(tempfile.mkdtemp(prefix=f"attnwidgets-{key[:8]}-")) / "induction-gpt2"  # the model's name
    model.save_pretrained(folder)
    tokenizer().save_pretrained(folder)
    _FOLDERS[key] = str(folder)
    return str(folder)
