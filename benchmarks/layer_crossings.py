"""Benchmark: how often one user action crosses the package's layers, and how often its numbers change form.

Issue 25 counted that building one ``AttentionHeatmap`` crossed layers 65 times and an ablation click 42 times. This
script recounts both, so the number before and after a refactor comes from a run.

A *crossing* is one Python call whose caller and callee are both modules of ``attnwidgets`` in different layers
(the layers of docs/architecture.md: result-level modules, analysis, viewdata, runner, studies, teaching, widgets,
plots, and export/fallback/cli/magics above them), counted with :func:`sys.setprofile` while the action runs.
``distinct`` counts each (caller function, callee function) pair once: how many different doors the action goes
through, whatever the loop sizes.

A *representation change* is one call that turns the numbers into another container: ``viewdata.wire.pack`` (array
to bytes), ``DataFrame.to_dict`` / ``to_records`` / ``itertuples`` (frame to rows of Python objects),
``Series.to_numpy`` (a column to an array), ``ndarray.tolist`` (array to Python lists), a ``DataFrame`` built from
rows, counted when our code makes the call.

Actions (the bundled all-MiniLM-L6-v2, offline):

- "AttentionHeatmap(result) build": ``aw.AttentionHeatmap(result)`` of a result run beforehand (not counted).
- "ablation click": an ``AblationWidget`` built beforehand; the page's change toggling head (1, 2) off
  (``set_state({"_page_seq": seq, "ablation": ...})``, what a click sends), which re-runs the model and redraws.

Run: ``PYTHONPATH=. python benchmarks/layer_crossings.py [--smoke] [--pairs] [--doors]`` (prints the table; asserts
nothing). ``--pairs``: the crossings by (caller layer, callee layer); ``--doors``: every door (caller function, callee
function) with how often it was crossed, and the function of ours that made each representation change.
``--smoke``: a shorter text and one watched text (CI: that it runs and prints its table).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attnwidgets as aw

PACKAGE = Path(aw.__file__).resolve().parent

#: module (first part below attnwidgets) -> layer, as docs/architecture.md draws them
RESULT_LEVEL = {
    "result",
    "qk_result",
    "attention_stack",
    "token_text",
    "generation_result",
    "persist",
    "html_repr",
    "data",
    "nbexport",
    "_version",
    "lazy",
}
TOP = {"export", "fallback", "cli", "magics", "lab", "__main__"}
LAYERS = {"analysis", "viewdata", "runner", "studies", "teaching", "widgets", "plots"}


def layer_of(filename: str) -> str | None:
    """The layer of a source file of ours, or None for anything else (numpy, torch, the standard library...).

    Examples
    --------
    >>> layer_of(str(PACKAGE / "viewdata" / "wire.py")), layer_of(str(PACKAGE / "result.py"))
    ('viewdata', 'result')
    >>> layer_of("/usr/lib/python3/json/__init__.py") is None
    True
    """
    try:
        parts = Path(filename).resolve().relative_to(PACKAGE).parts
    except (ValueError, OSError):
        return None
    if not parts:
        return None
    head = parts[0].removesuffix(".py")
    if head in LAYERS:
        return head
    if head in RESULT_LEVEL:
        return "result"
    if head in TOP:
        return "export"
    if head == "__init__":
        return "top"
    return head


#: Python functions whose call is a change of representation (name -> where it lives)
CONVERTERS = {
    ("pack", "wire.py"): "pack",
    ("to_dict", "frame.py"): "DataFrame.to_dict",
    ("to_records", "frame.py"): "DataFrame.to_records",
    ("itertuples", "frame.py"): "DataFrame.itertuples",
    ("to_numpy", "base.py"): "Series.to_numpy",
    ("__init__", "frame.py"): "DataFrame(rows)",
}
#: C functions whose call is one
C_CONVERTERS = {"tolist": "ndarray.tolist"}


def where(code: Any) -> str:
    """``module.py:function`` of a code object, the module's path below the package (or the file's name)."""
    try:
        name = Path(code.co_filename).resolve().relative_to(PACKAGE).as_posix()
    except (ValueError, OSError):
        name = Path(code.co_filename).name
    return f"{name}:{code.co_qualname}"


class Count:
    """A ``sys.setprofile`` hook: crossings between our layers, and representation changes made by our code."""

    def __init__(self) -> None:
        self.crossings = 0
        self.pairs: Counter[tuple[str, str]] = Counter()
        self.doors: Counter[tuple[str, str]] = Counter()
        self.changes: Counter[str] = Counter()
        self.change_sites: Counter[tuple[str, str]] = Counter()  # (converter, the function of ours that called it)
        self._layers: dict[str, str | None] = {}

    def _layer(self, filename: str) -> str | None:
        hit = self._layers.get(filename, "?")
        if hit == "?":
            hit = self._layers[filename] = layer_of(filename)
        return hit

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            caller = frame.f_back
            if caller is None:
                return
            callee_layer = self._layer(code.co_filename)
            caller_layer = self._layer(caller.f_code.co_filename)
            if callee_layer is not None and caller_layer is not None and callee_layer != caller_layer:
                self.crossings += 1
                self.pairs[(caller_layer, callee_layer)] += 1
                self.doors[(where(caller.f_code), where(code))] += 1
            name = CONVERTERS.get((code.co_name, Path(code.co_filename).name))
            if name is not None and caller_layer is not None:
                self.changes[name] += 1
                self.change_sites[(name, where(caller.f_code))] += 1
        elif event == "c_call":
            name = C_CONVERTERS.get(getattr(arg, "__name__", ""))
            if name is not None and self._layer(frame.f_code.co_filename) is not None:
                self.changes[name] += 1
                self.change_sites[(name, where(frame.f_code))] += 1


def measure(action: Callable[[], Any]) -> tuple[Count, float]:
    count = Count()
    start = time.perf_counter()
    sys.setprofile(count)
    try:
        action()
    finally:
        sys.setprofile(None)
    return count, time.perf_counter() - start


def heatmap_build(text: str) -> Callable[[], Any]:
    result = aw.run(text)
    return lambda: aw.AttentionHeatmap(result)


def ablation_click(texts: list[str], pairs: list[str]) -> Callable[[], Any]:
    widget = aw.AblationWidget(texts, text_pairs=pairs)
    change = {
        "_page_seq": 1,
        "ablation": {"edits": [{"stack": "self", "layer": 1, "head": 2, "mode": "zero", "scale": 0.0}]},
    }

    def click() -> None:
        widget.set_state(change)
        if widget._error:
            raise RuntimeError(widget._error)

    return click


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="a shorter text, one watched text (CI)")
    parser.add_argument("--pairs", action="store_true", help="also print the crossings by (caller, callee) layer")
    parser.add_argument(
        "--doors",
        action="store_true",
        help="also print each door (caller function -> callee function) with its count, and where "
        "each representation change is made",
    )
    args = parser.parse_args()
    long_text = "The cat sat on the mat because it was tired after a long day."
    text = "The cat sat on the mat." if args.smoke else long_text
    texts = ["A man is playing a guitar.", "The cat sat on the mat."][: 1 if args.smoke else 2]
    pairs = ["A man plays the guitar.", "A dog ran in the park."][: len(texts)]
    actions = {"AttentionHeatmap(result) build": heatmap_build(text), "ablation click": ablation_click(texts, pairs)}
    names = sorted({n for n in CONVERTERS.values()} | set(C_CONVERTERS.values()))
    print(f"attnwidgets from {PACKAGE}")
    print("| action | crossings | distinct doors | representation changes | " + " | ".join(names) + " | seconds |")
    print("|---|---:|---:|---:|" + "---:|" * len(names) + "---:|")
    counts = {}
    for label, action in actions.items():
        count, seconds = measure(action)
        counts[label] = count
        print(
            f"| {label} | {count.crossings} | {len(count.doors)} | {sum(count.changes.values())} | "
            + " | ".join(str(count.changes[n]) for n in names)
            + f" | {seconds:.2f} |"
        )
    if args.pairs:
        for label, count in counts.items():
            print(f"\n{label}: crossings by (caller layer -> callee layer)")
            for (a, b), n in count.pairs.most_common():
                print(f"  {a:>8} -> {b:<8} {n}")
    if args.doors:
        for label, count in counts.items():
            print(f"\n{label}: doors (caller -> callee, times crossed)")
            for (a, b), n in sorted(count.doors.items(), key=lambda item: (-item[1], item[0])):
                print(f"  {n:>4}  {a} -> {b}")
            print(f"{label}: representation changes by the function that made them")
            for (name, site), n in sorted(count.change_sites.items(), key=lambda item: (-item[1], item[0])):
                print(f"  {n:>4}  {name:<20} {site}")


if __name__ == "__main__":
    main()
