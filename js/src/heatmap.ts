// AttentionHeatmap: one head (or the mean of a layer's heads) as a query x key heatmap on a canvas.
// Mirrors attnwidgets/widgets/heatmap.py. Only the head on screen crosses from Python; other heads are fetched on
// demand by custom message and kept in the page. Wheel / buttons zoom and dragging pans; inputs over 1024 tokens
// arrive as a block-max overview and, once zoomed in, the visible region is fetched at full detail in 256-cell tiles.

import { type Packed, decode, maxOf, replyPacked } from "./shared/buffers";
import type { ColorMapName } from "./shared/colors";
import { controlGroup, h, listen, resetControls, select } from "./shared/dom";
import {
  drawLabels,
  drawLegend,
  fitToken,
  labelRoom,
  matrixCanvas,
  prepareCanvas,
  textMeasurer,
} from "./shared/draw";
import { fitWatcher } from "./shared/fit";
import { type HeatmapLayout, heatmapLayout } from "./shared/layout";
import { kvHeadNote, overviewNote } from "./shared/long_context";
import { type MeasureMeta, measureToggle } from "./shared/measure";
import { type RenderProps, type WidgetModel, onModel, saveTraits } from "./shared/model";
import { Requester } from "./shared/requests";
import { typedInControl } from "./shared/selection";
import * as span from "./shared/span";
import { userText } from "./shared/text";
import { applyTheme, theme } from "./shared/theme";
import { hideTooltip, showTooltip, tooltipBox } from "./shared/tooltip";
import { scrolledCanvas, widgetShell } from "./shared/widget_shell";
import {
  NO_ZOOM,
  type Zoom,
  cellAtZoom,
  clampZoom,
  panBy,
  tilesFor,
  visibleCells,
  zoomAt,
  zoomTo,
} from "./shared/zoom";

/** Python traits of AttentionHeatmap (attnwidgets/widgets/heatmap.py). */
export interface HeatmapTraits {
  layer: number;
  head: number; // -1: mean over the layer's heads
  kind: string; // "self" | "encoder" | "decoder" | "cross"
  words: boolean;
  theme: string;
  colormap: string; // "" = the theme's
  zoom: number[]; // [] or [q0, q1, k0, k1]: a region Python asks the page to zoom to
  reduce: string; // "max" | "mean": how a long input's overview merges a block
  discount_sinks: boolean | number[]; // keys left out of the colour scale's top
  selection: number[]; // selected query rows (shared/span.ts), [] none
  combine: string; // "mean" | "sum" of the selected rows
  measure: string; // "weights" | "norms" | "value_zeroing" (shared/measure.ts)
  fit: "auto" | boolean | number[]; // shared/fit.ts
  _meta: MeasureMeta & {
    title: string;
    kinds: string[];
    shapes: Record<string, [number, number]>; // kind -> [layers, heads]
    tokens: Record<string, [string[], string[]]>; // kind -> [query tokens, key tokens], token level
    can_words: boolean;
    reduce?: string;
    sinks?: number[]; // keys discounted from the colour scale (clipped to its top colour)
    vmax?: number | null; // the colour scale's fixed top (the same for every map); null: each map's own maximum
    kv_group_size?: Record<string, number>; // query heads per key/value head (1: no GQA)
  };
  // labels: word-level labels per kind, when the first view is word level (else they come by "labels" request)
  // vmax: top of the colour scale (the largest weight, or over non-sink keys); rows_used: query rows read per block
  _payload:
    | {
        key: string;
        matrix: Packed;
        factor?: number;
        rows_used?: number;
        vmax?: number;
        labels?: { tokens: Labels };
      }
    | Record<string, never>;
  _error: string;
}

/** kind -> [query labels, key labels] */
export type Labels = Record<string, [string[], string[]]>;

/** The fixed top of the colour scale, or null when each map is scaled to its own maximum. */
export function fixedTop(vmax: number | null | undefined): number | null {
  return typeof vmax === "number" && Number.isFinite(vmax) && vmax > 0 ? vmax : null;
}

/** The legend's words for the scale: fixed (comparable across maps) or per map (its own maximum). */
export function scaleNote(vmax: number | null | undefined): string {
  const top = fixedTop(vmax);
  return top === null ? "per-map scale (this map’s max)" : "fixed scale (same for every map)";
}

export function viewKey(kind: string, layer: number, head: number, words: boolean): string {
  return `${kind}/${layer}/${head}/${words ? "w" : "t"}`;
}

function render({ model, el }: RenderProps<HeatmapTraits>): () => void {
  const shell = widgetShell(model, el, "aw-heatmap");
  const { root, title, bar, errorBox, cleanups, showError } = shell;
  const requester = new Requester(model);
  const { scroll, canvas } = scrolledCanvas("heatmap-canvas");
  const tooltip = tooltipBox();
  const legendCanvas = h("canvas");
  const legendMax = h("span", { className: "aw-muted", "data-export-text": true });
  const legend = h(
    "div",
    { className: "aw-legend" },
    h("span", { className: "aw-muted", text: "0", "data-export-text": true }),
    legendCanvas,
    legendMax,
  );
  root.append(title, bar, errorBox, scroll, legend, tooltip);
  const fit = fitWatcher(model, el, root, () => paint());
  cleanups.push(fit.cleanup);

  let layout: HeatmapLayout | null = null;
  // data: the matrix as sent (an overview of factor x factor blocks when factor > 1); image: it as pixels.
  // labels travel with the matrix they name, so a word-level matrix is never drawn with token labels.
  let current: {
    key: string;
    labels: [string[], string[]];
    data: Float32Array;
    vmax: number;
    factor: number;
    rowsUsed: number;
    image: HTMLCanvasElement | null;
    map: string; // the colour map `image` was drawn with: a new theme or colormap draws it again
  } | null = null;
  let hover: { q: number; k: number } | null = null;
  let zoom: Zoom = NO_ZOOM;
  let dims = "";
  // Full-detail tiles of the current view, by "q0/k0"; each is a float32 block drawn over the overview.
  let tiles = new Map<
    string,
    {
      q0: number;
      k0: number;
      rows: number;
      cols: number;
      data: Float32Array;
      image: HTMLCanvasElement;
      map: string;
    }
  >();
  let drag: { x: number; y: number; at: Zoom; moved: boolean } | null = null;
  let dragged = false; // the last press panned: its click selects nothing
  const spans = new span.SpanSelector(model);
  let spanRow: { key: string; data: Float32Array } | null = null; // the selection's combined row (from Python)

  const meta = () => model.get("_meta");
  const tokens = (): [string[], string[]] => current?.labels ?? [[], []];
  // Word-level labels of every kind: from _payload or a "labels" request (a saved page answers it offline).
  let wordLabels: Labels | null = null;
  async function labelsFor(kind: string, words: boolean): Promise<[string[], string[]]> {
    if (words && !wordLabels) {
      const reply = await requester.get("labels/w", { what: "labels", words: true });
      wordLabels = reply.content.tokens as Labels;
    }
    return (words ? wordLabels?.[kind] : meta().tokens[kind]) ?? [[], []];
  }

  const controls = controlGroup(cleanups);
  function buildControls(): void {
    resetControls(controls, bar);
    const m = meta();
    const kind = model.get("kind");
    const [nLayers, nHeads] = m.shapes[kind] ?? [0, 0];
    if (m.kinds.length > 1) {
      const kindSel = select(
        m.kinds.map((k) => [k, k]),
        kind,
        "attention kind",
      );
      controls.push(listen(kindSel, "change", () => update({ kind: kindSel.value, layer: 0, head: 0 })));
      bar.append(h("label", {}, "attention", kindSel));
    }
    const layers: Array<[string, string]> = Array.from({ length: nLayers }, (_, i) => [String(i), String(i)]);
    const layerSel = select(layers, String(model.get("layer")), "layer");
    layerSel.dataset.testid = "layer-select";
    controls.push(listen(layerSel, "change", () => update({ layer: Number(layerSel.value) })));
    const heads: Array<[string, string]> = [["-1", "mean of heads"]];
    for (let i = 0; i < nHeads; i++) heads.push([String(i), String(i)]);
    const headSel = select(heads, String(model.get("head")), "head");
    headSel.dataset.testid = "head-select";
    controls.push(listen(headSel, "change", () => update({ head: Number(headSel.value) })));
    bar.append(h("label", {}, "layer", layerSel), h("label", {}, "head", headSel));
    const zoomButton = (text: string, testid: string, label: string, fn: () => void) => {
      const b = h("button", {
        type: "button",
        text,
        "data-testid": testid,
        "aria-label": label,
        title: label,
      });
      controls.push(listen(b, "click", fn));
      return b;
    };
    bar.append(
      h(
        "span",
        { className: "aw-zoom" },
        zoomButton("+", "zoom-in", "zoom in (or wheel, +)", () => zoomCentre(1.6)),
        zoomButton("−", "zoom-out", "zoom out (or wheel, -)", () => zoomCentre(1 / 1.6)),
        zoomButton("1:1", "zoom-reset", "whole matrix (0)", () => setZoom(NO_ZOOM)),
      ),
    );
    const reduceSel = select(
      [
        ["max", "block max"],
        ["mean", "block mean"],
      ],
      model.get("reduce") || "max",
      "overview reduction",
    );
    reduceSel.dataset.testid = "reduce-select";
    reduceSel.title = "how an overview of a long input merges a block of cells";
    controls.push(listen(reduceSel, "change", () => saveTraits(model, { reduce: reduceSel.value })));
    bar.append(h("label", {}, "overview", reduceSel));
    const sinkBox = h("input", { type: "checkbox", "aria-label": "discount attention sinks" });
    sinkBox.dataset.testid = "discount-sinks";
    const discount = model.get("discount_sinks");
    sinkBox.checked = Array.isArray(discount) ? discount.length > 0 : Boolean(discount);
    controls.push(listen(sinkBox, "change", () => saveTraits(model, { discount_sinks: sinkBox.checked })));
    bar.append(
      h(
        "label",
        { title: "top the colour scale at the largest weight on other keys than the sink (key 0)" },
        sinkBox,
        "discount sink",
      ),
    );
    if (m.can_words) {
      const box = h("input", { type: "checkbox", "aria-label": "word level" });
      box.checked = model.get("words");
      controls.push(listen(box, "change", () => update({ words: box.checked })));
      bar.append(h("label", {}, box, "words"));
    }
    const measure = measureToggle(model, m, controls);
    if (measure) bar.append(measure);
    bar.append(span.spanControls(model, spans, controls), shell.exportControls(controls));
  }

  function update(changes: Partial<Pick<HeatmapTraits, "layer" | "head" | "kind" | "words">>): void {
    saveTraits(model, changes);
    refresh();
  }

  function paint(): void {
    if (!current) return;
    const t = theme(model.get("theme"));
    applyTheme(root, t);
    const map = (model.get("colormap") || t.colormap) as ColorMapName;
    const [queries, keys] = tokens();
    const nq = queries.length;
    const nk = keys.length;
    const probe = textMeasurer();
    const selection = model.get("selection") ?? [];
    const row = selection.length && spanRow?.key === spanKey() ? spanRow.data : null;
    const room = fit.room(scroll); // fitted: the canvas (and the selection's row under it) stays inside the box
    const bandRoom = row ? span.spanBand(t.maxCell, t).gap + span.spanBand(t.maxCell, t).height + 4 : 0;
    // Label room is kept for long inputs too: labels appear once zooming makes cells tall enough to read.
    layout = heatmapLayout({
      nq,
      nk,
      maxGrid: t.maxGrid,
      maxCell: t.maxCell,
      labelWidth: labelRoom(probe, queries, t),
      labelHeight: labelRoom(probe, keys, t),
      minLabelCell: Math.max(nq, nk) > 48 ? 0 : Math.min(t.font, 12) - 2,
      maxWidth: room?.width,
      maxHeight: room ? room.height - bandRoom : undefined,
    });
    if (dims !== `${nq}x${nk}`) {
      dims = `${nq}x${nk}`;
      const asked = model.get("zoom");
      zoom = asked?.length === 4 ? zoomTo(layout, asked[0], asked[1], asked[2], asked[3]) : NO_ZOOM;
    }
    zoom = clampZoom(layout, zoom);
    const l = layout;
    const cz = l.cell * zoom.z;
    const gw = l.cell * nk;
    const gh = l.cell * nq;
    const band = span.spanBand(cz, t);
    const height = l.height + (row ? band.gap + band.height + 4 : 0);
    const ctx = prepareCanvas(canvas, l.width, height);
    ctx.fillStyle = t.bg;
    ctx.fillRect(0, 0, l.width, height);
    const f = current.factor;
    const rows = Math.ceil(nq / f);
    const cols = Math.ceil(nk / f);
    if (!current.image || current.map !== map) {
      current.image = matrixCanvas(current.data, rows, cols, current.vmax, map);
      current.map = map;
    }
    ctx.save();
    ctx.beginPath();
    ctx.rect(l.x0, l.y0, gw, gh);
    ctx.clip();
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(
      current.image,
      zoom.k0 / f,
      zoom.q0 / f,
      nk / zoom.z / f,
      nq / zoom.z / f,
      l.x0,
      l.y0,
      gw,
      gh,
    );
    let shown = 0;
    const wanted = f > 1 ? tilesFor(l, zoom) : [];
    for (const tl of wanted) {
      const tile = tiles.get(`${tl.q0}/${tl.k0}`);
      if (!tile) continue;
      shown++;
      if (tile.map !== map) {
        tile.image = matrixCanvas(tile.data, tile.rows, tile.cols, current.vmax, map);
        tile.map = map;
      }
      const x = l.x0 + (tile.k0 - zoom.k0) * cz;
      const y = l.y0 + (tile.q0 - zoom.q0) * cz;
      ctx.drawImage(tile.image, x, y, tile.cols * cz, tile.rows * cz);
    }
    if (hover) {
      ctx.strokeStyle = t.accent;
      ctx.lineWidth = 2;
      ctx.strokeRect(l.x0 + (hover.k - zoom.k0) * cz, l.y0 + (hover.q - zoom.q0) * cz, cz, cz);
    }
    span.outlineRows(ctx, selection, (q) => l.y0 + (q - zoom.q0) * cz, cz, l.x0, gw, t);
    ctx.restore();
    if (row) {
      const top = span.spanTop(row, model.get("combine"), current.vmax);
      const b = { x: l.x0, y: l.y0 + gh + band.gap, w: gw, h: band.height, k0: zoom.k0, kn: nk / zoom.z };
      span.drawSpanRow(ctx, row, b, top, map, model.get("combine") || "mean", t);
      canvas.dataset.spanY = String(b.y);
      canvas.dataset.spanTop = String(top);
    }
    if (zoom.z === 1 && cz >= Math.min(t.font, 12) - 2) drawLabels(ctx, l, queries, keys, t, hover);
    else drawWindowLabels(ctx, l, queries, keys, cz); // nothing while cells are too small to read
    ctx.strokeStyle = t.grid;
    ctx.lineWidth = 1;
    if (zoom.z > 1) ctx.strokeRect(l.x0 - 0.5, l.y0 - 0.5, gw + 1, gh + 1);
    const vis = visibleCells(l, zoom);
    // Geometry for tests and assistive tools: cell (q, k) is centred at x0 + (k + .5) * cell, y0 + (q + .5) * cell.
    Object.assign(canvas.dataset, {
      x0: String(l.x0 - zoom.k0 * cz),
      y0: String(l.y0 - zoom.q0 * cz),
      cell: String(cz),
      nq: String(nq),
      nk: String(nk),
      view: current.key,
      vmax: String(current.vmax),
      zoom: String(zoom.z),
      visible: `${vis.q0}:${vis.q1},${vis.k0}:${vis.k1}`,
      factor: String(f),
      detail: f === 1 ? "full" : wanted.length && shown === wanted.length ? "tiles" : "overview",
      gridX0: String(l.x0),
      gridY0: String(l.y0),
      gridW: String(gw),
      gridH: String(gh),
      selection: selection.join(","),
      span: row ? spanRow?.key : "",
    });
    drawLegend(legendCanvas, map);
    const sinks = meta().sinks ?? [];
    legendMax.textContent = `${current.vmax.toFixed(3)} · ${scaleNote(meta().vmax)}${
      sinks.length
        ? ` · sink key${sinks.length > 1 ? "s" : ""} ${sinks.slice(0, 5).join(", ")}${
            sinks.length > 5 ? ", …" : ""
          } discounted (clipped to the top colour)`
        : ""
    }`;
    legendMax.dataset.sinks = sinks.join(",");
    legendMax.dataset.scale = fixedTop(meta().vmax) === null ? "per-map" : "fixed";
    const kind = model.get("kind");
    const head = model.get("head");
    const zoomText = zoom.z > 1 ? ` · zoom ×${zoom.z.toFixed(1)}` : "";
    const overview = zoom.z === 1 ? overviewNote(f, meta().reduce ?? "max", current.rowsUsed) : "";
    const kv = kvHeadNote(head, meta().kv_group_size?.[kind] ?? 1);
    title.textContent = `${userText(meta().title)} · ${kind} attention · layer ${model.get("layer")} · ${
      head < 0 ? "mean of heads" : `head ${head}`
    }${kv}${model.get("words") ? " · words" : ""}${zoomText}${overview}${
      selection.length
        ? ` · ${userText(span.spanCaption(queries, selection, model.get("combine") || "mean"))}`
        : ""
    }`;
    if (wanted.length > shown) fetchTiles(wanted);
  }

  /** Labels of the visible rows and columns of a zoomed view, when its cells are tall enough to read. */
  function drawWindowLabels(
    ctx: CanvasRenderingContext2D,
    l: HeatmapLayout,
    queries: string[],
    keys: string[],
    cz: number,
  ): void {
    const t = theme(model.get("theme"));
    if (cz < Math.min(t.font, 12) - 2) return;
    const vis = visibleCells(l, zoom);
    ctx.font = `${Math.min(t.font, Math.max(8, cz - 2))}px ${t.fontFamily}`;
    ctx.textBaseline = "middle";
    ctx.textAlign = "right";
    for (let q = vis.q0; q < vis.q1; q++) {
      const y = l.y0 + (q - zoom.q0 + 0.5) * cz;
      if (y < l.y0 || y > l.y0 + l.cell * l.nq) continue;
      ctx.fillStyle = hover && hover.q === q ? t.accent : t.fg;
      ctx.fillText(fitToken(ctx, queries[q] ?? "", l.x0 - 6), l.x0 - 4, y);
    }
    ctx.textAlign = "left";
    for (let k = vis.k0; k < vis.k1; k++) {
      const x = l.x0 + (k - zoom.k0 + 0.5) * cz;
      if (x < l.x0 || x > l.x0 + l.cell * l.nk) continue;
      ctx.save();
      ctx.translate(x, l.y0 - 4);
      ctx.rotate(-Math.PI / 2);
      ctx.fillStyle = hover && hover.k === k ? t.accent : t.fg;
      ctx.fillText(fitToken(ctx, keys[k] ?? "", l.y0 - 6), 0, 0);
      ctx.restore();
    }
  }

  function setZoom(v: Zoom): void {
    zoom = layout ? clampZoom(layout, v) : NO_ZOOM;
    paint();
  }

  function zoomCentre(factor: number): void {
    if (!layout) return;
    const l = layout;
    setZoom(zoomAt(l, zoom, factor, l.x0 + (l.cell * l.nk) / 2, l.y0 + (l.cell * l.nq) / 2));
  }

  /** Fetch the visible full-detail tiles of a long input (cached per view by the Requester). */
  function fetchTiles(wanted: ReturnType<typeof tilesFor>): void {
    if (!current) return;
    const key = current.key;
    for (const tl of wanted) {
      if (tiles.has(`${tl.q0}/${tl.k0}`)) continue;
      requester
        .get(`${key}/tile/${tl.q0}/${tl.k0}`, {
          what: "region",
          kind: model.get("kind"),
          layer: model.get("layer"),
          head: model.get("head"),
          words: model.get("words"),
          q0: tl.q0,
          q1: tl.q1,
          k0: tl.k0,
          k1: tl.k1,
        })
        .then((reply) => {
          if (!current || current.key !== key || tiles.has(`${tl.q0}/${tl.k0}`)) return;
          const m = decode(replyPacked(reply.content, reply.buffers[0]));
          const [rows, cols] = m.shape;
          const map = (model.get("colormap") || theme(model.get("theme")).colormap) as ColorMapName;
          const image = matrixCanvas(m.data, rows, cols, current.vmax, map);
          tiles.set(`${tl.q0}/${tl.k0}`, { q0: tl.q0, k0: tl.k0, rows, cols, data: m.data, image, map });
          paint();
        })
        .catch((e: Error) => showError(String(e.message ?? e)));
    }
  }

  /** The page's name for the combined row of the selection on screen. */
  const spanKey = () =>
    `span/${viewKey(model.get("kind"), model.get("layer"), model.get("head"), model.get("words"))}/${span.selectionKey(
      model.get("selection") ?? [],
    )}/${model.get("combine")}`;

  /** Fetch the selection's combined row (Python computes it: viewdata/selection.py span_row), then paint. */
  async function fetchSpan(): Promise<void> {
    const selection = model.get("selection") ?? [];
    const key = spanKey();
    if (!selection.length || spanRow?.key === key) {
      paint();
      return;
    }
    try {
      const reply = await requester.get(key, {
        what: "span",
        kind: model.get("kind"),
        layer: model.get("layer"),
        head: model.get("head"),
        words: model.get("words"),
        selection,
        combine: model.get("combine"),
      });
      if (key !== spanKey()) return; // moved on meanwhile
      spanRow = { key, data: decode(replyPacked(reply.content, reply.buffers[0])).data };
      paint();
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
  }

  /** The query row under a click on a cell or a row label, or null. */
  function rowAt(e: MouseEvent): number | null {
    if (!layout) return null;
    const r = canvas.getBoundingClientRect();
    const x = e.clientX - r.left;
    const y = e.clientY - r.top;
    const cz = layout.cell * zoom.z;
    if (y < layout.y0 || y >= layout.y0 + layout.cell * layout.nq || x > layout.x0 + layout.cell * layout.nk)
      return null;
    const q = Math.floor(zoom.q0 + (y - layout.y0) / cz);
    return q >= 0 && q < layout.nq ? q : null;
  }

  /** The weight of full-detail cell (q, k) and whether it is exact (false: an overview block's max). */
  function valueAt(q: number, k: number): { v: number; exact: boolean } {
    if (!current || !layout) return { v: Number.NaN, exact: false };
    for (const tile of tiles.values()) {
      if (q >= tile.q0 && q < tile.q0 + tile.rows && k >= tile.k0 && k < tile.k0 + tile.cols)
        return { v: tile.data[(q - tile.q0) * tile.cols + (k - tile.k0)], exact: true };
    }
    const f = current.factor;
    const cols = Math.ceil(layout.nk / f);
    return { v: current.data[Math.floor(q / f) * cols + Math.floor(k / f)], exact: f === 1 };
  }

  function accept(
    key: string,
    packed: Packed,
    factor: number,
    labels: [string[], string[]],
    vmax?: number,
    rowsUsed?: number,
  ): void {
    const m = decode(packed);
    const [rows, cols] = m.shape;
    if (rows !== Math.ceil(labels[0].length / factor) || cols !== Math.ceil(labels[1].length / factor))
      throw new Error(
        `a ${rows} x ${cols} matrix does not fit ${labels[0].length} x ${labels[1].length} labels`,
      );
    if (current?.key !== key) tiles = new Map();
    const top = vmax !== undefined && Number.isFinite(vmax) && vmax > 0 ? vmax : maxOf(m.data) || 1;
    current = {
      key,
      labels,
      data: m.data,
      vmax: top,
      factor,
      rowsUsed: rowsUsed ?? factor,
      image: null,
      map: "",
    };
    paint();
  }

  async function refresh(): Promise<void> {
    const kind = model.get("kind");
    const words = model.get("words");
    const key = viewKey(kind, model.get("layer"), model.get("head"), words);
    const now = () => viewKey(model.get("kind"), model.get("layer"), model.get("head"), model.get("words"));
    const initial = model.get("_payload");
    const first = initial && "key" in initial && initial.key === key ? initial : null;
    if (first?.labels) wordLabels ??= first.labels.tokens;
    try {
      if (first) {
        // Token-level labels are at hand, so the first paint needs no round trip.
        const labels = await labelsFor(kind, words);
        if (now() === key) accept(key, first.matrix, first.factor ?? 1, labels, first.vmax, first.rows_used);
        return;
      }
      const [labels, reply] = await Promise.all([
        labelsFor(kind, words),
        requester.get(key, {
          what: "matrix",
          kind,
          layer: model.get("layer"),
          head: model.get("head"),
          words,
        }),
      ]);
      if (now() !== key) return; // the user moved on while we waited
      const c = reply.content;
      accept(
        key,
        replyPacked(c, reply.buffers[0]),
        Number(c.factor ?? 1),
        labels,
        c.vmax === undefined ? undefined : Number(c.vmax),
        c.rows_used === undefined ? undefined : Number(c.rows_used),
      );
      showError(model.get("_error"));
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
  }

  cleanups.push(
    listen(canvas, "mousemove", (e: MouseEvent) => {
      if (!layout || !current) return;
      const rect = canvas.getBoundingClientRect();
      const x = e.clientX - rect.left;
      const y = e.clientY - rect.top;
      if (drag) return; // the window's listener pans
      const cell = cellAtZoom(layout, zoom, x, y);
      canvas.style.cursor = cell && zoom.z > 1 ? "grab" : "default";
      if (!cell) {
        hideTooltip(tooltip);
        if (hover) {
          hover = null;
          paint();
        }
        return;
      }
      const [queries, keys] = tokens();
      const { v, exact } = valueAt(cell.q, cell.k);
      const f = current.factor;
      const value = Number.isNaN(v)
        ? "masked"
        : exact
          ? v.toFixed(4)
          : `≤ ${v.toFixed(4)} (max of ${f}×${f}; zoom in)`;
      const data = { q: String(cell.q), k: String(cell.k), value: String(v), exact: String(exact) };
      showTooltip(
        tooltip,
        root,
        e,
        `${userText(queries[cell.q] ?? "")} → ${userText(keys[cell.k] ?? "")}\n${value}`,
        data,
        false,
      );
      if (!hover || hover.q !== cell.q || hover.k !== cell.k) {
        hover = cell;
        paint();
      }
    }),
    listen(
      canvas,
      "wheel",
      (e: WheelEvent) => {
        if (!layout) return;
        const rect = canvas.getBoundingClientRect();
        const x = e.clientX - rect.left;
        const y = e.clientY - rect.top;
        if (!cellAtZoom(layout, zoom, x, y)) return; // outside the grid the page scrolls as usual
        e.preventDefault();
        setZoom(zoomAt(layout, zoom, Math.exp(-e.deltaY * 0.002), x, y));
      },
      { passive: false },
    ),
    listen(canvas, "mousedown", (e: MouseEvent) => {
      if (!layout || e.button !== 0) return;
      const rect = canvas.getBoundingClientRect();
      if (!cellAtZoom(layout, zoom, e.clientX - rect.left, e.clientY - rect.top)) return;
      drag = { x: e.clientX, y: e.clientY, at: zoom, moved: false };
      e.preventDefault();
    }),
    listen(window, "mousemove", (e: MouseEvent) => {
      if (!drag || !layout) return;
      const dx = e.clientX - drag.x;
      const dy = e.clientY - drag.y;
      if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 3) return;
      drag.moved = true;
      hideTooltip(tooltip);
      canvas.style.cursor = "grabbing";
      setZoom(panBy(layout, drag.at, dx, dy));
    }),
    listen(window, "mouseup", () => {
      dragged = drag?.moved ?? false;
      drag = null;
    }),
    listen(canvas, "click", (e: MouseEvent) => {
      const q = dragged ? null : rowAt(e);
      dragged = false;
      if (q !== null) spans.click(q, e);
    }),
  );
  cleanups.push(
    listen(canvas, "mouseleave", () => {
      hideTooltip(tooltip);
      hover = null;
      paint();
    }),
  );
  cleanups.push(
    listen(root, "keydown", (e: KeyboardEvent) => {
      if (typedInControl(e)) return; // arrows in a menu step its options, not the view
      const [nLayers, nHeads] = meta().shapes[model.get("kind")] ?? [0, 0];
      const layer = model.get("layer");
      const head = model.get("head");
      if (e.shiftKey && (e.key === "ArrowDown" || e.key === "ArrowUp")) {
        spans.step(e.key === "ArrowDown" ? 1 : -1, tokens()[0].length); // grow or shrink the selected span
        e.preventDefault();
        return;
      }
      if (e.key === "ArrowRight") update({ head: Math.min(nHeads - 1, head + 1) });
      else if (e.key === "ArrowLeft") update({ head: Math.max(-1, head - 1) });
      else if (e.key === "ArrowDown") update({ layer: Math.min(nLayers - 1, layer + 1) });
      else if (e.key === "ArrowUp") update({ layer: Math.max(0, layer - 1) });
      else if (e.key === "+" || e.key === "=") zoomCentre(1.6);
      else if (e.key === "-") zoomCentre(1 / 1.6);
      else if (e.key === "0") setZoom(NO_ZOOM);
      else if (e.key === "Escape" && (model.get("selection") ?? []).length) spans.clear();
      else return;
      e.preventDefault();
      buildControls();
    }),
  );

  const rebuild = () => {
    hideTooltip(tooltip); // it described the old map
    buildControls();
    refresh().then(fetchSpan);
  };
  for (const ev of ["change:layer", "change:head", "change:kind", "change:words"]) {
    cleanups.push(onModel(model as WidgetModel<HeatmapTraits>, ev, rebuild));
  }
  cleanups.push(
    onModel(model, "change:_meta", () => {
      requester.clear();
      wordLabels = null;
      rebuild();
    }),
  );
  const zoomFromPython = () => {
    const z = model.get("zoom");
    if (layout && z?.length === 4) setZoom(zoomTo(layout, z[0], z[1], z[2], z[3]));
  };
  cleanups.push(onModel(model, "change:zoom", zoomFromPython));
  const spanChanged = () => {
    buildControls();
    fetchSpan();
  };
  cleanups.push(
    onModel(model, "change:selection", spanChanged),
    onModel(model, "change:combine", spanChanged),
  );
  cleanups.push(onModel(model, "change:theme", paint));
  cleanups.push(onModel(model, "change:colormap", paint));
  rebuild();

  return () => {
    shell.close();
    requester.dispose();
  };
}

export default { render };
