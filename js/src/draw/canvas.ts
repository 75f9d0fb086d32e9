// Painting a matrix and its labels on a canvas: one ImageData pixel per cell, scaled up without smoothing,
// so 512 x 512 cells cost the same as 5 x 5.

import { h } from "../shared/dom";
import { isolate, tokenLabel } from "../shared/text";
import type { Theme } from "../shared/theme";
import { type ColorMapName, lut, lutIndex } from "./colors";
import type { HeatmapLayout } from "./layout";

/** Size the canvas for the layout at the device pixel ratio and return a context in CSS pixel units. */
export function prepareCanvas(
  canvas: HTMLCanvasElement,
  width: number,
  height: number,
): CanvasRenderingContext2D {
  const dpr = Math.min(globalThis.devicePixelRatio || 1, 2);
  const w = Math.round(width * dpr);
  const h = Math.round(height * dpr);
  const ctx = canvas.getContext("2d");
  if (!ctx) throw new Error("this browser gives no 2D canvas");
  // Same size: clear and reset in place. Assigning width/height reallocates the backing store, which for a tall
  // HeadView at 512 tokens (about 7 M pixels) costs a good part of a repaint.
  const reset = (ctx as { reset?: () => void }).reset;
  if (canvas.width === w && canvas.height === h && typeof reset === "function") {
    reset.call(ctx);
  } else {
    canvas.width = w;
    canvas.height = h;
  }
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return ctx;
}

let measuring: CanvasRenderingContext2D | null = null;

/** A context for measuring text only (a detached 1 x 1 canvas, shared): measuring on a widget's own canvas meant
 * shrinking it and growing it back on every repaint. */
export function textMeasurer(): CanvasRenderingContext2D {
  if (!measuring) {
    const ctx = document.createElement("canvas").getContext("2d");
    if (!ctx) throw new Error("this browser gives no 2D canvas");
    measuring = ctx;
  }
  return measuring;
}

/** RGBA pixels of a rows x cols matrix; masked (NaN) cells are drawn in light grey. */
export function matrixPixels(
  data: Float32Array,
  rows: number,
  cols: number,
  vmax: number,
  map: ColorMapName,
): Uint8ClampedArray<ArrayBuffer> {
  const table = lut(map);
  const px = new Uint8ClampedArray(new ArrayBuffer(rows * cols * 4));
  for (let i = 0; i < rows * cols; i++) {
    const v = data[i];
    const o = i * 4;
    if (Number.isNaN(v)) {
      px[o] = 235;
      px[o + 1] = 235;
      px[o + 2] = 235;
    } else {
      const j = lutIndex(v, vmax) * 3;
      px[o] = table[j];
      px[o + 1] = table[j + 1];
      px[o + 2] = table[j + 2];
    }
    px[o + 3] = 255;
  }
  return px;
}

export function drawMatrix(
  ctx: CanvasRenderingContext2D,
  data: Float32Array,
  rows: number,
  cols: number,
  x: number,
  y: number,
  w: number,
  h: number,
  vmax: number,
  map: ColorMapName,
): void {
  const img = new ImageData(matrixPixels(data, rows, cols, vmax, map), cols, rows);
  const off = document.createElement("canvas");
  off.width = cols;
  off.height = rows;
  off.getContext("2d")!.putImageData(img, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(off, x, y, w, h);
}

/** Widest label in pixels, capped, for reserving label room. */
export function labelRoom(ctx: CanvasRenderingContext2D, tokens: string[], t: Theme, cap = 140): number {
  ctx.font = `${t.font}px ${t.fontFamily}`;
  let w = 0;
  for (const tok of tokens) w = Math.max(w, ctx.measureText(tokenLabel(tok)).width);
  return Math.min(cap, Math.ceil(w) + 8);
}

/** `text` cut with an ellipsis until it is at most `room` pixels wide in the context's current font (a label
 * wider than the room kept for labels would run off the canvas edge). */
export function fitLabel(
  ctx: Pick<CanvasRenderingContext2D, "measureText">,
  text: string,
  room: number,
): string {
  if (ctx.measureText(text).width <= room) return text;
  const chars = Array.from(text.endsWith("…") ? text.slice(0, -1) : text);
  let lo = 0;
  let hi = chars.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (ctx.measureText(`${chars.slice(0, mid).join("")}…`).width <= room) lo = mid;
    else hi = mid - 1;
  }
  return lo > 0 ? `${chars.slice(0, lo).join("")}…` : "…";
}

/** A token as a canvas label: its tokenLabel (at most `max` characters, invisible characters shown), cut to `room`
 * pixels, isolated (FSI … PDI) so that a right-to-left token is laid out on its own and keeps its ellipsis at its own
 * end. Every view draws token text through this. */
export function fitToken(
  ctx: Pick<CanvasRenderingContext2D, "measureText">,
  token: string,
  room: number,
  max = 14,
): string {
  return isolate(fitLabel(ctx, tokenLabel(token, max), room));
}

/** Query labels left of the rows, key labels rotated above the columns. Text is drawn as pixels, never markup. */
/** The smallest label a lecture-theme map draws (CSS px): what a room reads (issue 33 §1). */
export const LECTURE_LABEL = 14;

/** The label size on cells of `cell` px and which of them are named: all in the light theme (shrunk to the cell,
 * 8 px at least); in the lecture theme at least LECTURE_LABEL px, so on small cells every `every`-th index and the
 * highlighted one (`hi`), its neighbours closer than `every` left out. */
export function labelPlan(
  t: Theme,
  cell: number,
): { size: number; every: number; named: (i: number, hi?: number | null) => boolean } {
  const lecture = t.name === "lecture";
  const size = lecture
    ? Math.max(LECTURE_LABEL, Math.min(t.font, cell - 2))
    : Math.min(t.font, Math.max(8, cell - 2));
  const every = lecture ? Math.max(1, Math.ceil((size * 1.15) / Math.max(1, cell))) : 1;
  const named = (i: number, hi?: number | null) =>
    i === hi || (i % every === 0 && (hi === undefined || hi === null || hi < 0 || Math.abs(i - hi) >= every));
  return { size, every, named };
}

export function drawLabels(
  ctx: CanvasRenderingContext2D,
  l: HeatmapLayout,
  queries: string[],
  keys: string[],
  t: Theme,
  highlight?: { q: number; k: number } | null,
): void {
  if (!l.showLabels) return;
  // Lecture: never under LECTURE_LABEL px (a room reads 14 px, not the 10 px a 12 px cell left), so on small cells
  // every `every`-th token is named, and the highlighted one always.
  const { size, named } = labelPlan(t, l.cell);
  ctx.font = `${size}px ${t.fontFamily}`;
  ctx.textBaseline = "middle";
  ctx.textAlign = "right";
  for (let q = 0; q < l.nq; q++) {
    if (!named(q, highlight?.q)) continue;
    ctx.fillStyle = highlight && highlight.q === q ? t.accent : t.fg;
    ctx.fillText(fitToken(ctx, queries[q] ?? "", l.x0 - 6), l.x0 - 4, l.y0 + (q + 0.5) * l.cell);
  }
  ctx.textAlign = "left";
  for (let k = 0; k < l.nk; k++) {
    if (!named(k, highlight?.k)) continue;
    ctx.save();
    ctx.translate(l.x0 + (k + 0.5) * l.cell, l.y0 - 4);
    ctx.rotate(-Math.PI / 2);
    ctx.fillStyle = highlight && highlight.k === k ? t.accent : t.fg;
    ctx.fillText(fitToken(ctx, keys[k] ?? "", l.y0 - 6), 0, 0);
    ctx.restore();
  }
}

/** A horizontal colour bar from 0 to vmax. */
export function drawLegend(canvas: HTMLCanvasElement, map: ColorMapName, width = 160, height = 12): void {
  const ctx = prepareCanvas(canvas, width, height);
  const table = lut(map);
  for (let x = 0; x < width; x++) {
    const j = Math.round((x / (width - 1)) * 255) * 3;
    ctx.fillStyle = `rgb(${table[j]},${table[j + 1]},${table[j + 2]})`;
    ctx.fillRect(x, 0, 1, height);
  }
}

/** The legend row under a map: "0", the colour bar (drawn by drawLegend) and the top's text, which the view sets. */
export function legendRow(): { legend: HTMLDivElement; bar: HTMLCanvasElement; top: HTMLSpanElement } {
  const bar = h("canvas");
  const top = h("span", { className: "aw-muted", "data-export-text": true });
  const zero = h("span", { className: "aw-muted", text: "0", "data-export-text": true });
  return { legend: h("div", { className: "aw-legend" }, zero, bar, top), bar, top };
}

/** Outline one `size`-sized cell at (x, y) in the accent colour: the cell under the pointer. */
export function outlineCell(
  ctx: CanvasRenderingContext2D,
  x: number,
  y: number,
  size: number,
  t: Theme,
): void {
  ctx.strokeStyle = t.accent;
  ctx.lineWidth = 2;
  ctx.strokeRect(x, y, size, size);
}

/** A rows x cols matrix as an offscreen canvas (one pixel per cell), to draw scaled, cropped or panned. */
export function matrixCanvas(
  data: Float32Array,
  rows: number,
  cols: number,
  vmax: number,
  map: ColorMapName,
): HTMLCanvasElement {
  const off = document.createElement("canvas");
  off.width = Math.max(1, cols);
  off.height = Math.max(1, rows);
  if (rows > 0 && cols > 0)
    off
      .getContext("2d")!
      .putImageData(new ImageData(matrixPixels(data, rows, cols, vmax, map), cols, rows), 0, 0);
  return off;
}
