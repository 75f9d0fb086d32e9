// AttentionHeatmap's state: pure functions from the traits, the matrix on screen and its tiles to what the page
// draws, says and asks for (no DOM). Mirrors attnwidgets/widgets/heatmap.py.

import type { HeatmapLayout } from "../../draw/layout";
import { kvHeadNote, overviewNote } from "../../draw/long_context";
import type { MeasureMeta } from "../../draw/measure";
import { selectionKey, spanCaption } from "../../draw/span";
import { type Tile, type Zoom, visibleCells } from "../../draw/zoom";
import { type Matrix, type Packed, scaleTop } from "../../shared/buffers";
import { userText } from "../../shared/text";
import type { MetaOf, PayloadOf } from "../../shared/wire_model";

/** What `_meta` says about the result on screen (generated from Python: viewdata/views/heatmap.py). */
export type HeatmapMeta = MetaOf<"heatmap">;

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
  selection: number[]; // selected query rows (draw/span.ts), [] none
  combine: string; // "mean" | "sum" of the selected rows
  measure: string; // "weights" | "norms" | "value_zeroing" (draw/measure.ts)
  fit: "auto" | boolean | number[]; // draw/fit.ts
  _meta: HeatmapMeta;
  // labels: word-level labels per kind, when the first view is word level (else they come by "labels" request)
  // vmax: top of the colour scale (the largest weight, or over non-sink keys); rows_used: query rows read per block
  _payload: PayloadOf<"heatmap"> | Record<string, never>;
  _error: string;
}

/** kind -> [query labels, key labels] */
export type Labels = Record<string, [string[], string[]]>;

/** What picks the map on screen. */
export type HeatmapView = Pick<HeatmapTraits, "kind" | "layer" | "head" | "words">;

/** A change of the map on screen (a menu, a key). */
export type ViewChange = Partial<HeatmapView>;

/** The matrix on screen: as sent (an overview of factor x factor blocks when factor > 1), with the labels it was
 * sent for (a word-level matrix is never drawn with token labels) and its colour scale's top. */
export interface MatrixData {
  key: string;
  labels: [string[], string[]];
  data: Float32Array;
  vmax: number;
  factor: number;
  rowsUsed: number;
}

/** A full-detail tile of a long input's view: `rows` x `cols` cells from (q0, k0). */
export interface TileData {
  q0: number;
  k0: number;
  rows: number;
  cols: number;
  data: Float32Array;
}

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

/** The key of a view (`viewKey` of its fields). */
export const keyOf = (v: HeatmapView): string => viewKey(v.kind, v.layer, v.head, v.words);

/** The page's name for the combined row of `selection` (combined by `combine`) in view `v`. */
export function spanKey(v: HeatmapView, selection: number[], combine: string): string {
  return `span/${keyOf(v)}/${selectionKey(selection)}/${combine}`;
}

/** The page's name for the tile at (q0, k0). */
export const tileKey = (q0: number, k0: number): string => `${q0}/${k0}`;

/** The request fields that name a view (kind, layer, head, words). */
export function viewFields(v: HeatmapView): Record<string, unknown> {
  return { kind: v.kind, layer: v.layer, head: v.head, words: v.words };
}

/** The request for tile `tl` of view `v` at full detail. */
export function regionRequest(v: HeatmapView, tl: Tile): Record<string, unknown> {
  return { what: "region", ...viewFields(v), q0: tl.q0, q1: tl.q1, k0: tl.k0, k1: tl.k1 };
}

/** The matrix on screen from a decoded payload or reply; an error when its shape does not fit the labels. */
export function matrixData(
  key: string,
  m: Matrix,
  factor: number,
  labels: [string[], string[]],
  vmax?: number,
  rowsUsed?: number,
): MatrixData {
  const [rows, cols] = m.shape;
  if (rows !== Math.ceil(labels[0].length / factor) || cols !== Math.ceil(labels[1].length / factor))
    throw new Error(
      `a ${rows} x ${cols} matrix does not fit ${labels[0].length} x ${labels[1].length} labels`,
    );
  return { key, labels, data: m.data, vmax: scaleTop(vmax, m.data), factor, rowsUsed: rowsUsed ?? factor };
}

/** The weight of full-detail cell (q, k) of an nk-key matrix and whether it is exact (false: an overview block's
 * max or mean): a tile's cell where one covers it, else the overview's block. */
export function valueAt(
  current: MatrixData,
  tiles: Iterable<TileData>,
  nk: number,
  q: number,
  k: number,
): { v: number; exact: boolean } {
  for (const tile of tiles) {
    if (q >= tile.q0 && q < tile.q0 + tile.rows && k >= tile.k0 && k < tile.k0 + tile.cols)
      return { v: tile.data[(q - tile.q0) * tile.cols + (k - tile.k0)], exact: true };
  }
  const f = current.factor;
  const cols = Math.ceil(nk / f);
  return { v: current.data[Math.floor(q / f) * cols + Math.floor(k / f)], exact: f === 1 };
}

/** The tooltip over cell `cell`: query → key and its weight (an overview's block says so), and the data the
 * browser tests read. */
export function cellTip(
  queries: string[],
  keys: string[],
  cell: { q: number; k: number },
  at: { v: number; exact: boolean },
  factor: number,
): { text: string; data: Record<string, string> } {
  const { v, exact } = at;
  const value = Number.isNaN(v)
    ? "masked"
    : exact
      ? v.toFixed(4)
      : `≤ ${v.toFixed(4)} (max of ${factor}×${factor}; zoom in)`;
  return {
    text: `${userText(queries[cell.q] ?? "")} → ${userText(keys[cell.k] ?? "")}\n${value}`,
    data: { q: String(cell.q), k: String(cell.k), value: String(v), exact: String(exact) },
  };
}

/** The legend's text: the scale's top, fixed or per map, and the sink keys discounted from it. */
export function legendText(vmax: number, meta: Pick<HeatmapMeta, "vmax" | "sinks">): string {
  const sinks = meta.sinks ?? [];
  const more = sinks.length > 5 ? ", …" : "";
  const discounted = sinks.length
    ? ` · sink key${sinks.length > 1 ? "s" : ""} ${sinks.slice(0, 5).join(", ")}${more} discounted (clipped to the top colour)`
    : "";
  return `${vmax.toFixed(3)} · ${scaleNote(meta.vmax)}${discounted}`;
}

/** What the title says beside the view: the zoom, a long input's overview and the selection on screen. */
export interface TitleExtras {
  zoom: number;
  factor: number;
  rowsUsed: number;
  queries: string[];
  selection: number[];
  combine: string;
}

/** The title: the result, kind, layer, head (its KV head under GQA), level, zoom, overview and selection. */
export function titleText(meta: HeatmapMeta, v: HeatmapView, x: TitleExtras): string {
  const zoomText = x.zoom > 1 ? ` · zoom ×${x.zoom.toFixed(1)}` : "";
  const overview = x.zoom === 1 ? overviewNote(x.factor, meta.reduce ?? "max", x.rowsUsed) : "";
  const kv = kvHeadNote(v.head, meta.kv_group_size?.[v.kind] ?? 1);
  const head = v.head < 0 ? "mean of heads" : `head ${v.head}`;
  const sel = x.selection.length
    ? ` · ${userText(spanCaption(x.queries, x.selection, x.combine || "mean"))}`
    : "";
  return `${userText(meta.title)} · ${v.kind} attention · layer ${v.layer} · ${head}${kv}${
    v.words ? " · words" : ""
  }${zoomText}${overview}${sel}`;
}

/** What a key on the view does: change the map, zoom, or nothing of ours (null). Span keys are the selector's. */
export type KeyAction = { view: ViewChange } | { zoomBy: number } | { zoomReset: true } | null;

/** The action of key `key` on view `v` of a kind with `shape` (layers, heads): ← → heads (down to the mean, -1),
 * ↑ ↓ layers, + − 0 zoom. */
export function keyAction(key: string, v: HeatmapView, shape: [number, number]): KeyAction {
  const [nLayers, nHeads] = shape;
  if (key === "ArrowRight") return { view: { head: Math.min(nHeads - 1, v.head + 1) } };
  if (key === "ArrowLeft") return { view: { head: Math.max(-1, v.head - 1) } };
  if (key === "ArrowDown") return { view: { layer: Math.min(nLayers - 1, v.layer + 1) } };
  if (key === "ArrowUp") return { view: { layer: Math.max(0, v.layer - 1) } };
  if (key === "+" || key === "=") return { zoomBy: ZOOM_STEP };
  if (key === "-") return { zoomBy: 1 / ZOOM_STEP };
  if (key === "0") return { zoomReset: true };
  return null;
}

/** One zoom step of the buttons and keys. */
export const ZOOM_STEP = 1.6;

/** Whether the whole map's labels are drawn: unzoomed, with cells tall enough to read at `font`. */
export function labelsReadable(zoom: number, cellPx: number, font: number): boolean {
  return zoom === 1 && cellPx >= Math.min(font, 12) - 2;
}

/** How much of a long input's view is at full detail: "full" (no overview), "tiles" (every wanted tile is here) or
 * "overview". */
export function detailLevel(factor: number, wanted: number, shown: number): string {
  if (factor === 1) return "full";
  return wanted && shown === wanted ? "tiles" : "overview";
}

/** The canvas's geometry for tests and assistive tools: cell (q, k) is centred at x0 + (k + .5) * cell,
 * y0 + (q + .5) * cell; `visible` the whole cells on screen, `grid*` the grid's box. */
export function geometryData(l: HeatmapLayout, zoom: Zoom): Record<string, string> {
  const cz = l.cell * zoom.z;
  const vis = visibleCells(l, zoom);
  return {
    x0: String(l.x0 - zoom.k0 * cz),
    y0: String(l.y0 - zoom.q0 * cz),
    cell: String(cz),
    nq: String(l.nq),
    nk: String(l.nk),
    zoom: String(zoom.z),
    visible: `${vis.q0}:${vis.q1},${vis.k0}:${vis.k1}`,
    gridX0: String(l.x0),
    gridY0: String(l.y0),
    gridW: String(l.cell * l.nk),
    gridH: String(l.cell * l.nq),
  };
}
