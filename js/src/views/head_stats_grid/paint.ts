// HeadStatsGrid's drawing: the layers x heads cells, their numbers and outlines, and the legend (state.ts says what).

import { drawLegend, prepareCanvas, textMeasurer } from "../../draw/canvas";
import { type ColorMapName, rgbAt } from "../../draw/colors";
import { type DivergingName, absMax, divergingLegend, divergingRgb } from "../../draw/diverging";
import { fitGridWidth } from "../../draw/fit_views";
import { type GridLayout, fmt, gridLayout, roomFor, statRange, textOn } from "../../draw/heads";
import type { HeadPick } from "../../draw/selection";
import { type StatGrid, selectionInside, valueAt } from "../../draw/stat_grid";
import { type Theme, applyTheme, theme } from "../../shared/theme";
import {
  type HeadStatsGridTraits,
  MISSING,
  gridMargins,
  gridTitle,
  labelEvery,
  statLabel,
  valuesFit,
} from "./state";

/** The grid's elements. */
export interface GridDom {
  scroll: HTMLDivElement;
  canvas: HTMLCanvasElement;
  legendCanvas: HTMLCanvasElement;
  legendMin: HTMLSpanElement;
  legendMax: HTMLSpanElement;
  legendLabel: HTMLSpanElement;
}

type Grid = StatGrid<HeadStatsGridTraits, HeadPick>;

/** Every cell in its colour, with its value when the cells are big enough; thin lines between them. */
function drawCells(
  ctx: CanvasRenderingContext2D,
  g: GridLayout,
  t: Theme,
  data: Float32Array | null,
  colour: { map: ColorMapName; lo: number; hi: number; values: boolean; signed: DivergingName | null },
): void {
  const { nLayers, nHeads } = g;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (let layer = 0; layer < nLayers; layer++) {
    for (let head = 0; head < nHeads; head++) {
      const v = valueAt(data, nHeads, layer, head);
      const x = g.x0 + head * g.cell;
      const y = g.y0 + layer * g.cell;
      const rgb: [number, number, number] = !Number.isFinite(v)
        ? MISSING
        : colour.signed
          ? divergingRgb(colour.signed, v, colour.hi)
          : rgbAt(colour.map, v - colour.lo, colour.hi - colour.lo);
      ctx.fillStyle = `rgb(${rgb[0]},${rgb[1]},${rgb[2]})`;
      ctx.fillRect(x, y, g.cell, g.cell);
      if (colour.values) {
        ctx.fillStyle = textOn(rgb);
        ctx.fillText(Number.isFinite(v) ? v.toFixed(2) : "–", x + g.cell / 2, y + g.cell / 2);
      }
    }
  }
  // Thin white lines between cells keep neighbours apart on any colour map.
  ctx.strokeStyle = t.bg;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (let i = 1; i < nHeads; i++) {
    ctx.moveTo(g.x0 + i * g.cell + 0.5, g.y0);
    ctx.lineTo(g.x0 + i * g.cell + 0.5, g.y0 + nLayers * g.cell);
  }
  for (let i = 1; i < nLayers; i++) {
    ctx.moveTo(g.x0, g.y0 + i * g.cell + 0.5);
    ctx.lineTo(g.x0 + nHeads * g.cell, g.y0 + i * g.cell + 0.5);
  }
  ctx.stroke();
}

/** Row and column numbers (the selection's in the accent colour), and the axis names. */
function drawAxes(ctx: CanvasRenderingContext2D, g: GridLayout, t: Theme, sel: HeadPick): void {
  const { nLayers, nHeads } = g;
  ctx.textAlign = "right";
  for (let layer = 0; layer < nLayers; layer++) {
    ctx.fillStyle = layer === sel.layer ? t.accent : t.fg;
    ctx.fillText(String(layer), g.x0 - 5, g.y0 + (layer + 0.5) * g.cell);
  }
  ctx.textAlign = "center";
  for (let head = 0; head < nHeads; head += labelEvery(t.font, g.cell)) {
    ctx.fillStyle = head === sel.head ? t.accent : t.fg;
    ctx.fillText(String(head), g.x0 + (head + 0.5) * g.cell, g.y0 - t.font * 0.7);
  }
  ctx.fillStyle = t.muted;
  ctx.fillText("head", g.x0 + (nHeads * g.cell) / 2, t.font * 0.7);
  ctx.save();
  ctx.translate(t.font * 0.8, g.y0 + (nLayers * g.cell) / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.fillText("layer", 0, 0);
  ctx.restore();
}

/** Hover and selection outlines (the whole row when the selection's head is -1). */
function drawOutlines(
  ctx: CanvasRenderingContext2D,
  g: GridLayout,
  t: Theme,
  hover: HeadPick | null,
  sel: HeadPick,
): void {
  if (hover) {
    ctx.strokeStyle = t.muted;
    ctx.lineWidth = 2;
    ctx.strokeRect(g.x0 + hover.head * g.cell + 1, g.y0 + hover.layer * g.cell + 1, g.cell - 2, g.cell - 2);
  }
  if (selectionInside(sel, [g.nLayers, g.nHeads])) {
    const x = g.x0 + (sel.head < 0 ? 0 : sel.head * g.cell);
    const w = sel.head < 0 ? g.nHeads * g.cell : g.cell;
    ctx.strokeStyle = t.accent;
    ctx.lineWidth = 3;
    ctx.strokeRect(x + 1.5, g.y0 + sel.layer * g.cell + 1.5, w - 3, g.cell - 3);
  }
}

/** The grid's layout: as wide as the theme and the output area (or the fitted box) allow. */
function layoutFor(grid: Grid, dom: GridDom, t: Theme, probe: CanvasRenderingContext2D): GridLayout {
  const [nLayers, nHeads] = grid.model.get("_meta").shape;
  const { left, top } = gridMargins(t.font, probe.measureText(String(nLayers - 1)).width);
  const natural = Math.round(Math.min(t.maxGrid * 1.15, roomFor(grid.el) - left - 24));
  const width = fitGridWidth(natural, grid.fit.room(dom.scroll), { nLayers, nHeads, left, top });
  return gridLayout(nLayers, nHeads, width, left, top, t.maxCell * 2, 6);
}

/** Paint the grid, the legend and the title; returns the layout (for hit tests). */
export function paintGrid(grid: Grid, dom: GridDom): GridLayout {
  const { model, shell } = grid;
  const t = theme(model.get("theme"));
  applyTheme(shell.root, t);
  const m = model.get("_meta");
  const stat = model.get("statistic");
  const data = grid.slice(stat);
  const map = (model.get("colormap") || t.colormap) as ColorMapName;
  // A signed statistic (a head's share of a logit) is drawn on a diverging scale centred on 0, white at 0.
  const signed: DivergingName | null = (m.signed ?? []).includes(stat)
    ? t.name === "lecture"
      ? "puor"
      : "rdbu"
    : null;
  const half = signed && data ? Math.max(absMax(data), 1e-12) : 0;
  const [lo, hi] = signed ? [-half, half] : data ? statRange(data) : [0, 1];
  const font = `${t.font}px ${t.fontFamily}`;
  const probe = textMeasurer();
  probe.font = font;
  const g = layoutFor(grid, dom, t, probe);
  const ctx = prepareCanvas(dom.canvas, g.width, g.height);
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, g.width, g.height);
  ctx.font = font;
  const values = valuesFit(g.cell, probe.measureText("0.000").width, t.font);
  drawCells(ctx, g, t, data, { map, lo, hi, values, signed });
  const sel = { layer: model.get("layer"), head: model.get("head") };
  drawAxes(ctx, g, t, sel);
  drawOutlines(ctx, g, t, grid.hover, sel);
  Object.assign(dom.canvas.dataset, {
    x0: String(g.x0),
    y0: String(g.y0),
    cell: String(g.cell),
    nLayers: String(g.nLayers),
    nHeads: String(g.nHeads),
    statistic: stat,
    selected: `${sel.layer}/${sel.head}`,
    vmin: String(lo),
    vmax: String(hi),
  });
  if (signed) divergingLegend(dom.legendCanvas, signed);
  else drawLegend(dom.legendCanvas, map);
  dom.canvas.dataset.signed = signed ? "1" : "";
  dom.legendMin.textContent = fmt(lo, 2);
  dom.legendMax.textContent = fmt(hi, 2);
  dom.legendLabel.textContent = statLabel(m, stat);
  shell.title.textContent = gridTitle(m, stat);
  shell.showError(data ? model.get("_error") : `unknown statistic ${stat}`);
  return g;
}
