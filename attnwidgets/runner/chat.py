"""Chat prompts with their roles: a tokenizer's chat template (or plain "User:" lines) rendered, tokenised, and split
into the token spans each role speaks (:mod:`attnwidgets.chat_roles` does the splitting; here the tokenizer runs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..chat_roles import ChatPrompt, chat_char_spans, split_think, text_char_spans, token_spans
from .runner import Runner, get_runner

__all__ = ["chat_prompt"]


def chat_prompt(prompt: str | Sequence[Mapping[str, str]], *, model: str | Runner | None = None,
                revision: str | None = None, chat_template: str | None = None,
                add_generation_prompt: bool = True) -> ChatPrompt:
    """Render and split a chat prompt into role spans of the model's tokens, ready for :func:`attnwidgets.generate`
    and :meth:`attnwidgets.GenerationResult.with_roles`.

    Parameters
    ----------
    prompt : str or list of {"role": ..., "content": ...}
        Messages, rendered with the tokenizer's chat template (or ``chat_template``); or plain text whose lines
        start with "System:", "User:" or "Assistant:". ``<think>…</think>`` in either becomes a "think" span.
    model : str | Runner, optional
        Whose tokenizer (and chat template); the bundled model by default.
    chat_template : str, optional
        A Jinja chat template to use instead of the tokenizer's own.
    add_generation_prompt : bool
        Messages only: end with the template's assistant header, so the model answers (default True).

    Returns
    -------
    ChatPrompt
        ``text``, ``roles`` (token spans) and ``token_ids``.

    Raises
    ------
    ValueError
        Messages for a tokenizer with no chat template (and none given), plain text with no role lines, a message
        the template's output does not contain.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> chat = aw.runner.chat_prompt("User: The cat sat.\\nAssistant: It did.")
    >>> [(s.role, s.start, s.stop) for s in chat.roles]   # [CLS] joins the user's turn, [SEP] the assistant's
    [('user', 0, 7), ('assistant', 7, 13)]
    """
    runner = get_runner(model, revision)
    tok = runner.tokenizer
    if isinstance(prompt, str):
        text = prompt
        chars = text_char_spans(text)
    else:
        messages = [dict(m) for m in prompt]
        template = chat_template if chat_template is not None else getattr(tok, "chat_template", None)
        if not template:
            raise ValueError(f"the tokenizer of {runner.info.name!r} has no chat template: pass "
                             "chat_template='...' (a Jinja template), or give the prompt as plain text with "
                             "'System:', 'User:' and 'Assistant:' lines")
        rendered: Any = tok.apply_chat_template(messages, chat_template=template, tokenize=False,
                                                add_generation_prompt=add_generation_prompt)
        text = str(rendered)
        chars = chat_char_spans(text, messages)
    chars = split_think(text, chars)
    enc = tok(text, return_offsets_mapping=True, verbose=False)  # as generate() tokenises: special tokens added
    offsets = [(int(a), int(b)) for a, b in enc["offset_mapping"]]
    roles = token_spans(chars, offsets)
    if not roles:
        raise ValueError("the prompt has no tokens inside any role's turn")
    return ChatPrompt(text=text, roles=tuple(roles), token_ids=tuple(int(i) for i in enc["input_ids"]))
