"""GenerationView's span-share panel by chat role in JupyterLab: a prompt built with a chat template, a line per
role (named in the legend and the caption) at Python's numbers, shown with nothing selected; the menu switches
between roles and layers."""

from __future__ import annotations

import json
import shutil

import pytest
from helpers import eventually, wait_dataset

TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>\\n{{ m['content'] }}\\n{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>\\n{% endif %}")


@pytest.fixture(scope="module")
def chat_llama(tiny_llama, tmp_path_factory) -> str:
    """tiny_llama allowed 256 positions (RoPE has no learned ones): the tiny BPE spends many tokens on a chat."""
    path = tmp_path_factory.mktemp("chat_llama_b") / "m"
    shutil.copytree(tiny_llama, path)
    config = json.loads((path / "config.json").read_text())
    config["max_position_embeddings"] = 256
    (path / "config.json").write_text(json.dumps(config))
    return str(path)


def setup(path: str) -> str:
    return f"""
import attnwidgets as aw
messages = [{{"role": "system", "content": "The cat is a cat."}},
            {{"role": "user", "content": "Where did the cat sit?"}},
            {{"role": "assistant", "content": "<think>the mat</think> On the mat."}},
            {{"role": "user", "content": "Why?"}}]
chat = aw.runner.chat_prompt(messages, model={path!r}, chat_template="{TEMPLATE}")
g = aw.generate(chat.text, {path!r}, max_new_tokens=6, min_new_tokens=6).with_roles(chat)
w = aw.GenerationView(g, step=0, layer=1, share_by="role", theme="lecture")
w
"""


def test_share_panel_draws_a_line_per_role(lab, chat_llama):
    nb = lab.open([setup(chat_llama)], viewport=(1280, 720), reuse=True)
    gv = nb.widget()
    d = wait_dataset(gv, "share-canvas", "key", "roles/sum/role/1")
    assert gv.locator("[data-testid=share-panel]").is_visible(), "roles need no selection"
    assert json.loads(d["labels"]) == ["system", "user", "assistant", "think"]
    assert d["lines"] == "4" and d["steps"] == "6"
    caption = gv.locator("[data-testid=share-caption]").inner_text().replace("\u2068", "").replace("\u2069", "")
    assert caption.startswith("share of each step's attention on each role (system 0–") and "think" in caption
    assert "layer 1, mean of its heads" in caption
    want = json.loads(nb.python("import json; print(json.dumps([g.span_share(r, layers=[1])[:, 0].mean(-1).tolist()"
                                " for r in g.role_names]))"))
    shown = json.loads(nb.python("import json; print(json.dumps(w.share()[0].T.tolist()))"))
    assert max(abs(a - b) for la, lb in zip(shown, want) for a, b in zip(la, lb)) < 1e-6
    # the panel has ink where the lines are: the legend and four coloured lines
    ink = gv.locator("[data-testid=share-canvas]").evaluate("""(c) => {
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
        for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i] - d[i+1]) + Math.abs(d[i+1] - d[i+2]) > 60) n++;
        return n; }""")
    assert ink > 200, ink
    nb.screenshot("chat-roles-share-lecture", gv)
    # the menu offers roles, and back to layers
    options = gv.locator("[data-testid=share-by] option").all_inner_texts()
    assert "a line per role" in options
    gv.locator("[data-testid=share-by]").select_option("layer")
    eventually(nb, "print(w.share_by)", "layer")
    assert not gv.locator("[data-testid=share-panel]").is_visible(), "lines per layer need a selection"
    gv.locator("[data-testid=share-by]").select_option("role")
    wait_dataset(gv, "share-canvas", "key", "roles/sum/role/1")
    assert not nb.errors(), nb.errors()
