"""A small Transformer written to be read: encoder-decoder (Vaswani et al. 2017) and a decoder-only variant (GPT).

Torch on purpose: the runner is otherwise the only module that imports torch, and the teaching kit is the second,
deliberate exception because it *is* a model. Keep it out of analysis code; use
:func:`attnwidgets.teaching.training.attention_result` to get a plain numpy
:class:`~attnwidgets.result.AttentionResult` out of it.

Shapes follow nanoGPT: ``B`` batch, ``T`` query positions, ``S`` key positions, ``C`` model width ``d_model``,
``nh`` heads, ``hs`` head size (``C / nh``), ``V`` vocabulary. Every :class:`MultiHeadAttention` keeps the
weights of its last forward pass in ``.weights`` (B, nh, T, S), so you can look at them after any call.

Examples
--------
>>> import torch
>>> cfg = TransformerConfig(vocab_size=14, d_model=32, n_heads=4)
>>> model = EncoderDecoderTransformer(cfg)
>>> src, tgt = torch.randint(4, 14, (2, 5)), torch.randint(4, 14, (2, 3))
>>> model(src, tgt).shape                                      # (B, T, V)
torch.Size([2, 3, 14])
>>> model.decoder[0].cross_attn.weights.shape                  # (B, nh, T, S)
torch.Size([2, 4, 3, 5])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, cast

import torch
import torch.nn.functional as F
from torch import nn

from ..viewdata import positional

__all__ = [
    "DecoderLayer",
    "DecoderOnlyTransformer",
    "EncoderDecoderTransformer",
    "EncoderLayer",
    "FeedForward",
    "MultiHeadAttention",
    "RMSNorm",
    "TransformerConfig",
    "scaled_dot_product_attention",
]


@dataclass
class TransformerConfig:
    """Sizes and choices of the toy Transformer.

    Attributes
    ----------
    vocab_size : int
        Tokens in the (shared source/target) vocabulary.
    d_model : int
        Model width C. The original Transformer used 512; 64 is plenty for a digit task.
    n_heads : int
        Query heads per attention layer (original: 8 heads of 64).
    n_kv_heads : int | None
        Key/value heads; ``None`` = ``n_heads`` (multi-head), 1 = multi-query, in between = grouped-query.
    n_encoder_layers, n_decoder_layers : int
        Depth of each stack (the decoder-only model uses ``n_decoder_layers``).
    d_ff : int
        Hidden width of the feed-forward block (original: 4 × d_model).
    max_len : int
        Most positions the position encoding covers.
    dropout : float
        Dropout on attention weights and residual branches (0 for the toy tasks: the data is endless).
    positional : {"sinusoidal", "learned", "rope", "alibi"}
        Added to the token embeddings: fixed sin/cos encodings (the paper) or a learned table of ``max_len`` rows
        (BERT, GPT-2). Inside self-attention instead, with nothing added to the embeddings: ``"rope"`` rotates each
        head's queries and keys by their positions (Su et al. 2021; RoFormer's interleaved pairs) and ``"alibi"`` adds
        ``−slope_h · |i − j|`` to the logits (Press et al. 2022); neither has a table, so neither has a longest input.
        The angles and slopes are :mod:`attnwidgets.viewdata.positional`'s, the functions the explorer draws.
    norm_first : bool
        Pre-norm ``x + f(norm(x))`` (today's default, trains easily) or post-norm ``norm(x + f(x))`` (the paper).
    norm : {"layer", "rms"}
        LayerNorm (the paper, BERT) or RMSNorm (Llama).
    pad_id : int
        Id of ``<pad>``: padded keys are masked out.
    """

    vocab_size: int
    d_model: int = 64
    n_heads: int = 4
    n_kv_heads: int | None = None
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    d_ff: int = 256
    max_len: int = 64
    dropout: float = 0.0
    positional: Literal["sinusoidal", "learned", "rope", "alibi"] = "sinusoidal"
    norm_first: bool = True
    norm: Literal["layer", "rms"] = "layer"
    pad_id: int = 0

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        kv = self.n_kv_heads or self.n_heads
        if self.n_heads % kv:
            raise ValueError(f"n_kv_heads ({kv}) must divide n_heads ({self.n_heads})")
        if self.positional not in ("sinusoidal", "learned", "rope", "alibi"):
            raise ValueError(f"positional must be 'sinusoidal', 'learned', 'rope' or 'alibi', got {self.positional!r}")
        if self.positional == "rope" and self.head_dim % 2:
            raise ValueError(f"rope rotates pairs of dimensions: the head size ({self.head_dim}) must be even")
        if self.norm not in ("layer", "rms"):
            raise ValueError(f"norm must be 'layer' or 'rms', got {self.norm!r}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


def scaled_dot_product_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None, dropout: float = 0.0,
    bias: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``softmax(q kᵀ / √hs) v``, returning the output *and* the weights.

    Parameters
    ----------
    q : (B, nh, T, hs) queries.
    k, v : (B, nh, S, hs) keys and values.
    mask : bool tensor broadcastable to (B, nh, T, S), optional
        True where a query may attend to a key.
    dropout : float
        Dropout on the weights (training only).
    bias : tensor broadcastable to (B, nh, T, S), optional
        Added to the scaled logits before the mask and the softmax (ALiBi's distance penalty).

    Returns
    -------
    out : (B, nh, T, hs)
    weights : (B, nh, T, S), rows sum to 1 over allowed keys.

    Why divide by √hs: for random q, k with unit-variance entries, ``q · k`` has variance ``hs``; without the
    scale, wide heads give logits so large that the softmax is nearly one-hot and its gradients vanish.

    Examples
    --------
    >>> q = k = v = torch.eye(2).view(1, 1, 2, 2)
    >>> out, w = scaled_dot_product_attention(q, k, v)
    >>> w.sum(-1).tolist()
    [[[1.0, 1.0]]]
    """
    hs = q.size(-1)
    att = q @ k.transpose(-2, -1) / math.sqrt(hs)  # (B, nh, T, hs) @ (B, nh, hs, S) -> (B, nh, T, S)
    if bias is not None:
        att = att + bias
    if mask is not None:
        att = att.masked_fill(~mask, float("-inf"))
    att = F.softmax(att, dim=-1)
    if dropout:
        att = F.dropout(att, p=dropout)
    return att @ v, att  # (B, nh, T, S) @ (B, nh, S, hs) -> (B, nh, T, hs)


class MultiHeadAttention(nn.Module):
    """Multi-head attention: ``nh`` heads of size ``hs``, concatenated and projected back to C.

    Self-attention when ``context`` is None (keys and values from ``x``), cross-attention otherwise (keys and values
    from the encoder's output). With ``n_kv_heads < n_heads`` the key/value projections are smaller and each group
    of ``n_heads / n_kv_heads`` query heads shares one K/V head (GQA; MQA when ``n_kv_heads == 1``); see
    :func:`attnwidgets.teaching.masks.kv_head_for_query_head` for the mapping.

    ``position`` puts position into self-attention itself: ``"rope"`` rotates q and k, ``"alibi"`` adds a bias by
    distance (see :class:`TransformerConfig`); None (cross-attention, or position added to the embeddings) adds none.

    The weights of the last forward pass stay in ``self.weights`` (B, nh, T, S), detached.
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int | None = None, dropout: float = 0.0,
                 position: Literal["rope", "alibi"] | None = None) -> None:
        super().__init__()
        self.position = position
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads or n_heads
        self.head_dim = d_model // n_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, n_heads * self.head_dim)
        self.k_proj = nn.Linear(d_model, self.n_kv_heads * self.head_dim)  # smaller under GQA/MQA
        self.v_proj = nn.Linear(d_model, self.n_kv_heads * self.head_dim)
        self.out_proj = nn.Linear(n_heads * self.head_dim, d_model)
        self.weights: torch.Tensor | None = None

    def forward(
        self, x: torch.Tensor, context: torch.Tensor | None = None, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``x`` (B, T, C) queries; ``context`` (B, S, C) keys/values (default ``x``); ``mask`` → (B, nh, T, S)."""
        context = x if context is None else context
        B, T, _ = x.shape  # (B, T, C)
        S = context.size(1)
        q = self.q_proj(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, nh, T, hs)
        k = self.k_proj(context).view(B, S, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, nkv, S, hs)
        v = self.v_proj(context).view(B, S, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, nkv, S, hs)
        if self.n_kv_heads != self.n_heads:  # each K/V head serves a group of consecutive query heads
            group = self.n_heads // self.n_kv_heads
            k = k.repeat_interleave(group, dim=1)  # (B, nh, S, hs)
            v = v.repeat_interleave(group, dim=1)
        bias = None
        if self.position == "rope":  # rotate pair i of the query at m by m·θ_i, of the key at n by n·θ_i
            q, k = rotate_pairs(q, T), rotate_pairs(k, S)
        elif self.position == "alibi":  # −slope_h · |i − j| on the logits; the mask keeps a decoder causal
            bias = torch.from_numpy(positional.alibi_bias(T, S, n_heads=self.n_heads, causal=False)).to(q)
        y, att = scaled_dot_product_attention(q, k, v, mask, self.dropout if self.training else 0.0, bias)
        self.weights = att.detach()  # (B, nh, T, S): what the widgets show
        y = y.transpose(1, 2).contiguous().view(B, T, self.n_heads * self.head_dim)  # re-assemble heads: (B, T, C)
        return self.out_proj(y)


def rotate_pairs(x: torch.Tensor, n_positions: int) -> torch.Tensor:
    """RoPE on (B, nh, T, hs) queries or keys at positions ``0 .. T-1``: each pair ``(x[2i], x[2i+1])`` rotated by
    ``m θ_i``, the angles of :func:`attnwidgets.viewdata.positional.rope_angles` (the torch twin of its
    :func:`~attnwidgets.viewdata.positional.apply_rope`, so that gradients flow through it).

    >>> x = torch.tensor([[1.0, 0.0]] * 3).view(1, 1, 3, 2)
    >>> [[round(v, 4) for v in row] for row in rotate_pairs(x, 3)[0, 0].tolist()]   # rotated by 0, 1 and 2 radians
    [[1.0, 0.0], [0.5403, 0.8415], [-0.4161, 0.9093]]
    """
    angles = torch.from_numpy(positional.rope_angles(n_positions, x.size(-1))).to(x)  # (T, hs/2)
    cos, sin = angles.cos(), angles.sin()
    x1, x2 = x[..., 0::2], x[..., 1::2]  # (B, nh, T, hs/2) each
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)  # re-interleave


class RMSNorm(nn.Module):
    """RMSNorm (Zhang & Sennrich 2019; Llama): ``x / rms(x) · g``, no mean subtraction and no bias."""

    def __init__(self, d_model: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def make_norm(cfg: TransformerConfig) -> nn.Module:
    """LayerNorm or RMSNorm, as the config says."""
    return RMSNorm(cfg.d_model) if cfg.norm == "rms" else nn.LayerNorm(cfg.d_model)


class FeedForward(nn.Module):
    """Position-wise feed-forward block: Linear(C → d_ff), ReLU, Linear(d_ff → C)."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(cfg.d_model, cfg.d_ff), nn.ReLU(), nn.Linear(cfg.d_ff, cfg.d_model), nn.Dropout(cfg.dropout)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)  # (B, T, C)


class _Residual(nn.Module):
    """``x + f(norm(x))`` (pre-norm) or ``norm(x + f(x))`` (post-norm, as in the paper)."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.norm = make_norm(cfg)
        self.norm_first = cfg.norm_first
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, f: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:  # f: (B,T,C)->same
        if self.norm_first:
            return x + self.drop(f(self.norm(x)))
        return self.norm(x + self.drop(f(x)))


def _inside(cfg: TransformerConfig) -> Literal["rope", "alibi"] | None:
    """The position scheme self-attention applies itself (None: position is added to the embeddings)."""
    return cfg.positional if cfg.positional in ("rope", "alibi") else None  # type: ignore[return-value]


class EncoderLayer(nn.Module):
    """Self-attention, then feed-forward, each with a residual.

    In the encoder the mask only hides padding, so every source token sees every other one; the decoder-only model
    reuses this block with a causal mask.
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.dropout, _inside(cfg))
        self.ff = FeedForward(cfg)
        self.res1, self.res2 = _Residual(cfg), _Residual(cfg)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        x = self.res1(x, lambda h: self.self_attn(h, mask=mask))  # (B, S, C)
        return self.res2(x, self.ff)


class DecoderLayer(nn.Module):
    """Masked (causal) self-attention over the target so far, cross-attention to the encoder output, feed-forward."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.dropout, _inside(cfg))
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.dropout)
        self.ff = FeedForward(cfg)
        self.res1, self.res2, self.res3 = _Residual(cfg), _Residual(cfg), _Residual(cfg)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        self_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        x = self.res1(x, lambda h: self.self_attn(h, mask=self_mask))  # (B, T, C), causal
        x = self.res2(x, lambda h: self.cross_attn(h, context=memory, mask=memory_mask))  # queries T, keys S
        return self.res3(x, self.ff)


def _recorded(attn: MultiHeadAttention) -> torch.Tensor:
    """The weights an attention module kept from its last forward pass."""
    if attn.weights is None:
        raise RuntimeError("no attention recorded yet: run the model on an input first")
    return attn.weights


def causal_mask(T: int, device: torch.device | None = None) -> torch.Tensor:
    """(1, 1, T, T) bool, True on and below the diagonal: position i sees positions ≤ i."""
    return torch.tril(torch.ones(T, T, dtype=torch.bool, device=device)).view(1, 1, T, T)


class _Embedding(nn.Module):
    """Token embedding × √C (as in the paper) plus sinusoidal or learned positions (RoPE and ALiBi: nothing added
    here; self-attention applies them)."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        nn.init.normal_(self.tok.weight, std=cfg.d_model**-0.5)  # × √C below gives unit scale, like the positions
        self.scale = math.sqrt(cfg.d_model)
        self.pos: torch.Tensor | None
        if cfg.positional == "sinusoidal":  # fixed: a buffer, not a parameter
            pe = torch.from_numpy(positional.sinusoidal(cfg.max_len, cfg.d_model))
            self.register_buffer("pos", pe, persistent=False)  # (max_len, C)
        elif cfg.positional == "learned":
            self.pos = nn.Parameter(torch.randn(cfg.max_len, cfg.d_model) * 0.02)  # (max_len, C), learned
        else:
            self.pos = None  # RoPE, ALiBi: position enters inside attention
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        T = idx.size(1)
        if self.pos is None:
            return self.drop(self.tok(idx) * self.scale)  # (B, T, C)
        if T > self.pos.size(0):
            raise ValueError(f"sequence of {T} tokens is longer than max_len={self.pos.size(0)}; raise max_len")
        return self.drop(self.tok(idx) * self.scale + self.pos[:T])  # (B, T, C)


class EncoderDecoderTransformer(nn.Module):
    """The original Transformer shape: an encoder over the source, a decoder that writes the target.

    ``forward(src, tgt_in)`` → logits (B, T, V) for the next target token at every position (teacher forcing);
    :meth:`generate` decodes greedily. After any call, ``encoder[l].self_attn.weights``,
    ``decoder[l].self_attn.weights`` and ``decoder[l].cross_attn.weights`` hold the attention; see
    :meth:`attention`.
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = _Embedding(cfg)  # shared by source and target (one vocabulary)
        self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
        self.decoder = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers))
        self.enc_norm = make_norm(cfg) if cfg.norm_first else nn.Identity()  # pre-norm needs a final norm
        self.dec_norm = make_norm(cfg) if cfg.norm_first else nn.Identity()
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.embed.tok.weight  # tie input and output embeddings, as the paper does

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``src`` (B, S) ids → ``memory`` (B, S, C) and the key-padding mask (B, 1, 1, S)."""
        pad = (src != self.cfg.pad_id).view(src.size(0), 1, 1, src.size(1))  # (B, 1, 1, S): True = real token
        x = self.embed(src)  # (B, S, C)
        for layer in self.encoder:
            x = layer(x, mask=pad)
        return self.enc_norm(x), pad

    def decode(self, tgt_in: torch.Tensor, memory: torch.Tensor, memory_mask: torch.Tensor) -> torch.Tensor:
        """``tgt_in`` (B, T) ids → logits (B, T, V), attending causally to itself and fully to ``memory``."""
        T = tgt_in.size(1)
        self_mask = causal_mask(T, tgt_in.device) & (tgt_in != self.cfg.pad_id).view(-1, 1, 1, T)  # (B, 1, T, T)
        x = self.embed(tgt_in)  # (B, T, C)
        for layer in self.decoder:
            x = layer(x, memory, self_mask=self_mask, memory_mask=memory_mask)
        return self.lm_head(self.dec_norm(x))  # (B, T, V)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        memory, pad = self.encode(src)
        return self.decode(tgt_in, memory, pad)

    @torch.no_grad()
    def generate(self, src: torch.Tensor, max_new_tokens: int, bos_id: int, eos_id: int) -> torch.Tensor:
        """Greedy decoding: (B, S) → (B, 1 + steps) starting with ``<bos>``; stops when every row has said ``<eos>``.

        The encoder runs once; the decoder re-reads the whole prefix each step (no KV cache, for clarity), so after
        the call the decoder's ``.weights`` cover the full generated target.
        """
        memory, pad = self.encode(src)
        out = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)  # (B, 1)
        done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
        for _ in range(max_new_tokens):
            nxt = self.decode(out, memory, pad)[:, -1].argmax(-1)  # (B,)
            nxt = torch.where(done, torch.full_like(nxt, self.cfg.pad_id), nxt)
            out = torch.cat([out, nxt[:, None]], dim=1)
            done |= nxt == eos_id
            if bool(done.all()):
                break
        return out

    def attention(self) -> dict[str, list[torch.Tensor]]:
        """Weights of the last forward pass: ``{"encoder", "decoder", "cross"}`` → per layer (B, nh, T, S)."""
        encoder = [cast(EncoderLayer, layer) for layer in self.encoder]
        decoder = [cast(DecoderLayer, layer) for layer in self.decoder]
        return {
            "encoder": [_recorded(layer.self_attn) for layer in encoder],
            "decoder": [_recorded(layer.self_attn) for layer in decoder],
            "cross": [_recorded(layer.cross_attn) for layer in decoder],
        }


class DecoderOnlyTransformer(nn.Module):
    """GPT-style: one stack of causal self-attention blocks over ``source <sep> target``.

    The same task, posed as continuation: there is no encoder and no cross-attention; a target token finds its
    source digit by ordinary (causal) self-attention back across the ``<sep>``. Compare its attention with the
    encoder-decoder's cross-attention.
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = _Embedding(cfg)
        self.blocks = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_decoder_layers))  # self-attn + FF
        self.norm = make_norm(cfg) if cfg.norm_first else nn.Identity()
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.embed.tok.weight

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """``idx`` (B, T) → logits (B, T, V) for the next token at every position."""
        T = idx.size(1)
        mask = causal_mask(T, idx.device) & (idx != self.cfg.pad_id).view(-1, 1, 1, T)  # (B, 1, T, T)
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x, mask=mask)
        return self.lm_head(self.norm(x))

    @torch.no_grad()
    def generate(self, idx: torch.Tensor, max_new_tokens: int, eos_id: int) -> torch.Tensor:
        """Greedy continuation of ``idx`` (B, T) → (B, T + steps); stops when every row has said ``<eos>``."""
        done = torch.zeros(idx.size(0), dtype=torch.bool, device=idx.device)
        for _ in range(max_new_tokens):
            nxt = self(idx)[:, -1].argmax(-1)  # (B,)
            nxt = torch.where(done, torch.full_like(nxt, self.cfg.pad_id), nxt)
            idx = torch.cat([idx, nxt[:, None]], dim=1)
            done |= nxt == eos_id
            if bool(done.all()):
                break
        return idx

    def attention(self) -> dict[str, list[torch.Tensor]]:
        """Weights of the last forward pass: ``{"self"}`` → per layer (B, nh, T, T), causal."""
        return {"self": [_recorded(cast(EncoderLayer, block).self_attn) for block in self.blocks]}
