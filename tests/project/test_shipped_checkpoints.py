"""The trained runs and the studies the package ships (attnwidgets/data/shipped_*.npz) are what their recipes make,
load as the runs the training functions return, replay their recorded curves exactly as training reports them, and
are read as untrusted files.

"What the recipe makes" is checked without the full training (seconds, not minutes): the same seeds give the same
first steps (losses, and for the toy the attention at checkpoints 0 and 25, inside the warm-up, so independent of the
total number of steps), and the metrics stored in each file match a re-evaluation of the weights it ships. The
shipped studies of the bundled model (notebook 04's head sweep and pruning curves) are checked the same way: a few
heads and layers swept again, the first pruning step run again and later points measured again, against the stored
numbers.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from attnwidgets.persist import TAGS, ModelMismatchError, SavedFileError, info_from_tags, read, write
from attnwidgets.runner.ablation import Ablation
from attnwidgets.studies.pruning import PruningCurve, pruning_curve, random_pruning_curve
from attnwidgets.studies.shipped import STUDIES, load_study, shipped_study, study_path, task_sha256
from attnwidgets.studies.sweeps import SweepResult, SweepWork, evaluate
from attnwidgets.studies.tasks import sts_sample, sts_task
from attnwidgets.teaching import shipped
from attnwidgets.teaching.block import compare_norms
from attnwidgets.teaching.shipped import (
    KIND,
    RECIPES,
    Recipe,
    first_losses,
    load_shipped,
    replay,
    shipped_path,
    shipped_run,
)
from attnwidgets.teaching.shipped_norms import COMPARISONS, make_norms, norms_path, shipped_norms

REMAKE = "the shipped file is not what its recipe makes today: run `python benchmarks/train_shipped.py --only {}`"
NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="module")
def runs():
    return {name: load_shipped(name) for name in RECIPES}


def saved(name):
    return read(shipped_path(name), KIND)


def test_every_recipe_ships_a_small_file():
    sizes = {name: shipped_path(name).stat().st_size for name in RECIPES}
    assert sum(sizes.values()) < 3 * 2**20, sizes
    for name in RECIPES:
        assert saved(name).settings["recipe"] == json.loads(json.dumps(RECIPES[name].kwargs))


# -- the first steps reproduce the recorded curves ----------------------------------------------------------------

def test_the_toy_runs_start_as_recorded(runs):
    fresh = first_losses("reverse", 25)            # checkpoints 0 and 25 (25 steps; the warm-up is 100)
    ship = runs["reverse"]
    np.testing.assert_allclose(fresh.losses, ship.losses[:25], rtol=1e-5, err_msg=REMAKE.format("reverse"))
    np.testing.assert_allclose(fresh.grad_norms, ship.grad_norms[:25], rtol=1e-4)
    for step in (0, 25):
        a, b = fresh.checkpoints[step], ship.checkpoints[step]
        assert a.tokens == b.tokens and a.target_tokens == b.target_tokens
        for kind in ("encoder", "decoder", "cross"):
            np.testing.assert_allclose(a.attention_of(kind)[0], b.attention_of(kind)[0], atol=1e-5)
        assert fresh.checkpoint_accuracy[step] == ship.checkpoint_accuracy[step]
    dec = first_losses("reverse-decoder", 3)
    np.testing.assert_allclose(dec.losses, runs["reverse-decoder"].losses[:3], rtol=1e-5,
                               err_msg=REMAKE.format("reverse-decoder"))


def test_the_induction_run_starts_as_recorded(runs):
    fresh = first_losses("induction", 3)
    ship = runs["induction"]
    np.testing.assert_allclose(fresh.losses, ship.losses[:3], rtol=1e-5, err_msg=REMAKE.format("induction"))
    assert fresh.eval_steps.tolist() == [0, 3]
    np.testing.assert_allclose(fresh.eval_loss[0], ship.eval_loss[0], rtol=1e-5)
    np.testing.assert_allclose(fresh.induction[0], ship.induction[0], atol=1e-6)
    assert np.array_equal(fresh.probe, ship.probe)


def test_the_tiny_bert_starts_as_recorded(runs):
    fresh = first_losses("tiny-bert", 2)
    ship = runs["tiny-bert"]
    np.testing.assert_allclose(fresh.mlm_loss, ship.mlm_loss[:2], rtol=1e-5, err_msg=REMAKE.format("tiny-bert"))
    np.testing.assert_allclose(fresh.nsp_loss, ship.nsp_loss[:2], rtol=1e-5)


# -- the stored metrics are the shipped weights' ------------------------------------------------------------------

def test_toy_metrics_match_the_shipped_weights(runs):
    from attnwidgets.teaching.training import attention_result, evaluate

    for name in ("reverse", "reverse-decoder"):
        run = runs[name]
        assert evaluate(run.model, run.task, run.held_out) == saved(name).attrs["metrics"]["accuracy"] == run.accuracy
    run = runs["reverse"]
    now = attention_result(run.model, run.task, run.probe, run.task.target(run.probe))
    last = run.checkpoints[run.steps]
    for kind in ("encoder", "decoder", "cross"):
        np.testing.assert_allclose(now.attention_of(kind)[0], last.attention_of(kind)[0], atol=1e-6)
    assert run.checkpoint_accuracy[run.steps] == run.accuracy
    assert run.predict("3 1 4 1 5 9 2") == ["2", "9", "5", "1", "4", "1", "3"]


def test_induction_metrics_match_the_shipped_weights(runs):
    from attnwidgets.teaching.induction import probe_scores

    run = runs["induction"]
    loss, scores = probe_scores(run)
    assert loss == pytest.approx(run.eval_loss[-1], rel=1e-5)
    for key in ("induction", "previous_token", "duplicate_token"):
        np.testing.assert_allclose(scores[key], getattr(run, key)[-1], atol=1e-6)
    assert saved("induction").attrs["metrics"]["max_induction"] == pytest.approx(scores["induction"].max())


def test_tiny_bert_metrics_match_the_shipped_weights(runs):
    run = runs["tiny-bert"]
    stored = saved("tiny-bert").attrs["metrics"]
    now = shipped.bert_metrics(run)
    np.testing.assert_allclose(now["nsp_heldout_p_isnext"], stored["nsp_heldout_p_isnext"], atol=1e-5)
    assert now["nsp_heldout_accuracy"] == stored["nsp_heldout_accuracy"]
    assert now["mlm_heldout_loss"] == pytest.approx(stored["mlm_heldout_loss"], rel=1e-5)
    # the saved folder is the model: aw.run reads it back with the same weights
    from transformers import BertForPreTraining

    back = BertForPreTraining.from_pretrained(run.folder)
    assert torch.equal(back.bert.embeddings.word_embeddings.weight, run.model.bert.embeddings.word_embeddings.weight)


# -- replaying a recorded curve -----------------------------------------------------------------------------------

def test_replay_calls_back_as_training_does(runs):
    calls = []
    replay(runs["tiny-bert"], lambda *a: calls.append(a), "tiny-bert")
    mlm, nsp = runs["tiny-bert"].mlm_loss, runs["tiny-bert"].nsp_loss
    assert [c[0] for c in calls] == list(range(20, 801, 20))
    assert calls[0][1] == pytest.approx(float(np.mean(mlm[:20]))) and calls[-1][2] == pytest.approx(nsp[780:].mean())
    calls.clear()
    replay(runs["induction"], lambda *a: calls.append(a))
    assert [c[0] for c in calls] == list(range(0, 501, 10))
    last = runs["induction"]
    assert calls[-1][1] == last.eval_loss[-1] and np.array_equal(calls[-1][2], last.induction[-1])
    calls.clear()
    replay(runs["reverse"], lambda *a: calls.append(a))
    assert len(calls) == 300 and calls[0] == (1, float(runs["reverse"].losses[0]))


def test_a_live_curve_draws_the_replayed_points():
    from attnwidgets.plots.pretrain import LivePretrainCurve

    live = LivePretrainCurve(total=800, display=False)
    run = shipped_run("tiny-bert", callback=live.update)
    assert live.steps == list(range(20, 801, 20)) and live.mlm[-1] == pytest.approx(run.mlm_loss[780:].mean())
    assert run.shipped and "pretrain_bert(steps=800, seed=0, every=20)" in run.shipped


def test_train_true_trains_here_and_states_the_time(monkeypatch, capsys):
    small = Recipe("induction", "induction", {"steps": 6, "seed": 0, "eval_every": 3}, half=False)
    monkeypatch.setitem(RECIPES, "induction", small)
    seen = []
    run = shipped_run("induction", train=True, progress=False, callback=lambda *a: seen.append(a[0]))
    out = capsys.readouterr().out
    assert re.search(r"training induction here: train_induction\(steps=6, seed=0, eval_every=3\); about \d+ s of one "
                     r"CPU core", out), out
    assert run.shipped is None and run.steps == 6 and seen == [0, 3, 6]


def test_unknown_run_or_switch():
    with pytest.raises(ValueError, match=r"no shipped run 'bert'.*induction, reverse"):
        shipped_run("bert")
    with pytest.raises(TypeError, match="train must be True or False, got 'no'"):
        shipped_run("induction", train="no")


def test_loading_leaves_the_sessions_random_numbers_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    load_shipped("reverse")
    assert torch.equal(torch.rand(3), expected)


# -- untrusted files ----------------------------------------------------------------------------------------------

def _rewrite(name, tmp_path, change=None, settings=None):
    s = saved(name)
    arrays = {key: s.array(key) for key in s.names if key != TAGS}
    if change:
        change(arrays)
    return write(tmp_path / "x.npz", s.kind, arrays, settings=settings or s.settings, attrs=s.attrs)


W = "param.embed.tok.weight"  # the toy's token embedding, stored as float16


def _nan(arrays):
    arrays[W] = arrays[W].copy()
    arrays[W][0, 0] = np.nan


@pytest.mark.parametrize("change, message", [
    (lambda a: a.pop(W), r"does not hold this model's weights \(missing \['embed.tok.weight'\]"),
    (lambda a: a.__setitem__("param.extra", np.zeros(2, np.float32)), r"unexpected \['extra'\]"),
    (lambda a: a.__setitem__(W, a[W][:-1]), r"weight 'embed.tok.weight' is float16 \(\d+, 64\), the model needs"),
    (lambda a: a.__setitem__(W, a[W].astype(np.float64)), r"is float64 .* the model needs float16"),
    (_nan, "'embed.tok.weight' holds NaN"),
    (lambda a: a.__setitem__("losses", a["losses"][:10]), r"'losses' is float32 \(10,\), expected \(300,\)"),
    (lambda a: a.pop("checkpoint.25.cross"), "has no 'checkpoint.25.cross'"),
    (lambda a: a.__setitem__("checkpoint.25.cross", a["checkpoint.25.cross"][:, :, :-1]), "'checkpoint.25.cross' is"),
])
def test_a_damaged_toy_file_is_refused_clearly(tmp_path, change, message):
    path = _rewrite("reverse", tmp_path, change)
    with pytest.raises(SavedFileError, match=message) as err:
        load_shipped("reverse", path)
    assert str(path) in str(err.value) and "train_shipped.py --only reverse" in str(err.value)


def _scrambled(arrays):       # the same shapes, dtype and finite values: only measuring the weights tells
    rng = np.random.default_rng(0)
    arrays[W] = rng.permutation(arrays[W].ravel()).reshape(arrays[W].shape)


def test_a_file_whose_weights_do_not_give_its_recorded_metric_is_refused(tmp_path):
    # load_shipped(path=) took weights of the right shapes unchecked: a scrambled embedding loaded as the shipped run.
    path = _rewrite("reverse", tmp_path, _scrambled)
    with pytest.raises(SavedFileError, match=r"its weights give a held-out accuracy of .*, the file records 1: the "
                       r"weights were changed after it was made"):
        load_shipped("reverse", path)
    assert load_shipped("reverse", _rewrite("reverse", tmp_path)).accuracy == saved("reverse").attrs["metrics"][
        "accuracy"]                                               # the untouched copy loads from a path too


def test_another_recipe_or_another_run_is_refused(tmp_path):
    s = saved("reverse")
    path = _rewrite("reverse", tmp_path, settings={**s.settings, "recipe": {"task": "reverse", "steps": 10}})
    with pytest.raises(SavedFileError, match="made by another recipe"):
        load_shipped("reverse", path)
    with pytest.raises(SavedFileError, match="holds the run 'reverse', not 'induction'"):
        load_shipped("induction", _rewrite("reverse", tmp_path))


def test_a_file_that_is_not_a_shipped_run_is_refused(tmp_path):
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip")
    with pytest.raises(SavedFileError, match=r"not an \.npz archive"):
        load_shipped("induction", junk)
    with zipfile.ZipFile(tmp_path / "cut.npz", "w") as z:
        z.writestr("x.npy", b"\x93NUMPY")
    with pytest.raises(SavedFileError):
        load_shipped("induction", tmp_path / "cut.npz")
    with pytest.raises(SavedFileError, match=r"is missing .*train_shipped\.py --only induction"):
        load_shipped("induction", tmp_path / "nowhere.npz")


def test_a_tiny_bert_file_for_another_vocabulary_is_refused(tmp_path):
    from attnwidgets.teaching.pretrain import compact_tokenizer

    with pytest.raises(SavedFileError, match="another vocabulary"):
        load_shipped("tiny-bert", tokenizer=compact_tokenizer(["The cat sat. It purred."]))


# -- the notebooks use them --------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_load_the_shipped_runs_behind_one_switch(path):
    cells = ["".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
             if c["cell_type"] == "code"]
    calls = [m for c in cells for m in re.findall(r"shipped_(run|study|norms)\(([^)]*)\)", c)]
    if not calls:
        pytest.skip("trains nothing")
    assert any(re.match(r"LIVE = False\b", c) for c in cells[:3]), f"{path.name}: `LIVE = False` near the top"
    for kind, call in calls:
        assert "train=LIVE" in call, f"{path.name}: shipped_{kind}({call}) must pass train=LIVE"
        assert re.match(r"\"([^\"]+)\"", call).group(1) in {"run": RECIPES, "study": STUDIES,
                                                              "norms": COMPARISONS}[kind]


# -- notebook 01 §6b's norm comparisons ------------------------------------------------------------------------

NORMS_REMAKE = "the shipped norm comparisons are not what compare_norms makes today: run " \
               "`python benchmarks/train_shipped.py --only norms`"


@pytest.mark.parametrize("name", sorted(COMPARISONS))
def test_each_norm_comparison_ships_and_starts_as_recorded(name):
    c = shipped_norms(name)
    kwargs = COMPARISONS[name]
    assert c.runs == [] and c.losses.shape == (len(c.variants), kwargs["steps"]) and c.cpu_seconds > 0
    assert c.settings["lr"] == kwargs["lr"] and c.settings["warmup"] == kwargs["warmup"]
    # The first step is taken at the same learning rate whatever the number of steps (warm-up from step 0, or the
    # cosine's start): one step from the same seed gives the recorded first loss and gradient norm.
    first = compare_norms("reverse", progress=False, **{**kwargs, "steps": 1})
    np.testing.assert_allclose(first.losses[:, 0], c.losses[:, 0], rtol=1e-5, err_msg=NORMS_REMAKE)
    np.testing.assert_allclose(first.grad_norms[:, 0], c.grad_norms[:, 0], rtol=1e-4, err_msg=NORMS_REMAKE)


def test_a_norm_comparison_of_other_arguments_or_a_damaged_file_is_refused(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="unknown comparison 'nope'"):
        shipped_norms("nope")
    with pytest.raises(SavedFileError, match=r"missing .*--only norms"):
        shipped_norms("four-norms", path=tmp_path / "none.npz")
    other = tmp_path / "other.npz"
    small = {"four-norms": {**COMPARISONS["four-norms"], "steps": 2, "variants": ["pre-LN", "post-LN"]}}
    monkeypatch.setattr("attnwidgets.teaching.shipped_norms.COMPARISONS", small)
    make_norms(other)
    monkeypatch.undo()
    with pytest.raises(SavedFileError, match=r"made with other arguments than today's.*--only norms"):
        shipped_norms("four-norms", path=other)
    assert norms_path().name == "shipped_norms.npz"


# -- notebook 02 §7's fine-tuning comparison -----------------------------------------------------------------------

def test_the_shipped_finetuning_comparison_loads_for_the_bundled_model_only(bundled, capsys, tmp_path):
    from attnwidgets.studies import shipped_finetune as sf

    cmp = sf.shipped_finetune(bundled, progress=False)
    assert "finetune shipped with attnwidgets" in capsys.readouterr().out
    info = bundled.info
    assert cmp.tuned is None and cmp.similarity.shape == (info.n_layers, info.n_heads)
    assert 0.9 < cmp.similarity.min() <= cmp.similarity.max() <= 1 + 1e-6 and 0 <= cmp.log["heldout_accuracy"] <= 1
    assert len(cmp.log["losses"]) == 9 and len(cmp.texts) == 60          # one epoch of 140 sentences, batches of 16
    before = bundled.run(cmp.texts[0])
    assert cmp.example.tokens == before.tokens and cmp.example.model.name.endswith("(fine-tuned)")
    np.testing.assert_allclose(cmp.example.attention.sum(-1), 1, atol=1e-4)
    assert not np.allclose(cmp.example.attention, before.attention, atol=1e-4)   # the fine-tuned maps, not these
    # A file of other arguments, or one changed by hand, is refused by name with how to make it again.
    tags = read(sf.finetune_path(), sf.KIND)
    arrays = {n: tags.array(n) for n in ("similarity", "losses", "example_after")}
    other = tmp_path / "other.npz"
    write(other, sf.KIND, arrays, model=bundled, settings={"args": {"epochs": 2, "seed": 0}}, attrs=tags.attrs)
    with pytest.raises(SavedFileError, match=r"other arguments.*--only finetune"):
        sf.shipped_finetune(bundled, path=other)
    arrays["similarity"] = np.full_like(arrays["similarity"], np.nan)
    write(other, sf.KIND, arrays, model=bundled, settings={"args": sf.ARGS}, attrs=tags.attrs)
    with pytest.raises(SavedFileError, match="NaN"):
        sf.shipped_finetune(bundled, path=other)
    with pytest.raises(SavedFileError, match=r"missing .*--only finetune"):
        sf.shipped_finetune(bundled, path=tmp_path / "none.npz")


# -- the shipped studies of the bundled model ---------------------------------------------------------------------

STUDY_REMAKE = "the shipped study is not what its call makes today: run `python benchmarks/train_shipped.py --only {}`"


@pytest.fixture(scope="module")
def studies(bundled):
    return {name: load_study(name, model=bundled) for name in STUDIES}


@pytest.fixture(scope="module")
def task():
    return sts_sample(40)[0]


def test_every_study_ships_a_small_file_of_the_bundled_model(studies, bundled):
    for name in STUDIES:
        assert study_path(name).stat().st_size < 64 * 2**10, name
        assert studies[name].model.name == bundled.info.name == "all-MiniLM-L6-v2 (bundled)"
        assert studies[name].settings["shipped"]["task_sha256"] == task_sha256(sts_sample(40)[0])
    sweep = studies["sts-sweep"]
    assert sweep.heads.shape == (6, 12) and np.isfinite(sweep.heads).all() and np.isfinite(sweep.layers).all()
    assert len(sweep.frame) == 72 + 6 and sweep.mode == "uniform"
    assert studies["sts-pruning"].frame["n_pruned"].tolist() == list(range(0, 64, 7))
    assert studies["sts-pruning-random"].frame["n_pruned"].tolist() == list(range(0, 64, 7))


def test_the_shipped_sweep_is_what_sweeping_again_gives(studies, bundled, task):
    sweep = studies["sts-sweep"]
    best = np.unravel_index(np.argmax(sweep.delta), sweep.heads.shape)
    worst = np.unravel_index(np.argmin(sweep.delta), sweep.heads.shape)
    layer = int(np.argmin(sweep.layers))
    units = [("baseline", -1, -1), ("head", 0, 0), ("head", int(best[0]), int(best[1])),
             ("head", int(worst[0]), int(worst[1])), ("layer", layer, -1)]
    again = SweepWork(task, (6, 12), "uniform")(bundled, units)
    assert again.baseline == pytest.approx(sweep.baseline, abs=1e-6), STUDY_REMAKE.format("sts-sweep")
    for _, lay, h in units[1:4]:
        assert again.heads[lay, h] == pytest.approx(sweep.heads[lay, h], abs=1e-6), (lay, h)
    assert again.layers[layer] == pytest.approx(sweep.layers[layer], abs=1e-6)


def test_the_shipped_pruning_curve_starts_as_pruning_again(studies, bundled, task):
    curve = studies["sts-pruning"]
    first = pruning_curve(bundled, task, step=0.1, max_share=0.1, mode="zero", progress=False)  # one step of seven
    assert first.frame["pruned"].tolist() == curve.frame["pruned"][:2].tolist(), STUDY_REMAKE.format("sts-pruning")
    np.testing.assert_allclose(first.frame["metric"], curve.frame["metric"][:2], atol=1e-6)
    np.testing.assert_allclose(first.importance[0], curve.importance[0], rtol=1e-4, atol=1e-6)
    # a later point: its metric is the task measured with its stored heads pruned
    last = curve.frame.iloc[-1]
    again = evaluate(bundled, task, Ablation.heads(last["pruned"], "zero"), batch_size=32)
    assert again == pytest.approx(last["metric"], abs=1e-6)


def test_the_shipped_random_curve_is_its_seed_s_order(studies, bundled, task):
    curve = studies["sts-pruning-random"]
    first = random_pruning_curve(bundled, task, step=0.1, max_share=0.1, seed=0, progress=False)
    assert first.frame["pruned"].tolist() == curve.frame["pruned"][:2].tolist(), \
        STUDY_REMAKE.format("sts-pruning-random")
    np.testing.assert_allclose(first.frame["metric"], curve.frame["metric"][:2], atol=1e-6)
    order = np.random.default_rng(0).permutation([(lay, h) for lay in range(6) for h in range(12)])
    assert curve.frame["pruned"].iloc[-1] == [tuple(int(v) for v in lh) for lh in order[:63]]
    again = evaluate(bundled, task, Ablation.heads(curve.frame["pruned"].iloc[-1], "zero"), batch_size=32)
    assert again == pytest.approx(curve.frame["metric"].iloc[-1], abs=1e-6)


def test_shipped_study_loads_for_the_bundled_model_and_says_so(studies, bundled, task, capsys):
    sweep = shipped_study("sts-sweep", bundled, task)
    out = capsys.readouterr().out
    assert re.search(r"sts-sweep shipped with attnwidgets: sweep_heads\(runner, sts_sample\(40\)\[0\], "
                     r"mode='uniform'\) took \d+ s of one CPU core \(\d+ s wall clock\) on .* when "
                     r"benchmarks/train_shipped.py made it; train=True runs it here", out), out
    assert sweep.frame.equals(studies["sts-sweep"].frame)
    curve = shipped_study("sts-pruning", bundled)  # the task defaults to the study's
    assert curve.frame["metric"].tolist() == studies["sts-pruning"].frame["metric"].tolist()


def test_another_task_or_model_or_train_true_runs_the_study_here(tiny_bert, bundled, capsys):
    from attnwidgets.data.labelled import load_sts_pairs
    from attnwidgets.runner import get_runner

    small = sts_task(load_sts_pairs().iloc[:4], "four pairs")
    sweep = shipped_study("sts-sweep", bundled, small, progress=False)
    out = capsys.readouterr().out
    assert re.search(r"running sts-sweep here \(the shipped copy is of the task 'sentence similarity \(40 pairs\)', "
                     r"this is 'four pairs'\): sweep_heads\(runner, task, mode='uniform'\); the shipped copy, of the "
                     r"bundled model on 40 pairs, took \d+ s of one CPU core on .*; a bigger model or task takes "
                     r"longer\nsts-sweep: [\d.]+ s here \([\d.]+ s of CPU\)", out), out
    assert isinstance(sweep, SweepResult) and sweep.settings["task"] == "four pairs"
    assert sweep.baseline == pytest.approx(evaluate(bundled, small))
    tiny = get_runner(tiny_bert)
    curve = shipped_study("sts-pruning-random", tiny, progress=False)
    out = capsys.readouterr().out
    assert f"(the shipped copy is of the bundled model, this is {tiny.info.name!r}): random_pruning_curve(runner, " \
           "sts_sample(40)[0], step=0.1, max_share=0.9, mode='zero', seed=0); the shipped copy" in out, out
    assert isinstance(curve, PruningCurve) and curve.model.n_heads == 4 and len(curve.frame) == 8



def test_train_true_runs_the_study_here_and_states_the_time(monkeypatch, studies, bundled, capsys):
    from attnwidgets.studies.shipped import Study

    short = Study("sts-pruning-random", "random-pruning", {"step": 0.1, "max_share": 0.1, "mode": "zero", "seed": 0})
    monkeypatch.setitem(STUDIES, "sts-pruning-random", short)  # its first two points only
    curve = shipped_study("sts-pruning-random", bundled, train=True, progress=False)
    out = capsys.readouterr().out
    assert re.search(r"running sts-pruning-random here \(train=True\): random_pruning_curve\(runner, sts_sample\(40\)"
                     r"\[0\], step=0.1, max_share=0.1, mode='zero', seed=0\); about \d+ s of one CPU core on .* \(what "
                     r"it took to make the shipped copy\); longer on a busy machine", out), out
    assert "shipped" not in curve.settings
    np.testing.assert_allclose(curve.frame["metric"], studies["sts-pruning-random"].frame["metric"][:2], atol=1e-6)


def test_a_task_s_fingerprint_sees_its_texts_scores_and_labels():
    from attnwidgets.studies.tasks import Task

    task = sts_sample(40)[0]
    assert task_sha256(task) == task_sha256(sts_sample(40)[0])
    other = sts_sample(40)[0]
    other.gold = other.gold.copy()
    other.gold[0] += 0.5
    assert task_sha256(other) != task_sha256(task)
    labelled = Task("labels", "accuracy", ["a", "b"], lambda rs: 0.0, gold=np.array(["neg", "pos"]))
    flipped = Task("labels", "accuracy", ["a", "b"], lambda rs: 0.0, gold=np.array(["pos", "neg"]))
    assert task_sha256(labelled) != task_sha256(flipped)


def test_a_missing_shipped_study_says_how_to_make_it(monkeypatch, tmp_path, bundled):
    from attnwidgets.studies import shipped as studies_shipped

    monkeypatch.setattr(studies_shipped, "study_path", lambda name: tmp_path / f"{name}.npz")
    with pytest.raises(SavedFileError, match=r"the shipped study 'sts-sweep' is missing .*train_shipped\.py --only "
                                             r"sts-sweep` \(or pass train=True to run it here\)"):
        shipped_study("sts-sweep", bundled)


def test_unknown_study_or_switch():
    with pytest.raises(ValueError, match=r"no shipped study 'sweep'; the package ships sts-pruning, "):
        shipped_study("sweep")
    with pytest.raises(TypeError, match="train must be True or False, got 1"):
        shipped_study("sts-sweep", train=1)


def _resave(name, tmp_path, change):
    obj = load_study(name)
    change(obj)
    return obj.save(tmp_path / f"{name}.npz")


def _shipped(key, value):
    def change(obj):
        obj.settings = {**obj.settings, "shipped": {**obj.settings["shipped"], key: value}}
    return change


@pytest.mark.parametrize("name, change, message", [
    ("sts-sweep", _shipped("name", "sts-pruning"), "holds the study 'sts-pruning', not 'sts-sweep'"),
    ("sts-sweep", _shipped("study", {"mode": "zero"}), r"made by another call \(\{'mode': 'zero'\} on 40 pairs\)"),
    ("sts-sweep", _shipped("n_pairs", 152), "made by another call"),
    ("sts-sweep", _shipped("task_sha256", "0" * 64), "made on another task than 'sentence similarity \\(40 pairs\\)'"),
    ("sts-sweep", _shipped("cpu_seconds", -1.0), r"does not hold the study 'sts-sweep' \(its cpu_seconds is -1.0\)"),
    ("sts-sweep", _shipped("machine", None), "its machine is None"),
    ("sts-pruning", lambda c: setattr(c, "settings", {**c.settings, "step": 0.2}), "its step is 0.2, the study's 0.1"),
    ("sts-pruning", lambda c: setattr(c, "importance", c.importance[:3]), "3 importance maps, the study makes 9"),
    ("sts-pruning", lambda c: setattr(c, "frame", c.frame.iloc[:5]), r"its points prune \[0, 7, 14, 21, 28\] heads"),
    ("sts-pruning-random", lambda c: setattr(c, "frame", c.frame.assign(pruned=c.frame["pruned"][::-1].tolist(),
                                                                        n_pruned=c.frame["n_pruned"][::-1].tolist())),
     "its points prune \\[63, 56"),
])
def test_a_shipped_study_that_is_not_the_study_is_refused(tmp_path, name, change, message):
    path = _resave(name, tmp_path, change)
    with pytest.raises(SavedFileError, match=message) as err:
        load_study(name, path)
    assert str(path) in str(err.value) and f"train_shipped.py --only {name}" in str(err.value)


def test_a_shipped_study_file_damaged_or_missing_is_refused(tmp_path, tiny_bert):
    from attnwidgets.runner import get_runner

    with pytest.raises(SavedFileError, match=r"is missing .*train_shipped\.py --only sts-sweep"):
        load_study("sts-sweep", tmp_path / "nowhere.npz")
    with pytest.raises(SavedFileError, match="holds a PruningCurve, not a SweepResult"):
        load_study("sts-sweep", study_path("sts-pruning"))
    s = read(study_path("sts-sweep"), "SweepResult")
    arrays = {key: s.array(key, kinds="biufU") for key in s.names if key != TAGS}
    arrays["heads"] = arrays["heads"].copy()
    arrays["heads"][2, 3] = 0.99  # a number changed by hand: the frame no longer matches it
    path = write(tmp_path / "x.npz", s.kind, arrays, model=info_from_tags(s.model), settings=s.settings,
                 attrs=s.attrs)
    with pytest.raises(SavedFileError, match="frame's 'metric' column is not that of its heads"):
        load_study("sts-sweep", path)
    with pytest.raises(ModelMismatchError, match="all-MiniLM-L6-v2 \\(bundled\\)"):
        load_study("sts-sweep", model=get_runner(tiny_bert))
