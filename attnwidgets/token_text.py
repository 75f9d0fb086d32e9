"""What a token reads as: the text it stands for, not the tokenizer's internal spelling of it.

A byte-level BPE tokenizer (GPT-2, RoBERTa, Llama-3, Qwen, and any trained with ``tokenizers``' ``ByteLevel``)
spells each token's UTF-8 *bytes* with one printable character per byte, so `` café`` is stored as ``ĠcafÃ©`` and
`` 東京`` as ``ĠæĿ±äº¬``. A SentencePiece tokenizer with byte fallback (Llama-2, Mistral) spells a byte it has no
piece for as ``<0xE6>``. Here every token is turned back into its bytes and the row's bytes are decoded as UTF-8:

- A token shows the characters whose **last byte** it holds, so `` café`` split as ``Ġc a f Ã ©`` reads
  `` c``, ``a``, ``f``, ``⟨C3⟩``, ``é``: the character appears on the token that completes it, the way text appears
  while a model writes it (a token's text never depends on the tokens after it).
- A token's bytes that do not make a character it completes are shown in hex, ``⟨E6 9D⟩`` (upper case, a space
  between bytes, one marker per run): the first bytes of a character a later token completes (``東`` is E6 9D B1),
  and bytes that never make a character (cut off by a special token, the end of the input, or not UTF-8 at all).
- The leading space stays a leading space (`` café``); the views draw it as ``·café``
  (:func:`attnwidgets.viewdata.labels.token_label`). Newline and tab are themselves (``Ċ`` was byte 0A).
- Special tokens (``<|endoftext|>``, ``[CLS]``) and added tokens are their own text, and a special token ends any
  character being built.

So joining a row's tokens and dropping the markers a following character completes (:func:`merge_partials`) gives
back the text. Before → after, GPT-2 style: ``ĠcafÃ©`` → `` café``; ``ĠæĿ±äº¬`` → `` 東京``; split as
``Ġæ Ŀ± äº¬``: `` ⟨E6⟩``, ``東``, ``京``; ``ðŁĻ Ĥ`` (🙂 = F0 9F 99 82): ``⟨F0 9F 99⟩``, ``🙂``; byte fallback
``<0xE6> <0x9D> <0xB1>``: ``⟨E6⟩``, ``⟨9D⟩``, ``東``. WordPiece tokens (``##ing``) are unchanged.

Pure Python (the result layer): the runner decides which bytes a token stands for, this module makes the text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

__all__ = ["BYTE_MARKER", "INVISIBLE_RANGES", "byte_level_bytes", "byte_marker", "display_tokens", "fallback_byte",
           "is_invisible", "merge_partials", "visible_text"]

#: A run of bytes shown in hex: ``⟨E6 9D⟩``.
BYTE_MARKER = re.compile(r"⟨((?:[0-9A-F]{2} )*[0-9A-F]{2})⟩")
_MARKER_RUN = re.compile(f"(?:{BYTE_MARKER.pattern})+")
_FALLBACK = re.compile(r"<0x([0-9A-Fa-f]{2})>")


@lru_cache(maxsize=1)
def _unicode_to_byte() -> dict[str, int]:
    """The inverse of GPT-2's ``bytes_to_unicode``: printable bytes are themselves, the others are U+0100 onwards."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {chr(b): b for b in printable}
    extra = 0
    for b in range(256):
        if b not in printable:
            table[chr(256 + extra)] = b
            extra += 1
    return table


def byte_level_bytes(token: str) -> bytes | None:
    """The bytes a byte-level BPE token stands for, or None if a character of it is not in the byte alphabet.

    Examples
    --------
    >>> byte_level_bytes("ĠcafÃ©").decode(), byte_level_bytes("æĿ"), byte_level_bytes("東") is None
    (' café', b'\\xe6\\x9d', True)
    """
    table = _unicode_to_byte()
    try:
        return bytes(table[ch] for ch in token)
    except KeyError:
        return None


def fallback_byte(token: str) -> int | None:
    """The byte a SentencePiece byte-fallback token (``<0xE6>``) stands for, else None.

    >>> fallback_byte("<0xE6>"), fallback_byte("<0x0A>"), fallback_byte("▁the")
    (230, 10, None)
    """
    m = _FALLBACK.fullmatch(token)
    return int(m.group(1), 16) if m else None


def byte_marker(data: bytes) -> str:
    """``b"\\xe6\\x9d"`` → ``⟨E6 9D⟩``.

    >>> byte_marker(b"\\xf0\\x9f")
    '⟨F0 9F⟩'
    """
    return "⟨" + " ".join(f"{b:02X}" for b in data) + "⟩"


def _char_length(lead: int) -> int:
    """Length of the UTF-8 sequence a lead byte starts (0 for a continuation or invalid byte)."""
    if lead < 0x80:
        return 1
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 0


def _render(parts: list[str | int]) -> str:
    out: list[str] = []
    run = bytearray()
    for p in parts:
        if isinstance(p, int):
            run.append(p)
            continue
        if run:
            out.append(byte_marker(bytes(run)))
            run.clear()
        out.append(p)
    if run:
        out.append(byte_marker(bytes(run)))
    return "".join(out)


def display_tokens(pieces: Sequence[str | bytes]) -> list[str]:
    """Display text of a row of tokens: ``bytes`` for what a token stands for, ``str`` for a token that is its own
    text (special and added tokens; it also ends any character being built). See the module docstring for the rule.

    Examples
    --------
    >>> display_tokens([b" caf\\xc3\\xa9"])
    [' café']
    >>> display_tokens([b" \\xe6", b"\\x9d\\xb1", b"\\xe4\\xba\\xac"])
    [' ⟨E6⟩', '東', '京']
    >>> display_tokens([b"\\xf0\\x9f\\x99", b"\\x82"]), display_tokens([b"\\xe6\\x9d", "</s>", b"\\xb1a"])
    (['⟨F0 9F 99⟩', '🙂'], ['⟨E6 9D⟩', '</s>', '⟨B1⟩a'])
    """
    parts: list[list[str | int]] = [[] for _ in pieces]
    owner: list[int] = []  # token of each byte of the current stretch of bytes
    data = bytearray()

    def flush() -> None:
        i = 0
        while i < len(data):
            n = _char_length(data[i])
            chunk = bytes(data[i : i + n]) if n else b""
            try:
                ch = chunk.decode("utf-8") if n and len(chunk) == n else ""
            except UnicodeDecodeError:  # a bad continuation, an overlong form or a surrogate
                ch = ""
            if not ch:
                parts[owner[i]].append(data[i])
                i += 1
                continue
            last = owner[i + n - 1]
            for k in range(i, i + n - 1):
                if owner[k] != last:
                    parts[owner[k]].append(data[k])
            parts[last].append(ch)
            i += n
        owner.clear()
        data.clear()

    for t, piece in enumerate(pieces):
        if isinstance(piece, str):
            flush()
            parts[t].append(piece)
        else:
            data.extend(piece)
            owner.extend([t] * len(piece))
    flush()
    return [_render(p) for p in parts]


def merge_partials(text: str) -> str:
    """``text`` (tokens joined) without the marked bytes that the character right after them completes.

    Marked bytes that do not start that character stay marked.

    Examples
    --------
    >>> merge_partials(" ⟨E6⟩東京"), merge_partials("⟨F0 9F⟩⟨99⟩🙂"), merge_partials("⟨E6 9D⟩a")
    (' 東京', '🙂', '⟨E6 9D⟩a')
    >>> merge_partials("⟨B1⟩⟨E6 9D⟩東")
    '⟨B1⟩東'
    """

    def merge(m: re.Match[str]) -> str:
        run = bytes.fromhex(" ".join(BYTE_MARKER.findall(m.group(0))))
        following = text[m.end() : m.end() + 1].encode("utf-8")
        for k in range(min(len(run), len(following) - 1), 0, -1):
            if run[len(run) - k :] == following[:k]:
                return byte_marker(run[: len(run) - k]) if k < len(run) else ""
        return m.group(0)

    return _MARKER_RUN.sub(merge, text)


# -- what is shown of invisible characters (here, below every layer, so html_repr and the views share it) -------

# First and last code point of every character shown as a ⟨U+XXXX⟩ marker: control (Cc) and format (Cf) characters
# of Unicode 17, with the line and paragraph separators U+2028/U+2029 (bidi controls, zero-width characters, the soft
# hyphen, tag characters). A fixed table, the same as INVISIBLE_RANGES in js/src/shared/text.ts, not this Python's
# unicodedata (Unicode 14 on 3.11), so that a figure and a widget mark exactly the same characters.
INVISIBLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x001F), (0x007F, 0x009F), (0x00AD, 0x00AD), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD),
    (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2), (0x180E, 0x180E), (0x200B, 0x200F), (0x2028, 0x202E),
    (0x2060, 0x2064), (0x2066, 0x206F), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
    (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F),
)


def is_invisible(char: str) -> bool:
    """Whether ``char`` is shown as a marker (see ``INVISIBLE_RANGES``).

    Examples
    --------
    >>> is_invisible("\\u202e"), is_invisible("\\u200b"), is_invisible("a"), is_invisible(" ")
    (True, True, False, False)
    """
    c = ord(char)
    return any(lo <= c <= hi for lo, hi in INVISIBLE_RANGES)


def visible_text(text: str) -> str:
    """``text`` with newline as "⏎", tab as "⇥" and every other invisible character as ``⟨U+XXXX⟩``.

    A right-to-left override can then not reverse what follows it, and a zero-width space does not draw a blank.
    The same rule as ``visibleText`` in js/src/shared/text.ts.

    Examples
    --------
    >>> visible_text("abc\\u202edef"), visible_text("\\u200b"), visible_text("a\\tb\\n")
    ('abc⟨U+202E⟩def', '⟨U+200B⟩', 'a⇥b⏎')
    """
    out = []
    for ch in text:
        if ch == "\n":
            out.append("⏎")
        elif ch == "\t":
            out.append("⇥")
        elif is_invisible(ch):
            out.append(f"⟨U+{ord(ch):04X}⟩")
        else:
            out.append(ch)
    return "".join(out)
