"""First paint of the views in headless Chromium, and where a view's first paint goes: its script, then the frame.

Usage::

    python benchmarks/bench_first_paint.py                       # the bundled model at 128 tokens, 9 loads per page
    python benchmarks/bench_first_paint.py --baseline OLD_STATIC # and the same pages with another build's bundles
    python benchmarks/bench_first_paint.py --smoke               # 16 tokens, one load (CI)

The pages are ``save_html(scope="view")`` pages, as bench_views.py measures first paint (milliseconds from the
start of navigation to the first frame after the view set its ``data-view``; median of ``--loads`` loads). Each
load is also split in two: until the view's script has set ``data-view`` (decoding, layout, drawing calls) and from
there to the next frame (what the browser still has to do before the picture shows: rasterising the canvas; a 2D
canvas draws lazily). ``--baseline DIR`` names a folder of bundles from another build (``attnwidgets/static`` of an
older checkout): each view is also saved with that bundle, and the two pages' loads take turns, so both see the
same load. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_views import READY, Browser, _text

#: view -> its bundle's file name
BUNDLES = {"HeadView": "head_view.js", "AttentionHeatmap": "heatmap.js", "ModelView": "model_view.js"}


def load_once(browser: Browser, path: Path, view: str) -> tuple[float, float]:
    """(ms until the view's script set data-view, ms until the frame after it) since navigation start."""
    page = browser.page()
    page.add_init_script(
        "new MutationObserver((ms) => { for (const m of ms) if (m.target.dataset && m.target.dataset.view "
        "&& window.__awDrawn === undefined) window.__awDrawn = performance.now(); })"
        ".observe(document, {subtree: true, attributes: true, attributeFilter: ['data-view']});")
    page.goto(path.resolve().as_uri(), wait_until="commit")
    page.wait_for_function(f"() => {READY[view]}", timeout=120_000)
    shown = float(page.evaluate("() => new Promise(r => requestAnimationFrame(() => r(performance.now())))"))
    drawn = float(page.evaluate("() => window.__awDrawn ?? NaN"))
    page.close()
    return drawn, shown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--loads", type=int, default=9)
    parser.add_argument("--baseline", type=Path, default=None, help="a folder of another build's bundles")
    parser.add_argument("--views", nargs="+", default=list(BUNDLES), choices=list(BUNDLES))
    parser.add_argument("--smoke", action="store_true", help="16 tokens, one load (that it runs, for CI)")
    args = parser.parse_args(argv)
    tokens, loads = (16, 1) if args.smoke else (args.tokens, args.loads)

    import attnwidgets as aw

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = aw.runner.get_runner(None).run(_text(tokens))
    browser = Browser()
    print(f"bundled all-MiniLM-L6-v2, {result.n_tokens} tokens; load average {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} CPUs; median of {loads} loads per page, loads of the builds taking turns")
    print("| view | build | first paint ms | script done ms | then frame ms |")
    print("|---|---|---|---|---|")
    try:
        with tempfile.TemporaryDirectory() as d:
            for view in args.views:
                pages: dict[str, Path] = {}
                widget: Any = getattr(aw, view)(result)
                pages["this checkout"] = aw.save_html(widget, Path(d) / f"{view}.html", scope="view")
                if args.baseline is not None:
                    widget._esm = (args.baseline / BUNDLES[view]).read_text(encoding="utf-8")
                    pages["baseline"] = aw.save_html(widget, Path(d) / f"{view}-baseline.html", scope="view")
                times: dict[str, list[tuple[float, float]]] = {k: [] for k in pages}
                for _ in range(loads):
                    for build, path in pages.items():
                        times[build].append(load_once(browser, path, view))
                for build in reversed(list(pages)):
                    drawn = statistics.median(t[0] for t in times[build])
                    shown = statistics.median(t[1] for t in times[build])
                    frame = statistics.median(t[1] - t[0] for t in times[build])
                    print(f"| {view} | {build} | {shown:.0f} | {drawn:.0f} | {frame:.0f} |")
    finally:
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
