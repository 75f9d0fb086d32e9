"""The numbers the tutorials quote from papers, in one file: ``paper_numbers.json``.

Each table of the file names its paper, the table or section and the page it comes from, and how it was checked. The
notebooks print their comparisons from here instead of typing a paper's numbers into their text, and
``tests/project/test_paper_numbers.py`` fails when a notebook's text quotes a paper number that is not in the file.

Examples
--------
>>> from attnwidgets.data.papers import paper_table
>>> t = paper_table("clark2019/table1")
>>> t.row(relation="auxpass")["head"], t.row(relation="auxpass")["accuracy"], t.row(relation="auxpass")["baseline"]
('4-10', 82.5, 40.5)
>>> t.source
'Clark et al. 2019, Table 1, p. 5'
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

__all__ = ["Paper", "PaperNumbers", "PaperNumbersError", "PaperTable", "load_paper_numbers", "paper_table"]

FILE_NAME = "paper_numbers.json"
ColumnKind = Literal["text", "head", "number", "percent"]
COLUMN_KINDS: tuple[str, ...] = ("text", "head", "number", "percent")
Cell = str | float


class PaperNumbersError(ValueError):
    """The paper-numbers file is missing, not JSON, or not in the expected shape (the message names the file, the
    entry and what to fix)."""


@dataclass(frozen=True)
class Paper:
    """One cited paper: ``key`` (``"clark2019"``), author surnames (first author first), year, title, venue, url."""

    key: str
    authors: tuple[str, ...]
    year: int
    title: str
    venue: str
    url: str

    @property
    def short(self) -> str:
        """``"Clark et al. 2019"`` (two authors: ``"A and B 2019"``)."""
        names = self.authors
        who = names[0] if len(names) == 1 else f"{names[0]} and {names[1]}" if len(names) == 2 else \
            f"{names[0]} et al."
        return f"{who} {self.year}"


@dataclass(frozen=True)
class PaperTable:
    """A table of numbers from one place in one paper.

    ``columns`` maps each column name to its kind: ``"text"``, ``"head"`` (a 1-based ``"layer-head"`` label as the
    paper writes it), ``"number"`` or ``"percent"`` (as printed: 94.3 for 94.3 %). ``rows`` are dicts over those
    columns. ``checked`` says how the numbers were verified.
    """

    key: str
    paper: Paper
    where: str
    page: int
    caption: str
    columns: Mapping[str, ColumnKind]
    rows: tuple[Mapping[str, Cell], ...]
    checked: str

    @property
    def source(self) -> str:
        """``"Clark et al. 2019, Table 1, p. 5"``: what to print under a comparison."""
        page = f", p. {self.page}" if self.page else ""
        return f"{self.paper.short}, {self.where}{page}"

    def row(self, **match: Cell) -> Mapping[str, Cell]:
        """The one row whose cells equal ``match`` (``row(relation="det")``); a clear error if none or several."""
        found = [r for r in self.rows if all(r.get(k) == v for k, v in match.items())]
        if len(found) != 1:
            raise KeyError(f"{self.key}: {len(found)} rows match {match}; the rows are "
                           f"{[dict(r) for r in self.rows]}")
        return found[0]

    def column(self, name: str) -> list[Cell]:
        """The cells of one column, in row order."""
        if name not in self.columns:
            raise KeyError(f"{self.key} has no column {name!r}; it has {list(self.columns)}")
        return [r[name] for r in self.rows]

    def value(self, column: str = "value", **match: Cell) -> float:
        """One number: ``value("accuracy", relation="det")`` → 94.3."""
        cell = self.row(**match)[column]
        if isinstance(cell, str):
            raise TypeError(f"{self.key}: column {column!r} holds text ({cell!r}), not a number")
        return float(cell)

    def numbers(self) -> Iterator[tuple[str, Cell]]:
        """Every number and head label of the table as ``(column, cell)``; empty cells left out."""
        for r in self.rows:
            for name, kind in self.columns.items():
                if kind != "text" and r[name] != "":
                    yield name, r[name]


@dataclass(frozen=True)
class PaperNumbers:
    """The whole file: ``papers`` by key and ``tables`` by key (``"clark2019/table1"``)."""

    papers: Mapping[str, Paper]
    tables: Mapping[str, PaperTable]
    path: Path

    def table(self, key: str) -> PaperTable:
        if key not in self.tables:
            raise KeyError(f"{self.path.name} has no table {key!r}; it has {sorted(self.tables)}")
        return self.tables[key]

    def of_paper(self, paper: str) -> list[PaperTable]:
        """The tables of one paper (by key, ``"clark2019"``)."""
        return [t for t in self.tables.values() if t.paper.key == paper]


def _fail(path: Path, where: str, what: str) -> PaperNumbersError:
    return PaperNumbersError(f"{path}: {where}: {what}")


def _text(path: Path, where: str, obj: Mapping[str, object], name: str) -> str:
    value = obj.get(name)
    if not isinstance(value, str) or not value.strip():
        raise _fail(path, where, f"'{name}' must be a non-empty string, got {value!r}")
    return value


def _paper(path: Path, key: str, obj: object) -> Paper:
    where = f"papers.{key}"
    if not isinstance(obj, dict):
        raise _fail(path, where, f"must be an object, got {type(obj).__name__}")
    authors = obj.get("authors")
    if not isinstance(authors, list) or not authors or not all(isinstance(a, str) and a for a in authors):
        raise _fail(path, where, f"'authors' must be a non-empty list of surnames, got {authors!r}")
    year = obj.get("year")
    if not isinstance(year, int) or isinstance(year, bool) or not 1900 < year < 2100:
        raise _fail(path, where, f"'year' must be a year such as 2019, got {year!r}")
    return Paper(key, tuple(authors), year, _text(path, where, obj, "title"), _text(path, where, obj, "venue"),
                 _text(path, where, obj, "url"))


def _head_label(cell: object) -> bool:
    if not isinstance(cell, str):
        return False
    if cell == "":
        return True
    parts = cell.split("-")
    return len(parts) == 2 and all(p.isdigit() and int(p) >= 1 for p in parts)


def _cell(path: Path, where: str, kind: str, cell: object) -> Cell:
    if kind == "text":
        if not isinstance(cell, str):
            raise _fail(path, where, f"a text column needs a string, got {cell!r}")
        return cell
    if kind == "head":
        if not _head_label(cell):
            raise _fail(path, where, f"a head column needs a 1-based 'layer-head' label such as '8-11' (or '' for "
                                     f"none), got {cell!r}")
        return str(cell)
    if isinstance(cell, bool) or not isinstance(cell, (int, float)) or not math.isfinite(cell):
        raise _fail(path, where, f"a {kind} column needs a finite number, got {cell!r}")
    if kind == "percent" and not 0 <= cell <= 100:
        raise _fail(path, where, f"a percent column holds the number as printed, 0 to 100, got {cell!r}")
    return float(cell)


def _table(path: Path, key: str, obj: object, papers: Mapping[str, Paper]) -> PaperTable:
    where = f"tables.{key}"
    if not isinstance(obj, dict):
        raise _fail(path, where, f"must be an object, got {type(obj).__name__}")
    paper = obj.get("paper")
    if not isinstance(paper, str) or paper not in papers:
        raise _fail(path, where, f"'paper' must be one of the keys of 'papers' ({sorted(papers)}), got {paper!r}")
    page = obj.get("page")
    if not isinstance(page, int) or isinstance(page, bool) or page < 0:
        raise _fail(path, where, f"'page' must be a page number (0 when the source has no pages), got {page!r}")
    columns = obj.get("columns")
    if not isinstance(columns, dict) or not columns or any(k not in COLUMN_KINDS for k in columns.values()):
        raise _fail(path, where, f"'columns' must map each column to one of {list(COLUMN_KINDS)}, got {columns!r}")
    rows = obj.get("rows")
    if not isinstance(rows, list) or not rows:
        raise _fail(path, where, "'rows' must be a non-empty list")
    parsed = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or set(row) != set(columns):
            got = sorted(row) if isinstance(row, dict) else type(row).__name__
            raise _fail(path, f"{where}.rows[{i}]", f"must have exactly the columns {sorted(columns)}, got {got}")
        parsed.append({name: _cell(path, f"{where}.rows[{i}].{name}", columns[name], row[name]) for name in columns})
    return PaperTable(key, papers[paper], _text(path, where, obj, "where"), page, _text(path, where, obj, "caption"),
                      dict(columns), tuple(parsed), _text(path, where, obj, "checked"))


def load_paper_numbers(path: str | Path | None = None) -> PaperNumbers:
    """Read and check the paper-numbers file (the shipped one by default).

    Raises
    ------
    PaperNumbersError
        The file is missing, is not JSON (the message gives the line and column), or an entry is not in the
        expected shape (the message names the entry and what it must be).
    """
    file = Path(path) if path is not None else Path(__file__).resolve().parent / FILE_NAME
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise PaperNumbersError(f"{file}: cannot be read ({err}); reinstall attnwidgets (the file ships inside "
                                "the package) or pass the path of a paper-numbers JSON file") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise PaperNumbersError(f"{file}: line {err.lineno}, column {err.colno}: not valid JSON ({err.msg})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("papers"), dict) or not isinstance(raw.get("tables"), dict):
        raise PaperNumbersError(f"{file}: the top level must be an object with 'papers' and 'tables' objects")
    papers = {k: _paper(file, k, v) for k, v in raw["papers"].items()}
    tables = {k: _table(file, k, v, papers) for k, v in raw["tables"].items()}
    return PaperNumbers(papers, tables, file)


@lru_cache(maxsize=1)
def _shipped() -> PaperNumbers:
    return load_paper_numbers()


def paper_table(key: str) -> PaperTable:
    """One table of the shipped file, by key: ``paper_table("clark2019/table1")``."""
    return _shipped().table(key)
