"""Chat roles: a prompt built with a chat template (or plain "User:" lines) split into the tokens each role speaks
(and ``<think>`` segments), and each step's attention shared by role in a generation and its GenerationView.

The spans are checked by decoding their tokens back to the messages' text; the shares against sums of the
generation's own attention rows, and a step-0 row, whose keys are all prompt, must give the roles a total of 1.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import traitlets

import attnwidgets as aw
from attnwidgets.chat_roles import RoleSpan, split_think, text_char_spans, token_spans

TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")
MESSAGES = [
    {"role": "system", "content": "The cat is a cat."},
    {"role": "user", "content": "Where did the cat sit?"},
    {"role": "assistant", "content": "<think>the mat</think> On the mat."},
    {"role": "user", "content": "Why?"},
]


@pytest.fixture(scope="module")
def chat_llama(tiny_llama, tmp_path_factory) -> str:
    """tiny_llama with a chat template string set on its tokenizer and saved (all offline); RoPE has no learned
    positions, so its config allows 256 (the tiny BPE spends many tokens on a chat)."""
    import json

    from transformers import AutoTokenizer

    path = tmp_path_factory.mktemp("chat_llama") / "m"
    shutil.copytree(tiny_llama, path)
    config = json.loads((path / "config.json").read_text())
    config["max_position_embeddings"] = 256
    (path / "config.json").write_text(json.dumps(config))
    tok = AutoTokenizer.from_pretrained(path)
    tok.chat_template = TEMPLATE
    tok.save_pretrained(path)
    return str(path)


def test_plain_text_roles_and_think_by_hand():
    text = "System: be brief\nuser: hi <think>a</think>\nAssistant: <think>b"
    spans = split_think(text, text_char_spans(text))
    assert [(r, text[a:b]) for r, a, b in spans] == [
        ("system", "System: be brief\n"), ("user", "user: hi "), ("think", "<think>a</think>"), ("user", "\n"),
        ("assistant", "Assistant: "), ("think", "<think>b")]
    # a special token with no characters joins the span after it; the last one the last span
    assert token_spans([("user", 0, 4), ("assistant", 4, 8)], [(0, 0), (0, 2), (2, 4), (4, 8), (0, 0)]) == [
        RoleSpan("user", 0, 3), RoleSpan("assistant", 3, 5)]


def test_chat_template_spans_hold_each_message(chat_llama):
    runner = aw.runner.get_runner(chat_llama)
    chat = aw.runner.chat_prompt(MESSAGES, model=runner)
    assert chat.text.startswith("<|system|>\nThe cat is a cat.") and chat.text.endswith("<|assistant|>\n")
    roles = [s.role for s in chat.roles]
    assert roles == ["system", "user", "assistant", "think", "assistant", "user", "assistant"]
    assert chat.roles[0].start == 0 and chat.roles[-1].stop == len(chat.token_ids)
    assert all(a.stop == b.start for a, b in zip(chat.roles, chat.roles[1:], strict=False)), "spans tile the prompt"
    tok = runner.tokenizer
    said = {i: tok.decode(list(chat.token_ids[s.start:s.stop])) for i, s in enumerate(chat.roles)}
    assert "The cat is a cat." in said[0] and "Where did the cat sit?" in said[1]
    assert said[3] == "<think>the mat</think>" and "On the mat." in said[4] and "Why?" in said[5]
    assert said[6].strip() == "<|assistant|>"


def test_span_share_by_role_sums_the_generations_own_rows(chat_llama):
    runner = aw.runner.get_runner(chat_llama)
    chat = aw.runner.chat_prompt(MESSAGES, model=runner)
    g = aw.generate(chat.text, model=runner, max_new_tokens=4).with_roles(chat)
    assert g.role_names == ["system", "user", "assistant", "think"]
    layer, head = 1, 2
    for role in g.role_names:
        share = g.span_share(role)  # (steps, layers, heads)
        keys = [i for s in g.roles if s.role == role for i in range(s.start, s.stop)]
        by_hand = np.nan_to_num(g.steps_matrix(layer, head))[:, keys].sum(-1)
        np.testing.assert_allclose(share[:, layer, head], by_hand, atol=1e-5)
    total = sum(g.span_share(role) for role in g.role_names)
    np.testing.assert_allclose(total[0], 1.0, atol=1e-5)  # step 0 sees only the prompt, which the roles tile
    assert (total[1:] < 1.0 - 1e-6).all(), "later steps also look at generated tokens, which no role holds"

    w = aw.GenerationView(g, share_by="role", layer=layer)
    lines, labels = w.share()
    assert labels == g.role_names
    for j, role in enumerate(labels):
        np.testing.assert_allclose(lines[:, j], g.span_share(role, layers=[layer])[:, 0].mean(-1), atol=1e-6)
    assert w._share["labels"] == labels and w._meta["roles"][0] == ["system", 0, chat.roles[0].stop]


def test_bad_role_input_is_a_clear_error(tiny_llama, chat_llama):
    with pytest.raises(ValueError, match="has no chat template"):
        aw.runner.chat_prompt(MESSAGES, model=tiny_llama)
    with pytest.raises(ValueError, match="the prompt has no roles"):
        aw.runner.chat_prompt("The cat sat on the mat.", model=tiny_llama)
    g = aw.generate("The cat sat", model=tiny_llama, max_new_tokens=2)
    with pytest.raises(ValueError, match="has no roles"):
        g.span_share("user")
    with pytest.raises(traitlets.TraitError, match="needs a generation with roles"):
        aw.GenerationView(g, share_by="role")
    chat = aw.runner.chat_prompt(MESSAGES, model=chat_llama)
    with pytest.raises(ValueError, match="not this generation's prompt"):
        g.with_roles(chat)
    ok = aw.generate(chat.text, model=chat_llama, max_new_tokens=2).with_roles(chat)
    with pytest.raises(ValueError, match=r"no role 'tool'.*\['system', 'user', 'assistant', 'think'\]"):
        ok.span_share("tool")
    # the template given as a string works on a tokenizer without one
    plain = aw.runner.chat_prompt(MESSAGES[:2], model=tiny_llama, chat_template=TEMPLATE)
    assert [s.role for s in plain.roles] == ["system", "user", "assistant"]
