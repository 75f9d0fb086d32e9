// QKSpaceView's drawing: the scatter (one path per colour: queries filled, keys as rings), the selection marks, the
// legend, and the clicked sentence's attention in the panel beside it (state.ts says what).

import { drawLegend, drawMatrix, fitToken, prepareCanvas } from "../../draw/canvas";
import type { ColorMapName } from "../../draw/colors";
import { type ScatterLayout, fmt, scatterLayout, toPixel } from "../../draw/heads";
import { outlineRows } from "../../draw/span";
import { maxOf } from "../../shared/buffers";
import { h } from "../../shared/dom";
import type { WidgetModel } from "../../shared/model";
import { isolate, tokenLabel, visibleText } from "../../shared/text";
import type { Theme } from "../../shared/theme";
import {
  COL,
  type ColorBy,
  N_COLS,
  OTHER,
  type PointGrid,
  type QKSpaceTraits,
  buildGrid,
  categoryCount,
  column,
  coordinates,
  panelTitle,
  pointColors,
  selectedPoints,
} from "./state";

type Model = WidgetModel<QKSpaceTraits>;

/** The view's elements. */
export interface Dom {
  scatter: HTMLCanvasElement;
  panel: HTMLCanvasElement;
  panelTitle: HTMLDivElement;
  row: HTMLDivElement;
  legend: HTMLDivElement;
  tooltip: HTMLDivElement;
}

/** What the page keeps between paints: the points, their pixels and hit-test grid, the fetched sentences. */
export interface State {
  points: Float32Array;
  n: number;
  px: Float64Array; // pixel x, y of each point
  anchor: number | null; // the token a shift-click on a query point extends the selection from
  grid: PointGrid | null;
  layout: ScatterLayout | null;
  radius: number;
  hover: number;
  maps: Map<number, { data: Float32Array; n: number }>;
}

/** The points of colour index c and kind (0 query, 1 key) as one path: queries filled, keys as rings. */
function drawPoints(
  ctx: CanvasRenderingContext2D,
  st: State,
  t: Theme,
  index: Uint16Array,
  palette: string[],
): void {
  const r = st.radius;
  for (const kind of [0, 1]) {
    for (let c = 0; c < palette.length; c++) {
      ctx.beginPath();
      let any = false;
      for (let i = 0; i < st.n; i++) {
        if (index[i] !== c || st.points[i * N_COLS + COL.kind] !== kind) continue;
        ctx.moveTo(st.px[2 * i] + r, st.px[2 * i + 1]);
        ctx.arc(st.px[2 * i], st.px[2 * i + 1], r, 0, 2 * Math.PI);
        any = true;
      }
      if (!any) continue;
      if (kind === 0) {
        ctx.fillStyle = palette[c];
        ctx.fill();
      } else {
        ctx.lineWidth = t.font >= 18 ? 2 : 1.5;
        ctx.strokeStyle = palette[c];
        ctx.stroke();
      }
    }
  }
}

/** Paint the scatter `size` px square, and the legend. */
export function paintScatter(model: Model, dom: Dom, st: State, t: Theme, size: number): void {
  const started = performance.now();
  // Points on white need a map without a near-white end: viridis unless one was chosen (the panel keeps the theme's).
  const map = (model.get("colormap") || "viridis") as ColorMapName;
  const by = model.get("color");
  const { index, palette, vmax } = pointColors(st.points, by, map, categoryCount(model.get("_meta"), by));
  st.radius = t.font >= 18 ? 4 : 3;
  st.layout = scatterLayout(coordinates(st.points), size, st.radius + 6);
  const ctx = prepareCanvas(dom.scatter, size, size);
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, size, size);
  ctx.strokeStyle = t.grid;
  ctx.strokeRect(0.5, 0.5, size - 1, size - 1);
  st.px = new Float64Array(2 * st.n);
  for (let i = 0; i < st.n; i++)
    [st.px[2 * i], st.px[2 * i + 1]] = toPixel(
      st.layout,
      column(st.points, i, COL.x),
      column(st.points, i, COL.y),
    );
  st.grid = buildGrid(st.px, size, size, 4 * st.radius);
  drawPoints(ctx, st, t, index, palette);
  markSelection(model, ctx, st, t);
  const l = st.layout;
  Object.assign(dom.scatter.dataset, {
    n: String(st.n),
    color: by,
    vmax: String(vmax),
    layout: JSON.stringify({ ox: l.ox, oy: l.oy, s: l.s }),
    sentence: String(model.get("sentence")),
    selected: selectedPoints(st.points, model.get("sentence"), model.get("selection") ?? []).join(","),
    paintMs: String(Math.round(performance.now() - started)),
  });
  buildLegend(model, dom, by, map, vmax, palette);
}

/** The clicked sentence's points outlined, the clicked point in the accent colour, the hovered one named. */
function markSelection(model: Model, ctx: CanvasRenderingContext2D, st: State, t: Theme): void {
  const s = model.get("sentence");
  const r = st.radius;
  if (s >= 0) {
    ctx.beginPath();
    for (let i = 0; i < st.n; i++) {
      if (column(st.points, i, COL.sentence) !== s) continue;
      ctx.moveTo(st.px[2 * i] + r + 1.5, st.px[2 * i + 1]);
      ctx.arc(st.px[2 * i], st.px[2 * i + 1], r + 1.5, 0, 2 * Math.PI);
    }
    ctx.lineWidth = 1;
    ctx.strokeStyle = t.fg;
    ctx.stroke();
  }
  // the selected tokens' query points: filled in the accent, ringed in the foreground
  const picked = selectedPoints(st.points, s, model.get("selection") ?? []);
  for (const i of picked) {
    ctx.beginPath();
    ctx.arc(st.px[2 * i], st.px[2 * i + 1], r + 2.5, 0, 2 * Math.PI);
    ctx.fillStyle = t.accent;
    ctx.fill();
    ctx.lineWidth = 1.5;
    ctx.strokeStyle = t.fg;
    ctx.stroke();
  }
  for (const [i, colour] of [
    [model.get("point"), t.accent],
    [st.hover, t.fg],
  ] as Array<[number, string]>) {
    if (i < 0 || i >= st.n) continue;
    ctx.beginPath();
    ctx.arc(st.px[2 * i], st.px[2 * i + 1], r + 4, 0, 2 * Math.PI);
    ctx.lineWidth = 2.5;
    ctx.strokeStyle = colour;
    ctx.stroke();
  }
}

function buildLegend(
  model: Model,
  dom: Dom,
  by: ColorBy,
  map: ColorMapName,
  vmax: number,
  palette: string[],
): void {
  const m = model.get("_meta");
  const item = (colour: string, name: string, ring = false) => {
    const dot = h("span", { text: ring ? "○" : "●", "data-export-text": "" });
    dot.style.color = colour;
    return h("span", { className: "aw-swatch" }, dot, h("span", { text: name, "data-export-text": "" }));
  };
  dom.legend.replaceChildren(item(OTHER, "query"), item(OTHER, "key", true));
  if (by === "token" || by === "pos") {
    const names = by === "token" ? m.token_names : m.pos_names;
    names.forEach((name, k) =>
      // made visible and isolated: a U+202E in a token or a tag must not reverse the rest of the legend
      dom.legend.append(item(palette[k], isolate(by === "token" ? tokenLabel(name, 12) : visibleText(name)))),
    );
    dom.legend.append(item(OTHER, "other"));
    return;
  }
  const bar = h("canvas");
  drawLegend(bar, map);
  const position = by === "position";
  const label = position ? "position in sentence" : "attention received (mean over the queries that see it)";
  dom.legend.append(
    h("span", { className: "aw-muted", text: position ? "first" : "0", "data-export-text": "" }),
    bar,
    h("span", { className: "aw-muted", text: position ? "last" : fmt(vmax, 2), "data-export-text": "" }),
    h("span", { className: "aw-muted", text: label, "data-export-text": "" }),
  );
}

/** The clicked sentence's attention on this head: query rows, key columns, the clicked token's row or column marked. */
export function paintPanel(model: Model, dom: Dom, st: State, t: Theme, size: number): void {
  const s = model.get("sentence");
  const hit = s >= 0 ? st.maps.get(s) : undefined;
  const ctx = prepareCanvas(dom.panel, size, size);
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, size, size);
  dom.panel.dataset.sentence = String(hit ? s : -1);
  if (!hit) {
    dom.panelTitle.textContent =
      s >= 0 ? `sentence ${s}: loading…` : "Click a point to open its sentence here.";
    return;
  }
  const tokens = model.get("_meta").tokens[s] ?? [];
  const n = hit.n;
  const label = Math.min(Math.round(size * 0.28), t.font * 7);
  const cell = Math.max(1, Math.floor((size - label - 4) / Math.max(1, n)));
  const x0 = label;
  const y0 = label;
  const map = (model.get("colormap") || t.colormap) as ColorMapName;
  drawMatrix(ctx, hit.data, n, n, x0, y0, cell * n, cell * n, maxOf(hit.data), map);
  const p = model.get("point");
  const k = p >= 0 ? column(st.points, p, COL.token) : -1;
  const isKey = p >= 0 && column(st.points, p, COL.kind) === 1;
  if (cell >= 7) {
    ctx.font = `${Math.min(t.font, cell)}px ${t.fontFamily}`;
    ctx.textBaseline = "middle";
    for (let j = 0; j < n; j++) {
      ctx.fillStyle = j === k && !isKey ? t.accent : t.fg;
      ctx.textAlign = "right";
      ctx.fillText(fitToken(ctx, tokens[j] ?? "", label - 6), x0 - 4, y0 + (j + 0.5) * cell);
      ctx.save();
      ctx.translate(x0 + (j + 0.5) * cell, y0 - 4);
      ctx.rotate(-Math.PI / 2);
      ctx.textAlign = "left";
      ctx.fillStyle = j === k && isKey ? t.accent : t.fg;
      ctx.fillText(fitToken(ctx, tokens[j] ?? "", label - 6), 0, 0);
      ctx.restore();
    }
  }
  outlineRows(ctx, model.get("selection") ?? [], (q) => y0 + q * cell, cell, x0, n * cell, t);
  if (k >= 0) {
    ctx.lineWidth = 2;
    ctx.strokeStyle = t.accent;
    if (isKey) ctx.strokeRect(x0 + k * cell, y0, cell, n * cell);
    else ctx.strokeRect(x0, y0 + k * cell, n * cell, cell);
  }
  const token = k >= 0 ? { text: tokens[k] ?? "", isKey } : null;
  dom.panelTitle.textContent = panelTitle(model.get("_meta"), s, token);
  Object.assign(dom.panel.dataset, {
    n: String(n),
    cell: String(cell),
    x0: String(x0),
    y0: String(y0),
    selection: (model.get("selection") ?? []).join(","),
  });
}
