"""What a room reads of a view in the page (issue 33 §1): the in-page checks of every widget view a notebook shows.

:data:`CANVAS_TEXTS` (an init script, before the page's own code) records every text a canvas draws (``fillText``):
its size in CSS pixels and its box, in the canvas's pixels after the context's transform. A clear, a fill or a resize
that covers a recorded text forgets it, so what is recorded is what the canvas shows now. :data:`CHECK` then reads one
widget output of the page: its DOM texts (one box per text node) and canvas texts, and reports

- ``small``: a visible text under ``minPx`` CSS pixels;
- ``faint``: a DOM text drawn at under half opacity (a room cannot read it);
- ``overlap``: two text boxes that overlap by more than ``slack`` pixels each way (the same text in the same place,
  drawn twice, counts once);
- ``cut``: a text, canvas or view box that sticks out of an ancestor (up to the notebook) that hides its overflow, so
  part of it cannot be seen nor scrolled to; and a canvas text that runs past its canvas's edge;
- ``map``: a view (``.aw-root``) whose largest canvas, its main map, is under ``minMap`` CSS pixels either way
  (AttentionProfile's one-row strip, QKStepThrough's columns, FillMask's bars, GenerationView's span-share lines and
  colour bars are not maps); a
  layers x heads grid of square cells (its canvas's ``data-cell``), as short as the model has layers, may instead have
  cells of ``minMap / 8`` px and a long side of ``minMap``.

The notebooks tier (test_notebooks_browser.py) runs it on every widget output, with the file browser open and closed.
"""

from __future__ import annotations

CANVAS_TEXTS = r"""
(() => {
  const texts = new WeakMap();
  window.__awCanvasTexts = (canvas) => texts.get(canvas) || [];
  const P = CanvasRenderingContext2D.prototype;
  const box = (ctx, x0, y0, x1, y1) => {
    const T = ctx.getTransform();
    const pts = [[x0, y0], [x1, y0], [x0, y1], [x1, y1]].map(([x, y]) => [T.a * x + T.c * y + T.e,
                                                                          T.b * x + T.d * y + T.f]);
    const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
    return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
  };
  // What a rectangle painted over (cleared or filled opaque) no longer shows.
  const cover = (ctx, x, y, w, h) => {
    const list = texts.get(ctx.canvas);
    if (!list) return;
    const [a, b, c, d] = box(ctx, x, y, x + w, y + h);
    texts.set(ctx.canvas, list.filter((t) => !(t.box[0] >= a - 1 && t.box[1] >= b - 1 && t.box[2] <= c + 1
                                                && t.box[3] <= d + 1)));
  };
  const fillText = P.fillText;
  P.fillText = function (text, x, y, maxWidth) {
    try {
      const s = String(text);
      if (this.canvas instanceof HTMLCanvasElement && s.trim()) {
        const m = this.measureText(s);
        const squeeze = maxWidth !== undefined && m.width > maxWidth ? maxWidth / m.width : 1;
        const T = this.getTransform();
        const px = parseFloat((this.font.match(/([\d.]+)px/) || [0, 0])[1]);
        const list = texts.get(this.canvas) || [];
        list.push({ text: s.slice(0, 40), px: px * Math.sqrt(Math.abs(T.a * T.d - T.b * T.c)),
                    box: box(this, x - m.actualBoundingBoxLeft * squeeze, y - m.actualBoundingBoxAscent,
                             x + m.actualBoundingBoxRight * squeeze, y + m.actualBoundingBoxDescent) });
        texts.set(this.canvas, list);
      }
    } catch (e) { /* never break a view's drawing */ }
    return fillText.apply(this, arguments);
  };
  const clearRect = P.clearRect, fillRect = P.fillRect;
  P.clearRect = function (x, y, w, h) { cover(this, x, y, w, h); return clearRect.apply(this, arguments); };
  P.fillRect = function (x, y, w, h) { cover(this, x, y, w, h); return fillRect.apply(this, arguments); };
  for (const prop of ["width", "height"]) {  // a resized canvas is blank
    const d = Object.getOwnPropertyDescriptor(HTMLCanvasElement.prototype, prop);
    Object.defineProperty(HTMLCanvasElement.prototype, prop, {
      configurable: true, get: d.get, set(v) { texts.delete(this); d.set.call(this, v); } });
  }
})();
"""

CHECK = r"""
([output, minPx, minMap, slack]) => {
  const o = output;
  const problems = [];
  // Canvases that are not maps: AttentionProfile's one-row overview (its map is its text), QKStepThrough's
  // columns (a column of bars per step of the computation), FillMask's bars, GenerationView's span-share lines
  // (a line chart under its steps x keys map, as wide as the view: in a narrow output it can outsize the map it
  // explains), and colour bars.
  const notMap = (c) => ["profile-strip", "fills-canvas", "row-canvas", "share-canvas"].includes(c.dataset.testid)
    || /^qk-/.test(c.dataset.testid || "") || c.closest(".aw-legend");
  const visible = (e) => e.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true });
  const texts = [];
  // DOM texts: one box per text node.
  const walker = document.createTreeWalker(o, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const e = n.parentElement;
    if (!n.textContent.trim() || !e || e.closest("option, script, style, canvas, select") || !visible(e)) continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    // one box per line the text takes (a text node that wraps spans two lines, not the rectangle around them)
    const lines = [...range.getClientRects()].filter((r) => r.width >= 1 && r.height >= 1);
    if (!lines.length) continue;
    let px = parseFloat(getComputedStyle(e).fontSize) * (e.currentCSSZoom ?? 1);  // a view zoomed to fit
    if (e instanceof SVGElement && e.getScreenCTM()) {
      const m = e.getScreenCTM();
      px *= Math.sqrt(Math.abs(m.a * m.d - m.b * m.c));
    }
    // What shows of a text its own element cuts (overflow hidden, a fitted title's ellipsis): the part in its box.
    const own = getComputedStyle(e), eb = e.getBoundingClientRect();
    const clipX = own.overflowX === "hidden" || own.overflowX === "clip";
    for (const r of lines) {
      const box = clipX ? [Math.max(r.left, eb.left), r.top, Math.min(r.right, eb.right), r.bottom]
                        : [r.left, r.top, r.right, r.bottom];
      if (box[2] - box[0] < 1) continue;
      texts.push({ text: n.textContent.trim().slice(0, 40), px, box, el: e, node: n });
    }
  }
  // Canvas texts, from canvas pixels to the page's.
  const canvases = [...o.querySelectorAll("canvas")].filter(visible);
  for (const c of canvases) {
    const r = c.getBoundingClientRect();
    if (!c.width || !c.height || r.width < 1) continue;
    const sx = r.width / c.width, sy = r.height / c.height;
    for (const t of window.__awCanvasTexts ? window.__awCanvasTexts(c) : []) {
      const [x0, y0, x1, y1] = t.box;
      texts.push({ text: t.text, px: t.px * Math.sqrt(sx * sy), el: c,
                   box: [r.left + x0 * sx, r.top + y0 * sy, r.left + x1 * sx, r.top + y1 * sy] });
      if (x0 < -1 || y0 < -1 || x1 > c.width + 1 || y1 > c.height + 1)
        problems.push({ kind: "cut", what: `canvas text ${JSON.stringify(t.text)} runs past its canvas's edge` });
    }
  }
  // Faint: a DOM text drawn at under half opacity (the product of its ancestors' opacities up to the output).
  const faint = new Set();
  for (const t of texts) {
    if (t.el instanceof HTMLCanvasElement) continue;
    let alpha = 1;
    for (let a = t.el; a && a !== o.parentElement; a = a.parentElement)
      alpha *= parseFloat(getComputedStyle(a).opacity);
    if (alpha < 0.5) faint.add(`${JSON.stringify(t.text)} at opacity ${alpha.toFixed(2)}`);
  }
  if (faint.size)
    problems.push({ kind: "faint", what: `${faint.size} texts faint: ${[...faint].slice(0, 5).join(", ")}` });
  const small = texts.filter((t) => t.px < minPx - 0.05);
  if (small.length) {
    const seen = [...new Map(small.map((t) => [`${t.text}|${t.px.toFixed(1)}`, t])).values()];
    problems.push({ kind: "small", what: `${small.length} texts under ${minPx} px: ` +
                    seen.slice(0, 5).map((t) => `${JSON.stringify(t.text)} ${t.px.toFixed(1)} px`).join(", ") });
  }
  const pairs = [];
  for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
    const a = texts[i].box, b = texts[j].box;
    const w = Math.min(a[2], b[2]) - Math.max(a[0], b[0]), h = Math.min(a[3], b[3]) - Math.max(a[1], b[1]);
    if (w <= slack || h <= slack) continue;
    if (texts[i].text === texts[j].text && a.every((v, k) => Math.abs(v - b[k]) <= 1)) continue;
    if (texts[i].node && texts[i].node === texts[j].node) continue;  // the runs of one line of one text
    pairs.push(`${JSON.stringify(texts[i].text)} / ${JSON.stringify(texts[j].text)}`);
  }
  if (pairs.length)
    problems.push({ kind: "overlap", what: `${pairs.length} overlapping text pairs: ${pairs.slice(0, 4).join(", ")}` });
  // Cut: a box that sticks out of an ancestor hiding its overflow (one that scrolls shows the rest).
  const top = o.closest(".jp-WindowedPanel-outer, .jp-Notebook") || document.body;
  const clipper = (e, box) => {
    for (let a = e.parentElement; a && a !== top.parentElement; a = a.parentElement) {
      const s = getComputedStyle(a);
      const r = a.getBoundingClientRect();
      const overX = box[0] < r.left - 1 || box[2] > r.right + 1, overY = box[1] < r.top - 1 || box[3] > r.bottom + 1;
      const hides = (v) => v === "hidden" || v === "clip";
      if ((overX && hides(s.overflowX)) || (overY && hides(s.overflowY)))
        return `${a.tagName.toLowerCase()}.${[...a.classList].slice(0, 2).join(".")}`;
      if (overX && !hides(s.overflowX) && s.overflowX !== "visible") {
        // it scrolls, if its scroll bar shows (an overlay bar, or one below the fold, the room does not see)
        const bar = a.offsetHeight - a.clientHeight - parseFloat(s.borderTopWidth) - parseFloat(s.borderBottomWidth);
        const shown = bar >= 2 && r.bottom <= window.innerHeight;
        return shown ? null : `${a.tagName.toLowerCase()}.${[...a.classList].slice(0, 2).join(".")} ` +
          "(it scrolls, but its scroll bar is not in sight)";
      }
      if (overY && !hides(s.overflowY) && s.overflowY !== "visible") return null;
    }
    return null;
  };
  const cut = new Set();
  for (const t of texts) {
    if (t.el instanceof HTMLCanvasElement) continue;
    // A one-line text its own box ends with an ellipsis (a fitted view's hint) shows that it goes on: not cut.
    const own = getComputedStyle(t.el);
    if (own.textOverflow === "ellipsis" && own.overflowX !== "visible") continue;
    const by = clipper(t.el, t.box);
    if (by) cut.add(`text ${JSON.stringify(t.text)} cut by ${by}`);
  }
  for (const e of [...canvases, ...o.querySelectorAll(".aw-root")]) {
    const r = e.getBoundingClientRect();
    const by = clipper(e, [r.left, r.top, r.right, r.bottom]);
    if (by) cut.add(`${e.tagName.toLowerCase()}[${e.dataset.testid || e.className}] ` +
                    `(${Math.round(r.width)} px wide) cut by ${by}`);
  }
  for (const what of cut) problems.push({ kind: "cut", what });
  // Each view's main map: its largest canvas.
  const maps = [];
  for (const root of o.querySelectorAll(".aw-root")) {
    const own = [...root.querySelectorAll("canvas")].filter((c) => visible(c) && !notMap(c));
    if (!own.length) continue;
    const area = (c) => c.getBoundingClientRect().width * c.getBoundingClientRect().height;
    const canvas = own.reduce((a, b) => (area(a) >= area(b) ? a : b));
    const big = canvas.getBoundingClientRect();
    const name = root.dataset.view || root.className;
    maps.push({ view: name, width: Math.round(big.width), height: Math.round(big.height) });
    // A layers x heads grid of square cells is as short as its model has layers (a 2-layer model's grid is two
    // rows): it passes as a map would, or with cells of at least minMap / 8 px and a long side of minMap.
    const cell = Number(canvas.dataset.cell || 0);
    const grid = cell > 0 && Number(canvas.dataset.nLayers || 0) > 0;
    const short = Math.min(big.width, big.height) < minMap &&
                  (!grid || cell < minMap / 8 || Math.max(big.width, big.height) < minMap);
    if (short)
      problems.push({ kind: "map", what: `${name}: main map ${Math.round(big.width)} x ${Math.round(big.height)} px,` +
                      ` under ${minMap} px` });
  }
  return { problems, maps, texts: texts.length, width: Math.round(o.getBoundingClientRect().width) };
}
"""

#: The limits of issue 33 §1: text at least 14 CSS px, a main map at least 200 px, overlap beyond 1 px each way.
MIN_TEXT_PX = 14
MIN_MAP_PX = 200
SLACK_PX = 1


def check_output(locator, *, min_px: float = MIN_TEXT_PX, min_map: float = MIN_MAP_PX,
                 slack: float = SLACK_PX) -> dict:
    """Run :data:`CHECK` on one widget output (a Playwright locator of ``.jp-OutputArea-output``)."""
    return locator.evaluate(f"(o) => ({CHECK})([o, {min_px}, {min_map}, {slack}])")
