"""Who speaks where in a chat prompt: role spans of the tokens (system, user, assistant) and ``<think>`` segments.

Pure Python (no torch, no numpy): the runner renders a chat template and tokenises
(:func:`attnwidgets.runner.chat.chat_prompt`); here a rendered prompt is split into the characters each message holds
(:func:`chat_char_spans`, from the messages; :func:`text_char_spans`, from plain "System:/User:/Assistant:" lines),
``<think>…</think>`` segments are split off as their own "think" spans (:func:`split_think`), and the character spans
become token spans (:func:`token_spans`) from the tokenizer's offsets. A :class:`~attnwidgets.GenerationResult` holds
the token spans (``roles``) and shares each step's attention by role (``span_share("user")``).

Examples
--------
>>> text = "System: be brief\\nUser: hi\\nAssistant: <think>greet</think> hello"
>>> [(role, text[a:b]) for role, a, b in split_think(text, text_char_spans(text))][2:]
[('assistant', 'Assistant: '), ('think', '<think>greet</think>'), ('assistant', ' hello')]
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["ChatPrompt", "RoleSpan", "chat_char_spans", "role_names", "split_think", "text_char_spans", "token_spans"]

CharSpan = tuple[str, int, int]  # (role, first character, end character)

_MARKER = re.compile(r"^[ \t]*(system|user|assistant|human|ai|bot)[ \t]*:", re.IGNORECASE | re.MULTILINE)
_ALIASES = {"human": "user", "ai": "assistant", "bot": "assistant"}
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL)


@dataclass(frozen=True)
class RoleSpan:
    """Tokens ``start..stop-1`` of a prompt (stop exclusive) spoken by ``role`` ("system", "user", "assistant",
    "think", or a template's own role name)."""

    role: str
    start: int
    stop: int

    def __post_init__(self) -> None:
        if not self.role or self.stop <= self.start or self.start < 0:
            raise ValueError(f"a role span needs a role and tokens start < stop, got {self!r}")


@dataclass(frozen=True)
class ChatPrompt:
    """A prompt and who speaks where in it: made by :func:`attnwidgets.runner.chat_prompt`.

    Attributes
    ----------
    text : str
        The prompt to generate from (a chat template's output, or the plain text given).
    roles : tuple[RoleSpan, ...]
        Token spans of each turn (and ``<think>`` segment), positions of the prompt's tokens as the model's tokenizer
        makes them (its special tokens included).
    token_ids : tuple[int, ...]
        Those tokens, so that a generation from another tokenisation is refused.
    """

    text: str
    roles: tuple[RoleSpan, ...]
    token_ids: tuple[int, ...]


def text_char_spans(text: str) -> list[CharSpan]:
    """The characters each role holds in plain chat text: a line starting "System:", "User:" or "Assistant:"
    ("Human:", "AI:" and "Bot:" too, any case) starts a turn that lasts until the next. Text before the first
    marker is left out. ValueError when no line starts with a role.

    >>> text_char_spans("User: hi\\nAssistant: hello")
    [('user', 0, 9), ('assistant', 9, 25)]
    """
    marks = list(_MARKER.finditer(text))
    if not marks:
        raise ValueError("the prompt has no roles: no line starts with 'System:', 'User:' or 'Assistant:'. Write "
                         "the prompt as such lines, or build it from messages with a chat template "
                         "(attnwidgets.runner.chat_prompt([{'role': 'user', 'content': ...}], model=...))")
    ends = [m.start() for m in marks[1:]] + [len(text)]
    out = []
    for m, end in zip(marks, ends, strict=True):
        role = m.group(1).lower()
        out.append((_ALIASES.get(role, role), m.start(), end))
    return out


def chat_char_spans(rendered: str, messages: Sequence[Mapping[str, str]]) -> list[CharSpan]:
    """The characters each message holds in ``rendered`` (a chat template's output): message i runs from where
    message i - 1 ended to the end of its content, so a turn's header tokens ("<|user|>") are its role's. What
    follows the last message (the generation prompt a template adds: "<|assistant|>") is the assistant's.

    ValueError when a message's content is not found, in order, in the rendered text.

    >>> chat_char_spans("<s>[U]hi[A]hello[A]", [{"role": "user", "content": "hi"},
    ...                                          {"role": "assistant", "content": "hello"}])
    [('user', 0, 8), ('assistant', 8, 16), ('assistant', 16, 19)]
    """
    out: list[CharSpan] = []
    at = 0
    for i, message in enumerate(messages):
        role, content = str(message.get("role", "")), str(message.get("content", ""))
        if not role:
            raise ValueError(f"message {i} has no 'role': give messages as {{'role': ..., 'content': ...}}")
        where = rendered.find(content.strip(), at) if content.strip() else at
        if where < 0:
            raise ValueError(f"message {i} ({role}) is not in the rendered prompt after the earlier messages: the "
                             "chat template changes its text, so its role span cannot be found")
        end = where + len(content.strip())
        if end > at:
            out.append((role, at, end))
        at = end
    if at < len(rendered):
        out.append(("assistant", at, len(rendered)))
    return out


def split_think(text: str, spans: Sequence[CharSpan]) -> list[CharSpan]:
    """``spans`` with every ``<think>…</think>`` segment (an unclosed one runs to the end) split off as a "think"
    span; the parts of a turn before and after it keep the turn's role."""
    out: list[CharSpan] = []
    for role, a, b in spans:
        at = a
        for m in _THINK.finditer(text, a, b):
            if m.start() > at:
                out.append((role, at, m.start()))
            out.append(("think", m.start(), min(m.end(), b)))
            at = min(m.end(), b)
        if at < b:
            out.append((role, at, b))
    return out


def token_spans(spans: Sequence[CharSpan], offsets: Sequence[tuple[int, int]]) -> list[RoleSpan]:
    """Token spans from character spans and each token's ``(start, end)`` characters (a tokenizer's offset mapping).

    A token belongs to the span holding its first character; a token with no characters (a special token the
    tokenizer added, offsets ``(0, 0)``) to the span of the token after it (the last span at the end). Neighbouring
    tokens of one span make one :class:`RoleSpan`.

    >>> token_spans([("user", 0, 9), ("assistant", 9, 25)], [(0, 0), (0, 4), (4, 9), (9, 18), (18, 25)])
    [RoleSpan(role='user', start=0, stop=3), RoleSpan(role='assistant', start=3, stop=5)]
    """
    def span_of(char: int) -> int | None:
        return next((i for i, (_r, a, b) in enumerate(spans) if a <= char < b), None)

    owner: list[int | None] = [None if e <= s else span_of(s) for s, e in offsets]
    for i in range(len(owner) - 1, -1, -1):  # empty tokens join the span after them
        if owner[i] is None and offsets[i][1] <= offsets[i][0]:
            owner[i] = owner[i + 1] if i + 1 < len(owner) else (len(spans) - 1 if spans else None)
    out: list[RoleSpan] = []
    for i, k in enumerate(owner):
        if k is None:
            continue
        if out and out[-1].role == spans[k][0] and out[-1].stop == i:
            out[-1] = RoleSpan(out[-1].role, out[-1].start, i + 1)
        else:
            out.append(RoleSpan(spans[k][0], i, i + 1))
    return out


def role_names(spans: Sequence[RoleSpan]) -> list[str]:
    """The roles in order of first appearance.

    >>> role_names([RoleSpan("user", 0, 2), RoleSpan("assistant", 2, 4), RoleSpan("user", 4, 5)])
    ['user', 'assistant']
    """
    return list(dict.fromkeys(s.role for s in spans))
