"""Loading errors name what is wrong with the model name or folder, and what to do next."""

from __future__ import annotations

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
