"""Tiny models with byte-level BPE tokenizers made on the spot, for checking that tokens read as the text they stand
for (tests/widgets/test_bpe_display.py and tests/browser/test_bpe_display_browser.py).

``merged_tokenizer()`` is trained on the test text, so `` café``, `` 東京`` and `` 🙂`` are one token each;
``split_tokenizer()`` has a handful of hand-written merges, so those characters are cut between tokens:
``Ġca f Ã © Ġæ Ŀ± ä º ¬ Ġ ðŁĻ Ĥ``. Both wrap a row in ``<s> ... </s>``.
"""

from __future__ import annotations

import warnings
from pathlib import Path

TEXT = " café 東京 🙂"
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]


def _wrap(tok):
    from tokenizers import decoders, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", pad_token="<pad>", eos_token="</s>",
                                   unk_token="<unk>")


def merged_tokenizer():
    """Byte-level BPE trained on a sentence and TEXT: `` café``, `` 東京``, `` 🙂`` are single tokens."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(["The cat sat on the mat.", TEXT] * 20, trainer)
    return _wrap(tok)


def split_tokenizer():
    """Byte-level BPE over the 256 byte symbols with six merges: every non-ASCII character is cut across tokens."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {t: i for i, t in enumerate(SPECIALS + sorted(pre_tokenizers.ByteLevel.alphabet()))}
    merges = [("Ġ", "c"), ("Ġc", "a"), ("Ġ", "æ"), ("Ŀ", "±"), ("ð", "Ł"), ("ðŁ", "Ļ")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    return _wrap(Tokenizer(models.BPE(vocab, merges)))


def _save(model, tokenizer, path: Path) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)
    return str(path)


def save_gpt2(tokenizer, path: Path) -> str:
    """A 2-layer x 4-head GPT-2 with ``tokenizer``, saved to ``path``."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_head=4, n_embd=32, vocab_size=len(tokenizer), n_positions=64, bos_token_id=0,
                     eos_token_id=2, pad_token_id=1)
    return _save(GPT2LMHeadModel(cfg), tokenizer, path)


def save_bart(tokenizer, path: Path) -> str:
    """A 2 + 2-layer x 4-head BART with ``tokenizer``, saved to ``path``."""
    import torch
    from transformers import BartConfig, BartForConditionalGeneration

    torch.manual_seed(0)
    cfg = BartConfig(encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
                     d_model=32, encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=len(tokenizer),
                     max_position_embeddings=64, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                     decoder_start_token_id=2, forced_eos_token_id=None)
    return _save(BartForConditionalGeneration(cfg), tokenizer, path)
