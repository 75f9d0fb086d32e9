// MaskExplorer's drawing: the query x key mask (padding hatched and outlined, ticks, axis names) and the KV panel
// (query heads wired to their key/value heads, the cache bars) (state.ts says what).

import { prepareCanvas } from "../../draw/canvas";
import { categorical } from "../../draw/colors";
import { type PanelGeometry, panelGeometry, tickIndices } from "../../draw/teaching";
import { h } from "../../shared/dom";
import type { WidgetModel } from "../../shared/model";
import type { Theme } from "../../shared/theme";
import {
  type MaskExplorerTraits,
  cacheBars,
  cellColor,
  countAllowed,
  globalSet,
  kvLayout,
  kvText,
  maskColors,
  maskSide,
  maskTitle,
  padStart,
  statsText,
} from "./state";

/** The view's elements. */
export interface MaskDom {
  title: HTMLElement;
  caption: HTMLElement;
  row: HTMLElement; // the mask beside the KV panel
  canvas: HTMLCanvasElement;
  stats: HTMLElement;
  right: HTMLElement; // the KV panel
  kvCanvas: HTMLCanvasElement;
  kvText: HTMLElement;
  cacheRows: HTMLElement;
}

/** The traits the mask panel reads. */
export type MaskView = Pick<MaskExplorerTraits, "mask" | "window" | "global_tokens" | "_meta">;

/** Every cell: blue where the query may see the key (orange through a global token), grey where masked. */
function drawCells(
  ctx: CanvasRenderingContext2D,
  g: PanelGeometry,
  data: ArrayLike<number>,
  globals: Set<number>,
  big: boolean,
): void {
  const n = g.rows;
  const colors = maskColors(big);
  for (let q = 0; q < n; q++) {
    for (let k = 0; k < n; k++) {
      ctx.fillStyle = cellColor(colors, data[q * n + k] > 0.5, globals, q, k);
      ctx.fillRect(
        g.x0 + k * g.cw,
        g.y0 + q * g.ch,
        Math.max(g.cw - (g.cw > 6 ? 1 : 0), 0.5),
        g.ch - (g.ch > 6 ? 1 : 0),
      );
    }
  }
}

/** [PAD] query rows are computed and thrown away: hatch them; outline the padded key columns. */
function drawPadding(
  ctx: CanvasRenderingContext2D,
  g: PanelGeometry,
  t: Theme,
  padFrom: number,
  big: boolean,
): void {
  const n = g.rows;
  ctx.save();
  ctx.beginPath();
  ctx.rect(g.x0, g.y0 + padFrom * g.ch, g.w, (n - padFrom) * g.ch);
  ctx.clip();
  ctx.strokeStyle = t.bg;
  ctx.lineWidth = big ? 3 : 2;
  for (let x = -g.h; x < g.w; x += big ? 10 : 8) {
    ctx.beginPath();
    ctx.moveTo(g.x0 + x, g.y0 + g.h);
    ctx.lineTo(g.x0 + x + g.h, g.y0);
    ctx.stroke();
  }
  ctx.restore();
  ctx.strokeStyle = maskColors(big).pad;
  ctx.lineWidth = 2;
  ctx.strokeRect(g.x0 + padFrom * g.cw, g.y0, (n - padFrom) * g.cw, g.h);
}

/** A few query and key numbers, and the axis names. */
function drawAxes(ctx: CanvasRenderingContext2D, g: PanelGeometry, t: Theme, big: boolean): void {
  const n = g.rows;
  const font = big ? 16 : 11;
  ctx.font = `${font}px ${t.fontFamily}`;
  ctx.fillStyle = t.fg;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const i of tickIndices(n, 6)) ctx.fillText(String(i), g.x0 - 4, g.y0 + (i + 0.5) * g.ch);
  ctx.textAlign = "center";
  ctx.textBaseline = "bottom";
  for (const i of tickIndices(n, 6)) ctx.fillText(String(i), g.x0 + (i + 0.5) * g.cw, g.y0 - 3);
  ctx.fillStyle = t.muted;
  ctx.fillText("key j →", g.x0 + g.w / 2, g.y0 - font - 5);
  ctx.save();
  ctx.translate(font / 2 + 1, g.y0 + g.h / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textBaseline = "middle";
  ctx.fillText("query i →", 0, 0);
  ctx.restore();
}

/** Paint the (n, n) mask `data` and the texts about it; `room` is the fitted box's (null when not fitting). Returns
 * the panel's geometry (for the tooltip). */
export function paintMask(
  dom: MaskDom,
  v: MaskView,
  t: Theme,
  data: ArrayLike<number>,
  n: number,
  room: { width: number; height: number } | null,
): PanelGeometry {
  const big = t.name === "lecture";
  const pad = big ? 44 : 34;
  // Fitted: the mask beside the KV panel, as tall as the box leaves under the caption and above the stats.
  dom.row.style.flexWrap = room ? "nowrap" : "wrap";
  dom.right.style.flex = room ? "none" : ""; // the KV panel keeps its width; the mask takes what is left
  const side = maskSide(big, pad, room, {
    kvWidth: room ? dom.right.getBoundingClientRect().width : 0,
    gap: Number.parseFloat(dom.row.style.gap) || 0,
    statsHeight: room ? dom.stats.getBoundingClientRect().height : 0,
  });
  const g = panelGeometry(n, n, side, side, pad, pad, big ? 44 : 30);
  const width = Math.ceil(pad + g.w + 8);
  const height = Math.ceil(pad + g.h + 8);
  const ctx = prepareCanvas(dom.canvas, width, height);
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, width, height);
  const globals = globalSet(v.mask, v.global_tokens);
  const meta = v._meta;
  const padFrom = padStart(n, meta.padding); // rows and columns from here on are [PAD]
  drawCells(ctx, g, data, globals, big);
  if (padFrom < n) drawPadding(ctx, g, t, padFrom, big);
  drawAxes(ctx, g, t, big);
  Object.assign(dom.canvas.dataset, {
    n: String(n),
    x0: String(g.x0),
    y0: String(g.y0),
    cw: String(g.cw),
    ch: String(g.ch),
    allowed: String(countAllowed(data, n)),
    mask: v.mask,
    padding: String(n - padFrom),
  });
  dom.stats.textContent = statsText(meta, globals.size, padFrom, n);
  dom.caption.textContent = meta.caption;
  dom.title.textContent = maskTitle(v.mask, v.window, n);
  return g;
}

/** The MHA / GQA / MQA cache bars, the current variant in the accent colour. */
function fillCacheRows(
  dom: MaskDom,
  meta: MaskExplorerTraits["_meta"],
  nkv: number,
  t: Theme,
  font: number,
): void {
  const big = t.name === "lecture";
  dom.cacheRows.replaceChildren();
  for (const b of cacheBars(meta, nkv)) {
    const fill = h("div", {});
    fill.style.height = `${font}px`;
    fill.style.width = `${b.width}px`;
    fill.style.background = b.current ? t.accent : "#a0a7b0";
    const line = h(
      "div",
      { "data-testid": `cache-${b.name}` },
      h("span", { text: b.label }),
      fill,
      h("span", { text: b.text }),
    );
    line.style.display = "grid";
    line.style.gridTemplateColumns = big ? "110px 240px auto" : "80px 230px auto";
    line.style.alignItems = "center";
    line.style.gap = "6px";
    dom.cacheRows.append(line);
  }
}

/** Paint the KV panel: each query head wired to its key/value head, the text and the cache bars. `fitted`: the
 * panel's text wraps to its drawing's width. */
export function paintKv(
  dom: MaskDom,
  model: WidgetModel<MaskExplorerTraits>,
  t: Theme,
  fitted: boolean,
): void {
  const meta = model.get("_meta");
  const map = meta.kv_heads ?? [];
  const nh = map.length;
  const nkv = model.get("n_kv_heads");
  const l = kvLayout(nh, nkv, t.name === "lecture");
  dom.right.style.width = fitted ? `${l.width}px` : "";
  const ctx = prepareCanvas(dom.kvCanvas, l.width, l.height);
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, l.width, l.height);
  ctx.font = `${l.font}px ${t.fontFamily}`;
  ctx.lineWidth = t.name === "lecture" ? 2 : 1.2;
  for (let i = 0; i < nh; i++) {
    ctx.strokeStyle = categorical(map[i]);
    ctx.beginPath();
    ctx.moveTo(l.qX(i), l.qY + l.size);
    ctx.lineTo(l.kvX(map[i]), l.kvY);
    ctx.stroke();
  }
  for (let i = 0; i < nh; i++) {
    ctx.fillStyle = categorical(map[i]);
    ctx.fillRect(l.qX(i) - l.size / 2, l.qY, l.size, l.size);
  }
  for (let j = 0; j < nkv; j++) {
    ctx.fillStyle = categorical(j);
    ctx.fillRect(l.kvX(j) - l.size, l.kvY, l.size * 2, l.size);
  }
  ctx.fillStyle = t.fg;
  ctx.textAlign = "left";
  ctx.textBaseline = "bottom";
  ctx.fillText(`${nh} query heads (each has its own Q)`, 6, l.qY - 3);
  ctx.textBaseline = "top";
  ctx.fillText(`${nkv} key/value head${nkv === 1 ? "" : "s"} (K and V, cached)`, 6, l.kvY + l.size + 4);
  Object.assign(dom.kvCanvas.dataset, { nHeads: String(nh), nKvHeads: String(nkv), variant: meta.variant });
  dom.kvText.textContent = kvText(meta.variant, nh, nkv, {
    n_layers: model.get("n_layers"),
    head_dim: model.get("head_dim"),
    seq_len: model.get("seq_len"),
    bytes_per_value: model.get("bytes_per_value"),
  });
  fillCacheRows(dom, meta, nkv, t, l.font);
}
