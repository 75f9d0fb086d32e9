// PositionalExplorer's drawing: each panel's matrix on a diverging scale, its ticks and axis names, its legend and
// texts (state.ts says what).

import { prepareCanvas } from "../../draw/canvas";
import { type DivergingName, absMax, divergingCss } from "../../draw/diverging";
import { type PanelGeometry, panelGeometry, tickIndices } from "../../draw/teaching";
import { decode } from "../../shared/buffers";
import { h } from "../../shared/dom";
import type { Theme } from "../../shared/theme";
import { type PositionalPanel, divergingPixels, legendEnds, panelLeft } from "./state";

/** One panel's elements: title, canvas, legend (canvas between its end texts), scale note and note. */
export interface PanelBox {
  head: HTMLDivElement;
  canvas: HTMLCanvasElement;
  note: HTMLDivElement;
  legend: HTMLCanvasElement;
  lo: HTMLSpanElement;
  hi: HTMLSpanElement;
  scale: HTMLDivElement;
  box: HTMLDivElement;
}

/** What a drawn panel keeps for its tooltip. */
export interface Drawn {
  panel: PositionalPanel;
  data: Float32Array;
  extra: Float32Array | null;
  geom: PanelGeometry;
  vmax: number;
}

/** The elements of panel i. */
export function panelBox(i: number): PanelBox {
  const head = h("div", { className: "aw-title", "data-testid": `panel-title-${i}` });
  const canvas = h("canvas", { "data-testid": `pos-panel-${i}` });
  const note = h("div", { className: "aw-muted", "data-testid": `panel-note-${i}` });
  note.style.maxWidth = "420px";
  const legend = h("canvas", { "data-export-text": true });
  const lo = h("span", { className: "aw-muted", "data-export-text": true });
  const hi = h("span", { className: "aw-muted", "data-export-text": true });
  const legendRow = h("div", { className: "aw-legend" }, lo, legend, hi);
  const scale = h("div", {
    className: "aw-muted",
    "data-testid": `scale-note-${i}`,
    "data-export-text": true,
  });
  scale.style.maxWidth = "420px";
  const box = h("div", {}, head, canvas, legendRow, scale, note);
  return { head, canvas, note, legend, lo, hi, scale, box };
}

/** The matrix as pixels, scaled to the panel's cells (Python's shade, -1..1, when sent; else ±vmax). */
function drawMatrix(
  ctx: CanvasRenderingContext2D,
  geom: PanelGeometry,
  values: { data: Float32Array; shade: Float32Array | null; vmax: number },
  map: DivergingName,
): void {
  const { rows, cols } = geom;
  const off = document.createElement("canvas");
  off.width = Math.max(cols, 1);
  off.height = Math.max(rows, 1);
  const pixels = values.shade
    ? divergingPixels(values.shade, rows, cols, 1, map)
    : divergingPixels(values.data, rows, cols, values.vmax, map);
  off.getContext("2d")!.putImageData(new ImageData(pixels, cols, rows), 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(off, geom.x0, geom.y0, geom.w, geom.h);
}

/** A few row and column numbers, then the axis names (text drawn as pixels). */
function drawAxes(
  ctx: CanvasRenderingContext2D,
  geom: PanelGeometry,
  t: Theme,
  panel: PositionalPanel,
): void {
  const font = t.name === "lecture" ? 16 : 11;
  ctx.font = `${font}px ${t.fontFamily}`;
  ctx.fillStyle = t.fg;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const r of tickIndices(geom.rows, 5))
    ctx.fillText(String(r), geom.x0 - 4, geom.y0 + (r + 0.5) * geom.ch);
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  // The last number ends at the map's right edge (centred on the last column, half of "383" ran off the canvas);
  // drawn from the right, a number that would meet the one drawn after it is left out.
  let left = Number.POSITIVE_INFINITY;
  for (const c of [...tickIndices(geom.cols, 5)].reverse()) {
    const text = String(c + panel.col_start);
    const w = ctx.measureText(text).width;
    const x = Math.min(geom.x0 + (c + 0.5) * geom.cw, geom.x0 + geom.w - w / 2);
    if (x + w / 2 + 4 > left) continue;
    ctx.fillText(text, x, geom.y0 + geom.h + 3);
    left = x - w / 2;
  }
  ctx.fillStyle = t.muted;
  ctx.fillText(panel.cols, geom.x0 + geom.w / 2, geom.y0 + geom.h + font + 8);
  ctx.save();
  ctx.translate(font / 2 + 2, geom.y0 + geom.h / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textBaseline = "middle";
  ctx.fillText(panel.rows, 0, 0);
  ctx.restore();
}

/** The panel's title, notes and legend. */
function fillTexts(b: PanelBox, panel: PositionalPanel, map: DivergingName, vmax: number): void {
  b.head.textContent = panel.title;
  b.note.textContent = panel.note ?? "";
  [b.lo.textContent, b.hi.textContent] = legendEnds(panel, vmax);
  b.scale.textContent = panel.scale_note ?? "";
  const lctx = b.legend.getContext("2d")!;
  b.legend.width = 140;
  b.legend.height = 12;
  for (let x = 0; x < 140; x++) {
    lctx.fillStyle = divergingCss(map, ((x / 139) * 2 - 1) * vmax, vmax);
    lctx.fillRect(x, 0, 1, 12);
  }
}

/** Paint panel `panel` into box `b`, `side` px square at most (null: the theme's natural side). */
export function paintPanel(
  b: PanelBox,
  panel: PositionalPanel,
  t: Theme,
  o: { side: number | null; colormap: string; encoding: string },
): Drawn {
  const m = decode(panel.matrix);
  const [rows, cols] = m.shape;
  const extra = panel.extra ? decode(panel.extra).data : null;
  const big = t.name === "lecture";
  const left = panelLeft(big);
  const box = o.side ?? (big ? 440 : 340);
  const geom = panelGeometry(rows, cols, box, box, left, 8, big ? 40 : 28);
  const width = Math.ceil(left + Math.max(geom.w, 120) + 12);
  const height = Math.ceil(8 + geom.h + (big ? 56 : 42));
  const ctx = prepareCanvas(b.canvas, width, height);
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, width, height);
  const map = (o.colormap || (big ? "puor" : "rdbu")) as DivergingName;
  const shade = panel.shade ? decode(panel.shade).data : null;
  const vmax = panel.vmax ?? (absMax(m.data) || 1);
  drawMatrix(ctx, geom, { data: m.data, shade, vmax }, map);
  ctx.strokeStyle = t.grid;
  ctx.strokeRect(geom.x0 - 0.5, geom.y0 - 0.5, geom.w + 1, geom.h + 1);
  drawAxes(ctx, geom, t, panel);
  Object.assign(b.canvas.dataset, {
    rows: String(rows),
    cols: String(cols),
    x0: String(geom.x0),
    y0: String(geom.y0),
    cw: String(geom.cw),
    ch: String(geom.ch),
    vmax: String(vmax),
    encoding: o.encoding,
  });
  fillTexts(b, panel, map, vmax);
  return { panel, data: m.data, extra, geom, vmax };
}
