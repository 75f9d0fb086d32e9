// AttentionCompare's drawing: the maps (A | B or B − A) with their span rows, and the layers x heads grid of a
// per-head summary (state.ts says what; this says how).

import {
  drawLegend,
  fitToken,
  labelPlan,
  labelRoom,
  matrixCanvas,
  prepareCanvas,
  textMeasurer,
} from "../../draw/canvas";
import { type ColorMapName, rgbAt } from "../../draw/colors";
import { type DivergingName, absMax, divergingLegend, divergingRgb } from "../../draw/diverging";
import { fitGridWidth } from "../../draw/fit_views";
import { type GridLayout, fmt, gridLayout, textOn } from "../../draw/heads";
import * as span from "../../draw/span";
import type { Theme } from "../../shared/theme";
import {
  type CompareMeta,
  type ComparePayload,
  type Panel,
  type Side,
  UNALIGNED,
  absTop,
  divergingPixels,
  gridScale,
  mapLegendText,
  panelLayout,
  selectedRows,
  sides,
} from "./state";

/** A legend: its colour bar and the labels at its ends and under it. */
export interface Legend {
  canvas: HTMLCanvasElement;
  lo: HTMLElement;
  hi: HTMLElement;
  label: HTMLElement;
}

/** A signed matrix drawn on a diverging scale into an off-screen canvas of one pixel per cell. */
function divergingCanvas(data: Float32Array, rows: number, cols: number, dmax: number, div: DivergingName) {
  const off = document.createElement("canvas");
  off.width = Math.max(1, cols);
  off.height = Math.max(1, rows);
  if (rows && cols)
    off
      .getContext("2d")!
      .putImageData(new ImageData(divergingPixels(data, rows, cols, dmax, div), cols, rows), 0, 0);
  return off;
}

/** The query labels left of a map and the key labels above it, unaligned ones grey. */
function drawTokens(ctx: CanvasRenderingContext2D, p: Panel, s: Side, room: number, t: Theme): void {
  const { size, named } = labelPlan(t, p.cell); // lecture: 14 px, every k-th token on small cells
  ctx.font = `${size}px ${t.fontFamily}`;
  ctx.textBaseline = "middle";
  ctx.textAlign = "right";
  for (let q = 0; q < p.nq; q++) {
    if (!named(q)) continue;
    ctx.fillStyle = s.qOk && !s.qOk[q] ? UNALIGNED : t.fg;
    ctx.fillText(fitToken(ctx, s.q[q] ?? "", room - 6), p.x0 - 4, p.y0 + (q + 0.5) * p.cell);
  }
  ctx.textAlign = "left";
  for (let k = 0; k < p.nk; k++) {
    if (!named(k)) continue;
    ctx.save();
    ctx.translate(p.x0 + (k + 0.5) * p.cell, p.y0 - 4);
    ctx.rotate(-Math.PI / 2);
    ctx.fillStyle = s.kOk && !s.kOk[k] ? UNALIGNED : t.fg;
    ctx.fillText(fitToken(ctx, s.k[k] ?? "", room - 6), 0, 0);
    ctx.restore();
  }
}

/** The selection's B − A row on the diverging scale (its own half-width), framed like span.drawSpanRow. */
function drawDiffRow(
  ctx: CanvasRenderingContext2D,
  row: Float32Array,
  b: span.RowBand,
  div: DivergingName,
  label: string,
  t: Theme,
): void {
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(divergingCanvas(row, 1, row.length, absTop(row) || 1, div), b.x, b.y, b.w, b.h);
  span.frameSpanRow(ctx, b, label, t);
}

/** The diverging legend: −1 to 1 with a black tick at 0. */
const diffLegend = (canvas: HTMLCanvasElement, div: DivergingName) => divergingLegend(canvas, div);

/** Everything one paint of the maps needs. */
export interface MapsScene {
  t: Theme;
  m: CompareMeta;
  p: ComparePayload;
  show: string;
  map: ColorMapName;
  div: DivergingName;
  mats: { a: Float32Array; b: Float32Array; diff: Float32Array };
  spanRows: { a: Float32Array; b: Float32Array; diff: Float32Array } | null; // null: none for this selection
  selection: number[];
  combine: string;
  avail: number; // the width the maps have
  fitted: { width: number; height: number } | null;
  gridW: number;
  below: number; // what the column's legend and label take under the canvas
}

/** One map: its matrix, frame, labels, selected rows, span row and heading. */
function drawPanel(
  ctx: CanvasRenderingContext2D,
  s: MapsScene,
  pn: Panel,
  side: Side,
  room: number,
  bandY: number,
) {
  const { t } = s;
  const w = pn.nk * pn.cell;
  const hgt = pn.nq * pn.cell;
  const image =
    pn.which === "diff"
      ? divergingCanvas(s.mats.diff, pn.nq, pn.nk, s.p.dmax, s.div)
      : matrixCanvas(s.mats[pn.which], pn.nq, pn.nk, s.p.vmax, s.map);
  ctx.drawImage(image, pn.x0, pn.y0, w, hgt);
  ctx.strokeStyle = t.grid;
  ctx.lineWidth = 1;
  ctx.strokeRect(pn.x0 - 0.5, pn.y0 - 0.5, w + 1, hgt + 1);
  drawTokens(ctx, pn, side, room, t);
  const rows = selectedRows(s.selection, s.m.query_map, pn.which);
  span.outlineRows(ctx, rows, (q) => pn.y0 + q * pn.cell, pn.cell, pn.x0, w, t);
  if (s.spanRows) {
    const b = { x: pn.x0, y: bandY, w, h: span.spanBand(pn.cell, t).height, k0: 0, kn: pn.nk };
    const label = s.combine || "mean";
    if (pn.which === "diff") drawDiffRow(ctx, s.spanRows.diff, b, s.div, label, t);
    else {
      const row = s.spanRows[pn.which];
      span.drawSpanRow(ctx, row, b, span.spanTop(row, s.combine, s.p.vmax), s.map, label, t);
    }
  }
  ctx.font = `600 ${t.font}px ${t.fontFamily}`;
  ctx.fillStyle = t.fg;
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  const heading = t.font * 1.6;
  ctx.fillText(
    fitToken(ctx, side.name, Math.max(w + room - 8, 40), 40),
    Math.max(0, pn.x0 - room),
    heading / 2,
  );
}

/** The maps of the show side by side, each with its span row under it when there is one; the legend for the show.
 * Returns the panels (hover and clicks find cells by them) and the canvas's width. */
export function paintMaps(
  canvas: HTMLCanvasElement,
  legend: Legend,
  s: MapsScene,
): { panels: Panel[]; width: number } {
  const { t, p } = s;
  const probe = textMeasurer();
  const maps = sides(s.m, s.show);
  const rooms = maps.map((d) => labelRoom(probe, [...d.q, ...d.k], t, t.font * 7));
  const lay = panelLayout({
    sides: maps,
    rooms,
    heading: t.font * 1.6,
    avail: s.avail,
    maxCell: t.maxCell,
    maxSide: t.name === "lecture" ? 270 : 340,
    fitted: s.fitted,
    gridW: s.gridW,
    below: s.below,
  });
  const band = span.spanBand(lay.cell, t);
  const bandY = Math.ceil(lay.top + lay.rowsMax * lay.cell + band.gap);
  const height = Math.ceil(
    lay.top + lay.rowsMax * lay.cell + 4 + (s.spanRows ? band.gap + band.height + 4 : 0),
  );
  const ctx = prepareCanvas(canvas, lay.width, height);
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, lay.width, height);
  ctx.imageSmoothingEnabled = false;
  lay.panels.forEach((pn, i) => drawPanel(ctx, s, pn, maps[i], rooms[i], bandY));
  Object.assign(canvas.dataset, {
    show: s.show,
    selection: s.selection.join(","),
    span: s.spanRows ? (p.span_key ?? "") : "",
    spanY: s.spanRows ? String(bandY) : "",
    panels: JSON.stringify(lay.panels),
    vmax: String(p.vmax),
    dmax: String(p.dmax),
    shown: p.key,
  });
  if (s.show === "diff") diffLegend(legend.canvas, s.div);
  else drawLegend(legend.canvas, s.map);
  const text = mapLegendText(s.show, p.vmax, p.dmax);
  legend.lo.textContent = text.lo;
  legend.hi.textContent = text.hi;
  legend.label.textContent = text.label;
  return { panels: lay.panels, width: lay.width };
}

/** Everything one paint of the grid needs. */
export interface GridScene {
  t: Theme;
  m: CompareMeta;
  data: Float32Array; // layers x heads of the summary `name`
  name: string;
  map: ColorMapName;
  layer: number;
  head: number;
  room: number; // the page's width for the view
  fitted: { width: number; height: number } | null;
  show: string;
  div: DivergingName; // the scale of a signed summary (meta.signed), centred on 0
}

/** The grid's size: a share of the room (two maps need more than one), fitted to the box when there is one. */
function gridGeometry(s: GridScene, probe: CanvasRenderingContext2D): GridLayout {
  const { t } = s;
  const [nLayers, nHeads] = s.m.shape;
  probe.font = `${t.font}px ${t.fontFamily}`;
  const leftPad = Math.ceil(probe.measureText(String(nLayers - 1)).width) + t.font * 2 + 8;
  const top = t.font * 2 + 10;
  const room = Math.min(s.room, 1600);
  const share = s.show === "side" ? 0.27 : 0.36;
  const maxW = Math.min(room * share, t.maxGrid * 0.6);
  // (its legend's label wraps to the column's width: a fixed allowance for it, not its measured height, which
  // would shrink the grid, narrow the column and wrap the label further on every repaint)
  const gridRoom = s.fitted && { width: s.fitted.width * share, height: s.fitted.height - t.font * 5 };
  const fitted = fitGridWidth(Math.round(maxW), gridRoom, { nLayers, nHeads, left: leftPad, top });
  return gridLayout(nLayers, nHeads, fitted, leftPad, top, t.maxCell, 6);
}

/** The grid's cells, each head's value written in it when it fits. */
function gridCells(ctx: CanvasRenderingContext2D, s: GridScene, g: GridLayout, showValues: boolean): void {
  const { t } = s;
  const [nLayers, nHeads] = s.m.shape;
  const { lo, hi, shade } = gridScale(s.name, s.data);
  const signed = s.m.signed.includes(s.name);
  const half = signed ? absMax(s.data) : 0;
  ctx.font = `${Math.min(t.font, g.cell * 0.42)}px ${t.fontFamily}`;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (let layer = 0; layer < nLayers; layer++) {
    for (let head = 0; head < nHeads; head++) {
      const v = s.data[layer * nHeads + head];
      const rgb: [number, number, number] = !Number.isFinite(v)
        ? [235, 235, 235]
        : signed
          ? divergingRgb(s.div, v, half)
          : rgbAt(s.map, shade(v), hi - lo);
      const x = g.x0 + head * g.cell;
      const y = g.y0 + layer * g.cell;
      ctx.fillStyle = `rgb(${rgb[0]},${rgb[1]},${rgb[2]})`;
      ctx.fillRect(x, y, g.cell - 1, g.cell - 1);
      if (showValues) {
        ctx.fillStyle = textOn(rgb);
        ctx.fillText(Number.isFinite(v) ? v.toFixed(2) : "–", x + g.cell / 2, y + g.cell / 2);
      }
    }
  }
}

/** The layer and head numbers (the selected ones in the accent), the axis names and the selected head's frame. */
function gridAxes(ctx: CanvasRenderingContext2D, s: GridScene, g: GridLayout): void {
  const { t, layer: selLayer, head: selHead } = s;
  const [nLayers, nHeads] = s.m.shape;
  ctx.font = `${t.font}px ${t.fontFamily}`;
  ctx.textAlign = "right";
  // Every k-th layer's number when cells are shorter than the text (a fitted grid): they overlapped.
  const layerEvery = Math.max(1, Math.ceil((t.font * 1.1) / g.cell));
  for (let layer = 0; layer < nLayers; layer++) {
    // the selected layer's number always; another only clear of it (a 3 between 2 and 4 ran into both)
    const clear = Math.abs(layer - selLayer) >= layerEvery || selLayer < 0;
    if (layer !== selLayer && (layer % layerEvery || !clear)) continue;
    ctx.fillStyle = layer === selLayer ? t.accent : t.fg;
    ctx.fillText(String(layer), g.x0 - 5, g.y0 + (layer + 0.5) * g.cell);
  }
  ctx.textAlign = "center";
  const every = Math.max(1, Math.ceil((t.font * 1.6) / g.cell));
  for (let head = 0; head < nHeads; head += every) {
    ctx.fillStyle = head === selHead ? t.accent : t.fg;
    ctx.fillText(String(head), g.x0 + (head + 0.5) * g.cell, g.y0 - t.font * 0.7);
  }
  ctx.fillStyle = t.muted;
  ctx.fillText("head", g.x0 + (nHeads * g.cell) / 2, t.font * 0.7);
  ctx.save();
  ctx.translate(t.font * 0.8, g.y0 + (nLayers * g.cell) / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.fillText("layer", 0, 0);
  ctx.restore();
  if (selLayer >= 0 && selLayer < nLayers) {
    const x = g.x0 + (selHead < 0 ? 0 : selHead * g.cell);
    const w = selHead < 0 ? nHeads * g.cell : g.cell;
    ctx.strokeStyle = t.accent;
    ctx.lineWidth = 3;
    ctx.strokeRect(x + 1.5, g.y0 + selLayer * g.cell + 1.5, w - 4, g.cell - 4);
  }
}

/** The layers x heads grid of the summary, the selected head framed; its legend runs from the most similar
 * (light) to the most changed (dark). Returns its layout (hover and clicks find heads by it). */
export function paintGrid(canvas: HTMLCanvasElement, legend: Legend, s: GridScene): GridLayout {
  const { t } = s;
  const probe = textMeasurer();
  const g = gridGeometry(s, probe);
  const ctx = prepareCanvas(canvas, g.width, g.height);
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, g.width, g.height);
  gridCells(ctx, s, g, g.cell >= probe.measureText("0.00").width + 6);
  gridAxes(ctx, s, g);
  Object.assign(canvas.dataset, {
    x0: String(g.x0),
    y0: String(g.y0),
    cell: String(g.cell),
    summary: s.name,
    selected: `${s.layer}/${s.head}`,
  });
  const label = s.m.summary_labels[s.name] ?? s.name;
  if (s.m.signed.includes(s.name)) {
    // a signed summary (a patching effect): symmetric about 0, white at 0
    diffLegend(legend.canvas, s.div);
    const half = absMax(s.data);
    legend.lo.textContent = fmt(-half, 3);
    legend.hi.textContent = fmt(half, 3);
    legend.label.textContent = `${label} per head (white: no change)`;
    canvas.dataset.signed = "1";
    return g;
  }
  delete canvas.dataset.signed;
  drawLegend(legend.canvas, s.map, 120, 12);
  const [lo, hi] = gridScale(s.name, s.data).ends;
  legend.lo.textContent = lo;
  legend.hi.textContent = hi;
  legend.label.textContent = `${label} per head (right end: most changed)`;
  return g;
}
