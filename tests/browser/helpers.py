"""What the browser tests share: reading a canvas, pointing at one of its cells, the tooltip, and waiting for the
page or for Python.

``where`` is a Playwright Page (search the whole document) or a Locator (search inside one widget); ``target`` is a
``data-testid`` ("heatmap-canvas") or a CSS selector (anything with ``[``, ``.``, ``#`` or a space), and names the
first match.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

# Pixels below 250 in any channel count as ink; `sum` weighs the channels so that a change of colour
# changes it (compare two reads to see that the picture changed).
CANVAS_STATS = """(c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const colours = new Set(); let ink = 0, sum = 0;
    for (let i = 0; i < d.length; i += 4) {
        if (d[i] < 250 || d[i+1] < 250 || d[i+2] < 250) ink++;
        colours.add((d[i] << 16) | (d[i+1] << 8) | d[i+2]);
        sum += d[i] + 3 * d[i+1] + 7 * d[i+2];
    }
    return { colours: colours.size, ink, sum, ...c.dataset };
}"""


def selector(target: str) -> str:
    """A CSS selector for ``target``: itself if it is one, else the element with that data-testid."""
    return target if any(c in target for c in "[.# ") else f"[data-testid={target}]"


def _page(where: Any) -> Any:
    return getattr(where, "page", where)  # a Locator knows its page; a Page is one


def canvas_stats(where: Any, target: str) -> dict:
    """Ink (non-white pixels), distinct colours, a colour-weighted sum and the data attributes of a canvas."""
    return where.locator(selector(target)).first.evaluate(CANVAS_STATS)


def dataset(where: Any, target: str) -> dict:
    """The data attributes of an element (what a widget publishes about its drawing)."""
    return where.locator(selector(target)).first.evaluate("(e) => ({...e.dataset})")


def page_point(where: Any, target: str, x: float, y: float) -> tuple[float, float]:
    """Page coordinates of CSS pixel (x, y) of an element, scrolled into view."""
    element = where.locator(selector(target)).first
    element.scroll_into_view_if_needed()
    box = element.bounding_box()
    return box["x"] + x, box["y"] + y


def row_point(where: Any, target: str, q: int, col: int = 1) -> tuple[float, float]:
    """The page point of query row ``q``, key column ``col`` of a heatmap canvas (its ``x0``, ``y0``, ``cell``)."""
    d = dataset(where, target)
    cell = float(d["cell"])
    return page_point(where, target, float(d["x0"]) + (col + 0.5) * cell, float(d["y0"]) + (q + 0.5) * cell)


def unisolate(text: str) -> str:
    """``text`` without the FSI/PDI marks the views put around every token and model name (test_bidi_browser.py
    checks that they are there)."""
    return text.replace("\u2068", "").replace("\u2069", "")


def tooltip_text(where: Any) -> str:
    """The widget tooltip's text, once it shows, without the isolation marks around tokens (see ``unisolate``)."""
    tip = where.locator(selector("tooltip")).first
    tip.wait_for(state="visible", timeout=5000)
    return unisolate(tip.inner_text())


def hover_cell(where: Any, target: str, row: int, col: int) -> str:
    """Move the mouse to the middle of cell (row, col) of a grid canvas and return the tooltip. The canvas publishes
    x0, y0 and either ``cell`` (square cells) or ``cw``/``ch``."""
    d = dataset(where, target)
    cw = float(d.get("cw", d.get("cell")))
    ch = float(d.get("ch", d.get("cell")))
    x, y = page_point(where, target, float(d["x0"]) + (col + 0.5) * cw, float(d["y0"]) + (row + 0.5) * ch)
    _page(where).mouse.move(x, y)
    return tooltip_text(where)


def wait_dataset(where: Any, target: str, key: str, value: str, timeout: float = 20) -> dict:
    """Wait until ``target`` has ``data-<key>`` equal to ``value`` (a view has drawn); return its data attributes."""
    deadline = time.time() + timeout
    d: dict = {}
    while time.time() < deadline:
        d = dataset(where, target)
        if d.get(key) == value:
            return d
        _page(where).wait_for_timeout(200)
    raise AssertionError(f"{target}: data-{key} is {d.get(key)!r}, expected {value!r}")


def redrawn(where: Any, target: str, before: int, timeout: float = 20) -> dict:
    """Wait until canvas ``target`` draws something else (its colour-weighted ``sum`` is no longer ``before``: a redraw
    waits for Python's reply); return its stats."""
    deadline = time.time() + timeout
    got = canvas_stats(where, target)
    while got["sum"] == before and time.time() < deadline:
        _page(where).wait_for_timeout(250)
        got = canvas_stats(where, target)
    assert got["sum"] != before, f"{target} did not redraw: {got}"
    return got


def pressed(where: Any, target: str) -> str | None:
    """The ``aria-pressed`` of a toggle button ("true" or "false"; None when it has none)."""
    return where.locator(selector(target)).get_attribute("aria-pressed")


def eventually(nb: Any, code: str, expected: str, timeout: float = 20) -> None:
    """Python sees a page change once its comm message is handled: poll ``code`` until it prints ``expected``."""
    deadline = time.time() + timeout
    got = ""
    while time.time() < deadline:
        got = nb.python(code).strip()
        if got == expected:
            return
        nb.page.wait_for_timeout(250)
    raise AssertionError(f"{code!r} printed {got!r}, expected {expected!r}")


def count_control_listeners(page: Any) -> None:
    """From now on, count listeners added to minus listeners removed from form controls and buttons in the page (what
    widgets rebuild on every change); :func:`control_listener_balance` reads the count."""
    page.evaluate(
        """() => {
          window.__awNet = 0;
          const isControl = (t) =>
            t instanceof HTMLInputElement || t instanceof HTMLSelectElement || t instanceof HTMLButtonElement;
          const add = EventTarget.prototype.addEventListener;
          const rm = EventTarget.prototype.removeEventListener;
          EventTarget.prototype.addEventListener = function (...a) {
            if (isControl(this)) window.__awNet++;
            return add.apply(this, a);
          };
          EventTarget.prototype.removeEventListener = function (...a) {
            if (isControl(this)) window.__awNet--;
            return rm.apply(this, a);
          };
        }"""
    )


def control_listener_balance(page: Any) -> int:
    """Listeners added to controls minus those removed since :func:`count_control_listeners`."""
    return int(page.evaluate("() => window.__awNet"))


def track_live_listeners(page: Any) -> None:
    """From now on, keep every listener added to a form control or a button until it is removed (the same element,
    type and function); :func:`live_listeners` counts those still attached. Unlike :func:`control_listener_balance`,
    listeners added before the call never count, so a view's teardown can be checked on its own."""
    page.evaluate(
        """() => {
          const live = (window.__awLive = []);
          const isControl = (t) =>
            t instanceof HTMLInputElement || t instanceof HTMLSelectElement || t instanceof HTMLButtonElement;
          const add = EventTarget.prototype.addEventListener;
          const rm = EventTarget.prototype.removeEventListener;
          EventTarget.prototype.addEventListener = function (type, fn, ...rest) {
            if (isControl(this)) live.push([this, type, fn]);
            return add.call(this, type, fn, ...rest);
          };
          EventTarget.prototype.removeEventListener = function (type, fn, ...rest) {
            const i = live.findIndex(([el, t, f]) => el === this && t === type && f === fn);
            if (i >= 0) live.splice(i, 1);
            return rm.call(this, type, fn, ...rest);
          };
        }"""
    )


def live_listeners(page: Any) -> int:
    """Listeners added to controls since :func:`track_live_listeners` and not removed yet."""
    return int(page.evaluate("() => window.__awLive.length"))


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve(cmd: list[str], ready: str, log_dir: Path, *, env: dict[str, str] | None = None,
          timeout: float = 120) -> Iterator[subprocess.Popen]:
    """Run a server (``cmd``) until the block ends; wait at most ``timeout`` s until ``ready`` (a URL) answers.

    Its output goes to ``log_dir/server.log``, named in the error when it exits or never answers. It gets the tests'
    environment (PYTHONPATH included, so it and its kernels import this checkout) offline, plus ``env``.

    It runs in a process group of its own, ended as a whole: a Jupyter server stopped while one of its kernels is
    still starting (a test that ends right after opening a notebook) waited out the whole 20 s before its kill, the
    browser tier's slowest teardown, and its kernels outlived it.
    """
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false",
           **(env or {})}
    log_path = log_dir / "server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.time() + timeout
            while True:
                try:
                    with urllib.request.urlopen(ready, timeout=1):
                        break
                except OSError:
                    if proc.poll() is not None:
                        raise RuntimeError(f"{cmd[:4]} exited: see {log_path}") from None
                    if time.time() > deadline:
                        raise RuntimeError(f"{cmd[:4]} did not answer {ready} in {timeout:.0f} s: see {log_path}"
                                           ) from None
                    time.sleep(0.5)
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=2)  # a server with idle kernels stops in under a second
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # its kernels, and anything else it started
            except ProcessLookupError:
                pass
