// ModelView's state: pure functions from the traits, the thumbnails and the head on screen to what the page draws,
// says and asks for (no DOM). Mirrors attnwidgets/widgets/model_view.py.

import { kvHeadNote, overviewNote } from "../../draw/long_context";
import type { MeasureMeta } from "../../draw/measure";
import { selectionKey, spanCaption } from "../../draw/span";
import { type Matrix, type Packed, scaleTop } from "../../shared/buffers";
import { userText } from "../../shared/text";
import type { MetaOf, PayloadOf } from "../../shared/wire_model";

/** What `_meta` says about the result on screen (generated from Python: viewdata/views/model_view.py). */
export type ModelViewMeta = MetaOf<"model_view">;

/** Python traits of ModelView (attnwidgets/widgets/model_view.py). */
export interface ModelViewTraits {
  layer: number;
  head: number;
  kind: string; // "self" | "encoder" | "decoder" | "cross"
  theme: string;
  colormap: string; // "" = the theme's
  reduce: string; // "max" | "mean": how thumbnails merge a block of cells
  selection: number[]; // selected query rows (draw/span.ts), [] none
  combine: string; // "mean" | "sum" of the selected rows
  measure: string; // "weights" | "norms" | "value_zeroing" (draw/measure.ts)
  fit: "auto" | boolean | number[]; // draw/fit.ts
  _meta: ModelViewMeta;
  // rows_used: query rows read per block of `factor` (fewer than factor: a run of rows stands for the block)
  _payload: PayloadOf<"model_view"> | Record<string, never>;
  _error: string;
}

/** Every head's thumbnail of one kind: a [layers, heads, rows, cols] array of blocks `factor` tokens wide. */
export interface Thumbs {
  kind: string;
  factor: number;
  rows_used?: number;
  thumbs: Packed;
}

/** The full head on screen: its blocks (factor 1: its cells) and its colour scale's top. */
export interface Detail {
  key: string;
  data: Float32Array;
  vmax: number;
  factor: number;
  rowsUsed: number;
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
  maxHeight?: number, // fit (draw/fit.ts): the whole grid at most this tall
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

/** The grid's width for a theme's `maxGrid`: 360–820 px; fitted (`roomWidth`), at most 55% of the box. */
export function gridWidth(maxGrid: number, roomWidth?: number): number {
  const natural = Math.max(360, Math.min(820, maxGrid + 140));
  return roomWidth === undefined ? natural : Math.min(natural, roomWidth * 0.55);
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

/** The top-left corner of the slot of (layer, head). */
export function slotAt(g: GridGeometry, layer: number, head: number): { x: number; y: number } {
  return { x: g.x0 + head * (g.slot + g.gap), y: g.y0 + layer * (g.slot + g.gap) };
}

/** One head's thumbnail out of the [layers, heads, tq, tk] array `data`, into `out` (tq * tk values); returns its
 * largest value. Under a causal mask a block whose every key lies in the future of every query (blocks of `factor`
 * tokens) is masked, NaN, not zero: it paints grey. */
export function headThumb(
  data: Float32Array,
  index: number, // layer * heads + head
  tq: number,
  tk: number,
  causal: boolean,
  factor: number,
  out: Float32Array,
): number {
  const base = index * tq * tk;
  let top = 0;
  for (let i = 0; i < tq * tk; i++) {
    out[i] = data[base + i];
    if (out[i] > top) top = out[i];
  }
  if (causal)
    for (let i = 0; i < tq; i++)
      for (let j = 0; j < tk; j++) if (j * factor > i * factor + factor - 1) out[i * tk + j] = Number.NaN;
  return top;
}

/** The thumbnails of a "thumbs" reply (a saved page answers it from its stored replies). */
export function thumbsOf(kind: string, content: Record<string, unknown>, packed: Packed): Thumbs {
  return {
    kind,
    factor: Number(content.factor ?? 1),
    rows_used: Number(content.rows_used ?? content.factor ?? 1),
    thumbs: packed,
  };
}

/** The page's name for the full head (kind, layer, head). */
export const detailKey = (kind: string, layer: number, head: number): string => `${kind}/${layer}/${head}`;

/** The page's name for the combined row of `selection` (combined by `combine`) in head (kind, layer, head). */
export function spanKey(
  kind: string,
  layer: number,
  head: number,
  selection: number[],
  combine: string,
): string {
  return `span/${detailKey(kind, layer, head)}/${selectionKey(selection)}/${combine}`;
}

/** The full head of a "matrix" reply: its scale's top is `vmax` as sent, or its largest value. */
export function detailOf(key: string, m: Matrix, content: Record<string, unknown>): Detail {
  const factor = Number(content.factor ?? 1);
  return {
    key,
    data: m.data,
    vmax: scaleTop(Number(content.vmax), m.data),
    factor,
    rowsUsed: Number(content.rows_used ?? factor),
  };
}

/** The blocks of `factor` query rows that hold a selected row: what the detail outlines. */
export function selectedBlocks(selection: number[], factor: number): number[] {
  return [...new Set(selection.map((q) => Math.floor(q / factor)))];
}

/** The title: the result, kind, the grid's size, the GQA shading and the thumbnails' row sampling. */
export function gridTitle(meta: ModelViewMeta, kind: string, shape: number[], thumbs: Thumbs | null): string {
  const size = meta.kv_group_size?.[kind] ?? 1;
  const groups = size > 1 ? ` · shaded: heads sharing a KV head (${size} per group)` : "";
  const used = thumbs?.rows_used ?? thumbs?.factor ?? 1;
  const sampled =
    thumbs && used < thumbs.factor ? ` · thumbnails read ${used} of every ${thumbs.factor} query rows` : "";
  return `${userText(meta.title)} · ${kind} attention · ${shape[0]} layers × ${shape[1]} heads${groups}${sampled}`;
}

/** The thumbnail's tooltip: its layer and head (and KV head under GQA). */
export function thumbTip(meta: ModelViewMeta, kind: string, at: { layer: number; head: number }): string {
  return `layer ${at.layer} · head ${at.head}${kvHeadNote(at.head, meta.kv_group_size?.[kind] ?? 1)}`;
}

/** The detail's tooltip over block (q, k): query → key at full detail, the block's token ranges in an overview. */
export function cellTip(
  tokens: [string[], string[]],
  cell: { q: number; k: number },
  v: number,
  factor: number,
  reduce: string,
): string {
  const [queries, keys] = tokens;
  const f = factor;
  const label =
    f === 1
      ? `${userText(queries[cell.q] ?? "")} → ${userText(keys[cell.k] ?? "")}`
      : `queries ${cell.q * f}–${cell.q * f + f - 1} → keys ${cell.k * f}–${cell.k * f + f - 1} (${reduce})`;
  return `${label}\n${Number.isNaN(v) ? "masked (future key)" : v.toFixed(4)}`;
}

/** The detail's title: kind, layer, head (KV head), an overview's note and the selection. */
export function detailTitle(
  meta: ModelViewMeta,
  kind: string,
  d: Detail,
  queries: string[],
  selection: number[],
  combine: string,
): string {
  const [l, hd] = d.key.split("/").slice(1);
  const kv = kvHeadNote(Number(hd), meta.kv_group_size?.[kind] ?? 1);
  const note = overviewNote(d.factor, meta.reduce ?? "max", d.rowsUsed).replace(
    "zoom for detail",
    "zoom in AttentionHeatmap",
  );
  const cap = spanCaption(queries, selection, combine || "mean");
  return `${kind} attention · layer ${l} · head ${hd}${kv}${d.factor === 1 ? "" : note}${
    cap ? ` · ${userText(cap)}` : ""
  }`;
}
