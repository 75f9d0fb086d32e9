"""The tutorial notebooks: committed without outputs or saved widget state, first cell imports cleanly from the
installed package, and the house layout (learning goals, a hub-model switch, exercises whose answers are collapsed,
source and outputs). CI runs them all top to bottom in JupyterLab (tests/browser/test_notebooks_browser.py, the
notebooks tier of .ci/run); these checks are the cheap ones that say what is wrong.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))

# Runs a cell's source the way a kernel does (line magics like %load_ext included), and fails on any error.
RUN_CELL = """
import sys
from IPython.terminal.interactiveshell import TerminalInteractiveShell as InteractiveShell
shell = InteractiveShell.instance()
result = shell.run_cell(sys.stdin.read())
sys.exit(0 if result.success else 1)
"""


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def test_there_are_notebooks():
    names = [p.name for p in NOTEBOOKS]
    assert "01_attention_is_all_you_need.ipynb" in names and "05_lecture_quick_start.ipynb" in names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_stored_outputs(path):
    dirty = [i for i, c in enumerate(cells(path)) if c["cell_type"] == "code"
             and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, (f"{path.name}: code cells {dirty} keep outputs or execution counts; strip them before "
                       "committing (`jupyter nbconvert --clear-output --inplace` or nbstripout)")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_valid_against_the_nbformat_schema(path):
    # 01 carried cell ids under nbformat 4.4, which has none: every reader logged "Notebook JSON is invalid".
    import warnings

    import nbformat

    # Under 4.5 a cell without an id is only a warning today (MissingIDFieldWarning: "will become a hard error");
    # four cells of 06 went without one and every reader logged it.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nbformat.validate(nbformat.reads(path.read_text(encoding="utf-8"), as_version=nbformat.NO_CONVERT))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_stored_widget_state(path):
    metadata = json.loads(path.read_text(encoding="utf-8"))["metadata"]
    # Saving from JupyterLab with "Save Widget State Automatically" on stores every live widget's model here (the
    # arrays included): megabytes of stale state that nothing reads back, since the cells re-create the widgets.
    assert "widgets" not in metadata, (f"{path.name}: the notebook metadata keeps widget state; turn off Settings > "
                                       "Save Widget State Automatically, or delete metadata['widgets'] first")


# A markdown heading line ("#### Show answer"), not a sentence that mentions answers.
ANSWER_HEADING = re.compile(r"^\s*#+\s*show answer\b", re.IGNORECASE | re.MULTILINE)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_answer_is_collapsed(path):
    cs = cells(path)
    headings = [i for i, c in enumerate(cs) if c["cell_type"] == "markdown" and ANSWER_HEADING.search(source(c))]
    assert headings, f"{path.name}: no '#### Show answer' heading; exercises need their answers in collapsed cells"
    for i in headings:
        answer = cs[i + 1] if i + 1 < len(cs) else None
        assert answer is not None and answer["cell_type"] == "code", \
            f"{path.name}: the 'Show answer' heading in cell {i} must be followed by the answer's code cell"
        jupyter = answer.get("metadata", {}).get("jupyter", {})
        # Both: the source is the answer, and so is what it prints.
        assert jupyter.get("source_hidden") is True and jupyter.get("outputs_hidden") is True, (
            f"{path.name}: answer cell {i + 1} must be collapsed, source and outputs: metadata "
            f'{{"jupyter": {{"source_hidden": true, "outputs_hidden": true}}}}, got {answer.get("metadata")}')


# JupyterLab's collapsed-input placeholder shows a cell's first line: an answer that opens with its conclusion as a
# comment is on the projector right under the question. Every answer opens with this line, and nothing else of it shows.
NEUTRAL_FIRST_LINE = "# Answer: expand this cell to read it."


def shows_when_collapsed(cell: dict) -> str:
    """What a collapsed answer shows: a code cell's first line; nothing for a markdown ``<details>`` left closed."""
    text = source(cell)
    if cell["cell_type"] == "markdown":
        stripped = text.lstrip()
        closed = stripped.startswith("<details>") or stripped.startswith("<details >")
        return "" if closed else (stripped.splitlines() or [""])[0]
    return (text.splitlines() or [""])[0]


def test_the_collapsed_check_sees_an_answer_on_the_first_line():
    code = {"cell_type": "code", "source": "# Each layer extends the reach by w - 1 = 3 tokens\nprint(3)"}
    assert shows_when_collapsed(code) == "# Each layer extends the reach by w - 1 = 3 tokens"
    assert shows_when_collapsed({"cell_type": "code", "source": NEUTRAL_FIRST_LINE + "\n# 3 tokens"}) \
        == NEUTRAL_FIRST_LINE
    assert shows_when_collapsed({"cell_type": "markdown", "source": "<details><summary>Answer</summary>3</details>"}) \
        == ""
    assert shows_when_collapsed({"cell_type": "markdown", "source": "<details open>3</details>"}) != ""


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_collapsed_answer_shows_nothing_of_it(path):
    cs = cells(path)
    leaks = []
    for i, c in enumerate(cs[:-1]):
        if c["cell_type"] == "markdown" and ANSWER_HEADING.search(source(c)):
            shown = shows_when_collapsed(cs[i + 1])
            if shown not in ("", NEUTRAL_FIRST_LINE):
                leaks.append(f"cell {i + 1}: {shown[:80]!r}")
    assert not leaks, (f"{path.name}: collapsed answers show their first line on screen; open each with "
                       f"{NEUTRAL_FIRST_LINE!r} (or use a closed markdown <details> block):\n  " + "\n  ".join(leaks))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_code_cell_imports_in_a_fresh_process(path, tmp_path):
    first = next(source(c) for c in cells(path) if c["cell_type"] == "code")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg", "PYTHONPATH": ""}
    # Run outside the repository, so the package comes from the installation, not the working directory.
    proc = subprocess.run([sys.executable, "-c", RUN_CELL], input=first, cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{path.name}: the first code cell failed:\n{first}\n{proc.stdout}\n{proc.stderr}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_house_layout(path):
    cs = cells(path)
    intro = "".join(source(c) for c in cs[:2] if c["cell_type"] == "markdown").lower()
    assert "learning goals" in intro, f"{path.name}: start with the learning goals (a markdown cell at the top)"
    hub = [c for c in cs if "switch to a hub model" in source(c).lower()]
    assert hub, f"{path.name}: needs one clearly marked cell ('Switch to a hub model') for running online"
    code_after = [source(c) for c in cs[cs.index(hub[0]):] if c["cell_type"] == "code"][:1]
    lines = code_after[0].splitlines() if code_after else []
    offline = any(re.match(r"\s*MODEL\s*=\s*None\b", line) for line in lines) or any(
        line.lstrip().startswith("#") and "model" in line.lower() for line in lines)
    assert offline, (f"{path.name}: the code cell after the hub-model switch must keep CI offline: "
                     "`MODEL = None` with the hub id in a comment, or the hub line commented out")
    hidden = [i for i, c in enumerate(cs) if c["cell_type"] == "code"
              and c.get("metadata", {}).get("jupyter", {}).get("source_hidden")]
    assert hidden, f"{path.name}: exercises need answers in a collapsed cell (metadata jupyter.source_hidden)"
    for i in hidden:
        assert i > 0 and "show answer" in source(cs[i - 1]).lower(), \
            f"{path.name}: put a 'Show answer' heading above the hidden answer cell {i}"


# Notebooks 02 and 03 have one model switch (`MODEL`); every call that loads or runs a model must name it, so that
# switching to BERT-base switches every cell (an explicit `model=None` or a folder is a choice the reader can see).
MODEL_CALLS = {"run", "run_batch", "fill_mask", "FillMask", "corpus_stats", "dependency_scores", "coref_scores",
               "capture_qk_layers", "residual_contributions", "padding_check", "attention_gradients", "get_runner"}
SWITCHED = [p for p in NOTEBOOKS if p.name.startswith(("02_", "03_"))]


def calls_without_model(code: str) -> list[str]:
    import ast

    try:
        tree = ast.parse(re.sub(r"^\s*[%!].*$", "", code, flags=re.MULTILINE))
    except SyntaxError:
        return []
    bad = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        # a method of a runner (runner.run_batch, cmp.tuned.run) runs the model it was made from
        on_runner = isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name) and func.value.id == "aw")
        if name in MODEL_CALLS and not on_runner and not any(k.arg == "model" for k in node.keywords) \
                and not (name == "get_runner" and node.args):
            bad.append(ast.unparse(node)[:100])
    return bad


def test_the_model_check_sees_a_forgotten_model():
    assert calls_without_model('r = aw.run("The cat sat.")') == ["aw.run('The cat sat.')"]
    assert calls_without_model('aw.run("The cat sat.", model=MODEL)\nrunner.run_batch(["a"])\ncmp.tuned.run(t)') == []
    assert calls_without_model("%matplotlib inline\ns = corpus_stats(pairs)") == ["corpus_stats(pairs)"]


@pytest.mark.parametrize("path", SWITCHED, ids=lambda p: p.name)
def test_every_model_call_follows_the_switch(path):
    cs = cells(path)
    switch = [i for i, c in enumerate(cs) if c["cell_type"] == "code" and re.search(r"^MODEL\s*=", source(c), re.M)]
    assert len(switch) == 1, f"{path.name}: one model switch cell (`MODEL = None`), found {len(switch)}"
    assert switch[0] < 5, f"{path.name}: the model switch belongs at the top (cell {switch[0]})"
    bad = [f"cell {i}: {call}" for i, c in enumerate(cs) if c["cell_type"] == "code"
           for call in calls_without_model(source(c))]
    assert not bad, f"{path.name}: calls that ignore the model switch (pass model=MODEL):\n  " + "\n  ".join(bad)
