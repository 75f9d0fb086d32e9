// AttentionHeatmap's drawing: the map (a long input's overview with its full-detail tiles over it, cropped to the
// zoom), the hovered cell, the selected rows and their combined row, the labels, and the legend.

import {
  drawLabels,
  drawLegend,
  fitToken,
  labelPlan,
  labelRoom,
  matrixCanvas,
  outlineCell,
  prepareCanvas,
  textMeasurer,
} from "../../draw/canvas";
import type { ColorMapName } from "../../draw/colors";
import type { Box } from "../../draw/fit";
import { type HeatmapLayout, heatmapLayout } from "../../draw/layout";
import { drawSpanRow, outlineRows, spanBand, spanRoom, spanTop } from "../../draw/span";
import { type Tile, type Zoom, tilesFor, visibleCells } from "../../draw/zoom";
import type { Theme } from "../../shared/theme";
import {
  type HeatmapMeta,
  type MatrixData,
  type TileData,
  fixedTop,
  labelsReadable,
  legendText,
  tileKey,
} from "./state";

/** Everything one paint of the map reads. */
export interface MapScene {
  t: Theme;
  map: ColorMapName;
  l: HeatmapLayout;
  zoom: Zoom;
  current: MatrixData;
  tiles: Map<string, TileData>;
  hover: { q: number; k: number } | null;
  selection: number[];
  row: Float32Array | null; // the selection's combined row, when it is here
  combine: string;
}

/** The layout of a map of `queries` x `keys` in `room` (null: not fitting), leaving room for a combined row under
 * it when `withRow`. Label room is kept for long inputs too: labels appear once zooming makes cells readable. */
export function mapLayout(
  t: Theme,
  queries: string[],
  keys: string[],
  room: Box | null,
  withRow: boolean,
): HeatmapLayout {
  const probe = textMeasurer();
  const nq = queries.length;
  const nk = keys.length;
  return heatmapLayout({
    nq,
    nk,
    maxGrid: t.maxGrid,
    maxCell: t.maxCell,
    labelWidth: labelRoom(probe, queries, t),
    labelHeight: labelRoom(probe, keys, t),
    minLabelCell: Math.max(nq, nk) > 48 ? 0 : Math.min(t.font, 12) - 2,
    maxWidth: room?.width,
    maxHeight: room ? room.height - (withRow ? spanRoom(t.maxCell, t) : 0) : undefined,
  });
}

/** A matrix's pixels, drawn once per colour map and scale top and kept with the array they show. */
const images = new WeakMap<Float32Array, { key: string; image: HTMLCanvasElement }>();
function imageOf(data: Float32Array, rows: number, cols: number, vmax: number, map: ColorMapName) {
  const key = `${map}/${vmax}/${rows}x${cols}`;
  const hit = images.get(data);
  if (hit && hit.key === key) return hit.image;
  const image = matrixCanvas(data, rows, cols, vmax, map);
  images.set(data, { key, image });
  return image;
}

/** The overview (or the whole full-detail matrix), cropped to the zoom; then the tiles that are here over it.
 *  Returns the tiles the view wants and how many of them were drawn. */
function drawCells(ctx: CanvasRenderingContext2D, s: MapScene): { wanted: Tile[]; shown: number } {
  const { l, zoom, current: c } = s;
  const f = c.factor;
  const cz = l.cell * zoom.z;
  const image = imageOf(c.data, Math.ceil(l.nq / f), Math.ceil(l.nk / f), c.vmax, s.map);
  ctx.imageSmoothingEnabled = false;
  const src = [zoom.k0 / f, zoom.q0 / f, l.nk / zoom.z / f, l.nq / zoom.z / f] as const;
  ctx.drawImage(image, ...src, l.x0, l.y0, l.cell * l.nk, l.cell * l.nq);
  let shown = 0;
  const wanted = f > 1 ? tilesFor(l, zoom) : [];
  for (const tl of wanted) {
    const tile = s.tiles.get(tileKey(tl.q0, tl.k0));
    if (!tile) continue;
    shown++;
    const x = l.x0 + (tile.k0 - zoom.k0) * cz;
    const y = l.y0 + (tile.q0 - zoom.q0) * cz;
    const img = imageOf(tile.data, tile.rows, tile.cols, c.vmax, s.map);
    ctx.drawImage(img, x, y, tile.cols * cz, tile.rows * cz);
  }
  return { wanted, shown };
}

/** Labels of the visible rows and columns of a zoomed view, when its cells are tall enough to read. */
function drawWindowLabels(ctx: CanvasRenderingContext2D, s: MapScene, cz: number): void {
  const { t, l, zoom, hover } = s;
  const [queries, keys] = s.current.labels;
  if (cz < Math.min(t.font, 12) - 2) return;
  const vis = visibleCells(l, zoom);
  const plan = labelPlan(t, cz);
  ctx.font = `${plan.size}px ${t.fontFamily}`;
  ctx.textBaseline = "middle";
  ctx.textAlign = "right";
  for (let q = vis.q0; q < vis.q1; q++) {
    const y = l.y0 + (q - zoom.q0 + 0.5) * cz;
    if (y < l.y0 || y > l.y0 + l.cell * l.nq || !plan.named(q, hover?.q)) continue;
    ctx.fillStyle = hover && hover.q === q ? t.accent : t.fg;
    ctx.fillText(fitToken(ctx, queries[q] ?? "", l.x0 - 6), l.x0 - 4, y);
  }
  ctx.textAlign = "left";
  for (let k = vis.k0; k < vis.k1; k++) {
    const x = l.x0 + (k - zoom.k0 + 0.5) * cz;
    if (x < l.x0 || x > l.x0 + l.cell * l.nk || !plan.named(k, hover?.k)) continue;
    ctx.save();
    ctx.translate(x, l.y0 - 4);
    ctx.rotate(-Math.PI / 2);
    ctx.fillStyle = hover && hover.k === k ? t.accent : t.fg;
    ctx.fillText(fitToken(ctx, keys[k] ?? "", l.y0 - 6), 0, 0);
    ctx.restore();
  }
}

/** The selection's combined row in a band under the grid (its columns follow the zoom); its place and scale top go
 * to the canvas's dataset for the tests. */
function drawRow(
  ctx: CanvasRenderingContext2D,
  canvas: HTMLCanvasElement,
  s: MapScene,
  row: Float32Array,
): void {
  const { t, l, zoom } = s;
  const band = spanBand(l.cell * zoom.z, t);
  const top = spanTop(row, s.combine, s.current.vmax);
  const y = l.y0 + l.cell * l.nq + band.gap;
  const b = { x: l.x0, y, w: l.cell * l.nk, h: band.height, k0: zoom.k0, kn: l.nk / zoom.z };
  drawSpanRow(ctx, row, b, top, s.map, s.combine || "mean", t);
  canvas.dataset.spanY = String(b.y);
  canvas.dataset.spanTop = String(top);
}

/** Paint the map on `canvas`; returns the full-detail tiles the view wants and how many were drawn. */
export function paintMap(canvas: HTMLCanvasElement, s: MapScene): { wanted: Tile[]; shown: number } {
  const { t, l, zoom, hover } = s;
  const cz = l.cell * zoom.z;
  const gw = l.cell * l.nk;
  const gh = l.cell * l.nq;
  const height = l.height + (s.row ? spanRoom(cz, t) : 0);
  const ctx = prepareCanvas(canvas, l.width, height);
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, l.width, height);
  ctx.save();
  ctx.beginPath();
  ctx.rect(l.x0, l.y0, gw, gh);
  ctx.clip();
  const drawn = drawCells(ctx, s);
  if (hover) outlineCell(ctx, l.x0 + (hover.k - zoom.k0) * cz, l.y0 + (hover.q - zoom.q0) * cz, cz, t);
  outlineRows(ctx, s.selection, (q) => l.y0 + (q - zoom.q0) * cz, cz, l.x0, gw, t);
  ctx.restore();
  if (s.row) drawRow(ctx, canvas, s, s.row);
  const [queries, keys] = s.current.labels;
  if (labelsReadable(zoom.z, cz, t.font)) drawLabels(ctx, l, queries, keys, t, hover);
  else drawWindowLabels(ctx, s, cz); // nothing while cells are too small to read
  ctx.strokeStyle = t.grid;
  ctx.lineWidth = 1;
  if (zoom.z > 1) ctx.strokeRect(l.x0 - 0.5, l.y0 - 0.5, gw + 1, gh + 1);
  return drawn;
}

/** The legend: the colour bar, the scale's top, fixed or per map, and the discounted sink keys. */
export function paintLegend(
  legend: { bar: HTMLCanvasElement; top: HTMLSpanElement },
  map: ColorMapName,
  vmax: number,
  meta: HeatmapMeta,
): void {
  drawLegend(legend.bar, map);
  legend.top.textContent = legendText(vmax, meta);
  legend.top.dataset.sinks = (meta.sinks ?? []).join(",");
  legend.top.dataset.scale = fixedTop(meta.vmax) === null ? "per-map" : "fixed";
}
