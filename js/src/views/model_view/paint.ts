// ModelView's drawing: every head's thumbnail in one offscreen image, the grid of them (GQA groups shaded, the
// hovered and the chosen head marked), and the chosen head in full beside it with its selection and legend.

import {
  drawLabels,
  drawLegend,
  drawMatrix,
  labelRoom,
  matrixPixels,
  outlineCell,
  prepareCanvas,
  textMeasurer,
} from "../../draw/canvas";
import type { ColorMapName } from "../../draw/colors";
import type { Box } from "../../draw/fit";
import { type HeatmapLayout, heatmapLayout } from "../../draw/layout";
import { drawSpanRow, outlineRows, spanBand, spanRoom, spanTop } from "../../draw/span";
import { decode } from "../../shared/buffers";
import type { Theme } from "../../shared/theme";
import {
  type Detail,
  type GridGeometry,
  type Thumbs,
  headThumb,
  kvGroups,
  selectedBlocks,
  slotAt,
} from "./state";

/** All thumbnails in one offscreen image (heads side by side, layers stacked), drawn once per data change, and
 * the thumbnails' shape [layers, heads, rows, cols]. */
export function thumbImage(
  t: Thumbs,
  causal: boolean,
  map: ColorMapName,
): { image: HTMLCanvasElement; shape: number[] } {
  const m = decode(t.thumbs);
  const [L, H, tq, tk] = m.shape;
  const off = document.createElement("canvas");
  off.width = H * tk;
  off.height = L * tq;
  const ctx = off.getContext("2d")!;
  const one = new Float32Array(tq * tk);
  for (let l = 0; l < L; l++) {
    for (let hd = 0; hd < H; hd++) {
      const top = headThumb(m.data, l * H + hd, tq, tk, causal, t.factor, one);
      const px = matrixPixels(one, tq, tk, top || 1, map);
      ctx.putImageData(new ImageData(px, tk, tq), hd * tk, l * tq);
    }
  }
  return { image: off, shape: m.shape };
}

/** Everything one paint of the grid reads. */
export interface GridScene {
  t: Theme;
  g: GridGeometry;
  image: HTMLCanvasElement | null;
  shape: number[]; // [layers, heads, rows, cols] of the thumbnails
  groupSize: number; // query heads per key/value head
  hover: { layer: number; head: number } | null;
  chosen: { layer: number; head: number };
}

/** The head numbers above the columns and "L<n>" left of the rows. */
function gridLabels(ctx: CanvasRenderingContext2D, s: GridScene): void {
  const { t, g } = s;
  ctx.font = `${Math.max(10, t.font - 1)}px ${t.fontFamily}`;
  ctx.fillStyle = t.muted;
  ctx.textBaseline = "middle";
  ctx.textAlign = "center";
  for (let hd = 0; hd < g.heads; hd++) ctx.fillText(String(hd), slotAt(g, 0, hd).x + g.slot / 2, g.y0 / 2);
  ctx.textAlign = "right";
  for (let l = 0; l < g.layers; l++) ctx.fillText(`L${l}`, g.x0 - 6, slotAt(g, l, 0).y + g.slot / 2);
}

/** Grouped-query attention: the heads that share a key/value head sit on one shaded band, every other group
 * darker. Returns the groups as "a-b" ranges (empty without GQA). */
function kvBands(ctx: CanvasRenderingContext2D, s: GridScene): string {
  const { t, g } = s;
  if (s.groupSize <= 1) return "";
  const groups = kvGroups(g.heads, s.groupSize);
  const height = g.layers * (g.slot + g.gap);
  groups.forEach(([a, b], gi) => {
    const x = slotAt(g, 0, a).x - g.gap / 2;
    const width = (b - a + 1) * (g.slot + g.gap);
    ctx.fillStyle = gi % 2 === 0 ? t.grid : t.bg;
    ctx.globalAlpha = 0.55;
    ctx.fillRect(x, g.y0 - g.gap / 2, width, height);
    ctx.globalAlpha = 1;
    ctx.strokeStyle = t.muted;
    ctx.lineWidth = 1;
    ctx.strokeRect(x + 0.5, g.y0 - g.gap / 2 + 0.5, width - 1, height - 1);
  });
  return groups.map(([a, b]) => `${a}-${b}`).join(",");
}

/** Every thumbnail in its slot, framed; the hovered head outlined in grey, the chosen one in the accent. */
function thumbs(ctx: CanvasRenderingContext2D, s: GridScene, image: HTMLCanvasElement): void {
  const { t, g } = s;
  const [, , tq, tk] = s.shape;
  ctx.imageSmoothingEnabled = false;
  const side = Math.max(tq, tk);
  const w = (g.slot * tk) / side;
  const hgt = (g.slot * tq) / side;
  for (let l = 0; l < g.layers; l++) {
    for (let hd = 0; hd < g.heads; hd++) {
      const { x, y } = slotAt(g, l, hd);
      ctx.drawImage(image, hd * tk, l * tq, tk, tq, x, y, w, hgt);
      ctx.strokeStyle = t.grid;
      ctx.lineWidth = 1;
      ctx.strokeRect(x - 0.5, y - 0.5, w + 1, hgt + 1);
    }
  }
  const mark = (at: { layer: number; head: number }, colour: string, width: number) => {
    const { x, y } = slotAt(g, at.layer, at.head);
    ctx.strokeStyle = colour;
    ctx.lineWidth = width;
    ctx.strokeRect(x - 1.5, y - 1.5, w + 3, hgt + 3);
  };
  if (s.hover) mark(s.hover, t.muted, 2);
  mark(s.chosen, t.accent, 3);
}

/** Paint the grid of thumbnails on `grid`; its geometry goes to the canvas's dataset for the tests. */
export function paintGrid(grid: HTMLCanvasElement, s: GridScene): void {
  const { t, g } = s;
  const ctx = prepareCanvas(grid, g.width, g.height);
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, g.width, g.height);
  gridLabels(ctx, s);
  if (s.image) {
    const groups = kvBands(ctx, s);
    if (groups) grid.dataset.kvGroups = groups;
    else delete grid.dataset.kvGroups;
    thumbs(ctx, s, s.image);
  }
  Object.assign(grid.dataset, {
    layers: String(g.layers),
    heads: String(g.heads),
    slot: String(g.slot),
    gap: String(g.gap),
    x0: String(g.x0),
    y0: String(g.y0),
    selected: `${s.chosen.layer}/${s.chosen.head}`,
  });
}

/** Everything one paint of the detail reads. */
export interface DetailScene {
  t: Theme;
  map: ColorMapName;
  d: Detail;
  tokens: [string[], string[]];
  hover: { q: number; k: number } | null;
  selection: number[];
  row: Float32Array | null; // the selection's combined row, when it is here
  combine: string;
}

/** The detail's layout in `room` (the box less the grid and the detail's title and legend; null: not fitting). An
 * overview's blocks get no labels. */
export function detailLayout(s: DetailScene, room: Box | null): HeatmapLayout {
  const { t, d } = s;
  const [queries, keys] = s.tokens;
  const full = d.factor === 1;
  const probe = textMeasurer();
  return heatmapLayout({
    nq: Math.ceil(queries.length / d.factor),
    nk: Math.ceil(keys.length / d.factor),
    maxGrid: Math.min(t.maxGrid, 520),
    maxCell: t.maxCell,
    labelWidth: full ? labelRoom(probe, queries, t) : 4,
    labelHeight: full ? labelRoom(probe, keys, t) : 4,
    minLabelCell: full ? Math.min(t.font, 12) - 2 : 1e9,
    maxWidth: room?.width,
    maxHeight: room ? room.height - (s.row ? spanRoom(t.maxCell, t) : 0) : undefined,
  });
}

/** The selection's combined row in a band under the detail; its place goes to the canvas's dataset. */
function drawRow(
  ctx: CanvasRenderingContext2D,
  canvas: HTMLCanvasElement,
  s: DetailScene,
  l: HeatmapLayout,
): void {
  if (!s.row) return;
  const band = spanBand(l.cell, s.t);
  const b = {
    x: l.x0,
    y: l.y0 + l.cell * l.nq + band.gap,
    w: l.cell * l.nk,
    h: band.height,
    k0: 0,
    kn: s.row.length,
  };
  drawSpanRow(ctx, s.row, b, spanTop(s.row, s.combine, s.d.vmax), s.map, s.combine, s.t);
  canvas.dataset.spanY = String(b.y);
}

/** Paint the chosen head on `canvas` in layout `l`: its cells, labels, the hovered cell, the selected rows (their
 * blocks in an overview) and their combined row. */
export function paintDetail(canvas: HTMLCanvasElement, s: DetailScene, l: HeatmapLayout): void {
  const { t, d, hover } = s;
  const height = l.height + (s.row ? spanRoom(l.cell, t) : 0);
  const ctx = prepareCanvas(canvas, l.width, height);
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, l.width, height);
  drawMatrix(ctx, d.data, l.nq, l.nk, l.x0, l.y0, l.cell * l.nk, l.cell * l.nq, d.vmax, s.map);
  drawLabels(ctx, l, s.tokens[0], s.tokens[1], t, hover);
  if (hover) outlineCell(ctx, l.x0 + hover.k * l.cell, l.y0 + hover.q * l.cell, l.cell, t);
  const blocks = selectedBlocks(s.selection, d.factor);
  outlineRows(ctx, blocks, (q) => l.y0 + q * l.cell, l.cell, l.x0, l.cell * l.nk, t);
  drawRow(ctx, canvas, s, l);
}

/** The legend under the detail: the colour bar and the scale's top. */
export function paintLegend(
  legend: { bar: HTMLCanvasElement; top: HTMLSpanElement },
  map: ColorMapName,
  vmax: number,
) {
  drawLegend(legend.bar, map);
  legend.top.textContent = vmax.toFixed(3);
}
