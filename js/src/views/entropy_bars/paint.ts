// EntropyBars' drawing: the y grid and ticks, one bar per head grouped by layer, the selection's marker, the axis, the
// dashed uniform baseline and the layer labels (state.ts says what).

import { prepareCanvas, textMeasurer } from "../../draw/canvas";
import { categorical } from "../../draw/colors";
import { fitLength } from "../../draw/fit_views";
import { type BarLayout, barLayout, barX, roomFor } from "../../draw/heads";
import type { HeadPick } from "../../draw/selection";
import { type StatGrid, isSelected, selectionInside, valueAt } from "../../draw/stat_grid";
import { type Theme, applyTheme, theme } from "../../shared/theme";
import {
  type EntropyBarsTraits,
  availWidth,
  baseline,
  baselineText,
  entropyCaption,
  entropyScale,
  entropyTitle,
  rowStat,
} from "./state";

/** The bars' elements, and what a paint leaves for the next (the last width, the layout for hit tests). */
export interface BarsDom {
  scroll: HTMLDivElement;
  canvas: HTMLCanvasElement;
  caption: HTMLDivElement;
  lastAvail: number;
  layout: BarLayout | null;
  /** The baseline's label sits above the plot (a narrow share of a row), not right of it. */
  labelAbove?: boolean;
}

type Bars = StatGrid<EntropyBarsTraits, HeadPick>;

/** What the drawing helpers share: the context, the layout, the theme and the value → y map. */
interface Plot {
  ctx: CanvasRenderingContext2D;
  l: BarLayout;
  t: Theme;
  y: (v: number) => number;
  plotLeft: number;
  labelAbove: boolean;
}

/** The (L, H) entropies of the row choice on screen, or null when the source lacks it. */
export function currentValues(g: Bars): Float32Array | null {
  return g.slice(rowStat(g.model.get("_meta"), g.model.get("rows")));
}

/** Light grid lines with their tick values, and the y axis' name. */
function drawTicks({ ctx, l, t, y, plotLeft }: Plot, ticks: number[]): void {
  ctx.textBaseline = "middle";
  ctx.textAlign = "right";
  for (const v of ticks) {
    ctx.strokeStyle = t.grid;
    ctx.globalAlpha = 0.35; // light grid lines in every theme (the lecture theme's grid colour is black)
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(plotLeft, Math.round(y(v)) + 0.5);
    ctx.lineTo(plotLeft + l.plotW, Math.round(y(v)) + 0.5);
    ctx.stroke();
    ctx.globalAlpha = 1;
    ctx.fillStyle = t.muted;
    ctx.fillText(v.toFixed(1), plotLeft - 4, y(v));
  }
  ctx.save();
  ctx.translate(t.font * 0.8, l.y0 + l.plotH / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textAlign = "center";
  ctx.fillStyle = t.fg;
  ctx.fillText("entropy (nats)", 0, 0);
  ctx.restore();
}

/** Bars, one colour per layer; the selected head outlined, with a marker under it that stays visible when tiny. */
function drawBars(
  { ctx, l, t, y }: Plot,
  data: Float32Array | null,
  sel: HeadPick,
  hover: HeadPick | null,
): void {
  const { nLayers, nHeads } = l;
  for (let layer = 0; layer < nLayers; layer++) {
    for (let head = 0; head < nHeads; head++) {
      const v = valueAt(data, nHeads, layer, head);
      const x = barX(l, layer, head);
      const isSel = isSelected(sel, layer, head);
      const isHover = hover !== null && hover.layer === layer && hover.head === head;
      if (isHover || isSel) {
        ctx.fillStyle = isSel ? "rgba(0,0,0,0.07)" : "rgba(0,0,0,0.04)";
        ctx.fillRect(x - 1, l.y0, l.barW + 2, l.plotH);
      }
      if (!Number.isFinite(v)) continue;
      ctx.fillStyle = categorical(layer);
      ctx.globalAlpha = isSel || isHover ? 1 : 0.8;
      ctx.fillRect(x, y(v), l.barW, l.y0 + l.plotH - y(v));
      ctx.globalAlpha = 1;
      if (isSel) {
        ctx.strokeStyle = t.fg;
        ctx.lineWidth = 2;
        ctx.strokeRect(x, y(v), l.barW, l.y0 + l.plotH - y(v));
      }
    }
  }
  if (selectionInside(sel, [nLayers, nHeads])) {
    const x0 = barX(l, sel.layer, Math.max(0, sel.head));
    const x1 = sel.head < 0 ? barX(l, sel.layer, nHeads - 1) + l.barW : x0 + l.barW;
    ctx.fillStyle = t.accent;
    ctx.fillRect(x0, l.y0 + l.plotH + 2, x1 - x0, 4);
  }
}

/** The x axis, the dashed uniform baseline with its label, and the layer numbers under each group. */
function drawAxis({ ctx, l, t, y, plotLeft, labelAbove }: Plot, base: number | null, sel: HeadPick): void {
  ctx.strokeStyle = t.fg;
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(plotLeft, l.y0 + l.plotH + 0.5);
  ctx.lineTo(plotLeft + l.plotW, l.y0 + l.plotH + 0.5);
  ctx.stroke();
  if (base !== null) {
    ctx.save();
    ctx.strokeStyle = t.fg;
    ctx.lineWidth = 1.5;
    ctx.setLineDash([6, 4]);
    ctx.beginPath();
    ctx.moveTo(plotLeft, y(base));
    ctx.lineTo(plotLeft + l.plotW, y(base));
    ctx.stroke();
    ctx.restore();
    ctx.fillStyle = t.fg;
    if (labelAbove) {
      ctx.save();
      ctx.textAlign = "right";
      ctx.textBaseline = "bottom";
      ctx.fillText(`– – ${baselineText(base)}`, plotLeft + l.plotW, l.y0 - 2);
      ctx.restore();
    } else {
      ctx.textAlign = "left";
      ctx.fillText(baselineText(base), plotLeft + l.plotW + 6, y(base));
    }
  }
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  for (let layer = 0; layer < l.nLayers; layer++) {
    const cx = barX(l, layer, 0) + (l.groupW - l.groupGap) / 2;
    ctx.fillStyle = layer === sel.layer ? t.accent : t.fg;
    ctx.fillText(String(layer), cx, l.y0 + l.plotH + 9);
  }
  ctx.fillStyle = t.muted;
  // The longest title that fits the canvas (a narrow share of a row has room for "layer" alone).
  const titles = [`layer (each bar one head, 0–${l.nHeads - 1})`, "layer (a bar per head)", "layer"];
  const title = titles.find((s) => ctx.measureText(s).width <= l.width - 4) ?? "layer";
  const half = ctx.measureText(title).width / 2 + 2;
  const x = Math.min(Math.max(plotLeft + l.plotW / 2, half), l.width - half); // centred under the bars, on the canvas
  ctx.fillText(title, x, l.y0 + l.plotH + t.font * 1.6 + 10);
}

/** The bars' layout: margins for the ticks and the baseline's label, as wide as the room allows. */
function layoutFor(g: Bars, dom: BarsDom, t: Theme, ticks: number[], base: number | null): BarLayout {
  const [nLayers, nHeads] = g.model.get("_meta").shape;
  const probe = textMeasurer();
  probe.font = `${t.font}px ${t.fontFamily}`;
  const tickW = Math.max(...ticks.map((v) => probe.measureText(v.toFixed(1)).width));
  const left = Math.ceil(tickW) + t.font * 2 + 10;
  let right = Math.ceil(probe.measureText(baselineText(base)).width) + 12;
  const room = g.fit.room(dom.scroll);
  let top = t.font;
  const bottom = t.font * 3 + 10;
  // A view given a share of a row (SideBySide: a percentage flex basis) has a width of its own, not its content's.
  const own = hasOwnWidth(g.el);
  // The width the view may take: the output area's (or the fitted box's), never more than a share it was given.
  const measured = room ? (own ? Math.min(room.width, roomFor(g.el)) : room.width) : roomFor(g.el);
  const wrapped = !own && g.el.clientWidth > 0 && g.el.clientWidth <= g.shell.root.offsetWidth + 1;
  const avail = availWidth(measured, wrapped, dom.lastAvail);
  dom.lastAvail = avail;
  // Too narrow for the baseline's label beside the bars (03's bars beside a heatmap, at 720p): it goes above them.
  dom.labelAbove = base !== null && avail - left - right - 24 < 200;
  if (dom.labelAbove) {
    right = 8;
    top = Math.round(t.font * 1.6);
  }
  return barLayout({
    nLayers,
    nHeads,
    targetWidth: Math.max(200, Math.round(Math.min(t.maxGrid * 1.3, avail - left - right - 24))),
    plotH: fitLength(Math.round(t.maxGrid * 0.42), room?.height, top + bottom, 80),
    left,
    top,
    bottom,
    right,
  });
}

/** Whether `el` is as wide as its container gives it, whatever it holds: a share of a flex row (a percentage basis,
 * as SideBySide sets), or a width set in CSS. Such an element never shrink-wraps the bars. */
export function hasOwnWidth(el: HTMLElement): boolean {
  if (typeof getComputedStyle === "undefined") return false;
  const cs = getComputedStyle(el);
  return cs.flexBasis.endsWith("%") || (el.style.width !== "" && el.style.width !== "auto");
}

/** Paint the bars, the caption and the title. */
export function paintBars(g: Bars, dom: BarsDom): void {
  const { model, shell } = g;
  const t = theme(model.get("theme"));
  applyTheme(shell.root, t);
  const m = model.get("_meta");
  const data = currentValues(g);
  const rows = model.get("rows");
  const base = baseline(m, rows);
  const { ticks, yTop } = entropyScale(data, base);
  const l = layoutFor(g, dom, t, ticks, base);
  dom.layout = l;
  const ctx = prepareCanvas(dom.canvas, l.width, l.height);
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, l.width, l.height);
  ctx.font = `${t.font}px ${t.fontFamily}`;
  const plot: Plot = {
    ctx,
    l,
    t,
    y: (v) => l.y0 + l.plotH * (1 - v / yTop),
    plotLeft: l.x0 - l.groupGap / 2,
    labelAbove: !!dom.labelAbove,
  };
  const sel = { layer: model.get("layer"), head: model.get("head") };
  drawTicks(plot, ticks);
  drawBars(plot, data, sel, g.hover);
  drawAxis(plot, base, sel);
  Object.assign(dom.canvas.dataset, {
    x0: String(l.x0),
    y0: String(l.y0),
    plotH: String(l.plotH),
    barW: String(l.barW),
    barGap: String(l.barGap),
    groupW: String(l.groupW),
    nLayers: String(l.nLayers),
    nHeads: String(l.nHeads),
    rows,
    selected: `${sel.layer}/${sel.head}`,
    baseline: base === null ? "" : String(base),
  });
  shell.title.textContent = entropyTitle(m, rows);
  dom.caption.textContent = entropyCaption(base, sel);
  if (!data) shell.showError(`this source has no values for the ${rows} rows`);
}
