"""The papers' numbers, by construction (issue 24 §3).

Every number a notebook quotes from a paper lives in ``attnwidgets/data/paper_numbers.json``, cited to paper, table and
page; the notebooks print their comparisons from it. The checks here:

1. the reader: the shipped file loads, holds the corrected Clark et al. Table 1 rows, and a bad file is refused
   with the package's error naming the file, the entry and what to fix;
2. the notebooks' markdown: a figure in a sentence that names a paper (its first author, "the paper") must be a
   number of that paper in the file, and a code cell that names a paper's table or "et al." may not type decimal
   numbers (it reads them from the file);
3. numbers about our own runs are printed, not typed: a markdown cell may hold no decimal, percentage or measured
   time that is not a paper number from the file. Figures inside `code spans` (a formula, a setting) and after
   "≈" (a constant worked out on the spot, "ln 2 ≈ 0.69") are not claims about a run and are left alone;
4. the Wilson interval used for the NSP accuracy, against hand-computed values.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from attnwidgets.analysis.intervals import wilson_interval
from attnwidgets.data.papers import PaperNumbers, PaperNumbersError, load_paper_numbers, paper_table

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
NUMBERS = load_paper_numbers()


# ---------------------------------------------------------------------------------------------------- the reader

def test_clark_table1_holds_the_corrected_rows():
    t = paper_table("clark2019/table1")
    assert dict(t.row(relation="auxpass")) == {"relation": "auxpass", "head": "4-10", "accuracy": 82.5,
                                                "baseline": 40.5}
    assert dict(t.row(relation="all")) == {"relation": "all", "head": "7-6", "accuracy": 34.5, "baseline": 26.3}
    assert t.source == "Clark et al. 2019, Table 1, p. 5"


def test_every_table_cites_a_paper_a_place_and_how_it_was_checked():
    assert NUMBERS.tables
    for key, t in NUMBERS.tables.items():
        assert key.split("/")[0] == t.paper.key, f"{key}: the key should start with its paper's key"
        assert t.where and t.caption and t.checked
        assert t.page > 0 or t.paper.key == "bert_release", f"{key}: a paper's table needs its page"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "numbers.json"
    path.write_text(text, encoding="utf-8")
    return path


def shipped() -> dict:
    return json.loads(NUMBERS.path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["tables"]["clark2019/table1"]["rows"][0].update(accuracy=345), "0 to 100"),
    (lambda d: d["tables"]["clark2019/table1"]["rows"][0].update(head="7.6"), "'layer-head' label"),
    (lambda d: d["tables"]["clark2019/table1"]["rows"][0].update(head="0-6"), "'layer-head' label"),
    (lambda d: d["tables"]["clark2019/table1"]["rows"][0].pop("baseline"), "exactly the columns"),
    (lambda d: d["tables"]["clark2019/table1"].update(paper="clark2020"), "'paper' must be one of"),
    (lambda d: d["tables"]["clark2019/table1"].update(page="5"), "'page' must be a page number"),
    (lambda d: d["tables"]["clark2019/table1"]["rows"][1].update(accuracy=float("nan")), "finite number"),
    (lambda d: d["tables"]["clark2019/table1"]["rows"][1].update(accuracy=True), "finite number"),
    (lambda d: d["papers"]["clark2019"].update(authors=[]), "'authors'"),
    (lambda d: d["tables"]["clark2019/table1"].pop("checked"), "'checked'"),
])
def test_a_bad_file_is_refused_naming_the_entry(tmp_path, edit, message):
    data = shipped()
    edit(data)
    path = write(tmp_path, json.dumps(data))
    with pytest.raises(PaperNumbersError, match=re.escape(message)) as err:
        load_paper_numbers(path)
    assert str(path) in str(err.value) and ("tables." in str(err.value) or "papers." in str(err.value))


def test_broken_json_names_the_line(tmp_path):
    path = write(tmp_path, '{"papers": {},\n "tables": {,}}')
    with pytest.raises(PaperNumbersError, match=r"line 2, column \d+: not valid JSON"):
        load_paper_numbers(path)


def test_a_missing_file_says_what_to_do(tmp_path):
    with pytest.raises(PaperNumbersError, match="reinstall attnwidgets"):
        load_paper_numbers(tmp_path / "nowhere.json")


def test_lookups_name_what_exists():
    t = paper_table("clark2019/table2")
    assert t.value("accuracy", system="best head") == 65.0
    with pytest.raises(KeyError, match="0 rows match"):
        t.row(system="oracle")
    with pytest.raises(KeyError, match="no table"):
        paper_table("clark2019/table9")
    with pytest.raises(TypeError, match="holds text"):
        t.value("head", system="best head")


# ------------------------------------------------------------------------------------------- reading the notebooks

def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


# A paper is named by its first author's surname; "the paper(s)" refers to the notebook's own paper.
PAPER_OF_SURNAME = {p.authors[0]: key for key, p in NUMBERS.papers.items() if key != "bert_release"}
SURNAME = re.compile(r"\b(" + "|".join(PAPER_OF_SURNAME) + r")\b")
THE_PAPER = re.compile(r"\bthe papers?\b|\bthe paper's\b|\btheir (?:Table|Figure)\b", re.IGNORECASE)

# Figures: a percentage, a decimal, a number with thousands separators, "3.3 billion", a 1-based "8-11" head label.
PERCENT = r"\d+(?:\.\d+)?\s?%"
DECIMAL = r"(?<![§\d.])\d+\.\d+(?![\d.]*\d)"
THOUSANDS = r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,])"
HEAD = r"(?<![\w.\-–])\d{1,2}-\d{1,2}(?![\w\-])"
FIGURE = re.compile(rf"(?P<percent>{PERCENT})|(?P<decimal>{DECIMAL})|(?P<thousands>{THOUSANDS})|(?P<head>{HEAD})")
SECOND = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?(?:s|min)\b(?! ?\()")  # "88 s", "9 s of CPU time", "2 min"

CODE_SPAN = re.compile(r"`[^`\n]*`")
APPROX = re.compile(r"≈\s*[\d.,]+")  # "ln 2 ≈ 0.69": a constant worked out in the sentence itself


def prose(markdown: str) -> str:
    """The markdown's sentences as claims: code spans, fenced code and "≈ constant" removed."""
    text = re.sub(r"```.*?```", " ", markdown, flags=re.DOTALL)
    text = CODE_SPAN.sub("Code", text)  # a word, so that a sentence that starts with code still starts
    text = APPROX.sub(" ", text)
    text = re.sub(r"(?:§|\b[Ss]ections? )\d+(?:\.\d+)*", "§", text)  # "§3.1", "section 3.1": a place, not a figure
    for abbreviation in ("et al.", "e.g.", "i.e.", "cf.", "p.", "pp.", "vs."):
        text = text.replace(abbreviation, abbreviation.rstrip("."))
    return text


def sentences(markdown: str) -> list[str]:
    """Sentences, table rows and bullet points of a markdown cell, each on its own."""
    out = []
    for block in re.split(r"\n\s*\n|\n(?=\s*(?:[-*|]|\d+\.)\s)", prose(markdown)):
        out += [s for s in re.split(r"(?<=[.!?:])\s+(?=[A-Z(*\[\"“])", block.replace("\n", " ")) if s.strip()]
    return out


def figures(text: str) -> list[tuple[str, str]]:
    """(kind, figure) for every figure in the text."""
    return [(m.lastgroup or "", m.group()) for m in FIGURE.finditer(text)]


def number_of(figure: str) -> float:
    return float(figure.replace("%", "").replace(",", "").strip())


def paper_cells(keys: list[str]) -> list[tuple[str, object]]:
    return [(kind, cell) for t in NUMBERS.tables.values() if t.paper.key in keys
            for col, cell in t.numbers() for kind in [t.columns[col]]]


def in_file(kind: str, figure: str, keys: list[str], *, exact: bool = False) -> bool:
    """Whether a figure of the text is one of these papers' numbers, as printed or rounded (0.943 and 94 % are
    94.3; a head label must match exactly). ``exact``: only a percentage exactly as the file prints it (for a figure
    no paper is named beside: "80 %" of BERT's targets; a decimal there is always a claim about a run)."""
    if kind == "head":
        return any(cell == figure for _, cell in paper_cells(keys))
    if exact:
        return kind == "percent" and any(not isinstance(cell, str) and cell == number_of(figure)
                                         for _, cell in paper_cells(keys))
    value = number_of(figure)
    digits = len(figure.split(".")[1].rstrip(" %")) if "." in figure else 0
    for cell_kind, cell in paper_cells(keys):
        if isinstance(cell, str):
            continue
        candidates = [cell, cell / 100] if cell_kind in ("percent", "number") else [cell]
        for c in candidates:
            if round(c, digits) == value:
                return True
    return False


def attributed(sentence: str) -> list[str] | None:
    """The papers a sentence quotes (by surname), all papers for "the paper", None when it names none."""
    names = SURNAME.findall(sentence)
    if names:
        return sorted({PAPER_OF_SURNAME[n] for n in names} | {"bert_release"})
    if THE_PAPER.search(sentence):
        return list(NUMBERS.papers)
    return None


def unfiled_paper_figures(markdown: str, numbers: PaperNumbers = NUMBERS) -> list[str]:
    bad = []
    for s in sentences(markdown):
        keys = attributed(s)
        if keys is None:
            continue
        bad += [f"{figure!r} in: {s.strip()[:160]}" for kind, figure in figures(s) if not in_file(kind, figure, keys)]
    return bad


def typed_run_figures(markdown: str) -> list[str]:
    bad = []
    for s in sentences(markdown):
        keys = attributed(s)
        for kind, figure in figures(s):
            if kind not in ("percent", "decimal"):
                continue
            if keys is not None and in_file(kind, figure, keys):
                continue  # a paper's number, checked by the test above
            if keys is None and in_file(kind, figure, list(NUMBERS.papers), exact=True):
                continue  # a paper's number as printed ("80 %" of the targets), named in a neighbouring sentence
            bad.append(f"{figure!r} in: {s.strip()[:160]}")
        bad += [f"{m.group()!r} (a measured time) in: {s.strip()[:160]}" for m in SECOND.finditer(s)]
    return bad


def float_literals(code: str) -> list[float]:
    try:
        tree = ast.parse(re.sub(r"^\s*[%!].*$", "", code, flags=re.MULTILINE))
    except SyntaxError:
        return []
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and type(n.value) is float]


NAMES_A_PAPER_TABLE = re.compile(r"\bet al\b|\b(?:Table|Figure) \d", re.IGNORECASE)


# ------------------------------------------------------------------------------- the checker, on hand-made cases

@pytest.mark.parametrize("markdown, flagged", [
    ("In the paper the best head reached 0.941 against 0.835.", ["'0.941'", "'0.835'"]),
    ("a gap of the same order as the paper's 34.7 vs 26.7", ["'34.7'", "'26.7'"]),
    ("Clark et al. found the auxpass head 4-10 at 82.5 % against 40.5 %.", []),
    ("Clark et al. found the auxpass head 4-9 at 0.825.", ["'4-9'"]),
    ("Clark et al. (CoNLL-2012) report: nearest 27 %, best head 5-4, 65 %.", []),
    ("BERT read 3.3 billion words (Devlin et al. 2019, §3.1).", []),
    ("Devlin et al. used a vocabulary of 31,000 pieces.", ["'31,000'"]),
    ("Our best head reaches 0.58 on 45 sentences.", []),  # no paper named: the run test's business
])
def test_the_paper_check_flags_numbers_not_in_the_file(markdown, flagged):
    found = unfiled_paper_figures(markdown)
    assert [f.split(" in:")[0] for f in found] == flagged


@pytest.mark.parametrize("markdown, flagged", [
    ("Our best head reaches 0.58 against a baseline of 0.40.", ["'0.58'", "'0.40'"]),
    ("[CLS] takes about 40–48 % of the attention.", ["'48 %'"]),
    ("It took 88 s on a busy two-core CPU.", ["'88 s' (a measured time)"]),
    ("Guessing costs ln 2 ≈ 0.69; see `A ← 0.9999 A + 0.0001/n`.", []),
    ("Of the chosen tokens 80 % are replaced by [MASK].", []),  # BERT's own number, as printed in the file
    ("The printed table above gives the numbers; section 3.1 of the paper says why.", []),
])
def test_the_run_check_flags_typed_figures(markdown, flagged):
    assert [f.split(" in:")[0] for f in typed_run_figures(markdown)] == flagged


# -------------------------------------------------------------------------------------------- on the notebooks

@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_paper_numbers_in_the_text_are_in_the_file(path):
    bad = [f"cell {i}: {f}" for i, c in enumerate(cells(path)) if c["cell_type"] == "markdown"
           for f in unfiled_paper_figures(source(c))]
    assert not bad, (f"{path.name} quotes paper numbers that are not in attnwidgets/data/paper_numbers.json (add "
                     "them there, cited to table and page, and print them from it):\n  " + "\n  ".join(bad))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_code_cells_read_paper_numbers_from_the_file(path):
    bad = [f"cell {i}: {floats[:6]}" for i, c in enumerate(cells(path)) if c["cell_type"] == "code"
           and NAMES_A_PAPER_TABLE.search(source(c)) and (floats := float_literals(source(c)))]
    assert not bad, (f"{path.name}: code cells that cite a paper type decimal numbers; read them with "
                     "attnwidgets.data.papers.paper_table instead:\n  " + "\n  ".join(bad))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_numbers_about_our_runs_are_printed_not_typed(path):
    bad = [f"cell {i}: {f}" for i, c in enumerate(cells(path)) if c["cell_type"] == "markdown"
           for f in typed_run_figures(source(c))]
    assert not bad, (f"{path.name}: markdown types figures about a run; print them from the run (a code cell that "
                     "formats the variables), so switching the model keeps the text true:\n  " + "\n  ".join(bad))


# ----------------------------------------------------------------------------------------------- Wilson interval

def test_wilson_interval_matches_hand_computation():
    # 5 of 10, z = 1.959964: centre 0.5, half-width z·sqrt(0.025 + z²/400) / (1 + z²/10) = 0.263407
    lo, hi = wilson_interval(5, 10)
    assert lo == pytest.approx(0.236593, abs=1e-6) and hi == pytest.approx(0.763407, abs=1e-6)
    # 18 of 28 (notebook 02's NSP accuracy 0.64): centre (0.642857 + 0.068598) / 1.137195 = 0.625622,
    # half-width 1.959964 · sqrt(0.0081997 + 0.0012250) / 1.137195 = 0.167319
    lo, hi = wilson_interval(18, 28)
    assert lo == pytest.approx(0.458303, abs=1e-5) and hi == pytest.approx(0.792942, abs=1e-5)
    assert lo < 0.5 < hi  # chance is inside: 0.64 on 28 pairs does not tell the model from a coin


def test_wilson_interval_ends_and_confidence():
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(10, 10)[1] == 1.0
    # 0 of 10: the upper end is z² / (n + z²) = 3.841459 / 13.841459
    assert wilson_interval(0, 10)[1] == pytest.approx(3.841459 / 13.841459, abs=1e-6)
    narrow, wide = wilson_interval(18, 28, 0.5), wilson_interval(18, 28, 0.99)
    assert wide[0] < narrow[0] and narrow[1] < wide[1]


@pytest.mark.parametrize("args, error", [((3, 2), ValueError), ((1, 0), ValueError), ((-1, 5), ValueError),
                                         ((1, 5, 1.0), ValueError), ((1.5, 5), TypeError), ((True, 5), TypeError)])
def test_wilson_interval_refuses_bad_input(args, error):
    with pytest.raises(error):
        wilson_interval(*args)
