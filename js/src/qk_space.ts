// QKSpaceView: one head's queries (filled dots) and keys (rings) over a corpus, embedded together (AttentionViz).
// Mirrors attnwidgets/widgets/qk_space.py. The points arrive as one packed (N, 9) float32 buffer; the scatter is
// painted on a canvas one path per colour, hovering and clicking hit-test through a grid of buckets
// (shared/qk_space_state.ts), and a click opens the sentence's attention on this head in the panel beside it
// (fetched by the widget's own message, so it works wherever anywidget does).

import { type Packed, decode, maxOf, replyPacked } from "./shared/buffers";
import type { ColorMapName } from "./shared/colors";
import { h, listen, resetControls, select } from "./shared/dom";
import { drawLegend, drawMatrix, fitToken, prepareCanvas } from "./shared/draw";
import { fitWatcher } from "./shared/fit";
import { type ScatterLayout, fmt, repaintOnResize, roomFor, scatterLayout, toPixel } from "./shared/heads";
import { type RenderProps, type WidgetModel, onModel, saveTraits } from "./shared/model";
import {
  COL,
  type ColorBy,
  N_COLS,
  OTHER,
  type PointGrid,
  buildGrid,
  column,
  coordinates,
  gridNearest,
  pointColors,
  tokenInSentence,
} from "./shared/qk_space_state";
import { Requester } from "./shared/requests";
import { tokenLabel, userText } from "./shared/text";
import { type Theme, applyTheme, theme } from "./shared/theme";
import { hoverTooltip, tooltipBox } from "./shared/tooltip";
import { type WidgetShell, widgetShell } from "./shared/widget_shell";

/** Python traits of QKSpaceView (attnwidgets/widgets/qk_space.py). */
export interface QKSpaceTraits {
  color: ColorBy;
  colormap: string;
  sentence: number; // -1: none clicked yet
  point: number; // -1: none
  theme: string;
  fit: "auto" | boolean | number[];
  _error: string;
  _payload: { points: Packed }; // (N, 9) float32, columns as shared/qk_space_state.ts COL
  _meta: {
    title: string;
    method: string;
    layer: number;
    head: number;
    tokens: string[][]; // each sentence's tokens
    token_names: string[];
    pos_names: string[];
    has_pos: boolean;
    explained: number[];
  };
}

type Model = WidgetModel<QKSpaceTraits>;

const CSS = `
.aw-qk-row { display: flex; gap: 12px; align-items: flex-start; }
.aw-qk-panel-title { min-height: 1.2em; }
.aw-qk-space .aw-swatch { display: inline-flex; gap: 3px; align-items: center; margin-right: 8px; }
`;

interface Dom {
  scatter: HTMLCanvasElement;
  panel: HTMLCanvasElement;
  panelTitle: HTMLDivElement;
  row: HTMLDivElement;
  legend: HTMLDivElement;
  tooltip: HTMLDivElement;
}

interface State {
  points: Float32Array;
  n: number;
  px: Float64Array; // pixel x, y of each point
  grid: PointGrid | null;
  layout: ScatterLayout | null;
  radius: number;
  hover: number;
  maps: Map<number, { data: Float32Array; n: number }>;
}

function buildDom(shell: WidgetShell): Dom {
  const scatter = h("canvas", { className: "aw-canvas", "data-testid": "qk-space-canvas" });
  const panel = h("canvas", { className: "aw-canvas", "data-testid": "qk-space-panel" });
  const panelTitle = h("div", {
    className: "aw-muted aw-qk-panel-title",
    "data-testid": "qk-space-panel-title",
  });
  const row = h("div", { className: "aw-qk-row" }, scatter, h("div", {}, panelTitle, panel));
  const legend = h("div", { className: "aw-legend", "data-testid": "legend" });
  legend.style.flexWrap = "wrap";
  const note = h("div", {
    className: "aw-muted aw-hint",
    text: "Hover: the token in its sentence. Click: that sentence's attention on this head, beside.",
  });
  const tooltip = tooltipBox();
  shell.root.append(shell.title, shell.bar, shell.errorBox, row, legend, note, tooltip);
  return { scatter, panel, panelTitle, row, legend, tooltip };
}

function colorOptions(m: QKSpaceTraits["_meta"]): Array<[string, string]> {
  const out: Array<[string, string]> = [
    ["position", "position in sentence"],
    ["token", "token"],
  ];
  if (m.has_pos) out.push(["pos", "part of speech"]);
  out.push(["attention", "attention received (keys)"]);
  return out;
}

function buildControls(model: Model, shell: WidgetShell, controls: Array<() => void>): void {
  resetControls(controls, shell.bar);
  const menu = select(colorOptions(model.get("_meta")), model.get("color"), "colour by");
  menu.dataset.testid = "color-select";
  controls.push(listen(menu, "change", () => saveTraits(model, { color: menu.value as ColorBy })));
  shell.bar.append(h("label", {}, "colour by", menu), shell.exportControls(controls));
}

/** Sizes of the scatter and the panel (CSS px): the theme's, shrunk to the fitted room when the view fits. */
function sizes(t: Theme, el: HTMLElement, room: { width: number; height: number } | null): [number, number] {
  const avail = Math.min(roomFor(el), room ? room.width : Number.POSITIVE_INFINITY) - 12;
  let s = Math.round(Math.min(t.maxGrid * 0.8, Math.max(240, avail * 0.55)));
  if (room) s = Math.max(160, Math.min(s, room.height - 4));
  const p = Math.max(140, Math.min(s, Math.floor(avail - s - 12)));
  return [s, room ? Math.min(p, room.height - 24) : p];
}

function paintScatter(model: Model, dom: Dom, st: State, t: Theme, size: number): void {
  const started = performance.now();
  // Points on white need a map without a near-white end: viridis unless one was chosen (the panel keeps the theme's).
  const map = (model.get("colormap") || "viridis") as ColorMapName;
  const by = model.get("color");
  const m = model.get("_meta");
  const nCat = by === "token" ? m.token_names.length : by === "pos" ? m.pos_names.length : 0;
  const { index, palette, vmax } = pointColors(st.points, by, map, nCat);
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
  const r = st.radius;
  for (const kind of [0, 1]) {
    // One path per colour: queries filled, then keys as rings on top.
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
  markSelection(model, ctx, st, t);
  const l = st.layout;
  Object.assign(dom.scatter.dataset, {
    n: String(st.n),
    color: by,
    vmax: String(vmax),
    layout: JSON.stringify({ ox: l.ox, oy: l.oy, s: l.s }),
    sentence: String(model.get("sentence")),
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
      dom.legend.append(item(palette[k], by === "token" ? tokenLabel(name, 12) : name)),
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
function paintPanel(model: Model, dom: Dom, st: State, t: Theme, size: number): void {
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
  if (k >= 0) {
    ctx.lineWidth = 2;
    ctx.strokeStyle = t.accent;
    if (isKey) ctx.strokeRect(x0 + k * cell, y0, cell, n * cell);
    else ctx.strokeRect(x0, y0 + k * cell, n * cell, cell);
  }
  const m = model.get("_meta");
  const what = k >= 0 ? ` · ${isKey ? "key" : "query"} “${tokenLabel(tokens[k] ?? "", 20)}”` : "";
  dom.panelTitle.textContent = `sentence ${s} · layer ${m.layer} head ${m.head}${what}`;
  Object.assign(dom.panel.dataset, { n: String(n), cell: String(cell), x0: String(x0), y0: String(y0) });
}

function render({ model, el }: RenderProps<QKSpaceTraits>): () => void {
  const shell = widgetShell(model, el, "aw-qk-space", CSS);
  const dom = buildDom(shell);
  const { cleanups } = shell;
  const controls: Array<() => void> = [];
  const requests = new Requester(model);
  cleanups.push(() => requests.dispose());
  const st: State = {
    points: new Float32Array(0),
    n: 0,
    px: new Float64Array(0),
    grid: null,
    layout: null,
    radius: 3,
    hover: -1,
    maps: new Map(),
  };
  const fit = fitWatcher(model, el, shell.root, () => paint());
  cleanups.push(fit.cleanup);

  function paint(): void {
    const t = theme(model.get("theme"));
    applyTheme(shell.root, t);
    shell.title.textContent = userText(model.get("_meta").title ?? "");
    const [s, p] = sizes(t, el, fit.room(dom.row));
    try {
      paintScatter(model, dom, st, t, s);
      paintPanel(model, dom, st, t, p);
    } catch (e) {
      shell.showError(String((e as Error).message ?? e));
    }
  }

  function load(): void {
    try {
      st.points = decode(model.get("_payload").points).data;
      st.n = Math.floor(st.points.length / N_COLS);
    } catch (e) {
      shell.showError(String((e as Error).message ?? e));
    }
    buildControls(model, shell, controls);
    paint();
    fetchSentence();
  }

  function fetchSentence(): void {
    const s = model.get("sentence");
    if (s < 0 || st.maps.has(s)) return;
    requests
      .get(`sentence/${s}`, { what: "sentence", sentence: s })
      .then((reply) => {
        const mat = decode(replyPacked(reply.content, reply.buffers[0]));
        st.maps.set(s, { data: mat.data, n: mat.shape[0] });
        if (model.get("sentence") === s) paint();
      })
      .catch((e: Error) => shell.showError(String(e.message ?? e)));
  }

  const hitAt = (e: MouseEvent): number | null => {
    if (!st.grid) return null;
    const rect = dom.scatter.getBoundingClientRect();
    const i = gridNearest(st.grid, st.px, e.clientX - rect.left, e.clientY - rect.top, st.radius + 4);
    return i < 0 ? null : i;
  };

  cleanups.push(
    ...hoverTooltip(dom.scatter, shell.root, dom.tooltip, {
      hitAt,
      same: (a, b) => a === b,
      tip: (i) => tipFor(model, st, i),
      changed: (i) => {
        st.hover = i ?? -1;
        paint();
      },
    }),
    listen(dom.scatter, "click", (e: MouseEvent) => {
      const i = hitAt(e);
      if (i === null) return;
      saveTraits(model, { sentence: column(st.points, i, COL.sentence), point: i });
    }),
    onModel(model, "change:sentence", () => {
      paint();
      fetchSentence();
    }),
    onModel(model, "change:point", paint),
    onModel(model, "change:color", () => {
      buildControls(model, shell, controls);
      paint();
    }),
    onModel(model, "change:colormap", paint),
    onModel(model, "change:theme", paint),
    onModel(model, "change:_payload", load),
    onModel(model, "change:_meta", load),
    repaintOnResize(el, paint),
  );
  load();
  return shell.close;
}

function tipFor(model: Model, st: State, i: number): { text: string; data: Record<string, string> } {
  const m = model.get("_meta");
  const s = column(st.points, i, COL.sentence);
  const k = column(st.points, i, COL.token);
  const kind = column(st.points, i, COL.kind) === 0 ? "query" : "key";
  const tokens = m.tokens[s] ?? [];
  const lines = [
    `${kind} “${tokenLabel(tokens[k] ?? "", 24)}” · sentence ${s}, token ${k}`,
    tokenInSentence(tokens, k),
  ];
  const by = model.get("color");
  if (by === "attention" && kind === "key")
    lines.push(`attention received: ${fmt(column(st.points, i, COL.received))}`);
  if (by === "pos") {
    const c = column(st.points, i, COL.posCat);
    lines.push(`part of speech: ${c >= 0 ? m.pos_names[c] : "other"}`);
  }
  return {
    text: lines.join("\n"),
    data: { kind, sentence: String(s), token: String(k), text: tokens[k] ?? "" },
  };
}

export default { render };
