"""What a generation leaves behind: the tokens a model wrote, its top-k choices at every step, and its attention.

No torch in here (the result layer): :func:`attnwidgets.generate` (``runner/generation.py``) and the teaching kit's
:func:`~attnwidgets.teaching.training.generate_toy` build a :class:`GenerationResult`; views and plots read it.

Notation. The prompt has ``P`` tokens and the model wrote ``N`` (``generated_ids``). The model was *fed* the prompt
and the first ``N - 1`` generated tokens (the last one is never fed back), so ``result`` (an
:class:`~attnwidgets.result.AttentionResult`) holds the attention of those fed positions: for a decoder, ``tokens``
are ``prompt + generated[:-1]`` and step ``t`` (0-based) is query row ``P - 1 + t``, the position that predicted
generated token ``t``; for an encoder-decoder, ``tokens`` are the source (encoder self-attention, once), the decoder
was fed ``decoder start + generated[:-1]`` (``result.target_tokens``) and step ``t`` is decoder row ``t`` of the
``"decoder"`` (self) and ``"cross"`` (over the source) attention.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .attention_stack import LazyStack, block_rows
from .chat_roles import ChatPrompt, RoleSpan, role_names
from .html_repr import repr_html
from .result import AttentionKind, AttentionResult, ModelInfo

__all__ = ["GenerationResult"]


def _prefix(stack: np.ndarray | LazyStack, n_q: int, n_k: int) -> np.ndarray | LazyStack:
    if isinstance(stack, LazyStack):
        return stack.prefix(n_q, n_k)
    return stack[:, :, :n_q, :n_k]


def _indices(value: Any, n: int, what: str) -> list[int]:
    """``None`` (all), an int or a list of ints as a list of indices in ``0..n-1`` (negatives count from the end)."""
    if value is None:
        return list(range(n))
    items = [value] if isinstance(value, (int, np.integer)) and not isinstance(value, bool) else value
    if not isinstance(items, (list, tuple, range, np.ndarray)) or len(items) == 0:
        raise TypeError(f"{what}s must be an integer, a non-empty list of integers or None (all {n}), got "
                        f"{type(value).__name__} {value!r}")
    out = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"a {what} must be an integer, got {type(v).__name__} {v!r}")
        if not -n <= int(v) < n:
            raise IndexError(f"{what} {int(v)} is out of range: the model has {n} {what}s (0..{n - 1})")
        out.append(int(v) % n)
    return out


@dataclass(frozen=True, eq=False)
class GenerationResult:
    """Tokens, top-k predictions and attention of one generation (numpy; see the module notes for the rows).

    Attributes
    ----------
    result : AttentionResult
        Attention over the fed positions (its stacks may be queries and keys: read it with ``head``/``rows``; within
        the dense budget ``result.attention`` is built as usual).
    prompt : str
        The prompt (the source text of an encoder-decoder).
    prompt_tokens : list[str]
        Display text of the prompt's tokens (special tokens included), (P,).
    prompt_ids : np.ndarray
        (P,) int64.
    generated_tokens : list[str]
        Display text of each generated token, (N,).
    generated_ids : np.ndarray
        (N,) int64.
    topk_ids, topk_probs : np.ndarray
        (N, k) int64 and float32: the k most probable next tokens at each step and their probabilities (softmax of
        the model's raw logits, before any temperature, top-p or other logits processor), most probable first.
    topk_tokens : list[list[str]]
        (N, k) display text of ``topk_ids``.
    text : str
        The generated text, decoded by the tokenizer (special tokens left out).
    settings : dict
        How it was generated (``do_sample``, ``seed``, ``max_new_tokens``, ...).
    lens_ids, lens_probs : np.ndarray or None
        (N, L + 1, k') int64 and float32: the logit lens of each step (``generate(..., lens_k=k')``), the top-k'
        tokens read from the new position's residual stream after the embeddings (row 0) and after each layer, through
        the final norm and the unembedding; row L is the step's own distribution. None when not asked for.
    lens_tokens : list or None
        (N, L + 1, k') display text of ``lens_ids``.
    roles : tuple[RoleSpan, ...]
        Who speaks where in a chat prompt (token spans of the prompt; :meth:`with_roles`); empty for a plain prompt.
        ``span_share("user")`` is then the share of each step's attention on the user's turns.

    Examples
    --------
    >>> import numpy as np
    >>> att = np.tril(np.ones((4, 4), np.float32)); att /= att.sum(1, keepdims=True)
    >>> r = AttentionResult.from_arrays(att, ["a", "b", "c", "d"], kind="decoder")
    >>> g = GenerationResult(r, "a b", ["a", "b"], np.array([0, 1]), ["c", "d", "e"], np.array([2, 3, 4]),
    ...                      np.array([[2], [3], [4]]), np.array([[0.9], [0.8], [0.7]], np.float32),
    ...                      [["c"], ["d"], ["e"]], text="c d e")
    >>> g.n_steps, g.step_row(0), g.step_attention(2, 0, 0).tolist()
    (3, 1, [0.25, 0.25, 0.25, 0.25])
    >>> g.steps_matrix(0, 0)[0].tolist()
    [0.5, 0.5, nan, nan]
    >>> g.at_step(1).tokens
    ['a', 'b', 'c']
    """

    _repr_html_ = repr_html  # the compact table a notebook shows (html_repr.py)

    result: AttentionResult
    prompt: str
    prompt_tokens: list[str]
    prompt_ids: np.ndarray
    generated_tokens: list[str]
    generated_ids: np.ndarray
    topk_ids: np.ndarray
    topk_probs: np.ndarray
    topk_tokens: list[list[str]]
    text: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    roles: tuple[RoleSpan, ...] = ()
    lens_ids: np.ndarray | None = None
    lens_probs: np.ndarray | None = None
    lens_tokens: list[list[list[str]]] | None = None

    def __post_init__(self) -> None:
        n = len(self.generated_tokens)
        if n < 1:
            raise ValueError("a generation result needs at least one generated token")
        if self.generated_ids.shape != (n,):
            raise ValueError(f"generated_ids must have shape ({n},), got {self.generated_ids.shape}")
        if self.topk_ids.ndim != 2 or self.topk_ids.shape[0] != n or self.topk_probs.shape != self.topk_ids.shape:
            raise ValueError(f"topk_ids and topk_probs must both be ({n}, k); got {self.topk_ids.shape} and "
                             f"{self.topk_probs.shape}")
        if len(self.topk_tokens) != n or any(len(row) != self.topk_ids.shape[1] for row in self.topk_tokens):
            raise ValueError(f"topk_tokens must be {n} rows of {self.topk_ids.shape[1]} strings")
        if len(self.prompt_tokens) != self.prompt_ids.shape[0]:
            raise ValueError("prompt_tokens and prompt_ids differ in length")
        fed = self._fed()
        if fed != self.first_row + n:
            raise ValueError(f"the attention holds {fed} fed positions; {n} steps from row {self.first_row} need "
                             f"{self.first_row + n}")
        self._check_lens(n)
        for a in (self.prompt_ids, self.generated_ids, self.topk_ids, self.topk_probs, self.lens_ids, self.lens_probs):
            if a is not None:
                a.flags.writeable = False
        for span in self.roles:
            if not isinstance(span, RoleSpan) or span.stop > self.prompt_length:
                raise ValueError(f"role span {span!r} is not a RoleSpan within the prompt's {self.prompt_length} "
                                 "tokens")

    def with_roles(self, roles: ChatPrompt | Any) -> GenerationResult:
        """This generation with the role spans of its prompt: a :class:`~attnwidgets.chat_roles.ChatPrompt` (from
        :func:`attnwidgets.runner.chat_prompt`; its tokens must be this prompt's) or a sequence of
        :class:`~attnwidgets.chat_roles.RoleSpan`.

        >>> import numpy as np
        >>> att = np.tril(np.ones((4, 4), np.float32)); att /= att.sum(1, keepdims=True)
        >>> r = AttentionResult.from_arrays(att, list("abcd"), kind="decoder")
        >>> g = GenerationResult(r, "a b", ["a", "b"], np.array([0, 1]), ["c", "d", "e"], np.array([2, 3, 4]),
        ...                      np.array([[2], [3], [4]]), np.ones((3, 1), np.float32), [["c"], ["d"], ["e"]])
        >>> g.with_roles([RoleSpan("user", 0, 1), RoleSpan("assistant", 1, 2)]).role_names
        ['user', 'assistant']
        """
        if self.is_encoder_decoder:
            raise ValueError("role spans are of a decoder's prompt; an encoder-decoder's source has no chat turns")
        if isinstance(roles, ChatPrompt):
            if tuple(int(i) for i in self.prompt_ids) != roles.token_ids:
                raise ValueError(f"the chat prompt's {len(roles.token_ids)} tokens are not this generation's prompt "
                                 f"({self.prompt_length} tokens): generate from chat.text with the same model")
            spans = tuple(roles.roles)
        else:
            spans = tuple(roles)
        if not spans:
            raise ValueError("no role spans given: the prompt has no roles (build it with "
                             "attnwidgets.runner.chat_prompt)")
        return dataclasses.replace(self, roles=spans)

    def _check_lens(self, n: int) -> None:
        given = [self.lens_ids is not None, self.lens_probs is not None, self.lens_tokens is not None]
        if not any(given):
            return
        if not all(given):
            raise ValueError("lens_ids, lens_probs and lens_tokens come together (or none of them)")
        ids, probs, tokens = self.lens_ids, self.lens_probs, self.lens_tokens
        assert ids is not None and probs is not None and tokens is not None
        if ids.ndim != 3 or ids.shape[0] != n or probs.shape != ids.shape:
            raise ValueError(f"lens_ids and lens_probs must both be ({n}, layers + 1, k); got {ids.shape} and "
                             f"{probs.shape}")
        if len(tokens) != n or any(len(step) != ids.shape[1] or any(len(row) != ids.shape[2] for row in step)
                                   for step in tokens):
            raise ValueError(f"lens_tokens must be {n} x {ids.shape[1]} rows of {ids.shape[2]} strings")

    @property
    def has_lens(self) -> bool:
        """Whether the logit lens of every step was kept (``generate(..., lens_k=...)``)."""
        return self.lens_ids is not None

    def step_lens(self, step: int) -> list[list[tuple[str, float]]]:
        """The logit lens at ``step``: per row (0 the embeddings, then each layer), ``[(token, probability), ...]``
        most probable first. ValueError when the generation kept none."""
        if self.lens_tokens is None or self.lens_probs is None:
            raise ValueError("this generation kept no logit lens: generate with lens_k=5 (attnwidgets.generate(..., "
                             "lens_k=5))")
        s = self._step(step)
        return [[(t, float(p)) for t, p in zip(row, probs, strict=True)]
                for row, probs in zip(self.lens_tokens[s], self.lens_probs[s], strict=True)]

    @property
    def role_names(self) -> list[str]:
        """The roles of :attr:`roles` in order of first appearance (empty without roles)."""
        return role_names(self.roles)

    def _fed(self) -> int:
        r = self.result
        if self.is_encoder_decoder:
            return len(r.target_tokens or [])
        return r.n_tokens

    # -- shape ------------------------------------------------------------------------------------------------------

    @property
    def model(self) -> ModelInfo:
        return self.result.model

    @property
    def is_encoder_decoder(self) -> bool:
        return self.result.cross_attention is not None

    @property
    def n_steps(self) -> int:
        """How many tokens were generated (N)."""
        return len(self.generated_tokens)

    @property
    def prompt_length(self) -> int:
        """Tokens of the prompt (P; the source of an encoder-decoder)."""
        return len(self.prompt_tokens)

    @property
    def first_row(self) -> int:
        """The query row of step 0: ``P - 1`` for a decoder, 0 for an encoder-decoder's decoder."""
        return 0 if self.is_encoder_decoder else self.prompt_length - 1

    @property
    def k(self) -> int:
        return int(self.topk_ids.shape[1])

    @property
    def kinds(self) -> list[AttentionKind]:
        """The attention a step has: ``["self"]``, or ``["decoder", "cross"]`` (the encoder's is not per step)."""
        return ["decoder", "cross"] if self.is_encoder_decoder else ["self"]

    @property
    def default_kind(self) -> AttentionKind:
        """What a view shows first: ``"self"``, or ``"cross"`` (the alignment with the source) for an
        encoder-decoder."""
        return "cross" if self.is_encoder_decoder else "self"

    def key_tokens(self, kind: str | None = None) -> list[str]:
        """Display text of the keys of ``kind``: the fed tokens, or the source for ``"cross"``."""
        kind = self._kind(kind)
        r = self.result
        if kind == "cross":
            return list(r.tokens)
        return list(r.target_tokens or []) if self.is_encoder_decoder else list(r.tokens)

    def _kind(self, kind: str | None) -> str:
        kind = self.default_kind if kind is None else kind
        if kind == "self" and self.is_encoder_decoder:
            kind = "decoder"
        if kind not in self.kinds:
            raise ValueError(f"a generation of this {self.model.kind} model has attention {self.kinds} per step, "
                             f"not {kind!r}")
        return kind

    def _step(self, step: Any) -> int:
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
            raise TypeError(f"step must be an integer, got {type(step).__name__} {step!r}")
        s = int(step)
        if s < 0:
            s += self.n_steps
        if not 0 <= s < self.n_steps:
            raise IndexError(f"step {step} is out of range: {self.n_steps} tokens were generated (steps 0.."
                             f"{self.n_steps - 1})")
        return s

    def step_row(self, step: int) -> int:
        """The query row (of ``result``'s self, or decoder and cross, attention) that predicted token ``step``."""
        return self.first_row + self._step(step)

    # -- attention per step -------------------------------------------------------------------------------------------

    def step_attention(self, step: int, layer: int, head: int = -1, kind: str | None = None) -> np.ndarray:
        """The weights the query of ``step`` puts on the keys that existed then, float32 (keys,).

        Self-attention: the ``P + step`` fed positions up to and including its own (``step_row(step) + 1``);
        cross-attention: every source token. ``head=-1`` is the mean over heads.
        """
        kind = self._kind(kind)
        row = self.step_row(step)
        out = self.result.rows(layer, row, row + 1, kind=kind, head=head)[0]  # type: ignore[arg-type]
        return out if kind == "cross" else out[: row + 1]

    def steps_matrix(self, layer: int, head: int = -1, kind: str | None = None) -> np.ndarray:
        """(N, keys) float32: row ``t`` is step ``t``'s attention; keys that did not exist yet at that step are NaN
        (not 0, which would read as "looked at it and gave it nothing"; views draw NaN as masked, and
        ``np.nansum``/``np.nanmax`` skip it). Cross-attention has no NaN: the source exists from the start."""
        kind = self._kind(kind)
        first = self.first_row
        m = np.array(self.result.rows(layer, first, first + self.n_steps, kind=kind, head=head),  # type: ignore
                     dtype=np.float32)
        if kind != "cross":
            rows = np.arange(first, first + self.n_steps)[:, None]
            m[np.arange(m.shape[1])[None, :] > rows] = np.nan
        return m

    def at_step(self, step: int) -> AttentionResult:
        """The :class:`AttentionResult` of the generation up to ``step``: every fed position up to the query that
        predicted token ``step`` (its last row), so any attention view can show the state at that step."""
        row = self.step_row(step)
        r = self.result
        n = row + 1
        if self.is_encoder_decoder:
            src = r.n_tokens
            ids = r.target_token_ids
            return r.replace(
                target_tokens=list(r.target_tokens or [])[:n],
                target_token_ids=None if ids is None else ids[:n],
                decoder_attention=_prefix(r.stack("decoder"), n, n),
                cross_attention=_prefix(r.stack("cross"), n, src),
            )
        return r.replace(
            tokens=list(r.tokens)[:n], token_ids=r.token_ids[:n], word_ids=r.word_ids[:n],
            segment_ids=r.segment_ids[:n], special_mask=r.special_mask[:n],
            attention=_prefix(r.stack("self"), n, n), outputs={},
        )

    def span_bounds(self, span: Any, kind: str | None = None) -> tuple[int, int]:
        """``span`` as ``(start, stop)`` key positions, checked: a ``(start, stop)`` pair (stop exclusive), a
        ``range`` or a ``slice`` of the keys of ``kind`` that every step sees: the prompt (self-attention; positions
        as in ``result.tokens``) or the source (cross-attention). Negative positions count from the prompt's end.

        Raises TypeError for anything but two integers, ValueError for an empty span, one outside the text, or
        one that reaches into the generated tokens (which not every step has seen yet).

        >>> import numpy as np
        >>> att = np.tril(np.ones((4, 4), np.float32)); att /= att.sum(1, keepdims=True)
        >>> r = AttentionResult.from_arrays(att, list("abcd"), kind="decoder")
        >>> g = GenerationResult(r, "a b", ["a", "b"], np.array([0, 1]), ["c", "d", "e"], np.array([2, 3, 4]),
        ...                      np.array([[2], [3], [4]]), np.ones((3, 1), np.float32), [["c"], ["d"], ["e"]])
        >>> g.span_bounds((0, 2)), g.span_bounds(range(1, 2)), g.span_bounds(slice(-1, None))
        ((0, 2), (1, 2), (1, 2))
        """
        kind = self._kind(kind)
        if kind == "decoder":
            raise ValueError("a span share is of the keys every step has seen: the source (kind='cross') of an "
                             "encoder-decoder; its decoder's own keys are the generated tokens")
        n_prompt = self.result.n_tokens if kind == "cross" else self.prompt_length
        n_text = len(self.key_tokens(kind))
        where = "source" if kind == "cross" else "prompt"
        if isinstance(span, slice):
            if span.step not in (None, 1):
                raise ValueError(f"a span is a contiguous range of tokens; got a slice with step {span.step}")
            start, stop = span.start, span.stop
            start = 0 if start is None else start
            stop = n_prompt if stop is None else stop
        elif isinstance(span, range):
            if span.step != 1:
                raise ValueError(f"a span is a contiguous range of tokens; got a range with step {span.step}")
            start, stop = span.start, span.stop
        elif isinstance(span, (tuple, list)) and len(span) == 2:
            start, stop = span
        else:
            raise TypeError(f"span must be (start, stop) token positions (stop exclusive), a range or a slice; got "
                            f"{type(span).__name__} {span!r}")
        for name, v in (("start", start), ("stop", stop)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"the span's {name} must be an integer token position, got {type(v).__name__} {v!r}")
        asked = (int(start), int(stop))                # as the caller gave it, before negatives count from the end
        start, stop = (v + n_prompt if v < 0 else v for v in asked)
        read = f"({asked[0]}, {asked[1]})" + ("" if (start, stop) == asked else
                                              f" (read as ({start}, {stop}): negative positions count back from "
                                              f"the end of the {where}, {n_prompt} tokens)")
        if stop <= start:
            raise ValueError(f"the span {read} is empty: give (start, stop) with start < stop (stop "
                             f"exclusive), e.g. (0, {n_prompt}) for the whole {where}")
        if start < 0 or stop > n_text:
            raise ValueError(f"the span {read} is outside the text: the keys are {n_text} tokens "
                             f"(0..{n_text - 1}), of which the {where} is 0..{n_prompt - 1}")
        if stop > n_prompt:
            raise ValueError(f"the span {read} overlaps the generated part (positions {n_prompt} and on): "
                             f"a span share is of tokens every step has seen, within the {where} 0..{n_prompt - 1}")
        return start, stop

    def span_share(self, span: Any, heads: Any = None, layers: Any = None, kind: str | None = None) -> np.ndarray:
        """The share of each step's attention that falls on ``span``: (steps, layers, heads) float32.

        ``out[t, i, j]`` is the sum, over the span's keys, of the weights that the query of step ``t`` (the one that
        wrote generated token ``t``) puts on them in layer ``layers[i]``, head ``heads[j]``: a number in [0, 1], the
        fraction of that row's attention on the span. The mean over heads of a layer is ``out.mean(-1)`` (the share
        of the heads' mean row: sums and means commute).

        Read from the rows a block at a time (``result.rows``), so a long generation after a long prompt never
        builds its (steps x keys) or (keys x keys) attention.

        Parameters
        ----------
        span : (start, stop), range, slice or str
            Token positions of the prompt (``result.tokens``), stop exclusive: the prompt itself
            ``(0, g.prompt_length)``, a system prompt, a document. For an encoder-decoder, positions of the source
            (cross-attention). See :meth:`span_bounds` for what is refused. A role's name ("user", "think") when the
            generation has :attr:`roles`: the share on all of that role's turns.
        heads, layers : int, list of int or None
            Which heads and layers (default all), in that order on the axes.
        kind : str
            ``"self"`` (decoders) or ``"cross"`` (the default of an encoder-decoder).

        Examples
        --------
        >>> import numpy as np
        >>> att = np.tril(np.ones((4, 4), np.float32)); att /= att.sum(1, keepdims=True)
        >>> r = AttentionResult.from_arrays(att, ["a", "b", "c", "d"], kind="decoder")
        >>> g = GenerationResult(r, "a b", ["a", "b"], np.array([0, 1]), ["c", "d", "e"], np.array([2, 3, 4]),
        ...                      np.array([[2], [3], [4]]), np.ones((3, 1), np.float32), [["c"], ["d"], ["e"]])
        >>> [round(float(v), 4) for v in g.span_share((0, 2))[:, 0, 0]]   # rows 1, 2, 3 spread evenly over 2, 3, 4 keys
        [1.0, 0.6667, 0.5]
        """
        kind = self._kind(kind)
        if isinstance(span, str):  # a role: the sum over its turns
            if span not in self.role_names:
                raise ValueError(f"no role {span!r} in this generation's prompt: its roles are {self.role_names} "
                                 if self.roles else f"span {span!r} names a role, and this generation has no roles: "
                                 "generate from attnwidgets.runner.chat_prompt(...).text and call with_roles(chat)")
            parts = [self.span_share((s.start, s.stop), heads, layers, kind) for s in self.roles if s.role == span]
            return np.asarray(np.sum(parts, axis=0, dtype=np.float64), dtype=np.float32)
        start, stop = self.span_bounds(span, kind)
        n_layers, n_heads, _T, n_keys = self.result.attention_shape(kind)  # type: ignore[arg-type]
        layer_list = _indices(layers, n_layers, "layer")
        head_list = _indices(heads, n_heads, "head")
        first, n = self.first_row, self.n_steps
        out = np.empty((n, len(layer_list), len(head_list)), np.float32)
        step = block_rows(n_heads, n_keys)
        pick = np.asarray(head_list)
        for i, layer in enumerate(layer_list):
            for a in range(0, n, step):
                b = min(n, a + step)
                block = self.result.rows(layer, first + a, first + b, kind=kind)  # type: ignore[arg-type]
                out[a:b, i, :] = block[pick, :, start:stop].sum(-1, dtype=np.float64).T
        return out

    def step_topk(self, step: int) -> list[tuple[str, float]]:
        """``[(token, probability), ...]`` of step ``step``, most probable first."""
        s = self._step(step)
        return [(t, float(p)) for t, p in zip(self.topk_tokens[s], self.topk_probs[s], strict=True)]

    def __repr__(self) -> str:
        shown = self.text if len(self.text) <= 60 else self.text[:57] + "..."
        return (f"GenerationResult({self.model.name!r}, {self.model.kind}, prompt of {self.prompt_length} tokens, "
                f"{self.n_steps} generated: {shown!r})")
