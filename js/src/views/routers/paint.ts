// RouterView's drawing: the token x layer strip (cells coloured by the top expert, faded by its gate weight, labelled
// with the k experts), the layer numbers and token labels, the selection's outlines, and the chosen layer's load per
// expert as bars on a 0–100 % axis with the balanced share dashed (state.ts says what).

import { fitLabel, fitToken, prepareCanvas, textMeasurer } from "../../draw/canvas";
import { textOn } from "../../draw/heads";
import type { Theme } from "../../shared/theme";
import {
  type RouterHit,
  type RouterLayout,
  type RouterMeta,
  type Routes,
  STRIP_TITLE,
  cellLabel,
  choices,
  expertRgb,
  loadTitle,
  routerLayout,
} from "./state";

/** What one paint needs: the meta, the decoded routes, the traits that choose what is shown, the hover. */
export interface RouterView {
  meta: RouterMeta;
  routes: Routes;
  layer: number;
  selection: number[];
  weighted: boolean;
  hover: RouterHit;
}

const css = ([r, g, b]: [number, number, number]) => `rgb(${r},${g},${b})`;

/** The token labels' width: the widest label, capped. */
function labelWidth(meta: RouterMeta, t: Theme): number {
  const probe = textMeasurer();
  probe.font = `${t.font}px ${t.fontFamily}`;
  let w = 0;
  for (const tok of meta.tokens) w = Math.max(w, probe.measureText(fitToken(probe, tok, 1e9)).width);
  return Math.min(Math.ceil(w) + 12, t.font * 9);
}

/** The widest the bars' title gets for this text (every token of a long span selected, weighted). */
function titleWidth(v: RouterView, t: Theme): number {
  const probe = textMeasurer();
  probe.font = `${t.font}px ${t.fontFamily}`;
  const last = Math.max(0, v.meta.tokens.length - 1);
  const widest = Math.max(...v.meta.layers);
  return Math.ceil(probe.measureText(loadTitle(widest, [Math.max(0, last - 1), last], true)).width);
}

/** The strip: layer numbers, token labels, cells with their experts, outlines of the selection and the layer. */
function drawStrip(ctx: CanvasRenderingContext2D, l: RouterLayout, v: RouterView, t: Theme): void {
  const { meta, routes } = v;
  const li0 = meta.layers.indexOf(v.layer);
  ctx.textBaseline = "middle";
  ctx.textAlign = "left";
  ctx.fillStyle = t.fg;
  ctx.fillText(STRIP_TITLE, 2, t.font * 0.7);
  ctx.textAlign = "center";
  for (let li = 0; li < l.nLayers; li++) {
    ctx.fillStyle = li === li0 ? t.accent : t.fg;
    ctx.fillText(`L${meta.layers[li]}`, l.labelW + (li + 0.5) * l.cellW, l.top - t.font * 0.8);
  }
  const selected = new Set(v.selection);
  const labelFont = Math.min(t.font, Math.floor(l.cellH * 0.8));
  for (let tk = 0; tk < l.nTokens; tk++) {
    const y = l.top + tk * l.cellH;
    if (labelFont >= 7) {
      ctx.font = `${labelFont}px ${t.fontFamily}`;
      ctx.textAlign = "right";
      ctx.fillStyle = selected.has(tk) ? t.accent : t.fg;
      ctx.fillText(fitToken(ctx, meta.tokens[tk], l.labelW - 8), l.labelW - 6, y + l.cellH / 2);
    }
    for (let li = 0; li < l.nLayers; li++) {
      const pairs = choices(routes, li, tk);
      const rgb = expertRgb(meta, pairs[0][0], pairs[0][1]);
      const x = l.labelW + li * l.cellW;
      ctx.fillStyle = css(rgb);
      ctx.fillRect(x + 1, y + 0.5, l.cellW - 2, l.cellH - 1);
      if (labelFont >= 8) {
        ctx.textAlign = "center";
        ctx.fillStyle = textOn(rgb);
        ctx.fillText(cellLabel(pairs), x + l.cellW / 2, y + l.cellH / 2);
      }
    }
  }
  ctx.font = `${t.font}px ${t.fontFamily}`;
  ctx.strokeStyle = t.fg;
  ctx.lineWidth = 2;
  for (const tk of v.selection) ctx.strokeRect(l.labelW, l.top + tk * l.cellH, l.nLayers * l.cellW, l.cellH);
  if (li0 >= 0) {
    ctx.strokeStyle = t.fg; // the accent (orange in the lecture theme) would vanish against the palette's orange
    ctx.lineWidth = 3;
    ctx.strokeRect(l.labelW + li0 * l.cellW, l.top - 1, l.cellW, l.nTokens * l.cellH + 2);
  }
  if (v.hover?.what === "cell") {
    ctx.strokeStyle = t.fg;
    ctx.lineWidth = 1;
    ctx.strokeRect(
      l.labelW + v.hover.li * l.cellW + 1,
      l.top + v.hover.t * l.cellH + 1,
      l.cellW - 2,
      l.cellH - 2,
    );
  }
}

/** The bars of the chosen layer: a 0–100 % axis, one bar per expert in its colour, the balanced share dashed. */
function drawBars(
  ctx: CanvasRenderingContext2D,
  l: RouterLayout,
  v: RouterView,
  t: Theme,
  load: Float64Array,
): void {
  const y = (pct: number) => l.barsY + l.barsH * (1 - pct / 100);
  ctx.textBaseline = "middle";
  for (const pct of [0, 25, 50, 75, 100]) {
    ctx.globalAlpha = 0.35;
    ctx.strokeStyle = t.grid;
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(l.barsX, Math.round(y(pct)) + 0.5);
    ctx.lineTo(l.barsX + l.barsW, Math.round(y(pct)) + 0.5);
    ctx.stroke();
    ctx.globalAlpha = 1;
    ctx.fillStyle = t.muted;
    ctx.textAlign = "right";
    ctx.fillText(`${pct}%`, l.barsX - 4, y(pct));
  }
  const slot = l.barsW / l.nExperts;
  const every = Math.max(1, Math.ceil((t.font * 1.6) / slot));
  for (let e = 0; e < l.nExperts; e++) {
    const pct = 100 * load[e];
    const x = l.barsX + e * slot + slot * 0.12;
    ctx.fillStyle = css(expertRgb(v.meta, e, 1));
    ctx.fillRect(x, y(pct), slot * 0.76, l.barsY + l.barsH - y(pct));
    if (v.hover?.what === "bar" && v.hover.e === e) {
      ctx.strokeStyle = t.fg;
      ctx.lineWidth = 2;
      ctx.strokeRect(x, y(pct), slot * 0.76, l.barsY + l.barsH - y(pct));
    }
    if (e % every === 0) {
      ctx.fillStyle = t.fg;
      ctx.textAlign = "center";
      ctx.fillText(String(e), l.barsX + (e + 0.5) * slot, l.barsY + l.barsH + t.font * 0.8);
    }
  }
  ctx.save();
  ctx.strokeStyle = t.fg;
  ctx.lineWidth = 1.5;
  ctx.setLineDash([6, 4]);
  ctx.beginPath();
  ctx.moveTo(l.barsX, y(100 / l.nExperts));
  ctx.lineTo(l.barsX + l.barsW, y(100 / l.nExperts));
  ctx.stroke();
  ctx.restore();
  ctx.fillStyle = t.fg;
  ctx.textAlign = "left";
  const left = l.barsX - Math.round(t.font * 3.2); // over the axis' ticks (routerLayout's `axis`)
  ctx.fillText(
    fitLabel(ctx, loadTitle(v.layer, v.selection, v.weighted), l.width - left - 4),
    left,
    l.barsY - t.font,
  );
  ctx.fillStyle = t.muted;
  ctx.fillText("expert", l.barsX, l.barsY + l.barsH + t.font * 2);
}

/** Paint the view on `canvas` within `room` (null: full size); returns the layout, for the hit tests. */
export function paintRouters(
  canvas: HTMLCanvasElement,
  v: RouterView,
  t: Theme,
  load: Float64Array,
  room: { width: number; height: number } | null,
): RouterLayout {
  const l = routerLayout(
    {
      nLayers: v.routes.nLayers,
      nTokens: v.routes.nTokens,
      nExperts: v.meta.n_experts,
      labelW: labelWidth(v.meta, t),
      font: t.font,
      titleW: titleWidth(v, t),
    },
    room,
  );
  const ctx = prepareCanvas(canvas, l.width, l.height);
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, l.width, l.height);
  ctx.font = `${t.font}px ${t.fontFamily}`;
  drawStrip(ctx, l, v, t);
  drawBars(ctx, l, v, t, load);
  Object.assign(canvas.dataset, {
    x0: String(l.labelW), // the strip's first cell, as the grid views publish theirs (tests/browser/helpers.py)
    y0: String(l.top),
    cw: String(l.cellW),
    ch: String(l.cellH),
    barsX: String(l.barsX),
    barsY: String(l.barsY),
    barsW: String(l.barsW),
    barsH: String(l.barsH),
    layer: String(v.layer),
    selection: v.selection.join(","),
    load: Array.from(load, (x) => x.toFixed(6)).join(","),
  });
  return l;
}
