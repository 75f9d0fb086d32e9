// ModelView: every layer x head as a thumbnail; click one to see that head at full resolution beside the grid.
// Mirrors attnwidgets/widgets/model_view.py. Only the thumbnails (uint8, block-reduced in Python) arrive with the
// widget; a full head is fetched by "matrix" request when chosen and kept in the page.

import { type Packed, decode, maxOf, replyPacked } from "./shared/buffers";
import type { ColorMapName } from "./shared/colors";
import { controlGroup, h, listen, resetControls, select } from "./shared/dom";
import {
  drawLabels,
  drawLegend,
  drawMatrix,
  labelRoom,
  matrixPixels,
  prepareCanvas,
  textMeasurer,
} from "./shared/draw";
import { fitWatcher } from "./shared/fit";
import { type HeatmapLayout, cellAt, heatmapLayout } from "./shared/layout";
import { kvHeadNote, overviewNote } from "./shared/long_context";
import { type MeasureMeta, measureToggle } from "./shared/measure";
import { type RenderProps, onModel } from "./shared/model";
import { Requester } from "./shared/requests";
import { arrowKeysSelect, clickToSelect, typedInControl } from "./shared/selection";
import * as span from "./shared/span";
import { userText } from "./shared/text";
import { applyTheme, theme } from "./shared/theme";
import { hideTooltip, showTooltip, tooltipBox } from "./shared/tooltip";
import { widgetShell } from "./shared/widget_shell";

/** Python traits of ModelView (attnwidgets/widgets/model_view.py). */
export interface ModelViewTraits {
  layer: number;
  head: number;
  kind: string; // "self" | "encoder" | "decoder" | "cross"
  theme: string;
  colormap: string; // "" = the theme's
  reduce: string; // "max" | "mean": how thumbnails merge a block of cells
  selection: number[]; // selected query rows (shared/span.ts), [] none
  combine: string; // "mean" | "sum" of the selected rows
  measure: string; // "weights" | "norms" | "value_zeroing" (shared/measure.ts)
  fit: "auto" | boolean | number[]; // shared/fit.ts
  _meta: MeasureMeta & {
    title: string;
    kinds: string[];
    shapes: Record<string, [number, number]>; // kind -> [layers, heads]
    tokens: Record<string, [string[], string[]]>; // kind -> [query tokens, key tokens]
    causal: Record<string, boolean>;
    kv_group_size?: Record<string, number>; // query heads per key/value head (1: no GQA)
    reduce?: string;
  };
  // rows_used: query rows read per block of `factor` (fewer than factor: a run of rows stands for the block)
  _payload: Thumbs | Record<string, never>;
  _error: string;
}

interface Thumbs {
  kind: string;
  factor: number;
  rows_used?: number;
  thumbs: Packed;
}

/** The heads of each key/value group as [first, last] ranges (one range per head without GQA). */
export function kvGroups(heads: number, groupSize: number): Array<[number, number]> {
  const size = Math.max(1, groupSize);
  const out: Array<[number, number]> = [];
  for (let g = 0; g * size < heads; g++) out.push([g * size, Math.min(heads, (g + 1) * size) - 1]);
  return out;
}

/** Where the thumbnail of (layer, head) sits in the grid canvas, in CSS pixels. */
export interface GridGeometry {
  layers: number;
  heads: number;
  slot: number; // side of a thumbnail's square slot
  gap: number;
  x0: number;
  y0: number;
  width: number;
  height: number;
}

export function gridGeometry(
  layers: number,
  heads: number,
  maxWidth: number,
  font: number,
  maxHeight?: number, // fit (shared/fit.ts): the whole grid at most this tall
): GridGeometry {
  const x0 = Math.ceil(font * 2.6);
  const y0 = Math.ceil(font * 1.6);
  const gap = 4;
  let slot = Math.max(20, Math.min(64, Math.floor((maxWidth - x0 - gap * heads) / Math.max(1, heads))));
  if (maxHeight !== undefined)
    slot = Math.max(6, Math.min(slot, Math.floor((maxHeight - y0 - gap * layers) / Math.max(1, layers))));
  return {
    layers,
    heads,
    slot,
    gap,
    x0,
    y0,
    width: x0 + heads * (slot + gap),
    height: y0 + layers * (slot + gap),
  };
}

/** The (layer, head) under CSS pixel (x, y), or null (gaps and labels count as outside). */
export function thumbAt(g: GridGeometry, x: number, y: number): { layer: number; head: number } | null {
  const hx = (x - g.x0) / (g.slot + g.gap);
  const ly = (y - g.y0) / (g.slot + g.gap);
  const head = Math.floor(hx);
  const layer = Math.floor(ly);
  if (hx < 0 || ly < 0 || head >= g.heads || layer >= g.layers) return null;
  if ((hx - head) * (g.slot + g.gap) > g.slot || (ly - layer) * (g.slot + g.gap) > g.slot) return null;
  return { layer, head };
}

function render({ model, el }: RenderProps<ModelViewTraits>): () => void {
  const shell = widgetShell(model, el, "aw-model-view");
  const { root, title, bar, errorBox, cleanups, showError } = shell;
  const requester = new Requester(model);
  const grid = h("canvas", { className: "aw-canvas", "data-testid": "thumb-grid" });
  const detailTitle = h("div", {
    className: "aw-muted",
    "data-testid": "detail-title",
    "data-export-text": "",
  });
  const detail = h("canvas", { className: "aw-canvas", "data-testid": "heatmap-canvas" });
  const legendCanvas = h("canvas");
  const legendMax = h("span", { className: "aw-muted", "data-export-text": "" });
  const legend = h(
    "div",
    { className: "aw-legend" },
    h("span", { className: "aw-muted", text: "0", "data-export-text": "" }),
    legendCanvas,
    legendMax,
  );
  const tooltip = tooltipBox();
  const detailBox = h("div", { className: "aw-scroll" }, detailTitle, detail, legend);
  const body = h("div", {}, h("div", { className: "aw-scroll" }, grid), detailBox);
  body.style.cssText = "display:flex;gap:16px;align-items:flex-start;flex-wrap:wrap";
  root.append(title, bar, errorBox, body, tooltip);
  // Fitted, the grid and the detail sit side by side inside the box (the detail was below the fold at 1280 x 720).
  const fit = fitWatcher(model, el, root, () => {
    paintGrid();
    paintDetail();
  });
  cleanups.push(fit.cleanup);

  let geom: GridGeometry | null = null;
  let thumbImage: HTMLCanvasElement | null = null;
  let thumbShape: number[] = [0, 0, 0, 0];
  let layout: HeatmapLayout | null = null;
  let current: { key: string; data: Float32Array; vmax: number; factor: number; rowsUsed: number } | null =
    null;
  let hoverThumb: { layer: number; head: number } | null = null;
  let hoverCell: { q: number; k: number } | null = null;
  const spans = new span.SpanSelector(model);
  let spanRow: { key: string; data: Float32Array } | null = null; // the selection's combined row (from Python)

  const meta = () => model.get("_meta");
  const kind = () => model.get("kind");

  const controls = controlGroup(cleanups);
  function buildControls(): void {
    resetControls(controls, bar);
    const m = meta();
    if (m.kinds.length > 1) {
      const kindSel = select(
        m.kinds.map((k) => [k, k]),
        kind(),
        "attention kind",
      );
      kindSel.dataset.testid = "kind-select";
      controls.push(
        listen(kindSel, "change", () => {
          model.set("kind", kindSel.value);
          model.set("layer", 0);
          model.set("head", 0);
          model.save_changes();
        }),
      );
      bar.append(h("label", {}, "attention", kindSel));
    }
    const reduceSel = select(
      [
        ["max", "block max"],
        ["mean", "block mean"],
      ],
      model.get("reduce") || "max",
      "thumbnail reduction",
    );
    reduceSel.dataset.testid = "reduce-select";
    controls.push(
      listen(reduceSel, "change", () => {
        model.set("reduce", reduceSel.value);
        model.save_changes();
      }),
    );
    bar.append(h("label", {}, "thumbnails", reduceSel));
    const measure = measureToggle(model, m, controls);
    if (measure) bar.append(measure);
    bar.append(
      h("span", { className: "aw-muted", text: "click a thumbnail to open that head · arrow keys move" }),
    );
    bar.append(span.spanControls(model, spans, controls), shell.exportControls(controls));
  }

  /** The thumbnails of the kind on screen: the synced trait, or (in a saved page, where no kernel updates the
   *  trait when the kind changes) a "thumbs" request answered from the page's saved replies. */
  let fetchedThumbs: Thumbs | null = null;
  function thumbsNow(): Thumbs | null {
    const t = model.get("_payload");
    if (t && "thumbs" in t && t.kind === kind()) return t as Thumbs;
    if (fetchedThumbs && fetchedThumbs.kind === kind()) return fetchedThumbs;
    return null;
  }

  async function fetchThumbs(): Promise<void> {
    const k = kind();
    try {
      const reply = await requester.get(`thumbs/${k}`, { what: "thumbs", kind: k });
      if (k !== kind() || thumbsNow()) return; // the trait arrived first, or the kind moved on
      fetchedThumbs = {
        kind: k,
        factor: Number(reply.content.factor ?? 1),
        rows_used: Number(reply.content.rows_used ?? reply.content.factor ?? 1),
        thumbs: replyPacked(reply.content, reply.buffers[0]),
      };
      all();
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
  }

  /** All thumbnails into one offscreen image (heads side by side, layers stacked), drawn once per data change. */
  function buildThumbs(): void {
    const t = thumbsNow();
    thumbImage = null;
    if (!t) return;
    const m = decode(t.thumbs);
    const [L, H, tq, tk] = m.shape;
    thumbShape = m.shape;
    const causal = meta().causal[t.kind] ?? false;
    const f = t.factor;
    const map = (model.get("colormap") || theme(model.get("theme")).colormap) as ColorMapName;
    const off = document.createElement("canvas");
    off.width = H * tk;
    off.height = L * tq;
    const ctx = off.getContext("2d")!;
    const one = new Float32Array(tq * tk);
    for (let l = 0; l < L; l++) {
      for (let hd = 0; hd < H; hd++) {
        const base = (l * H + hd) * tq * tk;
        let top = 0;
        for (let i = 0; i < tq * tk; i++) {
          one[i] = m.data[base + i];
          if (one[i] > top) top = one[i];
        }
        // A block whose every key lies in the future of every query is masked, not zero: paint it grey.
        if (causal)
          for (let i = 0; i < tq; i++)
            for (let j = 0; j < tk; j++) if (j * f > i * f + f - 1) one[i * tk + j] = Number.NaN;
        const px = matrixPixels(one, tq, tk, top || 1, map);
        ctx.putImageData(new ImageData(px, tk, tq), hd * tk, l * tq);
      }
    }
    thumbImage = off;
  }

  function paintGrid(): void {
    const t = theme(model.get("theme"));
    applyTheme(root, t);
    const [L, H, tq, tk] = thumbShape;
    const room = fit.room(body);
    body.style.flexWrap = room ? "nowrap" : "wrap";
    const natural = Math.max(360, Math.min(820, t.maxGrid + 140));
    geom = gridGeometry(L, H, room ? Math.min(natural, room.width * 0.55) : natural, t.font, room?.height);
    const g = geom;
    const ctx = prepareCanvas(grid, g.width, g.height);
    ctx.fillStyle = t.bg;
    ctx.fillRect(0, 0, g.width, g.height);
    ctx.font = `${Math.max(10, t.font - 1)}px ${t.fontFamily}`;
    ctx.fillStyle = t.muted;
    ctx.textBaseline = "middle";
    ctx.textAlign = "center";
    for (let hd = 0; hd < H; hd++)
      ctx.fillText(String(hd), g.x0 + hd * (g.slot + g.gap) + g.slot / 2, g.y0 / 2);
    ctx.textAlign = "right";
    for (let l = 0; l < L; l++) ctx.fillText(`L${l}`, g.x0 - 6, g.y0 + l * (g.slot + g.gap) + g.slot / 2);
    if (thumbImage) {
      ctx.imageSmoothingEnabled = false;
      const side = Math.max(tq, tk);
      const w = (g.slot * tk) / side;
      const hgt = (g.slot * tq) / side;
      // Grouped-query attention: the heads that share a key/value head sit on one shaded band, every other group
      // darker, with the group's number above it ("KV g").
      const size = meta().kv_group_size?.[kind()] ?? 1;
      if (size > 1) {
        const groups = kvGroups(H, size);
        groups.forEach(([a, b], gi) => {
          const x = g.x0 + a * (g.slot + g.gap) - g.gap / 2;
          const width = (b - a + 1) * (g.slot + g.gap);
          ctx.fillStyle = gi % 2 === 0 ? t.grid : t.bg;
          ctx.globalAlpha = 0.55;
          ctx.fillRect(x, g.y0 - g.gap / 2, width, L * (g.slot + g.gap));
          ctx.globalAlpha = 1;
          ctx.strokeStyle = t.muted;
          ctx.lineWidth = 1;
          ctx.strokeRect(x + 0.5, g.y0 - g.gap / 2 + 0.5, width - 1, L * (g.slot + g.gap) - 1);
        });
        grid.dataset.kvGroups = groups.map(([a, b]) => `${a}-${b}`).join(",");
      } else delete grid.dataset.kvGroups;
      for (let l = 0; l < L; l++) {
        for (let hd = 0; hd < H; hd++) {
          const x = g.x0 + hd * (g.slot + g.gap);
          const y = g.y0 + l * (g.slot + g.gap);
          ctx.drawImage(thumbImage, hd * tk, l * tq, tk, tq, x, y, w, hgt);
          ctx.strokeStyle = t.grid;
          ctx.lineWidth = 1;
          ctx.strokeRect(x - 0.5, y - 0.5, w + 1, hgt + 1);
        }
      }
      const mark = (l: number, hd: number, colour: string, width: number) => {
        ctx.strokeStyle = colour;
        ctx.lineWidth = width;
        ctx.strokeRect(g.x0 + hd * (g.slot + g.gap) - 1.5, g.y0 + l * (g.slot + g.gap) - 1.5, w + 3, hgt + 3);
      };
      if (hoverThumb) mark(hoverThumb.layer, hoverThumb.head, t.muted, 2);
      mark(model.get("layer"), model.get("head"), t.accent, 3);
    }
    Object.assign(grid.dataset, {
      layers: String(g.layers),
      heads: String(g.heads),
      slot: String(g.slot),
      gap: String(g.gap),
      x0: String(g.x0),
      y0: String(g.y0),
      selected: `${model.get("layer")}/${model.get("head")}`,
      factor: String(thumbsNow()?.factor ?? 1),
    });
  }

  function paintDetail(): void {
    if (!current) return;
    const t = theme(model.get("theme"));
    const map = (model.get("colormap") || t.colormap) as ColorMapName;
    const [queries, keys] = meta().tokens[kind()] ?? [[], []];
    const nq = Math.ceil(queries.length / current.factor);
    const nk = Math.ceil(keys.length / current.factor);
    const probe = textMeasurer();
    const full = current.factor === 1;
    const room = fit.room(body);
    const selection = model.get("selection") ?? [];
    const row = selection.length && spanRow?.key === spanKey() ? spanRow.data : null;
    // Beside the grid: the box's width less the grid's and the gap; its height less the detail's title and legend.
    const chrome = detailBox.getBoundingClientRect().height - detail.getBoundingClientRect().height;
    const bandRoom = row ? span.spanBand(t.maxCell, t).gap + span.spanBand(t.maxCell, t).height + 4 : 0;
    layout = heatmapLayout({
      nq,
      nk,
      maxGrid: Math.min(t.maxGrid, 520),
      maxCell: t.maxCell,
      labelWidth: full ? labelRoom(probe, queries, t) : 4,
      labelHeight: full ? labelRoom(probe, keys, t) : 4,
      minLabelCell: full ? Math.min(t.font, 12) - 2 : 1e9,
      maxWidth: room ? room.width - (geom?.width ?? 0) - 16 : undefined,
      maxHeight: room ? room.height - chrome - bandRoom : undefined,
    });
    const band = span.spanBand(layout.cell, t);
    const height = layout.height + (row ? band.gap + band.height + 4 : 0);
    const ctx = prepareCanvas(detail, layout.width, height);
    ctx.fillStyle = t.bg;
    ctx.fillRect(0, 0, layout.width, height);
    drawMatrix(
      ctx,
      current.data,
      nq,
      nk,
      layout.x0,
      layout.y0,
      layout.cell * nk,
      layout.cell * nq,
      current.vmax,
      map,
    );
    drawLabels(ctx, layout, queries, keys, t, hoverCell);
    if (hoverCell) {
      ctx.strokeStyle = t.accent;
      ctx.lineWidth = 2;
      ctx.strokeRect(
        layout.x0 + hoverCell.k * layout.cell,
        layout.y0 + hoverCell.q * layout.cell,
        layout.cell,
        layout.cell,
      );
    }
    const lay = layout;
    const f = current.factor;
    const blocks = [...new Set(selection.map((q) => Math.floor(q / f)))];
    span.outlineRows(ctx, blocks, (q) => lay.y0 + q * lay.cell, lay.cell, lay.x0, lay.cell * nk, t);
    if (row) {
      const b = {
        x: lay.x0,
        y: lay.y0 + lay.cell * nq + band.gap,
        w: lay.cell * nk,
        h: band.height,
        k0: 0,
        kn: row.length,
      };
      span.drawSpanRow(
        ctx,
        row,
        b,
        span.spanTop(row, model.get("combine"), current.vmax),
        map,
        model.get("combine"),
        t,
      );
      detail.dataset.spanY = String(b.y);
    }
    Object.assign(detail.dataset, {
      selection: selection.join(","),
      span: row ? (spanRow?.key ?? "") : "",
      x0: String(layout.x0),
      y0: String(layout.y0),
      cell: String(layout.cell),
      nq: String(nq),
      nk: String(nk),
      view: current.key,
      factor: String(current.factor),
    });
    drawLegend(legendCanvas, map);
    legendMax.textContent = current.vmax.toFixed(3);
    const [l, hd] = current.key.split("/").slice(1);
    const kv = kvHeadNote(Number(hd), meta().kv_group_size?.[kind()] ?? 1);
    const note = overviewNote(current.factor, meta().reduce ?? "max", current.rowsUsed).replace(
      "zoom for detail",
      "zoom in AttentionHeatmap",
    );
    const cap = span.spanCaption(queries, selection, model.get("combine") || "mean");
    detailTitle.textContent = `${kind()} attention · layer ${l} · head ${hd}${kv}${full ? "" : note}${
      cap ? ` · ${userText(cap)}` : ""
    }`;
  }

  async function fetchDetail(): Promise<void> {
    const k = kind();
    const layer = model.get("layer");
    const head = model.get("head");
    const key = `${k}/${layer}/${head}`;
    try {
      const reply = await requester.get(key, { what: "matrix", kind: k, layer, head });
      if (key !== `${kind()}/${model.get("layer")}/${model.get("head")}`) return; // moved on meanwhile
      const m = decode(replyPacked(reply.content, reply.buffers[0]));
      const c = reply.content;
      const factor = Number(c.factor ?? 1);
      const vmax = Number(c.vmax);
      current = {
        key,
        data: m.data,
        vmax: Number.isFinite(vmax) && vmax > 0 ? vmax : maxOf(m.data) || 1,
        factor,
        rowsUsed: Number(c.rows_used ?? factor),
      };
      paintDetail();
      showError(model.get("_error"));
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
  }

  /** The page's name for the combined row of the selection in the head on screen. */
  const spanKey = () =>
    `span/${kind()}/${model.get("layer")}/${model.get("head")}/${span.selectionKey(model.get("selection") ?? [])}/${model.get("combine")}`;

  /** Fetch the selection's combined row for the head on screen (computed in Python), then paint the detail. */
  async function fetchSpan(): Promise<void> {
    const selection = model.get("selection") ?? [];
    const key = spanKey();
    if (!selection.length || spanRow?.key === key) {
      paintDetail();
      return;
    }
    try {
      const reply = await requester.get(key, {
        what: "span",
        kind: kind(),
        layer: model.get("layer"),
        head: model.get("head"),
        selection,
        combine: model.get("combine"),
      });
      if (key !== spanKey()) return;
      spanRow = { key, data: decode(replyPacked(reply.content, reply.buffers[0])).data };
      paintDetail();
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
  }

  /** After a click or an arrow key chose a head: show it (the traits are set and synced by then). */
  function chosen(): void {
    paintGrid();
    fetchDetail().then(fetchSpan);
  }

  function thumbFor(e: MouseEvent): { layer: number; head: number } | null {
    if (!geom) return null;
    const rect = grid.getBoundingClientRect();
    return thumbAt(geom, e.clientX - rect.left, e.clientY - rect.top);
  }

  cleanups.push(
    listen(grid, "mousemove", (e: MouseEvent) => {
      if (!geom) return;
      const at = thumbFor(e);
      const same = at && hoverThumb && at.layer === hoverThumb.layer && at.head === hoverThumb.head;
      if (!same) {
        hoverThumb = at;
        paintGrid();
      }
      if (!at) {
        hideTooltip(tooltip);
        return;
      }
      const kv = kvHeadNote(at.head, meta().kv_group_size?.[kind()] ?? 1);
      showTooltip(tooltip, root, e, `layer ${at.layer} · head ${at.head}${kv}`, {}, false);
    }),
    listen(grid, "mouseleave", () => {
      hoverThumb = null;
      hideTooltip(tooltip);
      paintGrid();
    }),
    clickToSelect(grid, model, thumbFor, chosen),
    listen(detail, "mousemove", (e: MouseEvent) => {
      if (!layout || !current) return;
      const rect = detail.getBoundingClientRect();
      const cell = cellAt(layout, e.clientX - rect.left, e.clientY - rect.top);
      if (!cell) {
        hideTooltip(tooltip);
        return;
      }
      const [queries, keys] = meta().tokens[kind()] ?? [[], []];
      const v = current.data[cell.q * layout.nk + cell.k];
      const f = current.factor;
      const label =
        f === 1
          ? `${userText(queries[cell.q] ?? "")} → ${userText(keys[cell.k] ?? "")}`
          : `queries ${cell.q * f}–${cell.q * f + f - 1} → keys ${cell.k * f}–${cell.k * f + f - 1} (${
              meta().reduce ?? "max"
            })`;
      const text = `${label}\n${Number.isNaN(v) ? "masked (future key)" : v.toFixed(4)}`;
      showTooltip(tooltip, root, e, text, { value: String(v) }, false);
      if (!hoverCell || hoverCell.q !== cell.q || hoverCell.k !== cell.k) {
        hoverCell = cell;
        paintDetail();
      }
    }),
    listen(detail, "click", (e: MouseEvent) => {
      // A query row (a cell or its label) of a full-resolution head; an overview's rows are blocks of tokens.
      if (!layout || !current || current.factor !== 1) return;
      const rect = detail.getBoundingClientRect();
      const y = e.clientY - rect.top;
      const x = e.clientX - rect.left;
      const q = Math.floor((y - layout.y0) / layout.cell);
      if (q >= 0 && q < layout.nq && x <= layout.x0 + layout.cell * layout.nk) spans.click(q, e);
    }),
    listen(root, "keydown", (e: KeyboardEvent) => {
      if (typedInControl(e)) return;
      if (e.shiftKey && (e.key === "ArrowDown" || e.key === "ArrowUp")) {
        spans.step(e.key === "ArrowDown" ? 1 : -1, meta().tokens[kind()]?.[0].length ?? 0);
        e.stopImmediatePropagation(); // not a layer step
      } else if (e.key === "Escape" && (model.get("selection") ?? []).length) spans.clear();
      else return;
      e.preventDefault();
    }),
    listen(detail, "mouseleave", () => {
      hoverCell = null;
      hideTooltip(tooltip);
      paintDetail();
    }),
    arrowKeysSelect(root, model, () => meta().shapes[kind()] ?? [0, 0], chosen),
  );

  /** New colours: thumbnails, grid and detail painted again. */
  function repaint(): void {
    buildThumbs();
    paintGrid();
    paintDetail();
  }

  function all(): void {
    buildControls();
    buildThumbs();
    paintGrid();
    const tn = thumbsNow();
    const size = meta().kv_group_size?.[kind()] ?? 1;
    const groups = size > 1 ? ` · shaded: heads sharing a KV head (${size} per group)` : "";
    const used = tn?.rows_used ?? tn?.factor ?? 1;
    const sampled =
      tn && used < tn.factor ? ` · thumbnails read ${used} of every ${tn.factor} query rows` : "";
    title.textContent = `${userText(meta().title)} · ${kind()} attention · ${thumbShape[0]} layers × ${thumbShape[1]} heads${groups}${sampled}`;
    fetchDetail().then(fetchSpan);
  }

  cleanups.push(
    onModel(model, "change:_payload", all),
    onModel(model, "change:_meta", () => {
      requester.clear(); // a new reduction: full heads are fetched again
      current = null;
      all();
    }),
    onModel(model, "change:kind", () => {
      // With a kernel the new thumbnails follow as a trait; without one (a saved page) they are fetched.
      // A short wait lets the trait win in a notebook, so the kernel is not asked twice.
      const timer = setTimeout(() => {
        if (!thumbsNow()) fetchThumbs();
      }, 250);
      cleanups.push(() => clearTimeout(timer));
    }),
    onModel(model, "change:layer", chosen),
    onModel(model, "change:head", chosen),
    onModel(model, "change:theme", repaint),
    onModel(model, "change:colormap", repaint),
    onModel(model, "change:selection", () => {
      buildControls();
      fetchSpan();
    }),
    onModel(model, "change:combine", fetchSpan),
  );
  all();

  return () => {
    shell.close();
    requester.dispose();
  };
}

export default { render };
