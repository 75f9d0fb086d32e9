// AttentionCompare: two results' attention for one head, side by side (A | B, unaligned tokens greyed) or as the
// signed difference B − A over the aligned tokens on a diverging scale centred on 0, beside a layers x heads grid of
// a per-head summary (Jensen–Shannon divergence or cosine). A click in the grid opens that head.
// Mirrors attnwidgets/widgets/compare.py. Only the shown head's maps cross from Python; choosing another head sets
// the synced `layer`/`head` and the kernel answers with a new `_payload`.
// Query tokens of A are selected with the heatmap's clicks (shared/span.ts), synced as `selection`/`combine`; the
// selected rows are outlined (in B where aligned) and each map gets the combined row of its selected rows under it
// (Python computes them: AttentionCompare.span_weights, in `_payload`).

import { type Packed, decode } from "./shared/buffers";
import type { ColorMapName } from "./shared/colors";
import { rgbAt } from "./shared/colors";
import { type DivergingName, divergingRgb } from "./shared/diverging";
import { h, listen, resetControls, select } from "./shared/dom";
import { drawLegend, fitToken, labelRoom, matrixCanvas, prepareCanvas, textMeasurer } from "./shared/draw";
import { fitWatcher } from "./shared/fit";
import { fitGridWidth } from "./shared/fit_views";
import { traitMenu, wordsToggle } from "./shared/head_stats";
import {
  type GridLayout,
  fmt,
  gridCellAt,
  gridLayout,
  headLabel,
  roomFor,
  statRange,
  textOn,
} from "./shared/heads";
import { type RenderProps, onModel } from "./shared/model";
import { arrowKeysSelect, clickToSelect, sameHead, selectHead, typedInControl } from "./shared/selection";
import * as span from "./shared/span";
import { userText } from "./shared/text";
import { type Theme, applyTheme, theme } from "./shared/theme";
import { hoverTooltip, tooltipBox } from "./shared/tooltip";
import { widgetShell } from "./shared/widget_shell";

/** Python traits of AttentionCompare (attnwidgets/widgets/compare.py). */
export interface CompareTraits {
  layer: number;
  head: number;
  kind: string;
  words: boolean;
  show: string; // "side" | "diff"
  summary: string; // "js" | "cosine"
  colormap: string;
  diverging: string;
  theme: string;
  fit: "auto" | boolean | number[]; // shared/fit.ts
  selection: number[]; // selected query rows of A (shared/span.ts), [] none
  combine: string; // "mean" | "sum"
  _error: string;
  _meta: CompareMeta;
  _payload: ComparePayload;
}

interface CompareMeta {
  title: string;
  a_name: string;
  b_name: string;
  labels: {
    a: [string[], string[]];
    b: [string[], string[]];
    a_matched: [boolean[], boolean[]];
    b_matched: [boolean[], boolean[]];
    aligned: [string[], string[]];
  };
  shape: [number, number];
  summaries: string[];
  summary_labels: Record<string, string>;
  method: string;
  identity: boolean;
  can_words: boolean;
  query_map: [number[], number[]]; // aligned query positions: A's, and B's partner of each
}

interface ComparePayload {
  key: string;
  a: Packed;
  b: Packed;
  diff: Packed;
  vmax: number;
  dmax: number;
  summary: Packed;
  span_key?: string;
  span_a?: Packed;
  span_b?: Packed;
  span_diff?: Packed;
}

/** Colour of a token label that has no partner on the other side. */
const UNALIGNED = "#a8a8a8";

/** RGBA pixels of a signed matrix on a symmetric diverging scale [-dmax, dmax]; NaN light grey. */
export function divergingPixels(
  data: Float32Array,
  rows: number,
  cols: number,
  dmax: number,
  name: DivergingName,
): Uint8ClampedArray<ArrayBuffer> {
  const px = new Uint8ClampedArray(new ArrayBuffer(rows * cols * 4));
  for (let i = 0; i < rows * cols; i++) {
    const v = data[i];
    const rgb: [number, number, number] = Number.isNaN(v) ? [235, 235, 235] : divergingRgb(name, v, dmax);
    px.set([rgb[0], rgb[1], rgb[2], 255], i * 4);
  }
  return px;
}

interface Panel {
  x0: number;
  y0: number;
  cell: number;
  nq: number;
  nk: number;
  which: "a" | "b" | "diff";
}

function render({ model, el }: RenderProps<CompareTraits>): () => void {
  const shell = widgetShell(model, el, "aw-compare", CSS);
  const { root, title, bar, errorBox, cleanups, showError } = shell;
  const maps = h("canvas", { className: "aw-canvas", "data-testid": "compare-maps" });
  const grid = h("canvas", { className: "aw-canvas", "data-testid": "compare-grid" });
  const mapLegend = h("canvas");
  const mapLo = h("span", { className: "aw-muted", "data-export-text": "" });
  const mapHi = h("span", { className: "aw-muted", "data-export-text": "" });
  const mapLabel = h("div", { className: "aw-muted", "data-export-text": "" });
  const gridLegend = h("canvas");
  const gridLo = h("span", { className: "aw-muted", "data-export-text": "" });
  const gridHi = h("span", { className: "aw-muted", "data-export-text": "" });
  const caption = h("div", { className: "aw-muted aw-compare-caption", "data-export-text": "" });
  const tooltip = tooltipBox();
  const gridLabel = h("div", { className: "aw-muted", "data-export-text": "" });
  const left = h(
    "div",
    { className: "aw-compare-col" },
    h("div", { className: "aw-scroll" }, maps),
    h("div", { className: "aw-legend" }, mapLo, mapLegend, mapHi),
    mapLabel,
  );
  const right = h(
    "div",
    { className: "aw-compare-col" },
    grid,
    h("div", { className: "aw-legend" }, gridLo, gridLegend, gridHi),
    gridLabel,
  );
  const row = h("div", { className: "aw-compare-row" }, left, right);
  root.append(title, bar, errorBox, row, caption, tooltip);
  const fit = fitWatcher(model, el, root, () => paint());
  cleanups.push(fit.cleanup);
  /** Fitted: the room of the maps/grid row, and what a column's legend and label take below its canvas. */
  let fitRoom: { width: number; height: number } | null = null;
  const below = (col: HTMLElement, canvas: HTMLCanvasElement) =>
    Math.max(0, col.getBoundingClientRect().height - canvas.getBoundingClientRect().height);

  let A: Float32Array = new Float32Array(0);
  let B: Float32Array = new Float32Array(0);
  let D: Float32Array = new Float32Array(0);
  let S: Float32Array = new Float32Array(0);
  let panels: Panel[] = [];
  let gridL: GridLayout | null = null;
  const controls: Array<() => void> = [];
  const meta = () => model.get("_meta");
  const picker = new span.SpanSelector(model);
  let spanRows: { a: Float32Array; b: Float32Array; diff: Float32Array } | null = null;

  /** The rows of panel `which` that the selection (positions of A) names. */
  function selectedRows(which: Panel["which"]): number[] {
    const sel = model.get("selection") ?? [];
    if (which === "a") return sel;
    const [qa, qb] = meta().query_map ?? [[], []];
    const picked = new Set(sel);
    const out: number[] = [];
    qa.forEach((a, i) => {
      if (picked.has(a)) out.push(which === "b" ? qb[i] : i);
    });
    return out.sort((x, y) => x - y);
  }

  /** The position of A that row `q` of panel `which` stands for (null: a B row with no partner in A). */
  function positionInA(which: Panel["which"], q: number): number | null {
    if (which === "a") return q;
    const [qa, qb] = meta().query_map ?? [[], []];
    if (which === "diff") return qa[q] ?? null;
    const i = qb.indexOf(q);
    return i < 0 ? null : qa[i];
  }

  function buildControls(): void {
    resetControls(controls, bar);
    const m = meta();
    const [nLayers, nHeads] = m.shape;
    bar.append(
      h(
        "label",
        {},
        "show",
        traitMenu(
          model,
          "show",
          [
            ["side", "A | B"],
            ["diff", "B − A"],
          ],
          "show",
          controls,
        ),
      ),
    );
    const layers = select(
      Array.from({ length: nLayers }, (_, i): [string, string] => [String(i), String(i)]),
      String(model.get("layer")),
      "layer",
    );
    layers.dataset.testid = "layer-select";
    const heads = select(
      [["-1", "mean"], ...Array.from({ length: nHeads }, (_, i): [string, string] => [String(i), String(i)])],
      String(model.get("head")),
      "head",
    );
    heads.dataset.testid = "head-select";
    const pick = () => selectHead(model, { layer: Number(layers.value), head: Number(heads.value) });
    controls.push(listen(layers, "change", pick), listen(heads, "change", pick));
    bar.append(h("label", {}, "layer", layers), h("label", {}, "head", heads));
    const opts = m.summaries.map((s): [string, string] => [s, s === "js" ? "JS divergence" : "cosine"]);
    bar.append(h("label", {}, "grid", traitMenu(model, "summary", opts, "summary", controls)));
    if (m.can_words) bar.append(wordsToggle(model, controls));
    bar.append(span.spanControls(model, picker, controls), shell.exportControls(controls));
  }

  function syncMenus(): void {
    for (const [id, trait] of [
      ["layer-select", "layer"],
      ["head-select", "head"],
      ["show-select", "show"],
      ["summary-select", "summary"],
    ] as const) {
      const s = bar.querySelector<HTMLSelectElement>(`[data-testid="${id}"]`);
      if (s) s.value = String(model.get(trait));
    }
  }

  function drawTokens(
    ctx: CanvasRenderingContext2D,
    p: Panel,
    queries: string[],
    keys: string[],
    qOk: boolean[] | null,
    kOk: boolean[] | null,
    room: number,
    t: Theme,
  ): void {
    const size = Math.min(t.font, Math.max(8, p.cell - 2));
    ctx.font = `${size}px ${t.fontFamily}`;
    ctx.textBaseline = "middle";
    ctx.textAlign = "right";
    for (let q = 0; q < p.nq; q++) {
      ctx.fillStyle = qOk && !qOk[q] ? UNALIGNED : t.fg;
      ctx.fillText(fitToken(ctx, queries[q] ?? "", room - 6), p.x0 - 4, p.y0 + (q + 0.5) * p.cell);
    }
    ctx.textAlign = "left";
    for (let k = 0; k < p.nk; k++) {
      ctx.save();
      ctx.translate(p.x0 + (k + 0.5) * p.cell, p.y0 - 4);
      ctx.rotate(-Math.PI / 2);
      ctx.fillStyle = kOk && !kOk[k] ? UNALIGNED : t.fg;
      ctx.fillText(fitToken(ctx, keys[k] ?? "", room - 6), 0, 0);
      ctx.restore();
    }
  }

  function paintMaps(t: Theme): void {
    const m = meta();
    const p = model.get("_payload");
    const L = m.labels;
    const show = model.get("show");
    const map = (model.get("colormap") || t.colormap) as ColorMapName;
    const div = (model.get("diverging") || (t.name === "lecture" ? "puor" : "rdbu")) as DivergingName;
    const probe = textMeasurer();
    const heading = t.font * 1.6;
    const same = m.a_name === m.b_name; // the title names the model once; the panels say A and B
    const avail = Math.max(240, Math.min(roomFor(el), 1600) - (gridL ? Math.max(gridL.width, 200) : 0) - 44);
    const maxSide = t.name === "lecture" ? 270 : 340;
    const sides: Array<{
      q: string[];
      k: string[];
      qOk: boolean[] | null;
      kOk: boolean[] | null;
      which: Panel["which"];
      name: string;
    }> =
      show === "diff"
        ? [{ q: L.aligned[0], k: L.aligned[1], qOk: null, kOk: null, which: "diff", name: "B − A" }]
        : [
            {
              q: L.a[0],
              k: L.a[1],
              qOk: L.a_matched[0],
              kOk: L.a_matched[1],
              which: "a",
              name: same ? "A" : `A · ${m.a_name}`,
            },
            {
              q: L.b[0],
              k: L.b[1],
              qOk: L.b_matched[0],
              kOk: L.b_matched[1],
              which: "b",
              name: same ? "B" : `B · ${m.b_name}`,
            },
          ];
    const rooms = sides.map((s) => labelRoom(probe, [...s.q, ...s.k], t, t.font * 7));
    const top = heading + Math.max(...rooms);
    const cols = sides.reduce((n, s) => n + s.k.length, 0);
    const rowsMax = Math.max(...sides.map((s) => s.q.length), 1);
    const labelsW = rooms.reduce((a, b) => a + b, 0) + 16 * sides.length;
    let cell = Math.max(
      3,
      Math.min(t.maxCell, Math.floor((avail - labelsW) / Math.max(1, cols)), Math.floor(maxSide / rowsMax)),
    );
    if (fitRoom) {
      const byH = Math.floor((fitRoom.height - below(left, maps) - top - 8) / rowsMax);
      const byW = Math.floor((fitRoom.width - (gridL ? gridL.width : 0) - 44 - labelsW) / Math.max(1, cols));
      cell = Math.max(3, Math.min(cell, byH, byW));
    }
    panels = [];
    let x = 0;
    sides.forEach((s, i) => {
      x += rooms[i];
      panels.push({ x0: x, y0: top, cell, nq: s.q.length, nk: s.k.length, which: s.which });
      x += s.k.length * cell + 16;
    });
    const width = Math.ceil(x);
    left.style.width = `${Math.max(width, 200)}px`;
    const spanWant = `${model.get("layer")}/${model.get("head")}/${(model.get("selection") ?? []).join(",")}/${model.get("combine")}`;
    const rows = (model.get("selection") ?? []).length && p.span_key === spanWant ? spanRows : null;
    const band = span.spanBand(cell, t);
    const bandY = Math.ceil(top + rowsMax * cell + band.gap);
    const height = Math.ceil(top + rowsMax * cell + 4 + (rows ? band.gap + band.height + 4 : 0));
    const ctx = prepareCanvas(maps, width, height);
    ctx.fillStyle = t.bg;
    ctx.fillRect(0, 0, width, height);
    ctx.imageSmoothingEnabled = false;
    panels.forEach((pn, i) => {
      const s = sides[i];
      const w = pn.nk * cell;
      const hgt = pn.nq * cell;
      if (pn.which === "diff") {
        const off = document.createElement("canvas");
        off.width = Math.max(1, pn.nk);
        off.height = Math.max(1, pn.nq);
        if (pn.nq && pn.nk)
          off
            .getContext("2d")!
            .putImageData(new ImageData(divergingPixels(D, pn.nq, pn.nk, p.dmax, div), pn.nk, pn.nq), 0, 0);
        ctx.drawImage(off, pn.x0, pn.y0, w, hgt);
      } else {
        ctx.drawImage(
          matrixCanvas(pn.which === "a" ? A : B, pn.nq, pn.nk, p.vmax, map),
          pn.x0,
          pn.y0,
          w,
          hgt,
        );
      }
      ctx.strokeStyle = t.grid;
      ctx.lineWidth = 1;
      ctx.strokeRect(pn.x0 - 0.5, pn.y0 - 0.5, w + 1, hgt + 1);
      drawTokens(ctx, pn, s.q, s.k, s.qOk, s.kOk, rooms[i], t);
      span.outlineRows(ctx, selectedRows(pn.which), (q) => pn.y0 + q * cell, cell, pn.x0, w, t);
      if (rows) {
        const b = { x: pn.x0, y: bandY, w, h: band.height, k0: 0, kn: pn.nk };
        const label = model.get("combine") || "mean";
        if (pn.which === "diff") drawDiffRow(ctx, rows.diff, b, div, label, t);
        else {
          const row = pn.which === "a" ? rows.a : rows.b;
          span.drawSpanRow(ctx, row, b, span.spanTop(row, model.get("combine"), p.vmax), map, label, t);
        }
      }
      ctx.font = `600 ${t.font}px ${t.fontFamily}`;
      ctx.fillStyle = t.fg;
      ctx.textAlign = "left";
      ctx.textBaseline = "middle";
      ctx.fillText(
        fitToken(ctx, s.name, Math.max(w + rooms[i] - 8, 40), 40),
        Math.max(0, pn.x0 - rooms[i]),
        heading / 2,
      );
    });
    Object.assign(maps.dataset, {
      show,
      selection: (model.get("selection") ?? []).join(","),
      span: rows ? (p.span_key ?? "") : "",
      spanY: rows ? String(bandY) : "",
      panels: JSON.stringify(panels),
      vmax: String(p.vmax),
      dmax: String(p.dmax),
      shown: p.key,
    });
    if (show === "diff") {
      diffLegend(mapLegend, div);
      mapLo.textContent = `−${fmt(p.dmax, 3)}`;
      mapHi.textContent = `+${fmt(p.dmax, 3)}`;
      mapLabel.textContent =
        p.dmax > 0 ? "B − A (white: 0, no change)" : "B − A is zero everywhere: A and B agree here";
    } else {
      drawLegend(mapLegend, map);
      mapLo.textContent = "0";
      mapHi.textContent = fmt(p.vmax, 3);
      mapLabel.textContent = "attention weight";
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
    let dmax = 0;
    for (const v of row) if (Number.isFinite(v) && Math.abs(v) > dmax) dmax = Math.abs(v);
    const off = document.createElement("canvas");
    off.width = Math.max(1, row.length);
    off.height = 1;
    if (row.length)
      off
        .getContext("2d")!
        .putImageData(
          new ImageData(divergingPixels(row, 1, row.length, dmax || 1, div), row.length, 1),
          0,
          0,
        );
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(off, b.x, b.y, b.w, b.h);
    span.frameSpanRow(ctx, b, label, t);
  }

  function diffLegend(canvas: HTMLCanvasElement, div: DivergingName): void {
    const w = 160;
    const ctx = prepareCanvas(canvas, w, 12);
    for (let x = 0; x < w; x++) {
      const [r, g, b] = divergingRgb(div, (x / (w - 1)) * 2 - 1, 1);
      ctx.fillStyle = `rgb(${r},${g},${b})`;
      ctx.fillRect(x, 0, 1, 12);
    }
    ctx.fillStyle = "#000";
    ctx.fillRect(w / 2 - 0.5, 0, 1, 12);
  }

  function summarySlice(): { data: Float32Array; name: string } {
    const m = meta();
    const name = model.get("summary");
    const i = Math.max(0, m.summaries.indexOf(name));
    const n = m.shape[0] * m.shape[1];
    return { data: S.subarray(i * n, (i + 1) * n), name };
  }

  function paintGrid(t: Theme): void {
    const m = meta();
    const [nLayers, nHeads] = m.shape;
    const { data, name } = summarySlice();
    const map = (model.get("colormap") || t.colormap) as ColorMapName;
    const [lo, hi] = name === "js" ? [0, Math.max(statRange(data)[1], 1e-9)] : statRange(data);
    // JS: larger = more different, on the map as it is; cosine: smaller = more different, so the map runs reversed
    // and the most changed heads are dark in both.
    const shade = (v: number) => (name === "js" ? v - lo : hi - v);
    const probe = textMeasurer();
    probe.font = `${t.font}px ${t.fontFamily}`;
    const leftPad = Math.ceil(probe.measureText(String(nLayers - 1)).width) + t.font * 2 + 8;
    const top = t.font * 2 + 10;
    const room = Math.min(roomFor(el), 1600);
    const share = model.get("show") === "side" ? 0.27 : 0.36; // two maps need more room than one
    const maxW = Math.min(room * share, t.maxGrid * 0.6);
    // (its legend's label wraps to the column's width: a fixed allowance for it, not its measured height, which
    // would shrink the grid, narrow the column and wrap the label further on every repaint)
    const gridRoom = fitRoom && { width: fitRoom.width * share, height: fitRoom.height - t.font * 5 };
    const fitted = fitGridWidth(Math.round(maxW), gridRoom, { nLayers, nHeads, left: leftPad, top });
    gridL = gridLayout(nLayers, nHeads, fitted, leftPad, top, t.maxCell, 6);
    const g = gridL;
    const ctx = prepareCanvas(grid, g.width, g.height);
    ctx.fillStyle = t.bg;
    ctx.fillRect(0, 0, g.width, g.height);
    const showValues = g.cell >= probe.measureText("0.00").width + 6;
    ctx.font = `${Math.min(t.font, g.cell * 0.42)}px ${t.fontFamily}`;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    for (let layer = 0; layer < nLayers; layer++) {
      for (let head = 0; head < nHeads; head++) {
        const v = data[layer * nHeads + head];
        const rgb: [number, number, number] = Number.isFinite(v)
          ? rgbAt(map, shade(v), hi - lo)
          : [235, 235, 235];
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
    const sel = { layer: model.get("layer"), head: model.get("head") };
    ctx.font = `${t.font}px ${t.fontFamily}`;
    ctx.textAlign = "right";
    // Every k-th layer's number when cells are shorter than the text (a fitted grid): they overlapped.
    const layerEvery = Math.max(1, Math.ceil((t.font * 1.1) / g.cell));
    for (let layer = 0; layer < nLayers; layer++) {
      if (layer % layerEvery && layer !== sel.layer) continue;
      ctx.fillStyle = layer === sel.layer ? t.accent : t.fg;
      ctx.fillText(String(layer), g.x0 - 5, g.y0 + (layer + 0.5) * g.cell);
    }
    ctx.textAlign = "center";
    const every = Math.max(1, Math.ceil((t.font * 1.6) / g.cell));
    for (let head = 0; head < nHeads; head += every) {
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
    if (sel.layer >= 0 && sel.layer < nLayers) {
      const x = g.x0 + (sel.head < 0 ? 0 : sel.head * g.cell);
      const w = sel.head < 0 ? nHeads * g.cell : g.cell;
      ctx.strokeStyle = t.accent;
      ctx.lineWidth = 3;
      ctx.strokeRect(x + 1.5, g.y0 + sel.layer * g.cell + 1.5, w - 4, g.cell - 4);
    }
    Object.assign(grid.dataset, {
      x0: String(g.x0),
      y0: String(g.y0),
      cell: String(g.cell),
      summary: name,
      selected: `${sel.layer}/${sel.head}`,
    });
    // The legend runs from the most similar (light) to the most changed (dark).
    const lctx = prepareCanvas(gridLegend, 120, 12);
    for (let x = 0; x < 120; x++) {
      const [r, gg, b] = rgbAt(map, x / 119, 1);
      lctx.fillStyle = `rgb(${r},${gg},${b})`;
      lctx.fillRect(x, 0, 1, 12);
    }
    const label = m.summary_labels[name] ?? name;
    gridLo.textContent = name === "js" ? `${fmt(lo, 2)}` : `${fmt(hi, 2)}`;
    gridHi.textContent = name === "js" ? fmt(hi, 2) : fmt(lo, 2);
    gridLabel.textContent = `${label} per head (right end: most changed)`;
    right.style.width = `${Math.max(g.width, 200)}px`;
  }

  function paint(): void {
    const t = theme(model.get("theme"));
    applyTheme(root, t);
    const m = meta();
    fitRoom = fit.room(row);
    paintGrid(t);
    paintMaps(t);
    syncMenus();
    const sel = `${model.get("layer")}/${model.get("head") < 0 ? "mean" : model.get("head")}`;
    const names =
      m.a_name === m.b_name
        ? `${userText(m.a_name)}: A vs B`
        : `A: ${userText(m.a_name)} · B: ${userText(m.b_name)}`;
    title.textContent = `${names} · head ${sel}`;
    const qa = m.labels.a_matched[0].filter((x) => !x).length;
    const qb = m.labels.b_matched[0].filter((x) => !x).length;
    caption.textContent = m.identity
      ? "A and B have the same tokens: every position compared."
      : `Tokens matched by text (difflib); grey tokens have no partner (${qa} in A, ${qb} in B) and are left out of B − A.`;
    showError(model.get("_error"));
  }

  function load(): void {
    try {
      const p = model.get("_payload");
      A = decode(p.a).data;
      B = decode(p.b).data;
      D = decode(p.diff).data;
      S = decode(p.summary).data;
      spanRows =
        p.span_a && p.span_b && p.span_diff
          ? { a: decode(p.span_a).data, b: decode(p.span_b).data, diff: decode(p.span_diff).data }
          : null;
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
    paint();
  }

  function mapHit(e: MouseEvent): { panel: Panel; q: number; k: number } | null {
    const rect = maps.getBoundingClientRect();
    const x = e.clientX - rect.left;
    const y = e.clientY - rect.top;
    for (const p of panels) {
      const k = Math.floor((x - p.x0) / p.cell);
      const q = Math.floor((y - p.y0) / p.cell);
      if (x >= p.x0 && y >= p.y0 && k < p.nk && q < p.nq) return { panel: p, q, k };
    }
    return null;
  }

  function gridHit(e: MouseEvent): { layer: number; head: number } | null {
    if (!gridL) return null;
    const rect = grid.getBoundingClientRect();
    return gridCellAt(gridL, e.clientX - rect.left, e.clientY - rect.top);
  }

  cleanups.push(
    ...hoverTooltip(maps, root, tooltip, {
      hitAt: mapHit,
      same: (a, b) => a.panel === b.panel && a.q === b.q && a.k === b.k,
      tip: (hit) => {
        const L = meta().labels;
        const src = hit.panel.which === "diff" ? L.aligned : hit.panel.which === "a" ? L.a : L.b;
        const arr = hit.panel.which === "diff" ? D : hit.panel.which === "a" ? A : B;
        const v = arr[hit.q * hit.panel.nk + hit.k];
        const what = hit.panel.which === "diff" ? "B − A" : hit.panel.which.toUpperCase();
        return {
          text: `${src[0][hit.q]} → ${src[1][hit.k]}\n${what}: ${fmt(v)}`,
          data: { q: String(hit.q), k: String(hit.k), value: String(v) },
        };
      },
      changed: () => {},
    }),
    ...hoverTooltip(grid, root, tooltip, {
      hitAt: gridHit,
      same: sameHead,
      tip: (hit) => {
        const { data, name } = summarySlice();
        const v = data[hit.layer * meta().shape[1] + hit.head];
        return {
          text: `head ${headLabel(hit.layer, hit.head)}\n${meta().summary_labels[name] ?? name}: ${fmt(v)}`,
          data: { layer: String(hit.layer), head: String(hit.head), value: String(v) },
        };
      },
      changed: () => {},
    }),
    clickToSelect(grid, model, gridHit, paint),
    arrowKeysSelect(root, model, () => meta().shape),
    listen(maps, "click", (e: MouseEvent) => {
      const hit = mapHit(e);
      if (!hit) return;
      const q = positionInA(hit.panel.which, hit.q);
      if (q !== null) picker.click(q, e);
    }),
    listen(root, "keydown", (e: KeyboardEvent) => {
      if (typedInControl(e)) return;
      if (e.key === "Escape" && (model.get("selection") ?? []).length) picker.clear();
    }),
  );
  for (const trait of [
    "layer",
    "head",
    "show",
    "summary",
    "theme",
    "colormap",
    "diverging",
    "selection",
    "combine",
  ])
    cleanups.push(onModel(model, `change:${trait}`, paint));
  cleanups.push(onModel(model, "change:_payload", load));
  cleanups.push(
    onModel(model, "change:_meta", () => {
      buildControls();
      load();
    }),
  );
  cleanups.push(() => {
    for (const c of controls) c();
  });
  buildControls();
  load();
  return shell.close;
}

const CSS = `
.aw-compare-row { display: flex; gap: 20px; align-items: flex-start; flex-wrap: wrap; }
.aw-compare-col { display: flex; flex-direction: column; max-width: 100%; }
.aw-compare-col .aw-legend { flex-wrap: wrap; }
.aw-compare-caption { margin-top: 4px; max-width: 100%; }
`;

export default { render };
