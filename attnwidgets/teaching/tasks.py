"""Synthetic sequence-to-sequence tasks for the toy Transformer: tiny vocabularies, deterministic data.

numpy only (no torch). A :class:`Task` knows its vocabulary, how to draw a random source and what the right target
is; :func:`encode_batch` turns (source, target) pairs into padded id arrays for training.

Two tasks:

- ``"reverse"``: a digit string, reversed (``3 1 4`` → ``4 1 3``). Cross-attention learns an anti-diagonal.
- ``"number_words"``: a number's digits, spelled out (``3 4 5`` → ``three hundred forty five``). A small
  "translation" whose alignment is not one-to-one: ``fourteen`` needs two digits, ``hundred`` none of its own.

Examples
--------
>>> task = get_task("reverse")
>>> task.target(["3", "1", "4"])
['4', '1', '3']
>>> get_task("number_words").target(list("1014"))
['one', 'thousand', 'fourteen']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "BOS",
    "EOS",
    "PAD",
    "SEP",
    "Task",
    "Vocab",
    "encode_batch",
    "get_task",
    "held_out_sources",
    "number_to_words",
    "number_words_task",
    "reverse_task",
    "sample_pairs",
]

PAD, BOS, EOS, SEP = "<pad>", "<bos>", "<eos>", "<sep>"
SPECIALS = (PAD, BOS, EOS, SEP)
DIGITS = tuple("0123456789")
ONES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
        "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")


@dataclass(frozen=True)
class Vocab:
    """A fixed list of tokens; ids are positions in the list. ``<pad>`` is always id 0.

    Examples
    --------
    >>> v = Vocab(("<pad>", "<bos>", "<eos>", "<sep>", "a", "b"))
    >>> v.encode(["a", "b"]).tolist(), v.decode([5, 4, 2, 4])
    ([4, 5], ['b', 'a'])
    """

    tokens: tuple[str, ...]
    index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.tokens[: len(SPECIALS)] != SPECIALS:
            raise ValueError(f"a vocabulary starts with the special tokens {SPECIALS}")
        object.__setattr__(self, "index", {t: i for i, t in enumerate(self.tokens)})

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def pad_id(self) -> int:
        return self.index[PAD]

    @property
    def bos_id(self) -> int:
        return self.index[BOS]

    @property
    def eos_id(self) -> int:
        return self.index[EOS]

    @property
    def sep_id(self) -> int:
        return self.index[SEP]

    def encode(self, tokens: Sequence[str]) -> np.ndarray:
        """Token strings → (n,) int64 ids; unknown tokens raise ``KeyError`` naming the vocabulary."""
        try:
            return np.array([self.index[t] for t in tokens], dtype=np.int64)
        except KeyError as e:
            raise KeyError(f"token {e.args[0]!r} is not in this task's vocabulary {list(self.tokens)}") from None

    def decode(self, ids: Sequence[int] | np.ndarray) -> list[str]:
        """Ids → token strings, stopping at the first ``<eos>`` and dropping ``<pad>``/``<bos>``."""
        out = []
        for i in np.asarray(ids).tolist():
            if i == self.eos_id:
                break
            if i not in (self.pad_id, self.bos_id):
                out.append(self.tokens[i])
        return out


@dataclass(frozen=True)
class Task:
    """A synthetic sequence-to-sequence task.

    Attributes
    ----------
    name : str
        ``"reverse"`` or ``"number_words"``.
    vocab : Vocab
        One vocabulary shared by source and target (the model ties its embeddings).
    draw : Callable[[np.random.Generator], list[str]]
        Draws one random source (a list of tokens).
    target : Callable[[Sequence[str]], list[str]]
        The correct target for a source.
    max_source_len, max_target_len : int
        Longest source and target, without special tokens.
    """

    name: str
    vocab: Vocab
    draw: Callable[[np.random.Generator], list[str]] = field(repr=False)
    target: Callable[[Sequence[str]], list[str]] = field(repr=False)
    max_source_len: int
    max_target_len: int

    def parse(self, source: str | Sequence[str]) -> list[str]:
        """A source as tokens: ``"3 1 4"`` or ``"314"`` or ``["3", "1", "4"]`` all give ``["3", "1", "4"]``."""
        if isinstance(source, str):
            tokens = source.split() if " " in source.strip() else list(source.strip())
        else:
            tokens = list(source)
        self.vocab.encode(tokens)  # raises on unknown tokens
        if not 1 <= len(tokens) <= self.max_source_len:
            raise ValueError(f"{self.name}: sources have 1..{self.max_source_len} tokens, got {len(tokens)}")
        return tokens


def reverse_task(min_len: int = 3, max_len: int = 8) -> Task:
    """Reverse a string of ``min_len..max_len`` digits: ``3 1 4 1 5`` → ``5 1 4 1 3``."""

    def draw(rng: np.random.Generator) -> list[str]:
        n = int(rng.integers(min_len, max_len + 1))
        return [DIGITS[d] for d in rng.integers(0, 10, n)]

    return Task("reverse", Vocab(SPECIALS + DIGITS), draw, lambda src: list(src)[::-1], max_len, max_len)


def number_to_words(n: int) -> list[str]:
    """English words for ``0 <= n <= 9999``, without "and": 2007 → two thousand seven.

    Examples
    --------
    >>> " ".join(number_to_words(345)), " ".join(number_to_words(9018))
    ('three hundred forty five', 'nine thousand eighteen')
    """
    if not 0 <= n <= 9999:
        raise ValueError(f"number_to_words handles 0..9999, got {n}")
    if n == 0:
        return ["zero"]
    words: list[str] = []
    thousands, rest = divmod(n, 1000)
    hundreds, rest = divmod(rest, 100)
    if thousands:
        words += [ONES[thousands], "thousand"]
    if hundreds:
        words += [ONES[hundreds], "hundred"]
    if 0 < rest < 20:
        words.append(ONES[rest])
    elif rest >= 20:
        words.append(TENS[rest // 10])
        if rest % 10:
            words.append(ONES[rest % 10])
    return words


def number_words_task(max_value: int = 9999) -> Task:
    """Spell out a number given as digits: ``3 4 5`` → ``three hundred forty five`` (0..max_value, ≤ 9999)."""
    words = tuple(dict.fromkeys([*ONES, *TENS[2:], "hundred", "thousand"]))

    def draw(rng: np.random.Generator) -> list[str]:
        return list(str(int(rng.integers(0, max_value + 1))))

    def target(src: Sequence[str]) -> list[str]:
        return number_to_words(int("".join(src)))

    return Task("number_words", Vocab(SPECIALS + DIGITS + words), draw, target, len(str(max_value)), 6)


_TASKS: dict[str, Callable[[], Task]] = {"reverse": reverse_task, "number_words": number_words_task,
                                         # 3 or 4 digits: the generation demo of notebook 06 §3 (a shipped run)
                                         "reverse_short": lambda: reverse_task(3, 4)}


def get_task(task: str | Task) -> Task:
    """A task by name (``"reverse"``, ``"reverse_short"`` of 3 or 4 digits, ``"number_words"``), or the task itself."""
    if isinstance(task, Task):
        return task
    if task not in _TASKS:
        raise ValueError(f"unknown task {task!r}; choose one of {sorted(_TASKS)} or pass a Task")
    return _TASKS[task]()


def held_out_sources(task: Task, n: int, seed: int = 0) -> list[tuple[str, ...]]:
    """``n`` distinct sources kept out of training (deterministic for a seed), for exact-match evaluation.

    Examples
    --------
    >>> held_out_sources(get_task("reverse"), 2, seed=0) == held_out_sources(get_task("reverse"), 2, seed=0)
    True
    """
    rng = np.random.default_rng([seed, 1])  # its own stream, apart from the training data's
    seen: dict[tuple[str, ...], None] = {}
    for _ in range(100 * n):
        seen.setdefault(tuple(task.draw(rng)), None)
        if len(seen) == n:
            return list(seen)
    raise ValueError(f"{task.name} has fewer than {n} distinct sources; ask for fewer held-out examples")


def sample_pairs(
    task: Task, rng: np.random.Generator, n: int, exclude: set[tuple[str, ...]] | frozenset = frozenset()
) -> list[tuple[list[str], list[str]]]:
    """``n`` random (source, target) pairs whose sources are not in ``exclude`` (the held-out set)."""
    pairs: list[tuple[list[str], list[str]]] = []
    while len(pairs) < n:
        src = task.draw(rng)
        if tuple(src) not in exclude:
            pairs.append((src, task.target(src)))
    return pairs


def encode_batch(
    vocab: Vocab, pairs: Sequence[tuple[Sequence[str], Sequence[str]]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs → padded id arrays ``(src, tgt_in, tgt_out)``, each (B, length) int64, padded with ``<pad>`` (0).

    ``src`` is ``source + <eos>``; the decoder reads ``tgt_in = <bos> + target`` and learns to predict
    ``tgt_out = target + <eos>``, one position ahead (teacher forcing).

    Examples
    --------
    >>> v = get_task("reverse").vocab
    >>> src, tgt_in, tgt_out = encode_batch(v, [(["1", "2"], ["2", "1"])])
    >>> [v.tokens[i] for i in src[0]], [v.tokens[i] for i in tgt_in[0]], [v.tokens[i] for i in tgt_out[0]]
    (['1', '2', '<eos>'], ['<bos>', '2', '1'], ['2', '1', '<eos>'])
    """
    srcs = [[*vocab.encode(s), vocab.eos_id] for s, _ in pairs]
    tgts = [vocab.encode(t).tolist() for _, t in pairs]

    def pad(rows: list[list[int]]) -> np.ndarray:
        out = np.full((len(rows), max(len(r) for r in rows)), vocab.pad_id, dtype=np.int64)
        for b, r in enumerate(rows):
            out[b, : len(r)] = r
        return out

    return pad(srcs), pad([[vocab.bos_id, *t] for t in tgts]), pad([[*t, vocab.eos_id] for t in tgts])
